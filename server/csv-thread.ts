// The CSV parsing thread as the event loop sees it: one long-lived worker, one session per upload, with bounded
// buffering end to end (the file is read only as fast as parsed rows are inserted).
import { Worker } from 'node:worker_threads';
import type { CsvBatch, CsvFromMain, CsvSettings, CsvToMain } from './csv-protocol.ts';

/** A worker's file has this module's extension: .ts run from the repository, .js compiled into the package. */
const SOURCE = import.meta.url.slice(import.meta.url.lastIndexOf('.'));

/** File chunks sent and not yet parsed, and parsed batches not yet taken, before reading the file waits. */
const CHUNKS_AHEAD = 4;
const BATCHES_AHEAD = 2;

type Message = Exclude<CsvToMain, { kind: 'ack' }>;

export class CsvThread {
  private worker: Worker | null = null;
  private readonly sessions = new Map<number, (m: CsvToMain) => void>();
  private nextId = 0;
  private closed = false;

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL(`./csv-worker${SOURCE}`, import.meta.url));
    worker.unref();
    worker.on('message', (m: CsvToMain) => this.sessions.get(m.id)?.(m));
    // A crashed thread fails the uploads it held (each answers 500; what they inserted stays); the next upload starts a new one.
    const fail = (message: string) => {
      if (this.worker === worker) this.worker = null;
      for (const [id, deliver] of this.sessions) deliver({ id, kind: 'error', message });
    };
    worker.on('error', (err) => fail(`the CSV parsing thread failed: ${err.message}`));
    worker.on('exit', (code) => { if (!this.closed) fail(`the CSV parsing thread exited with code ${code}`); });
    this.worker = worker;
    return worker;
  }

  /**
   * Parses `file` on the thread: yields its batches in file order, and returns the settings as decided and the count
   * of data rows. Stopping early (an error, a break) abandons the session.
   */
  async *parse(file: AsyncIterable<Buffer>, settings: CsvSettings): AsyncGenerator<CsvBatch, { settings: CsvSettings; rows: number }> {
    if (this.closed) throw new Error('the server is closing');
    const worker = this.start();
    const id = this.nextId++;
    const inbox: Message[] = [];
    let unacked = 0;
    let wake: (() => void) | null = null;
    this.sessions.set(id, (m) => {
      if (m.kind === 'ack') unacked--;
      else inbox.push(m);
      wake?.();
    });
    const send = (m: CsvFromMain) => worker.postMessage(m);
    let finished = false;
    try {
      send({ id, kind: 'open', settings });
      const reader = file[Symbol.asyncIterator]();
      let fileDone = false;
      let fileError: { error: unknown } | null = null;
      for (;;) {
        while (!fileDone && unacked < CHUNKS_AHEAD && inbox.length < BATCHES_AHEAD) {
          let next: IteratorResult<Buffer>;
          try {
            next = await reader.next();
          } catch (err) {
            // The file stopped (too large, connection gone): what was read is still parsed and yielded, then this error.
            fileError = { error: err };
            next = { done: true, value: undefined };
          }
          if (next.done) {
            fileDone = true;
            send({ id, kind: 'end' });
          } else {
            unacked++;
            send({ id, kind: 'chunk', chunk: next.value });
          }
        }
        if (!inbox.length) {
          // Woken by an ack (room to send more of the file) or a message.
          await new Promise<void>((resolve) => { wake = resolve; });
          wake = null;
          continue;
        }
        const m = inbox.shift()!;
        if (m.kind === 'batch') yield m.batch;
        else if (m.kind === 'done') {
          finished = true;
          if (fileError) throw fileError.error;
          return { settings: m.settings, rows: m.rows };
        } else {
          finished = true;
          throw new Error(m.message);
        }
      }
    } finally {
      if (!finished) send({ id, kind: 'abort' });
      this.sessions.delete(id);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.worker?.terminate();
    this.worker = null;
  }
}
