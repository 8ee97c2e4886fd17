// Worker thread body: reads pages of numbers lists on a read-only connection of its own (./page-reader.ts), so the
// server's event loop does not wait on SQLite for them and a second core can do that work. Each page and its
// X-Total-Count are read in one transaction: one snapshot, as consistent as on the server's own connection.
import { parentPort, workerData } from 'node:worker_threads';
import { openReader } from './db.ts';
import { NumberPages } from './number-pages.ts';
import type { PageAnswer, PageQuestion, PageWorkerData } from './page-reader.ts';

const { path } = workerData as PageWorkerData;
const connection = openReader(path);
const pages = new NumberPages(connection);
// Prepared once: exec() parsed them again for every page (4% of this thread's time).
const begin = connection.statement('BEGIN');
const commit = connection.statement('COMMIT');

parentPort!.on('message', ({ id, request }: PageQuestion) => {
  let answer: PageAnswer;
  try {
    begin.run();
    try {
      answer = { id, page: pages.page(request) };
    } finally {
      commit.run();
    }
  } catch (err) {
    answer = { id, error: err instanceof Error ? err.message : String(err) };
  }
  parentPort!.postMessage(answer);
});
