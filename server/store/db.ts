// The SQLite database: opening it (file or memory), the schema, cached statements and transactions.
import { DatabaseSync, type StatementSync, type SQLInputValue, type SQLOutputValue } from 'node:sqlite';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { WalReport } from './checkpoint-worker.ts';

const SCHEMA_VERSION = 1;
/** Log size beyond which bulk writers pause until it is all checkpointed (Database.walRoom). */
const WAL_ROOM_BYTES = 256 * 1024 * 1024;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS accounts(
  pk INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT NOT NULL, timezone TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys(
  pk INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, account_pk INTEGER NOT NULL REFERENCES accounts(pk),
  name TEXT NOT NULL, roles TEXT NOT NULL, campaign_ids TEXT, token_hash BLOB NOT NULL UNIQUE, token_prefix TEXT NOT NULL,
  created_at TEXT NOT NULL, expires_at TEXT, deleted_at TEXT);
CREATE TABLE IF NOT EXISTS campaigns(
  pk INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, account_pk INTEGER NOT NULL REFERENCES accounts(pk),
  name TEXT NOT NULL, state TEXT NOT NULL, type TEXT NOT NULL, phone_system_id TEXT, extension_id TEXT,
  dialer_mode TEXT NOT NULL, dialer_settings TEXT NOT NULL, tag_ids TEXT NOT NULL, start_date TEXT, end_date TEXT, started_at TEXT, ended_at TEXT,
  callflow_ids TEXT NOT NULL, human_callflow_id TEXT, machine_callflow_id TEXT, webhook_endpoint_id TEXT,
  is_archived INTEGER NOT NULL, numbers_count INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS campaigns_by_account ON campaigns(account_pk, name);
CREATE TABLE IF NOT EXISTS webhook_endpoints(
  pk INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, account_pk INTEGER NOT NULL, url TEXT NOT NULL,
  created_at TEXT NOT NULL, deleted_at TEXT);
-- The outbox: an event waits here until its endpoint answers 2xx (then the row goes) or retries run out.
CREATE TABLE IF NOT EXISTS webhook_deliveries(
  id INTEGER PRIMARY KEY, endpoint_pk INTEGER NOT NULL, event_id TEXT NOT NULL, body TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER NOT NULL, failed_at INTEGER, last_error TEXT);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE failed_at IS NULL;
CREATE TABLE IF NOT EXISTS blacklist(
  account_pk INTEGER NOT NULL, number TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY(account_pk, number)) WITHOUT ROWID;
-- deleted is 0 for a live number and the row's own id once deleted, so deleted rows stay for the
-- number-details report. One live row per phone number is kept by Numbers.insert.
CREATE TABLE IF NOT EXISTS numbers(
  id INTEGER PRIMARY KEY, campaign_pk INTEGER NOT NULL, number TEXT NOT NULL, status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0, var_names TEXT NOT NULL, var_values TEXT NOT NULL,
  deleted INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER);
-- Both indexes carry every filterable column, so a filtered page skips rows without reading the table.
-- New rows (attempts 0, NotContacted) land at the end of numbers_by_attempts and numbers_by_status:
-- only numbers_by_number takes a random-position insert.
CREATE INDEX IF NOT EXISTS numbers_by_number ON numbers(campaign_pk, number, deleted, status, attempts);
CREATE INDEX IF NOT EXISTS numbers_by_attempts ON numbers(campaign_pk, attempts, deleted, status);
-- One status sorted by attempts (the dialer's "NotContacted, fewest attempts first" too).
CREATE INDEX IF NOT EXISTS numbers_by_status ON numbers(campaign_pk, status, attempts, deleted);
-- The dialer's question after every call: which retries are due now?
CREATE INDEX IF NOT EXISTS numbers_retry_due ON numbers(campaign_pk, next_attempt_at) WHERE status = 'RetryPending';
-- How many numbers of a campaign have each status and attempt count: X-Total-Count for status and
-- attempts filters without counting rows.
CREATE TABLE IF NOT EXISTS number_counts(
  campaign_pk INTEGER NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, n INTEGER NOT NULL,
  PRIMARY KEY(campaign_pk, status, attempts)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS call_details(
  id INTEGER PRIMARY KEY, campaign_pk INTEGER NOT NULL, number_id INTEGER NOT NULL, number TEXT NOT NULL,
  attempt INTEGER NOT NULL, started_at_local TEXT NOT NULL, answered_at_local TEXT, ended_at_local TEXT NOT NULL,
  ring_result TEXT NOT NULL, answer_type TEXT, sip_response_code INTEGER NOT NULL, end_type TEXT, queue_id TEXT,
  outcome TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS call_details_by_campaign ON call_details(campaign_pk);
CREATE INDEX IF NOT EXISTS call_details_by_number ON call_details(campaign_pk, number, attempt);
CREATE INDEX IF NOT EXISTS call_details_by_start ON call_details(campaign_pk, started_at_local);
`;

export type Row = Record<string, SQLInputValue>;

export class Database {
  readonly sqlite: DatabaseSync;
  private readonly statements = new Map<string, StatementSync>();
  /** Statements that return rows as arrays: kept apart, since the setting belongs to the statement. */
  private readonly arrayStatements = new Map<string, StatementSync>();
  private depth = 0;
  private readonly checkpointer: Worker | null = null;
  private readonly checkpointerExit: Promise<unknown> | null = null;
  /** The checkpointer's last report, and who waits for the next. */
  private wal: WalReport = { behind: 0, bytes: 0 };
  private closing = false;
  private readonly walWaiters: (() => void)[] = [];

  constructor(path: string) {
    this.sqlite = new DatabaseSync(path);
    this.sqlite.exec('PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000; PRAGMA cache_size=-262144;');
    if (path !== ':memory:') {
      // A commit of thousands of random index inserts writes more than the 1,000-page auto-checkpoint
      // threshold, so every such commit also checkpointed (and fsynced) on the event loop: up to 0.9 s. The log rewinds
      // on the first write after a complete checkpoint (checkpoint-worker.ts).
      // No journal_size_limit: truncating a log of gigabytes when it rewinds took the event loop 2.5 s. The
      // checkpointer truncates it instead, when the server is idle.
      this.sqlite.exec('PRAGMA wal_autocheckpoint=0');
      this.checkpointer = new Worker(new URL('./checkpoint-worker.ts', import.meta.url), { workerData: { path, intervalMs: 200 } });
      this.checkpointer.unref();
      // Without the checkpointer the log only grows until a restart: worth a warning, not a crash.
      this.checkpointer.on('error', (err) => process.emitWarning(`WAL checkpointer stopped: ${err.message}`));
      this.checkpointerExit = once(this.checkpointer, 'exit');
      this.checkpointer.on('message', (report: WalReport) => {
        this.wal = report;
        for (const wake of this.walWaiters.splice(0)) wake();
      });
    }
    this.sqlite.exec(SCHEMA);
    const version = this.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', 'schema');
    if (!version) this.run('INSERT INTO meta(key, value) VALUES (?, ?)', 'schema', String(SCHEMA_VERSION));
    else if (Number(version.value) !== SCHEMA_VERSION) {
      throw new Error(`database schema version ${version.value} is not ${SCHEMA_VERSION}; use a new --db file`);
    }
  }

  statement(sql: string): StatementSync {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.sqlite.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  get<T>(sql: string, ...params: SQLInputValue[]): T | undefined {
    return this.statement(sql).get(...params) as T | undefined;
  }

  all<T>(sql: string, ...params: SQLInputValue[]): T[] {
    return this.statement(sql).all(...params) as T[];
  }

  /** Rows as arrays of column values in the SELECT's order: no object per row, for the hot list pages. */
  arrays(sql: string, ...params: SQLInputValue[]): SQLOutputValue[][] {
    let s = this.arrayStatements.get(sql);
    if (!s) {
      s = this.sqlite.prepare(sql);
      s.setReturnArrays(true);
      this.arrayStatements.set(sql, s);
    }
    return s.all(...params) as unknown as SQLOutputValue[][];
  }

  run(sql: string, ...params: SQLInputValue[]): { changes: number; lastInsertRowid: number } {
    const r = this.statement(sql).run(...params);
    return { changes: Number(r.changes), lastInsertRowid: Number(r.lastInsertRowid) };
  }

  /**
   * For bulk writers, between two transactions: once the log holds more than WAL_ROOM_BYTES, waits (without blocking
   * the event loop) until the checkpointer has copied all of it into the database file; the next write then rewinds
   * the log to its start. A log rewinds only after a complete checkpoint, which passive ones never reach under a
   * steady stream of writes. Other writers never wait here, and nobody waits on the event loop for a checkpoint.
   */
  async walRoom(): Promise<void> {
    if (!this.checkpointer) return;
    while (this.wal.bytes > WAL_ROOM_BYTES && this.wal.behind > 0 && !this.closing) {
      await new Promise<void>((resolve) => this.walWaiters.push(resolve));
    }
  }

  /** Runs fn in one transaction (a savepoint when nested). fn must not await: the connection is shared. */
  transaction<T>(fn: () => T): T {
    const name = `sp${this.depth}`;
    this.sqlite.exec(this.depth === 0 ? 'BEGIN IMMEDIATE' : `SAVEPOINT ${name}`);
    this.depth++;
    try {
      const result = fn();
      this.depth--;
      this.sqlite.exec(this.depth === 0 ? 'COMMIT' : `RELEASE ${name}`);
      return result;
    } catch (err) {
      this.depth--;
      this.sqlite.exec(this.depth === 0 ? 'ROLLBACK' : `ROLLBACK TO ${name}; RELEASE ${name}`);
      throw err;
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const wake of this.walWaiters.splice(0)) wake();
    if (this.checkpointer) {
      this.checkpointer.ref(); // keep the process up until it has finished
      this.checkpointer.postMessage('stop');
      await this.checkpointerExit;
    }
    this.sqlite.close();
  }
}
