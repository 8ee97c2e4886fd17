// Number rows of a campaign: list (numbers and number-details), insert in batches, delete, per-status counters.
import type { NumberDetailStatus, NumberStatus } from '../../api/enums.ts';
import type { Condition, ListQuery } from '../../api/list-query.ts';
import type { CampaignNumber } from '../../api/records.ts';
import type { Database } from './db.ts';
import { limitOffset, orderBy, where, type ListTable } from './list-sql.ts';

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

/** A bucket of the counters: numbers with this status and this many attempts. */
export interface CountKey {
  status: NumberDetailStatus;
  attempts: number;
}

// Filters are written `+column`: SQLite then checks them on the index entry it is reading instead of
// using them to seek, which would cost the index's order (a sort of every match). Only the status of a
// one-status page read from numbers_by_status is a seek.
const columns: ListTable['columns'] = {
  id: { sql: 'id', type: 'integer' },
  number: { sql: '+number', type: 'phone' },
  status: { sql: '+status', type: 'text' },
  attempts: { sql: '+attempts', type: 'integer' },
};

// Orders follow the index columns exactly (ending in the rowid), so pages come straight off an index.
const TABLE: ListTable = {
  columns,
  orderBy: {
    number: (dir) => `number ${dir}, deleted ${dir}`,
    attempts: (dir) => `attempts ${dir}, deleted ${dir}, status ${dir}, id ${dir}`,
  },
  defaultOrder: 'number ASC, deleted ASC',
};

const BY_STATUS: ListTable = { ...TABLE, columns: { ...columns, status: { sql: 'status', type: 'text' } } };

/** What a page reads, as arrays in this order (node:sqlite then builds no object per row): the record, then `deleted`. */
const PAGE_COLUMNS = ['id', 'number', 'status', 'attempts', 'var_names', 'var_values', 'deleted'] as const;
type PageRow = [id: number, number: string, status: string, attempts: number, varNames: string, varValues: string, deleted: number];

/**
 * How the list statements begin, built here and nowhere else: the store sends exactly these, and a benchmark's
 * probe recognises them by these prefixes.
 */
export const NUMBER_LIST_SQL = {
  count: 'SELECT count(*) AS n FROM numbers INDEXED BY numbers_by_number WHERE ',
  page: `SELECT ${PAGE_COLUMNS.join(', ')} FROM numbers INDEXED BY `,
  // A lookup by ids (react-admin's getMany) reads its rows by primary key: NOT INDEXED still seeks the rowid, and
  // keeps SQLite from scanning the campaign's index instead.
  countById: 'SELECT count(*) AS n FROM numbers NOT INDEXED WHERE ',
  pageById: `SELECT ${PAGE_COLUMNS.join(', ')} FROM numbers NOT INDEXED`,
} as const;

/** The sort key of each index, in its column order (as positions in PAGE_COLUMNS): where a page ended, for the next page to seek past. */
const KEY_COLUMNS: Record<string, readonly (typeof PAGE_COLUMNS[number])[]> = {
  numbers_by_number: ['number', 'deleted'],
  numbers_by_attempts: ['attempts', 'deleted', 'status', 'id'],
  numbers_by_status: ['attempts', 'deleted', 'id'],
};
const KEY_POSITIONS = Object.fromEntries(Object.entries(KEY_COLUMNS).map(([index, cols]) => [index, cols.map((c) => PAGE_COLUMNS.indexOf(c))]));

/** Phone numbers per existence lookup. */
const LOOKUP_CHUNK = 500;

function placeholders(n: number): string {
  return Array.from({ length: n }, () => '?').join(',');
}

/** Pages remembered for continuation; the oldest is forgotten first. */
const MAX_CURSORS = 10_000;

/**
 * The index a page is read from, pinned because without statistics SQLite guesses badly (a 75 ms first
 * page instead of 0.5 ms). Each one yields its sort order directly and holds every filtered column.
 */
function indexFor(query: ListQuery): string {
  if (query.sort?.field !== 'attempts') return 'numbers_by_number';
  const oneStatus = query.conditions.some((c) => c.field === 'status' && (c.op === 'eq' || (c.op === 'in' && c.value.length === 1)));
  return oneStatus ? 'numbers_by_status' : 'numbers_by_attempts';
}

/** One page of a numbers list: its records as JSON text, how many, and how many match in all. */
export interface NumbersPage {
  json: string;
  count: number;
  total: number;
}

export class Numbers {
  private readonly db: Database;
  /** Query + first offset → sort key of the record before it (the end of an earlier page). */
  private readonly cursors = new Map<string, (string | number)[]>();
  constructor(db: Database) { this.db = db; }

  /**
   * A page of the numbers list (§4.6, live numbers) or of the number-details report (§4.11, deleted ones too), written
   * as JSON straight from the stored columns: the variables are kept as JSON text, so no record is parsed and re-encoded.
   */
  page(campaignPk: number, query: ListQuery, timeZone: string, includeDeleted: boolean): NumbersPage {
    const index = indexFor(query);
    const byId = query.conditions.some((c) => c.field === 'id');
    const w = where(index === 'numbers_by_status' ? BY_STATUS : TABLE, query.conditions, timeZone);
    const cond = ['campaign_pk = ?', ...(includeDeleted ? [] : ['+deleted = 0']), ...w.terms].join(' AND ');
    const total = this.countFromCounters(campaignPk, query.conditions, includeDeleted)
      ?? this.db.get<{ n: number }>(`${byId ? NUMBER_LIST_SQL.countById : NUMBER_LIST_SQL.count}${cond}`, campaignPk, ...w.params)!.n;
    // A page that starts where an earlier page of the same query ended seeks past that page's last
    // record instead of skipping `first` records: reading every page in order costs the same at any depth.
    const [first, last] = query.range;
    const keyCols = KEY_COLUMNS[index]!;
    const queryKey = `${includeDeleted ? 'details' : 'numbers'}|${campaignPk}|${index}|${query.sort?.direction ?? 'ASC'}|${JSON.stringify(query.conditions)}`;
    const after = first > 0 ? this.cursors.get(`${queryKey}|${first}`) : undefined;
    const seek = after ? ` AND (${keyCols.join(', ')}) ${query.sort?.direction === 'DESC' ? '<' : '>'} (${keyCols.map(() => '?').join(', ')})` : '';
    const rows = this.db.arrays(
      `${byId ? NUMBER_LIST_SQL.pageById : NUMBER_LIST_SQL.page + index} WHERE ${cond}${seek} ORDER BY ${orderBy(TABLE, query.sort)} ` +
      (after ? `LIMIT ${last - first + 1}` : limitOffset(query.range)),
      campaignPk, ...w.params, ...(after ?? [])) as PageRow[];
    if (rows.length === last - first + 1) this.remember(`${queryKey}|${last + 1}`, KEY_POSITIONS[index]!.map((i) => rows.at(-1)![i]!));
    return { json: pageJson(rows), count: rows.length, total };
  }

  private remember(key: string, sortKey: (string | number)[]): void {
    this.cursors.delete(key);
    this.cursors.set(key, sortKey);
    if (this.cursors.size > MAX_CURSORS) this.cursors.delete(this.cursors.keys().next().value!);
  }

  /** Status and attempts filters are answered from the counters; a phone-number filter needs counting rows. */
  private countFromCounters(campaignPk: number, conditions: Condition[], includeDeleted: boolean): number | null {
    if (conditions.some((c) => c.field !== 'status' && c.field !== 'attempts')) return null;
    let n = 0;
    for (const bucket of this.buckets(campaignPk)) {
      if (!includeDeleted && bucket.status === 'Deleted') continue;
      if (conditions.every((c) => matches(c, bucket))) n += bucket.n;
    }
    return n;
  }

  private buckets(campaignPk: number): (CountKey & { n: number })[] {
    return this.db.all<CountKey & { n: number }>(
      'SELECT status, attempts, n FROM number_counts WHERE campaign_pk = ? AND n > 0', campaignPk);
  }

  counts(campaignPk: number): Partial<Record<NumberDetailStatus, number>> {
    const out: Partial<Record<NumberDetailStatus, number>> = {};
    for (const b of this.buckets(campaignPk)) out[b.status] = (out[b.status] ?? 0) + b.n;
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

function matches(c: Condition, bucket: CountKey): boolean {
  const v = c.field === 'status' ? bucket.status : bucket.attempts;
  switch (c.op) {
    case 'eq': return v === c.value;
    case 'in': return c.value.includes(String(v));
    case 'gte': return (v as number) >= (c.value as number);
    case 'gt': return (v as number) > (c.value as number);
    case 'lte': return (v as number) <= (c.value as number);
    case 'lt': return (v as number) < (c.value as number);
    default: throw new Error(`no counter match for ${c.field} ${c.op}`);
  }
}

/**
 * Records of a page as JSON text: exactly what JSON.stringify of numberRecord gives (with the status as stored: Deleted in number details) (a test holds
 * the two equal), written from the stored JSON of the variables. Ids are integers, statuses enum words, numbers E.164.
 */
function pageJson(rows: PageRow[]): string {
  let s = '[';
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    s += `${i ? ',' : ''}{"id":"${r[0]}","number":${JSON.stringify(r[1])},"status":"${r[2]}","attempts":${r[3]},"varNames":${r[4]},"varValues":${r[5]}}`;
  }
  return `${s}]`;
}

export function numberRecord(r: NumberRow): CampaignNumber {
  return {
    id: String(r.id), number: r.number, status: r.status as NumberStatus, attempts: r.attempts,
    varNames: JSON.parse(r.var_names) as string[], varValues: JSON.parse(r.var_values) as string[],
  };
}

