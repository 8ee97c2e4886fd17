// Worker thread body: copies the write-ahead log into the database file on its own connection, so the
// server's connection never checkpoints on the event loop, and tells the server how far behind it is.
//
// PASSIVE checkpoints run beside the writer and never hold it off. The log rewinds only when a write begins after a
// complete checkpoint, which a steady stream of writes (a big upload of random phone numbers dirties an index page a
// row) never allows, so it grows; bulk writers (Database.walRoom) then pause between their transactions until a
// checkpoint completes, and their next write rewinds it. Only past HARD_MAX_WAL_BYTES, which a writer that pauses
// never reaches, does a TRUNCATE checkpoint hold every writer off until it is done.
import { statSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const HARD_MAX_WAL_BYTES = 2 * 1024 * 1024 * 1024;
/** A log file larger than this is truncated when the server is idle. */
const IDLE_TRUNCATE_BYTES = 64 * 1024 * 1024;

function walFileBytes(): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
}

export interface WalReport {
  /** Bytes of log not yet copied into the database file. */
  behind: number;
  /** Bytes the log holds. */
  bytes: number;
}

const { path, intervalMs } = workerData as { path: string; intervalMs: number };
const db = new DatabaseSync(path);
db.exec('PRAGMA busy_timeout=5000');
const pageSize = Number((db.prepare('PRAGMA page_size').get() as { page_size: number }).page_size);
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');

/** Ticks in a row with nothing written: 10 s, far longer than a bulk writer's pause in Database.walRoom. */
const IDLE_TICKS = 50;
let lastLog = -1;
let quietTicks = 0;

function checkpoint(): void {
  try {
    const r = passive.get() as { busy: number; log: number; checkpointed: number };
    const report: WalReport = { behind: Math.max(0, r.log - r.checkpointed) * pageSize, bytes: Math.max(0, r.log) * pageSize };
    // Truncating a large log file takes a while (1.5 s for a few hundred MB here) and holds writers off: done past the
    // hard limit, or once all is copied and nothing was written for IDLE_TICKS, to give back the disk a burst took.
    quietTicks = r.log === r.checkpointed && r.log === lastLog ? quietTicks + 1 : 0;
    lastLog = r.log;
    if (report.bytes > HARD_MAX_WAL_BYTES || (quietTicks >= IDLE_TICKS && walFileBytes() > IDLE_TRUNCATE_BYTES)) {
      db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      quietTicks = 0;
    }
    parentPort!.postMessage(report);
  } catch {
    // busy: the next tick tries again
  }
}

const timer = setInterval(checkpoint, intervalMs);

parentPort!.on('message', (msg) => {
  if (msg === 'now') return checkpoint();
  if (msg !== 'stop') return;
  clearInterval(timer);
  try { db.exec('PRAGMA wal_checkpoint(TRUNCATE)'); } catch { /* busy: the log is replayed on the next open */ }
  db.close();
  parentPort!.close();
});
