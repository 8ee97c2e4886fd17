// Wall-clock time in IANA zones: the dialer account's report times (no offset) to instants, and the hour a clock that
// falls back repeats, so that reading by wall-clock time misses nothing. Used by the mirror. Zone offsets are api/'s
// (wall-clock.ts), which the calling windows share with the n8n node.

import { offsetAt } from '../api/wall-clock.ts';

/** True when Intl knows the zone (configuration checks it at the door). */
export { isTimeZone } from '../api/wall-clock.ts';

/** A wall-clock string read as if it were UTC (the arithmetic base for local times). */
export function wallMs(local: string): number {
  const ms = Date.parse(`${local.slice(0, 19)}Z`);
  if (Number.isNaN(ms)) throw new Error(`not a local timestamp: ${local}`);
  return ms;
}

export function formatWall(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}

/**
 * The instants a wall-clock time names in the zone: one usually, two in the hour a fall-back repeats, none in
 * the hour a spring-forward skips (then the instant it would be with the earlier offset, as a clock would read).
 */
export function instantsOf(local: string, timeZone: string): number[] {
  const wall = wallMs(local);
  const candidates = new Set<number>();
  for (const probe of [wall - 14 * 3_600_000, wall + 14 * 3_600_000, wall]) {
    const utc = wall - offsetAt(timeZone, probe);
    if (utc + offsetAt(timeZone, utc) === wall) candidates.add(utc);
  }
  // Also the offsets just around the candidate instants (a transition between the probes).
  for (const c of [...candidates]) {
    for (const d of [-3_600_000, 3_600_000]) {
      const utc = wall - offsetAt(timeZone, c + d);
      if (utc + offsetAt(timeZone, utc) === wall) candidates.add(utc);
    }
  }
  if (!candidates.size) return [wall - offsetAt(timeZone, wall - 14 * 3_600_000)];
  return [...candidates].sort((a, b) => a - b);
}

/**
 * The UTC instant of a record's wall-clock time. In a repeated hour the earlier (daylight) reading is taken,
 * unless `notBefore` (the instant of an earlier event of the same call, e.g. its start) rules it out.
 */
export function toUtc(local: string, timeZone: string, notBefore?: number): number {
  const options = instantsOf(local, timeZone);
  if (notBefore !== undefined) {
    const later = options.find((t) => t >= notBefore);
    if (later !== undefined) return later;
  }
  return options[0]!;
}

/**
 * Where a read by wall-clock time should start so that nothing after `watermark` is missed: `late` before it,
 * and, when a fall-back repeated an hour near it, before that hour's first reading too: after the clock falls
 * back, new records carry wall-clock times below the highest one already read.
 */
export function readFrom(watermark: string, timeZone: string, lateMs: number): string {
  const wall = wallMs(watermark);
  let from = wall - lateMs;
  // A repeated interval near the watermark: scan the day around it hour by hour for an offset that drops.
  const [utc] = instantsOf(watermark, timeZone);
  for (let t = utc! - 26 * 3_600_000; t < utc! + 3_600_000; t += 900_000) {
    const before = offsetAt(timeZone, t);
    const after = offsetAt(timeZone, t + 900_000);
    if (after < before) {
      let lo = t, hi = t + 900_000;
      while (hi - lo > 1000) {
        const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
        if (offsetAt(timeZone, mid) === before) lo = mid; else hi = mid;
      }
      // The wall clock read [transition - (before - after), transition) twice.
      const transitionWall = hi + before;
      const repeatedFrom = transitionWall - (before - after);
      if (wall >= repeatedFrom - lateMs && wall < transitionWall + (before - after) + lateMs) from = Math.min(from, repeatedFrom - lateMs);
    }
  }
  return formatWall(from);
}
