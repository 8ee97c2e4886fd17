// Wall-clock time in an account's IANA time zone: the form of the reports' *Local timestamps (api/wall-clock.ts),
// and the local weekday and time of day the calling hours are read in.

export { isTimeZone, localWallTime } from '../api/wall-clock.ts';

const weekdayFormatters = new Map<string, Intl.DateTimeFormat>();

/** The local weekday (Mon…Sun) and seconds since local midnight of an instant in the zone. */
export function localDayTime(millis: number, timeZone: string): { weekday: string; seconds: number } {
  let f = weekdayFormatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', weekday: 'short', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    weekdayFormatters.set(timeZone, f);
  }
  const p: Record<string, string> = {};
  for (const part of f.formatToParts(millis)) p[part.type] = part.value;
  return { weekday: p.weekday!, seconds: Number(p.hour) * 3600 + Number(p.minute) * 60 + Number(p.second) };
}
