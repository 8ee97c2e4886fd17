// Reads the pages of numbers lists (§4.6) and number-details reports (§4.11): on a thread of its own when the
// database is a file, on the server's connection when it is :memory: (nothing else can open that).
//
// A page was ~60% of the event loop's time under load (0.3 ms of SQLite for 100 records of a 1,000,000-number
// campaign); on the worker the event loop keeps routing, authentication and the socket, and both cores serve pages.
// Reads see every write committed before they were asked for (WAL: a new read transaction sees the latest commit),
// so a client that adds numbers and then lists them sees them.
import { Worker } from 'node:worker_threads';
import type { Database } from './db.ts';
import { NumberPages, type NumbersPage, type PageRequest } from './number-pages.ts';

/** A worker's file has this module's extension: .ts run from the repository, .js compiled into the package. */
const SOURCE = import.meta.url.slice(import.meta.url.lastIndexOf('.'));

export interface PageWorkerData { path: string }
export interface PageQuestion { id: number; request: PageRequest }
export type PageAnswer = { id: number; page: NumbersPage } | { id: number; error: string };

interface Pending { request: PageRequest; resolve: (page: NumbersPage) => void; reject: (err: Error) => void }

export class PageReader {
  /** On the server's connection: for :memory:, and once the worker is gone. */
  private readonly local: NumberPages;
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private closing = false;
  /** Called with each page, its statements timed and included (a benchmark's probe); null: no timing. */
  observer: ((page: NumbersPage) => void) | null = null;

  constructor(db: Database, path: string) {
    this.local = new NumberPages(db);
    if (path === ':memory:') return;
    const worker = new Worker(new URL(`./page-worker${SOURCE}`, import.meta.url), { workerData: { path } satisfies PageWorkerData });
    worker.unref();
    worker.on('message', (answer: PageAnswer) => {
      const p = this.pending.get(answer.id);
      if (!p) return;
      this.pending.delete(answer.id);
      if ('error' in answer) p.reject(new Error(`reading a page of numbers failed: ${answer.error}`));
      else p.resolve(this.observed(answer.page));
    });
    // A reader that fails (it could not open the file, or it ran out of memory) costs speed, not answers: the
    // server's own connection reads from then on, the pages asked for meanwhile too.
    worker.on('error', (err) => this.fallBack(`page reader stopped: ${err.message}`));
    worker.on('exit', (code) => this.fallBack(`page reader exited with code ${code}`));
    this.worker = worker;
  }

  /** The reader's thread; null when pages are read on the server's connection (:memory:, or after the thread failed). */
  get thread(): Worker | null {
    return this.worker;
  }

  /** A page of a campaign's numbers list, or of its number-details report (includeDeleted). */
  numbers(request: Omit<PageRequest, 'trace'>): Promise<NumbersPage> {
    const r: PageRequest = this.observer ? { ...request, trace: true } : request;
    if (!this.worker) return Promise.resolve(this.readHere(r));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { request: r, resolve, reject });
      this.worker!.postMessage({ id, request: r } satisfies PageQuestion);
    });
  }

  private readHere(request: PageRequest): NumbersPage {
    return this.observed(this.local.page(request));
  }

  private observed(page: NumbersPage): NumbersPage {
    this.observer?.(page);
    return page;
  }

  private fallBack(why: string): void {
    if (!this.worker) return;
    this.worker = null;
    if (!this.closing) process.emitWarning(`${why}; pages are read on the server's connection from now on`);
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      try {
        p.resolve(this.readHere(p.request));
      } catch (err) {
        p.reject(err as Error);
      }
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    const worker = this.worker;
    if (worker) await worker.terminate(); // exit → fallBack: pages asked for meanwhile are read here, before the database closes
  }
}
