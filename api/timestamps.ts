// Timestamp values of filters (§4.1): `YYYY-MM-DDTHH:MM:SS`, the compact `YYYYMMDDTHHMMSS` alias, an optional zone.

export interface ParsedTimestamp {
  /** Wall-clock time, `YYYY-MM-DDTHH:MM:SS`. */
  wall: string;
  /** Offset from UTC in minutes when the value carried one (`Z`, `+02:00`), else null. */
  offsetMinutes: number | null;
}

const TIMESTAMP =
  /^(\d{4})-?(\d{2})-?(\d{2})(?:[T ](\d{2}):?(\d{2})(?::?(\d{2})(?:\.\d{1,9})?)?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/;

export function parseTimestamp(text: string): ParsedTimestamp | null {
  const m = TIMESTAMP.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h = '00', mi = '00', s = '00', zone] = m as unknown as (string | undefined)[];
  const year = Number(y), month = Number(mo), day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return null;
  let offsetMinutes: number | null = null;
  if (zone === 'Z') offsetMinutes = 0;
  else if (zone) {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2)), om = Number(digits.slice(2) || '0');
    if (oh > 23 || om > 59) return null;
    offsetMinutes = sign * (oh * 60 + om);
  }
  return { wall: `${y}-${mo}-${d}T${h}:${mi}:${s}`, offsetMinutes };
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** The instant a parsed timestamp names, reading a zone-less value as UTC. */
export function timestampToUtcMillis(t: ParsedTimestamp): number {
  return Date.parse(`${t.wall}Z`) - (t.offsetMinutes ?? 0) * 60_000;
}

/** `YYYY-MM-DDTHH:MM:SSZ`, the form campaign timestamps take in responses. */
export function formatUtc(millis: number): string {
  return new Date(millis).toISOString().slice(0, 19) + 'Z';
}
