// The compliance scenario of `./dev bench daemon` (issue 27 §6): contacts across the US zones (and Puerto Rico,
// Toronto, London), one sync and campaign per window group, dialed over simulated days on the reference server's
// manual clock, once with calling-window rules and once without. Prints calls outside their callee's window, calls
// over a cap, the dialing done inside the windows against the run without rules, and the share of numbers first
// called within their first two windows. With rules, Florida's sync has a mirror, run at every step: it keeps its
// numbers' call starts for the cap and takes out those at their cap with a retry pending (`--compliance-attempts`
// above 3: the dialer's maxAttempts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { overCap } from '../daemon/compliance/cap.ts';
import { locate } from '../daemon/compliance/locate.ts';
import { callingWindow, capFor, DEFAULT_RULE_SET, rulesFor } from '../daemon/compliance/window.ts';
import { Daemon } from '../daemon/app.ts';
import { parseConfig } from '../daemon/config.ts';
import { toUtc } from '../daemon/local-time.ts';
import { mirrorRun } from '../daemon/mirror/mirror.ts';
import type { SyncKeys } from '../daemon/state/keys.ts';
import { SimulationClock } from '../server/clock.ts';
import { Store } from '../server/store/store.ts';
import { REDIS_URL, testPrefix } from '../test/support/daemon.ts';
import { openAccount, printFiguresHeading, round, startServer } from './support.ts';

const TZ = 'America/New_York';
/** Friday 30 October 2026, 06:00 in New York: the run crosses the fall-back of Sunday 1 November. */
const START = '2026-10-30T10:00:00Z';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };

/** Window groups and their share of the contacts: every US zone, Indiana's split codes, Arizona with the Navajo Nation, Florida, Rhode Island, Puerto Rico, Canada, the UK. */
const GROUPS: { name: string; prefix: string; weight: number }[] = [
  { name: 'new-york', prefix: '1212', weight: 20 }, { name: 'florida', prefix: '1305', weight: 10 },
  { name: 'chicago', prefix: '1312', weight: 14 }, { name: 'indiana-219', prefix: '1219', weight: 3 },
  { name: 'denver', prefix: '1303', weight: 6 }, { name: 'phoenix', prefix: '1602', weight: 6 },
  { name: 'navajo-928', prefix: '1928', weight: 2 }, { name: 'los-angeles', prefix: '1213', weight: 16 },
  { name: 'alaska', prefix: '1907', weight: 2 }, { name: 'hawaii', prefix: '1808', weight: 3 },
  { name: 'puerto-rico', prefix: '1787', weight: 3 }, { name: 'rhode-island', prefix: '1401', weight: 3 },
  { name: 'toronto', prefix: '1416', weight: 8 }, { name: 'london', prefix: '447912', weight: 4 },
];

interface Call { number: string; attempt: number; startedAtLocal: string }

export interface ComplianceOptions {
  contacts: number; days: number; stepSeconds: number; numbersPerAgent: number;
  /** The dialer's maxAttempts per number record (the reference server's default is 3, Florida's cap). */
  attempts: number;
}

/** The group's i-th number: valid, distinct. */
const numberOf = (prefix: string, i: number) => `+${prefix}${String(prefix.startsWith('44') ? 100_000 + i : 2_000_000 + i)}`;

async function runOnce(rules: boolean, o: ComplianceOptions, dir: string): Promise<{ calls: Call[]; numbers: Map<string, string[]>; seconds: number; takenOut: number }> {
  const started = performance.now();
  const store = new Store(':memory:');
  const server = await startServer(store, { clock: new SimulationClock(Date.parse(START)), seed: 27 });
  const { prefix, cleanup } = testPrefix();
  const account = await openAccount(server, 'Compliance', TZ);
  const total = GROUPS.reduce((s, g) => s + g.weight, 0);
  const numbers = new Map<string, string[]>();
  const syncs: unknown[] = [];
  for (const g of GROUPS) {
    const n = Math.max(1, Math.round((o.contacts * g.weight) / total));
    const list = Array.from({ length: n }, (_, i) => numberOf(g.prefix, i));
    numbers.set(g.name, list);
    const campaign = await server.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, {
      name: g.name, type: 'Dynamic', state: 'Active',
      // With rules the daemon holds the campaign to its callees' window; without, it dials within the server's
      // default hours (09:00–20:00 in the account's zone, Monday to Saturday), as a campaign does today.
      dialer: { mode: 'Power', agents: Math.max(1, Math.ceil(n / o.numbersPerAgent)), maxAttempts: o.attempts, ...(rules ? { callingHours: ALL_DAY } : {}) },
    });
    const csv = join(dir, `${rules ? 'rules' : 'plain'}-${g.name}.csv`);
    writeFileSync(csv, `id,phone\n${list.map((p, i) => `${g.name}-${i},${p}`).join('\n')}\n`);
    syncs.push({
      id: g.name, campaignId: campaign.id, source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, schedule: { every: '1d' },
      ...(rules ? { compliance: { checkEvery: `${o.stepSeconds}s`, margin: `${2 * o.stepSeconds}s` } } : {}),
      ...(rules && g.name === 'florida' ? { mirror: { sink: { type: 'file', path: join(dir, 'florida-calls.jsonl') }, every: '1d', late: '1m' } } : {}),
    });
  }
  let now = Date.parse(START);
  const config = parseConfig({
    redis: { url: REDIS_URL, prefix }, http: { host: '127.0.0.1', port: 0 },
    dialer: { baseUrl: server.base, accountId: account.id, apiToken: account.token, rateLimit: { perSecond: 100, burst: 200 }, timeZone: TZ },
    syncs, log: { level: 'error' },
  }, 'bench', {});
  const d = await Daemon.start(config, { log: pino({ level: 'silent' }), now: () => now });
  let takenOut = 0;
  try {
    const advance = async (seconds: number) => {
      const res = await fetch(`${server.base}/console/clock/advance`, {
        method: 'POST', body: JSON.stringify({ seconds }), headers: { authorization: `Bearer ${server.consoleToken}`, 'content-type': 'application/json' },
      });
      if (res.status !== 200) throw new Error(`advance: ${res.status} ${await res.text()}`);
      now += seconds * 1000;
    };
    // Every number imported (held by the rules, or in its campaign) before the clock moves.
    const expected = [...numbers.values()].reduce((s, l) => s + l.length, 0);
    for (;;) {
      let held = 0;
      for (const rt of d.runtimes.values()) held += await d.redis.hlen(rt.state.keys.have) + (rules ? await d.redis.scard(rt.state.keys.dirty) : 0);
      if (held >= expected) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    // Numbers waiting to be planned; those held at their cap stay dirty until it passes.
    const waiting = async (k: SyncKeys) => {
      const dirty = await d.redis.smembers(k.dirty);
      const capped = dirty.length ? await d.redis.zmscore(k.window.capped, ...dirty) : [];
      return dirty.filter((_, i) => capped[i] === null).length;
    };
    for (let t = 0; t < (o.days * 86_400) / o.stepSeconds; t++) {
      await advance(o.stepSeconds);
      if (!rules) continue;
      // The window's checks, as their scheduler runs them every checkEvery; an opening plans the waiting numbers.
      for (const rt of d.runtimes.values()) {
        const before = await d.redis.scard(rt.state.keys.dirty);
        const state = await d.enforceWindow(rt, 'bench', true);
        if (state === 'Active' && before) {
          while (await waiting(rt.state.keys) || await d.redis.hlen(rt.state.keys.batches)) await new Promise((r) => setTimeout(r, 50));
        }
      }
      // Florida's mirror: numbers taken out at their cap are deleted before the clock moves on.
      const florida = d.runtimes.get('florida')!;
      await mirrorRun(d.mirrors.get('florida')!, {});
      const k = florida.state.keys;
      for (;;) {
        const out = await d.redis.hkeys(k.window.takenOut);
        takenOut = Math.max(takenOut, out.length);
        // Deleted, or refused (parked: the number was being called) until the next run.
        const [held, parked] = out.length ? await Promise.all([d.redis.hmget(k.have, ...out), d.redis.hmget(k.parked, ...out)]) : [[], []];
        if (held.every((h, i) => h === null || parked[i] !== null)) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    const calls: Call[] = [];
    for (const c of config.syncs) {
      for (let first = 0; ; first += 5000) {
        const res = await fetch(`${server.base}/v1/accounts/${account.id}/campaigns/${c.campaignId}/reports/callDetails?range=${encodeURIComponent(JSON.stringify([first, first + 4999]))}`, { headers: { authorization: `Bearer ${account.token}` } });
        const page = await res.json() as Call[];
        calls.push(...page);
        if (page.length < 5000) break;
      }
    }
    return { calls, numbers, seconds: (performance.now() - started) / 1000, takenOut };
  } finally {
    await d.close(2000);
    await server.app.close();
    await store.close();
    await cleanup();
  }
}

export async function runCompliance(o: ComplianceOptions): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cds-bench-compliance-'));
  try {
    const withRules = await runOnce(true, o, dir);
    const plain = await runOnce(false, o, dir);
    const inWindow = (c: Call) => callingWindow(locate(c.number), DEFAULT_RULE_SET, toUtc(c.startedAtLocal, TZ)).open;
    const outside = withRules.calls.filter((c) => !inWindow(c)).length;
    const plainOutside = plain.calls.filter((c) => !inWindow(c)).length;
    const plainInside = plain.calls.length - plainOutside;
    // Calls over a cap: per capped number, calls with `calls` or more others in the `hours` before.
    const startsOf = (calls: Call[]) => {
      const m = new Map<string, number[]>();
      for (const c of calls) m.set(c.number, [...(m.get(c.number) ?? []), toUtc(c.startedAtLocal, TZ)]);
      return m;
    };
    const overOf = (m: Map<string, number[]>) => {
      let n = 0;
      for (const [number, list] of m) {
        const cap = capFor(rulesFor(locate(number).states, DEFAULT_RULE_SET));
        if (cap) n += overCap(list, cap);
      }
      return n;
    };
    const starts = startsOf(withRules.calls);
    const over = overOf(starts);
    const plainOver = overOf(startsOf(plain.calls));
    // First called within the number's first two windows from the start.
    const t0 = Date.parse(START);
    let valid = 0, early = 0;
    for (const list of withRules.numbers.values()) {
      for (const number of list) {
        valid++;
        const l = locate(number);
        const first = callingWindow(l, DEFAULT_RULE_SET, t0);
        // Open at the start: the current window and the next; closed: the next two.
        const secondClose = first.closesAt === null ? null : callingWindow(l, DEFAULT_RULE_SET, first.closesAt).closesAt;
        const called = starts.get(number);
        if (called && secondClose !== null && Math.min(...called) < secondClose) early++;
      }
    }
    const line = printFiguresHeading(118, [`compliance scenario: ${valid} contacts in ${GROUPS.length} window groups (one campaign each), ${o.days} simulated days from ${START}`]);
    console.log(`  calls outside the callee's window, with rules: ${outside} of ${withRules.calls.length} (target 0); without rules: ${plainOutside} of ${plain.calls.length}`);
    console.log(`  calls over a cap (Florida: 3 in 24 h), with rules: ${over} (target 0), without rules: ${plainOver}; the dialer's maxAttempts ${o.attempts}, Florida numbers taken out at their cap at once (most): ${withRules.takenOut}`);
    console.log(`  dialing inside the windows: ${withRules.calls.length} calls with rules ÷ ${plainInside} calls inside the callees' windows without rules = ${round((100 * withRules.calls.length) / Math.max(1, plainInside))}% (target ≥ 90%)`);
    console.log(`  numbers first called within their first two windows: ${early} of ${valid} = ${round((100 * early) / valid)}% (target 100%)`);
    console.log(`  run time: with rules ${round(withRules.seconds)} s, without ${round(plain.seconds)} s`);
    console.log(line);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
