// `./dev bench daemon [--contacts 100000 ...]`: the sync daemon end to end, as its own process, between the HubSpot
// stand-in and the reference server: import throughput against the binding rate-limit ceiling, webhook-to-dialable
// latency when idle, and the daemon's peak RSS.
//
// In this process: the reference server (SQLite in memory, its default rate limit of 10 requests/s with bursts of 50
// per API key) with an Active Dynamic campaign, and the HubSpot stand-in seeded with `--contacts` contacts (its
// default limits: 5 searches/s, pages of 200). The daemon runs as `node daemon/cli.ts start --config FILE` (a child
// process, so its memory is its own) on the real Redis at 127.0.0.1:6379 (REDIS_URL) under a fresh key prefix, with
// the dialer limits of a real key (10/s, 1000 numbers per request).
// 1. Throughput: from spawning the daemon until every contact's number is in the campaign (X-Total-Count polled
//    4 times a second), against min(CRM read ceiling = searches/s × page size, dialer write ceiling = requests/s ×
//    numbers per request).
// 2. Latency: `--webhooks` times, with the daemon idle: a contact is created in the stand-in, its signed
//    contact.creation webhook is sent to the daemon, and the numbers list, filtered by the number, is polled until
//    it lists it (every `--poll-ms` once the server has answered the daemon's add, seen by a hook in the server;
//    each poll scans the campaign and would otherwise slow the stand-in and server it shares this process with).
// 3. Memory: VmHWM of the daemon process (and of this process, which holds the stand-in and the server).
// The bench's own reads use keys other than the daemon's (each key has its own bucket), spread over a pool so the
// fast latency poll stays under 10 requests/s per key. Everything is stopped and the Redis prefix deleted at the end,
// also on Ctrl-C. Results go to bench/results/daemon-<timestamp>.json. `--cpu-prof` profiles the daemon process.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync, closeSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startHubSpotStandIn, type HubSpotStandIn, type HubSpotStandInStats } from '../crm-stand-ins/hubspot.ts';
import { VALID_PHONE_COUNT, validPhone } from '../crm-stand-ins/contacts.ts';
import { parseConfig } from '../daemon/config.ts';
import { readRun } from '../daemon/sync/run.ts';
import { SyncKeys, campaignKey, type RunRecord } from '../daemon/sync/state.ts';
import { DEFAULT_RATE_LIMIT } from '../server/rate-limit.ts';
import { Store } from '../server/store/store.ts';
import { REDIS_URL, testPrefix } from '../test/support/daemon.ts';
import {
  MB, describeMachine, loadAverage, machine, printFiguresHeading, readFlags, round, startServer, stats, writeResults,
  type BenchServer, type Machine, type Stats,
} from './support.ts';

// ---------------------------------------------------------------------------------------------- options

const FLAGS = {
  contacts: { def: 100_000, help: 'contacts seeded in the HubSpot stand-in and imported by the first (full) run' },
  webhooks: { def: 50, help: 'contacts created one at a time, each with its signed creation webhook (latency)' },
  'pause-ms': { def: 1_000, help: 'pause between two webhooks (the HubSpot search gate spaces searches by 210 ms)' },
  'poll-ms': { def: 5, help: 'pause between two polls of the latency phase, once the server has answered the add' },
  'slow-poll-ms': { def: 250, help: 'pause between two polls of the latency phase before that' },
  'import-seconds': { def: 900, help: 'give up waiting for the import after this many seconds' },
  'max-seconds': { def: 1_800, help: 'watchdog: abort (and clean up) after this many seconds' },
  'cpu-prof': { def: false, help: 'run the daemon with --cpu-prof; print its hottest functions (profile kept, path printed)' },
  'daemon-node-args': { def: '', help: 'more node options for the daemon process, space-separated (e.g. --max-old-space-size=128)' },
  'keep-logs': { def: false, help: 'keep the daemon\'s log and configuration (path printed)' },
} as const;

const opts = readFlags(FLAGS, { command: 'daemon', example: 'BENCH_CONTACTS=20000', width: 15 });
if (opts.contacts < 1 || opts.contacts + opts.webhooks > VALID_PHONE_COUNT) throw new Error(`--contacts + --webhooks must be 1..${VALID_PHONE_COUNT}`);
if (opts['poll-ms'] < 1) throw new Error('--poll-ms must be >= 1');

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SYNC_ID = 'hubspot-bench';
/** The dialer limits the daemon is given: the reference server's default per key, and its largest request. */
const DIALER = { perSecond: DEFAULT_RATE_LIMIT.rate, burst: DEFAULT_RATE_LIMIT.burst, maxNumbersPerRequest: 1000 };
/** The stand-in's defaults, which the daemon is told as they are. */
const HUBSPOT = { searchPerSecond: 5, pageSize: 200 };
/** Reads per second one poll key may make (the server's rate limit per key, less a margin). */
const POLL_KEY_RATE = 8;
const CLIENT_SECRET = 'hs-client-secret-bench';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

// ------------------------------------------------------------------------------------- the daemon process

/** VmRSS and VmHWM (peak) of a process, in MB, from /proc; null once it is gone. */
function procMemory(pid: number | 'self'): { rssMb: number; hwmMb: number } | null {
  let text: string;
  try { text = readFileSync(`/proc/${pid}/status`, 'utf8'); } catch { return null; }
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { rssMb: round(kb('VmRSS') / 1024), hwmMb: round(kb('VmHWM') / 1024) };
}

/** A free loopback port: the daemon's address must be known before it starts (HubSpot signs the URL it calls). */
async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** Last lines of the daemon's log, for a failure message. */
function logTail(path: string, lines = 15): string {
  try { return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n'); } catch { return '(no log)'; }
}

/** One value of a Prometheus text exposition (summed over series matching every given label). */
function metric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1)) || 0;
  }
  return sum;
}

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }

/** Self time of a V8 .cpuprofile: by function, and by where the code lives (a package, a file of ours, Node). */
function summarizeProfile(path: string): { totalMs: number; functions: { name: string; ms: number; pct: number }[]; places: { place: string; ms: number; pct: number }[] } {
  const p = JSON.parse(readFileSync(path, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const fns = new Map<string, number>();
  const places = new Map<string, number>();
  let total = 0;
  for (const [id, us] of self) {
    const f = byId.get(id)!.callFrame;
    total += us;
    const file = f.url.replace(/^file:\/\//, '').replace(ROOT, '');
    const name = `${f.functionName || '(anonymous)'} ${file ? `${file}:${f.lineNumber + 1}` : ''}`.trim();
    fns.set(name, (fns.get(name) ?? 0) + us);
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1];
    const place = pkg ? `npm:${pkg}` : file.startsWith('node:') ? 'node internals' : file ? file : f.functionName.startsWith('(') ? f.functionName : 'native/V8';
    places.set(place, (places.get(place) ?? 0) + us);
  }
  const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
  return {
    totalMs: round(total / 1000),
    functions: top(fns, 20).map(([name, us]) => ({ name, ms: round(us / 1000), pct: round((100 * us) / total) })),
    places: top(places, 15).map(([place, us]) => ({ place, ms: round(us / 1000), pct: round((100 * us) / total) })),
  };
}

// ------------------------------------------------------------------------------------- setup and teardown

const startedAt = now();
const loadAtStart = loadAverage();
const tempDir = mkdtempSync(join(tmpdir(), 'bench-daemon-'));
const logPath = join(tempDir, 'daemon.log');
const configPath = join(tempDir, 'daemon.yaml');
const profileDir = join(tempDir, 'cpu-profile');
const redisPrefix = testPrefix(REDIS_URL);

let server: BenchServer | null = null;
let store: Store | null = null;
let standIn: HubSpotStandIn | null = null;
let daemon: ChildProcess | null = null;
let daemonExit: Promise<number | null> | null = null;
let daemonStopping = false;
let redis: Redis | null = null;
let cleaning: Promise<void> | null = null;
/** Set by Ctrl-C: what fails after it (requests to servers being closed) is no news. */
let interrupted = false;

/** Stops the daemon (SIGTERM, SIGKILL after 30 s) and waits for its exit; returns its exit code. */
async function stopDaemon(): Promise<number | null> {
  if (!daemon || !daemonExit) return null;
  daemonStopping = true;
  if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill('SIGTERM');
  const killer = setTimeout(() => daemon?.kill('SIGKILL'), 30_000);
  const code = await daemonExit;
  clearTimeout(killer);
  return code;
}

/** Stops everything this command started and deletes its Redis keys and temp files; safe to call twice. */
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    const step = async (what: string, f: () => Promise<unknown> | unknown) => {
      try { await f(); } catch (err) { console.error(`bench: cleanup: ${what}: ${(err as Error).message}`); }
    };
    await step('daemon', stopDaemon);
    await step('stand-in', () => standIn?.close());
    await step('server', () => server?.app.close());
    await step('store', () => store?.close());
    await step('redis client', () => redis?.disconnect());
    await step('redis keys', () => redisPrefix.cleanup());
    if (opts['keep-logs'] || opts['cpu-prof']) console.log(`kept ${tempDir} (daemon.log, daemon.yaml${opts['cpu-prof'] ? ', cpu-profile/' : ''})`);
    else await step('temp dir', () => rmSync(tempDir, { recursive: true, force: true }));
  })();
  return cleaning;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (cleaning) { daemon?.kill('SIGKILL'); process.exit(130); }
    interrupted = true;
    console.error(`\nbench: ${signal}: stopping the daemon (it may take its shutdownTimeout) and cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}
const watchdog = setTimeout(() => {
  console.error(`bench: still running after ${opts['max-seconds']} s (--max-seconds); aborting`);
  void cleanup().finally(() => process.exit(1));
}, opts['max-seconds'] * 1000);

// ------------------------------------------------------------------------------------- the run

interface ImportResult {
  contacts: number; seconds: number; readySeconds: number; firstNumberSeconds: number; numbersPerSecond: number;
  steadyNumbersPerSecond: number; ceiling: { crmRead: number; dialerWrite: number; binding: number; bindingName: string; daemonPacing: number };
  percentOfCeiling: number; progress: { seconds: number; numbers: number }[];
  hubspot: HubSpotStandInStats; hubspotSearchesPerContact: number;
  dialer: { requests: number; numbersSent: number; rateLimited429: number; daemonRateLimitedDialer: number; daemonRateLimitedHubspot: number };
  run: RunRecord | null;
  /** Runs up to the end of the import (the full one and any other trigger's). */
  runs: number;
}

interface Heap { heapUsedMb: number; heapTotalMb: number; externalMb: number }
interface Memory {
  daemonPeakRssMb: number; daemonSampledPeakRssMb: number; daemonRssAfterStartMb: number; daemonRssAfterImportMb: number; daemonRssAtEndMb: number;
  benchPeakRssMb: number; daemonHeapAfterImport: Heap; daemonHeapAtEnd: Heap;
}

interface LatencyResult {
  webhooks: number; latencyMs: Stats; addAnsweredMs: Stats; webhookAckMs: Stats; pollMs: Stats; poll429: number;
  runsDuringPhase: number; timeouts: number;
  /** Where the time went, from the run records (ms): webhook sent → run started, the run, run end → add answered. */
  toRunStartMs: Stats; runMs: Stats; runEndToAddMs: Stats;
  /** Per webhook, in ms from its start: listed (polled), add answered, and its run's start and end. */
  samples: { listed: number | null; added: number | null; runStart: number | null; runEnd: number | null }[];
}

async function main(): Promise<void> {
  // The server, with its default rate limit, and the bench's own counts of what the daemon's key asked of it.
  store = new Store(':memory:');
  const daemonCalls = { requests: 0, numbersSent: 0, rateLimited: 0, adds: 0 };
  /** Numbers of the latency phase not yet added → when the server answered the POST that added them. */
  const awaited = new Map<string, number | null>();
  let daemonAuth = '';
  server = await startServer(store, { rateLimit: DEFAULT_RATE_LIMIT }, (app) => {
    app.addHook('onResponse', async (request, reply) => {
      if (request.headers.authorization !== daemonAuth) return;
      daemonCalls.requests++;
      if (reply.statusCode === 429) daemonCalls.rateLimited++;
      if (request.method === 'POST' && Array.isArray(request.body) && reply.statusCode < 300) {
        daemonCalls.adds++;
        daemonCalls.numbersSent += request.body.length;
        if (awaited.size) {
          for (const e of request.body as { number?: string }[]) if (e.number && awaited.get(e.number) === null) awaited.set(e.number, now());
        }
      }
    });
  });
  const srv = server;
  const account = await srv.consolePost<{ id: string }>('/accounts', { name: 'Bench daemon', timezone: 'America/New_York' });
  const campaign = await srv.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, { name: 'HubSpot leads', type: 'Dynamic', state: 'Active' });
  const key = (name: string, roles: string[]) => srv.consolePost<{ token: string }>(`/accounts/${account.id}/apiKeys`, { name, roles }).then((k) => k.token);
  const daemonToken = await key('daemon', ['CampaignNumberAdmin']);
  daemonAuth = `Bearer ${daemonToken}`;
  const pollKeys = await Promise.all(Array.from({ length: Math.max(2, Math.ceil(1000 / opts['poll-ms'] / POLL_KEY_RATE)) }, (_, i) => key(`poll ${i}`, ['CampaignReader'])));
  let nextKey = 0;
  let poll429 = 0;
  const campaignUrl = `${srv.base}/v1/accounts/${account.id}/campaigns/${campaign.id}`;
  /** X-Total-Count of a list of the campaign (optionally filtered), through the next poll key. */
  const count = async (list: 'numbers', filter?: Record<string, string>): Promise<number | null> => {
    const params = new URLSearchParams({ range: '[0,0]', ...(filter ? { filter: JSON.stringify(filter) } : {}) });
    const res = await fetch(`${campaignUrl}/${list}?${params}`, { headers: { authorization: `Bearer ${pollKeys[nextKey++ % pollKeys.length]}` } });
    await res.arrayBuffer();
    if (res.status === 429) { poll429++; return null; }
    if (res.status !== 200) throw new Error(`list numbers: ${res.status}`);
    return Number(res.headers.get('x-total-count'));
  };

  const tSeed = now();
  standIn = await startHubSpotStandIn({ contacts: opts.contacts, seed: 1, clientSecret: CLIENT_SECRET });
  const hs = standIn;
  console.log(`HubSpot stand-in: ${opts.contacts} contacts seeded in ${round((now() - tSeed) / 1000, 2)} s; reference server ${srv.base} (rate limit ${DIALER.perSecond}/s, burst ${DIALER.burst} per key)`);

  // The daemon's configuration, as an operator would write it (secrets from the environment).
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const raw = {
    redis: { url: REDIS_URL, prefix: redisPrefix.prefix },
    http: { host: '127.0.0.1', port, publicUrl },
    dialer: {
      baseUrl: srv.base, accountId: account.id, apiToken: '${BENCH_DIALER_TOKEN}',
      rateLimit: { perSecond: DIALER.perSecond, burst: DIALER.burst }, maxNumbersPerRequest: DIALER.maxNumbersPerRequest,
    },
    syncs: [{
      id: SYNC_ID,
      source: {
        type: 'hubspot', baseUrl: hs.url, accessToken: '${BENCH_HUBSPOT_TOKEN}', clientSecret: '${BENCH_HUBSPOT_CLIENT_SECRET}',
        searchPerSecond: HUBSPOT.searchPerSecond, pageSize: HUBSPOT.pageSize,
      },
      campaignId: campaign.id,
      mapping: { phone: 'phone', defaultCountry: 'US', variables: { firstName: 'firstname', company: 'company' } },
      // No scheduled run during the bench: the first run and webhooks are what is measured.
      schedule: { every: '24h' },
    }],
    log: { level: 'info' },
  };
  const env = { ...process.env, BENCH_DIALER_TOKEN: daemonToken, BENCH_HUBSPOT_TOKEN: hs.token, BENCH_HUBSPOT_CLIENT_SECRET: CLIENT_SECRET };
  parseConfig(raw, configPath, env); // a mistake here is ours: fail before starting anything
  writeFileSync(configPath, JSON.stringify(raw, null, 2));
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const keys = new SyncKeys(redisPrefix.prefix, SYNC_ID, campaignKey(srv.base, account.id, campaign.id));
  const latestRun = async (): Promise<RunRecord | null> => {
    const [id] = await redis!.lrange(keys.runs, 0, 0);
    return id ? readRun(redis!, keys.run(id)) : null;
  };
  const daemonMetrics = async () => (await fetch(`${publicUrl}/metrics`)).text();

  // 1. Throughput ----------------------------------------------------------------------------------------------
  const logFd = openSync(logPath, 'a');
  const t0 = now();
  const nodeArgs = [...opts['daemon-node-args'].split(/\s+/).filter(Boolean), ...(opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])];
  const child = spawn(process.execPath, [...nodeArgs, 'daemon/cli.ts', 'start', '--config', configPath],
    { cwd: ROOT, env, stdio: ['ignore', logFd, logFd] });
  daemon = child;
  closeSync(logFd);
  daemonExit = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : null))));
  void daemonExit.then((code) => {
    if (!daemonStopping) {
      console.error(`bench: the daemon exited unexpectedly (code ${code}); its log ends with:\n${logTail(logPath)}`);
      void cleanup().finally(() => process.exit(1));
    }
  });
  const pid = child.pid!;
  let daemonPeakRss = 0;
  const rssSampler = setInterval(() => { const m = procMemory(pid); if (m && m.rssMb > daemonPeakRss) daemonPeakRss = m.rssMb; }, 200);

  let readySeconds = 0;
  for (;;) {
    try { if ((await fetch(`${publicUrl}/metrics`)).ok) break; } catch { /* not listening yet */ }
    if (now() - t0 > 60_000) throw new Error(`the daemon did not listen within 60 s; its log ends with:\n${logTail(logPath)}`);
    await sleep(50);
  }
  readySeconds = round((now() - t0) / 1000, 2);
  const daemonIdleRss = procMemory(pid)?.rssMb ?? 0;
  console.log(`daemon pid ${pid} listening on ${publicUrl} after ${readySeconds} s (RSS ${daemonIdleRss} MB); importing ${opts.contacts} contacts`);

  const expected = opts.contacts;
  const progress: { seconds: number; numbers: number }[] = [];
  let firstNumberSeconds = 0;
  let firstNumberCount = 0;
  let lastPrint = now();
  let numbers = 0;
  for (;;) {
    const n = await count('numbers');
    const t = (now() - t0) / 1000;
    if (n !== null) {
      numbers = n;
      if (n > 0 && !firstNumberSeconds) { firstNumberSeconds = round(t, 2); firstNumberCount = n; }
      if (now() - lastPrint >= 10_000 || n >= expected) {
        lastPrint = now();
        progress.push({ seconds: round(t, 1), numbers: n });
        console.log(`  ${round(t, 1).toFixed(1).padStart(6)} s: ${String(n).padStart(7)} numbers (${Math.round(n / t)}/s overall)`);
      }
      if (n >= expected) break;
    }
    if (t > opts['import-seconds']) {
      const run = await latestRun();
      throw new Error(`import not done after ${opts['import-seconds']} s: ${numbers} of ${expected} numbers; run ${JSON.stringify(run)}; log:\n${logTail(logPath)}`);
    }
    await sleep(250);
  }
  const importSeconds = (now() - t0) / 1000;
  // Idle: the run is over and no batch is open (its numbers are all recorded).
  for (;;) {
    const run = await latestRun();
    if (run && run.status !== 'running' && (await redis.hlen(keys.batches)) === 0) break;
    if ((now() - t0) / 1000 > opts['import-seconds'] + 60) throw new Error('the first run did not finish after its numbers were in the campaign');
    await sleep(100);
  }
  // The full run (a second trigger at start may queue an empty incremental run right after it).
  let importRun: RunRecord | null = null;
  for (const id of await redis.lrange(keys.runs, 0, -1)) {
    const run = await readRun(redis, keys.run(id));
    if (run?.mode === 'full') { importRun = run; break; }
  }
  const importRuns = await redis.llen(keys.runs);
  const importMetrics = await daemonMetrics();
  const crmRead = HUBSPOT.searchPerSecond * HUBSPOT.pageSize;
  const dialerWrite = DIALER.perSecond * DIALER.maxNumbersPerRequest;
  const binding = Math.min(crmRead, dialerWrite);
  // The daemon paces searches 5% under the stated limit (daemon/sources/crm-http.ts spacing()).
  const daemonPacing = round((1000 / Math.ceil((1000 / HUBSPOT.searchPerSecond) * 1.05)) * HUBSPOT.pageSize, 0);
  const numbersPerSecond = expected / importSeconds;
  const imp: ImportResult = {
    contacts: expected, seconds: round(importSeconds, 2), readySeconds, firstNumberSeconds,
    numbersPerSecond: round(numbersPerSecond, 0),
    steadyNumbersPerSecond: round((expected - firstNumberCount) / Math.max(0.001, importSeconds - firstNumberSeconds), 0),
    ceiling: { crmRead, dialerWrite, binding, bindingName: crmRead <= dialerWrite ? 'CRM read' : 'dialer write', daemonPacing },
    percentOfCeiling: round((100 * numbersPerSecond) / binding, 1),
    progress,
    hubspot: { ...hs.stats }, hubspotSearchesPerContact: round(hs.stats.searches / expected, 4),
    dialer: {
      requests: daemonCalls.requests, numbersSent: daemonCalls.numbersSent, rateLimited429: daemonCalls.rateLimited,
      daemonRateLimitedDialer: metric(importMetrics, 'cds_rate_limited_total', { service: 'dialer' }),
      daemonRateLimitedHubspot: metric(importMetrics, 'cds_rate_limited_total', { service: 'hubspot' }),
    },
    run: importRun, runs: importRuns,
  };
  const daemonAfterImport = procMemory(pid);
  /** The daemon's V8 heap and off-heap memory (prom-client's default metrics), in MB. */
  const heapOf = (text: string): Heap => ({
    heapUsedMb: round(metric(text, 'cds_nodejs_heap_size_used_bytes') / MB), heapTotalMb: round(metric(text, 'cds_nodejs_heap_size_total_bytes') / MB),
    externalMb: round(metric(text, 'cds_nodejs_external_memory_bytes') / MB),
  });
  const heapAfterImport = heapOf(importMetrics);
  console.log(`import: ${expected} numbers in ${imp.seconds} s = ${imp.numbersPerSecond}/s, ${imp.percentOfCeiling}% of the ${binding}/s ceiling`);

  // 2. Latency -------------------------------------------------------------------------------------------------
  const runsBefore = await redis.llen(keys.runs);
  /** Date.now() at each webhook's start: run records carry wall-clock times. */
  const wallStarts: number[] = [];
  const samples: LatencyResult['samples'] = [];
  const latency: number[] = [];
  const addAnswered: number[] = [];
  const ack: number[] = [];
  const pollCost: number[] = [];
  let timeouts = 0;
  const webhookUrl = `${publicUrl}/webhooks/${SYNC_ID}`;
  for (let i = 0; i < opts.webhooks; i++) {
    await sleep(opts['pause-ms']);
    const e164 = validPhone(opts.contacts + i);
    awaited.set(e164, null);
    const tStart = now();
    wallStarts.push(Date.now());
    const contact = hs.createContact({ firstname: 'Webhook', lastname: `Bench ${i}`, email: `webhook.${i}@example.com`, phone: e164, company: 'Hooli' });
    const res = await hs.sendWebhook([{
      eventId: 9_000_000 + i, subscriptionId: 4001, portalId: 62515, appId: 1160452, occurredAt: Date.now(),
      subscriptionType: 'contact.creation', attemptNumber: 0, objectId: Number(contact.id), changeSource: 'CRM_UI',
    }], { url: webhookUrl });
    ack.push(now() - tStart);
    if (res.status !== 200) throw new Error(`webhook ${i}: ${res.status} ${res.body}`);
    // The filter is a substring match: SQLite scans the campaign (~30 ms at 100,000 numbers) on the event loop that
    // also runs the stand-in and the server, so a poll in flight delays the daemon's search and add. The number
    // cannot be listed before the server has answered the add that carries it (seen by the hook above): polling
    // starts fast then; before it, once every --slow-poll-ms, in case the number arrives some other way.
    let listedAt: number | null = null;
    for (let lastPoll = now(); ;) {
      const fast = awaited.get(e164) !== null;
      if (fast || now() - lastPoll >= opts['slow-poll-ms']) {
        lastPoll = now();
        const n = await count('numbers', { number: e164.slice(1) });
        pollCost.push(now() - lastPoll);
        if (n) { listedAt = now() - tStart; latency.push(listedAt); break; }
      }
      if (now() - tStart > 30_000) { timeouts++; console.error(`webhook ${i}: number not listed after 30 s`); break; }
      await sleep(fast ? opts['poll-ms'] : 1);
    }
    const added = awaited.get(e164);
    if (added) addAnswered.push(added - tStart);
    samples.push({ listed: listedAt === null ? null : round(listedAt, 2), added: added ? round(added - tStart, 2) : null, runStart: null, runEnd: null });
    awaited.delete(e164);
  }
  // Each webhook's run: the first one started after it (runs are listed newest first).
  const phaseRuns: RunRecord[] = [];
  for (const id of (await redis.lrange(keys.runs, 0, -1)).slice(0, (await redis.llen(keys.runs)) - runsBefore).reverse()) {
    const run = await readRun(redis, keys.run(id));
    if (run) phaseRuns.push(run);
  }
  const toRunStart: number[] = [], runMs: number[] = [], runEndToAdd: number[] = [];
  samples.forEach((sample, k) => {
    const run = phaseRuns.find((r) => Date.parse(r.startedAt) >= wallStarts[k]! && (k + 1 >= wallStarts.length || Date.parse(r.startedAt) < wallStarts[k + 1]!));
    if (!run || run.durationMs === undefined) return;
    sample.runStart = Date.parse(run.startedAt) - wallStarts[k]!;
    sample.runEnd = sample.runStart + run.durationMs;
    toRunStart.push(sample.runStart); runMs.push(run.durationMs);
    if (sample.added !== null) runEndToAdd.push(sample.added - sample.runEnd);
  });
  const lat: LatencyResult = {
    webhooks: opts.webhooks, latencyMs: stats(latency), addAnsweredMs: stats(addAnswered), webhookAckMs: stats(ack), pollMs: stats(pollCost),
    poll429, runsDuringPhase: phaseRuns.length, timeouts,
    toRunStartMs: stats(toRunStart), runMs: stats(runMs), runEndToAddMs: stats(runEndToAdd), samples,
  };
  const latencyMetrics = await daemonMetrics();
  const latencyDialer429 = metric(latencyMetrics, 'cds_rate_limited_total', { service: 'dialer' }) - imp.dialer.daemonRateLimitedDialer;
  console.log(`latency: ${latency.length} webhooks: p50 ${lat.latencyMs.p50} ms, p99 ${lat.latencyMs.p99} ms, max ${lat.latencyMs.max} ms`);

  // 3. Memory, then stop ---------------------------------------------------------------------------------------
  const daemonEnd = procMemory(pid);
  clearInterval(rssSampler);
  const exitCode = await stopDaemon();
  const self = procMemory('self');
  let profile: ReturnType<typeof summarizeProfile> | null = null;
  if (opts['cpu-prof']) {
    const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
    profile = file ? summarizeProfile(join(profileDir, file)) : null;
  }
  const memory: Memory = {
    daemonPeakRssMb: daemonEnd?.hwmMb ?? daemonPeakRss, daemonSampledPeakRssMb: daemonPeakRss, daemonRssAfterStartMb: daemonIdleRss,
    daemonRssAfterImportMb: daemonAfterImport?.rssMb ?? 0, daemonRssAtEndMb: daemonEnd?.rssMb ?? 0,
    benchPeakRssMb: self?.hwmMb ?? 0,
    daemonHeapAfterImport: heapAfterImport, daemonHeapAtEnd: heapOf(latencyMetrics),
  };
  const report = {
    date: new Date().toISOString(), node: process.version, options: opts, seconds: round((now() - startedAt) / 1000, 1),
    machine: machine(loadAtStart),
    import: imp,
    latency: { ...lat, dialer429: latencyDialer429 },
    memory,
    daemonExitCode: exitCode,
    cpuProfile: profile,
  };
  printReport(report);
  writeResults(`daemon-${report.date.replace(/[:.]/g, '-')}`, report);
}

function printReport(r: {
  seconds: number; machine: Machine; import: ImportResult; latency: LatencyResult & { dialer429: number };
  memory: Memory; daemonExitCode: number | null; cpuProfile: ReturnType<typeof summarizeProfile> | null;
}): void {
  const mark = (ok: boolean) => (ok ? 'ok' : 'MISS');
  const i = r.import;
  const line = printFiguresHeading(118, [`total run ${r.seconds} s`, describeMachine(r.machine)]);
  console.log(`import            ${i.contacts} contacts → ${i.contacts} numbers in ${i.seconds} s from spawning the daemon: ${i.numbersPerSecond} numbers/s ` +
    `= ${i.percentOfCeiling}% of the ceiling [target >= 90%: ${mark(i.percentOfCeiling >= 90)}]`);
  console.log(`  ceiling         min(CRM read ${HUBSPOT.searchPerSecond} searches/s × ${HUBSPOT.pageSize} = ${i.ceiling.crmRead}/s, ` +
    `dialer write ${DIALER.perSecond} requests/s × ${DIALER.maxNumbersPerRequest} = ${i.ceiling.dialerWrite}/s) = ${i.ceiling.binding}/s (${i.ceiling.bindingName}); ` +
    `the daemon paces searches 5% under the limit: at most ${i.ceiling.daemonPacing}/s`);
  console.log(`  timeline        listening after ${i.readySeconds} s, first number at ${i.firstNumberSeconds} s, ` +
    `${i.steadyNumbersPerSecond} numbers/s from the first number to the last`);
  console.log(`  HubSpot         ${i.hubspot.searches} searches (${round(i.hubspotSearchesPerContact * 1000, 2)} per 1000 contacts), ${i.hubspot.requests} requests, ` +
    `${i.hubspot.rateLimited} answered 429, at most ${i.hubspot.maxSearchesInAnySecond} searches in any second; daemon counted ${i.dialer.daemonRateLimitedHubspot} HubSpot 429s`);
  console.log(`  dialer          ${i.dialer.requests} requests by the daemon's key (${i.dialer.numbersSent} numbers sent), ` +
    `${i.dialer.rateLimited429} answered 429 (daemon counted ${i.dialer.daemonRateLimitedDialer})`);
  if (i.run) {
    console.log(`  run             ${i.run.mode} ${i.run.status} in ${i.run.durationMs} ms: seen ${i.run.seen}, changed ${i.run.changed}, invalid ${i.run.invalid}, ` +
      `planned ${i.run.planned}, pushed ${i.run.pushed}, rejected ${i.run.rejected} (${i.runs} runs in all by then)`);
  }
  console.log(line);
  const l = r.latency;
  console.log(`webhook latency   ${l.latencyMs.n} contacts created + signed creation webhook → number listed in the campaign (idle daemon, ${opts['pause-ms']} ms apart):`);
  console.log(`                  p50 ${l.latencyMs.p50} ms, p90 ${l.latencyMs.p90} ms, p99 ${l.latencyMs.p99} ms, max ${l.latencyMs.max} ms ` +
    `[target p99 < 500 ms: ${mark(l.latencyMs.n > 0 && l.latencyMs.p99 < 500 && l.timeouts === 0)}]${l.timeouts ? `; ${l.timeouts} NOT LISTED within 30 s` : ''}`);
  console.log(`  parts           webhook answered p50 ${l.webhookAckMs.p50} ms (max ${l.webhookAckMs.max}); daemon's add answered by the server p50 ${l.addAnsweredMs.p50} ms, ` +
    `p99 ${l.addAnsweredMs.p99} ms; one poll (a scan of the campaign) p50 ${l.pollMs.p50} ms, ` +
    `every ${opts['poll-ms']} ms after the add's answer (every ${opts['slow-poll-ms']} ms before)`);
  console.log(`  in the daemon   webhook sent → its run started p50 ${l.toRunStartMs.p50} ms (p99 ${l.toRunStartMs.p99}); the run p50 ${l.runMs.p50} ms ` +
    `(p99 ${l.runMs.p99}); run done → add answered p50 ${l.runEndToAddMs.p50} ms (p99 ${l.runEndToAddMs.p99}, ms clocks, can be < 0)`);
  console.log(`  daemon          ${l.runsDuringPhase} runs for ${l.webhooks} webhooks; dialer 429s ${l.dialer429}; poll 429s ${l.poll429}`);
  console.log(line);
  const m = r.memory;
  console.log(`memory            daemon process peak RSS (VmHWM) ${m.daemonPeakRssMb} MB (after start ${m.daemonRssAfterStartMb} MB, after the import ` +
    `${m.daemonRssAfterImportMb} MB, at the end ${m.daemonRssAtEndMb} MB); this process (stand-in + server + polls) ${m.benchPeakRssMb} MB`);
  const h = (x: Heap) => `V8 heap ${x.heapUsedMb} MB used of ${x.heapTotalMb} MB, external ${x.externalMb} MB`;
  console.log(`  daemon heap     after the import: ${h(m.daemonHeapAfterImport)}; at the end: ${h(m.daemonHeapAtEnd)}`);
  console.log(`daemon exit       SIGTERM → exit code ${r.daemonExitCode}`);
  if (r.cpuProfile) {
    console.log(`${line}\ndaemon CPU profile: ${r.cpuProfile.totalMs} ms sampled (self time; includes idle)`);
    for (const p of r.cpuProfile.places) console.log(`  ${String(p.pct).padStart(5)}%  ${String(p.ms).padStart(9)} ms  ${p.place}`);
    console.log('  hottest functions:');
    for (const f of r.cpuProfile.functions) console.log(`  ${String(f.pct).padStart(5)}%  ${String(f.ms).padStart(9)} ms  ${f.name}`);
  }
}

try {
  await main();
} catch (err) {
  if (!interrupted) console.error(`bench: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  clearTimeout(watchdog);
  await cleanup();
}
