// Wall-clock time in IANA time zones, the form of the spec's *Local timestamps (the account's zone): which zones exist,
// an instant's `YYYY-MM-DDTHH:MM:SS` in one, and a zone's offset at an instant. Intl only (no I/O); one formatter per
// zone, kept.

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** True when Intl knows the zone (an IANA name such as `America/New_York`). */
export function isTimeZone(name: string): boolean {
  try {
    formatter(name);
    return true;
  } catch {
    return false;
  }
}

/** `YYYY-MM-DDTHH:MM:SS` of an instant (ms since the epoch) in the zone. */
export function localWallTime(millis: number, timeZone: string): string {
  const p: Record<string, string> = {};
  for (const part of formatter(timeZone).formatToParts(millis)) p[part.type] = part.value;
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}`;
}

const offsets = new Map<string, number>();
const SLOT = 15 * 60_000;

/**
 * The zone's offset from UTC at an instant, in ms (New York in winter: -5 h). Cached per 15-minute slot: zones change
 * offset only on the quarter hour, and Intl costs tens of microseconds a call (a mirror converts thousands of times,
 * a calling window a few per zone and day).
 */
export function offsetAt(timeZone: string, utcMs: number): number {
  const slot = Math.floor(utcMs / SLOT);
  const key = `${timeZone}\n${slot}`;
  let offset = offsets.get(key);
  if (offset === undefined) {
    if (offsets.size > 200_000) offsets.clear();
    const at = slot * SLOT;
    offset = Date.parse(`${localWallTime(at, timeZone)}Z`) - Math.floor(at / 1000) * 1000;
    offsets.set(key, offset);
  }
  return offset;
}
