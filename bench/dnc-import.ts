// `./dev bench dnc-import [--contacts 100000 --repeats 5 --listed 0.075 --company 0.005 --marked 0.01 --profile]`: what
// the Do Not Call lists cost an import (issue 45: "an import of 100,000 contacts with the lists on within 5% of the same
// import without them"). One CSV file of `contacts` contacts over 100 area codes (a CSV source: no CRM pacing between
// the daemon and its contacts, so it gives the steadiest figure) is imported into a fresh campaign of a fresh reference
// server (in this process, its clock never advanced: nothing is dialed), by a daemon in this process on a fresh key
// prefix, side by side:
//   a) no Do Not Call list configured (no doNotCallLists; the company's list, which holds every sync whatever the
//      configuration, holds only what the file's CRM marks put there);
//   b) the national registry loaded (a full list for every area code the contacts use, holding `listed` of the
//      contacts' numbers and `fill` other numbers per area code) and the company's list holding `company` of them.
// In both, `marked` of the contacts carry the CRM's Do Not Call mark (a column of the file), as real CRMs' do. b adds
// fewer numbers than a (the lists keep some out): its wall time is also given per number added, which overstates it.
// a and b alternate (a b, then b a, ...) `repeats` times after an unreported warm-up of each, so load that comes and
// goes on the shared machine hits both; each run's wall time is from the run asked for to the last number added (the
// reference server's own hook counts what it adds, no polling), beside the CPU time of this process (daemon and
// server) over the same span, which other work on the machine moves less. Then the campaign is read whole and must
// hold exactly the contacts' numbers no list or mark keeps out. Printed per variant: wall and CPU time (median,
// min–max), numbers added, numbers kept out by list, requests to the dialer; b's overhead over a (per round, median).
// Then what each piece of the check costs per plan chunk of 1,000 numbers, measured alone on the same Redis, as b and as
// a do it: the gate's lookups, the evidence and kept-out writes after a plan, the CRM marks' recording. `--profile`
// samples this process's CPU during the measured imports and prints the places where b and a differ most.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import pino from 'pino';
import { generatePeople, seededDoNotCall, validPhone, VALID_PHONE_COUNT } from '../crm-stand-ins/contacts.ts';
import { Daemon } from '../daemon/app.ts';
import { parseConfig } from '../daemon/config.ts';
import { dncInForce, dncListsSchema } from '../daemon/dnc/config.ts';
import { ListCopies } from '../daemon/dnc/copies.ts';
import { DncGate } from '../daemon/dnc/gate.ts';
import { OwnList } from '../daemon/dnc/own-list.ts';
import type { MappedContact } from '../daemon/sync/contacts.ts';
import { afterJudgedPlan, recordCrmMarks } from '../daemon/sync/dnc-check.ts';
import { DaemonKeys, DncKeys, campaignKey } from '../daemon/state/keys.ts';
import { SyncState, type PlanResult } from '../daemon/state/sync-state.ts';
import { SimulationClock } from '../server/clock.ts';
import { Store } from '../server/store/store.ts';
import { REDIS_URL, testPrefix } from '../test/support/daemon.ts';
import { settle } from '../test/support/sync-checks.ts';
import { describeMachine, loadAverage, machine, openAccount, printFiguresHeading, readFlags, round, startServer, tableRow, writeResults } from './support.ts';

const FLAGS = {
  contacts: { def: 100_000, help: 'contacts of the CSV file (one number each, over 100 area codes; at most 1,000,000)' },
  repeats: { def: 5, help: 'imports of each variant measured (a and b alternating)' },
  warmup: { def: 10_000, help: 'contacts of the unreported warm-up import of each variant first (0: none)' },
  listed: { def: '0.075', help: 'b: share of the contacts\' numbers the registry holds' },
  company: { def: '0.005', help: 'b: share of the contacts\' numbers on the company\'s list' },
  marked: { def: '0.01', help: 'a and b: share of the contacts marked Do Not Call in the file (the CRM\'s mark)' },
  fill: { def: 20_000, help: 'b: numbers per area code the registry holds besides the contacts\' (no contact has them)' },
  'max-numbers': { def: 1000, help: 'the daemon\'s dialer.maxNumbersPerRequest' },
  profile: { def: false, help: 'sample this process\'s CPU (V8 profiler, 200 µs) during each measured import: where b spends more than a' },
} as const;
const flags = readFlags(FLAGS, { command: 'dnc-import', example: 'BENCH_CONTACTS=20000', width: 11 });
const share = (name: 'listed' | 'company' | 'marked') => {
  const x = Number(flags[name]);
  if (!(x >= 0 && x < 1)) throw new Error(`--${name} must be a share from 0 to below 1; got ${flags[name]}`);
  return x;
};
const [listedShare, companyShare, markedShare] = [share('listed'), share('company'), share('marked')];
if (flags.contacts < 1000 || flags.contacts > VALID_PHONE_COUNT) throw new Error(`--contacts must be 1,000 to ${VALID_PHONE_COUNT.toLocaleString('en-US')}; got ${flags.contacts}`);
if (flags.repeats < 1) throw new Error('--repeats must be at least 1');
if (flags.warmup > flags.contacts) throw new Error('--warmup must be at most --contacts');
if (flags.fill > 7_990_000) throw new Error('--fill must be at most 7,990,000 (an area code\'s numbers outside the contacts\' exchange 555)');
const loadAtStart = loadAverage();

const TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
const SYNC = 'dnc-import';
const CHUNK = 1000;
const log = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'cds-dnc-import-bench-'));
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const copyDate = isoDay(Date.now() - 86_400_000);

// ------------------------------------------------------------------------------------ the contacts and the lists

// Contact i holds validPhone(i); who is listed, on the company's list or marked is derived from i alone (seeded).
const onRegistry = (i: number) => seededDoNotCall(i, listedShare, 4501);
const onCompany = (i: number) => seededDoNotCall(i, companyShare, 4502);
const markedInCrm = (i: number) => seededDoNotCall(i, markedShare, 4503);

interface Scenario { csv: string; contacts: number; phones: string[]; expected: { a: Set<string>; b: Set<string> } }

/** The CSV file of the first `n` contacts, and the numbers each variant's campaign must end with. */
function scenario(n: number): Scenario {
  const people = generatePeople(n, 1, 0);
  const csv = join(dir, `contacts-${n}.csv`);
  writeFileSync(csv, `id,phone,firstName,company,do_not_call\n${people.map((p) => `${p.index + 1},${p.phone},${p.firstName},${p.company},${markedInCrm(p.index) ? 'true' : ''}`).join('\n')}\n`);
  const phones = people.map((p) => validPhone(p.index));
  const a = new Set(phones.filter((_, i) => !markedInCrm(i)));
  const b = new Set(phones.filter((_, i) => !markedInCrm(i) && !onRegistry(i) && !onCompany(i)));
  return { csv, contacts: n, phones, expected: { a, b } };
}

/** The registry's full lists: one file per area code of the contacts (named AAA.txt), the listed contacts' numbers and `fill` others. */
function registryFiles(n: number): { files: string[]; numbers: number } {
  const byArea = new Map<string, string[]>();
  for (let i = 0; i < n; i++) {
    const digits = validPhone(i).slice(2);
    let lines = byArea.get(digits.slice(0, 3));
    if (!lines) byArea.set(digits.slice(0, 3), lines = []);
    if (onRegistry(i)) lines.push(digits);
  }
  const files: string[] = [];
  let numbers = 0;
  for (const [area, lines] of byArea) {
    // Other numbers of the area code spread over its exchanges (a permutation of its 8,000,000 offsets), never exchange 555.
    for (let k = 0, added = 0; added < flags.fill; k++) {
      const offset = 2_000_000 + ((k * 2_654_435_761) % 8_000_000);
      if (offset >= 5_550_000 && offset < 5_560_000) continue;
      lines.push(`${area}${offset}`);
      added++;
    }
    const file = join(dir, `${area}.txt`);
    writeFileSync(file, `${lines.join('\n')}\n`);
    files.push(file);
    numbers += lines.length;
  }
  return { files, numbers };
}

// ---------------------------------------------------------------------- where the CPU goes (--profile)

interface CallFrame { functionName: string; url: string }
interface Profile { nodes: { id: number; callFrame: CallFrame; children?: number[] }[]; samples: number[]; timeDeltas: number[] }

const session = flags.profile ? new Session() : null;
if (session) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
}

/** The bench's own samples: mostly the profiler's start and stop (the request counter's are few); left out of the busy time. */
const PROFILER = 'bench/dnc-import.ts (the profiler starting and stopping)';

/**
 * A sample's place: the nearest frame of ours from the leaf up (npm packages and Node's modules count for the code of
 * ours that called them): a function of the Do Not Call code (daemon/dnc/, daemon/sync/dnc-check.ts), a daemon file,
 * the reference server (the Do Not Call code's time inside ioredis apart); else (a callback with no caller of ours, such as a Redis reply parsed) the leaf's package.
 */
function placeOf(stack: CallFrame[]): string {
  let via = '';
  for (const f of stack) {
    const own = /\/((?:daemon|server|api|bench|crm-stand-ins)\/.+?)$/.exec(f.url);
    if (!own) {
      via ||= /node_modules\/ioredis\//.test(f.url) ? ', in ioredis' : '';
      continue;
    }
    const file = own[1]!;
    if (file.startsWith('server/')) return 'reference server (server/)';
    if (file.startsWith('bench/')) return PROFILER;
    if (file.startsWith('daemon/dnc/') || file === 'daemon/sync/dnc-check.ts') return `${file} ${f.functionName || '(anonymous)'}${via}`;
    return file;
  }
  for (const f of stack) {
    if (f.functionName === '(idle)' || f.functionName === '(garbage collector)' || f.functionName === '(program)') return f.functionName;
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f.url);
    if (pkg) return `npm ${pkg[1]} (no caller of ours on the stack)`;
    if (f.url.startsWith('node:')) return 'node internals (no caller of ours on the stack)';
  }
  return '(native, no caller with a source)';
}

/** Sampled µs by place, added into `into`. */
function tallyProfile(profile: Profile, into: Map<string, number>): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const places = new Map<number, string>();
  profile.samples.forEach((id, i) => {
    let place = places.get(id);
    if (place === undefined) {
      const stack: CallFrame[] = [];
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) stack.push(byId.get(at)!.callFrame);
      places.set(id, place = placeOf(stack));
    }
    into.set(place, (into.get(place) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
}

const profiles: Record<Variant, Map<string, number>> = { a: new Map(), b: new Map() };

// ------------------------------------------------------------------------------------- one import

type Variant = 'a' | 'b';

interface Run {
  variant: Variant; contacts: number; seconds: number; cpuSeconds: number; added: number;
  keptOut: Record<string, number>; requests: { get: number; post: number; del: number; other: number };
  registryLoadSeconds: number | null;
}

/** What the reference server's hook counts: the daemon's requests, and the numbers added (resolving `done` at the target). */
const counted = { get: 0, post: 0, del: 0, other: 0, added: 0, target: Infinity, done: () => {} };
const countRequests = (app: FastifyInstance) => app.addHook('onResponse', async (req, reply) => {
  if (!req.url.startsWith('/v1/')) return;
  if (req.method === 'GET') counted.get++;
  else if (req.method === 'POST') counted.post++;
  else if (req.method === 'DELETE') counted.del++;
  else counted.other++;
  if (req.method === 'POST' && req.url.split('?')[0]!.endsWith('/numbers') && Array.isArray(req.body) && reply.statusCode < 300) {
    counted.added += req.body.length;
    if (counted.added >= counted.target) counted.done();
  }
});

const registry = registryFiles(flags.contacts);
const companyPhones = Array.from({ length: flags.contacts }, (_, i) => i).filter(onCompany).map(validPhone);

async function importOnce(variant: Variant, s: Scenario): Promise<Run> {
  const store = new Store(':memory:');
  const server = await startServer(store, { clock: new SimulationClock(Date.parse('2026-07-01T16:00:00Z')), seed: 45 }, countRequests);
  const prefix = testPrefix();
  const redis = new Redis(REDIS_URL);
  let d: Daemon | null = null;
  try {
    const account = await openAccount(server, `DNC import ${variant}`, TZ);
    const campaign = await server.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, {
      name: `Import ${variant}`, type: 'Dynamic', state: 'Active', dialer: { mode: 'Power', agents: 1, maxAttempts: 1, callingHours: ALL_DAY },
    });
    let registryLoadSeconds: number | null = null;
    if (variant === 'b') {
      const keys = new DncKeys(prefix.prefix);
      const t = performance.now();
      await new ListCopies(redis, keys, 'national').loadFull(registry.files, copyDate);
      registryLoadSeconds = (performance.now() - t) / 1000;
      for (let i = 0; i < companyPhones.length; i += 10_000) await new OwnList(redis, keys).add(companyPhones.slice(i, i + 10_000), { by: 'bench' });
    }
    const config = parseConfig({
      redis: { url: REDIS_URL, prefix: prefix.prefix }, http: { host: '127.0.0.1', port: 0 },
      dialer: { baseUrl: server.base, accountId: account.id, apiToken: account.token, rateLimit: { perSecond: 1000, burst: 2000 }, maxNumbersPerRequest: flags['max-numbers'], timeZone: TZ },
      syncs: [{
        id: SYNC, campaignId: campaign.id, source: { type: 'csv', path: s.csv }, schedule: { every: '1d' },
        mapping: { id: 'id', phone: 'phone', defaultCountry: 'US', variables: { firstName: 'firstName', company: 'company' }, doNotCall: 'do_not_call' },
      }],
      ...(variant === 'b' ? { doNotCallLists: [{ name: 'national', type: 'registry', folder: dir }] } : {}),
      compliance: { off: 'bench: Do Not Call lists, not calling windows' },
      log: { level: 'error' },
    }, 'bench', {});
    const want = s.expected[variant];
    d = await Daemon.start(config, { log, http: false, schedules: false });
    Object.assign(counted, { get: 0, post: 0, del: 0, other: 0, added: 0, target: want.size });
    const allAdded = new Promise<void>((resolve) => { counted.done = resolve; });
    const t0 = performance.now();
    const profiling = session !== null && s.contacts === flags.contacts;
    if (profiling) await session.post('Profiler.start');
    const cpu0 = process.cpuUsage();
    await d.triggerPull(SYNC, 'bench', true);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([allAdded, new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${variant}: ${counted.added} of ${want.size} numbers added after 600 s`)), 600_000); })]);
    clearTimeout(timer);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    if (profiling) tallyProfile((await session.post('Profiler.stop')).profile as unknown as Profile, profiles[variant]);
    await settle(d, 120_000);
    const requests = { get: counted.get, post: counted.post, del: counted.del, other: counted.other };

    // The campaign, read whole: exactly the numbers no list or mark keeps out, each once.
    const api = `${server.base}/v1/accounts/${account.id}/campaigns/${campaign.id}/numbers`;
    const held: string[] = [];
    for (let first = 0; ; first += 5000) {
      const res = await fetch(`${api}?range=${encodeURIComponent(JSON.stringify([first, first + 4999]))}`, { headers: { authorization: `Bearer ${account.token}` } });
      const page = await res.json() as { number: string }[];
      held.push(...page.map((n) => n.number));
      if (page.length < 5000) break;
    }
    const wrong = held.filter((p) => !want.has(p));
    if (held.length !== want.size || new Set(held).size !== held.length || wrong.length) {
      throw new Error(`${variant}: the campaign holds ${held.length} numbers (${new Set(held).size} distinct, ${wrong.length} it should not, e.g. ${wrong.slice(0, 3).join(' ')}); ${want.size} expected`);
    }
    const keptOut: Record<string, number> = {};
    for (const list of await redis.hvals(d.runtimes.get(SYNC)!.state.keys.dncKeptOut)) keptOut[list] = (keptOut[list] ?? 0) + 1;
    return { variant, contacts: s.contacts, seconds, cpuSeconds, added: held.length, keptOut, requests, registryLoadSeconds };
  } finally {
    await d?.close(5000);
    redis.disconnect();
    await server.app.close();
    await prefix.cleanup();
  }
}

// ------------------------------------------------------------------- each piece alone, per chunk of 1,000

interface Piece { label: string; ms: number[]; cpuMs: number[] }

/**
 * The pieces of the check, each alone on the same Redis, over the file's numbers in plan chunks of 1,000 (file order:
 * every chunk spans the 100 area codes, as the import's do): wall and CPU ms per chunk, as b and as a do them.
 */
async function pieces(s: Scenario): Promise<Piece[]> {
  const prefix = testPrefix();
  const redis = new Redis(REDIS_URL);
  try {
    const keys = new DncKeys(prefix.prefix);
    await new ListCopies(redis, keys, 'national').loadFull(registry.files, copyDate);
    await new OwnList(redis, keys).add(companyPhones, { by: 'bench' });
    const lists = dncListsSchema.parse([{ name: 'national', type: 'registry', folder: dir }]);
    const gates = { b: new DncGate(redis, keys, dncInForce(undefined, undefined, lists)), a: new DncGate(redis, keys, dncInForce(undefined, undefined, [])) };
    // Each variant's evidence under a sync of its own.
    const stateOf = (v: Variant) => new SyncState(redis, new DaemonKeys(prefix.prefix).sync(`${SYNC}-${v}`, campaignKey('http://bench', 'account', `campaign-${v}`)), `${SYNC}-${v}`);
    const states = { a: stateOf('a'), b: stateOf('b') };
    const piece = (label: string): Piece => ({ label, ms: [], cpuMs: [] });
    const out = {
      judgeB: piece('gate.judge: company\'s list + registry (b)'),
      judgeA: piece('gate.judge: the company\'s list alone (a)'),
      afterB: piece('afterJudgedPlan: evidence, kept out (b)'),
      afterA: piece('afterJudgedPlan: evidence, kept out (a)'),
      marks: piece('recordCrmMarks (a and b)'),
    };
    const time = async <T>(p: Piece, f: () => Promise<T>): Promise<T> => {
      const [t, c] = [performance.now(), process.cpuUsage()];
      const r = await f();
      const cpu = process.cpuUsage(c);
      p.ms.push(performance.now() - t);
      p.cpuMs.push((cpu.user + cpu.system) / 1000);
      return r;
    };
    for (let i = 0; i < s.phones.length; i += CHUNK) {
      const chunk = s.phones.slice(i, i + CHUNK);
      for (const v of ['b', 'a'] as const) {
        const judged = await time(v === 'b' ? out.judgeB : out.judgeA, () => gates[v].judge(chunk));
        // What a plan of the chunk reports: the clear numbers added by their contacts, the others kept out.
        const result: PlanResult = {
          batchIds: [], skipped: 0, planned: 0, held: [], released: [],
          added: judged.flatMap((j, k) => (j.verdict === 'clear' ? [{ phone: j.phone, contact: String(i + k + 1) }] : [])),
          keptOut: judged.filter((j) => j.verdict !== 'clear').map((j) => j.phone),
        };
        await time(v === 'b' ? out.afterB : out.afterA, () => afterJudgedPlan(states[v], { gate: gates[v], auditDays: 45, campaignId: `campaign-${v}` }, judged, result, Date.now()));
      }
      const contacts: MappedContact[] = chunk.map((phone, k) => ({
        id: String(i + k + 1), phones: [phone], varValues: [], hash: '', ...(markedInCrm(i + k) ? { doNotCall: true, markedDoNotCall: true } : {}),
      }));
      await time(out.marks, () => recordCrmMarks(gates.b, SYNC, contacts));
    }
    return Object.values(out);
  } finally {
    redis.disconnect();
    await prefix.cleanup();
  }
}

// ------------------------------------------------------------------------------------------- the runs

const median = (xs: number[]) => { const s = [...xs].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2; };
const pct = (x: number) => `${x >= 0 ? '+' : ''}${round(x * 100, 1)}%`;

try {
  const full = scenario(flags.contacts);
  console.log(`CSV file: ${flags.contacts.toLocaleString('en-US')} contacts over 100 area codes; registry: ${registry.files.length} full lists, ` +
    `${registry.numbers.toLocaleString('en-US')} numbers (${flags.fill.toLocaleString('en-US')} per area code besides the contacts'); company's list ${companyPhones.length.toLocaleString('en-US')} numbers`);
  if (flags.warmup) {
    const w = scenario(flags.warmup);
    for (const v of ['a', 'b'] as const) {
      const r = await importOnce(v, w);
      console.log(`warm-up ${v}: ${w.contacts.toLocaleString('en-US')} contacts in ${round(r.seconds, 2)} s (not counted)`);
    }
  }
  const runs: Run[] = [];
  for (let round_ = 0; round_ < flags.repeats; round_++) {
    for (const v of round_ % 2 ? ['b', 'a'] as const : ['a', 'b'] as const) {
      const r = await importOnce(v, full);
      runs.push(r);
      console.log(`round ${round_ + 1} ${v}: ${round(r.seconds, 2)} s (CPU ${round(r.cpuSeconds, 2)} s), ${r.added.toLocaleString('en-US')} numbers added, kept out ${JSON.stringify(r.keptOut)}, ` +
        `dialer requests GET ${r.requests.get} / POST ${r.requests.post} / DELETE ${r.requests.del}${r.registryLoadSeconds !== null ? ` (registry loaded in ${round(r.registryLoadSeconds, 2)} s before)` : ''}; load ${loadAverage()[0]}`);
    }
  }
  const of = (v: Variant) => runs.filter((r) => r.variant === v);
  const [a, b] = [of('a'), of('b')];
  const ratios = a.map((ra, i) => b[i]!.seconds / ra.seconds - 1);
  const cpuRatios = a.map((ra, i) => b[i]!.cpuSeconds / ra.cpuSeconds - 1);
  const perNumber = a.map((ra, i) => (b[i]!.seconds / b[i]!.added) / (ra.seconds / ra.added) - 1);
  const overhead = median(ratios);
  const measured = await pieces(full);
  const chunks = Math.ceil(flags.contacts / CHUNK);

  const rule = printFiguresHeading(118, [`dnc-import: ${flags.contacts.toLocaleString('en-US')} contacts from a CSV file, ${flags.repeats} imports of each variant alternating`, describeMachine(machine(loadAtStart))]);
  const W = 52, C = 32;
  const spread = (rs: Run[], f: (r: Run) => number = (r) => r.seconds) => { const xs = rs.map(f); return `${round(median(xs), 2)} (${round(Math.min(...xs), 2)}–${round(Math.max(...xs), 2)})`; };
  const same = (rs: Run[], f: (r: Run) => string) => { const xs = [...new Set(rs.map(f))]; return xs.length === 1 ? xs[0]! : xs.join(' | '); };
  console.log(tableRow('', ['a) no lists', 'b) registry + company\'s list'], W, C));
  console.log(tableRow('import wall time, s: median (min–max)', [spread(a), spread(b)], W, C));
  console.log(tableRow('CPU of this process (daemon + server), s', [spread(a, (r) => r.cpuSeconds), spread(b, (r) => r.cpuSeconds)], W, C));
  console.log(tableRow('numbers added', [same(a, (r) => r.added.toLocaleString('en-US')), same(b, (r) => r.added.toLocaleString('en-US'))], W, C));
  const kept = (r: Run) => Object.entries(r.keptOut).sort().map(([l, n]) => `${l} ${n.toLocaleString('en-US')}`).join(', ') || '0';
  console.log(tableRow('numbers kept out, by list', [same(a, kept), same(b, kept)], W, C));
  console.log(tableRow('  of which the CRM\'s mark (company\'s list)', [String(full.phones.filter((_, i) => markedInCrm(i)).length), String(full.phones.filter((_, i) => markedInCrm(i)).length)], W, C));
  const reqs = (r: Run) => `${r.requests.get} / ${r.requests.post} / ${r.requests.del}`;
  console.log(tableRow('requests to the dialer (GET / POST / DELETE)', [same(a, reqs), same(b, reqs)], W, C));
  console.log(tableRow('µs per number added: median', [String(round(median(a.map((r) => r.seconds / r.added * 1e6)), 1)), String(round(median(b.map((r) => r.seconds / r.added * 1e6)), 1))], W, C));
  console.log(rule);
  console.log(`b over a, per round (wall time): ${ratios.map(pct).join(', ')}; median ${pct(overhead)} (goal: within +5%); median b / median a: ${pct(median(b.map((r) => r.seconds)) / median(a.map((r) => r.seconds)) - 1)}`);
  console.log(`b over a, per round (CPU of this process, less hit by other work on the machine): ${cpuRatios.map(pct).join(', ')}; median ${pct(median(cpuRatios))}`);
  console.log(`b over a, per number added (b adds fewer: an upper bound): ${perNumber.map(pct).join(', ')}; median ${pct(median(perNumber))}`);
  console.log(`within 5%: ${overhead <= 0.05 ? 'yes' : 'NO'}`);
  console.log(rule);
  console.log(`each piece of the check alone, per plan chunk of ${CHUNK.toLocaleString('en-US')} numbers (${chunks} chunks; the file's order, 100 area codes a chunk):`);
  console.log(tableRow('', ['ms a chunk: p50', `wall × ${chunks}, s`, 'of a\'s wall', `CPU × ${chunks}, s`, 'of a\'s CPU'], 44, 15));
  const aMedian = median(a.map((r) => r.seconds));
  const aCpu = median(a.map((r) => r.cpuSeconds));
  const sum = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / 1000;
  for (const p of measured) {
    console.log(tableRow(p.label, [String(round(median(p.ms), 2)), String(round(sum(p.ms), 2)), pct(sum(p.ms) / aMedian).replace('+', ''),
      String(round(sum(p.cpuMs), 2)), pct(sum(p.cpuMs) / aCpu).replace('+', '')], 44, 15));
  }
  console.log(rule);
  if (session) {
    const places = [...new Set([...profiles.a.keys(), ...profiles.b.keys()])].filter((p) => p !== '(idle)' && p !== PROFILER);
    const per = (v: Variant, p: string) => (profiles[v].get(p) ?? 0) / 1000 / flags.repeats;
    const busy = (v: Variant) => places.reduce((t, p) => t + per(v, p), 0);
    console.log(`CPU samples of this process during the imports (ms an import, 200 µs sampling; a place is the nearest code of ours on the stack): busy a ${round(busy('a'), 0)}, b ${round(busy('b'), 0)}, b − a ${round(busy('b') - busy('a'), 0)}`);
    console.log(tableRow('', ['a ms', 'b ms', 'b − a ms'], 70, 12));
    for (const p of places.sort((x, y) => Math.abs(per('b', y) - per('a', y)) - Math.abs(per('b', x) - per('a', x))).slice(0, 18)) {
      console.log(tableRow(p.length > 69 ? `${p.slice(0, 66)}...` : p, [String(round(per('a', p), 0)), String(round(per('b', p), 0)), String(round(per('b', p) - per('a', p), 0))], 70, 12));
    }
    console.log(rule);
  }
  writeResults(`dnc-import-${new Date().toISOString().replace(/[:.]/g, '-')}`, {
    date: new Date().toISOString(), node: process.version, options: flags, machine: machine(loadAtStart), registry: { files: registry.files.length, numbers: registry.numbers },
    runs, overhead: { perRound: ratios, median: overhead, cpuPerRound: cpuRatios, perNumberAdded: perNumber }, pieces: measured.map((p) => ({ label: p.label, msPerChunk: median(p.ms), totalSeconds: p.ms.reduce((x, y) => x + y, 0) / 1000, cpuSeconds: p.cpuMs.reduce((x, y) => x + y, 0) / 1000 })),
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(process.exitCode ?? 0);
