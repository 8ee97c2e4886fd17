// One bad entry hurts only itself: after a request refused whole, what to send again. The dialer's pushes and the
// mirror's CRM writes both use it.

/**
 * Splits a batch the other side refused whole. Entries it named (`reasonOf` gives their reason) are refused alone
 * and the rest go again in one request; naming none, a lone entry is refused with `fallback`, and a larger batch is
 * halved (bisection: one bad entry among n costs about 2·log2 n more requests).
 */
export function isolateRefused<T>(batch: T[], reasonOf: (entry: T, index: number) => string | undefined, fallback: string): { refused: [T, string][]; retry: T[][] } {
  const named = batch.flatMap((e, i): [T, string][] => { const r = reasonOf(e, i); return r === undefined ? [] : [[e, r]]; });
  if (named.length) {
    const refused = new Set(named.map(([e]) => e));
    const rest = batch.filter((e) => !refused.has(e));
    return { refused: named, retry: rest.length ? [rest] : [] };
  }
  if (batch.length <= 1) return { refused: batch.map((e): [T, string] => [e, fallback]), retry: [] };
  const half = Math.ceil(batch.length / 2);
  return { refused: [], retry: [batch.slice(0, half), batch.slice(half)] };
}
