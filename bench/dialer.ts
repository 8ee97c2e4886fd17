// `./dev bench dialer [--numbers 1000000 ...]`: runs a Static campaign of `--numbers` numbers to Finished on the
// manual simulation clock and prints how fast the simulated dialer goes.
//
// Starts the server in this process (buildServer on 127.0.0.1, manual clock from 2026-01-05T09:00:00Z, a fixed
// seed, rate limit off, SQLite in memory or `--db file` in a temp directory), creates an account (UTC), a
// CampaignAdmin key and a Static Draft campaign through the console, loads the numbers through the console's
// POST .../numbers (`--batch` per request), activates the campaign with the API, then advances the clock with
// POST /console/clock/advance until the campaign is Finished (or `--max-seconds` of wall time pass). Prints wall
// and simulated time, calls, calls and events per real second, final status counts, peak RSS (sampled every 50 ms
// on a worker thread, so a long clock advance blocking the event loop is still sampled) and cheap correctness
// checks. `--numbers 20000,1000000` runs each size in turn, each on a fresh server. Every flag may also be given
// as BENCH_<FLAG> in the environment (BENCH_NUMBERS=20000); `--help` lists them. Results go to
// bench/results/dialer.json. `--sql-profile` also times every SQL statement the server runs (adds a little
// overhead) and prints where the time went.
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StatementSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { NUMBER_DETAIL_STATUSES, type NumberDetailStatus } from '../api/enums.ts';
import type { Campaign } from '../api/records.ts';
import { SimulationClock } from '../server/clock.ts';
import type { Database } from '../server/store/db.ts';
import { Store } from '../server/store/store.ts';
import {
  MB, NUMBER_SPACE, describeMachine, loadAverage, machine, openAccount, phone, printFiguresHeading, readFlags, round, sqliteFilesMb,
  startServer, tableRow, writeResults, type FlagValues, type Machine,
} from './support.ts';

// ---------------------------------------------------------------------------------------------- options

/** The campaign size unless --numbers says otherwise (1M: ~1 min loading + ~1.5 min dialing on 2 shared cores). */
const DEFAULT_NUMBERS = 1_000_000;

const FLAGS = {
  numbers: { def: String(DEFAULT_NUMBERS), help: 'numbers in the Static campaign; a comma list (20000,1000000) runs each in turn' },
  agents: { def: 2_000, help: 'agents of the campaign (Power mode, 1 line per agent)' },
  attempts: { def: 2, help: 'maxAttempts of the campaign' },
  seed: { def: 42, help: 'seed of the dialer\'s random draws' },
  batch: { def: 100_000, help: 'numbers per console POST .../numbers request (at most 100000)' },
  'step-seconds': { def: 600, help: 'largest simulated seconds per POST /console/clock/advance (steps shrink to ~250 ms of wall time each)' },
  'max-seconds': { def: 900, help: 'wall-time cap of the dialing loop of each run' },
  'max-sim-days': { def: 60, help: 'simulated-time cap of the dialing loop of each run' },
  'progress-seconds': { def: 10, help: 'wall seconds between progress lines' },
  'watchdog-seconds': { def: 0, help: 'abort everything (and clean up) after this many seconds; 0: runs x (max-seconds + 600)' },
  db: { def: ':memory:', help: '"file": an SQLite file in a temp directory (removed at the end)' },
  'sql-profile': { def: false, help: 'time every SQL statement the server runs and print the top ones' },
} as const;

interface Options extends Omit<FlagValues<typeof FLAGS>, 'numbers' | 'db' | 'sql-profile'> {
  numbers: number[];
  db: 'memory' | 'file';
  sqlProfile: boolean;
}

function readOptions(): Options {
  const { numbers: numbersRaw, db: dbRaw, 'sql-profile': sqlProfile, ...out } =
    readFlags(FLAGS, { command: 'dialer', example: 'BENCH_NUMBERS=20000', width: 18 });
  const numbers = numbersRaw.split(',').map((s) => Number(s.trim().replaceAll('_', '')));
  if (!numbers.every((n) => Number.isInteger(n) && n >= 1 && n <= NUMBER_SPACE)) {
    throw new Error(`--numbers must be integers 1..${NUMBER_SPACE} (a comma list for several runs); got ${numbersRaw}`);
  }
  if (!['memory', ':memory:', 'file'].includes(dbRaw)) throw new Error(`--db must be ":memory:" (default) or "file"; got ${dbRaw}`);
  if (out.batch < 1 || out.batch > 100_000) throw new Error('--batch must be 1..100000');
  if (out.agents < 1 || out.agents > 10_000) throw new Error('--agents must be 1..10000');
  if (out.attempts < 1 || out.attempts > 20) throw new Error('--attempts must be 1..20');
  if (out['step-seconds'] < 1) throw new Error('--step-seconds must be >= 1');
  if (out['progress-seconds'] < 1) throw new Error('--progress-seconds must be >= 1');
  if (out['watchdog-seconds'] === 0) out['watchdog-seconds'] = numbers.length * (out['max-seconds'] + 600);
  return { ...out, numbers, db: dbRaw === 'file' ? 'file' : 'memory', sqlProfile };
}

// ------------------------------------------------------------------------------------- measurements

const fmt = (x: number) => Math.round(x).toLocaleString('en-US');
/** Wall time a clock step aims at. */
const STEP_TARGET_MS = 250;
const ALL_DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const CLOCK_START = '2026-01-05T09:00:00Z';

function duration(seconds: number): string {
  const s = Math.round(seconds);
  const d = Math.floor(s / 86_400), h = Math.floor((s % 86_400) / 3600), m = Math.floor((s % 3600) / 60);
  return `${d ? `${d}d ` : ''}${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/**
 * A worker thread that samples the process's RSS every 50 ms into shared memory (the main thread may be busy in
 * one long clock advance), and is the watchdog: past the deadline it writes to stderr straight to the file
 * descriptor, removes the temp directory and ends the process (a blocked main thread could do neither).
 */
class Sampler {
  private readonly shared = new Int32Array(new SharedArrayBuffer(8));
  private readonly worker: Worker;

  constructor(watchdogSeconds: number, tempDir: string) {
    const source = `
      const { workerData } = require('node:worker_threads');
      const { writeSync, rmSync } = require('node:fs');
      const peak = workerData.shared;
      const deadline = Date.now() + workerData.watchdogSeconds * 1000;
      setInterval(() => {
        const kb = Math.round(process.memoryUsage.rss() / 1024);
        if (kb > Atomics.load(peak, 0)) Atomics.store(peak, 0, kb);
        if (Date.now() > deadline) {
          writeSync(2, 'bench: still running after ' + workerData.watchdogSeconds + ' s (--watchdog-seconds); aborting\\n');
          try { rmSync(workerData.tempDir, { recursive: true, force: true }); } catch {}
          process.kill(process.pid, 'SIGKILL');
        }
      }, 50);`;
    this.worker = new Worker(source, { eval: true, workerData: { shared: this.shared, watchdogSeconds, tempDir } });
    this.worker.unref();
  }

  /** Peak RSS in MB since the last reset. */
  get peakMb(): number {
    return round(Math.max(Atomics.load(this.shared, 0) * 1024, process.memoryUsage.rss()) / MB);
  }

  reset(): void {
    Atomics.store(this.shared, 0, 0);
  }

  stop(): Promise<number> {
    return this.worker.terminate();
  }
}

/** Optional (--sql-profile): time per SQL statement, wrapped around the store's cached statements and exec. */
class SqlProfile {
  readonly stats = new Map<string, { calls: number; ms: number }>();

  constructor(db: Database) {
    const patched = new WeakSet<StatementSync>();
    const statement = db.statement.bind(db);
    db.statement = (sql: string): StatementSync => {
      const s = statement(sql);
      if (!patched.has(s)) {
        patched.add(s);
        for (const m of ['run', 'get', 'all'] as const) {
          const orig = s[m].bind(s) as (...a: unknown[]) => unknown;
          (s as unknown as Record<string, unknown>)[m] = (...a: unknown[]) => this.time(sql, () => orig(...a));
        }
      }
      return s;
    };
    const exec = db.sqlite.exec.bind(db.sqlite);
    db.sqlite.exec = (sql: string) => this.time(sql, () => exec(sql));
  }

  private time<T>(sql: string, fn: () => T): T {
    const t = performance.now();
    try {
      return fn();
    } finally {
      const ms = performance.now() - t;
      let e = this.stats.get(sql);
      if (!e) this.stats.set(sql, (e = { calls: 0, ms: 0 }));
      e.calls++;
      e.ms += ms;
    }
  }

  reset(): void {
    this.stats.clear();
  }

  top(n: number): { sql: string; calls: number; totalMs: number; meanUs: number }[] {
    return [...this.stats.entries()]
      .map(([sql, e]) => ({ sql: sql.replace(/\s+/g, ' ').trim(), calls: e.calls, totalMs: round(e.ms), meanUs: round((e.ms * 1000) / e.calls, 2) }))
      .sort((a, b) => b.totalMs - a.totalMs)
      .slice(0, n);
  }
}

/**
 * Wall time of every outermost store transaction (a clock chunk is one): how long the event loop is held
 * at a stretch while the clock advances.
 */
class TransactionTimes {
  private ms: number[] = [];

  constructor(db: Database) {
    const transaction = db.transaction.bind(db);
    let depth = 0;
    db.transaction = <T>(fn: () => T): T => {
      if (depth++) {
        try { return transaction(fn); } finally { depth--; }
      }
      const t = performance.now();
      try {
        return transaction(fn);
      } finally {
        depth--;
        this.ms.push(performance.now() - t);
      }
    };
  }

  reset(): void {
    this.ms = [];
  }

  summary(): { count: number; meanMs: number; p99Ms: number; maxMs: number } {
    const sorted = [...this.ms].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
    return {
      count: sorted.length, meanMs: round(sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length), 2),
      p99Ms: round(at(0.99), 1), maxMs: round(sorted.at(-1) ?? 0, 1),
    };
  }
}

// ------------------------------------------------------------------------------------------ a run

interface Progress { wallSeconds: number; simSeconds: number; events: number; calls: number; stepSeconds: number; statuses: Record<string, number> }

interface RunResult {
  numbers: number;
  db: string;
  settings: Record<string, unknown>;
  load: { seconds: number; numbersPerSecond: number; requests: number; created: number; rejected: number; generateSeconds: number };
  dialing: {
    finished: boolean; stoppedBy: 'finished' | 'wall-time cap' | 'simulated-time cap'; wallSeconds: number; cpuSeconds: number;
    steps: number; lastStepSeconds: number; clockAdvancedSeconds: number;
    startedAt: string | null; endedAt: string | null; simulatedSeconds: number;
    calls: number; callsPerRealSecond: number; eventsApplied: number; eventsPerRealSecond: number; pendingEventsAtEnd: number;
    simulatedSecondsPerRealSecond: number;
    transactions: ReturnType<TransactionTimes['summary']>;
  };
  statuses: Record<string, number>;
  reportSeconds: { callDetailsCount: number; numberDetailsCounts: number };
  rssAtStartMb: number;
  peakRssMb: number;
  /** Sizes at the end of the dialing (before the server closes and checkpoints). */
  dbFileMb: { db: number; wal: number; shm: number } | null;
  loadAverage: { start: number[]; end: number[] };
  progress: Progress[];
  sqlProfile: ReturnType<SqlProfile['top']> | null;
  checks: { failed: number; failures: string[]; passed: string[] };
}

async function runOne(n: number, opts: Options, sampler: Sampler, tempDir: string): Promise<RunResult> {
  const loadStart = loadAverage();
  sampler.reset();
  const rssAtStartMb = round(process.memoryUsage.rss() / MB);
  const dbPath = opts.db === 'file' ? join(tempDir, `dialer-${n}.db`) : ':memory:';
  const store = new Store(dbPath);
  const profile = opts.sqlProfile ? new SqlProfile(store.db) : null;
  const transactions = new TransactionTimes(store.db);
  const clock = new SimulationClock(Date.parse(CLOCK_START));
  const server = await startServer(store, { clock, clockMode: 'manual', seed: opts.seed });
  const { app, base, consoleToken, consolePost } = server;
  const failures: string[] = [];
  const passed: string[] = [];
  const check = (ok: boolean, what: string, detail = '') => { if (ok) passed.push(what); else failures.push(`${what}${detail ? `: ${detail}` : ''}`); };

  try {
    console.log(`\n=== run: ${fmt(n)} numbers, ${base}, SQLite ${dbPath}, seed ${opts.seed}, ${opts.agents} agents, ${opts.attempts} attempts`);
    /** One request; `body` is sent as JSON, `raw` as it is (a JSON text built by hand). */
    const call = async (method: string, path: string, init: { token: string; body?: unknown; raw?: string }) => {
      const body = init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body));
      const res = await fetch(base + path, {
        method, body, headers: { authorization: `Bearer ${init.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 2000)}`);
      return { text, headers: res.headers };
    };

    // 1. account, key, campaign -------------------------------------------------------------------
    const account = await openAccount(server, 'Dialer bench', 'UTC');
    const { token } = account;
    const dialer = {
      mode: 'Power', agents: opts.agents, linesPerAgent: 1, maxAttempts: opts.attempts,
      callingHours: { from: '00:00', to: '23:59', days: ALL_DAYS },
      retryDelaySeconds: { NoAnswer: 600, Busy: 600, CallError: 600, Machine: 600, Abandoned: 600 },
    };
    const campaign = await consolePost<Campaign>(`/accounts/${account.id}/campaigns`, { name: `Static ${n}`, type: 'Static', state: 'Draft', dialer });
    const api = `/v1/accounts/${account.id}/campaigns`;
    const campaignPk = store.db.get<{ pk: number }>('SELECT pk FROM campaigns WHERE id = ?', campaign.id)!.pk;
    const get = async (path: string, params: Record<string, unknown>) => {
      const qs = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, JSON.stringify(v)])).toString();
      return call('GET', `${api}${path}?${qs}`, { token });
    };
    const readCampaign = async () => (JSON.parse((await get('', { filter: { ids: [campaign.id] } })).text) as Campaign[])[0]!;
    const totalOf = async (path: string, filter?: Record<string, unknown>) =>
      Number((await get(`/${campaign.id}${path}`, { range: [0, 0], ...(filter ? { filter } : {}) })).headers.get('x-total-count'));

    // 2. load the numbers ---------------------------------------------------------------------------
    let generateMs = 0, created = 0, rejected = 0, requests = 0;
    const tLoad = performance.now();
    for (let from = 0; from < n; from += opts.batch) {
      const tGen = performance.now();
      const parts: string[] = [];
      for (let i = from; i < Math.min(n, from + opts.batch); i++) parts.push(`{"number":"${phone(i)}"}`);
      const body = `[${parts.join(',')}]`;
      generateMs += performance.now() - tGen;
      const r = JSON.parse((await call('POST', `/console/accounts/${account.id}/campaigns/${campaign.id}/numbers`, { token: consoleToken, raw: body })).text) as
        { created: unknown[]; rejected: unknown[] };
      created += r.created.length;
      rejected += r.rejected.length;
      requests++;
    }
    const loadSeconds = (performance.now() - tLoad) / 1000;
    const load = {
      seconds: round(loadSeconds, 2), numbersPerSecond: Math.round(created / loadSeconds), requests, created, rejected,
      generateSeconds: round(generateMs / 1000, 2),
    };
    console.log(`load: ${fmt(created)} numbers in ${load.seconds} s (${fmt(load.numbersPerSecond)}/s, ${requests} requests of <= ${opts.batch}; ` +
      `client-side body generation ${load.generateSeconds} s), rejected ${rejected}`);
    check(created === n && rejected === 0, 'every number loaded', `created ${created}, rejected ${rejected}`);
    check((await readCampaign()).numbersCount === n, 'numbersCount equals the numbers loaded');

    // 3. activate and advance the clock until Finished -----------------------------------------------
    const active = JSON.parse((await call('PUT', `${api}/${campaign.id}/state`, { token, body: 'Active' })).text) as Campaign;
    check(active.state === 'Active', 'the campaign is Active after PUT .../state');
    profile?.reset();
    transactions.reset();
    const simStart = clock.now();
    const progress: Progress[] = [];
    const snapshot = (wallSeconds: number, events: number, stepSeconds: number): Progress => {
      const calls = store.db.get<{ n: number | null }>('SELECT max(id) AS n FROM call_details')!.n ?? 0;
      const statuses: Record<string, number> = {};
      for (const [k, v] of Object.entries(store.numbers.counts(campaignPk))) if (v) statuses[k] = v;
      return { wallSeconds: round(wallSeconds, 2), simSeconds: Math.round((clock.now() - simStart) / 1000), events, calls, stepSeconds, statuses };
    };
    let step = opts['step-seconds'];
    let events = 0, steps = 0, pending = 0;
    let state = active.state;
    let stoppedBy: RunResult['dialing']['stoppedBy'] = 'finished';
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let lastPrint = t0;
    let last = snapshot(0, 0, step);
    for (;;) {
      const tStep = performance.now();
      const r = await consolePost<{ eventsApplied: number; pendingEvents: number }>('/clock/advance', { seconds: step });
      const stepMs = performance.now() - tStep;
      events += r.eventsApplied;
      pending = r.pendingEvents;
      steps++;
      state = (await readCampaign()).state;
      if (state === 'Finished') break;
      const wall = (performance.now() - t0) / 1000;
      // Aim at ~250 ms of wall time per step (at most double, at least 1 simulated second), so the caps are checked
      // often. They are checked between steps only: a step that runs into a sudden slowdown (the cost of an event
      // jumping 100-fold) overshoots them by that step's time; the watchdog is the hard limit.
      step = Math.max(1, Math.min(opts['step-seconds'], step * 2, Math.round((step * STEP_TARGET_MS) / Math.max(stepMs, 1))));
      if (performance.now() - lastPrint >= opts['progress-seconds'] * 1000) {
        const p = snapshot(wall, events, step);
        progress.push(p);
        const dw = p.wallSeconds - last.wallSeconds;
        console.log(`  [${wall.toFixed(0).padStart(5)} s] sim +${duration(p.simSeconds)}  calls ${fmt(p.calls).padStart(9)} ` +
          `(${fmt((p.calls - last.calls) / dw).padStart(6)}/s now)  events ${fmt(p.events).padStart(10)} (${fmt((p.events - last.events) / dw).padStart(6)}/s)  ` +
          `step ${step} s  rss ${sampler.peakMb} MB  ${Object.entries(p.statuses).map(([k, v]) => `${k} ${fmt(v)}`).join(', ')}`);
        last = p;
        lastPrint = performance.now();
      }
      if (wall > opts['max-seconds']) { stoppedBy = 'wall-time cap'; break; }
      if (clock.now() - simStart > opts['max-sim-days'] * 86_400_000) { stoppedBy = 'simulated-time cap'; break; }
    }
    const wallSeconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const final = snapshot(wallSeconds, events, step);
    progress.push(final);
    const sqlProfile = profile ? profile.top(15) : null;
    const done = await readCampaign();
    const finished = done.state === 'Finished';
    console.log(`dialing: ${finished ? 'Finished' : `NOT finished (${stoppedBy}; state ${done.state})`} after ${round(wallSeconds, 1)} s wall, ` +
      `sim ${duration(final.simSeconds)} on the clock, ${fmt(events)} events`);

    // 4. figures through the API --------------------------------------------------------------------
    const tCount = performance.now();
    const calls = await totalOf('/reports/callDetails');
    const callDetailsCount = (performance.now() - tCount) / 1000;
    const tStatus = performance.now();
    const statuses = {} as Record<NumberDetailStatus, number>;
    for (const s of NUMBER_DETAIL_STATUSES) statuses[s] = await totalOf('/reports/numberDetails', { status: s });
    const numberDetailsCounts = (performance.now() - tStatus) / 1000;
    const simulatedSeconds = done.startedAt && done.endedAt ? (Date.parse(done.endedAt) - Date.parse(done.startedAt)) / 1000 : final.simSeconds;

    // 5. checks -------------------------------------------------------------------------------------
    if (finished) {
      check(done.endedAt !== null, 'a Finished campaign has endedAt');
      const final3 = statuses.Success + statuses.Failure + statuses.Blacklisted;
      check(final3 === n, 'every number ends Success, Failure or Blacklisted',
        `${final3} of ${n}: ${JSON.stringify(statuses)}`);
    }
    const sumAttempts = store.db.get<{ n: number | null }>('SELECT sum(attempts) AS n FROM numbers WHERE campaign_pk = ?', campaignPk)!.n ?? 0;
    check(calls === sumAttempts, 'calls (call-detail records) = sum of attempts', `${calls} calls, ${sumAttempts} attempts`);
    const rows = Object.fromEntries(store.db.all<{ status: string; n: number }>(
      'SELECT status, count(*) AS n FROM numbers WHERE campaign_pk = ? GROUP BY status', campaignPk).map((r) => [r.status, r.n]));
    const mismatched = NUMBER_DETAIL_STATUSES.filter((s) => (rows[s] ?? 0) !== statuses[s]);
    check(mismatched.length === 0, 'X-Total-Count per status (counters) = rows per status',
      mismatched.map((s) => `${s}: header ${statuses[s]}, rows ${rows[s] ?? 0}`).join('; '));
    const badFailures = store.db.get<{ n: number }>(
      `SELECT count(*) AS n FROM numbers WHERE campaign_pk = ? AND status = 'Failure' AND attempts <> ?`, campaignPk, opts.attempts)!.n;
    check(badFailures === 0, `every Failure number has ${opts.attempts} attempts`, `${badFailures} do not`);
    const successCalls = store.db.get<{ n: number }>(
      `SELECT count(*) AS n FROM call_details WHERE campaign_pk = ? AND outcome = 'Success'`, campaignPk)!.n;
    check(successCalls === statuses.Success, 'Success calls = Success numbers', `${successCalls} calls, ${statuses.Success} numbers`);
    check(final.calls === calls, 'call-detail ids are dense (max id = count)', `max id ${final.calls}, count ${calls}`);

    let dbFileMb: { db: number; wal: number; shm: number } | null = null;
    if (opts.db === 'file') {
      const mb = sqliteFilesMb(dbPath);
      dbFileMb = { db: round(mb.db), wal: round(mb.wal), shm: round(mb.shm) };
    }
    return {
      numbers: n, db: dbPath, settings: { dialer, seed: opts.seed },
      load,
      dialing: {
        finished, stoppedBy: finished ? 'finished' : stoppedBy, wallSeconds: round(wallSeconds, 2), cpuSeconds: round((cpu.user + cpu.system) / 1e6, 2),
        steps, lastStepSeconds: step, clockAdvancedSeconds: final.simSeconds,
        startedAt: done.startedAt, endedAt: done.endedAt, simulatedSeconds,
        calls, callsPerRealSecond: Math.round(calls / wallSeconds), eventsApplied: events, eventsPerRealSecond: Math.round(events / wallSeconds),
        pendingEventsAtEnd: pending, simulatedSecondsPerRealSecond: round(final.simSeconds / wallSeconds),
        transactions: transactions.summary(),
      },
      statuses,
      reportSeconds: { callDetailsCount: round(callDetailsCount, 3), numberDetailsCounts: round(numberDetailsCounts, 3) },
      rssAtStartMb,
      peakRssMb: sampler.peakMb,
      dbFileMb,
      loadAverage: { start: loadStart, end: loadAverage() },
      progress,
      sqlProfile,
      checks: { failed: failures.length, failures, passed },
    };
  } finally {
    await app.close();
    await store.close();
    if (opts.db === 'file') for (const ext of ['', '-wal', '-shm']) rmSync(dbPath + ext, { force: true });
  }
}

// ------------------------------------------------------------------------------------------ report

function printReport(runs: RunResult[], opts: Options, totalSeconds: number, m: Machine): void {
  const line = printFiguresHeading(110, [`total ${round(totalSeconds, 1)} s`, `Node ${process.version}`, describeMachine(m),
    `SQLite ${opts.db === 'file' ? 'file in a temp directory' : ':memory:'}`]);
  const w = 38;
  const rows: [string, string[]][] = [];
  const row = (label: string, f: (r: RunResult) => string) => rows.push([label, runs.map(f)]);
  row('numbers', (r) => fmt(r.numbers));
  row('dialer', () => `Power ${opts.agents} agents ${opts.attempts} att.`);
  row('load: seconds (numbers/s)', (r) => `${r.load.seconds} (${fmt(r.load.numbersPerSecond)}/s)`);
  row('finished', (r) => (r.dialing.finished ? 'yes' : `NO: ${r.dialing.stoppedBy}`));
  row('dialing: wall seconds', (r) => String(r.dialing.wallSeconds));
  row('dialing: CPU seconds (CPU/wall)', (r) => `${r.dialing.cpuSeconds} (${round(r.dialing.cpuSeconds / r.dialing.wallSeconds, 2)})`);
  row('simulated: startedAt→endedAt', (r) => duration(r.dialing.simulatedSeconds));
  row('simulated: clock advanced', (r) => `${duration(r.dialing.clockAdvancedSeconds)} (${r.dialing.steps} steps)`);
  row('simulated seconds / real second', (r) => fmt(r.dialing.simulatedSecondsPerRealSecond));
  row('calls (call-detail records)', (r) => fmt(r.dialing.calls));
  row('calls / real second', (r) => fmt(r.dialing.callsPerRealSecond));
  row('events applied', (r) => fmt(r.dialing.eventsApplied));
  row('events / real second', (r) => fmt(r.dialing.eventsPerRealSecond));
  row('pending events at the end', (r) => fmt(r.dialing.pendingEventsAtEnd));
  row('transactions: n, mean/p99/max ms', (r) => {
    const t = r.dialing.transactions;
    return `${fmt(t.count)}, ${t.meanMs} / ${t.p99Ms} / ${t.maxMs}`;
  });
  for (const s of NUMBER_DETAIL_STATUSES) row(`numbers ${s}`, (r) => fmt(r.statuses[s] ?? 0));
  row('callDetails X-Total-Count: s', (r) => String(r.reportSeconds.callDetailsCount));
  row('numberDetails 7 counts: s', (r) => String(r.reportSeconds.numberDetailsCounts));
  row('RSS MB at start of run / peak', (r) => `${r.rssAtStartMb} / ${r.peakRssMb}`);
  if (opts.db === 'file') row('database MB: file / -wal at the end', (r) => `${r.dbFileMb?.db} / ${r.dbFileMb?.wal}`);
  row('load average at start / end', (r) => `${r.loadAverage.start[0]} / ${r.loadAverage.end[0]}`);
  row('checks', (r) => (r.checks.failed ? `${r.checks.failed} FAILED` : `all ${r.checks.passed.length} ok`));
  const cw = Math.max(...rows.flatMap(([, cells]) => cells.map((c) => c.length))) + 3;
  for (const [label, cells] of rows) console.log(tableRow(label, cells, w, cw));
  console.log('(RSS: the whole process, server and client; a later run starts from the footprint an earlier one left)');
  console.log(line);
  // The headline: how long a Static campaign of this size takes from Active to Finished.
  for (const r of runs) {
    console.log(`FIGURE ${fmt(r.numbers)} numbers: ${r.dialing.finished ? '' : 'NOT FINISHED after '}${r.dialing.wallSeconds} s of dialing, ` +
      `${fmt(r.dialing.callsPerRealSecond)} calls/s (${fmt(r.dialing.calls)} calls; longest transaction ${r.dialing.transactions.maxMs} ms)`);
  }
  for (const r of runs) {
    for (const f of r.checks.failures) console.log(`CHECK FAILED (${fmt(r.numbers)}): ${f}`);
    if (r.sqlProfile) {
      const sqlMs = [...r.sqlProfile].reduce((s, x) => s + x.totalMs, 0);
      console.log(`\nSQL profile of the dialing of ${fmt(r.numbers)} numbers (top 15 statements: ${round(sqlMs / 1000, 1)} s of ${r.dialing.wallSeconds} s wall):`);
      console.log(`${'total s'.padStart(9)}${'calls'.padStart(12)}${'mean µs'.padStart(10)}  statement`);
      for (const s of r.sqlProfile) console.log(`${(s.totalMs / 1000).toFixed(2).padStart(9)}${fmt(s.calls).padStart(12)}${s.meanUs.toFixed(1).padStart(10)}  ${s.sql.slice(0, 150)}`);
    }
  }
}

// ------------------------------------------------------------------------------------------ main

const started = performance.now();
const opts = readOptions();
const loadAtStart = loadAverage();
const tempDir = mkdtempSync(join(tmpdir(), 'cdk-bench-dialer-'));
const sampler = new Sampler(opts['watchdog-seconds'], tempDir);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    rmSync(tempDir, { recursive: true, force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
}
console.log(`bench dialer: Node ${process.version}, ${availableParallelism()} CPUs, load average ${loadAtStart.join('/')}`);
console.log(`options: ${JSON.stringify(opts)}`);
const runs: RunResult[] = [];
try {
  for (const n of opts.numbers) runs.push(await runOne(n, opts, sampler, tempDir));
} finally {
  rmSync(tempDir, { recursive: true, force: true });
  await sampler.stop();
}
const totalSeconds = (performance.now() - started) / 1000;
const machineAtEnd = machine(loadAtStart);
printReport(runs, opts, totalSeconds, machineAtEnd);
writeResults('dialer', {
  date: new Date().toISOString(), node: process.version, options: opts, seconds: round(totalSeconds, 1), machine: machineAtEnd, runs,
});
if (runs.some((r) => r.checks.failed || !r.dialing.finished)) process.exitCode = 1;
