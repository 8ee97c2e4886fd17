// Worker thread body: copies the write-ahead log into the database file on its own connection, so the
// server's connection never checkpoints on the event loop. PASSIVE checkpoints run beside the writer;
// under continuous writes they never fully catch up and the log would grow without end, so past
// MAX_WAL_BYTES a TRUNCATE checkpoint holds the writer off briefly and empties it.
import { statSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const MAX_WAL_BYTES = 256 * 1024 * 1024;

const { path, intervalMs } = workerData as { path: string; intervalMs: number };
const db = new DatabaseSync(path);
db.exec('PRAGMA busy_timeout=5000');

function walBytes(): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
}

const timer = setInterval(() => {
  try {
    db.exec(walBytes() > MAX_WAL_BYTES ? 'PRAGMA wal_checkpoint(TRUNCATE)' : 'PRAGMA wal_checkpoint(PASSIVE)');
  } catch {
    // busy: the next tick tries again
  }
}, intervalMs);

parentPort!.on('message', (msg) => {
  if (msg !== 'stop') return;
  clearInterval(timer);
  try { db.exec('PRAGMA wal_checkpoint(TRUNCATE)'); } catch { /* busy: the log is replayed on the next open */ }
  db.close();
  parentPort!.close();
});
