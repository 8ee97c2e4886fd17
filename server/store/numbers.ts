// Number rows of a campaign: list (numbers and number-details), insert in batches, delete, per-status counters.
import type { NumberDetailStatus, NumberStatus } from '../../api/enums.ts';
import type { Condition, ListQuery } from '../../api/list-query.ts';
import type { CampaignNumber, NumberDetail } from '../../api/records.ts';
import type { Database } from './db.ts';
import { limitOffset, orderBy, where, type ListTable } from './list-sql.ts';

export interface NumberRow {
  id: number; campaign_pk: number; number: string; status: NumberDetailStatus; attempts: number;
  var_names: string; var_values: string; deleted: number; next_attempt_at: number | null;
}

export interface NewNumber {
  number: string;
  varNames: string[];
  varValues: string[];
}

const byAttempts = (dir: 'ASC' | 'DESC') => `attempts ${dir}, id ${dir}`;
const columns: ListTable['columns'] = {
  number: { sql: 'number', type: 'phone' },
  status: { sql: 'status', type: 'text' },
  attempts: { sql: 'attempts', type: 'integer' },
};

const LIVE: ListTable = {
  columns,
  orderBy: { number: (dir) => `number ${dir}`, attempts: byAttempts },
  defaultOrder: 'id ASC',
};

const ALL: ListTable = {
  columns,
  orderBy: { number: (dir) => `number ${dir}, deleted ${dir}`, attempts: byAttempts },
  defaultOrder: 'id ASC',
};

export class Numbers {
  private readonly db: Database;
  constructor(db: Database) { this.db = db; }

  /** The numbers list (§4.6, live numbers) or the number-details report (§4.11, deleted ones too). */
  list(campaignPk: number, query: ListQuery, timeZone: string, includeDeleted: boolean): { rows: NumberRow[]; total: number } {
    const table = includeDeleted ? ALL : LIVE;
    const w = where(table, query.conditions, timeZone);
    const cond = ['campaign_pk = ?', ...(includeDeleted ? [] : ['deleted = 0']), ...w.terms].join(' AND ');
    const total = this.countFromCounters(campaignPk, query.conditions, includeDeleted)
      ?? this.db.get<{ n: number }>(`SELECT count(*) AS n FROM numbers WHERE ${cond}`, campaignPk, ...w.params)!.n;
    const rows = this.db.all<NumberRow>(
      `SELECT * FROM numbers WHERE ${cond} ORDER BY ${orderBy(table, query.sort)} ${limitOffset(query.range)}`,
      campaignPk, ...w.params);
    return { rows, total };
  }

  /** Counting a million rows takes tens of milliseconds; a status-only filter is answered from the counters. */
  private countFromCounters(campaignPk: number, conditions: Condition[], includeDeleted: boolean): number | null {
    let statuses: string[] | null = null;
    for (const c of conditions) {
      if (c.field !== 'status' || (c.op !== 'eq' && c.op !== 'in')) return null;
      const these = c.op === 'eq' ? [String(c.value)] : c.value;
      statuses = statuses === null ? these : statuses.filter((s) => these.includes(s));
    }
    const counts = this.counts(campaignPk);
    const wanted = statuses ?? Object.keys(counts).filter((s) => includeDeleted || s !== 'Deleted');
    return wanted.reduce((sum, s) => sum + (includeDeleted || s !== 'Deleted' ? counts[s as NumberDetailStatus] ?? 0 : 0), 0);
  }

  counts(campaignPk: number): Partial<Record<NumberDetailStatus, number>> {
    const out: Partial<Record<NumberDetailStatus, number>> = {};
    for (const r of this.db.all<{ status: NumberDetailStatus; n: number }>(
      'SELECT status, n FROM number_counts WHERE campaign_pk = ?', campaignPk)) out[r.status] = r.n;
    return out;
  }

  /**
   * Inserts numbers in one transaction. Returns, per entry, the new row id, or null when the campaign
   * already has that phone number (live). Counters and numbersCount move by the number inserted.
   */
  insert(campaignPk: number, entries: readonly NewNumber[], status: NumberStatus = 'NotContacted'): (number | null)[] {
    const stmt = this.db.statement(
      `INSERT INTO numbers(campaign_pk, number, status, var_names, var_values) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(campaign_pk, number, deleted) DO NOTHING`);
    return this.db.transaction(() => {
      const ids: (number | null)[] = [];
      let added = 0;
      let lastNames: string[] | null = null;
      let lastNamesJson = '[]';
      for (const e of entries) {
        if (e.varNames !== lastNames) { lastNames = e.varNames; lastNamesJson = JSON.stringify(e.varNames); }
        const r = stmt.run(campaignPk, e.number, status, lastNamesJson, JSON.stringify(e.varValues));
        if (Number(r.changes) === 1) { ids.push(Number(r.lastInsertRowid)); added++; } else ids.push(null);
      }
      if (added) this.move(campaignPk, null, status, added);
      return ids;
    });
  }

  byIds(campaignPk: number, ids: number[]): NumberRow[] {
    const out: NumberRow[] = [];
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      out.push(...this.db.all<NumberRow>(
        `SELECT * FROM numbers WHERE campaign_pk = ? AND deleted = 0 AND id IN (${chunk.map(() => '?').join(',')})`,
        campaignPk, ...chunk));
    }
    return out;
  }

  /** Marks rows Deleted (kept for the number-details report) and cancels their scheduled retries. */
  markDeleted(campaignPk: number, rows: NumberRow[]): void {
    this.db.transaction(() => {
      for (const r of rows) {
        this.db.run(`UPDATE numbers SET status = 'Deleted', deleted = id, next_attempt_at = NULL WHERE id = ?`, r.id);
        this.move(campaignPk, r.status, 'Deleted', 1);
      }
    });
  }

  /** Moves n numbers from one status to another in the counters (from null: new rows). */
  move(campaignPk: number, from: NumberDetailStatus | null, to: NumberDetailStatus, n: number): void {
    const bump = this.db.statement(
      `INSERT INTO number_counts(campaign_pk, status, n) VALUES (?, ?, ?)
       ON CONFLICT(campaign_pk, status) DO UPDATE SET n = n + excluded.n`);
    if (from) bump.run(campaignPk, from, -n);
    bump.run(campaignPk, to, n);
    const live = (from === null || from === 'Deleted' ? 0 : -n) + (to === 'Deleted' ? 0 : n);
    if (live) this.db.run('UPDATE campaigns SET numbers_count = numbers_count + ? WHERE pk = ?', live, campaignPk);
  }
}

export function numberRecord(r: NumberRow): CampaignNumber {
  return {
    id: String(r.id), number: r.number, status: r.status as NumberStatus, attempts: r.attempts,
    varNames: JSON.parse(r.var_names) as string[], varValues: JSON.parse(r.var_values) as string[],
  };
}

export function numberDetailRecord(r: NumberRow): NumberDetail {
  return { ...numberRecord(r), status: r.status };
}
