// Worker thread body: copies the write-ahead log into the database file on its own connection (PASSIVE
// checkpoints run beside the writer), so the server's connection never checkpoints on the event loop.
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const { path, intervalMs } = workerData as { path: string; intervalMs: number };
const db = new DatabaseSync(path);
db.exec('PRAGMA busy_timeout=1000');
const timer = setInterval(() => {
  try {
    db.exec('PRAGMA wal_checkpoint(PASSIVE)');
  } catch {
    // busy: the next tick tries again
  }
}, intervalMs);
parentPort!.on('message', (msg) => {
  if (msg === 'stop') {
    clearInterval(timer);
    try { db.exec('PRAGMA wal_checkpoint(PASSIVE)'); } catch { /* the server's close checkpoints too */ }
    db.close();
    parentPort!.close();
  }
});
