// The list response headers of §4.1: Content-Range and X-Total-Count, written and read.

export type ListResource = 'campaigns' | 'numbers' | 'callDetails' | 'numberDetails';

/**
 * `<resource> <first>-<last>/<total>`; `0-0/0` when nothing matches (§4.1); `*\/<total>` for an
 * empty page past the end (RFC 9110's unsatisfied-range form, so the total still reads the same way).
 */
export function formatContentRange(resource: ListResource, first: number, count: number, total: number): string {
  if (total === 0) return `${resource} 0-0/0`;
  if (count === 0) return `${resource} */${total}`;
  return `${resource} ${first}-${first + count - 1}/${total}`;
}

export interface ContentRange {
  resource: string;
  first: number | null;
  last: number | null;
  total: number;
}

export function parseContentRange(header: string): ContentRange | null {
  const m = /^(\S+) (?:(\d+)-(\d+)|\*)\/(\d+)$/.exec(header.trim());
  if (!m) return null;
  return {
    resource: m[1]!,
    first: m[2] === undefined ? null : Number(m[2]),
    last: m[3] === undefined ? null : Number(m[3]),
    total: Number(m[4]),
  };
}
