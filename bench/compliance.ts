// The compliance scenario of `./dev bench daemon` (issue 27 §6): contacts across the US zones (and Puerto Rico,
// Toronto, London), one sync and campaign per window group, dialed over simulated days on the reference server's
// manual clock, with calling-window rules (placing each callee by all its evidence, then by the best alone) and
// without. A share of New York's contacts (`--compliance-disagree`) carry a California address: each contact goes to
// the campaign of its window group as its run places it (with `best` those go to Los Angeles', with `all` to one of
// their own, New York's and Los Angeles' windows at once). Prints calls outside any evidence's window, calls over a
// cap, the dialing done inside the windows against the run without rules, the open hours each placement leaves, and
// the share of numbers first called within their first two windows. With rules, Florida's sync has a mirror, run at
// every step: it keeps its numbers' call starts for the cap and takes out those at their cap with a retry pending
// (`--compliance-attempts` above 3: the dialer's maxAttempts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { overCap } from '../daemon/compliance/cap.ts';
import { windowGroup } from '../daemon/compliance/groups.ts';
import type { Evidence, Location, LocationFields } from '../api/calling-window/locate.ts';
import { locate } from '../daemon/compliance/locate.ts';
import { routeFor, routeOf } from '../daemon/compliance/routes.ts';
import { callingWindow, capFor, DEFAULT_RULE_SET, rulesFor, sharedWindow } from '../api/calling-window/window.ts';
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

/** A contact: its number, the state of its address (if any) and the group its number belongs to. */
interface Contact { id: string; number: string; state?: string; group: string }

export interface ComplianceOptions {
  contacts: number; days: number; stepSeconds: number; numbersPerAgent: number;
  /** The dialer's maxAttempts per number record (the reference server's default is 3, Florida's cap). */
  attempts: number;
  /** Percent of New York's contacts whose address is in California. */
  disagree: number;
}

/** The group's i-th number: valid, distinct. */
const numberOf = (prefix: string, i: number) => `+${prefix}${String(prefix.startsWith('44') ? 100_000 + i : 2_000_000 + i)}`;

const fieldsOf = (c: Contact): LocationFields => (c.state ? { region: c.state } : {});
const where = (c: Contact, evidence: Evidence): Location => locate(c.number, fieldsOf(c), evidence);

function contactsOf(o: ComplianceOptions): Contact[] {
  const total = GROUPS.reduce((s, g) => s + g.weight, 0);
  return GROUPS.flatMap((g) => {
    const n = Math.max(1, Math.round((o.contacts * g.weight) / total));
    // Spread evenly over the list: every (100 / disagree)-th New York contact lives in California.
    const moved = (i: number) => g.name === 'new-york' && Math.floor(((i + 1) * o.disagree) / 100) > Math.floor((i * o.disagree) / 100);
    return Array.from({ length: n }, (_, i): Contact => ({ id: `${g.name}-${i}`, number: numberOf(g.prefix, i), group: g.name, ...(moved(i) ? { state: 'CA' } : {}) }));
  });
}

/**
 * Each contact's campaign: its window group's, as a routed sync places it (a group no number of the list has alone,
 * such as New York's and Los Angeles' zones together, gets a campaign of its own, named after the number's group and the address's state).
 */
function campaignsOf(contacts: readonly Contact[], evidence: Evidence): Map<string, Contact[]> {
  const home = new Map(GROUPS.map((g) => [windowGroup(locate(numberOf(g.prefix, 0)), DEFAULT_RULE_SET)!.key, g.name]));
  const out = new Map<string, Contact[]>();
  for (const c of contacts) {
    const key = windowGroup(where(c, evidence), DEFAULT_RULE_SET)!.key;
    const name = home.get(key) ?? `${c.group}.${c.state ?? 'elsewhere'}`;
    const list = out.get(name) ?? [];
    if (!list.length) out.set(name, list);
    list.push(c);
  }
  return out;
}

/**
 * The recommended routes of docs/calling-windows.md: one campaign per set of callees whose rules would otherwise narrow the others'
 * hours (a state row's shorter day or its Sunday, a zone far from the others).
 */
const RECOMMENDED_ROUTES: { name: string; zones?: string[]; states?: string[] }[] = [
  { name: 'Eastern and Central', zones: ['America/New_York', 'America/Chicago'] },
  { name: 'Rhode Island', states: ['RI'] },
  { name: 'Louisiana and Mississippi', states: ['LA', 'MS'] },
  { name: 'Florida and Massachusetts', states: ['FL', 'MA'] },
  { name: 'Washington', states: ['WA'] },
  { name: 'Mountain and Pacific', zones: ['America/Denver', 'America/Phoenix', 'America/Los_Angeles'] },
  { name: 'Hawaii', zones: ['Pacific/Honolulu'] },
];

/**
 * Per recommended route, the share of its numbers' own lawful hours (each callee's window, every piece of evidence)
 * that the route's campaign is open (the window all its numbers share) over the run; and the contacts in no route.
 */
function routeShares(contacts: readonly Contact[], from: number, to: number): { lines: string[]; none: number } {
  const routes = RECOMMENDED_ROUTES.map(routeOf);
  const members = RECOMMENDED_ROUTES.map((): Location[] => []);
  let none = 0;
  for (const c of contacts) {
    const l = where(c, 'all');
    const g = windowGroup(l, DEFAULT_RULE_SET);
    const i = g ? routeFor(routes, g) : -1;
    if (i < 0) none++; else members[i]!.push(l);
  }
  const lines = RECOMMENDED_ROUTES.flatMap((r, i) => {
    const list = members[i]!;
    if (!list.length) return [];
    const groups = [...new Map(list.map((l) => [`${l.zones.join('+')}|${l.states.join('+')}`, l])).values()];
    const shared = openHours(groups, from, to);
    const own = list.reduce((h, l) => h + openHours([l], from, to), 0);
    return [`${r.name} ${Math.round((100 * shared * list.length) / own)}% (${list.length} numbers)`];
  });
  return { lines, none };
}

/** Hours the window these callees share is open from `from` to `to` (ms). */
function openHours(l: readonly Location[], from: number, to: number): number {
  let open = 0;
  for (let t: number | null = from; t !== null && t < to;) {
    const w = sharedWindow(l, DEFAULT_RULE_SET, t);
    if (w.open) open += Math.min(w.closesAt!, to) - t;
    t = w.open ? w.closesAt : w.opensAt;
  }
  return open / 3_600_000;
}

/** One run: with rules (the callees placed by `evidence`), or without (null: the campaigns as `all` would split them). */
async function runOnce(evidence: Evidence | null, contacts: readonly Contact[], o: ComplianceOptions, dir: string): Promise<{ calls: Call[]; seconds: number; takenOut: number }> {
  const rules = evidence !== null;
  const started = performance.now();
  const store = new Store(':memory:');
  const server = await startServer(store, { clock: new SimulationClock(Date.parse(START)), seed: 27 });
  const { prefix, cleanup } = testPrefix();
  const account = await openAccount(server, 'Compliance', TZ);
  const syncs: unknown[] = [];
  for (const [name, list] of campaignsOf(contacts, evidence ?? 'all')) {
    const campaign = await server.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, {
      name, type: 'Dynamic', state: 'Active',
      // With rules the daemon holds the campaign to its callees' window; without, it dials within the server's
      // default hours (09:00–20:00 in the account's zone, Monday to Saturday), as a campaign does today.
      dialer: { mode: 'Power', agents: Math.max(1, Math.ceil(list.length / o.numbersPerAgent)), maxAttempts: o.attempts, ...(rules ? { callingHours: ALL_DAY } : {}) },
    });
    const csv = join(dir, `${evidence ?? 'plain'}-${name}.csv`);
    writeFileSync(csv, `id,phone,state\n${list.map((c) => `${c.id},${c.number},${c.state ?? ''}`).join('\n')}\n`);
    syncs.push({
      id: name, campaignId: campaign.id, source: { type: 'csv', path: csv }, mapping: { phone: 'phone', region: 'state' }, schedule: { every: '1d' },
      // The run without rules turns them off (they are on by default), as an operator would, with the reason.
      compliance: rules ? { checkEvery: `${o.stepSeconds}s`, margin: `${2 * o.stepSeconds}s`, evidence } : { off: 'bench: the run without rules, to compare' },
      ...(rules && name === 'florida' ? { mirror: { sink: { type: 'file', path: join(dir, 'florida-calls.jsonl') }, every: '1d', late: '1m' } } : {}),
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
    const expected = contacts.length;
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
    return { calls, seconds: (performance.now() - started) / 1000, takenOut };
  } finally {
    await d.close(2000);
    await server.app.close();
    await store.close();
    await cleanup();
  }
}

export async function runCompliance(o: ComplianceOptions): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cds-bench-compliance-'));
  const contacts = contactsOf(o);
  const byNumber = new Map(contacts.map((c) => [c.number, c]));
  const disagreeing = contacts.filter((c) => c.state);
  try {
    const all = await runOnce('all', contacts, o, dir);
    const best = await runOnce('best', contacts, o, dir);
    const plain = await runOnce(null, contacts, o, dir);
    // A call is judged by every piece of its callee's evidence: outside any one's window is outside.
    const outsideOf = (calls: Call[], evidence: Evidence = 'all') =>
      calls.filter((c) => !callingWindow(where(byNumber.get(c.number)!, evidence), DEFAULT_RULE_SET, toUtc(c.startedAtLocal, TZ)).open).length;
    const plainInside = plain.calls.length - outsideOf(plain.calls);
    // Calls over a cap: per capped number, calls with `calls` or more others in the `hours` before.
    const startsOf = (calls: Call[]) => {
      const m = new Map<string, number[]>();
      for (const c of calls) m.set(c.number, [...(m.get(c.number) ?? []), toUtc(c.startedAtLocal, TZ)]);
      return m;
    };
    const overOf = (calls: Call[]) => {
      let n = 0;
      for (const [number, list] of startsOf(calls)) {
        const cap = capFor(rulesFor(where(byNumber.get(number)!, 'all').states, DEFAULT_RULE_SET));
        if (cap) n += overCap(list, cap);
      }
      return n;
    };
    // First called within the number's first two windows from the start (as the run placed it).
    const t0 = Date.parse(START);
    const earlyOf = (calls: Call[], evidence: Evidence) => {
      const starts = startsOf(calls);
      return contacts.filter((c) => {
        const l = where(c, evidence);
        const first = callingWindow(l, DEFAULT_RULE_SET, t0);
        // Open at the start: the current window and the next; closed: the next two.
        const secondClose = first.closesAt === null ? null : callingWindow(l, DEFAULT_RULE_SET, first.closesAt).closesAt;
        const called = starts.get(c.number);
        return called && secondClose !== null && Math.min(...called) < secondClose;
      }).length;
    };
    // What each placement costs: the hours the callees' windows are open over the run, and the calls made.
    const hoursOf = (list: readonly Contact[], evidence: Evidence) => list.reduce((h, c) => h + openHours([where(c, evidence)], t0, t0 + o.days * 86_400_000), 0);
    const perDay = (hours: number, n: number) => round(hours / Math.max(1, n) / o.days);
    const [hoursAll, hoursBest] = [hoursOf(contacts, 'all'), hoursOf(contacts, 'best')];
    const [movedAll, movedBest] = [hoursOf(disagreeing, 'all'), hoursOf(disagreeing, 'best')];
    const callsTo = (calls: Call[]) => calls.filter((c) => byNumber.get(c.number)!.state).length;
    const pct = (a: number, b: number) => `${round((100 * a) / Math.max(1, b))}%`;
    const line = printFiguresHeading(118, [`compliance scenario: ${contacts.length} contacts in ${GROUPS.length} window groups (one campaign each), ${disagreeing.length} of New York's with a California address, ${o.days} simulated days from ${START}`]);
    console.log(`  calls outside the window of any piece of the callee's evidence: evidence all ${outsideOf(all.calls)} of ${all.calls.length} (target 0); best ${outsideOf(best.calls)} of ${best.calls.length} (by the strongest piece alone, as best placed them: ${outsideOf(best.calls, 'best')}); without rules ${outsideOf(plain.calls)} of ${plain.calls.length}`);
    console.log(`  calls over a cap (Florida: 3 in 24 h): all ${overOf(all.calls)}, best ${overOf(best.calls)} (target 0), without rules ${overOf(plain.calls)}; the dialer's maxAttempts ${o.attempts}, Florida numbers taken out at their cap at once (most): all ${all.takenOut}, best ${best.takenOut}`);
    console.log(`  dialing inside the windows: calls with rules ÷ ${plainInside} calls inside every evidence's window without rules: all ${all.calls.length} = ${pct(all.calls.length, plainInside)}, best ${best.calls.length} = ${pct(best.calls.length, plainInside)} (target ≥ 90%)`);
    console.log(`  open hours a callee a day: all ${perDay(hoursAll, contacts.length)}, best ${perDay(hoursBest, contacts.length)} (all: ${pct(hoursAll, hoursBest)} of best's); the ${disagreeing.length} with a California address: all ${perDay(movedAll, disagreeing.length)}, best ${perDay(movedBest, disagreeing.length)}; calls to them: all ${callsTo(all.calls)} (a campaign of their own), best ${callsTo(best.calls)} (in Los Angeles')`);
    console.log(`  numbers first called within their first two windows: all ${pct(earlyOf(all.calls, 'all'), contacts.length)}, best ${pct(earlyOf(best.calls, 'best'), contacts.length)} of ${contacts.length} (target 100%)`);
    const shares = routeShares(contacts, t0, t0 + o.days * 86_400_000);
    console.log(`  the recommended routes (docs/calling-windows.md), the share of their numbers' own lawful hours each is open (target ≥ 90%): ${shares.lines.join('; ')}; in no route (Alaska, Puerto Rico, London, the New York numbers with a California address): ${shares.none}`);
    console.log(`  run time: all ${round(all.seconds)} s, best ${round(best.seconds)} s, without rules ${round(plain.seconds)} s`);
    console.log(line);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
