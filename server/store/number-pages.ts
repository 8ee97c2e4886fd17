// Pages of a campaign's numbers list (§4.6) and number-details report (§4.11): the statements, the index each
// order reads, continuation past an earlier page, X-Total-Count from the counters, the records as JSON text. Read on
// the server's connection, or on a reader's own on a thread of its own (./page-reader.ts).
import type { NumberDetailStatus } from '../../api/enums.ts';
import type { Condition, ListQuery } from '../../api/list-query.ts';
import type { SQLInputValue } from 'node:sqlite';
import type { Connection } from './db.ts';
import { limitOffset, orderBy, where, type ListTable } from './list-sql.ts';

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

/**
 * A record as JSON text, written by SQLite: exactly what JSON.stringify of numberRecord gives (with the status as
 * stored: Deleted in number details; a test holds the two equal). The variables are stored as JSON text and go in as
 * they are; ids are integers, statuses enum words, numbers E.164. Writing it in SQL spares node:sqlite a JS value per
 * column and this thread the concatenation: ~10% of a page's time.
 */
const RECORD_JSON = `'{"id":"' || id || '","number":' || json_quote(number) || ',"status":"' || status || '","attempts":' || attempts ||
  ',"varNames":' || var_names || ',"varValues":' || var_values || '}'`;

/** The sort key of each index, in its column order: where a page ended, for the next page to seek past. */
const KEY_COLUMNS: Record<string, readonly string[]> = {
  numbers_by_number: ['number', 'deleted'],
  numbers_by_attempts: ['attempts', 'deleted', 'status', 'id'],
  numbers_by_status: ['attempts', 'deleted', 'id'],
};

/** What a page reads, as arrays: the record as JSON text, then the sort key of the index it is read from. */
type PageRow = [json: string, ...key: (string | number)[]];

/**
 * The list statements, built here and nowhere else: the store sends exactly these (and, asked with
 * PageRequest.trace, reports each one it ran to a benchmark's probe, which prints their query plans).
 */
// A lookup by ids (react-admin's getMany) reads its rows by primary key: NOT INDEXED still seeks the rowid, and
// keeps SQLite from scanning the campaign's index instead.
const NUMBER_LIST_SQL = {
  count: (byId: boolean) => `SELECT count(*) AS n FROM numbers ${byId ? 'NOT INDEXED' : 'INDEXED BY numbers_by_number'} WHERE `,
  page: (index: string, byId: boolean) =>
    `SELECT ${RECORD_JSON}, ${KEY_COLUMNS[index]!.join(', ')} FROM numbers ${byId ? 'NOT INDEXED' : `INDEXED BY ${index}`}`,
} as const;

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

/** A statement as sent, for a benchmark's probe. */
export interface SqlCapture { sql: string; params: SQLInputValue[] }

/** What a page request asks for; trace also times its statements and returns them (a benchmark's probe). */
export interface PageRequest {
  campaignPk: number;
  query: ListQuery;
  timeZone: string;
  /** The number-details report (deleted numbers too) rather than the numbers list. */
  includeDeleted: boolean;
  trace?: boolean;
}

/** One page of a numbers list: its records as JSON text, how many, and how many match in all. */
export interface NumbersPage {
  json: string;
  count: number;
  total: number;
  /** With PageRequest.trace: each statement's time (count is null when the counters answered) and SQL. */
  trace?: { countMs: number; pageMs: number; count: SqlCapture | null; page: SqlCapture };
}

export class NumberPages {
  private readonly db: Connection;
  /** Query + first offset → sort key of the record before it (the end of an earlier page). */
  private readonly cursors = new Map<string, (string | number)[]>();
  constructor(db: Connection) { this.db = db; }

  /**
   * A page of the numbers list (§4.6, live numbers) or of the number-details report (§4.11, deleted ones too), written
   * as JSON straight from the stored columns: the variables are kept as JSON text, so no record is parsed and re-encoded.
   */
  page(r: PageRequest): NumbersPage {
    const { campaignPk, query, timeZone, includeDeleted } = r;
    const started = r.trace ? performance.now() : 0;
    const index = indexFor(query);
    const byId = query.conditions.some((c) => c.field === 'id');
    const w = where(index === 'numbers_by_status' ? BY_STATUS : TABLE, query.conditions, timeZone);
    const cond = ['campaign_pk = ?', ...(includeDeleted ? [] : ['+deleted = 0']), ...w.terms].join(' AND ');
    let total = this.countFromCounters(campaignPk, query.conditions, includeDeleted);
    let count: SqlCapture | null = null;
    if (total === null) {
      count = { sql: `${NUMBER_LIST_SQL.count(byId)}${cond}`, params: [campaignPk, ...w.params] };
      total = this.db.get<{ n: number }>(count.sql, ...count.params)!.n;
    }
    const counted = r.trace ? performance.now() : 0;
    // A page that starts where an earlier page of the same query ended seeks past that page's last
    // record instead of skipping `first` records: reading every page in order costs the same at any depth.
    const [first, last] = query.range;
    const keyCols = KEY_COLUMNS[index]!;
    const queryKey = `${includeDeleted ? 'details' : 'numbers'}|${campaignPk}|${index}|${query.sort?.direction ?? 'ASC'}|${JSON.stringify(query.conditions)}`;
    const after = first > 0 ? this.cursors.get(`${queryKey}|${first}`) : undefined;
    const seek = after ? ` AND (${keyCols.join(', ')}) ${query.sort?.direction === 'DESC' ? '<' : '>'} (${keyCols.map(() => '?').join(', ')})` : '';
    const page: SqlCapture = {
      sql: `${NUMBER_LIST_SQL.page(index, byId)} WHERE ${cond}${seek} ORDER BY ${orderBy(TABLE, query.sort)} ` +
        (after ? `LIMIT ${last - first + 1}` : limitOffset(query.range)),
      params: [campaignPk, ...w.params, ...(after ?? [])],
    };
    const rows = this.db.arrays(page.sql, ...page.params) as PageRow[];
    const read = r.trace ? performance.now() : 0;
    if (rows.length === last - first + 1) this.remember(`${queryKey}|${last + 1}`, rows.at(-1)!.slice(1));
    const result: NumbersPage = { json: pageJson(rows), count: rows.length, total };
    if (r.trace) result.trace = { countMs: counted - started, pageMs: read - counted, count, page };
    return result;
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
    for (const bucket of numberBuckets(this.db, campaignPk)) {
      if (!includeDeleted && bucket.status === 'Deleted') continue;
      if (conditions.every((c) => matches(c, bucket))) n += bucket.n;
    }
    return n;
  }
}

/** The counter buckets of a campaign that hold numbers. */
export function numberBuckets(db: Connection, campaignPk: number): (CountKey & { n: number })[] {
  return db.all<CountKey & { n: number }>('SELECT status, attempts, n FROM number_counts WHERE campaign_pk = ? AND n > 0', campaignPk);
}

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

/** The page's records as a JSON array. */
function pageJson(rows: PageRow[]): string {
  let s = '[';
  for (let i = 0; i < rows.length; i++) s += i ? `,${rows[i]![0]}` : rows[i]![0];
  return `${s}]`;
}
