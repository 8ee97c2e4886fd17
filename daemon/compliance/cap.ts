// Per-number call caps in a rolling window (Florida: 3 calls in 24 hours), from the call starts the mirror reads in
// the call-detail records: whether a number is at its cap, and until when it must be held back.

/** Held until this instant (ms), or null when another call may start at `at`. `starts`: the number's call starts (ms). */
export function cappedUntil(starts: readonly number[], cap: { calls: number; hours: number }, at: number): number | null {
  const span = cap.hours * 3_600_000;
  const recent = starts.filter((t) => t > at - span && t <= at).sort((a, b) => a - b);
  if (recent.length < cap.calls) return null;
  // The call that must age out before one more fits: the (recent − calls + 1)th oldest.
  return recent[recent.length - cap.calls]! + span;
}

/** Calls that broke a cap: a start with `calls` or more other starts of the same number in the `hours` before it. */
export function overCap(starts: readonly number[], cap: { calls: number; hours: number }): number {
  const sorted = [...starts].sort((a, b) => a - b);
  const span = cap.hours * 3_600_000;
  let over = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[j]! <= sorted[i]! - span) j++;
    if (i - j >= cap.calls) over++;
  }
  return over;
}
