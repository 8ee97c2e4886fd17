// The SQLite database: opening it (file or memory), the schema, cached statements and transactions.
import { DatabaseSync, type StatementSync, type SQLInputValue, type SQLOutputValue } from 'node:sqlite';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import type { CheckpointerData, CheckpointerRequest, WalReport } from './checkpoint-worker.ts';

/** A worker's file has this module's extension: .ts run from the repository, .js compiled into the package. */
const SOURCE = import.meta.url.slice(import.meta.url.lastIndexOf('.'));

const SCHEMA_VERSION = 1;

/** How a file database's write-ahead log is kept; the defaults are the server's, tests shrink them. */
export interface WalOptions {
  /** Log size beyond which bulk writers pause until it is all checkpointed (Database.walRoom). */
  roomBytes: number;
  /** How often the checkpointer copies the log into the database file. */
  checkpointMs: number;
  /** How long the server's connection must write nothing before the checkpointer truncates a large log file. */
  idleMs: number;
  /** A log file larger than this is truncated when the server is idle. */
  truncateBytes: number;
}

const WAL_DEFAULTS: WalOptions = { roomBytes: 512 * 1024 * 1024, checkpointMs: 200, idleMs: 10_000, truncateBytes: 64 * 1024 * 1024 };

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
-- Every delivery attempt's result, the last 100 per endpoint (the console shows them); outcome delivered|retrying|failed.
CREATE TABLE IF NOT EXISTS webhook_attempts(
  id INTEGER PRIMARY KEY, endpoint_pk INTEGER NOT NULL, event_id TEXT NOT NULL, event_type TEXT NOT NULL,
  attempt INTEGER NOT NULL, at TEXT NOT NULL, outcome TEXT NOT NULL, detail TEXT);
CREATE INDEX IF NOT EXISTS webhook_attempts_by_endpoint ON webhook_attempts(endpoint_pk, id);
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

/** A connection with its prepared statements, for reading: the server's Database, or a reader of its own (openReader). */
export class Connection {
  readonly sqlite: DatabaseSync;
  private readonly statements = new Map<string, StatementSync>();
  /** Statements that return rows as arrays: kept apart, since the setting belongs to the statement. */
  private readonly arrayStatements = new Map<string, StatementSync>();

  constructor(sqlite: DatabaseSync) { this.sqlite = sqlite; }

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
}

/**
 * A read-only connection to a database file the server has open, for a thread of its own (./page-worker.ts): in WAL
 * mode it reads while the server writes. A 64 MB cache (the server's holds 256): with 16 MB a campaign of 1,000,000
 * numbers served ~8% fewer pages a second, with 256 MB none more; mapping the file into memory gained nothing.
 */
export function openReader(path: string): Connection {
  const sqlite = new DatabaseSync(path, { readOnly: true });
  sqlite.exec('PRAGMA busy_timeout=5000; PRAGMA cache_size=-65536;');
  return new Connection(sqlite);
}

export class Database extends Connection {
  private depth = 0;
  private readonly checkpointer: Worker | null = null;
  private readonly checkpointerExit: Promise<unknown> | null = null;
  private readonly walOptions: WalOptions;
  /** The checkpointer's last report. */
  private wal: WalReport = { behind: 0, bytes: 0 };
  /** About how much log bulk writers have written since the last complete checkpoint (walRoom). */
  private bulkBytes = 0;
  private pageSize = 4096;
  /**
   * Shared with the checkpointer: this connection's writes begun [0] and finished [1], so it can tell idle, and
   * walRoom's calls [2], so it can tell a bulk writer at work.
   */
  private readonly writes = new Int32Array(new SharedArrayBuffer(12));
  private closing = false;
  /** The checkpointer thread has exited (an error; a warning was emitted): nobody answers checkpoint() any more. */
  private checkpointerGone = false;
  private nextRequest = 0;
  /** checkpoint()'s requests waiting for their report. */
  private readonly requested = new Map<number, (report: WalReport | null) => void>();

  constructor(path: string, walOptions: Partial<WalOptions> = {}) {
    super(new DatabaseSync(path));
    this.walOptions = { ...WAL_DEFAULTS, ...walOptions };
    // synchronous=OFF: in WAL mode this connection's only sync was of the log's header each time the log rewinds, an
    // fsync that waited for the checkpointer's writes to reach the disk: it held the event loop 40-66 ms at most
    // rewinds of an upload. The checkpointer's own connection (synchronous FULL) still syncs the log before copying it
    // and the database file after. A power cut or OS crash may lose the writes since the last checkpoint (as NORMAL
    // may lose those since the last sync); a crash of the process loses nothing committed.
    this.sqlite.exec('PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA busy_timeout=5000; PRAGMA cache_size=-262144;');
    if (path !== ':memory:') {
      // A commit of thousands of random index inserts writes more than the 1,000-page auto-checkpoint
      // threshold, so every such commit also checkpointed (and fsynced) on the event loop: up to 0.9 s. The log rewinds
      // on the first write after a complete checkpoint (checkpoint-worker.ts).
      // No journal_size_limit: truncating a log of gigabytes when it rewinds took the event loop 2.5 s. The
      // checkpointer truncates it instead, when the server is idle.
      this.sqlite.exec('PRAGMA wal_autocheckpoint=0');
      const { checkpointMs, idleMs, truncateBytes } = this.walOptions;
      const workerData: CheckpointerData = {
        path, intervalMs: checkpointMs, idleTicks: Math.max(1, Math.ceil(idleMs / checkpointMs)), truncateBytes,
        writes: this.writes.buffer as SharedArrayBuffer,
      };
      this.checkpointer = new Worker(new URL(`./checkpoint-worker${SOURCE}`, import.meta.url), { workerData });
      this.checkpointer.unref();
      // Without the checkpointer the log only grows until a restart: worth a warning, not a crash.
      this.checkpointer.on('error', (err) => process.emitWarning(`WAL checkpointer stopped: ${err.message}`));
      this.checkpointerExit = once(this.checkpointer, 'exit');
      const gone = () => { this.checkpointerGone = true; this.answerAll(); };
      this.checkpointerExit.then(gone, gone);
      this.checkpointer.on('message', (report: WalReport) => {
        if (!report.failed) this.wal = report;
        if (!report.failed && report.behind === 0) this.bulkBytes = 0; // all copied: the next write rewinds the log
        if (report.request === undefined) return;
        this.requested.get(report.request)?.(report);
        this.requested.delete(report.request);
      });
    }
    this.sqlite.exec(SCHEMA);
    this.pageSize = this.get<{ page_size: number }>('PRAGMA page_size')!.page_size;
    const version = this.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', 'schema');
    if (!version) this.run('INSERT INTO meta(key, value) VALUES (?, ?)', 'schema', String(SCHEMA_VERSION));
    else if (Number(version.value) !== SCHEMA_VERSION) {
      throw new Error(`database schema version ${version.value} is not ${SCHEMA_VERSION}; use a new --db file`);
    }
  }

  run(sql: string, ...params: SQLInputValue[]): { changes: number; lastInsertRowid: number } {
    if (this.depth === 0) Atomics.add(this.writes, 0, 1);
    try {
      const r = this.statement(sql).run(...params);
      return { changes: Number(r.changes), lastInsertRowid: Number(r.lastInsertRowid) };
    } finally {
      if (this.depth === 0) Atomics.add(this.writes, 1, 1);
    }
  }

  /**
   * For bulk writers, after each transaction of `rows` new rows: once they have written about WalOptions.roomBytes of
   * log (a random phone number dirties an index page, a page of log, a row), asks the checkpointer for a checkpoint and
   * waits (without blocking the event loop) until one has copied all of the log into the database file; the next write
   * then rewinds the log to its start.
   * - A log rewinds only after a complete checkpoint, which periodic passive ones never reach under a steady stream of
   *   writes. Trusting their reports ("all copied", as of a checkpoint the writer had already outrun) let the log grow
   *   past 2 GB in a 1M-row upload, and the hard-limit truncation then held the event loop for a second.
   * - While a bulk writer is at work the checkpointer leaves the copying to these pauses: a checkpoint syncs the log
   *   and the database file, and commits made during those syncs waited 30-65 ms in the kernel.
   * Other writers never wait here, and nobody waits on the event loop for a checkpoint.
   */
  async walRoom(rows: number): Promise<void> {
    if (!this.checkpointer) return;
    Atomics.add(this.writes, 2, 1);
    this.bulkBytes += rows * this.pageSize;
    // Others writing all the time (the dialer on a fast clock) can keep every checkpoint from completing: after a few
    // tries the writer goes on, and tries again after its next transaction.
    const full = () => Math.max(this.bulkBytes, this.wal.bytes) > this.walOptions.roomBytes && !this.closing;
    for (let tries = 0; tries < 20 && full(); tries++) {
      const report = await this.checkpoint();
      if (!report) return; // closing, or the checkpointer is gone
      if (report.behind === 0 && !report.failed) {
        this.bulkBytes = 0;
        this.wal = { behind: 0, bytes: 0 }; // as the next write will leave it
        return;
      }
      // Others wrote meanwhile, or a lock held the checkpoint off: try again shortly.
      await sleep(this.walOptions.checkpointMs / 4);
    }
  }

  /** A checkpoint now, on the checkpointer's thread, and its report; null for :memory:, once the database is closing, or without a checkpointer. */
  checkpoint(): Promise<WalReport | null> {
    if (!this.checkpointer || this.closing || this.checkpointerGone) return Promise.resolve(null);
    const request = this.nextRequest++;
    return new Promise((resolve) => {
      this.requested.set(request, resolve);
      this.checkpointer!.postMessage({ kind: 'now', request } satisfies CheckpointerRequest);
    });
  }

  private answerAll(): void {
    for (const answer of this.requested.values()) answer(null);
    this.requested.clear();
  }

  /** Runs fn in one transaction (a savepoint when nested). fn must not await: the connection is shared. */
  transaction<T>(fn: () => T): T {
    const name = `sp${this.depth}`;
    const outermost = this.depth === 0;
    if (outermost) Atomics.add(this.writes, 0, 1);
    try {
      this.sqlite.exec(outermost ? 'BEGIN IMMEDIATE' : `SAVEPOINT ${name}`);
      this.depth++;
      try {
        const result = fn();
        this.depth--;
        this.sqlite.exec(outermost ? 'COMMIT' : `RELEASE ${name}`);
        return result;
      } catch (err) {
        this.depth--;
        this.sqlite.exec(outermost ? 'ROLLBACK' : `ROLLBACK TO ${name}; RELEASE ${name}`);
        throw err;
      }
    } finally {
      if (outermost) Atomics.add(this.writes, 1, 1);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    this.answerAll();
    if (this.checkpointer) {
      this.checkpointer.ref(); // keep the process up until it has finished
      this.checkpointer.postMessage({ kind: 'stop' } satisfies CheckpointerRequest);
      await this.checkpointerExit;
    }
    this.sqlite.close();
  }
}
