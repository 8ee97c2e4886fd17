// The dialer's number writes while the clock applies events, held in memory and written in batches: the
// last status of each number, with the counters moved once per bucket from what the table held before.
import { NUMBER_DETAIL_STATUSES, type NumberDetailStatus } from '../../api/enums.ts';
import type { CountKey } from '../store/number-pages.ts';
import type { Numbers, StatusChange } from '../store/numbers.ts';

interface Pending extends StatusChange {
  campaignPk: number;
  /** What the numbers table holds for the number (what the counters count it as). */
  wasStatus: NumberDetailStatus;
  wasAttempts: number;
}

type Buckets = Map<number, CountKey & { n: number }>;

export class ChunkWrites {
  private readonly numbers: Numbers;
  private readonly pending = new Map<number, Pending>();

  constructor(numbers: Numbers) {
    this.numbers = numbers;
  }

  /** A number moves from a status and attempt count (its row's, if nothing is pending for it) to others. */
  setStatus(campaignPk: number, id: number, wasStatus: NumberDetailStatus, wasAttempts: number,
    status: NumberDetailStatus, attempts: number, nextAttemptAt: number | null): void {
    const p = this.pending.get(id);
    if (p) {
      p.status = status;
      p.attempts = attempts;
      p.nextAttemptAt = nextAttemptAt;
    } else {
      this.pending.set(id, { id, campaignPk, wasStatus, wasAttempts, status, attempts, nextAttemptAt });
    }
  }

  /**
   * Writes what is pending, with its counters. `holdContacting` keeps numbers whose call is live back: most
   * calls end within the same clock advance, and then one write of the final status is all they need.
   */
  flush(holdContacting = false): void {
    if (!this.pending.size) return;
    const out: Pending[] = [];
    for (const p of this.pending.values()) if (!(holdContacting && p.status === 'Contacting')) out.push(p);
    if (!out.length) return;
    if (out.length === this.pending.size) this.pending.clear();
    else for (const p of out) this.pending.delete(p.id);
    // In id order: neighbouring numbers share table and index pages.
    out.sort((a, b) => a.id - b.id);
    this.numbers.setStatuses(out);
    const counts = new Map<number, Buckets>();
    for (const p of out) {
      let buckets = counts.get(p.campaignPk);
      if (!buckets) counts.set(p.campaignPk, (buckets = new Map()));
      bump(buckets, p.wasStatus, p.wasAttempts, -1);
      bump(buckets, p.status, p.attempts, 1);
    }
    for (const [pk, buckets] of counts) this.numbers.addCounts(pk, [...buckets.values()]);
  }
}

const STATUS_CODES = new Map(NUMBER_DETAIL_STATUSES.map((s, i) => [s, i]));

function bump(buckets: Buckets, status: NumberDetailStatus, attempts: number, n: number): void {
  const key = attempts * 16 + STATUS_CODES.get(status)!;
  const b = buckets.get(key);
  if (b) b.n += n;
  else buckets.set(key, { status, attempts, n });
}
