// Worker thread body: copies the write-ahead log into the database file on its own connection, so the
// server's connection never checkpoints on the event loop, and tells the server how far behind it is.
//
// PASSIVE checkpoints run beside the writer and never hold it off. The log rewinds only when a write begins after a
// complete checkpoint, which a steady stream of writes (a big upload of random phone numbers dirties an index page a
// row) never allows, so it grows; bulk writers (Database.walRoom) then ask for a checkpoint and pause until one
// completes, and their next write rewinds it. While one is at work, the periodic checkpoints stop. Only past HARD_MAX_WAL_BYTES, which a writer that pauses never reaches
// (one transaction of millions of rows can), does a TRUNCATE checkpoint hold every writer off until it is done.
import { statSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const HARD_MAX_WAL_BYTES = 2 * 1024 * 1024 * 1024;

export interface CheckpointerData {
  path: string;
  intervalMs: number;
  /** Ticks in a row with no write begun or under way before the log file is truncated. */
  idleTicks: number;
  /** A log file larger than this is truncated when the server is idle. */
  truncateBytes: number;
  /** The server connection's writes, [0] begun and [1] finished (Database.transaction and run count them), and [2] bulk writers' pauses (Database.walRoom). */
  writes: SharedArrayBuffer;
}

export interface WalReport {
  /** Bytes of log not yet copied into the database file. */
  behind: number;
  /** Bytes the log holds. */
  bytes: number;
  /** Answers Database.checkpoint's request of this number; absent on the periodic reports. */
  request?: number;
  /** The checkpoint could not run (another connection held a lock); the figures are the last known ones. */
  failed?: boolean;
}

export type CheckpointerRequest = { kind: 'now'; request: number } | { kind: 'stop' };

const { path, intervalMs, idleTicks, truncateBytes, writes: writesBuffer } = workerData as CheckpointerData;
const writes = new Int32Array(writesBuffer);
const db = new DatabaseSync(path);
// FULL: a checkpoint syncs the log before copying it and the database file after; the server's connection syncs nothing.
db.exec('PRAGMA busy_timeout=5000; PRAGMA synchronous=FULL');
const pageSize = Number((db.prepare('PRAGMA page_size').get() as { page_size: number }).page_size);
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');

function walFileBytes(): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
}

let last: WalReport = { behind: 0, bytes: 0 };
let lastWrites = -1;
let lastBulk = 0;
let quietTicks = 0;

function checkpoint(): WalReport {
  try {
    const r = passive.get() as { busy: number; log: number; checkpointed: number };
    last = { behind: Math.max(0, r.log - r.checkpointed) * pageSize, bytes: Math.max(0, r.log) * pageSize };
    // Truncating a large log file takes a while (1.5 s for a few hundred MB here) and holds writers off: done past the
    // hard limit, or once all is copied and the server's connection has begun no write for idleTicks and has none
    // under way. The log alone can't tell: one long transaction (a million-row duplicate) leaves it unchanged for
    // seconds, and truncating then would hold the event loop's next write.
    const begun = Atomics.load(writes, 0);
    const idle = r.log === r.checkpointed && begun === Atomics.load(writes, 1) && begun === lastWrites;
    quietTicks = idle ? quietTicks + 1 : 0;
    lastWrites = begun;
    if (last.bytes > HARD_MAX_WAL_BYTES || (quietTicks >= idleTicks && walFileBytes() > truncateBytes)) {
      db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      quietTicks = 0;
      last = { behind: 0, bytes: 0 };
    }
    return last;
  } catch {
    return { ...last, failed: true }; // busy: the next tick tries again
  }
}

const timer = setInterval(() => {
  // A bulk writer at work asks for checkpoints itself, between its transactions (Database.walRoom): one now would sync
  // the log and the database file under its commits, which then wait in the kernel.
  const bulk = Atomics.load(writes, 2);
  const bulkAtWork = bulk !== lastBulk;
  lastBulk = bulk;
  if (bulkAtWork && walFileBytes() < HARD_MAX_WAL_BYTES) return;
  const report = checkpoint();
  if (!report.failed) parentPort!.postMessage(report);
}, intervalMs);

parentPort!.on('message', (msg: CheckpointerRequest) => {
  if (msg.kind === 'now') {
    parentPort!.postMessage({ ...checkpoint(), request: msg.request } satisfies WalReport);
    return;
  }
  clearInterval(timer);
  try { db.exec('PRAGMA wal_checkpoint(TRUNCATE)'); } catch { /* busy: the log is replayed on the next open */ }
  db.close();
  parentPort!.close();
});
