// Mirror lag as an operator means it: how far the CRM's activities are behind the dialer's call-detail records,
// measured without comparing the dialer's clock with the daemon's.
//
// A record's end time is on the dialer's clock; the daemon's wall clock may run ahead of it or behind it (a real
// skew, or a simulated clock), so "now - endedAt" can read 0 or hours whatever the real lag is. Instead, each
// run's lag is two spans, each on one clock:
//   - on the dialer's clock: from the end of the oldest call written by the run to the end of the newest call the
//     run read in the report (the newest record stands for the dialer's "now");
//   - on the daemon's clock: from the last read of the report to the last activity written.
// A backlog (the mirror stopped for an hour while calls went on) shows as the hour; a mirror keeping up shows as
// the time between runs plus the write. It reads low only when the dialer has made no call for a while.

export class LagMeter {
  private newestEnd = -Infinity;
  private oldestWritten = Infinity;
  private lastReadAt: number | null = null;
  private lastWriteAt: number | null = null;

  /** A page of the report was read: the end time (ms, dialer's clock) of its newest record. */
  read(newestEnd: number, at = Date.now()): void {
    if (newestEnd > this.newestEnd) this.newestEnd = newestEnd;
    this.lastReadAt = at;
  }

  /** Activities of records read by this run were written: their calls' end times (ms, dialer's clock). */
  wrote(endTimes: number[], at = Date.now()): void {
    if (!endTimes.length) return;
    for (const t of endTimes) {
      if (t < this.oldestWritten) this.oldestWritten = t;
      if (t > this.newestEnd) this.newestEnd = t;
    }
    this.lastWriteAt = at;
  }

  /** The run's lag in ms, or null when it wrote nothing it read. */
  lagMs(): number | null {
    if (this.oldestWritten === Infinity || this.lastReadAt === null || this.lastWriteAt === null) return null;
    return Math.max(0, this.newestEnd - this.oldestWritten) + Math.max(0, this.lastWriteAt - this.lastReadAt);
  }
}
