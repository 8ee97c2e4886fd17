// `./dev bench server [--numbers 1000000 ...]`: benchmarks the reference server over loopback HTTP.
//
// Starts the server in this process (buildServer, rate limit off, SQLite file in a temp directory), then
// measures CSV upload and JSON add throughput, the latency of filtered+sorted list pages on a campaign of
// `--numbers` numbers with a realistic status mix, requests/s at a given concurrency, and peak RSS.
// Prints a figures table and writes it as JSON to bench/results/server.json. Every size is a flag
// (or BENCH_<FLAG> in the environment, e.g. BENCH_NUMBERS=200000); `--help` lists them.
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { mulberry32 } from '../crm-stand-ins/contacts.ts';
import type { SqlCapture } from '../server/store/number-pages.ts';
import { Store } from '../server/store/store.ts';
import { runAdds } from './add-client.ts';
import { startBarePageServer } from './bare-page-server.ts';
import { runCannon, type CannonResult } from './cannon-client.ts';
import { runPages, type PageRequest } from './page-client.ts';
import { runUpload } from './upload-client.ts';
import {
  CITIES, MB, NAMES, NUMBER_SPACE, describeMachine, loadAverage, machine, openAccount, phone, printFiguresHeading, readFlags, round, sqliteFilesMb,
  startServer, stats, tableRow, writeResults, type Machine, type Stats,
} from './support.ts';

// ---------------------------------------------------------------------------------------------- options

const FLAGS = {
  numbers: { def: 1_000_000, help: 'rows in the uploaded CSV (the big campaign)' },
  'json-numbers': { def: 100_000, help: 'numbers added through POST .../numbers (second campaign)' },
  'json-batch': { def: 1_000, help: 'numbers per POST .../numbers request' },
  'json-concurrency': { def: 1, help: 'JSON add requests under way at once (1: one after another)' },
  'page-size': { def: 100, help: 'records per list page' },
  'first-pages': { def: 1_000, help: 'random first pages per query kind (offsets 0..--first-max-offset)' },
  'first-max-offset': { def: 5_000, help: 'largest offset of a "first page"' },
  'seq-pages': { def: 100, help: 'consecutive pages read per query kind, from offset 0' },
  'deep-pages': { def: 5, help: 'deep pages per query kind' },
  'deep-offset': { def: 500_000, help: 'offset of the deep pages (capped at the last page of the kind)' },
  warmup: { def: 10, help: 'unmeasured requests per query kind before measuring' },
  concurrency: { def: 4, help: 'keep-alive connections for the requests/s figure' },
  'throughput-requests': { def: 60_000, help: 'requests (mixed first pages) for the requests/s figure' },
  'phase-seconds': { def: 15, help: 'time cap of each first/sequential/deep loop of one query kind (fewer samples if slow)' },
  'throughput-seconds': { def: 20, help: 'time cap of the requests/s loop' },
  'cannon-connections': { def: '4,16', help: 'autocannon runs: keep-alive connections of each, comma-separated' },
  'cannon-seconds': { def: 8, help: 'length of each autocannon run (and of the project client\'s run against the bare server)' },
  'max-seconds': { def: 900, help: 'watchdog: abort (and clean up) after this many seconds' },
  'keep-db': { def: false, help: 'keep the SQLite file (its path is printed)' },
} as const;

function readOptions() {
  const { 'keep-db': keepDb, ...out } = readFlags(FLAGS, { command: 'server', example: 'BENCH_NUMBERS=200000', width: 20 });
  if (out['page-size'] < 1 || out['json-batch'] < 1 || out.concurrency < 1 || out['json-concurrency'] < 1) {
    throw new Error('--page-size, --json-batch, --concurrency and --json-concurrency must be >= 1');
  }
  if (out.numbers < 1) throw new Error('--numbers must be >= 1');
  const cannonConnections = out['cannon-connections'].split(',').map((x) => Number(x.trim()));
  if (!cannonConnections.length || cannonConnections.some((n) => !Number.isInteger(n) || n < 1)) {
    throw new Error(`--cannon-connections must be positive integers separated by commas; got ${JSON.stringify(out['cannon-connections'])}`);
  }
  if (out.numbers + out['json-numbers'] > NUMBER_SPACE) throw new Error(`--numbers + --json-numbers must be <= ${NUMBER_SPACE}`);
  return { ...out, keepDb, cannonConnections };
}

// ------------------------------------------------------------------------------------- test data



// ------------------------------------------------------------------------------------- measurements

/** Peak RSS overall and per phase (sampled every 50 ms), and the longest event-loop stall per phase. */
class Monitor {
  peakRss = 0;
  phasePeak = 0;
  readonly phases: Record<string, { peakRssMb: number; maxEventLoopBlockMs: number; seconds: number }> = {};
  private readonly loop = monitorEventLoopDelay({ resolution: 10 });
  private readonly timer: NodeJS.Timeout;
  private phaseName = '';
  private phaseStart = 0;

  constructor() {
    this.loop.enable();
    this.timer = setInterval(() => this.sample(), 50);
    this.timer.unref();
  }

  sample(): void {
    const rss = process.memoryUsage.rss();
    if (rss > this.peakRss) this.peakRss = rss;
    if (rss > this.phasePeak) this.phasePeak = rss;
  }

  phase(name: string): void {
    this.end();
    this.phaseName = name;
    this.phaseStart = performance.now();
    this.phasePeak = 0;
    this.loop.reset();
    this.sample();
  }

  end(): void {
    if (!this.phaseName) return;
    this.sample();
    this.phases[this.phaseName] = {
      peakRssMb: round(this.phasePeak / MB),
      maxEventLoopBlockMs: round(this.loop.max / 1e6),
      seconds: round((performance.now() - this.phaseStart) / 1000, 2),
    };
    this.phaseName = '';
  }

  stop(): void {
    this.end();
    clearInterval(this.timer);
    this.loop.disable();
  }
}

/**
 * Server-side time of each request (fastify's reply.elapsedTime) and the SQLite time of the list statements it ran
 * (as the page reader times them on the thread that runs them), one sample per response in the order answered; and
 * the last SQL of each kind.
 */
interface RequestSample { serverMs: number; pageMs: number; countMs: number }
class SqlProbe {
  countMs = 0;
  pageMs = 0;
  samples: RequestSample[] = [];
  lastCount: SqlCapture | null = null;
  lastPage: SqlCapture | null = null;

  private readonly store: Store;
  private on = false;

  constructor(store: Store) {
    this.store = store;
    this.resume();
  }

  /** Probing on: each page's statements timed and reported by the page reader, a sample per response. */
  resume(): void {
    this.on = true;
    // The store names its list statements in NUMBER_LIST_SQL and reports the ones it ran: the probe sees what it sends.
    this.store.pages.observer = ({ trace }) => {
      if (!trace) return;
      this.pageMs += trace.pageMs;
      this.lastPage = trace.page;
      if (trace.count) {
        this.countMs += trace.countMs;
        this.lastCount = trace.count;
      }
    };
  }

  /** Probing off (the requests/s loop uses none of it): no timing, no statements sent back, no samples kept. */
  pause(): void {
    this.on = false;
    this.store.pages.observer = null;
  }

  /** A sample per response, without touching the server's code: an onResponse hook. */
  attach(app: FastifyInstance): void {
    app.addHook('onResponse', (_request, reply, done) => {
      if (this.on) {
        this.samples.push({ serverMs: reply.elapsedTime, pageMs: this.pageMs, countMs: this.countMs });
        this.pageMs = 0;
        this.countMs = 0;
      }
      done();
    });
  }

  forgetStatements(): void {
    this.lastCount = null;
    this.lastPage = null;
  }

  /** The samples since the last call (one per request of a one-connection run, in order). */
  take(): RequestSample[] {
    const out = this.samples;
    this.samples = [];
    return out;
  }
}

// ------------------------------------------------------------------------------------------ the run

const started = performance.now();
const loadAtStart = loadAverage();
const opts = readOptions();
const dir = mkdtempSync(join(tmpdir(), 'cdk-bench-'));
const dbPath = join(dir, 'bench.db');
const csvPath = join(dir, 'numbers.csv');
const monitor = new Monitor();
const failures: string[] = [];
const fail = (msg: string) => { if (failures.length < 50) failures.push(msg); };

let cleanedUp = false;
function cleanup(): void {
  if (cleanedUp) return;
  cleanedUp = true;
  if (opts.keepDb) {
    rmSync(csvPath, { force: true });
    console.log(`database kept: ${dbPath}`);
  } else {
    rmSync(dir, { recursive: true, force: true });
  }
}
const watchdog = setTimeout(() => {
  console.error(`bench: still running after ${opts['max-seconds']} s (--max-seconds); aborting`);
  cleanup();
  process.exit(3);
}, opts['max-seconds'] * 1000);
watchdog.unref();

const store = new Store(dbPath);
const probe = new SqlProbe(store);
const server = await startServer(store, {}, (app) => probe.attach(app));
const { app, base } = server;
const startRss = process.memoryUsage.rss();

try {
  await run();
} finally {
  await app.close();
  await store.close();
  cleanup();
  clearTimeout(watchdog);
}

async function run(): Promise<void> {
  console.log(`bench server: ${base}, Node ${process.version}, SQLite file in ${dir}`);
  console.log(`options: ${JSON.stringify(opts)}`);

  // 1. account, key, campaigns ---------------------------------------------------------------------
  const account = await openAccount(server, 'Bench', 'America/New_York');
  const { token } = account;
  const big = await server.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, { name: 'Bench upload', type: 'Dynamic', state: 'Active' });
  const small = await server.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, { name: 'Bench JSON add', type: 'Dynamic', state: 'Active' });
  const auth = { authorization: `Bearer ${token}` };
  const campaignUrl = (id: string) => `${base}/v1/accounts/${account.id}/campaigns/${id}`;
  const bigPk = store.db.get<{ pk: number }>('SELECT pk FROM campaigns WHERE id = ?', big.id)!.pk;

  // 2. CSV upload ----------------------------------------------------------------------------------
  monitor.phase('csv-generate');
  const tGen = performance.now();
  await writeCsv(csvPath, opts.numbers);
  const csvBytes = statSync(csvPath).size;
  const genSeconds = (performance.now() - tGen) / 1000;
  console.log(`\ngenerated ${opts.numbers} CSV rows (${round(csvBytes / MB)} MB) in ${round(genSeconds, 2)} s`);

  monitor.phase('csv-upload');
  const sent = await runUpload({ url: `${campaignUrl(big.id)}/numbers/upload?firstRowIsHeader=false&varCount=2`, headers: auth, csvPath });
  const { text: upText, seconds: upSeconds } = sent;
  monitor.end();
  if (sent.status !== 201) throw new Error(`upload: ${sent.status} ${upText.slice(0, 2000)}`);
  const up = JSON.parse(upText) as { rows: number; createdCount: number; rejectedCount: number };
  if (up.rows !== opts.numbers || up.createdCount !== opts.numbers || up.rejectedCount !== 0) {
    fail(`upload: expected ${opts.numbers} rows all created; got rows=${up.rows} created=${up.createdCount} rejected=${up.rejectedCount}`);
  }
  const upload = {
    rows: up.rows, createdCount: up.createdCount, rejectedCount: up.rejectedCount, fileMb: round(csvBytes / MB),
    seconds: round(upSeconds, 2), rowsPerSecond: Math.round(up.rows / upSeconds), mbPerSecond: round(csvBytes / MB / upSeconds, 2),
    target: '>=150000 rows/s, event-loop block <50 ms', ok: up.rows / upSeconds >= 150_000,
    peakRssMb: monitor.phases['csv-upload']!.peakRssMb, maxEventLoopBlockMs: monitor.phases['csv-upload']!.maxEventLoopBlockMs,
  };
  console.log(`upload: ${upload.rows} rows in ${upload.seconds} s = ${upload.rowsPerSecond} rows/s (created ${upload.createdCount}, rejected ${upload.rejectedCount})`);
  rmSync(csvPath, { force: true });

  // 3. JSON add ------------------------------------------------------------------------------------
  monitor.phase('json-add');
  const varNames = encodeURIComponent(JSON.stringify(['name', 'city']));
  const adds = await runAdds({
    url: `${campaignUrl(small.id)}/numbers?varNames=${varNames}`, headers: auth, from: opts.numbers, numbers: opts['json-numbers'], batch: opts['json-batch'],
    concurrency: opts['json-concurrency'],
  });
  adds.failures.forEach(fail);
  const { batchMs, created } = adds;
  const jsonSeconds = adds.seconds;
  monitor.end();
  const jsonAdd = {
    numbers: opts['json-numbers'], created, batch: opts['json-batch'], concurrency: opts['json-concurrency'], requests: batchMs.length, seconds: round(jsonSeconds, 2),
    numbersPerSecond: Math.round(created / jsonSeconds), batchLatencyMs: stats(batchMs),
  };
  console.log(`json add: ${created} numbers in ${jsonAdd.seconds} s = ${jsonAdd.numbersPerSecond} numbers/s (batch p50 ${jsonAdd.batchLatencyMs.p50} ms)`);

  // 4. status mix ------------------------------------------------------------------------------------
  monitor.phase('status-mix');
  const tMix = performance.now();
  const statusMix = applyStatusMix(bigPk);
  const mixSeconds = (performance.now() - tMix) / 1000;
  monitor.end();
  console.log(`status mix in ${round(mixSeconds, 2)} s: ${JSON.stringify(statusMix.statuses)}; attempts ${JSON.stringify(statusMix.attempts)}`);

  // 5. pages -------------------------------------------------------------------------------------------
  const kinds: Kind[] = [
    { name: 'numbers: no filter, number ASC', path: 'numbers', sort: ['number', 'ASC'], where: 'deleted = 0' },
    { name: 'numbers: status NotContacted+RetryPending, number ASC', path: 'numbers',
      filter: { status: ['NotContacted', 'RetryPending'] }, sort: ['number', 'ASC'],
      where: `deleted = 0 AND status IN ('NotContacted','RetryPending')` },
    { name: 'numbers: status Failure, attempts DESC', path: 'numbers',
      filter: { status: ['Failure'] }, sort: ['attempts', 'DESC'], where: `deleted = 0 AND status = 'Failure'` },
    { name: 'numbers: attempts_gt 1, number DESC', path: 'numbers',
      filter: { attempts_gt: 1 }, sort: ['number', 'DESC'], where: 'deleted = 0 AND attempts > 1' },
    { name: 'numbers: number "555" (partial), number ASC', path: 'numbers',
      filter: { number: '555' }, sort: ['number', 'ASC'], where: `deleted = 0 AND number LIKE '%555%'`,
      scan: true },
    { name: 'numberDetails: status Success, number ASC', path: 'reports/numberDetails',
      filter: { status: 'Success' }, sort: ['number', 'ASC'], where: `status = 'Success'` },
    { name: 'numberDetails: status RetryPending, attempts DESC', path: 'reports/numberDetails',
      filter: { status: 'RetryPending' }, sort: ['attempts', 'DESC'], where: `status = 'RetryPending'` },
  ];
  // Seeded, so runs are comparable.
  const random = mulberry32(42);
  const size = opts['page-size'];
  const pageUrl = (kind: Kind, offset: number) => `${campaignUrl(big.id)}/${kind.path}?` + new URLSearchParams({
    range: JSON.stringify([offset, offset + size - 1]), sort: JSON.stringify(kind.sort),
    ...(kind.filter ? { filter: JSON.stringify(kind.filter) } : {}),
  }).toString();
  const lastPageOf = (total: number) => Math.max(0, Math.floor((total - 1) / size) * size);
  /** A "first page": a random page-aligned offset in 0..--first-max-offset (and within the result). */
  const firstOffset = (total: number) => Math.floor(random() * (Math.min(opts['first-max-offset'], lastPageOf(total)) / size + 1)) * size;
  const pageResults: PageResult[] = [];
  monitor.phase('pages');
  for (const kind of kinds) {
    // Straight from SQLite (not through the probe): the X-Total-Count every page must carry.
    const total = Number((store.db.sqlite.prepare(`SELECT count(*) AS n FROM numbers WHERE campaign_pk = ? AND ${kind.where}`)
      .get(bigPk) as { n: number }).n);
    const request = (offset: number): PageRequest => ({ url: pageUrl(kind, offset), offset, total, size, sort: kind.sort, label: kind.name });
    const pages = async (offsets: number[], maxSeconds: number) => {
      probe.take();
      const run = await runPages({ requests: offsets.map(request), headers: auth, concurrency: 1, maxSeconds });
      run.failures.forEach(fail);
      return { ...run, samples: probe.take() };
    };
    const lastPage = lastPageOf(total);

    await pages(Array.from({ length: opts.warmup }, () => firstOffset(total)), opts['phase-seconds']);
    probe.forgetStatements(); // the plans printed are of this kind's first pages
    const firstRun = await pages(Array.from({ length: opts['first-pages'] }, () => firstOffset(total)), opts['phase-seconds']);
    const first = firstRun.ms;
    const firstSeconds = firstRun.seconds;
    const captured = { count: probe.lastCount, page: probe.lastPage };
    const ran = opts.warmup + first.length > 0;

    const seqOffsets = Array.from({ length: Math.min(opts['seq-pages'], Math.ceil(Math.max(total, 1) / size)) }, (_, i) => i * size);
    const seq = (await pages(seqOffsets, opts['phase-seconds'])).ms;

    const deepOffsets = Array.from({ length: opts['deep-pages'] }, () => {
      const jitter = Math.round((random() - 0.5) * 0.02 * opts['deep-offset'] / size) * size; // within ±1%
      return Math.max(0, Math.min(lastPage, opts['deep-offset'] + jitter));
    });
    const deepRun = await pages(deepOffsets, opts['phase-seconds']);
    const deep = deepRun.ms;
    const deepAt = deepOffsets[Math.max(0, deep.length - 1)] ?? 0;
    const firstServer = firstRun.samples.map((x) => x.serverMs);
    const firstSql = firstRun.samples.map((x) => x.pageMs);
    const firstCountSql = firstRun.samples.map((x) => x.countMs);
    const deepServer = deepRun.samples.map((x) => x.serverMs);
    const deepSql = deepRun.samples.map((x) => x.pageMs + x.countMs);
    const result: PageResult = {
      kind: kind.name, request: { path: kind.path, filter: kind.filter ?? null, sort: kind.sort }, total,
      first: { ...stats(first), requestsPerSecond: first.length ? Math.round(first.length / firstSeconds) : 0 },
      firstServerMs: stats(firstServer), firstSqlMs: { page: stats(firstSql), count: stats(firstCountSql) },
      sequential: stats(seq), deep: { ...stats(deep), offset: deepAt }, deepServerMs: stats(deepServer), deepSqlMs: stats(deepSql),
      firstTargetOk: stats(first).p99 < 5,
      plan: {
        count: captured.count ? explain(captured.count) : [ran ? '(no count(*): answered from the number_counts counters)' : '(not run)'],
        page: captured.page ? explain(captured.page) : ['(not run)'],
      },
      sql: { count: captured.count?.sql ?? null, page: captured.page?.sql ?? '' },
    };
    pageResults.push(result);
    console.log(`pages: ${kind.name}: total ${total}, first p50 ${result.first.p50} ms p99 ${result.first.p99} ms, ` +
      `sequential p50 ${result.sequential.p50} ms, deep p50 ${result.deep.p50} ms`);
  }
  monitor.end();

  // Requests/s at a concurrency of N keep-alive connections: first pages of every indexed kind, round robin
  // (a substring lookup scans the campaign; its own rate is in the table above).
  monitor.phase('throughput');
  const mixKinds = kinds.filter((k) => !k.scan);
  const totals = mixKinds.map((k) => pageResults[kinds.indexOf(k)]!.total);
  const loadRequests = Array.from({ length: opts['throughput-requests'] }, (_, i) => {
    const kind = mixKinds[i % mixKinds.length]!;
    const total = totals[i % mixKinds.length]!;
    const offset = firstOffset(total);
    return { url: pageUrl(kind, offset), offset, total, size, sort: kind.sort, label: kind.name };
  });
  probe.pause();
  const load = await runPages({ requests: loadRequests, headers: auth, concurrency: opts.concurrency, maxSeconds: opts['throughput-seconds'] });
  probe.resume();
  load.failures.forEach(fail);
  const loadMs = load.ms;
  const loadSeconds = load.seconds;
  monitor.end();
  const throughput = {
    concurrency: opts.concurrency, requests: loadMs.length, seconds: round(loadSeconds, 2),
    requestsPerSecond: loadMs.length ? Math.round(loadMs.length / loadSeconds) : 0, latencyMs: stats(loadMs),
  };
  console.log(`throughput: ${throughput.requests} requests at concurrency ${throughput.concurrency}: ${throughput.requestsPerSecond} req/s`);

  // The same load from autocannon, and the ceiling both clients meet on this machine: a bare node:http server that
  // answers with the bytes of one filtered+sorted page and does nothing else. Under the project's client alone a
  // rate near that client's own ceiling would measure the client, not the server.
  monitor.phase('autocannon');
  const cannon = await compareClients(loadRequests, auth);
  monitor.end();

  // 6. report ------------------------------------------------------------------------------------------
  monitor.stop();
  const files = sqliteFilesMb(dbPath);
  const dbMb = files.db + files.wal + files.shm;
  const seconds = round((performance.now() - started) / 1000, 1);
  const report = {
    date: new Date().toISOString(), node: process.version, options: opts, seconds,
    machine: machine(loadAtStart),
    upload, jsonAdd, statusMix: { ...statusMix, seconds: round(mixSeconds, 2) },
    pages: pageResults,
    throughput, cannon,
    memory: { startRssMb: round(startRss / MB), peakRssMb: round(monitor.peakRss / MB), phases: monitor.phases, dbFileMb: round(dbMb) },
    checks: { failed: failures.length, failures },
  };
  printReport(report);
  writeResults('server', report);
  if (failures.length) process.exitCode = 1;
}

// ----------------------------------------------------------------------------------------- helpers

interface Kind {
  name: string;
  path: 'numbers' | 'reports/numberDetails';
  filter?: Record<string, unknown>;
  sort: ['number' | 'attempts', 'ASC' | 'DESC'];
  /** The same filter in SQL, for the expected X-Total-Count. */
  where: string;
  /** Answered by scanning the campaign (no index can serve it): kept out of the requests/s mix. */
  scan?: boolean;
}

interface PageResult {
  kind: string;
  request: { path: string; filter: Record<string, unknown> | null; sort: [string, string] };
  total: number;
  first: Stats & { requestsPerSecond: number };
  firstServerMs: Stats;
  firstSqlMs: { page: Stats; count: Stats };
  sequential: Stats;
  deep: Stats & { offset: number };
  deepServerMs: Stats;
  deepSqlMs: Stats;
  firstTargetOk: boolean;
  plan: { count: string[]; page: string[] };
  sql: { count: string | null; page: string };
}

/**
 * autocannon beside the project's client. First the ceiling of each: a bare node:http server answering every request
 * with the bytes of one filtered, sorted page of the server; then the server itself under autocannon, with the same
 * mix of first pages as the requests/s loop, at each of --cannon-connections.
 */
async function compareClients(requests: PageRequest[], headers: Record<string, string>) {
  const seconds = opts['cannon-seconds'];
  const pathOf = (url: string) => { const u = new URL(url); return u.pathname + u.search; };
  const sample = requests.find((r) => r.label.includes('NotContacted')) ?? requests[0]!;
  const res = await fetch(sample.url, { headers });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`the bare server's page: ${res.status} ${body.toString().slice(0, 500)}`);
  const copied = ['content-type', 'x-total-count', 'content-range', 'access-control-allow-origin', 'access-control-expose-headers'];
  const bare = await startBarePageServer(body, Object.fromEntries(copied.flatMap((h) => {
    const v = res.headers.get(h);
    return v === null ? [] : [[h, v]];
  })));
  let bareCannon: CannonResult & { serverCpuMicros: number };
  let bareClient: { requests: number; requestsPerSecond: number; latencyMs: Stats };
  try {
    const cpu = process.threadCpuUsage();
    const ran = await runCannon({ base: bare.base, paths: [pathOf(sample.url)], headers, connections: opts.concurrency, seconds });
    const used = process.threadCpuUsage(cpu);
    // The floor of the server thread's CPU a request: reading a request and writing these bytes, nothing else.
    bareCannon = { ...ran, serverCpuMicros: ran.requests ? Math.round((used.user + used.system) / ran.requests) : 0 };
    const run = await runPages({
      requests: [{ ...sample, url: bare.base + pathOf(sample.url) }], headers, concurrency: opts.concurrency, maxSeconds: seconds, cycle: true,
    });
    run.failures.forEach(fail);
    bareClient = { requests: run.ms.length, requestsPerSecond: Math.round(run.ms.length / run.seconds), latencyMs: stats(run.ms) };
  } finally {
    await bare.close();
  }
  const paths = requests.slice(0, 5_000).map((r) => pathOf(r.url));
  const server: (CannonResult & { window: number[]; cpuMicrosPerRequest: { server: number; reader: number | null; client: number } })[] = [];
  probe.pause();
  for (const connections of opts.cannonConnections) {
    const from = monotonicMicros();
    const cpu = await threadsCpu();
    const ran = await runCannon({ base, paths, headers, connections, seconds });
    const used = await threadsCpu(cpu);
    const perRequest = (us: number) => (ran.requests ? Math.round(us / ran.requests) : 0);
    const r = {
      ...ran, window: [from, monotonicMicros()],
      cpuMicrosPerRequest: { server: perRequest(used.server), reader: used.reader === null ? null : perRequest(used.reader), client: ran.clientCpuMicros },
    };
    if (r.not200 || r.errors) fail(`autocannon at ${connections} connections: ${r.not200} answers other than 200, ${r.errors} errors`);
    server.push(r);
    console.log(`autocannon: ${connections} connections: ${r.requestsPerSecond} req/s (p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms); ` +
      `CPU a request: server thread ${r.cpuMicrosPerRequest.server} µs, reader ${r.cpuMicrosPerRequest.reader ?? '-'} µs, autocannon ${r.cpuMicrosPerRequest.client} µs`);
  }
  probe.resume();
  if (bareCannon.not200 || bareCannon.errors) fail(`autocannon against the bare server: ${bareCannon.not200} answers other than 200, ${bareCannon.errors} errors`);
  return { pageBytes: body.length, bare: { cannon: bareCannon, client: bareClient }, server };
}

/**
 * CPU time (user + system, µs) of the server's thread and of its page reader's since `since` (from zero without):
 * a sampling profile on a busy machine also counts time a thread waited for a core, these do not.
 */
async function threadsCpu(since?: { server: number; reader: number | null }): Promise<{ server: number; reader: number | null }> {
  const main = process.threadCpuUsage();
  const thread = store.pages.thread;
  const reader = thread ? await thread.cpuUsage() : null;
  const server = main.user + main.system - (since?.server ?? 0);
  return { server, reader: reader === null ? null : reader.user + reader.system - (since?.reader ?? 0) };
}

/**
 * The clock of V8's CPU profiles (CLOCK_MONOTONIC, µs): the windows of the autocannon runs are written in it, so
 * bench/profile-summary.ts can take a `--cpu-prof` run's samples of one run alone.
 */
function monotonicMicros(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

async function writeCsv(path: string, rows: number): Promise<void> {
  const out = createWriteStream(path);
  const CHUNK = 10_000;
  for (let from = 0; from < rows; from += CHUNK) {
    let s = '';
    for (let i = from; i < Math.min(rows, from + CHUNK); i++) s += `${phone(i)},${NAMES[i % NAMES.length]} ${i % 997},${CITIES[i % CITIES.length]}\n`;
    if (!out.write(s)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/**
 * ~60% NotContacted, 20% Success, 10% Failure, 8% RetryPending, 2% Blacklisted, attempts 0–3, straight in
 * SQLite (a hash of the row id picks the status, so the mix is uncorrelated with the number order);
 * then number_counts and numbers_count are recomputed so X-Total-Count stays right.
 */
function applyStatusMix(campaignPk: number) {
  const h = '((id * 2654435761) % 1000)';
  const g = '(((id * 2654435761) / 1000) % 3)'; // higher digits of the same hash: independent of the status pick
  const db = store.db;
  db.transaction(() => {
    db.run(`UPDATE numbers SET
      status = CASE WHEN ${h} < 600 THEN 'NotContacted' WHEN ${h} < 800 THEN 'Success' WHEN ${h} < 900 THEN 'Failure'
                    WHEN ${h} < 980 THEN 'RetryPending' ELSE 'Blacklisted' END,
      attempts = CASE WHEN ${h} < 600 THEN 0 WHEN ${h} < 900 THEN 1 + ${g} WHEN ${h} < 980 THEN 1 + ${g} % 2 ELSE 0 END
      WHERE campaign_pk = ? AND deleted = 0`, campaignPk);
    db.run('DELETE FROM number_counts WHERE campaign_pk = ?', campaignPk);
    db.run(`INSERT INTO number_counts(campaign_pk, status, attempts, n)
      SELECT campaign_pk, status, attempts, count(*) FROM numbers WHERE campaign_pk = ? GROUP BY status, attempts`, campaignPk);
    db.run('UPDATE campaigns SET numbers_count = (SELECT count(*) FROM numbers WHERE campaign_pk = ? AND deleted = 0) WHERE pk = ?', campaignPk, campaignPk);
  });
  const statuses = Object.fromEntries(db.all<{ status: string; n: number }>(
    'SELECT status, sum(n) AS n FROM number_counts WHERE campaign_pk = ? GROUP BY status ORDER BY n DESC', campaignPk).map((r) => [r.status, r.n]));
  const attempts = Object.fromEntries(db.all<{ attempts: number; n: number }>(
    'SELECT attempts, count(*) AS n FROM numbers WHERE campaign_pk = ? GROUP BY attempts', campaignPk).map((r) => [r.attempts, r.n]));
  return { statuses, attempts };
}

/** EXPLAIN QUERY PLAN of a captured statement with its parameters, as indented lines. */
function explain(c: SqlCapture): string[] {
  const rows = store.db.sqlite.prepare(`EXPLAIN QUERY PLAN ${c.sql}`).all(...c.params) as { id: number; parent: number; detail: string }[];
  const depth = new Map<number, number>();
  return rows.map((r) => {
    const d = (depth.get(r.parent) ?? -1) + 1;
    depth.set(r.id, d);
    return `${'  '.repeat(d)}${r.detail}`;
  });
}

function printReport(r: {
  seconds: number; machine: Machine; upload: { rows: number; seconds: number; rowsPerSecond: number; mbPerSecond: number; createdCount: number; rejectedCount: number; ok: boolean; peakRssMb: number; maxEventLoopBlockMs: number };
  jsonAdd: { created: number; seconds: number; numbersPerSecond: number; batch: number; concurrency: number; batchLatencyMs: Stats };
  statusMix: { seconds: number };
  pages: PageResult[];
  throughput: { concurrency: number; requests: number; requestsPerSecond: number; latencyMs: Stats };
  cannon: Awaited<ReturnType<typeof compareClients>>;
  memory: { startRssMb: number; peakRssMb: number; phases: Monitor['phases']; dbFileMb: number };
  checks: { failed: number; failures: string[] };
}): void {
  const mark = (ok: boolean) => (ok ? 'ok  ' : 'MISS');
  const line = printFiguresHeading(118, [`total run ${r.seconds} s`, describeMachine(r.machine)]);
  console.log(`CSV upload        ${r.upload.rows} rows in ${r.upload.seconds} s: ${r.upload.rowsPerSecond} rows/s, ${r.upload.mbPerSecond} MB/s ` +
    `[target >=150000 rows/s: ${mark(r.upload.ok)}]  created ${r.upload.createdCount}, rejected ${r.upload.rejectedCount}; ` +
    `longest event-loop block ${r.upload.maxEventLoopBlockMs} ms [target <50 ms: ${mark(r.upload.maxEventLoopBlockMs < 50)}]`);
  console.log(`JSON add          ${r.jsonAdd.created} numbers in ${r.jsonAdd.seconds} s: ${r.jsonAdd.numbersPerSecond} numbers/s ` +
    `[target >=60000: ${mark(r.jsonAdd.numbersPerSecond >= 60_000)}] (batches of ${r.jsonAdd.batch}, ${r.jsonAdd.concurrency} at a time: p50 ${r.jsonAdd.batchLatencyMs.p50} ms, p99 ${r.jsonAdd.batchLatencyMs.p99} ms)`);
  console.log(`status mix        direct SQL update + counter recompute: ${r.statusMix.seconds} s`);
  console.log(line);
  const w = Math.max(...r.pages.map((p) => p.kind.length)) + 2;
  const cols = (a: string, ...rest: string[]) => tableRow(a, rest, w, 11);
  const f = (x: number) => x.toFixed(x >= 100 ? 0 : x >= 10 ? 1 : 2);
  console.log(`first pages: ms, pages of ${opts['page-size']} at random offsets 0..${opts['first-max-offset']}, one connection, up to ${opts['first-pages']} per query`);
  console.log(cols('query', 'total', 'n', 'p50', 'p99', 'server p50', 'rows SQL', 'count SQL', 'req/s', 'p99<5ms'));
  for (const p of r.pages) {
    console.log(cols(p.kind, String(p.total), String(p.first.n), f(p.first.p50), f(p.first.p99), f(p.firstServerMs.p50), f(p.firstSqlMs.page.p50),
      f(p.firstSqlMs.count.p50), String(p.first.requestsPerSecond), mark(p.firstTargetOk)));
  }
  console.log('(p50/p99: client-measured, request to parsed body; server: fastify reply.elapsedTime; rows/count SQL: SQLite time of the\n' +
    ' page SELECT and of the count(*) — 0 when X-Total-Count comes from the number_counts counters; all p50)');
  console.log(`\nsequential and deep pages: ms (sequential: up to ${opts['seq-pages']} consecutive pages from offset 0; deep: up to ${opts['deep-pages']} pages at offset ~${opts['deep-offset']}, capped at the last page; each loop also capped at ${opts['phase-seconds']} s)`);
  console.log(cols('query', 'seq n', 'seq p50', 'seq p99', 'seq max', 'deep at', 'deep n', 'deep p50', 'deep max', 'deep SQL'));
  for (const p of r.pages) {
    console.log(cols(p.kind, String(p.sequential.n), f(p.sequential.p50), f(p.sequential.p99), f(p.sequential.max), String(p.deep.offset),
      String(p.deep.n), f(p.deep.p50), f(p.deep.max), f(p.deepSqlMs.p50)));
  }
  console.log(line);
  console.log(`throughput        ${r.throughput.requests} mixed first-page requests (indexed kinds), ${r.throughput.concurrency} keep-alive connections: ` +
    `${r.throughput.requestsPerSecond} req/s [target >=3000: ${mark(r.throughput.requestsPerSecond >= 3_000)}] ` +
    `(p50 ${r.throughput.latencyMs.p50} ms, p99 ${r.throughput.latencyMs.p99} ms [target <10 ms: ${mark(r.throughput.latencyMs.p99 < 10)}]; the client runs on a thread of its own)`);
  const c = r.cannon;
  const share = (x: number, of: number) => (of ? ` = ${(x / of).toFixed(2)} of the bare server's` : '');
  console.log(`bare server       the same ${round(c.pageBytes / 1024)} KB page, nothing else, ${r.throughput.concurrency} connections: ` +
    `autocannon ${c.bare.cannon.requestsPerSecond} req/s (p99 ${c.bare.cannon.latencyMs.p99} ms; CPU a request: its thread ${c.bare.cannon.serverCpuMicros} µs, ` +
    `autocannon ${c.bare.cannon.clientCpuMicros} µs); ` +
    `the project's client ${c.bare.client.requestsPerSecond} req/s (p99 ${c.bare.client.latencyMs.p99} ms)`);
  console.log(`                  the server with the project's client above: ${r.throughput.requestsPerSecond} req/s` +
    `${share(r.throughput.requestsPerSecond, c.bare.client.requestsPerSecond)} with the same client`);
  for (const s of c.server) {
    console.log(`autocannon        the same mix, ${s.connections} connections: ${s.requestsPerSecond} req/s` +
      `${share(s.requestsPerSecond, c.bare.cannon.requestsPerSecond)} under autocannon ` +
      `(p50 ${s.latencyMs.p50} ms, p99 ${s.latencyMs.p99} ms, max ${s.latencyMs.max} ms; ${s.not200} not 200, ${s.errors} errors); ` +
      `CPU a request: server thread ${s.cpuMicrosPerRequest.server} µs, reader ${s.cpuMicrosPerRequest.reader ?? '-'} µs, autocannon ${s.cpuMicrosPerRequest.client} µs`);
  }
  console.log(`memory            peak RSS ${r.memory.peakRssMb} MB, ${r.memory.startRssMb} MB after start (server and its client thread in one process; ` +
    `includes SQLite's page cache, up to 256 MB); ` +
    `database file ${r.memory.dbFileMb} MB`);
  console.log(`                  per phase: ${Object.entries(r.memory.phases).map(([k, v]) => `${k} ${v.peakRssMb} MB`).join(', ')}`);
  console.log(`checks            ${r.checks.failed === 0 ? 'all responses 200 with the expected X-Total-Count, page length and order' : `${r.checks.failed} FAILED:\n  ${r.checks.failures.join('\n  ')}`}`);
  console.log(`${line}\nquery plans (EXPLAIN QUERY PLAN of the SQL the server ran for the first pages)`);
  for (const p of r.pages) {
    console.log(`\n${p.kind}\n  count: ${p.plan.count.join('\n         ')}\n  page:  ${p.plan.page.join('\n         ')}`);
  }
}
