// The write-ahead log of a file database: bulk writers keep it bounded, and the checkpointer truncates it only when
// the server's connection is really idle. Real SQLite files and the real checkpointer thread, with small settings.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../server/store/store.ts';
import type { NewNumber } from '../../server/store/numbers.ts';

let dir: string;
let store: Store | undefined;
beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'cdk-wal-')); });
afterEach(async () => {
  await store?.close();
  store = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const walBytes = (path: string) => { try { return statSync(`${path}-wal`).size; } catch { return 0; } };

/** Numbers spread over the whole index, as an upload of a real list is: each dirties its own index page. */
function randomNumbers(n: number, seed: number): NewNumber[] {
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return { number: `+1212${String(1_000_000 + (x % 9_000_000)).padStart(7, '0')}`, varNames: ['a'], varValues: ['x'] };
  });
}

describe('write-ahead log', () => {
  it('stays near its room while a bulk writer inserts without pause, because the writer waits for a complete checkpoint', async () => {
    const path = join(dir, 'bulk.db');
    const room = 4 * 1024 * 1024;
    store = new Store(path, { roomBytes: room, checkpointMs: 5 });
    await store.db.checkpoint(); // the checkpointer thread is up
    let peak = 0;
    for (let batch = 0; batch < 200; batch++) {
      store.numbers.insert(1, randomNumbers(250, batch + 1));
      peak = Math.max(peak, walBytes(path));
      await new Promise((resolve) => setImmediate(resolve));
      await store.db.walRoom(250);
    }
    expect(store.db.get<{ n: number }>('SELECT count(*) AS n FROM numbers')!.n).toBeGreaterThan(49_000);
    // 200 transactions of 250 random rows write up to 250 index pages each: ~100 MB of log if it never rewound (as it
    // did not when the writer trusted the periodic reports). Bounded: the room, plus what is written between reports.
    expect(peak).toBeLessThan(room * 4);
  });

  it('is not copied out by the periodic checkpoints while a bulk writer is at work, which asks for them itself', async () => {
    const path = join(dir, 'quiet.db');
    store = new Store(path, { roomBytes: 1024 * 1024 * 1024, checkpointMs: 50 });
    await store.db.checkpoint(); // the checkpointer thread is up, the schema copied into the file
    const before = statSync(path).size;
    const started = performance.now();
    let batch = 0;
    // Several checkpointer periods of writing: each period sees walRoom calls, so none copies anything.
    while (performance.now() - started < 400) {
      store.numbers.insert(1, randomNumbers(250, ++batch));
      await new Promise((resolve) => setImmediate(resolve));
      await store.db.walRoom(250);
    }
    expect(walBytes(path)).toBeGreaterThan(1024 * 1024);
    expect(statSync(path).size).toBe(before);
    // Once it stops, the next periods copy the log out.
    let copied = false;
    for (let i = 0; i < 100 && !copied; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      copied = statSync(path).size > before;
    }
    expect(copied).toBe(true);
  });

  it('is not truncated at the end of a transaction longer than the idle time, only once the connection is idle', async () => {
    const path = join(dir, 'idle.db');
    store = new Store(path, { checkpointMs: 10, idleMs: 50, truncateBytes: 0 });
    const db = store.db;
    await db.checkpoint(); // the checkpointer thread is up
    const pause = new Int32Array(new SharedArrayBuffer(4));
    store.numbers.insert(1, randomNumbers(500, 7));
    db.transaction(() => {
      store!.numbers.insert(1, randomNumbers(500, 8));
      Atomics.wait(pause, 0, 0, 300); // one long transaction: the log stands still for 30 checkpointer ticks
    });
    const first = await db.checkpoint();
    expect(first).not.toBeNull();
    expect(walBytes(path)).toBeGreaterThan(0);
    // Idle from now on: truncated within a few idle periods.
    let truncated = false;
    for (let i = 0; i < 500 && !truncated; i++) {
      await db.checkpoint();
      truncated = walBytes(path) === 0;
    }
    expect(truncated).toBe(true);
  });

  it('lets a bulk writer go on when no checkpoint can complete, and tries again after its next transaction', async () => {
    const path = join(dir, 'pinned.db');
    store = new Store(path, { roomBytes: 1024, checkpointMs: 20 });
    await store.db.checkpoint(); // the checkpointer thread is up
    store.numbers.insert(1, randomNumbers(250, 4));
    // A reader on another connection holds its snapshot: no checkpoint can copy what was written after it.
    const reader = new DatabaseSync(path);
    try {
      reader.exec('BEGIN');
      reader.prepare('SELECT count(*) FROM numbers').get();
      store.numbers.insert(1, randomNumbers(250, 5));
      await store.db.walRoom(250); // past the room; resolves after its tries instead of waiting for the reader
      const report = await store.db.checkpoint();
      expect(report!.behind).toBeGreaterThan(0);
      reader.exec('COMMIT');
      store.numbers.insert(1, randomNumbers(250, 6));
      await store.db.walRoom(250);
      expect((await store.db.checkpoint())!.behind).toBe(0);
    } finally {
      reader.close();
    }
  });

  it('does not keep a bulk writer waiting once the checkpointer thread has died', async () => {
    const path = join(dir, 'gone.db');
    store = new Store(path, { roomBytes: 1024 });
    await store.db.checkpoint(); // the checkpointer thread is up
    // A private member, on purpose: the thread dying (an error in it) is what is tested, and nothing public kills it.
    const thread = (store.db as unknown as { checkpointer: Worker }).checkpointer;
    await thread.terminate();
    store.numbers.insert(1, randomNumbers(250, 3));
    await store.db.walRoom(250); // far past the room: would wait for a checkpoint nobody makes
    expect(await store.db.checkpoint()).toBeNull();
  });

  it('answers walRoom and checkpoint at once for a database in memory', async () => {
    store = new Store(':memory:');
    await store.db.walRoom(1_000);
    expect(await store.db.checkpoint()).toBeNull();
  });
});
