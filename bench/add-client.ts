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
  // Every body is written before the clock starts (~60 KB a batch, a few MB in all), as a load generator prepares
  // its requests: encoding them is the client's work, and one after another it would have added ~1 ms to each
  // batch's turn that the server spent idle.
  const bodies: { at: number; n: number; json: string }[] = [];
  for (let at = 0; at < run.numbers; at += run.batch) {
    const n = Math.min(run.batch, run.numbers - at);
    const body = Array.from({ length: n }, (_, j) => {
      const i = run.from + at + j;
      return { number: phone(i), varValues: [NAMES[i % NAMES.length]!, CITIES[i % CITIES.length]!] };
    });
    bodies.push({ at, n, json: JSON.stringify(body) });
  }
  const headers = { ...run.headers, 'content-type': 'application/json' };
  const send = async (body: (typeof bodies)[number]) => {
    const t = performance.now();
    const res = await fetch(run.url, { method: 'POST', body: body.json, headers });
    const text = await res.text();
    batchMs.push(performance.now() - t);
    return { ...body, status: res.status, text };
  };
  // An answer is read in full (and its records counted) while the next request is under way: still one request at
  // a time on each lane, but the client's JSON.parse of ~100 KB no longer sits between two of them.
  const check = (a: Awaited<ReturnType<typeof send>>) => {
    if (a.status !== 201) { fail(`json add at ${a.at}: ${a.status} ${a.text.slice(0, 300)}`); return; }
    const r = JSON.parse(a.text) as { created: unknown[]; rejected: unknown[] };
    created += r.created.length;
    if (r.created.length !== a.n) fail(`json add at ${a.at}: ${r.created.length} of ${a.n} created, ${r.rejected.length} rejected`);
  };
  let next = 0;
  const checks: Promise<void>[] = [];
  const started = performance.now();
  const lane = async () => {
    let inFlight = next < bodies.length ? send(bodies[next++]!) : null;
    while (inFlight) {
      const answer = await inFlight;
      inFlight = next < bodies.length ? send(bodies[next++]!) : null;
      checks.push(new Promise((resolve) => setImmediate(() => { check(answer); resolve(); })));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, run.concurrency) }, lane));
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(checks);
  return { batchMs, created, seconds, failures };
}

serveOnThread(work);
