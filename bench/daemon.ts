// `./dev bench daemon [--scenario hubspot|csv|mirror|list|salesforce|all|hubspot-fault|pipedrive|salesforce-fault|faults|compliance|burst] [--contacts 100000 | --rows 1000000 | --records 100000 ...]`: the sync daemon end to
// end, as its own process, against the reference server. `hubspot` (the default): import throughput from the HubSpot
// stand-in against the binding rate-limit ceiling, webhook-to-dialable latency when idle, and the daemon's peak RSS.
// `csv`: a generated CSV file streamed into the campaign, with the daemon's RSS over the run. `mirror`: call-detail
// records mirrored back into the HubSpot stand-in as calls (throughput, lag when idle, RSS). `all`: the three, one
// after the other.
//
// In this process: the reference server (SQLite in memory) with an Active Dynamic campaign. The daemon runs as
// `node daemon/cli.ts start --config FILE` (a child process, so its memory is its own) on the real Redis at
// 127.0.0.1:6379 (REDIS_URL) under a fresh key prefix per scenario.
//
// hubspot: the server has its default rate limit (10 requests/s, bursts of 50 per API key) and the HubSpot stand-in
// is seeded with `--contacts` contacts (its default limits: 5 searches/s, pages of 200); the daemon gets the dialer
// limits of a real key (10/s, 1000 numbers per request).
// 1. Throughput: from spawning the daemon until every contact's number is in the campaign (X-Total-Count polled
//    4 times a second), against min(CRM read ceiling = searches/s × page size, dialer write ceiling = requests/s ×
//    numbers per request).
// 2. Latency: `--webhooks` times, with the daemon idle: a contact is created in the stand-in, its signed
//    contact.creation webhook is sent to the daemon, and the numbers list, filtered by the number, is polled until
//    it lists it (every `--poll-ms` once the server has answered the daemon's add, seen by a hook in the server;
//    each poll scans the campaign and would otherwise slow the stand-in and server it shares this process with).
// 3. Memory: VmHWM of the daemon process (and of this process, which holds the stand-in and the server).
// The bench's own reads use keys other than the daemon's (each key has its own bucket), spread over a pool so the
// fast latency poll stays under 10 requests/s per key.
//
// csv: the issue's "CSV file: streamed (a 1,000,000-row file in flat memory)". A file of `--rows` rows (id, phone,
// firstName, company; phones as people type them, every 1000th row an invalid phone number) is written to a temp
// dir; a `csv` sync imports it. The server and the daemon both have `--csv-rate` requests/s (bursts as large) and
// the daemon `--csv-max-numbers` numbers per request, so the dialer binds as little as it can.
// Figures: rows/s from spawning the daemon until every valid number is in the campaign; the run record's invalid
// count against the invalid rows written; the daemon's VmHWM and its RSS sampled every second, against the rows its
// run has read (the run record's `seen`): min/max/last after the first 10% of the rows, and RSS at 10% against 100%
// (flat memory: no growth with the rows). Redis holds the sync state, which grows with the rows: its used_memory
// delta (INFO memory; other Redis clients count too) and MEMORY USAGE of the scenario's keys are printed beside.
//
// mirror: the issue's "100,000 call-detail records mirrored into the HubSpot stand-in, records/s against the
// ceiling of its configured rate limit × batch size, and call-end-to-activity lag p50/p99 when idle".
// 1. Throughput. The server (default rate limit) has a manual clock and an Active Dynamic campaign with `--agents`
//    agents, round-the-clock calling hours and one attempt per number; the stand-in holds `--records` contacts. A
//    first daemon process (no mirror) imports them into the campaign and is stopped; the clock is advanced until
//    every number has been called once (one call-detail record each). A second daemon process, the same sync with
//    `mirror: {sink: source, every: 1s}`, then mirrors them: records/s from the moment it listens (the records are
//    all there before it starts) until the stand-in holds one call per record (its counter polled 5 times a
//    second), against the ceiling requestsPer10Seconds / 10 × 100 (a batch create per request) with
//    `--hubspot-rate` on both sides; the stand-in's requests and 429s, the daemon's report reads, the gaps between
//    batches (from the calls' creation times), and one call per record (the key in each title against the records).
//    Its peak RSS is the mirror's: that process does nothing else.
// 2. Lag when idle. A second server on the real-time clock (speed 1; short rings, a 5 s talk, no wrap-up) with a
//    webhook endpoint at the daemon's /webhooks/<sync>/events, a campaign of `--lag-calls` numbers and 1 agent (one
//    call at a time), a new stand-in and a third daemon process (mirror.eventsSecret set, poll every hour): from each
//    call's end (the simulation time of its call.finished event; the simulation clock follows the wall clock) to
//    the creation of its activity in the stand-in.
//
// Everything is stopped and the Redis prefixes deleted at the end, also on Ctrl-C. Results go to
// bench/results/daemon-<timestamp>.json (hubspot), daemon-csv-<timestamp>.json (csv) and daemon-mirror-<timestamp>.json
// (mirror). `--cpu-prof` profiles the daemon processes (mirror: the one that mirrors is summarized);
// `--daemon-node-args` passes other node options (e.g. --heap-prof) to them.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, createWriteStream, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { startHubSpotStandIn, type HubSpotStandIn, type HubSpotStandInStats } from '../crm-stand-ins/hubspot.ts';
import { startSalesforceStandIn, type SalesforceStandIn } from '../crm-stand-ins/salesforce.ts';
import { startPipedriveStandIn, type PipedriveStandIn } from '../crm-stand-ins/pipedrive.ts';
import { VALID_PHONE_COUNT, generatePeople, validPhone } from '../crm-stand-ins/contacts.ts';
import { parseConfig } from '../daemon/config.ts';
import { spacing } from '../daemon/crm/http.ts';
import { toUtc } from '../daemon/local-time.ts';
import { callKey } from '../daemon/mirror/mirror.ts';
import { readRun } from '../daemon/sync/run.ts';
import { DaemonKeys, SyncKeys, campaignKey } from '../daemon/state/keys.ts';
import type { RunRecord } from '../daemon/state/sync-state.ts';
import { RealTimeDriver, SimulationClock } from '../server/clock.ts';
import { DEFAULT_OUTCOMES, type OutcomeModel } from '../server/dialer/model.ts';
import { DEFAULT_RATE_LIMIT } from '../server/rate-limit.ts';
import { Store } from '../server/store/store.ts';
import { REDIS_URL, testPrefix } from '../test/support/daemon.ts';
import { startRedisCluster, type RedisClusterUnderTest } from '../test/support/redis-cluster.ts';
import { runCompliance } from './compliance.ts';
import { runHoldings } from './holdings.ts';
import {
  MB, describeMachine, loadAverage, machine, printFiguresHeading, readFlags, round, startServer, stats, writeResults,
  type BenchServer, type Machine, type Stats,
} from './support.ts';

// ---------------------------------------------------------------------------------------------- options

const FLAGS = {
  scenario: { def: 'hubspot', help: 'burst (webhook bursts of every source: its own flags, see --scenario burst --help), hubspot (CRM import, webhook latency, memory), csv (a streamed CSV file: rows/s, invalid rows, RSS), mirror (call-detail records into HubSpot: records/s, lag, RSS), list (a HubSpot list: idle run requests, comparison rate, webhook latency idle and beside another import), all (hubspot, csv, mirror, list), hubspot-fault, pipedrive or salesforce-fault (mirroring through a Redis SIGKILL; requests/tokens per 1,000 contacts and calls), faults (all three), salesforce (a Campaign\'s members imported and calls written as Tasks: numbers/s, Tasks/s, API requests per 1,000 contacts and calls), compliance (contacts across the zones, some with an address that disagrees with the number, dialed over simulated days with calling-window rules placing callees by all evidence or the best alone, and without: calls outside windows, over caps, capacity, open hours, first calls), holdings (what the calling window\'s check costs: dialer requests and ms when nothing changed, when another key added numbers, when Redis lost the judgement)' },
  'compliance-contacts': { def: 50_000, help: 'compliance: contacts spread over the window groups' },
  'compliance-days': { def: 3, help: 'compliance: simulated days' },
  'compliance-step': { def: 300, help: 'compliance: seconds the clock advances between two window checks (the margin is twice this)' },
  'compliance-attempts': { def: 3, help: 'compliance: the dialer\'s maxAttempts per number record (above 3, Florida\'s cap, numbers are taken out at their cap)' },
  'holdings-numbers': { def: 10_000, help: 'holdings: numbers the daemon adds to the governed campaign (also measured with 1,000)' },
  'holdings-foreign': { def: 6, help: 'holdings: numbers another key adds' },
  'compliance-disagree': { def: 5, help: 'compliance: percent of New York\'s contacts (212) with a California address (placed by all evidence, or by the best alone)' },
  'numbers-per-agent': { def: 400, help: 'compliance: each campaign gets one agent per this many numbers' },
  'list-members': { def: 100_000, help: 'list: members of the HubSpot list the measured sync selects' },
  'other-members': { def: 50_000, help: 'list: contacts the other sync imports while webhook latency is measured the second time' },
  members: { def: 100_000, help: 'salesforce: Campaign members (Leads and Contacts) imported by the full run' },
  'sf-rate': { def: 20, help: 'salesforce, salesforce-fault: the daemon\'s requestsPerSecond to the Salesforce stand-in' },
  'sf-calls': { def: 100_000, help: 'salesforce: call-detail records made, then mirrored as Tasks by the daemon (upserts of 200)' },
  contacts: { def: 100_000, help: 'contacts seeded in the HubSpot stand-in and imported by the first (full) run' },
  webhooks: { def: 50, help: 'contacts created one at a time, each with its signed creation webhook (latency)' },
  'pause-ms': { def: 1_000, help: 'pause between two webhooks (the HubSpot search gate spaces searches by 210 ms)' },
  'poll-ms': { def: 5, help: 'pause between two polls of the latency phase, once the server has answered the add' },
  'slow-poll-ms': { def: 250, help: 'pause between two polls of the latency phase before that' },
  rows: { def: 1_000_000, help: 'csv: rows of the generated file (every 1000th with an invalid phone number)' },
  'csv-rate': { def: 100, help: 'csv: requests/s (and burst) of the server\'s rate limit and of the daemon\'s dialer limit' },
  'csv-max-numbers': { def: 5000, help: 'csv: the daemon\'s dialer.maxNumbersPerRequest' },
  records: { def: 100_000, help: 'mirror: call-detail records made (one call to each of as many contacts\' numbers) and mirrored' },
  agents: { def: 2000, help: 'mirror, salesforce: agents of the campaign that makes the records (manual clock)' },
  'hubspot-rate': { def: 100, help: 'mirror: requestsPer10Seconds of the HubSpot stand-in and of the daemon\'s source (batch creates)' },
  'lag-calls': { def: 30, help: 'mirror: calls (one number each, 1 agent, real-time clock) whose end-to-activity lag is measured' },
  'fault-records': { def: 20_000, help: 'hubspot-fault, salesforce-fault: contacts (one call each) mirrored through a Redis kill (issue 18 asks for 100,000)' },
  'pipedrive-records': { def: 1_500, help: 'pipedrive: persons (one call each) mirrored through a Redis kill, with their costs in tokens' },
  'pipedrive-burst': { def: 120, help: 'pipedrive: burstPer2Seconds of the stand-in and of the daemon (Ultimate plan: 120)' },
  'fault-percent': { def: 60, help: 'hubspot-fault, pipedrive, salesforce-fault: records are made at this percentage of the CRM\'s write ceiling' },
  changes: { def: 1_000, help: 'hubspot-fault, pipedrive, salesforce-fault: contacts changed in the CRM (each a change webhook or Outbound Message) after the run without a fault' },
  'import-seconds': { def: 900, help: 'give up waiting for the import (mirror: for the import, and for the mirror) after this many seconds' },
  'max-seconds': { def: 1_800, help: 'watchdog: abort (and clean up) after this many seconds' },
  'cpu-prof': { def: false, help: 'run the daemon with --cpu-prof; print its hottest functions (profile kept, path printed)' },
  'daemon-node-args': { def: '', help: 'more node options for the daemon process, space-separated (e.g. --max-old-space-size=128)' },
  'keep-logs': { def: false, help: 'keep the daemon\'s log and configuration (path printed)' },
  cluster: { def: false, help: 'mirror (its throughput run), hubspot-fault, pipedrive, salesforce-fault: on a six-node Redis Cluster of the bench\'s own; the fault kills the master holding the mirror\'s keys (its replica takes over) and restarts it as a replica' },
} as const;

// `--scenario burst` is a command of its own, with flags of its own (bench/daemon-burst.ts).
const scenarioArg = process.argv.find((a, i) => process.argv[i - 1] === '--scenario' || a.startsWith('--scenario='))?.replace(/^--scenario=/, '');
if ((scenarioArg ?? process.env.BENCH_SCENARIO) === 'burst') {
  await (await import('./daemon-burst.ts')).main();
  process.exit(process.exitCode ?? 0);
}

const opts = readFlags(FLAGS, { command: 'daemon', example: 'BENCH_CONTACTS=20000', width: 15 });
const SCENARIOS = {
  hubspot: ['hubspot'], csv: ['csv'], mirror: ['mirror'], list: ['list'], all: ['hubspot', 'csv', 'mirror', 'list'],
  'hubspot-fault': ['hubspot-fault'], pipedrive: ['pipedrive'], 'salesforce-fault': ['salesforce-fault'], faults: ['faults'], salesforce: ['salesforce'], compliance: ['compliance'], holdings: ['holdings'],
} as const;
if (!Object.hasOwn(SCENARIOS, opts.scenario)) throw new Error(`--scenario must be one of ${Object.keys(SCENARIOS).join(', ')}; got ${opts.scenario}`);
const scenarios = SCENARIOS[opts.scenario as keyof typeof SCENARIOS];
if (opts.contacts < 1 || opts.contacts + opts.webhooks > VALID_PHONE_COUNT) throw new Error(`--contacts + --webhooks must be 1..${VALID_PHONE_COUNT}`);
if (opts['poll-ms'] < 1) throw new Error('--poll-ms must be >= 1');
if (opts.rows < 1 || opts.rows > VALID_PHONE_COUNT) throw new Error(`--rows must be 1..${VALID_PHONE_COUNT} (distinct valid numbers)`);
if (opts['csv-rate'] < 1) throw new Error('--csv-rate must be >= 1');
if (opts.records < 1 || opts.records > VALID_PHONE_COUNT) throw new Error(`--records must be 1..${VALID_PHONE_COUNT} (one contact each)`);
if (opts.agents < 1 || opts.agents > 10_000) throw new Error('--agents must be 1..10000 (the server\'s limit)');
if (opts['hubspot-rate'] < 1) throw new Error('--hubspot-rate must be >= 1');
if (opts['lag-calls'] < 1 || opts['lag-calls'] > 1000) throw new Error('--lag-calls must be 1..1000');
if (opts['csv-max-numbers'] < 1 || opts['csv-max-numbers'] > 10_000) throw new Error('--csv-max-numbers must be 1..10000 (the daemon\'s limit)');

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SYNC_ID = 'hubspot-bench';
/** The dialer limits the daemon is given: the reference server's default per key, and its largest request. */
const DIALER = { perSecond: DEFAULT_RATE_LIMIT.rate, burst: DEFAULT_RATE_LIMIT.burst, maxNumbersPerRequest: 1000 };
/** The stand-in's defaults, which the daemon is told as they are. */
const HUBSPOT = { searchPerSecond: 5, pageSize: 200 };
/** Reads per second one poll key may make (the server's rate limit per key, less a margin). */
const POLL_KEY_RATE = 8;
const CLIENT_SECRET = 'hs-client-secret-bench';
const CSV_SYNC_ID = 'csv-bench';
/** Every INVALID_EVERY-th row of the CSV file has an invalid phone number (0.1%). */
const INVALID_EVERY = 1000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

// ------------------------------------------------------------------------------------- the daemon process

/** The redis, http and dialer blocks of a bench daemon's configuration, as an operator writes them (the token from the environment). */
function operatorBlocks(redis: { url: string; prefix: string } | { cluster: string[]; prefix: string }, port: number, base: string, accountId: string, timeZone?: string) {
  return {
    redis,
    http: { host: '127.0.0.1', port, publicUrl: `http://127.0.0.1:${port}` },
    dialer: {
      baseUrl: base, accountId, apiToken: '${BENCH_DIALER_TOKEN}', ...(timeZone ? { timeZone } : {}),
      rateLimit: { perSecond: DIALER.perSecond, burst: DIALER.burst }, maxNumbersPerRequest: DIALER.maxNumbersPerRequest,
    },
  };
}

/** Samples a process's RSS every 200 ms until stop(), which gives the highest seen, in MB. */
function sampleRss(pid: number): { stop(): number } {
  let peak = 0;
  const timer = setInterval(() => { const m = procMemory(pid); if (m && m.rssMb > peak) peak = m.rssMb; }, 200);
  return { stop: () => { clearInterval(timer); return peak; } };
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat (clock ticks of 1/100 s); null once it is gone. */
function procCpuSeconds(pid: number): number | null {
  let stat: string;
  try { stat = readFileSync(`/proc/${pid}/stat`, 'utf8'); } catch { return null; }
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return round((Number(fields[11]) + Number(fields[12])) / 100, 2);
}

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
/** A scenario's daemon log, daemon configuration and CPU profile folder. */
interface DaemonFiles { log: string; config: string; profiles: string }
const filesOf = (scenario: string): DaemonFiles => ({
  log: join(tempDir, `daemon-${scenario}.log`), config: join(tempDir, `daemon-${scenario}.yaml`), profiles: join(tempDir, `cpu-profile-${scenario}`),
});
/** One key prefix per scenario, each deleted when its scenario ends (and again at the end, in case). */
const redisPrefixes: ReturnType<typeof testPrefix>[] = [];

let server: BenchServer | null = null;
let store: Store | null = null;
let standIn: HubSpotStandIn | null = null;
let sfStandIn: SalesforceStandIn | null = null;
let pdStandIn: PipedriveStandIn | null = null;
/** The fault scenarios' own redis-server. */
let ownRedis: ChildProcess | null = null;
let daemon: ChildProcess | null = null;
let daemonExit: Promise<number | null> | null = null;
let daemonStopping = false;
let redis: Redis | null = null;
/** The mirror scenario's own Redis Cluster (--cluster) and the bench's client of it. */
let mirrorCluster: { cluster: RedisClusterUnderTest; client: Cluster } | null = null;

/** The bench's own Redis connection, one for every scenario. */
function benchRedis(): Redis {
  return (redis ??= new Redis(REDIS_URL, { maxRetriesPerRequest: 1 }));
}

/**
 * Checks a daemon configuration as the daemon will read it (a mistake there is the bench's: fail before starting
 * anything), then writes it. The calling-window rules are on by default: these scenarios measure throughput on the
 * real clock, so they run with the rules off (the compliance and holdings scenarios have their own).
 */
function writeDaemonConfig(file: string, raw: Record<string, unknown>, env: NodeJS.ProcessEnv): void {
  const config = 'compliance' in raw ? raw : { ...raw, compliance: { off: 'bench: throughput, not calling windows' } };
  parseConfig(config, file, env);
  writeFileSync(file, JSON.stringify(config, null, 2));
}
/** The real-time clock of the mirror scenario's lag phase. */
let driver: RealTimeDriver | null = null;
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

/** Runs one step of a teardown; its failure is reported, and the next steps still run. */
async function step(what: string, f: () => Promise<unknown> | unknown): Promise<void> {
  try { await f(); } catch (err) { console.error(`bench: cleanup: ${what}: ${(err as Error).message}`); }
}

/** Stops what a scenario started (daemon, stand-in, server) and deletes its Redis keys; safe to call twice. */
async function closeScenario(): Promise<void> {
  await step('daemon', stopDaemon);
  driver?.stop();
  await step('stand-in', () => standIn?.close());
  await step('salesforce stand-in', () => sfStandIn?.close());
  await step('pipedrive stand-in', () => pdStandIn?.close());
  await step('own redis-server', () => { ownRedis?.kill('SIGKILL'); });
  await step('redis cluster', async () => { mirrorCluster?.client.disconnect(); await mirrorCluster?.cluster.stop(); mirrorCluster = null; });
  await step('server', () => server?.app.close());
  await step('store', () => store?.close());
  for (const p of redisPrefixes.splice(0)) await step('redis keys', () => p.cleanup());
  daemon = null; daemonExit = null; standIn = null; sfStandIn = null; pdStandIn = null; ownRedis = null; server = null; store = null; driver = null;
}

/** Stops everything this command started and deletes its Redis keys and temp files; safe to call twice. */
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await closeScenario();
    await step('redis client', () => redis?.disconnect());
    if (opts['keep-logs'] || opts['cpu-prof']) console.log(`kept ${tempDir} (daemon-<scenario>.log, daemon-<scenario>.yaml${opts['cpu-prof'] ? ', cpu-profile-<scenario>/' : ''})`);
    else await step('temp dir', () => rmSync(tempDir, { recursive: true, force: true }));
  })();
  return cleaning;
}

/**
 * Spawns `node daemon/cli.ts start --config FILE` as an operator would (its output to the log); an exit the bench
 * did not ask for ends the bench.
 */
function spawnDaemon(files: DaemonFiles, env: NodeJS.ProcessEnv): ChildProcess {
  const logFd = openSync(files.log, 'a');
  const nodeArgs = [...opts['daemon-node-args'].split(/\s+/).filter(Boolean), ...(opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${files.profiles}`] : [])];
  const child = spawn(process.execPath, [...nodeArgs, 'daemon/cli.ts', 'start', '--config', files.config],
    { cwd: ROOT, env, stdio: ['ignore', logFd, logFd] });
  closeSync(logFd);
  daemon = child;
  daemonStopping = false;
  daemonExit = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : null))));
  void daemonExit.then((code) => {
    if (!daemonStopping) {
      console.error(`bench: the daemon exited unexpectedly (code ${code}); its log ends with:\n${logTail(files.log)}`);
      void cleanup().finally(() => process.exit(1));
    }
  });
  return child;
}

/** Waits until the daemon answers /metrics; returns the seconds since `t0`. */
async function waitListening(publicUrl: string, t0: number, files: DaemonFiles): Promise<number> {
  for (;;) {
    try { if ((await fetch(`${publicUrl}/metrics`)).ok) break; } catch { /* not listening yet */ }
    if (now() - t0 > 60_000) throw new Error(`the daemon did not listen within 60 s; its log ends with:\n${logTail(files.log)}`);
    await sleep(50);
  }
  return round((now() - t0) / 1000, 2);
}

/** The daemon's V8 heap and off-heap memory (prom-client's default metrics), in MB. */
const heapOf = (text: string): Heap => ({
  heapUsedMb: round(metric(text, 'cds_nodejs_heap_size_used_bytes') / MB), heapTotalMb: round(metric(text, 'cds_nodejs_heap_size_total_bytes') / MB),
  externalMb: round(metric(text, 'cds_nodejs_external_memory_bytes') / MB),
});

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

async function runHubSpot(): Promise<void> {
  const files = filesOf('hubspot');
  const redisPrefix = testPrefix(REDIS_URL);
  redisPrefixes.push(redisPrefix);
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
    ...operatorBlocks({ url: REDIS_URL, prefix: redisPrefix.prefix }, port, srv.base, account.id),
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
  writeDaemonConfig(files.config, raw, env);
  const redis = benchRedis();
  const keys = new SyncKeys(redisPrefix.prefix, SYNC_ID, campaignKey(srv.base, account.id, campaign.id));
  const latestRun = async (): Promise<RunRecord | null> => {
    const [id] = await redis.lrange(keys.runs, 0, 0);
    return id ? readRun(redis, keys.run(id)) : null;
  };
  const daemonMetrics = async () => (await fetch(`${publicUrl}/metrics`)).text();

  // 1. Throughput ----------------------------------------------------------------------------------------------
  const t0 = now();
  const pid = spawnDaemon(files, env).pid!;
  const rss = sampleRss(pid);
  const readySeconds = await waitListening(publicUrl, t0, files);
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
      throw new Error(`import not done after ${opts['import-seconds']} s: ${numbers} of ${expected} numbers; run ${JSON.stringify(run)}; log:\n${logTail(files.log)}`);
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
  // What the import cost the daemon in CPU (user + system), less sensitive than wall time to others sharing the machine:
  // how the cost of tracing (on and off) is compared.
  const importCpu = procCpuSeconds(pid);
  if (importCpu !== null) console.log(`import CPU        the daemon used ${importCpu} s of CPU (user + system) until the import's run ended: ${round(importCpu / expected * 1e6)} ms per 1000 contacts`);
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
  // The daemon paces searches 5% under the stated limit (daemon/crm/http.ts spacing()).
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
  const daemonPeakRss = rss.stop();
  const exitCode = await stopDaemon();
  const self = procMemory('self');
  let profile: ReturnType<typeof summarizeProfile> | null = null;
  if (opts['cpu-prof']) {
    const file = readdirSync(files.profiles).find((f) => f.endsWith('.cpuprofile'));
    profile = file ? summarizeProfile(join(files.profiles, file)) : null;
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
  printHubSpotReport(report);
  writeResults(`daemon-${report.date.replace(/[:.]/g, '-')}`, report);
}

function printHubSpotReport(r: {
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

// ------------------------------------------------------------------------------------- the CSV scenario

/** Phone numbers no dialer takes, as people mistype them (each one fails the daemon's libphonenumber check). */
const INVALID_PHONES = [(i: number) => `+1 000-555-${String(i % 10_000).padStart(4, '0')}`, (i: number) => `555-${String(i % 10_000).padStart(4, '0')}`, () => 'n/a'];

/**
 * Writes the CSV file, generated in slices so this process holds one slice at a time; phones are as people type
 * them (crm-stand-ins/contacts.ts), and every INVALID_EVERY-th row's is invalid. Returns the invalid rows and bytes.
 */
async function writeCsv(path: string, rows: number): Promise<{ invalid: number; mb: number }> {
  const out = createWriteStream(path);
  out.write('id,phone,firstName,company\n');
  let invalid = 0;
  for (let start = 0; start < rows; start += 10_000) {
    let text = '';
    for (const p of generatePeople(Math.min(10_000, rows - start), 1, start)) {
      const bad = p.index % INVALID_EVERY === INVALID_EVERY - 1;
      if (bad) invalid++;
      const phone = bad ? INVALID_PHONES[Math.floor(p.index / INVALID_EVERY) % INVALID_PHONES.length]!(p.index) : p.phone;
      text += `${p.index + 1},${phone},${p.firstName},${p.company}\n`;
    }
    if (!out.write(text)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return { invalid, mb: round(statSync(path).size / MB) };
}

/** Redis's used_memory in MB (the whole server: other clients' keys count too). */
async function redisUsedMb(r: Redis): Promise<number> {
  return round(Number(/used_memory:(\d+)/.exec(await r.info('memory'))?.[1] ?? 0) / MB);
}

/** MEMORY USAGE (sampled for big hashes and sets) of every key under a prefix, in MB: in all, and the largest keys. */
async function prefixMemory(r: Redis, prefix: string): Promise<{ keys: number; mb: number; largest: { key: string; mb: number }[] }> {
  const sizes: { key: string; mb: number }[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) sizes.push({ key: key.slice(prefix.length + 1), mb: Number((await r.call('MEMORY', 'USAGE', key)) ?? 0) / MB });
  } while (cursor !== '0');
  sizes.sort((a, b) => b.mb - a.mb);
  return {
    keys: sizes.length, mb: round(sizes.reduce((a, b) => a + b.mb, 0)),
    largest: sizes.slice(0, 6).map((k) => ({ key: k.key, mb: round(k.mb, 2) })),
  };
}

interface RssSample { seconds: number; rssMb: number; seen: number; numbers: number }

interface CsvResult {
  rows: number; invalidRows: number; validRows: number; fileMb: number;
  dialer: {
    perSecond: number; maxNumbersPerRequest: number; requests: number; adds: number; numbersSent: number; numbersPerAdd: number;
    rateLimited429: number; daemonRateLimitedDialer: number; ceilingNumbersPerSecond: number;
  };
  seconds: number; readySeconds: number; firstNumberSeconds: number; readAllSeconds: number | null;
  rowsPerSecond: number; validNumbersPerSecond: number; progress: { seconds: number; numbers: number; seen: number; rssMb: number }[];
  run: RunRecord | null; runs: number; invalidOk: boolean; errorsStored: number; errorCodes: Record<string, number>; errorSample: unknown;
  memory: {
    daemonPeakRssMb: number; rssAfterStartMb: number; rssAt10PercentMb: number | null; rssAt100PercentMb: number | null; rssAtImportEndMb: number;
    afterFirst10Percent: { samples: number; minMb: number; maxMb: number; lastMb: number } | null;
    heapAtEnd: Heap; samples: RssSample[];
  };
  redis: { usedBeforeMb: number; usedAfterMb: number; usedDeltaMb: number; prefix: Awaited<ReturnType<typeof prefixMemory>> };
}

async function runCsv(): Promise<void> {
  const files = filesOf('csv');
  const redisPrefix = testPrefix(REDIS_URL);
  redisPrefixes.push(redisPrefix);
  const csvPath = join(tempDir, 'contacts.csv');
  const tGen = now();
  const file = await writeCsv(csvPath, opts.rows);
  const validRows = opts.rows - file.invalid;
  console.log(`CSV file: ${opts.rows} rows (${file.invalid} with an invalid phone number), ${file.mb} MB, written in ${round((now() - tGen) / 1000, 2)} s`);

  const rate = opts['csv-rate'];
  store = new Store(':memory:');
  const daemonCalls = { requests: 0, adds: 0, numbersSent: 0, rateLimited: 0 };
  let daemonAuth = '';
  server = await startServer(store, { rateLimit: { rate, burst: rate } }, (app) => {
    app.addHook('onResponse', async (request, reply) => {
      if (request.headers.authorization !== daemonAuth) return;
      daemonCalls.requests++;
      if (reply.statusCode === 429) daemonCalls.rateLimited++;
      if (request.method === 'POST' && Array.isArray(request.body) && reply.statusCode < 300) {
        daemonCalls.adds++;
        daemonCalls.numbersSent += request.body.length;
      }
    });
  });
  const srv = server;
  const account = await srv.consolePost<{ id: string }>('/accounts', { name: 'Bench daemon CSV', timezone: 'America/New_York' });
  const campaign = await srv.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, { name: 'CSV leads', type: 'Dynamic', state: 'Active' });
  const key = (name: string, roles: string[]) => srv.consolePost<{ token: string }>(`/accounts/${account.id}/apiKeys`, { name, roles }).then((k) => k.token);
  const daemonToken = await key('daemon', ['CampaignNumberAdmin']);
  daemonAuth = `Bearer ${daemonToken}`;
  const pollToken = await key('poll', ['CampaignReader']);
  const campaignUrl = `${srv.base}/v1/accounts/${account.id}/campaigns/${campaign.id}`;
  /** X-Total-Count of the campaign's numbers (the server keeps counters: cheap at any size). */
  const count = async (): Promise<number | null> => {
    const res = await fetch(`${campaignUrl}/numbers?range=${encodeURIComponent('[0,0]')}`, { headers: { authorization: `Bearer ${pollToken}` } });
    await res.arrayBuffer();
    if (res.status === 429) return null;
    if (res.status !== 200) throw new Error(`list numbers: ${res.status}`);
    return Number(res.headers.get('x-total-count'));
  };
  console.log(`reference server ${srv.base}: rate limit ${rate}/s, burst ${rate} per key; daemon: dialer rateLimit ${rate}/s (burst ${rate}), ` +
    `maxNumbersPerRequest ${opts['csv-max-numbers']}`);

  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const raw = {
    redis: { url: REDIS_URL, prefix: redisPrefix.prefix },
    http: { host: '127.0.0.1', port },
    dialer: {
      baseUrl: srv.base, accountId: account.id, apiToken: '${BENCH_DIALER_TOKEN}',
      rateLimit: { perSecond: rate, burst: rate }, maxNumbersPerRequest: opts['csv-max-numbers'],
    },
    syncs: [{
      id: CSV_SYNC_ID,
      source: { type: 'csv', path: csvPath },
      campaignId: campaign.id,
      mapping: { id: 'id', phone: 'phone', defaultCountry: 'US', variables: { firstName: 'firstName', company: 'company' } },
      // One run: the first (full) import is what is measured.
      schedule: { every: '24h' },
    }],
    log: { level: 'info' },
  };
  const env = { ...process.env, BENCH_DIALER_TOKEN: daemonToken };
  writeDaemonConfig(files.config, raw, env);
  const r = benchRedis();
  const keys = new SyncKeys(redisPrefix.prefix, CSV_SYNC_ID, campaignKey(srv.base, account.id, campaign.id));
  const redisBefore = await redisUsedMb(r);

  const t0 = now();
  const pid = spawnDaemon(files, env).pid!;
  // RSS every second, beside how many rows the run has read (its record's `seen`) and the last count of numbers.
  const samples: RssSample[] = [];
  let numbers = 0;
  let sampling = false;
  const sample = async () => {
    const m = procMemory(pid);
    const [runId] = await r.lrange(keys.runs, -1, -1); // the first run: the import
    const seen = runId ? Number((await r.hget(keys.run(runId), 'seen')) ?? 0) : 0;
    if (m) samples.push({ seconds: round((now() - t0) / 1000, 1), rssMb: m.rssMb, seen, numbers });
  };
  const sampler = setInterval(() => {
    if (sampling) return;
    sampling = true;
    void sample().catch(() => {}).finally(() => { sampling = false; });
  }, 1000);
  const readySeconds = await waitListening(publicUrl, t0, files);
  const rssAfterStart = procMemory(pid)?.rssMb ?? 0;
  console.log(`daemon pid ${pid} listening on ${publicUrl} after ${readySeconds} s (RSS ${rssAfterStart} MB); importing ${opts.rows} rows → ${validRows} numbers`);

  const progress: CsvResult['progress'] = [];
  let firstNumberSeconds = 0;
  let lastPrint = now();
  for (;;) {
    const n = await count();
    const t = (now() - t0) / 1000;
    if (n !== null) {
      numbers = n;
      if (n > 0 && !firstNumberSeconds) firstNumberSeconds = round(t, 2);
      if (now() - lastPrint >= 10_000 || n >= validRows) {
        lastPrint = now();
        const last = samples.at(-1);
        progress.push({ seconds: round(t, 1), numbers: n, seen: last?.seen ?? 0, rssMb: last?.rssMb ?? 0 });
        console.log(`  ${round(t, 1).toFixed(1).padStart(6)} s: ${String(last?.seen ?? 0).padStart(8)} rows read, ${String(n).padStart(8)} numbers ` +
          `(${Math.round(n / t)}/s overall), daemon RSS ${last?.rssMb ?? '?'} MB`);
      }
      if (n >= validRows) break;
    }
    if (t > opts['import-seconds']) {
      const [runId] = await r.lrange(keys.runs, -1, -1);
      const run = runId ? await readRun(r, keys.run(runId)) : null;
      throw new Error(`import not done after ${opts['import-seconds']} s: ${numbers} of ${validRows} numbers; run ${JSON.stringify(run)}; log:\n${logTail(files.log)}`);
    }
    await sleep(250);
  }
  const importSeconds = (now() - t0) / 1000;
  clearInterval(sampler);
  while (sampling) await sleep(10);
  await sample();
  const rssAtImportEnd = samples.at(-1)?.rssMb ?? 0;
  for (;;) {
    const [runId] = await r.lrange(keys.runs, -1, -1);
    const run = runId ? await readRun(r, keys.run(runId)) : null;
    if (run && run.status !== 'running' && (await r.hlen(keys.batches)) === 0) break;
    if ((now() - t0) / 1000 > opts['import-seconds'] + 60) throw new Error('the first run did not finish after its numbers were in the campaign');
    await sleep(100);
  }
  // The import is the oldest full run (runs are listed newest first).
  const runIds = await r.lrange(keys.runs, 0, -1);
  let run: RunRecord | null = null;
  for (const id of [...runIds].reverse()) {
    const candidate = await readRun(r, keys.run(id));
    if (candidate?.mode === 'full') { run = candidate; break; }
  }
  const stored = run ? (await r.lrange(keys.runErrors(run.id), 0, -1)).map((e) => JSON.parse(e) as { code: string }) : [];
  const errorCodes: Record<string, number> = {};
  for (const e of stored) errorCodes[e.code] = (errorCodes[e.code] ?? 0) + 1;
  const endMetrics = await (await fetch(`${publicUrl}/metrics`)).text();
  const peak = procMemory(pid)?.hwmMb ?? 0;
  const redisAfter = await redisUsedMb(r);
  const prefix = await prefixMemory(r, redisPrefix.prefix);
  const exitCode = await stopDaemon();

  const at = (fraction: number) => samples.find((s) => s.seen >= fraction * opts.rows) ?? null;
  const from10 = at(0.1);
  const after = from10 ? samples.slice(samples.indexOf(from10)) : [];
  const readAll = at(1);
  const result: CsvResult = {
    rows: opts.rows, invalidRows: file.invalid, validRows, fileMb: file.mb,
    dialer: {
      perSecond: rate, maxNumbersPerRequest: opts['csv-max-numbers'], requests: daemonCalls.requests, adds: daemonCalls.adds,
      numbersSent: daemonCalls.numbersSent, numbersPerAdd: round(daemonCalls.numbersSent / Math.max(1, daemonCalls.adds), 0),
      rateLimited429: daemonCalls.rateLimited, daemonRateLimitedDialer: metric(endMetrics, 'cds_rate_limited_total', { service: 'dialer' }),
      ceilingNumbersPerSecond: round((rate * daemonCalls.numbersSent) / Math.max(1, daemonCalls.adds), 0),
    },
    seconds: round(importSeconds, 2), readySeconds, firstNumberSeconds, readAllSeconds: readAll?.seconds ?? null,
    rowsPerSecond: round(opts.rows / importSeconds, 0), validNumbersPerSecond: round(validRows / importSeconds, 0), progress,
    run, runs: runIds.length, invalidOk: run?.invalid === file.invalid, errorsStored: stored.length, errorCodes, errorSample: stored[0] ?? null,
    memory: {
      daemonPeakRssMb: peak, rssAfterStartMb: rssAfterStart, rssAt10PercentMb: from10?.rssMb ?? null, rssAt100PercentMb: readAll?.rssMb ?? null,
      rssAtImportEndMb: rssAtImportEnd,
      afterFirst10Percent: after.length ? {
        samples: after.length, minMb: Math.min(...after.map((s) => s.rssMb)), maxMb: Math.max(...after.map((s) => s.rssMb)), lastMb: after.at(-1)!.rssMb,
      } : null,
      heapAtEnd: heapOf(endMetrics), samples,
    },
    redis: { usedBeforeMb: redisBefore, usedAfterMb: redisAfter, usedDeltaMb: round(redisAfter - redisBefore), prefix },
  };
  const report = {
    date: new Date().toISOString(), node: process.version, options: opts, seconds: round((now() - startedAt) / 1000, 1),
    machine: machine(loadAtStart), csv: result, daemonExitCode: exitCode, benchPeakRssMb: procMemory('self')?.hwmMb ?? 0,
  };
  printCsvReport(report);
  writeResults(`daemon-csv-${report.date.replace(/[:.]/g, '-')}`, report);
}

function printCsvReport(r: { seconds: number; machine: Machine; csv: CsvResult; daemonExitCode: number | null; benchPeakRssMb: number }): void {
  const mark = (ok: boolean) => (ok ? 'ok' : 'MISS');
  const c = r.csv;
  const m = c.memory;
  const line = printFiguresHeading(118, [`csv scenario, total run ${r.seconds} s`, describeMachine(r.machine)]);
  console.log(`CSV import        ${c.rows} rows (${c.fileMb} MB) → ${c.validRows} numbers in ${c.seconds} s from spawning the daemon: ${c.rowsPerSecond} rows/s ` +
    `(${c.validNumbersPerSecond} valid numbers/s)`);
  console.log(`  timeline        listening after ${c.readySeconds} s, first number at ${c.firstNumberSeconds} s, every row read by ` +
    `${c.readAllSeconds ?? '?'} s (1 s samples of the run's seen), last number at ${c.seconds} s`);
  console.log(`  dialer          rate limit ${c.dialer.perSecond}/s on both sides, maxNumbersPerRequest ${c.dialer.maxNumbersPerRequest}; ${c.dialer.adds} adds ` +
    `(${c.dialer.numbersPerAdd} numbers each on average, so a write ceiling of ${c.dialer.ceilingNumbersPerSecond}/s), ${c.dialer.requests} requests, ` +
    `${c.dialer.rateLimited429} answered 429 (daemon counted ${c.dialer.daemonRateLimitedDialer})`);
  if (c.run) {
    console.log(`  run             ${c.run.mode} ${c.run.status} in ${c.run.durationMs} ms: seen ${c.run.seen}, changed ${c.run.changed}, invalid ${c.run.invalid}, ` +
      `planned ${c.run.planned}, pushed ${c.run.pushed}, rejected ${c.run.rejected} (${c.runs} runs in all)`);
  }
  console.log(`  invalid rows    ${c.invalidRows} written, ${c.run?.invalid ?? '?'} in the run record [${mark(c.invalidOk)}]; ${c.errorsStored} error entries stored ` +
    `(${Object.entries(c.errorCodes).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}), e.g. ${JSON.stringify(c.errorSample)}`);
  console.log(line);
  const a = m.afterFirst10Percent;
  console.log(`memory            daemon peak RSS (VmHWM) ${m.daemonPeakRssMb} MB; RSS after start ${m.rssAfterStartMb} MB, once 10% of the rows were read ` +
    `${m.rssAt10PercentMb ?? '?'} MB, once 100% were read ${m.rssAt100PercentMb ?? '?'} MB, when every number was in ${m.rssAtImportEndMb} MB`);
  if (a) {
    console.log(`  after 10%       ${a.samples} samples (1 s apart): min ${a.minMb} MB, max ${a.maxMb} MB, last ${a.lastMb} MB; ` +
      `growth 10% → 100% of rows ${m.rssAt10PercentMb !== null && m.rssAt100PercentMb !== null ? `${round(m.rssAt100PercentMb - m.rssAt10PercentMb)} MB` : '?'}`);
  }
  console.log(`  daemon heap     at the end: V8 heap ${m.heapAtEnd.heapUsedMb} MB used of ${m.heapAtEnd.heapTotalMb} MB, external ${m.heapAtEnd.externalMb} MB`);
  console.log(`  Redis           used_memory ${c.redis.usedBeforeMb} → ${c.redis.usedAfterMb} MB (delta ${c.redis.usedDeltaMb} MB, the whole server); ` +
    `the scenario's ${c.redis.prefix.keys} keys: ${c.redis.prefix.mb} MB by MEMORY USAGE (sampled), largest ` +
    c.redis.prefix.largest.map((k) => `${k.key} ${k.mb} MB`).join(', '));
  console.log(`  this process    (server with SQLite in memory, file writer, polls) peak RSS ${r.benchPeakRssMb} MB`);
  console.log(`daemon exit       SIGTERM → exit code ${r.daemonExitCode}`);
}

// ------------------------------------------------------------------------------------- the mirror scenario

const MIRROR_SYNC_ID = 'mirror-bench';
const LAG_SYNC_ID = 'mirror-lag';
const MIRROR_TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
/** Inputs of one HubSpot batch create: the sink's batch. */
const HUBSPOT_BATCH = 100;
/** Tasks a Salesforce sObject Collections request carries: the sink's batch. */
const SALESFORCE_BATCH = 200;
/** Searches/s of the stand-in and the daemon while the contacts are imported (not measured: as fast as it goes). */
const IMPORT_SEARCH_PER_SECOND = 50;
/** Simulated seconds per clock advance while the records are made. */
const ADVANCE_STEP_SECONDS = 120;
/** The lag phase's calls: short rings and machine messages (talks last at least 5 s in the simulator anyway). */
const LAG_OUTCOMES: OutcomeModel = { ...DEFAULT_OUTCOMES, ringSeconds: { Answer: 2, NoAnswer: 2, Busy: 1, CallError: 1 }, machineSeconds: 2 };
/** A Salesforce date-time field as the stand-in holds it (ms) or answers it (ISO text), in ms. */
const sfTime = (v: unknown): number | null => (typeof v === 'number' ? v : typeof v === 'string' ? Date.parse(v) : null);
const keyInTitle = (title: unknown) => /\[cds:([^\]]+)\]/.exec(String(title ?? ''))?.[1] ?? '';

/** X-Total-Count of one of a campaign's lists (`numbers`, `reports/callDetails`) through a reader key; null on a 429. */
function listCounter(campaignUrl: string, token: string): (list: string) => Promise<number | null> {
  return async (list) => {
    const res = await fetch(`${campaignUrl}/${list}?range=${encodeURIComponent('[0,0]')}`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    if (res.status === 429) return null;
    if (res.status !== 200) throw new Error(`list ${list}: ${res.status}`);
    return Number(res.headers.get('x-total-count'));
  };
}

/**
 * An account in New York with an Active Dynamic campaign of `--agents` agents calling round the clock, one attempt per
 * number (one record per contact), the daemon's key and a reader key for the bench's own counts.
 */
async function callingCampaign(srv: BenchServer, accountName: string, campaignName: string) {
  const account = await srv.consolePost<{ id: string }>('/accounts', { name: accountName, timezone: MIRROR_TZ });
  const campaign = await srv.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, {
    name: campaignName, type: 'Dynamic', state: 'Active',
    dialer: { mode: 'Power', agents: opts.agents, maxAttempts: 1, talkSeconds: 20, wrapUpSeconds: 5, callingHours: ALL_DAY },
  });
  const key = (name: string, roles: string[]) => srv.consolePost<{ token: string }>(`/accounts/${account.id}/apiKeys`, { name, roles }).then((k) => k.token);
  const daemonToken = await key('daemon', ['CampaignNumberAdmin', 'CampaignReader']);
  const readToken = await key('bench', ['CampaignReader']);
  const campaignUrl = `${srv.base}/v1/accounts/${account.id}/campaigns/${campaign.id}`;
  return { account, campaign, daemonToken, readToken, campaignUrl, count: listCounter(campaignUrl, readToken) };
}

/** Advances the campaign's manual clock until at least `target` call-detail records exist. */
async function makeRecords(srv: BenchServer, count: (list: string) => Promise<number | null>, target: number) {
  const tMake = now();
  let made = 0;
  let simulated = 0;
  let eventsApplied = 0;
  while (made < target) {
    const a = await srv.consolePost<{ eventsApplied: number }>('/clock/advance', { seconds: ADVANCE_STEP_SECONDS });
    simulated += ADVANCE_STEP_SECONDS;
    eventsApplied += a.eventsApplied;
    let n: number | null;
    while ((n = await count('reports/callDetails')) === null) await sleep(200);
    console.log(`  clock +${String(simulated).padStart(5)} s: ${String(n).padStart(7)} call-detail records (${round((now() - tMake) / 1000, 1)} s)`);
    if (n === made && a.eventsApplied === 0) throw new Error(`the campaign stopped dialing at ${n} of ${target} records`);
    made = n;
  }
  return { made, simulated, eventsApplied, advanceSeconds: round((now() - tMake) / 1000, 1) };
}

/** The attempt key of every call-detail record of the campaign (what each mirrored activity must carry once). */
async function recordKeys(campaignUrl: string, readToken: string, campaignId: string): Promise<Set<string>> {
  const keys = new Set<string>();
  for (let first = 0; ; first += 10_000) {
    const res = await fetch(`${campaignUrl}/reports/callDetails?range=${encodeURIComponent(JSON.stringify([first, first + 9999]))}`, { headers: { authorization: `Bearer ${readToken}` } });
    if (res.status === 429) { await res.arrayBuffer(); await sleep(1000); first -= 10_000; continue; }
    if (res.status !== 200) throw new Error(`call details: ${res.status}`);
    const page = (await res.json()) as { number: string; attempt: number; startedAtLocal: string }[];
    for (const rec of page) keys.add(callKey(campaignId, rec));
    if (page.length < 10_000) break;
  }
  return keys;
}

interface MirrorThroughput {
  records: number; agents: number;
  make: { importSeconds: number; advanceSeconds: number; simulatedSeconds: number; eventsApplied: number };
  hubspotRequestsPer10Seconds: number; batchSize: number; ceiling: number; daemonPacing: number;
  readySeconds: number; firstActivitySeconds: number; doneSeconds: number;
  /** From the daemon listening to the last activity. */
  seconds: number; recordsPerSecond: number; percentOfCeiling: number; recordsPerSecondFromSpawn: number; steadyRecordsPerSecond: number;
  progress: { seconds: number; calls: number; rssMb: number }[];
  hubspot: { requests: number; rateLimited: number; callsCreated: number; daemonCounted429: number };
  /** Between the first calls of consecutive batch creates (creation times in the stand-in), ms. */
  batchGapMs: Stats; gapsOverTwicePacing: number; gapsOverOneSecond: number;
  reports: { reads: number; rateLimited429: number; serverMs: Stats; serverTotalSeconds: number };
  check: { calls: number; records: number; distinctKeys: number; duplicateCalls: number; missing: number; unknown: number; onOneContact: number; ok: boolean };
  mirror: { mirrored: number; parked: number; pending: number; lastRun: unknown };
  memory: { peakRssMb: number; sampledPeakRssMb: number; rssAfterStartMb: number; rssAtEndMb: number; heapAtEnd: Heap };
  cpuProfile: ReturnType<typeof summarizeProfile> | null;
}

async function mirrorThroughput(): Promise<MirrorThroughput> {
  const importFiles = filesOf('mirror-import');
  const files = filesOf('mirror');
  const redisPrefix = testPrefix(REDIS_URL);
  redisPrefixes.push(redisPrefix);
  // A manual clock (the records are made before the mirror starts) and the default rate limit.
  store = new Store(':memory:');
  const reads = { count: 0, rateLimited: 0, ms: [] as number[] };
  let daemonAuth = '';
  server = await startServer(store, { rateLimit: DEFAULT_RATE_LIMIT }, (app) => {
    app.addHook('onResponse', async (request, reply) => {
      if (request.headers.authorization !== daemonAuth || !request.url.includes('/reports/callDetails')) return;
      reads.count++;
      if (reply.statusCode === 429) reads.rateLimited++;
      else reads.ms.push(reply.elapsedTime);
    });
  });
  const srv = server;
  const { account, campaign, daemonToken, readToken, campaignUrl, count } = await callingCampaign(srv, 'Bench daemon mirror', 'Mirrored calls');

  const rate = opts['hubspot-rate'];
  const tSeed = now();
  standIn = await startHubSpotStandIn({ contacts: opts.records, seed: 1, searchPerSecond: IMPORT_SEARCH_PER_SECOND, requestsPer10Seconds: rate });
  const hs = standIn;
  console.log(`HubSpot stand-in: ${opts.records} contacts seeded in ${round((now() - tSeed) / 1000, 2)} s, requestsPer10Seconds ${rate}; ` +
    `reference server ${srv.base} (manual clock, rate limit ${DIALER.perSecond}/s, burst ${DIALER.burst} per key), campaign of ${opts.agents} agents`);

  // The local Redis, or (--cluster) a six-node Redis Cluster of the bench's own: the mirror's intent marks then wait
  // for a replica (WAIT), which is what the cluster run measures.
  const cluster = opts.cluster ? await startRedisCluster() : null;
  const config = (port: number, mirror: boolean) => ({
    redis: cluster ? { cluster: cluster.urls, prefix: redisPrefix.prefix } : { url: REDIS_URL, prefix: redisPrefix.prefix },
    http: { host: '127.0.0.1', port },
    dialer: {
      baseUrl: srv.base, accountId: account.id, apiToken: '${BENCH_DIALER_TOKEN}', timeZone: MIRROR_TZ,
      rateLimit: { perSecond: DIALER.perSecond, burst: DIALER.burst }, maxNumbersPerRequest: DIALER.maxNumbersPerRequest,
    },
    syncs: [{
      id: MIRROR_SYNC_ID,
      source: {
        type: 'hubspot', baseUrl: hs.url, accessToken: '${BENCH_HUBSPOT_TOKEN}', searchPerSecond: IMPORT_SEARCH_PER_SECOND,
        requestsPer10Seconds: rate, pageSize: 200,
      },
      campaignId: campaign.id,
      mapping: { phone: 'phone', defaultCountry: 'US', variables: { firstName: 'firstname' } },
      schedule: { every: '24h' },
      ...(mirror ? { mirror: { sink: { type: 'source' }, every: '1s' } } : {}),
    }],
    log: { level: 'info' },
  });
  const env = { ...process.env, BENCH_DIALER_TOKEN: daemonToken, BENCH_HUBSPOT_TOKEN: hs.token };
  const writeConfig = (f: DaemonFiles, raw: Record<string, unknown>) => writeDaemonConfig(f.config, raw, env);
  const r: Redis | Cluster = cluster
    ? (mirrorCluster = { cluster, client: new Cluster(cluster.ports.map((p) => ({ host: '127.0.0.1', port: p })), { redisOptions: { maxRetriesPerRequest: 1 } }) }).client
    : benchRedis();
  const keys = new SyncKeys(redisPrefix.prefix, MIRROR_SYNC_ID, campaignKey(srv.base, account.id, campaign.id));

  // 1. The contacts into the campaign, by a daemon without the mirror (not measured) ------------------------------
  const tImport = now();
  const importPort = await freePort();
  writeConfig(importFiles, config(importPort, false));
  spawnDaemon(importFiles, env);
  await waitListening(`http://127.0.0.1:${importPort}`, tImport, importFiles);
  for (;;) {
    const n = await count('numbers');
    const [runId] = await r.lrange(keys.runs, 0, 0);
    const run = runId ? await readRun(r, keys.run(runId)) : null;
    if (n !== null && n >= opts.records && run && run.status !== 'running' && (await r.hlen(keys.batches)) === 0) break;
    if ((now() - tImport) / 1000 > opts['import-seconds']) {
      throw new Error(`import not done after ${opts['import-seconds']} s: ${n} of ${opts.records} numbers; run ${JSON.stringify(run)}; log:\n${logTail(importFiles.log)}`);
    }
    await sleep(250);
  }
  await stopDaemon();
  const importSeconds = round((now() - tImport) / 1000, 1);
  console.log(`contacts imported: ${opts.records} numbers in the campaign after ${importSeconds} s (that daemon stopped)`);

  // 2. The records: the clock advanced until every number has had its one call ------------------------------------
  const { made, simulated, eventsApplied, advanceSeconds } = await makeRecords(srv, count, opts.records);

  // 3. The mirror, in a daemon process of its own ------------------------------------------------------------------
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  writeConfig(files, config(port, true));
  const before = { ...hs.stats };
  daemonAuth = `Bearer ${daemonToken}`;
  const t0 = now();
  const pid = spawnDaemon(files, env).pid!;
  const rss = sampleRss(pid);
  const readySeconds = await waitListening(publicUrl, t0, files);
  const tReady = now();
  const rssAfterStart = procMemory(pid)?.rssMb ?? 0;
  console.log(`daemon pid ${pid} listening on ${publicUrl} after ${readySeconds} s (RSS ${rssAfterStart} MB); mirroring ${made} records`);
  const progress: MirrorThroughput['progress'] = [];
  let firstActivitySeconds = 0;
  let lastPrint = now();
  for (;;) {
    const calls = hs.stats.callsCreated - before.callsCreated;
    const t = (now() - t0) / 1000;
    if (calls > 0 && !firstActivitySeconds) firstActivitySeconds = round(t, 2);
    if (now() - lastPrint >= 10_000 || calls >= made) {
      lastPrint = now();
      const rssMb = procMemory(pid)?.rssMb ?? 0;
      progress.push({ seconds: round(t, 1), calls, rssMb });
      console.log(`  ${round(t, 1).toFixed(1).padStart(6)} s: ${String(calls).padStart(7)} calls in HubSpot ` +
        `(${Math.round(calls / Math.max(0.001, (now() - tReady) / 1000))}/s since listening), daemon RSS ${rssMb} MB`);
    }
    if (calls >= made) break;
    if (t > opts['import-seconds']) {
      const meta = await r.hgetall(keys.mirror.meta);
      throw new Error(`mirror not done after ${opts['import-seconds']} s: ${calls} of ${made} calls; mirror ${JSON.stringify(meta)}; log:\n${logTail(files.log)}`);
    }
    await sleep(200);
  }
  const tDone = now();
  const sampledPeak = rss.stop();
  const endMetrics = await (await fetch(`${publicUrl}/metrics`)).text();
  const mem = procMemory(pid);
  const mk = keys.mirror;
  const meta = await r.hgetall(mk.meta);
  const parked = await r.hlen(mk.parked);
  const pending = await r.hlen(mk.pending);
  const hubspotDuring = { requests: hs.stats.requests - before.requests, rateLimited: hs.stats.rateLimited - before.rateLimited, callsCreated: hs.stats.callsCreated - before.callsCreated };
  await stopDaemon();
  let cpuProfile: ReturnType<typeof summarizeProfile> | null = null;
  if (opts['cpu-prof']) {
    const file = readdirSync(files.profiles).find((f) => f.endsWith('.cpuprofile'));
    cpuProfile = file ? summarizeProfile(join(files.profiles, file)) : null;
  }

  // Every record once among the calls: the key in each title against the campaign's records.
  const calls = hs.calls();
  const expected = await recordKeys(campaignUrl, readToken, campaign.id);
  const seen = new Set<string>();
  let duplicateCalls = 0;
  let unknown = 0;
  for (const c of calls) {
    const k = keyInTitle(c.properties.hs_call_title);
    if (seen.has(k)) duplicateCalls++;
    else if (!expected.has(k)) unknown++;
    seen.add(k);
  }
  const missing = [...expected].filter((k) => !seen.has(k)).length;
  const onOneContact = calls.filter((c) => c.contactIds.length === 1).length;
  // Batch creates: the first call of each batch of 100 (the last batch of a page may be shorter: the rate counts it).
  const starts: number[] = [];
  for (let i = 0; i < calls.length; i += HUBSPOT_BATCH) starts.push(Date.parse(calls[i]!.createdAt));
  const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
  const pacingMs = spacing(rate, 10_000);

  const ceiling = (rate / 10) * HUBSPOT_BATCH;
  const seconds = (tDone - tReady) / 1000;
  const recordsPerSecond = made / seconds;
  return {
    records: made, agents: opts.agents,
    make: { importSeconds, advanceSeconds, simulatedSeconds: simulated, eventsApplied },
    hubspotRequestsPer10Seconds: rate, batchSize: HUBSPOT_BATCH, ceiling, daemonPacing: round((1000 / pacingMs) * HUBSPOT_BATCH, 0),
    readySeconds, firstActivitySeconds, doneSeconds: round((tDone - t0) / 1000, 2),
    seconds: round(seconds, 2), recordsPerSecond: round(recordsPerSecond, 0), percentOfCeiling: round((100 * recordsPerSecond) / ceiling, 1),
    recordsPerSecondFromSpawn: round(made / ((tDone - t0) / 1000), 0),
    steadyRecordsPerSecond: round(made / Math.max(0.001, (tDone - t0) / 1000 - firstActivitySeconds), 0),
    progress,
    hubspot: { ...hubspotDuring, daemonCounted429: metric(endMetrics, 'cds_rate_limited_total', { service: 'hubspot' }) },
    batchGapMs: stats(gaps), gapsOverTwicePacing: gaps.filter((g) => g > 2 * pacingMs).length, gapsOverOneSecond: gaps.filter((g) => g > 1000).length,
    reports: { reads: reads.count, rateLimited429: reads.rateLimited, serverMs: stats(reads.ms), serverTotalSeconds: round(reads.ms.reduce((a, b) => a + b, 0) / 1000, 2) },
    check: {
      calls: calls.length, records: expected.size, distinctKeys: seen.size, duplicateCalls, missing, unknown, onOneContact,
      ok: calls.length === expected.size && duplicateCalls === 0 && missing === 0 && unknown === 0 && onOneContact === calls.length,
    },
    mirror: { mirrored: Number(meta.mirrored ?? 0), parked, pending, lastRun: meta.lastRun ? JSON.parse(meta.lastRun) : null },
    memory: { peakRssMb: mem?.hwmMb ?? sampledPeak, sampledPeakRssMb: sampledPeak, rssAfterStartMb: rssAfterStart, rssAtEndMb: mem?.rssMb ?? 0, heapAtEnd: heapOf(endMetrics) },
    cpuProfile,
  };
}

interface MirrorLag {
  calls: number; activities: number; seconds: number;
  /** Call end (its call.finished event's simulation time) → activity created in the stand-in. */
  lagMs: Stats;
  /** Call end → the event queued by the simulator (its 50 ms ticks), part of the above. */
  endToQueuedMs: Stats;
  /** The same lag from the record's endedAtLocal (whole seconds, so up to 1 s more). */
  fromEndedAtLocalMs: Stats;
  /** Wall clock minus simulation clock, sampled at the end (ms). */
  simulationBehindMs: { min: number; max: number };
  importDoneSeconds: number; firstCallEndSeconds: number | null;
  distinctKeys: number; unmatched: number; eventsAccepted: number; dialerCalls429: number;
  daemonPeakRssMb: number;
  samples: { number: string; attempt: number; lagMs: number | null }[];
}

async function mirrorLag(): Promise<MirrorLag> {
  const files = filesOf('mirror-lag');
  const redisPrefix = testPrefix(REDIS_URL);
  redisPrefixes.push(redisPrefix);
  store = new Store(':memory:');
  const st = store;
  // call.finished events as the server queues them: their simulation time (the call's end) and when they were queued.
  const events = new Map<string, { endMs: number; queuedAt: number; endedAtLocal: string }>();
  const enqueue = st.webhooks.enqueue.bind(st.webhooks);
  st.webhooks.enqueue = (endpointPk, eventId, body, dueAt) => {
    const e = JSON.parse(body) as { type: string; time: string; data: { call?: { number: string; attempt: number; endedAtLocal: string } } };
    if (e.type === 'call.finished' && e.data.call) {
      events.set(`${e.data.call.number}#${e.data.call.attempt}`, { endMs: Date.parse(e.time), queuedAt: Date.now(), endedAtLocal: e.data.call.endedAtLocal });
    }
    enqueue(endpointPk, eventId, body, dueAt);
  };
  // The simulation clock follows the wall clock from here: an event's simulation time is when it happened.
  const clock = new SimulationClock(Date.now());
  driver = new RealTimeDriver(clock, 1);
  driver.start();
  server = await startServer(st, { rateLimit: DEFAULT_RATE_LIMIT, clock, clockMode: 'realtime', seed: 7, outcomes: LAG_OUTCOMES });
  const srv = server;
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const account = await srv.consolePost<{ id: string }>('/accounts', { name: 'Bench daemon lag', timezone: MIRROR_TZ });
  const endpoint = await srv.consolePost<{ id: string; secret: string }>(`/accounts/${account.id}/webhookEndpoints`, { url: `${publicUrl}/webhooks/${LAG_SYNC_ID}/events` });
  const campaign = await srv.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, {
    name: 'Lag', type: 'Dynamic', state: 'Active', webhookEndpointId: endpoint.id,
    // One call at a time: the daemon is idle between two call ends.
    dialer: { mode: 'Power', agents: 1, linesPerAgent: 1, maxAttempts: 1, talkSeconds: 5, wrapUpSeconds: 0, callingHours: ALL_DAY },
  });
  const { token: daemonToken } = await srv.consolePost<{ token: string }>(`/accounts/${account.id}/apiKeys`, { name: 'daemon', roles: ['CampaignNumberAdmin', 'CampaignReader'] });
  const n = opts['lag-calls'];
  const rate = opts['hubspot-rate'];
  standIn = await startHubSpotStandIn({ contacts: n, seed: 2, requestsPer10Seconds: rate });
  const hs = standIn;
  const raw = {
    ...operatorBlocks({ url: REDIS_URL, prefix: redisPrefix.prefix }, port, srv.base, account.id, MIRROR_TZ),
    syncs: [{
      id: LAG_SYNC_ID,
      source: { type: 'hubspot', baseUrl: hs.url, accessToken: '${BENCH_HUBSPOT_TOKEN}', requestsPer10Seconds: rate },
      campaignId: campaign.id,
      mapping: { phone: 'phone', defaultCountry: 'US' },
      schedule: { every: '24h' },
      // The poll is an hour away: the events bring every activity.
      mirror: { sink: { type: 'source' }, every: '1h', eventsSecret: '${BENCH_EVENTS_SECRET}' },
    }],
    log: { level: 'info' },
  };
  const env = { ...process.env, BENCH_DIALER_TOKEN: daemonToken, BENCH_HUBSPOT_TOKEN: hs.token, BENCH_EVENTS_SECRET: endpoint.secret };
  writeDaemonConfig(files.config, raw, env);
  const r = benchRedis();
  const keys = new SyncKeys(redisPrefix.prefix, LAG_SYNC_ID, campaignKey(srv.base, account.id, campaign.id));

  const t0 = now();
  const wallStart = Date.now();
  const pid = spawnDaemon(files, env).pid!;
  const readySeconds = await waitListening(publicUrl, t0, files);
  console.log(`lag: real-time server ${srv.base}, daemon pid ${pid} listening after ${readySeconds} s; ${n} contacts → ${n} calls, one at a time`);
  let importDoneSeconds = 0;
  const timeoutSeconds = 60 + 10 * n;
  let lastPrint = now();
  for (;;) {
    if (!importDoneSeconds) {
      const [runId] = await r.lrange(keys.runs, 0, 0);
      const run = runId ? await readRun(r, keys.run(runId)) : null;
      if (run && run.status !== 'running' && (await r.hlen(keys.batches)) === 0) importDoneSeconds = round((now() - t0) / 1000, 2);
    }
    const created = hs.stats.callsCreated;
    if (created >= n && events.size >= n) break;
    if (now() - lastPrint >= 15_000) {
      lastPrint = now();
      console.log(`  ${round((now() - t0) / 1000, 1).toFixed(1).padStart(6)} s: ${events.size} calls ended, ${created} activities`);
    }
    if ((now() - t0) / 1000 > timeoutSeconds) {
      throw new Error(`lag: ${created} activities for ${events.size} calls of ${n} after ${timeoutSeconds} s; log:\n${logTail(files.log)}`);
    }
    await sleep(100);
  }
  const seconds = round((now() - t0) / 1000, 1);
  const behind: number[] = [];
  for (let i = 0; i < 20; i++) { behind.push(Date.now() - clock.now()); await sleep(7); }
  const endMetrics = await (await fetch(`${publicUrl}/metrics`)).text();
  const peak = procMemory(pid)?.hwmMb ?? 0;
  await stopDaemon();
  driver.stop();

  const calls = hs.calls();
  const lag: number[] = [];
  const toQueued: number[] = [];
  const fromLocal: number[] = [];
  const samples: MirrorLag['samples'] = [];
  let unmatched = 0;
  for (const c of calls) {
    const number = String(c.properties.hs_call_to_number ?? '');
    const attempt = Number(/\(attempt (\d+)\)/.exec(String(c.properties.hs_call_title ?? ''))?.[1] ?? 0);
    const e = events.get(`${number}#${attempt}`);
    if (!e) { unmatched++; samples.push({ number, attempt, lagMs: null }); continue; }
    const created = Date.parse(c.createdAt);
    lag.push(created - e.endMs);
    toQueued.push(e.queuedAt - e.endMs);
    fromLocal.push(created - toUtc(e.endedAtLocal, MIRROR_TZ));
    samples.push({ number, attempt, lagMs: created - e.endMs });
  }
  const firstEnd = Math.min(...[...events.values()].map((e) => e.endMs));
  return {
    calls: events.size, activities: calls.length, seconds,
    lagMs: stats(lag), endToQueuedMs: stats(toQueued), fromEndedAtLocalMs: stats(fromLocal),
    simulationBehindMs: { min: Math.min(...behind), max: Math.max(...behind) },
    importDoneSeconds, firstCallEndSeconds: Number.isFinite(firstEnd) ? round((firstEnd - wallStart) / 1000, 2) : null,
    distinctKeys: new Set(calls.map((c) => keyInTitle(c.properties.hs_call_title))).size, unmatched,
    eventsAccepted: metric(endMetrics, 'cds_webhooks_total', { sync: LAG_SYNC_ID, result: 'accepted' }),
    dialerCalls429: metric(endMetrics, 'cds_rate_limited_total', { service: 'dialer' }),
    daemonPeakRssMb: peak, samples,
  };
}

async function runMirror(): Promise<void> {
  const throughput = await mirrorThroughput();
  await closeScenario();
  const lag = await mirrorLag();
  const report = {
    date: new Date().toISOString(), node: process.version, options: opts, seconds: round((now() - startedAt) / 1000, 1),
    machine: machine(loadAtStart), throughput, lag, benchPeakRssMb: procMemory('self')?.hwmMb ?? 0,
  };
  printMirrorReport(report);
  writeResults(`daemon-mirror-${report.date.replace(/[:.]/g, '-')}`, report);
}

function printMirrorReport(r: { seconds: number; machine: Machine; throughput: MirrorThroughput; lag: MirrorLag; benchPeakRssMb: number }): void {
  const mark = (ok: boolean) => (ok ? 'ok' : 'MISS');
  const t = r.throughput;
  const line = printFiguresHeading(118, [`mirror scenario, total run ${r.seconds} s`, describeMachine(r.machine)]);
  console.log(`mirror            ${t.records} call-detail records → ${t.check.calls} calls in HubSpot in ${t.seconds} s from the daemon listening` +
    `${opts.cluster ? ' (its state on a six-node Redis Cluster: marks wait for a replica)' : ''}: ` +
    `${t.recordsPerSecond} records/s = ${t.percentOfCeiling}% of the ceiling [target >= 90%: ${mark(t.percentOfCeiling >= 90)}]`);
  console.log(`  ceiling         requestsPer10Seconds ${t.hubspotRequestsPer10Seconds} (stand-in and daemon) / 10 s × ${t.batchSize} calls per batch create ` +
    `= ${t.ceiling} records/s; the daemon paces 5% under the limit: at most ${t.daemonPacing}/s`);
  console.log(`  timeline        listening after ${t.readySeconds} s, first call at ${t.firstActivitySeconds} s, last at ${t.doneSeconds} s from spawning it ` +
    `(${t.recordsPerSecondFromSpawn}/s from the spawn, ${t.steadyRecordsPerSecond}/s from the first call to the last)`);
  console.log(`  HubSpot         ${t.hubspot.requests} requests while mirroring, ${t.hubspot.rateLimited} answered 429 (daemon counted ${t.hubspot.daemonCounted429}); ` +
    `batch creates apart p50 ${t.batchGapMs.p50} ms, p90 ${t.batchGapMs.p90}, p99 ${t.batchGapMs.p99}, max ${t.batchGapMs.max} ` +
    `(${t.gapsOverTwicePacing} gaps over twice the pacing, ${t.gapsOverOneSecond} over 1 s)`);
  console.log(`  report reads    ${t.reports.reads} reads of the call-details report by the daemon's key (500 a page), ${t.reports.rateLimited429} answered 429; ` +
    `server time p50 ${round(t.reports.serverMs.p50)} ms, p99 ${round(t.reports.serverMs.p99)} ms, max ${round(t.reports.serverMs.max)} ms, ${t.reports.serverTotalSeconds} s in all`);
  const c = t.check;
  console.log(`  one per record  ${c.calls} calls for ${c.records} records: ${c.distinctKeys} distinct keys in the titles, ${c.duplicateCalls} duplicates, ` +
    `${c.missing} records without a call, ${c.unknown} calls of no record, ${c.onOneContact} on exactly one contact [${mark(c.ok)}]`);
  console.log(`  mirror state    mirrored ${t.mirror.mirrored}, parked ${t.mirror.parked}, pending ${t.mirror.pending}; last finished run ${JSON.stringify(t.mirror.lastRun)}`);
  console.log(`  records made    contacts imported in ${t.make.importSeconds} s; clock advanced ${t.make.simulatedSeconds} simulated s in ${t.make.advanceSeconds} s ` +
    `(${t.agents} agents, one attempt per number, ${t.make.eventsApplied} simulation events)`);
  console.log(line);
  const l = r.lag;
  console.log(`lag when idle     ${l.lagMs.n} calls (1 agent, real-time clock, events to /webhooks/${LAG_SYNC_ID}/events, poll hourly) → call end to activity created:`);
  console.log(`                  p50 ${l.lagMs.p50} ms, p90 ${l.lagMs.p90} ms, p99 ${l.lagMs.p99} ms, max ${l.lagMs.max} ms (mean ${l.lagMs.mean})`);
  console.log(`  parts           call end → event queued by the simulator p50 ${l.endToQueuedMs.p50} ms, max ${l.endToQueuedMs.max} (50 ms ticks; the sender ` +
    `polls its outbox every 100 ms); simulation clock behind the wall clock ${l.simulationBehindMs.min}–${l.simulationBehindMs.max} ms`);
  console.log(`  cross-check     from endedAtLocal (whole seconds) instead: p50 ${l.fromEndedAtLocalMs.p50} ms, p99 ${l.fromEndedAtLocalMs.p99} ms`);
  console.log(`  daemon          ${l.eventsAccepted} events accepted, ${l.activities} activities (${l.distinctKeys} distinct keys, ${l.unmatched} without an event) ` +
    `for ${l.calls} calls [${mark(l.activities === l.calls && l.distinctKeys === l.calls && l.unmatched === 0)}]; import done at ${l.importDoneSeconds} s, ` +
    `first call ended at ${l.firstCallEndSeconds} s from the spawn; ${l.seconds} s in all; dialer 429s ${l.dialerCalls429}`);
  console.log(line);
  const m = t.memory;
  console.log(`memory            mirroring daemon peak RSS (VmHWM) ${m.peakRssMb} MB (sampled peak ${m.sampledPeakRssMb} MB, after start ${m.rssAfterStartMb} MB, ` +
    `at the end ${m.rssAtEndMb} MB); V8 heap at the end ${m.heapAtEnd.heapUsedMb} MB used of ${m.heapAtEnd.heapTotalMb} MB, external ${m.heapAtEnd.externalMb} MB`);
  console.log(`                  lag daemon peak RSS ${l.daemonPeakRssMb} MB; this process (server, stand-in, polls) ${r.benchPeakRssMb} MB`);
  if (t.cpuProfile) {
    console.log(`${line}\nmirroring daemon CPU profile: ${t.cpuProfile.totalMs} ms sampled (self time; includes idle)`);
    for (const p of t.cpuProfile.places) console.log(`  ${String(p.pct).padStart(5)}%  ${String(p.ms).padStart(9)} ms  ${p.place}`);
    console.log('  hottest functions:');
    for (const f of t.cpuProfile.functions) console.log(`  ${String(f.pct).padStart(5)}%  ${String(f.ms).padStart(9)} ms  ${f.name}`);
  }
}

// ------------------------------------------------------------------------------------- the list scenario

// list: issue 18 §2, a HubSpot list of `--list-members` members whose work grows with what changed.
// The stand-in (its requestsPer10Seconds = the daemon's = `--hubspot-rate`) holds the list's members and
// `--other-members` more contacts for a second sync (its own list, empty at first, its own dialer key and campaign).
// 1. The first run imports the list (join order + batch reads; timed, for the record).
// 2. An idle incremental run (queued as the schedule queues one): HubSpot requests it sends.
// 3. The full comparison (queued as its schedule does): members compared per second against the binding ceiling,
//    requestsPer10Seconds / 10 × 250 members a page (the membership read is the comparison's only HubSpot cost).
// 4. Webhook → number dialable: `--webhooks` contacts created, added to the list and announced by a signed
//    contact.creation webhook, one every `--pause-ms`, until the number is listed in the campaign: first with the
//    daemon otherwise idle, then again while the second sync runs its full import of `--other-members` contacts
//    (added to its list just before).
interface ListPhase { seconds: number; hubspotRequests: Record<string, number>; run: RunRecord | null }

async function runList(): Promise<void> {
  const files = filesOf('list');
  const redisPrefix = testPrefix(REDIS_URL);
  redisPrefixes.push(redisPrefix);
  const members = opts['list-members'];
  const others = opts['other-members'];
  if (members + others + 2 * opts.webhooks > VALID_PHONE_COUNT) throw new Error(`--list-members + --other-members + 2 × --webhooks must be at most ${VALID_PHONE_COUNT}`);
  const rate = opts['hubspot-rate'];
  store = new Store(':memory:');
  server = await startServer(store, { rateLimit: DEFAULT_RATE_LIMIT });
  const srv = server;
  const account = await srv.consolePost<{ id: string }>('/accounts', { name: 'Bench list', timezone: 'America/New_York' });
  const campaign = async (name: string) => (await srv.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, { name, type: 'Dynamic', state: 'Active' })).id;
  const listCampaign = await campaign('HubSpot list');
  const otherCampaign = await campaign('Other sync');
  const key = (name: string, roles: string[]) => srv.consolePost<{ token: string }>(`/accounts/${account.id}/apiKeys`, { name, roles }).then((k) => k.token);
  const listToken = await key('list sync', ['CampaignNumberAdmin']);
  const otherToken = await key('other sync', ['CampaignNumberAdmin']);
  const pollKeys = await Promise.all(Array.from({ length: Math.max(2, Math.ceil(1000 / opts['poll-ms'] / POLL_KEY_RATE)) }, (_, i) => key(`poll ${i}`, ['CampaignReader'])));
  let nextKey = 0;
  const listed = async (e164: string): Promise<boolean> => {
    const params = new URLSearchParams({ range: '[0,0]', filter: JSON.stringify({ number: e164.slice(1) }) });
    const res = await fetch(`${srv.base}/v1/accounts/${account.id}/campaigns/${listCampaign}/numbers?${params}`, { headers: { authorization: `Bearer ${pollKeys[nextKey++ % pollKeys.length]}` } });
    await res.arrayBuffer();
    return res.status === 200 && Number(res.headers.get('x-total-count')) > 0;
  };

  const tSeed = now();
  standIn = await startHubSpotStandIn({ contacts: members + others, seed: 1, clientSecret: CLIENT_SECRET, requestsPer10Seconds: rate });
  const hs = standIn;
  const all = hs.contacts();
  const listId = hs.lists.create('Call this week', all.slice(0, members).map((c) => c.id));
  const otherListId = hs.lists.create('Other campaign', []);
  console.log(`HubSpot stand-in: ${members + others} contacts, a list of ${members}, seeded in ${round((now() - tSeed) / 1000, 2)} s (${rate} requests per 10 s)`);

  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const source = (list: string) => ({
    type: 'hubspot', baseUrl: hs.url, accessToken: '${BENCH_HUBSPOT_TOKEN}', clientSecret: '${BENCH_HUBSPOT_CLIENT_SECRET}',
    requestsPer10Seconds: rate, selection: { listId: list }, compareEvery: '24h',
  });
  const mapping = { phone: 'phone', defaultCountry: 'US', variables: { firstName: 'firstname', company: 'company' } };
  const raw = {
    redis: { url: REDIS_URL, prefix: redisPrefix.prefix },
    http: { host: '127.0.0.1', port, publicUrl },
    dialer: { baseUrl: srv.base, accountId: account.id, apiToken: '${BENCH_DIALER_TOKEN}', rateLimit: { perSecond: DIALER.perSecond, burst: DIALER.burst } },
    syncs: [
      // Schedules of a day: the bench queues the runs it measures, as the schedules would.
      { id: SYNC_ID, source: source(listId), campaignId: listCampaign, mapping, schedule: { every: '24h' } },
      { id: 'other', source: source(otherListId), campaignId: otherCampaign, mapping, schedule: { every: '24h' }, dialer: { apiToken: '${BENCH_OTHER_TOKEN}' } },
    ],
    log: { level: 'info' },
  };
  const env = { ...process.env, BENCH_DIALER_TOKEN: listToken, BENCH_OTHER_TOKEN: otherToken, BENCH_HUBSPOT_TOKEN: hs.token, BENCH_HUBSPOT_CLIENT_SECRET: CLIENT_SECRET };
  writeDaemonConfig(files.config, raw, env);
  const redis = benchRedis();
  const keysOf = (syncId: string, campaignId: string) => new SyncKeys(redisPrefix.prefix, syncId, campaignKey(srv.base, account.id, campaignId));
  const keys = keysOf(SYNC_ID, listCampaign);
  const otherKeys = keysOf('other', otherCampaign);
  const syncs = new Queue(new DaemonKeys(redisPrefix.prefix).syncQueue, { connection: redis, prefix: redisPrefix.prefix });
  /** Queues a run as the daemon's schedules do (a flag in the sync's meta, then the deduplicated pull job); waits for it to finish. */
  const queueRun = async (k: SyncKeys, syncId: string, flag: string, wait = true): Promise<RunRecord | null> => {
    const before = await redis.llen(k.runs);
    await redis.hset(k.meta, flag, '1');
    await syncs.add('pull', { syncId, trigger: 'bench' }, { deduplication: { id: `pull-${syncId}`, keepLastIfActive: true } });
    if (!wait) return null;
    return waitRun(k, before);
  };
  const waitRun = async (k: SyncKeys, before: number, timeoutS = opts['import-seconds']): Promise<RunRecord> => {
    const t = now();
    for (;;) {
      if ((await redis.llen(k.runs)) > before) {
        const [id] = await redis.lrange(k.runs, 0, 0);
        const run = await readRun(redis, k.run(id!));
        if (run && run.status !== 'running' && (await redis.hlen(k.batches)) === 0) return run;
      }
      if ((now() - t) / 1000 > timeoutS) throw new Error(`no finished run after ${timeoutS} s; log:\n${logTail(files.log)}`);
      await sleep(100);
    }
  };
  const phase = async (f: () => Promise<RunRecord | null>): Promise<ListPhase> => {
    const before = { ...hs.stats.byRoute };
    const t = now();
    const run = await f();
    const seconds = round((now() - t) / 1000, 2);
    const hubspotRequests: Record<string, number> = {};
    for (const [route, n] of Object.entries(hs.stats.byRoute)) if (n > (before[route] ?? 0)) hubspotRequests[route] = n - (before[route] ?? 0);
    return { seconds, hubspotRequests, run };
  };
  const total = (p: ListPhase) => Object.values(p.hubspotRequests).reduce((a, b) => a + b, 0);

  // 1. The import, from spawning the daemon (its requests all counted).
  const imported = await phase(async () => {
    const t0 = now();
    spawnDaemon(files, env);
    await waitListening(publicUrl, t0, files);
    return waitRun(keys, 0);
  });
  console.log(`import: ${members} members in ${imported.seconds} s (${total(imported)} HubSpot requests)`);
  await waitRun(otherKeys, 0);

  // 2. An idle incremental run; 3. the comparison.
  const idleRun = await phase(() => queueRun(keys, SYNC_ID, 'pullWanted'));
  console.log(`idle incremental run: ${total(idleRun)} HubSpot requests ${JSON.stringify(idleRun.hubspotRequests)}`);
  const compared = await phase(() => queueRun(keys, SYNC_ID, 'compareWanted'));
  const membersPerSecond = members / compared.seconds;
  const ceiling = (rate / 10) * 250;
  console.log(`comparison: ${members} members in ${compared.seconds} s = ${round(membersPerSecond, 0)}/s, ${round((100 * membersPerSecond) / ceiling, 1)}% of ${ceiling}/s`);

  // 4. Webhook → dialable, idle and during the other sync's import.
  let next = members + others;
  const webhookLatency = async (during: string): Promise<{ latencyMs: Stats; timeouts: number }> => {
    const samples: number[] = [];
    let timeouts = 0;
    for (let i = 0; i < opts.webhooks; i++) {
      await sleep(opts['pause-ms']);
      const e164 = validPhone(next++);
      const t = now();
      const c = hs.createContact({ firstname: 'Webhook', lastname: `List ${i}`, email: `list.${during}.${i}@example.com`, phone: e164, company: 'Hooli' });
      hs.lists.add(listId, [c.id]);
      const res = await hs.sendWebhook([{
        eventId: 8_000_000 + next, subscriptionId: 4001, portalId: 62515, appId: 1160452, occurredAt: Date.now(),
        subscriptionType: 'contact.creation', attemptNumber: 0, objectId: Number(c.id), changeSource: 'CRM_UI',
      }], { url: `${publicUrl}/webhooks/${SYNC_ID}` });
      if (res.status !== 200) throw new Error(`webhook: ${res.status} ${res.body}`);
      for (;;) {
        if (await listed(e164)) { samples.push(now() - t); break; }
        if (now() - t > 30_000) { timeouts++; break; }
        await sleep(opts['poll-ms']);
      }
    }
    return { latencyMs: stats(samples), timeouts };
  };
  const idle = await webhookLatency('idle');
  console.log(`webhook → dialable, idle: p50 ${idle.latencyMs.p50} ms, p99 ${idle.latencyMs.p99} ms`);
  hs.lists.add(otherListId, all.slice(members, members + others).map((c) => c.id));
  const otherBefore = await redis.llen(otherKeys.runs);
  await queueRun(otherKeys, 'other', 'fullRequested', false);
  // The other import must have started (its run exists) before the samples count as "during".
  while ((await redis.llen(otherKeys.runs)) === otherBefore) await sleep(20);
  const busy = await webhookLatency('busy');
  const otherRun = await readRun(redis, otherKeys.run((await redis.lrange(otherKeys.runs, 0, 0))[0]!));
  const otherStillRunning = otherRun?.status === 'running';
  console.log(`webhook → dialable, during the other import: p50 ${busy.latencyMs.p50} ms, p99 ${busy.latencyMs.p99} ms (import ${otherStillRunning ? 'still running at the end' : 'ended before the last sample'})`);
  await waitRun(otherKeys, otherBefore);
  await syncs.close();
  const exitCode = await stopDaemon();

  const report = {
    date: new Date().toISOString(), node: process.version, options: opts, seconds: round((now() - startedAt) / 1000, 1), machine: machine(loadAtStart),
    members, imported, idleRun, compared: { ...compared, membersPerSecond: round(membersPerSecond, 0), ceiling, percentOfCeiling: round((100 * membersPerSecond) / ceiling, 1) },
    webhooks: { idle, duringOtherImport: { ...busy, otherMembers: others, otherImportStillRunningAtEnd: otherStillRunning, otherRun } },
    daemonExitCode: exitCode,
  };
  const mark = (ok: boolean) => (ok ? 'ok' : 'MISS');
  const line = printFiguresHeading(118, [`list scenario, total run ${report.seconds} s`, describeMachine(report.machine)]);
  console.log(`list import        ${members} members in ${imported.seconds} s from spawning the daemon, ${total(imported)} HubSpot requests ` +
    `(both syncs' first runs; the other's list is empty) ${JSON.stringify(imported.hubspotRequests)}`);
  console.log(`idle incremental   ${total(idleRun)} HubSpot requests ${JSON.stringify(idleRun.hubspotRequests)} in ${idleRun.seconds} s [target <= 5: ${mark(total(idleRun) <= 5)}]`);
  console.log(`full comparison    ${members} members in ${compared.seconds} s = ${report.compared.membersPerSecond}/s = ${report.compared.percentOfCeiling}% of the ceiling ` +
    `${rate}/10 requests/s × 250 members = ${ceiling}/s [target >= 90%: ${mark(report.compared.percentOfCeiling >= 90)}]; ${JSON.stringify(compared.hubspotRequests)}`);
  for (const [name, w] of [['idle', idle], [`during the import of ${others} contacts by another sync`, busy]] as const) {
    console.log(`webhook→dialable   ${name}: ${w.latencyMs.n} samples, p50 ${w.latencyMs.p50} ms, p90 ${w.latencyMs.p90} ms, p99 ${w.latencyMs.p99} ms, max ${w.latencyMs.max} ms ` +
      `[target p99 < 1000 ms: ${mark(w.latencyMs.n > 0 && w.latencyMs.p99 < 1000 && w.timeouts === 0)}]${w.timeouts ? `; ${w.timeouts} NOT LISTED within 30 s` : ''}`);
  }
  console.log(line);
  writeResults(`daemon-list-${report.date.replace(/[:.]/g, '-')}`, report);
}

// ------------------------------------------------------------------------------------- the Salesforce scenario
//
// salesforce: `--members` members of a Salesforce Campaign (the stand-in seeds 60% of its people into its first
// Campaign, so it is seeded with members / 0.6 Leads and Contacts, each with up to three phone fields, 12% Do Not
// Call) imported by a full run of a `salesforce` sync (client credentials, `--sf-rate` requests/s) into a Dynamic
// campaign of the reference server (default rate limit, manual clock, `--agents` agents, one attempt a number).
// 1. Import: numbers/s from the daemon listening until the campaign holds every number the members have (Do Not Call
//    ones left out; from spawning it too), against the binding ceiling min(Salesforce read = requests/s × 2,000
//    records a query page × numbers per member, dialer write = requests/s × 1,000 numbers a request); and the API
//    requests the import spent, per 1,000 contacts (the figure Salesforce admins ask first).
// 2. Tasks: the clock advanced until `--sf-calls` call-detail records exist, then a daemon with the mirror (every 1 s,
//    Tasks upserted on the external-ID field, 200 a request) in its own process: Tasks/s from the daemon listening to
//    the last Task, against the ceiling requests/s × 200; API requests per 1,000 calls; every record one Task by its key.

async function runSalesforce(): Promise<void> {
  const files = filesOf('salesforce');
  const mirrorFiles = filesOf('salesforce-mirror');
  const redisPrefix = testPrefix(REDIS_URL);
  redisPrefixes.push(redisPrefix);
  store = new Store(':memory:');
  // When each request adding numbers reached the server, and its status: where the import's time goes.
  const adds: { at: number; status: number }[] = [];
  server = await startServer(store, { rateLimit: DEFAULT_RATE_LIMIT }, (app) => {
    app.addHook('onResponse', async (request, reply) => {
      if (request.method === 'POST' && request.url.split('?')[0]!.endsWith('/numbers')) adds.push({ at: now() - reply.elapsedTime, status: reply.statusCode });
    });
  });
  const srv = server;
  const { account, campaign, daemonToken, readToken, campaignUrl, count } = await callingCampaign(srv, 'Bench Salesforce', 'Salesforce members');

  const people = Math.ceil(opts.members / 0.6);
  const tSeed = now();
  sfStandIn = await startSalesforceStandIn({ contacts: Math.ceil(people / 2), leads: Math.floor(people / 2), seed: 1, dailyApiRequests: 5_000_000 });
  const sf = sfStandIn;
  const sfCampaign = sf.records('Campaign')[0]!.values.Id as string;
  const members = sf.records('CampaignMember').filter((m) => m.values.CampaignId === sfCampaign);
  const phones = new Set<string>();
  let dnc = 0;
  for (const m of members) {
    const p = sf.get(m.values.LeadOrContactId as string)!;
    if (p.values.DoNotCall) { dnc++; continue; }
    for (const f of ['Phone', 'MobilePhone', sf.customPhoneField]) {
      const digits = String(p.values[f] ?? '').replace(/\D/g, '');
      if (digits) phones.add(digits.length === 10 ? `1${digits}` : digits);
    }
  }
  const expected = phones.size;
  console.log(`Salesforce stand-in: ${people} people seeded in ${round((now() - tSeed) / 1000, 2)} s; Campaign ${sfCampaign}: ${members.length} members (${dnc} Do Not Call), ${expected} numbers to import`);

  const sync = {
    id: 'salesforce-bench', campaignId: campaign.id,
    source: {
      type: 'salesforce', loginUrl: sf.url, clientId: sf.clientId, auth: { flow: 'client_credentials', clientSecret: '${BENCH_SF_SECRET}' },
      orgId: sf.orgId, selection: { campaignId: sfCampaign }, requestsPerSecond: opts['sf-rate'], taskExternalIdField: sf.taskExternalIdField,
    },
    mapping: { phone: ['Phone', 'MobilePhone', sf.customPhoneField], defaultCountry: 'US', variables: { firstName: 'FirstName', lastName: 'LastName' } },
    schedule: { every: '24h' },
  };
  const daemonConfig = (port: number, mirror: boolean) => ({
    ...operatorBlocks({ url: REDIS_URL, prefix: redisPrefix.prefix }, port, srv.base, account.id, MIRROR_TZ),
    syncs: [{ ...sync, ...(mirror ? { mirror: { every: '1s' } } : {}) }],
    log: { level: 'info' },
  });
  const env = { ...process.env, BENCH_DIALER_TOKEN: daemonToken, BENCH_SF_SECRET: 'sf-client-secret' };

  // 1. Import ----------------------------------------------------------------------------------------------------
  const port = await freePort();
  writeDaemonConfig(files.config, daemonConfig(port, false), env);
  const apiBefore = sf.stats.apiRequests;
  const t0 = now();
  const pid = spawnDaemon(files, env).pid!;
  const rss = sampleRss(pid);
  const readySeconds = await waitListening(`http://127.0.0.1:${port}`, t0, files);
  let numbers = 0;
  let firstNumberSeconds = 0;
  let lastPrint = now();
  for (;;) {
    const n = await count('numbers');
    const t = (now() - t0) / 1000;
    if (n !== null) numbers = n;
    if (numbers > 0 && !firstNumberSeconds) firstNumberSeconds = round(t, 2);
    if (now() - lastPrint >= 5_000 || numbers >= expected) {
      lastPrint = now();
      console.log(`  ${t.toFixed(1).padStart(6)} s: ${String(numbers).padStart(7)} numbers (${Math.round(numbers / t)}/s overall)`);
    }
    if (numbers >= expected) break;
    if (t > opts['import-seconds']) throw new Error(`import not done after ${opts['import-seconds']} s: ${numbers} of ${expected}; log:\n${logTail(files.log)}`);
    await sleep(50); // the reader's own key: 20 requests/s at most, under its rate limit, and the end seen within 50 ms
  }
  const seconds = (now() - t0) / 1000;
  const daemonPeakRss = rss.stop();
  const apiRequests = sf.stats.apiRequests - apiBefore;
  const numbersPerMember = expected / members.length;
  const ceiling = {
    salesforceRead: Math.round(opts['sf-rate'] * 2000 * numbersPerMember),
    dialerWrite: DIALER.perSecond * DIALER.maxNumbersPerRequest,
  };
  const binding = Math.min(ceiling.salesforceRead, ceiling.dialerWrite);
  const perSecond = expected / seconds;
  // The import proper: from the daemon listening (its first run queued) to the last number; process start-up (Node
  // loading the daemon's modules) is paid once a process, not once an import.
  const importPerSecond = expected / (seconds - readySeconds);
  const result = {
    members: members.length, doNotCall: dnc, numbers: expected, seconds: round(seconds, 2), readySeconds, firstNumberSeconds,
    numbersPerSecond: round(importPerSecond), numbersPerSecondFromSpawn: round(perSecond),
    ceiling: { ...ceiling, binding, bindingName: binding === ceiling.dialerWrite ? 'dialer write' : 'Salesforce read' },
    percentOfCeiling: round((100 * importPerSecond) / binding, 1), percentOfCeilingFromSpawn: round((100 * perSecond) / binding, 1),
    apiRequests, apiRequestsPer1000Contacts: round((1000 * apiRequests) / members.length, 2), tokensIssued: sf.stats.tokensIssued, queries: sf.stats.queries,
    dialer: {
      addRequests: adds.length, rateLimited429: adds.filter((a) => a.status === 429).length,
      firstAddSeconds: adds.length ? round((adds[0]!.at - t0) / 1000, 2) : null,
      /** From the first request adding numbers to the last: what the key's rate limit allows is 10 a second. */
      addRequestsPerSecond: adds.length > 1 ? round((adds.length - 1) / ((adds.at(-1)!.at - adds[0]!.at) / 1000), 2) : null,
    },
    daemonPeakRssMb: daemonPeakRss, machine: machine(loadAtStart),
  };
  const mark = (ok: boolean) => (ok ? 'ok' : 'MISS');
  const line = printFiguresHeading(118, [`salesforce scenario, ${members.length} Campaign members`, describeMachine(result.machine)]);
  console.log([
    `import:             ${expected} numbers (${round(numbersPerMember, 2)} a member; ${dnc} Do Not Call members left out) in ${result.seconds} s from spawning the daemon (listening after ${readySeconds} s, first number at ${firstNumberSeconds} s)`,
    `  throughput        ${result.numbersPerSecond} numbers/s from the daemon listening to the last number = ${result.percentOfCeiling}% of the binding ceiling ${binding}/s [target >= 90%: ${mark(result.percentOfCeiling >= 90)}]`,
    `                    (${result.ceiling.bindingName}; Salesforce read ${ceiling.salesforceRead}/s, dialer write ${ceiling.dialerWrite}/s); from spawning it: ${result.numbersPerSecondFromSpawn}/s = ${result.percentOfCeilingFromSpawn}%`,
    `  dialer            ${result.dialer.addRequests} requests adding numbers (${result.dialer.rateLimited429} answered 429); the first at ${result.dialer.firstAddSeconds} s, then ${result.dialer.addRequestsPerSecond}/s to the last (the key's limit: ${DIALER.perSecond}/s)`,
    `  Salesforce API    ${apiRequests} requests (${result.queries} SOQL ${result.queries === 1 ? 'query' : 'queries'} with its nextRecordsUrl pages, ${result.tokensIssued} sign-in) = ${result.apiRequestsPer1000Contacts} per 1,000 contacts`,
    `  daemon peak RSS   ${daemonPeakRss} MB`,
  ].join('\n'));
  await stopDaemon();

  // 2. Tasks, through the mirror ---------------------------------------------------------------------------------
  console.log(`making ${opts['sf-calls']} call-detail records (${opts.agents} agents, one call a number)`);
  const { made, advanceSeconds } = await makeRecords(srv, count, Math.min(opts['sf-calls'], expected));
  const mirrorPort = await freePort();
  writeDaemonConfig(mirrorFiles.config, daemonConfig(mirrorPort, true), env);
  const mk = new SyncKeys(redisPrefix.prefix, sync.id, campaignKey(srv.base, account.id, campaign.id)).mirror;
  const r = benchRedis();
  const apiBeforeTasks = sf.stats.apiRequests;
  const tasksT0 = now();
  const mirrorPid = spawnDaemon(mirrorFiles, env).pid!;
  const mirrorRss = sampleRss(mirrorPid);
  const mirrorReady = await waitListening(`http://127.0.0.1:${mirrorPort}`, tasksT0, mirrorFiles);
  const tReady = now();
  let mirrored = 0;
  lastPrint = now();
  // Progress from the daemon's own count (reading the stand-in's Tasks each time would cost the bench's CPU); the
  // Tasks themselves are checked in the stand-in at the end.
  for (;;) {
    mirrored = Number((await r.hget(mk.meta, 'mirrored')) ?? 0);
    const t = (now() - tasksT0) / 1000;
    if (now() - lastPrint >= 5_000 || mirrored >= made) {
      lastPrint = now();
      console.log(`  ${t.toFixed(1).padStart(6)} s: ${String(mirrored).padStart(7)} calls mirrored (${Math.round(mirrored / Math.max(0.001, (now() - tReady) / 1000))}/s since listening)`);
    }
    if (mirrored >= made) break;
    if (t > opts['import-seconds']) throw new Error(`mirror not done after ${opts['import-seconds']} s: ${mirrored} of ${made}; log:\n${logTail(mirrorFiles.log)}`);
    await sleep(50);
  }
  const tasksSeconds = (now() - tReady) / 1000;
  const tasksFromSpawn = (now() - tasksT0) / 1000;
  const mirrorPeakRss = mirrorRss.stop();
  const taskRequests = sf.stats.apiRequests - apiBeforeTasks;
  await stopDaemon();
  const want = await recordKeys(campaignUrl, readToken, campaign.id);
  const keys = sf.records('Task').map((t) => String(t.values[sf.taskExternalIdField]));
  const distinct = new Set(keys);
  const tasksCeiling = opts['sf-rate'] * SALESFORCE_BATCH;
  const tasksResult = {
    records: made, recordsMadeSeconds: advanceSeconds, tasks: keys.length, duplicates: keys.length - distinct.size,
    missing: [...want].filter((k) => !distinct.has(k)).length, unknown: [...distinct].filter((k) => !want.has(k)).length,
    readySeconds: mirrorReady, seconds: round(tasksSeconds, 2), tasksPerSecond: round(made / tasksSeconds), ceiling: tasksCeiling,
    percentOfCeiling: round((100 * made) / tasksSeconds / tasksCeiling, 1), percentOfCeilingFromSpawn: round((100 * made) / tasksFromSpawn / tasksCeiling, 1),
    apiRequests: taskRequests, apiRequestsPer1000Calls: round((1000 * taskRequests) / made, 2), daemonPeakRssMb: mirrorPeakRss,
  };
  console.log([
    `Tasks:              ${made} call-detail records → ${tasksResult.tasks} Tasks (${tasksResult.duplicates} duplicates, ${tasksResult.missing} missing, ${tasksResult.unknown} unknown) ` +
      `[each record one Task: ${mark(tasksResult.tasks === want.size && tasksResult.duplicates === 0 && tasksResult.missing === 0 && tasksResult.unknown === 0)}]`,
    `  throughput        ${tasksResult.tasksPerSecond} Tasks/s: ${tasksResult.seconds} s from the daemon listening (${mirrorReady} s after spawning it) to the last Task = ${tasksResult.percentOfCeiling}% of the ceiling ${tasksCeiling}/s ` +
      `(${opts['sf-rate']} requests/s × ${SALESFORCE_BATCH}) [target >= 90%: ${mark(tasksResult.percentOfCeiling >= 90)}]; from spawning it: ${tasksResult.percentOfCeilingFromSpawn}%`,
    `  Salesforce API    ${taskRequests} requests = ${tasksResult.apiRequestsPer1000Calls} per 1,000 calls (the Task upserts, the mirror's own sign-in and its sync's incremental read at start)`,
    `  daemon peak RSS   ${mirrorPeakRss} MB`,
    line,
  ].join('\n'));
  writeResults(`daemon-salesforce-${new Date().toISOString().replace(/[:.]/g, '-')}`, { import: result, tasks: tasksResult });
}

// ------------------------------------------------------------------------------------- the fault scenarios
// `hubspot-fault`, `pipedrive`, `salesforce-fault` (and `faults`: all three): the mirror through a Redis killed with SIGKILL, and what each CRM
// is charged for the daemon's work (issues 18 §1 and 22). Per CRM, two runs on fresh everything (a reference server on
// a manual clock, a stand-in, a redis-server of the bench's own with AOF fsync every second, one daemon process):
//   1. The daemon imports the stand-in's contacts (cost per 1,000 contacts imported: the stand-in's requests, and
//      Pipedrive's tokens). Then the bench advances the dialer's clock twice a second so that call-detail records
//      appear at `--fault-percent` of the CRM's write ceiling while the daemon mirrors them (mirror.every 1s): each
//      record's lag is from the advance that made it to its activity in the stand-in (HubSpot: its creation time;
//      Pipedrive: when the bench first saw the call log, polled every 100 ms; Salesforce: the Task's CreatedDate).
//      The run without a fault then changes `--changes` contacts' mapped name in the stand-in, which sends its change
//      webhooks (Salesforce: an Outbound Message per change, as a workflow rule on Contact does) to the daemon (cost
//      per 1,000 contacts changed); the mirror's own status writes (Pipedrive: mirror.statusProperty) come back the
//      same way and must cost nothing.
//      Salesforce: `--fault-records` Contacts, a SOQL selection of all of them, Tasks upserted on the external-ID
//      field 200 a request at `--sf-rate` requests/s (the ceiling: sf-rate × 200 Tasks/s), no statusProperty; its
//      cost is the stand-in's API requests.
//   2. The same with the redis-server killed (SIGKILL) once half the records are mirrored, and restarted on the same
//      port and directory (AOF everysec: the last second may be lost) a second later. With --cluster, both runs are on
//      a six-node Redis Cluster of the bench's own, and the fault kills the master holding the mirror's keys: its
//      replica is promoted, and the old master rejoins as that one's replica (issue 30).
// Figures: total mirror time (first advance to last activity) of the faulted run against the run without a fault
// (target within 1.25×), when the lag was back under 60 s after the restart (target within 60 s), duplicates and
// missing activities (the key in each title against the campaign's records; target 0 and 0).

const FAULT_SYNC_ID = 'fault-bench';
const PD_WEBHOOK = { user: 'bench-hooks', password: 'bench-webhook-password' };
/** The status field the Pipedrive runs' mirror writes (every attempt is final: one attempt per number). */
const PD_STATUS_FIELD = 'dialer_status';

type FaultCrm = 'hubspot' | 'pipedrive' | 'salesforce';

interface FaultRun {
  crm: FaultCrm; fault: boolean; contacts: number; records: number; activities: number;
  importSeconds: number; importRequests: number; importTokens: number;
  mirrorSeconds: number; mirrorRequests: number; mirrorTokens: number; mirrorWebhooks: number; syncRunsWhileMirroring: number;
  lagMs: Stats; lagBeforeFaultMs: Stats | null;
  redisKill: { killedAtSeconds: number; restartedAtSeconds: number; backUnder60sSeconds: number | null; maxLagAfterMs: number} | null;
  changes: { contacts: number; requests: number; tokens: number; runs: number; seconds: number } | null;
  duplicates: number; missing: number; unknown: number;
}

/** A redis-server of the bench's own, persisting to `dir` with AOF fsync every second (a usual production setting). */
async function startOwnRedis(port: number, dir: string): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes',
    '--appendfsync', 'everysec', '--save', '', '--maxmemory-policy', 'noeviction'], { stdio: 'ignore' });
  for (const t0 = now(); ;) {
    const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    probe.on('error', () => {});
    try { await probe.connect(); if ((await probe.ping()) === 'PONG') return child; } catch { /* not yet */ } finally { probe.disconnect(); }
    if (now() - t0 > 30_000) throw new Error(`redis-server on port ${port} did not answer within 30 s`);
    await sleep(50);
  }
}

async function faultRun(crm: FaultCrm, fault: boolean): Promise<FaultRun> {
  const files = filesOf(`${crm}-${fault ? 'fault' : 'plain'}`);
  const n = crm === 'pipedrive' ? opts['pipedrive-records'] : opts['fault-records'];
  const redisDir = mkdtempSync(join(tempDir, 'redis-'));
  const redisPort = await freePort();
  // One redis-server of the bench's own, or (--cluster) a six-node Redis Cluster.
  const cluster = opts.cluster ? await startRedisCluster() : null;
  if (!cluster) ownRedis = await startOwnRedis(redisPort, redisDir);
  const ownRedisUrl = `redis://127.0.0.1:${redisPort}`;
  const simClock = new SimulationClock(Date.parse('2026-03-02T13:00:00Z'));
  store = new Store(':memory:');
  server = await startServer(store, { rateLimit: DEFAULT_RATE_LIMIT, clock: simClock, clockMode: 'manual', seed: 3 });
  const srv = server;
  const { account, campaign, daemonToken, readToken, campaignUrl, count } = await callingCampaign(srv, `Bench ${crm} faults`, 'Faults');
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const hookUrl = `${publicUrl}/webhooks/${FAULT_SYNC_ID}`;

  // The stand-in, its counters, and its activities (key → when it was created or first seen).
  let counters: () => { requests: number; tokens: number; webhooks: number };
  let activities: () => { key: string; at: number | null }[];
  let changeContacts: (k: number) => void;
  let flushWebhooks: () => Promise<void>;
  let source: Record<string, unknown>;
  let mirror: Record<string, unknown>;
  let ceiling: number;
  const seenAt = new Map<string, number>();
  if (crm === 'hubspot') {
    const rate = opts['hubspot-rate'];
    standIn = await startHubSpotStandIn({ contacts: n, seed: 4, searchPerSecond: IMPORT_SEARCH_PER_SECOND, requestsPer10Seconds: rate, clientSecret: CLIENT_SECRET, webhookUrl: hookUrl });
    const hs = standIn;
    counters = () => ({ requests: hs.stats.requests, tokens: 0, webhooks: hs.stats.webhooksDelivered });
    activities = () => hs.calls().map((c) => ({ key: keyInTitle(c.properties.hs_call_title), at: Date.parse(c.createdAt) }));
    changeContacts = (k) => { for (const c of hs.contacts().slice(0, k)) hs.updateContact(c.id, { firstname: `Changed ${c.id}` }); };
    flushWebhooks = () => hs.flushWebhooks();
    source = { type: 'hubspot', baseUrl: hs.url, accessToken: '${BENCH_CRM_TOKEN}', clientSecret: CLIENT_SECRET, searchPerSecond: IMPORT_SEARCH_PER_SECOND, requestsPer10Seconds: rate, pageSize: 200 };
    mirror = { sink: { type: 'source' }, every: '1s' };
    ceiling = (rate / 10) * HUBSPOT_BATCH;
  } else if (crm === 'salesforce') {
    // Each change of a Contact sends an Outbound Message about it, as a workflow rule does; seeding sends none.
    sfStandIn = await startSalesforceStandIn({ contacts: n, leads: 0, seed: 4, dailyApiRequests: 100_000_000, outboundRules: [{ url: hookUrl, objectType: 'Contact' }] });
    const sf = sfStandIn;
    counters = () => ({ requests: sf.stats.apiRequests, tokens: 0, webhooks: sf.outboundDeliveries().length });
    activities = () => sf.records('Task').map((t) => ({ key: String(t.values[sf.taskExternalIdField]), at: sfTime(t.values.CreatedDate) }));
    changeContacts = (k) => { for (const c of sf.records('Contact').slice(0, k)) sf.updateRecord(c.values.Id as string, { FirstName: `Changed ${c.values.Id}` }); };
    flushWebhooks = async () => { await Promise.all(sf.outboundDeliveries().map((d) => d.settled)); };
    source = {
      type: 'salesforce', loginUrl: sf.url, clientId: sf.clientId, auth: { flow: 'client_credentials', clientSecret: '${BENCH_CRM_TOKEN}' }, orgId: sf.orgId,
      selection: { object: 'Contact' }, requestsPerSecond: opts['sf-rate'], taskExternalIdField: sf.taskExternalIdField,
    };
    mirror = { sink: { type: 'source' }, every: '1s' };
    ceiling = opts['sf-rate'] * SALESFORCE_BATCH;
  } else {
    const burst = opts['pipedrive-burst'];
    pdStandIn = await startPipedriveStandIn({ persons: n, seed: 4, burstPer2Seconds: burst, dailyTokens: 100_000_000, webhook: { url: hookUrl, ...PD_WEBHOOK } });
    const pd = pdStandIn;
    counters = () => ({ requests: pd.stats.requests, tokens: pd.stats.tokensUsed, webhooks: pd.stats.webhooksSent });
    activities = () => {
      const logs = pd.callLogs();
      const t = Date.now();
      return logs.map((l) => { const k = keyInTitle(l.subject); if (!seenAt.has(k)) seenAt.set(k, t); return { key: k, at: seenAt.get(k)! }; });
    };
    changeContacts = (k) => { for (const p of pd.persons().slice(0, k)) pd.updatePerson(p.id, { name: `Changed ${p.id}` }); };
    flushWebhooks = () => pd.flushWebhooks();
    source = { type: 'pipedrive', baseUrl: pd.url, apiToken: '${BENCH_CRM_TOKEN}', burstPer2Seconds: burst, dailyTokens: 100_000_000, webhookUser: PD_WEBHOOK.user, webhookPassword: PD_WEBHOOK.password };
    mirror = { sink: { type: 'source' }, every: '1s', statusProperty: PD_STATUS_FIELD };
    // A call log and a status update per record (every attempt is final).
    ceiling = burst / 2 / 2;
  }
  const crmToken = crm === 'hubspot' ? standIn!.token : crm === 'salesforce' ? 'sf-client-secret' : pdStandIn!.apiToken;
  const raw = {
    ...operatorBlocks(cluster ? { cluster: cluster.urls, prefix: 'bench' } : { url: ownRedisUrl, prefix: 'bench' }, port, srv.base, account.id, MIRROR_TZ),
    syncs: [{
      id: FAULT_SYNC_ID, source, campaignId: campaign.id, schedule: { every: '24h' },
      mapping: crm === 'hubspot' ? { phone: 'phone', defaultCountry: 'US', variables: { firstName: 'firstname' } }
        : crm === 'salesforce' ? { phone: ['Phone', 'MobilePhone', sfStandIn!.customPhoneField], defaultCountry: 'US', variables: { firstName: 'FirstName' } }
        : { phone: 'phones', defaultCountry: 'US', variables: { Name: 'name' } },
      mirror,
    }],
    log: { level: 'info' },
  };
  const env = { ...process.env, BENCH_DIALER_TOKEN: daemonToken, BENCH_CRM_TOKEN: crmToken };
  writeDaemonConfig(files.config, raw, env);
  const r: Redis | Cluster = cluster
    ? new Cluster(cluster.ports.map((p) => ({ host: '127.0.0.1', port: p })), { redisOptions: { maxRetriesPerRequest: null }, retryDelayOnFailover: 300, retryDelayOnClusterDown: 300 })
    : new Redis(ownRedisUrl, { maxRetriesPerRequest: null });
  r.on('error', () => {});
  const keys = new SyncKeys('bench', FAULT_SYNC_ID, campaignKey(srv.base, account.id, campaign.id));
  const runCount = async () => r.llen(keys.runs);

  try {
    // 1. The import.
    const tImport = now();
    const c0 = counters();
    spawnDaemon(files, env);
    await waitListening(publicUrl, tImport, files);
    let numbers = 0;
    for (;;) {
      const got = await count('numbers');
      const [runId] = await r.lrange(keys.runs, 0, 0);
      const run = runId ? await readRun(r, keys.run(runId)) : null;
      if (got && run && run.status !== 'running' && (await r.hlen(keys.batches)) === 0) { numbers = got; break; }
      if ((now() - tImport) / 1000 > opts['import-seconds']) throw new Error(`${crm}: import not done after ${opts['import-seconds']} s; log:\n${logTail(files.log)}`);
      await sleep(250);
    }
    const importSeconds = round((now() - tImport) / 1000, 1);
    const c1 = counters();
    console.log(`${crm}${fault ? ' (Redis killed halfway)' : ''}: ${n} contacts → ${numbers} numbers imported in ${importSeconds} s; ` +
      `records made at ${opts['fault-percent']}% of the write ceiling of ${ceiling}/s`);

    // 2. Records made while the daemon mirrors them; Redis killed halfway (fault run).
    const target = (opts['fault-percent'] / 100) * ceiling;
    const ticks: { simMs: number; wallMs: number }[] = [];
    const runsBefore = await runCount();
    const t0 = now();
    const wall0 = Date.now();
    let made = 0;
    let perSimSecond = opts.agents / 30;
    let simulated = 0;
    let killedAt = 0, restartedAt = 0;
    let lastPrint = now();
    let done = 0;
    for (;;) {
      const elapsed = (now() - t0) / 1000;
      if (made < numbers) {
        const want = Math.min(numbers, target * (elapsed + 0.5));
        const step = Math.min(120, Math.max(1, (want - made) / Math.max(1, perSimSecond)));
        if (want > made) {
          await srv.consolePost('/clock/advance', { seconds: step });
          simulated += step;
          ticks.push({ simMs: simClock.now(), wallMs: Date.now() });
          const m = await count('reports/callDetails');
          if (m !== null) { made = m; perSimSecond = Math.max(1, made / simulated); }
        }
      }
      done = activities().length;
      if (fault && !killedAt && done >= numbers / 2) {
        if (cluster) {
          // The master holding the mirror's keys: its replica is promoted; it rejoins as that one's replica.
          const master = await cluster.masterOf(keys.mirror.pending);
          await cluster.kill(master);
          killedAt = now();
          await cluster.healthy();
          await cluster.restart(master);
        } else {
          const exited = new Promise((res) => ownRedis!.once('exit', res));
          ownRedis!.kill('SIGKILL');
          await exited;
          killedAt = now();
          await sleep(1000);
          ownRedis = await startOwnRedis(redisPort, redisDir);
        }
        restartedAt = now();
        console.log(`  ${cluster ? 'the mirroring master' : 'Redis'} killed (SIGKILL) at ${round((killedAt - t0) / 1000, 1)} s with ${done} activities; ` +
          `${cluster ? 'replica promoted and the old master back as its replica' : 'restarted'} at ${round((restartedAt - t0) / 1000, 1)} s`);
      }
      if (done >= numbers && made >= numbers) break;
      if (now() - lastPrint >= 10_000) {
        lastPrint = now();
        console.log(`  ${round(elapsed, 1).toFixed(1).padStart(6)} s: ${made} records, ${done} activities`);
      }
      if (elapsed > opts['import-seconds']) throw new Error(`${crm}: ${done} activities of ${numbers} after ${opts['import-seconds']} s; log:\n${logTail(files.log)}`);
      await sleep(crm === 'pipedrive' ? 100 : 250);
    }
    const tEnd = now();
    const c2 = counters();
    const syncRuns = (await runCount()) - runsBefore;

    // Lag per record: from the advance that made it to its activity.
    const byKey = new Map<string, number>();
    for (let first = 0; ; first += 10_000) {
      const res = await fetch(`${campaignUrl}/reports/callDetails?range=${encodeURIComponent(JSON.stringify([first, first + 9999]))}`, { headers: { authorization: `Bearer ${readToken}` } });
      if (res.status === 429) { await res.arrayBuffer(); await sleep(1000); first -= 10_000; continue; }
      if (res.status !== 200) throw new Error(`call details: ${res.status}`);
      const page = (await res.json()) as { number: string; attempt: number; startedAtLocal: string; endedAtLocal: string }[];
      for (const rec of page) byKey.set(callKey(campaign.id, rec), toUtc(rec.endedAtLocal, MIRROR_TZ));
      if (page.length < 10_000) break;
    }
    const madeAt = (simMs: number) => {
      let lo = 0, hi = ticks.length - 1;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (ticks[mid]!.simMs >= simMs) hi = mid; else lo = mid + 1; }
      return ticks[lo]!.wallMs;
    };
    const seen = new Set<string>();
    let duplicates = 0, unknown = 0;
    const lags: { at: number; lag: number }[] = [];
    for (const a of activities()) {
      if (seen.has(a.key)) { duplicates++; continue; }
      seen.add(a.key);
      const end = byKey.get(a.key);
      if (end === undefined) { unknown++; continue; }
      if (a.at !== null) lags.push({ at: a.at, lag: Math.max(0, a.at - madeAt(end)) });
    }
    const missing = [...byKey.keys()].filter((k) => !seen.has(k)).length;
    let faultFigures: FaultRun['redisKill'] = null;
    if (fault) {
      const restartWall = wall0 + (restartedAt - t0);
      const after = lags.filter((l) => l.at >= restartWall).sort((a, b) => a.at - b.at);
      // From when on every activity's lag stayed under 60 s.
      let lastOver = restartWall;
      for (const l of after) if (l.lag >= 60_000) lastOver = l.at;
      faultFigures = {
        killedAtSeconds: round((killedAt - t0) / 1000, 1), restartedAtSeconds: round((restartedAt - t0) / 1000, 1),
        backUnder60sSeconds: after.length ? round((lastOver - restartWall) / 1000, 1) : null,
        maxLagAfterMs: after.reduce((m, l) => Math.max(m, l.lag), 0),
      };
    }

    // 3. Contacts changed in the CRM (the run without a fault): their change webhooks and the pulls they queue.
    let changes: FaultRun['changes'] = null;
    if (!fault) {
      await flushWebhooks();
      const k = Math.min(opts.changes, numbers);
      const before = counters();
      const runs0 = await runCount();
      const tc = now();
      changeContacts(k);
      await flushWebhooks();
      // Settled: no run running and nothing queued for a second.
      let quiet = 0;
      while (quiet < 4) {
        const [runId] = await r.lrange(keys.runs, 0, 0);
        const run = runId ? await readRun(r, keys.run(runId)) : null;
        const busy = (run?.status === 'running') || (await r.hlen(keys.batches)) > 0 || (await r.llen(keys.inbox)) > 0;
        quiet = busy ? 0 : quiet + 1;
        await sleep(250);
      }
      const after = counters();
      changes = { contacts: k, requests: after.requests - before.requests, tokens: after.tokens - before.tokens, runs: (await runCount()) - runs0, seconds: round((now() - tc) / 1000, 1) };
    }
    const pre = fault ? lags.filter((l) => l.at < wall0 + (killedAt - t0)).map((l) => l.lag) : null;
    return {
      crm, fault, contacts: n, records: byKey.size, activities: seen.size + duplicates,
      importSeconds, importRequests: c1.requests - c0.requests, importTokens: c1.tokens - c0.tokens,
      mirrorSeconds: round((tEnd - t0) / 1000, 1), mirrorRequests: c2.requests - c1.requests, mirrorTokens: c2.tokens - c1.tokens,
      mirrorWebhooks: c2.webhooks - c1.webhooks, syncRunsWhileMirroring: syncRuns,
      lagMs: stats(lags.map((l) => l.lag)), lagBeforeFaultMs: pre ? stats(pre) : null,
      redisKill: faultFigures, changes, duplicates, missing, unknown,
    };
  } finally {
    r.disconnect();
    await closeScenario();
    await cluster?.stop();
    rmSync(redisDir, { recursive: true, force: true });
  }
}

async function runFaults(crms: FaultCrm[]): Promise<void> {
  const results: FaultRun[] = [];
  for (const crm of crms) {
    results.push(await faultRun(crm, false));
    results.push(await faultRun(crm, true));
  }
  const report = { date: new Date().toISOString(), node: process.version, options: opts, seconds: round((now() - startedAt) / 1000, 1), machine: machine(loadAtStart), results };
  printFaultReport(report);
  writeResults(`daemon-faults-${report.date.replace(/[:.]/g, '-')}`, report);
}

function printFaultReport(r: { seconds: number; machine: Machine; results: FaultRun[] }): void {
  const mark = (ok: boolean) => (ok ? 'ok' : 'MISS');
  const line = printFiguresHeading(118, [`fault scenarios, total run ${r.seconds} s`, describeMachine(r.machine)]);
  for (const crm of ['hubspot', 'pipedrive', 'salesforce'] as const) {
    const plain = r.results.find((x) => x.crm === crm && !x.fault);
    const faulted = r.results.find((x) => x.crm === crm && x.fault);
    if (!plain || !faulted) continue;
    const f = faulted.redisKill!;
    const ratio = round(faulted.mirrorSeconds / plain.mirrorSeconds, 2);
    console.log(`${crm.padEnd(10)} ${plain.records} call-detail records made at ${opts['fault-percent']}% of the write ceiling while mirrored; ` +
      (opts.cluster
        ? `on a six-node Redis Cluster, the master holding the mirror's keys SIGKILLed at ${f.killedAtSeconds} s, its replica promoted and the old master back as a replica at ${f.restartedAtSeconds} s`
        : `Redis SIGKILLed at ${f.killedAtSeconds} s, restarted at ${f.restartedAtSeconds} s (AOF everysec)`));
    console.log(`  mirror time   ${plain.mirrorSeconds} s without a fault, ${faulted.mirrorSeconds} s with it: ${ratio}× [target <= 1.25: ${mark(ratio <= 1.25)}]`);
    console.log(`  lag           without a fault p50 ${plain.lagMs.p50} ms, p99 ${plain.lagMs.p99}, max ${plain.lagMs.max}; faulted run before the kill p99 ${faulted.lagBeforeFaultMs?.p99}, ` +
      `after the restart max ${f.maxLagAfterMs} ms, under 60 s from ${f.backUnder60sSeconds} s after the restart [target <= 60: ${mark(f.backUnder60sSeconds !== null && f.backUnder60sSeconds <= 60)}]`);
    for (const x of [plain, faulted]) {
      console.log(`  ${x.fault ? 'faulted' : 'plain  '}       ${x.activities} activities for ${x.records} records: ${x.duplicates} duplicates, ${x.missing} missing, ${x.unknown} of no record ` +
        `[${mark(x.duplicates === 0 && x.missing === 0 && x.unknown === 0)}]; ${x.syncRunsWhileMirroring} contact-sync runs and ${x.mirrorWebhooks} CRM webhooks while mirroring`);
    }
    const per = (v: number, k: number) => round((1000 * v) / Math.max(1, k), 1);
    const c = plain.changes!;
    const unit = crm === 'pipedrive' ? 'tokens' : crm === 'salesforce' ? 'API requests' : 'requests';
    const cost = (req: number, tok: number) => (crm === 'pipedrive' ? `${per(tok, 1)} tokens (${per(req, 1)} requests)` : `${per(req, 1)} ${unit}`);
    console.log(`  ${unit} per 1,000: contacts imported ${cost(plain.importRequests / plain.contacts, plain.importTokens / plain.contacts)}; ` +
      `contacts changed ${cost(c.requests / c.contacts, c.tokens / c.contacts)} (${c.contacts} changed, ${c.runs} runs); ` +
      `calls mirrored ${cost(plain.mirrorRequests / plain.records, plain.mirrorTokens / plain.records)}`);
    console.log(line);
  }
}

try {
  for (const [i, scenario] of scenarios.entries()) {
    if (i > 0) await closeScenario();
    console.log(`\n=== scenario ${scenario}`);
    if (scenario === 'hubspot') await runHubSpot();
    else if (scenario === 'csv') await runCsv();
    else if (scenario === 'list') await runList();
    else if (scenario === 'salesforce') await runSalesforce();
    else if (scenario === 'hubspot-fault') await runFaults(['hubspot']);
    else if (scenario === 'pipedrive') await runFaults(['pipedrive']);
    else if (scenario === 'salesforce-fault') await runFaults(['salesforce']);
    else if (scenario === 'faults') await runFaults(['hubspot', 'pipedrive', 'salesforce']);
    else if (scenario === 'holdings') await runHoldings({ numbers: [...new Set([1_000, opts['holdings-numbers']])], foreign: opts['holdings-foreign'] });
    else if (scenario === 'compliance') await runCompliance({ contacts: opts['compliance-contacts'], days: opts['compliance-days'], stepSeconds: opts['compliance-step'], numbersPerAgent: opts['numbers-per-agent'], attempts: opts['compliance-attempts'], disagree: opts['compliance-disagree'] });
    else await runMirror();
  }
} catch (err) {
  if (!interrupted) console.error(`bench: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  clearTimeout(watchdog);
  await cleanup();
}
