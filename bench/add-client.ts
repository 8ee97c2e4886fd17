// The server benchmark's JSON-add client on a thread of its own: it posts numbers in batches, one request after
// another as a syncing client does (or a few at once), and checks each answer. Building the bodies and reading the answers (JSON of 1,000
// records each way) had run on the server's own event loop, where it was counted as the server's time.
import { onThread, serveOnThread } from './client-thread.ts';
import { CITIES, NAMES, phone } from './support.ts';

export interface AddRun {
  /** POST …/numbers?varNames=…, the variables being [name, city]. */
  url: string;
  headers: Record<string, string>;
  /** The numbers phone(from) … phone(from + numbers - 1), `batch` a request. */
  from: number;
  numbers: number;
  batch: number;
  /** Requests under way at once (1: one after another). */
  concurrency: number;
}

export interface AddRunResult {
  /** Latency of each request, request start to parsed answer. */
  batchMs: number[];
  created: number;
  seconds: number;
  failures: string[];
}

/** Runs the adds on a worker thread of its own and returns what it measured. */
export function runAdds(run: AddRun): Promise<AddRunResult> {
  return onThread(new URL(import.meta.url), run);
}

async function work(run: AddRun): Promise<AddRunResult> {
  const batchMs: number[] = [];
  const failures: string[] = [];
  const fail = (msg: string) => { if (failures.length < 50) failures.push(msg); };
  let created = 0;
  let next = 0;
  const started = performance.now();
  const one = async () => {
    while (next < run.numbers) {
      const at = next;
      const n = Math.min(run.batch, run.numbers - at);
      next += n;
      const body = Array.from({ length: n }, (_, j) => {
        const i = run.from + at + j;
        return { number: phone(i), varValues: [NAMES[i % NAMES.length]!, CITIES[i % CITIES.length]!] };
      });
      const t = performance.now();
      const res = await fetch(run.url, { method: 'POST', body: JSON.stringify(body), headers: { ...run.headers, 'content-type': 'application/json' } });
      const text = await res.text();
      batchMs.push(performance.now() - t);
      if (res.status !== 201) { fail(`json add at ${at}: ${res.status} ${text.slice(0, 300)}`); continue; }
      const r = JSON.parse(text) as { created: unknown[]; rejected: unknown[] };
      created += r.created.length;
      if (r.created.length !== n) fail(`json add at ${at}: ${r.created.length} of ${n} created, ${r.rejected.length} rejected`);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, run.concurrency) }, one));
  return { batchMs, created, seconds: (performance.now() - started) / 1000, failures };
}

serveOnThread(work);
