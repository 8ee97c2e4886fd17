// Worker thread body: copies the write-ahead log into the database file on its own connection, so the
// server's connection never checkpoints on the event loop, and tells the server how far behind it is.
//
// PASSIVE checkpoints run beside the writer and never hold it off. Under a long burst of writes (a big upload
// of random phone numbers dirties a page of the number index per row) they fall behind and the log grows;
// bulk writers (Database.walRoom) then pause between their transactions until a checkpoint catches up, after
// which the next write rewinds the log and the size limit truncates it. Only past HARD_MAX_WAL_BYTES, which a
// writer that pauses never reaches, does a TRUNCATE checkpoint hold every writer off until it is done.
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const HARD_MAX_WAL_BYTES = 2 * 1024 * 1024 * 1024;

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

function checkpoint(): void {
  try {
    const r = passive.get() as { busy: number; log: number; checkpointed: number };
    const report: WalReport = { behind: Math.max(0, r.log - r.checkpointed) * pageSize, bytes: Math.max(0, r.log) * pageSize };
    if (report.bytes > HARD_MAX_WAL_BYTES) db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
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
