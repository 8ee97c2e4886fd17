// Number rows of a campaign: insert in batches, delete, status changes, per-status counters. Their list pages are
// read by ./number-pages.ts.
import type { NumberDetailStatus, NumberStatus } from '../../api/enums.ts';
import type { CampaignNumber } from '../../api/records.ts';
import type { Database } from './db.ts';
import { numberBuckets, type CountKey } from './number-pages.ts';

export interface NumberRow {
  id: number; campaign_pk: number; number: string; status: NumberDetailStatus; attempts: number;
  var_names: string; var_values: string; deleted: number; next_attempt_at: number | null;
}

export interface NewNumber {
  number: string;
  varNames: string[];
  /** The values, or their JSON text. */
  varValues: readonly string[] | string;
}

/** One status change of the dialer's batches (setStatuses). */
export interface StatusChange {
  id: number;
  status: NumberDetailStatus;
  attempts: number;
  nextAttemptAt: number | null;
}

/** Phone numbers per existence lookup. */
const LOOKUP_CHUNK = 500;

function placeholders(n: number): string {
  return Array.from({ length: n }, () => '?').join(',');
}

export class Numbers {
  private readonly db: Database;
  constructor(db: Database) { this.db = db; }

  counts(campaignPk: number): Partial<Record<NumberDetailStatus, number>> {
    const out: Partial<Record<NumberDetailStatus, number>> = {};
    for (const b of numberBuckets(this.db, campaignPk)) out[b.status] = (out[b.status] ?? 0) + b.n;
    return out;
  }

  /**
   * Inserts numbers in one transaction. Returns, per entry, the new row id, or null when the campaign
   * already has that phone number live. Counters and numbersCount move by the number inserted.
   */
  insert(campaignPk: number, entries: readonly NewNumber[], status: NumberStatus = 'NotContacted'): (number | null)[] {
    return this.db.transaction(() => {
      const live = this.liveAmong(campaignPk, entries.map((e) => e.number));
      const ids: (number | null)[] = new Array<number | null>(entries.length).fill(null);
      const fresh: number[] = [];
      for (let i = 0; i < entries.length; i++) {
        const n = entries[i]!.number;
        if (live.has(n)) continue;
        live.add(n); // a phone number given twice in one call: the second is already live
        fresh.push(i);
      }
      // One prepared single-row INSERT per number: measured faster than multi-row INSERTs, whose long SQL and
      // spread parameters cost more than the statement calls they save.
      const insert = this.db.statement(
        'INSERT INTO numbers(campaign_pk, number, status, var_names, var_values) VALUES (?, ?, ?, ?, ?)');
      let lastNames: string[] | null = null;
      let lastNamesJson = '[]';
      for (const i of fresh) {
        const e = entries[i]!;
        if (e.varNames !== lastNames) { lastNames = e.varNames; lastNamesJson = JSON.stringify(e.varNames); }
        const values = typeof e.varValues === 'string' ? e.varValues : JSON.stringify(e.varValues);
        ids[i] = Number(insert.run(campaignPk, e.number, status, lastNamesJson, values).lastInsertRowid);
      }
      if (fresh.length) this.move(campaignPk, null, { status, attempts: 0 }, fresh.length);
      return ids;
    });
  }

  /** Which of these phone numbers the campaign has live: one indexed IN lookup per LOOKUP_CHUNK numbers. */
  private liveAmong(campaignPk: number, numbers: readonly string[]): Set<string> {
    const live = new Set<string>();
    for (let from = 0; from < numbers.length; from += LOOKUP_CHUNK) {
      const chunk = numbers.slice(from, from + LOOKUP_CHUNK);
      const rows = this.db.arrays(
        `SELECT number FROM numbers INDEXED BY numbers_by_number WHERE campaign_pk = ? AND deleted = 0 AND number IN (${placeholders(chunk.length)})`,
        campaignPk, ...chunk);
      for (const r of rows) live.add(r[0] as string);
    }
    return live;
  }

  byIds(campaignPk: number, ids: number[]): NumberRow[] {
    const out: NumberRow[] = [];
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      // The unary + keeps SQLite on the primary key instead of scanning the campaign's index.
      out.push(...this.db.all<NumberRow>(
        `SELECT * FROM numbers WHERE id IN (${placeholders(chunk.length)}) AND +campaign_pk = ? AND +deleted = 0`,
        ...chunk, campaignPk));
    }
    return out;
  }

  /** Per campaign: how many counter moves there were outside the dialer's batches (see version). */
  private readonly versions = new Map<number, number>();

  /**
   * Moves on every write to the campaign's numbers but the dialer's batched ones (setStatuses): while it
   * stands still, what the dialer read of the numbers (the next ones to dial, live calls) is still true.
   */
  version(campaignPk: number): number {
    return this.versions.get(campaignPk) ?? 0;
  }

  /**
   * The dialer's batched status changes, at most one per number, one statement run each, inside the
   * caller's transaction (a savepoint per batch measured slower). Counters move apart, by addCounts.
   */
  setStatuses(changes: readonly StatusChange[]): void {
    const set = this.db.statement('UPDATE numbers SET status = ?, attempts = ?, next_attempt_at = ? WHERE id = ?');
    for (const c of changes) set.run(c.status, c.attempts, c.nextAttemptAt, c.id);
  }

  /** The dialer's counter deltas of one chunk, one per bucket: status changes that neither add nor delete numbers. */
  addCounts(campaignPk: number, deltas: readonly (CountKey & { n: number })[]): void {
    const bump = this.db.statement(BUMP_COUNT);
    for (const d of deltas) if (d.n) bump.run(campaignPk, d.status, d.attempts, d.n);
  }

  /** Sets a number's status and attempts (the dialer's write), keeping the counters right. */
  update(row: NumberRow, status: NumberDetailStatus, attempts: number, nextAttemptAt: number | null = null): void {
    this.db.transaction(() => {
      this.db.run('UPDATE numbers SET status = ?, attempts = ?, next_attempt_at = ? WHERE id = ?', status, attempts, nextAttemptAt, row.id);
      this.move(row.campaign_pk, { status: row.status, attempts: row.attempts }, { status, attempts }, 1);
    });
  }

  /** Marks rows Deleted (kept for the number-details report) and cancels their scheduled retries. */
  markDeleted(campaignPk: number, rows: NumberRow[]): void {
    this.db.transaction(() => {
      for (const r of rows) {
        this.db.run(`UPDATE numbers SET status = 'Deleted', deleted = id, next_attempt_at = NULL WHERE id = ?`, r.id);
        this.move(campaignPk, { status: r.status, attempts: r.attempts }, { status: 'Deleted', attempts: r.attempts }, 1);
      }
    });
  }

  /** Moves n numbers between counter buckets (from null: new rows) and keeps numbersCount (live numbers). */
  move(campaignPk: number, from: CountKey | null, to: CountKey, n: number): void {
    this.versions.set(campaignPk, this.version(campaignPk) + 1);
    const bump = this.db.statement(BUMP_COUNT);
    if (from) bump.run(campaignPk, from.status, from.attempts, -n);
    bump.run(campaignPk, to.status, to.attempts, n);
    const live = (from === null || from.status === 'Deleted' ? 0 : -n) + (to.status === 'Deleted' ? 0 : n);
    if (live) this.db.run('UPDATE campaigns SET numbers_count = numbers_count + ? WHERE pk = ?', live, campaignPk);
  }
}

const BUMP_COUNT = `INSERT INTO number_counts(campaign_pk, status, attempts, n) VALUES (?, ?, ?, ?)
  ON CONFLICT(campaign_pk, status, attempts) DO UPDATE SET n = n + excluded.n`;

export function numberRecord(r: NumberRow): CampaignNumber {
  return {
    id: String(r.id), number: r.number, status: r.status as NumberStatus, attempts: r.attempts,
    varNames: JSON.parse(r.var_names) as string[], varValues: JSON.parse(r.var_values) as string[],
  };
}

