// The server benchmark's HTTP client on a thread of its own: it requests list pages over keep-alive connections and
// checks each answer, so the server's event loop (on the main thread) does only the server's work.
import { parentPort, Worker } from 'node:worker_threads';
import { once } from 'node:events';

export interface PageRequest {
  url: string;
  offset: number;
  /** The X-Total-Count the page must carry. */
  total: number;
  size: number;
  sort: [field: 'number' | 'attempts', direction: 'ASC' | 'DESC'];
  /** Names the request in a failure. */
  label: string;
}

export interface PageRun {
  requests: PageRequest[];
  headers: Record<string, string>;
  /** Keep-alive connections working through the requests at once (1: one after another, in order). */
  concurrency: number;
  /** Stop starting requests after this long. */
  maxSeconds: number;
}

export interface PageRunResult {
  /** Latency of each request made, request start to parsed body, in the order the requests were given (concurrency 1). */
  ms: number[];
  seconds: number;
  failures: string[];
}

/** Runs one batch of page requests on a worker thread of its own and returns what it measured. */
export async function runPages(run: PageRun): Promise<PageRunResult> {
  const worker = new Worker(new URL(import.meta.url));
  try {
    worker.postMessage(run);
    const [result] = await Promise.race([
      once(worker, 'message') as Promise<[PageRunResult]>,
      once(worker, 'error').then(([err]) => { throw err as Error; }),
    ]);
    return result;
  } finally {
    await worker.terminate();
  }
}

async function work(run: PageRun): Promise<PageRunResult> {
  const ms: number[] = new Array(run.requests.length);
  const failures: string[] = [];
  const fail = (msg: string) => { if (failures.length < 50) failures.push(msg); };
  let next = 0;
  const started = performance.now();
  const one = async () => {
    while (next < run.requests.length && performance.now() - started < run.maxSeconds * 1000) {
      const i = next++;
      const r = run.requests[i]!;
      const t = performance.now();
      const res = await fetch(r.url, { headers: run.headers });
      const text = await res.text();
      ms[i] = performance.now() - t;
      check(r, res, text, fail);
    }
  };
  await Promise.all(Array.from({ length: run.concurrency }, one));
  return { ms: ms.slice(0, next).filter((x) => x !== undefined), seconds: (performance.now() - started) / 1000, failures };
}

function check(r: PageRequest, res: Response, text: string, fail: (msg: string) => void): void {
  const where = `${r.label} @${r.offset}`;
  if (res.status !== 200) return fail(`${where}: status ${res.status} ${text.slice(0, 200)}`);
  const header = res.headers.get('x-total-count');
  if (header === null || !/^\d+$/.test(header)) return fail(`${where}: X-Total-Count is ${JSON.stringify(header)}`);
  if (Number(header) !== r.total) fail(`${where}: X-Total-Count ${header}, expected ${r.total}`);
  const records = JSON.parse(text) as Record<string, string | number>[];
  const want = Math.max(0, Math.min(r.size, r.total - r.offset));
  if (records.length !== want) fail(`${where}: ${records.length} records, expected ${want}`);
  const [field, dir] = r.sort;
  const inOrder = records.every((x, i) => i === 0 || (dir === 'ASC' ? records[i - 1]![field]! <= x[field]! : records[i - 1]![field]! >= x[field]!));
  if (!inOrder) fail(`${where}: records out of order for sort ${JSON.stringify(r.sort)}`);
}

parentPort?.on('message', (run: PageRun) => {
  void work(run).then((result) => parentPort!.postMessage(result));
});
