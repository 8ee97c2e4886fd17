// Wall-clock time in an account's IANA time zone: the form of the reports' *Local timestamps.

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

export function isTimeZone(name: string): boolean {
  try {
    formatter(name);
    return true;
  } catch {
    return false;
  }
}

/** `YYYY-MM-DDTHH:MM:SS` of an instant in the zone. */
export function localWallTime(millis: number, timeZone: string): string {
  const p: Record<string, string> = {};
  for (const part of formatter(timeZone).formatToParts(millis)) p[part.type] = part.value;
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}`;
}

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
