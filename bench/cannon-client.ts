// The server benchmark's second client: autocannon (a well-kept load generator), on a thread of its own, so a figure
// does not depend on the project's own client alone (that client reads and checks every answer in full, which costs
// time a load generator does not spend). Each connection cycles through the given paths.
import autocannon from 'autocannon';
import { onThread, serveOnThread } from './client-thread.ts';

export interface CannonRun {
  /** http://host:port */
  base: string;
  /** Paths with query strings; each connection goes through them in order, and round again. */
  paths: string[];
  headers: Record<string, string>;
  connections: number;
  seconds: number;
}

export interface CannonResult {
  connections: number;
  requests: number;
  seconds: number;
  requestsPerSecond: number;
  /** Request written to answer read, ms (autocannon's own timing, kept at full resolution here). */
  latencyMs: { p50: number; p99: number; max: number };
  /** Answers other than 200, connection errors and timeouts: a figure with any of these is not a page rate. */
  not200: number;
  errors: number;
  bytesPerAnswer: number;
  /** CPU time of autocannon's thread a request (user + system, µs): what the load itself cost the machine. */
  clientCpuMicros: number;
}

/** Runs autocannon on a worker thread of its own and returns what it measured. */
export function runCannon(run: CannonRun): Promise<CannonResult> {
  return onThread(new URL(import.meta.url), run);
}

async function work(run: CannonRun): Promise<CannonResult> {
  const times: number[] = [];
  const cpu = process.threadCpuUsage();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({
      url: run.base, connections: run.connections, duration: run.seconds, headers: run.headers,
      requests: run.paths.map((path) => ({ method: 'GET' as const, path })),
    }, (err: unknown, res: autocannon.Result) => (err ? reject(err as Error) : resolve(res)));
    // autocannon's histogram keeps whole milliseconds; the answers' own times are kept here for sub-ms percentiles.
    instance.on('response', (_client, _status, _bytes, ms) => { times.push(ms); });
  });
  const used = process.threadCpuUsage(cpu);
  times.sort((a, b) => a - b);
  const at = (q: number) => round(times[Math.min(times.length - 1, Math.max(0, Math.ceil(q * times.length) - 1))] ?? 0);
  const ok = result.statusCodeStats?.['200']?.count ?? 0;
  return {
    connections: run.connections, requests: times.length, seconds: result.duration,
    requestsPerSecond: Math.round(times.length / result.duration),
    latencyMs: { p50: at(0.5), p99: at(0.99), max: round(times[times.length - 1] ?? 0) },
    not200: times.length - Number(ok), errors: result.errors + result.timeouts,
    bytesPerAnswer: times.length ? Math.round(result.throughput.total / times.length) : 0,
    clientCpuMicros: times.length ? Math.round((used.user + used.system) / times.length) : 0,
  };
}

const round = (x: number) => Math.round(x * 100) / 100;

serveOnThread(work);
