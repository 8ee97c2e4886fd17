// Clocks: zones that keep the same wall-clock time over the coming years are one clock for routes (America/Creston,
// America/Dawson_Creek and America/Fort_Nelson keep Phoenix's; America/Detroit New York's), so an operator lists
// clocks and the daemon matches every IANA name that keeps one of them. Judged from today on, by the time zone data
// of the runtime: British Columbia keeps -07 all year from November 2026 (tzdata 2026), so America/Vancouver is
// Phoenix's clock now, no longer Los Angeles'.
import { offsetAt } from '../../api/wall-clock.ts';

const DAY = 86_400_000;
/** How far ahead clocks are compared: rules change with a few months' notice, a route is configured for years. */
const YEARS = 6;

const clocks = new Map<string, string>();

/**
 * A zone's clock: its offset today and every change of offset after it, to the minute, over the coming years, as
 * text. Two zones with the same text show the same time at every instant of that span.
 * Computed once per zone (some 2,200 offsets: milliseconds).
 */
export function clockOf(zone: string): string {
  let clock = clocks.get(zone);
  if (clock === undefined) {
    const from = Math.floor(Date.now() / DAY) * DAY;
    const parts = [String(offsetAt(zone, from))];
    let before = offsetAt(zone, from);
    for (let t = from + DAY; t <= from + YEARS * 366 * DAY; t += DAY) {
      const offset = offsetAt(zone, t);
      if (offset === before) continue;
      // The change lies in (t − DAY, t]: find its instant, to the minute.
      let lo = t - DAY, hi = t;
      while (hi - lo > 60_000) {
        const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000;
        if (offsetAt(zone, mid) === before) lo = mid; else hi = mid;
      }
      parts.push(`${hi}:${offset}`);
      before = offset;
    }
    clock = parts.join(' ');
    clocks.set(zone, clock);
  }
  return clock;
}

/** A set of zones as clocks: `holds(zone)` is true for a zone that keeps the clock of one of them. */
export class ClockSet {
  private readonly set: Set<string>;
  readonly zones: readonly string[];

  constructor(zones: readonly string[]) {
    this.zones = zones;
    this.set = new Set(zones.map(clockOf));
  }

  holds(zone: string): boolean { return this.set.has(clockOf(zone)); }
}
