// One selection routed into one campaign per window group (a sync's `routes`), on the reference server's campaigns and
// HubSpot's stand-in: each campaign holds exactly its group's numbers, the CRM is read once per run (against once per
// sync per run when each group has a sync of its own), a contact whose number changes group moves campaigns (by a
// read or by a webhook), one whose address disagrees with its number enters none, a full read's sweep reaches every route, each campaign is paused and resumed
// at its own window's edges on the virtual clock, a number in no route is a record error, each campaign's calls are
// mirrored, an import stopped between two pages resumes in another process; the same on a Redis Cluster. Also what
// the configuration refuses.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Daemon } from '../../daemon/app.ts';
import { parseConfig } from '../../daemon/config.ts';
import { dryRun } from '../../daemon/sync/dry-run.ts';
import { syncStatus } from '../../daemon/sync/status.ts';
import type { RunRecord } from '../../daemon/state/sync-state.ts';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { callDetailRecords, campaignNumbers, daemonConfig, quietLog, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { startRedisCluster } from '../support/redis-cluster.ts';
import { launchChromium } from '../support/browser.ts';
import { allRunErrors, freePort, pullAndSettle, runErrors, runs, settle } from '../support/sync-checks.ts';
import { createAccount, createCampaign, createKey, startServer } from '../support/server.ts';

const TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
// Wednesday 1 July 2026, 18:30 UTC: 14:30 in New York, 11:30 in Los Angeles, 08:30 in Honolulu: every group is open.
const START = '2026-07-01T18:30:00Z';
const GROUPS = {
  // 219 is Central and Eastern (north-west Indiana); 305 is Florida (closes at 20:00).
  east: { zones: ['America/New_York', 'America/Chicago'], areas: ['212', '312', '219', '305', '617'] },
  // 928 is Phoenix and the Navajo Nation's Denver.
  west: { zones: ['America/Denver', 'America/Phoenix', 'America/Los_Angeles'], areas: ['303', '602', '928', '213', '415'] },
  pacific: { zones: ['Pacific/Honolulu'], areas: ['808'] },
} as const;
type Group = keyof typeof GROUPS;
const NAMES = Object.keys(GROUPS) as Group[];
const phone = (area: string, i: number) => `+1${area}234${5670 + i}`;
const phonesOf = (g: Group) => GROUPS[g].areas.flatMap((a) => [0, 1].map((i) => phone(a, i)));
// Alaska's 907 is in no route.
const NOWHERE = [phone('907', 0), phone('907', 1)];
const SEARCH = 'POST contacts/search';
const OPS_TOKEN = 'an operations token for the routes tests';
/** A run that read the selection (not only a webhook's inbox, which is empty here). */
const reads = (r: RunRecord) => r.mode === 'full' || r.mode === 'incremental' || r.mode === 'compare';
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 16) + 'Z';

interface Fixture { f: DialerFixture; campaigns: Record<Group, string>; hs: HubSpotStandIn; ids: Map<string, string> }

async function fixture(): Promise<Fixture> {
  const server = await startServer({ seed: 27, clockStart: START });
  const account = await createAccount(server, 'Routes Co', TZ);
  const campaigns = {} as Record<Group, string>;
  for (const g of NAMES) {
    campaigns[g] = (await createCampaign(server, account.id, { name: `National ${g}`, type: 'Dynamic', state: 'Active', dialer: { callingHours: ALL_DAY } })).id;
  }
  // Changing a campaign's state takes the Campaign Admin role.
  const token = await createKey(server, account.id, ['CampaignAdmin']);
  const hs = await startHubSpotStandIn();
  const ids = new Map<string, string>();
  for (const p of [...NAMES.flatMap(phonesOf), ...NOWHERE]) ids.set(p, hs.createContact({ firstname: `F${p.slice(-5)}`, lastname: 'Routed', phone: p }).id);
  return { f: { server, accountId: account.id, token, campaignId: campaigns.east }, campaigns, hs, ids };
}

function dialerOf(f: DialerFixture) {
  return { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ } };
}

function hubspot(x: Fixture) {
  return { type: 'hubspot', baseUrl: x.hs.url, accessToken: x.hs.token, clientSecret: 'hs-client-secret' };
}

const MAPPING = { phone: 'phone', defaultCountry: 'US', region: 'state' };
const COMPLIANCE = { checkEvery: '5m', margin: '10m' };

async function held(x: Fixture, g: Group): Promise<string[]> {
  return (await campaignNumbers({ ...x.f, campaignId: x.campaigns[g] })).map((n) => n.number).sort();
}

async function campaignState(x: Fixture, g: Group): Promise<string> {
  const res = await x.f.server.request(`/v1/accounts/${x.f.accountId}/campaigns?filter=${encodeURIComponent(JSON.stringify({ ids: [x.campaigns[g]] }))}`, { token: x.f.token });
  return ((await res.json()) as { state: string }[])[0]!.state;
}

/**
 * A reference server at `start` with an eastern (New York) and a Pacific (Honolulu) campaign; `f` is the eastern one's,
 * with a key that may change campaign states.
 */
async function eastAndPacific(start: string, dialer: Record<string, unknown> = { callingHours: ALL_DAY }): Promise<{ f: DialerFixture; east: string; pacific: string; routes: { campaignId: string; zones: string[] }[] }> {
  const server = await startServer({ seed: 27, clockStart: start });
  const account = await createAccount(server, 'Routes Co', TZ);
  const east = (await createCampaign(server, account.id, { name: 'East', type: 'Dynamic', state: 'Active', dialer })).id;
  const pacific = (await createCampaign(server, account.id, { name: 'Pacific', type: 'Dynamic', state: 'Active', dialer })).id;
  const f = { server, accountId: account.id, token: await createKey(server, account.id, ['CampaignAdmin']), campaignId: east };
  return { f, east, pacific, routes: [{ campaignId: east, zones: ['America/New_York'] }, { campaignId: pacific, zones: ['Pacific/Honolulu'] }] };
}

describe('one sync routed into one campaign per window group', () => {
  let x: Fixture;
  beforeAll(async () => { x = await fixture(); });
  afterAll(async () => {
    await x?.hs.close();
    await x?.f.server.close();
  });

  it('reads the CRM once per run, routes each number to its group\'s campaign, moves contacts between them and pauses each campaign at its own edges', async () => {
    const { prefix, cleanup } = testPrefix();
    let now = Date.parse(START);
    const searchesBefore = x.hs.stats.byRoute[SEARCH] ?? 0;
    const d = await Daemon.start(daemonConfig(x.f, prefix, [{
      id: 'national', routes: NAMES.map((g) => ({ campaignId: x.campaigns[g], zones: GROUPS[g].zones })),
      source: hubspot(x), mapping: MAPPING, schedule: { every: '1d' }, compliance: COMPLIANCE,
    }], { ...dialerOf(x.f), http: { host: '127.0.0.1', port: 0, adminToken: OPS_TOKEN } }), { log: quietLog, now: () => now });
    try {
      const rt = d.runtimes.get('national')!;
      await settle(d);
      // Each campaign holds exactly its group's numbers; Alaska's are in none.
      for (const g of NAMES) expect(await held(x, g)).toEqual(phonesOf(g).sort());
      // The import (the reads each campaign's first window check asked for coalesce after it).
      const imported = await runs(d, 'national');
      expect(imported.at(-1)).toMatchObject({ mode: 'full', status: 'done', seen: 24, invalid: 2 });
      // (Part batches wait for the reads queued behind the import: their pushes count in those runs.)
      expect(imported.reduce((n, r) => n + r.pushed, 0)).toBe(22);
      // One read of the selection per run for the three campaigns.
      expect((x.hs.stats.byRoute[SEARCH] ?? 0) - searchesBefore).toBe(imported.filter(reads).length);
      const errors = (await allRunErrors(d, 'national'));
      expect(errors.length).toBeGreaterThanOrEqual(2);
      for (const e of errors) {
        expect(e).toMatchObject({ code: 'no_route', field: 'phone', value: expect.stringMatching(/^\+•+\d{4}$/) });
        expect(e.reason).toMatch(/^in no route: no route holds all of its callee's zones: area code 907 .*: America\/Adak, America\/Anchorage, America\/Juneau, Pacific\/Honolulu$/);
      }

      // `status` and /ops: each route under the sync, with its campaign, zones, holdings and window.
      const status = await syncStatus(rt);
      expect(status.campaignId).toBe('');
      expect(status.numbers).toBe(22);
      expect(status.routes!.map((r) => ({ campaignId: r.campaignId, numbers: r.numbers, state: r.window!.state }))).toEqual(
        NAMES.map((g) => ({ campaignId: x.campaigns[g], numbers: phonesOf(g).length, state: 'Active' })));
      expect(status.routes![0]!.window!.groups).toEqual(['America/Chicago', 'America/Chicago+America/New_York', 'America/New_York', 'America/New_York|FL', 'America/New_York|MA']);
      const ops = (path: string) => fetch(`${d.address}/ops/api/${path}`, { headers: { authorization: `Basic ${Buffer.from(`ops:${OPS_TOKEN}`).toString('base64')}` } });
      const page = await (await ops('syncs')).json() as { syncs: { sync: string; routes: { campaignId: string; zones: string[] }[] }[] };
      expect(page.syncs[0]!.routes.map((r) => r.campaignId)).toEqual(NAMES.map((g) => x.campaigns[g]));
      // The page itself, in Chromium: one section per campaign under the sync, each with its own window.
      const browser = await launchChromium();
      try {
        const context = await browser.newContext({ httpCredentials: { username: 'ops', password: OPS_TOKEN } });
        const tab = await context.newPage();
        const pageErrors: string[] = [];
        tab.on('pageerror', (e) => pageErrors.push(e.message));
        expect((await tab.goto(`${d.address}/ops`))?.status()).toBe(200);
        const west = tab.locator(`[data-sync="national"] [data-route="${x.campaigns.west}"]`);
        await west.locator('[data-field="numbers"]').filter({ hasText: String(phonesOf('west').length) }).waitFor({ timeout: 10_000 });
        expect(await tab.locator('[data-sync="national"] [data-route]').count()).toBe(3);
        expect(await west.locator('[data-field="windowState"]').textContent()).toBe('Active');
        expect(await tab.locator('[data-sync="national"] h2').textContent()).toContain(`3 campaigns by zone: ${NAMES.map((g) => x.campaigns[g]).join(', ')}`);
        expect(pageErrors).toEqual([]);
      } finally {
        await browser.close();
      }
      // One number's evidence names the campaign its route put it in.
      const one = await (await ops(`syncs/national/window/${encodeURIComponent(phone('928', 0))}`)).json() as { evidence: string; campaignId: string };
      expect(one).toMatchObject({ campaignId: x.campaigns.west, evidence: expect.stringMatching(/area code 928 .*America\/Denver, America\/Phoenix/) });
      expect((await ops(`syncs/national/window/${encodeURIComponent(NOWHERE[0]!)}`)).status).toBe(404);

      // Honolulu's contact gets a San Francisco number: it changes campaigns. New York's gets a California address:
      // every piece of evidence counts (compliance.evidence: all), so its callee may be in New York or in Los Angeles,
      // zones no route holds both of: it leaves its campaign and enters none (a record error), where `best` would
      // have put it in the western campaign, to be called until 21:00 in Los Angeles, midnight in New York.
      x.hs.updateContact(x.ids.get(phone('212', 0))!, { state: 'CA' });
      x.hs.updateContact(x.ids.get(phone('808', 0))!, { phone: phone('415', 9) });
      // The dry run routes as the run does: two numbers leave their campaigns, one enters the western one.
      const lines: string[] = [];
      // Its invalid records are the run's: Alaska's two numbers and New York's, each in no route.
      expect(await dryRun(rt, (l) => lines.push(l))).toEqual({ add: 1, replace: 0, remove: 2, invalid: 3, others: 0, doNotCall: 0, lists: {}, waitingForLists: 0 });
      expect(lines.filter((l) => /^\s+add\s/.test(l)).every((l) => l.endsWith(`(campaign ${x.campaigns.west})`))).toBe(true);
      expect(lines.filter((l) => /^\s+delete\s/.test(l)).map((l) => /\(campaign (.+)\)$/.exec(l)![1]).sort()).toEqual([x.campaigns.east, x.campaigns.pacific].sort());
      const beforePull = x.hs.stats.byRoute[SEARCH] ?? 0;
      const moved = await pullAndSettle(d, 'national');
      // (Counted where it arrived; leaving the old campaign is not a change of the contact.)
      expect(moved).toMatchObject({ mode: 'incremental', status: 'done', changed: 1 });
      // (Alaska's numbers, in no route from the start, are read again too.)
      expect((await runErrors(d, 'national', moved.id)).map((e) => [e.code, e.reason])).toContainEqual(['no_route',
        expect.stringMatching(/^in no route: no route holds all of its callee's zones: state CA: America\/Los_Angeles; area code 212 .*: America\/New_York$/)]);
      // One search for the three campaigns.
      expect((x.hs.stats.byRoute[SEARCH] ?? 0) - beforePull).toBe(1);
      expect(await held(x, 'east')).toEqual(phonesOf('east').filter((p) => p !== phone('212', 0)).sort());
      expect(await held(x, 'west')).toEqual([...phonesOf('west'), phone('415', 9)].sort());
      expect(await held(x, 'pacific')).toEqual([phone('808', 1)]);

      // A contact deleted in the CRM: the full read's sweep takes it out of its route's campaign.
      x.hs.deleteContact(x.ids.get(phone('303', 1))!);
      const full = await pullAndSettle(d, 'national', true);
      expect(full).toMatchObject({ mode: 'full', status: 'done', seen: 23, left: 1 });
      expect(await held(x, 'west')).not.toContain(phone('303', 1));

      // A day on the virtual clock, checked every 5 minutes as the window's scheduler does: each campaign follows its
      // own window (paused 10 minutes before its close), not the narrowest one.
      const changes: Record<Group, string[]> = { east: [], west: [], pacific: [] };
      const last: Record<Group, string> = { east: 'Active', west: 'Active', pacific: 'Active' };
      for (let step = 0; step < 288; step++) {
        now += 300_000;
        const states = (await d.enforceWindow(rt, 'test', true)).split(',');
        for (const [i, g] of NAMES.entries()) {
          if (states[i] === last[g]) continue;
          last[g] = states[i]!;
          changes[g].push(`${iso(now)} ${states[i]}`);
          expect(await campaignState(x, g)).toBe(states[i]);
        }
      }
      expect(changes).toEqual({
        // Florida closes first (20:00 EDT = 00:00Z), Chicago opens last (08:00 CDT = 13:00Z).
        east: ['2026-07-01T23:50Z Paused', '2026-07-02T13:00Z Active'],
        // Denver closes first (21:00 MDT = 03:00Z), Phoenix and Los Angeles open last (08:00 = 15:00Z).
        west: ['2026-07-02T02:50Z Paused', '2026-07-02T15:00Z Active'],
        pacific: ['2026-07-02T06:50Z Paused', '2026-07-02T18:00Z Active'],
      });
      await settle(d);
      // Every run that read the selection (the import, the pulls, the reads each opening asked for) read it once.
      const read = (await runs(d, 'national')).filter(reads);
      expect(read.length).toBeGreaterThanOrEqual(6);
      // (And the dry run, once.)
      expect((x.hs.stats.byRoute[SEARCH] ?? 0) - searchesBefore).toBe(read.length + 1);
    } finally {
      await d.close(2000);
      await cleanup();
    }
  }, 240_000);

  it('costs one read per sync per run when each group has a sync of its own (compliance.zones), as before routes', async () => {
    const { prefix, cleanup } = testPrefix();
    // Fresh campaigns: the routed test's numbers stay where they are.
    const campaigns = {} as Record<Group, string>;
    for (const g of NAMES) campaigns[g] = (await createCampaign(x.f.server, x.f.accountId, { name: `Split ${g}`, type: 'Dynamic', state: 'Active', dialer: { callingHours: ALL_DAY } })).id;
    const searchesBefore = x.hs.stats.byRoute[SEARCH] ?? 0;
    const d = await Daemon.start(daemonConfig(x.f, prefix, NAMES.map((g) => ({
      id: `split-${g}`, campaignId: campaigns[g], source: hubspot(x), mapping: MAPPING, schedule: { every: '1d' },
      compliance: { ...COMPLIANCE, zones: GROUPS[g].zones },
    })), dialerOf(x.f)), { log: quietLog, now: () => Date.parse(START) });
    try {
      await settle(d);
      expect((await campaignNumbers({ ...x.f, campaignId: campaigns.pacific })).map((n) => n.number)).toEqual([phone('808', 1)]);
      // New York's number with a California address is in no sync's zones: every sync leaves it out, without an error.
      for (const g of NAMES) expect((await campaignNumbers({ ...x.f, campaignId: campaigns[g] })).map((n) => n.number)).not.toContain(phone('212', 0));
      // Each sync read the whole selection for its one campaign.
      for (const g of NAMES) expect((await runs(d, `split-${g}`)).some((r) => r.mode === 'full' && r.seen === 23)).toBe(true);
      expect((x.hs.stats.byRoute[SEARCH] ?? 0) - searchesBefore).toBeGreaterThanOrEqual(3);
      // A pull of the selection (what each schedule's tick asks for): three searches, one per sync, where routes take one.
      const beforePull = x.hs.stats.byRoute[SEARCH] ?? 0;
      for (const g of NAMES) await pullAndSettle(d, `split-${g}`);
      expect((x.hs.stats.byRoute[SEARCH] ?? 0) - beforePull).toBe(3);
    } finally {
      await d.close(2000);
      await cleanup();
    }
  }, 120_000);
});

describe('routes by rule', () => {
  // Sunday 12 July 2026, 14:30 UTC: 10:30 in New York and Rhode Island, 09:30 in Mississippi, 07:30 in Phoenix and
  // Vancouver (British Columbia keeps -07 all year from November 2026, as Phoenix does).
  const SUNDAY = '2026-07-12T14:30:00Z';
  const RI = [phone('401', 0), phone('401', 1)];
  const MS = [phone('601', 0)];
  const NY = [phone('212', 0), phone('212', 1), phone('917', 0)];
  // British Columbia addresses (America/Creston, Dawson_Creek, Fort_Nelson, Vancouver and Edmonton) with Vancouver numbers.
  const BC = [phone('604', 0), phone('250', 0)];

  it('gives Rhode Island\'s and Mississippi\'s callees campaigns of their own, so New York\'s keep 08:00–21:00 on Sunday, and routes BC\'s clocks with Phoenix', async () => {
    const server = await startServer({ seed: 29, clockStart: SUNDAY });
    const hs = await startHubSpotStandIn();
    const { prefix, cleanup } = testPrefix();
    let now = Date.parse(SUNDAY);
    let d: Daemon | undefined;
    try {
      const account = await createAccount(server, 'Rules Co', TZ);
      const names = ['ny', 'ri', 'ms', 'west'] as const;
      const campaigns = Object.fromEntries(await Promise.all(names.map(async (n) =>
        [n, (await createCampaign(server, account.id, { name: n, type: 'Dynamic', state: 'Active', dialer: { callingHours: ALL_DAY } })).id] as const))) as Record<(typeof names)[number], string>;
      const f: DialerFixture = { server, accountId: account.id, token: await createKey(server, account.id, ['CampaignAdmin']), campaignId: campaigns.ny };
      for (const p of [...RI, ...MS, ...NY]) hs.createContact({ firstname: 'F', lastname: p.slice(-4), phone: p });
      for (const p of BC) hs.createContact({ firstname: 'F', lastname: p.slice(-4), phone: p, state: 'BC', country: 'CA' });
      d = await Daemon.start(daemonConfig(f, prefix, [{
        id: 'rules', source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, clientSecret: 'hs-client-secret' },
        mapping: { ...MAPPING, country: 'country' }, schedule: { every: '1d' }, compliance: COMPLIANCE,
        routes: [
          { campaignId: campaigns.ny, zones: ['America/New_York'] },
          { campaignId: campaigns.ri, states: ['RI'] },
          { campaignId: campaigns.ms, states: ['MS'], zones: ['America/Chicago'] },
          // Listed as clocks: America/Vancouver, Creston, Dawson_Creek and Fort_Nelson keep Phoenix's, Edmonton -06.
          { campaignId: campaigns.west, zones: ['America/Phoenix', 'America/Regina'] },
        ],
      }], dialerOf(f)), { log: quietLog, now: () => now });
      const holds = async (n: (typeof names)[number]) => (await campaignNumbers({ ...f, campaignId: campaigns[n] })).map((r) => r.number).sort();
      // New York's are added at once; the others wait for their campaign's window.
      await waitFor(async () => (await holds('ny')).length === NY.length, 'New York\'s numbers in their campaign');
      const status = await syncStatus(d.runtimes.get('rules')!);
      expect(status.routes!.map((r) => [r.states, r.zones])).toEqual([[[], ['America/New_York']], [['RI'], []], [['MS'], ['America/Chicago']], [[], ['America/Phoenix', 'America/Regina']]]);

      // A day on the virtual clock, checked every 5 minutes: New York's campaign open to 21:00 on Sunday (paused 10
      // minutes before), Rhode Island's and Mississippi's closed all Sunday, opening Monday at 09:00 (Mississippi's
      // 08:00 CST is 09:00 CDT).
      const rt = d.runtimes.get('rules')!;
      const changes: Record<string, string[]> = Object.fromEntries(names.map((n) => [n, []]));
      const last: Record<string, string> = Object.fromEntries(names.map((n) => [n, 'Active']));
      for (let step = 0; step < 288; step++) {
        const states = (await d.enforceWindow(rt, 'test', true)).split(',');
        for (const [i, n] of names.entries()) if (states[i] !== last[n]) { last[n] = states[i]!; changes[n]!.push(`${iso(now)} ${states[i]}`); }
        now += 300_000;
      }
      expect(changes).toEqual({
        ny: ['2026-07-13T00:50Z Paused', '2026-07-13T12:00Z Active'],
        ri: ['2026-07-12T14:30Z Paused', '2026-07-13T13:00Z Active'],
        ms: ['2026-07-12T14:30Z Paused', '2026-07-13T14:00Z Active'],
        // 07:30 in Phoenix and Vancouver at the start; Edmonton (-06) opens at 14:00Z, closes at 03:00Z.
        west: ['2026-07-12T14:30Z Paused', '2026-07-12T15:00Z Active', '2026-07-13T02:50Z Paused'],
      });
      await settle(d);
      // Each campaign holds its own callees' numbers; none is in no route.
      expect(await holds('ny')).toEqual([...NY].sort());
      expect(await holds('ri')).toEqual([...RI].sort());
      expect(await holds('ms')).toEqual(MS);
      expect(await holds('west')).toEqual([...BC].sort());
      expect(await allRunErrors(d, 'rules')).toEqual([]);
    } finally {
      await d?.close(2000);
      await cleanup();
      await hs.close();
      await server.close();
    }
  }, 180_000);
});

describe('routes on a Redis Cluster', () => {
  it('keeps the read\'s keys and each route\'s in their own slots: numbers wait for their own window, then enter their own campaign', async () => {
    const cluster = await startRedisCluster();
    const { f, pacific, routes } = await eastAndPacific('2026-07-01T14:00:00Z');
    const { server } = f;
    const dir = mkdtempSync(join(tmpdir(), 'cds-routes-'));
    const csv = join(dir, 'national.csv');
    writeFileSync(csv, `id,phone\nc1,${phone('212', 0)}\nc2,${phone('808', 0)}\nc3,${phone('907', 0)}\n`);
    const { prefix } = testPrefix();
    // 10:00 in New York, 04:00 in Honolulu: the eastern campaign is open, the Pacific one closed.
    let now = Date.parse('2026-07-01T14:00:00Z');
    const d = await Daemon.start(daemonConfig(f, prefix, [{
      id: 'national', routes,
      source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, schedule: { every: '1d' }, compliance: COMPLIANCE,
    }], { redis: { cluster: cluster.urls, prefix }, ...dialerOf(f) }),
    { log: quietLog, now: () => now });
    try {
      const rt = d.runtimes.get('national')!;
      const [e, p] = rt.routes!;
      await waitFor(async () => (await campaignNumbers(f)).length === 1 && (await d.redis.scard(p!.state.keys.dirty)) === 1, 'New York in its open campaign, Honolulu waiting');
      expect((await campaignNumbers({ ...f, campaignId: pacific })).length).toBe(0);
      expect(await p!.window!.closed()).toBe(true);
      expect(await e!.window!.closed()).toBe(false);
      // 18:00 UTC: 08:00 in Honolulu.
      now = Date.parse('2026-07-01T18:00:00Z');
      expect(await d.enforceWindow(rt, 'test')).toBe('Active,Active');
      await waitFor(async () => (await campaignNumbers({ ...f, campaignId: pacific })).map((n) => n.number).join() === phone('808', 0), 'Honolulu added when its window opened');
      expect((await campaignNumbers(f)).map((n) => n.number)).toEqual([phone('212', 0)]);
      expect((await allRunErrors(d, 'national')).map((x) => x.code)).toContain('no_route');
    } finally {
      await d.close(2000);
      await server.close();
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('a routed sync fed by webhooks', () => {
  it('moves a contact whose number changed group to the other campaign from HubSpot\'s webhook, reading the contact by id', async () => {
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    const hs = await startHubSpotStandIn({ webhookUrl: `${publicUrl}/webhooks/national` });
    // 16:00 in New York, 10:00 in Honolulu: both groups open.
    const { f, pacific, routes } = await eastAndPacific('2026-07-01T20:00:00Z');
    const { server } = f;
    const onIsland = hs.createContact({ firstname: 'Kai', phone: phone('808', 0) }).id;
    hs.createContact({ firstname: 'Ann', phone: phone('212', 0) });
    await hs.flushWebhooks();
    const { prefix, cleanup } = testPrefix();
    const d = await Daemon.start(daemonConfig(f, prefix, [{
      id: 'national', routes,
      source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, clientSecret: 'hs-client-secret' }, mapping: MAPPING, schedule: { every: '1d' }, compliance: COMPLIANCE,
    }], { http: { host: '127.0.0.1', port, publicUrl }, ...dialerOf(f) }),
    { log: quietLog, now: () => Date.parse('2026-07-01T20:00:00Z') });
    try {
      await settle(d);
      expect((await campaignNumbers({ ...f, campaignId: pacific })).map((n) => n.number)).toEqual([phone('808', 0)]);
      const searches = hs.stats.byRoute[SEARCH] ?? 0;
      hs.updateContact(onIsland, { phone: phone('212', 1) });
      await hs.flushWebhooks();
      await waitFor(async () => (await campaignNumbers({ ...f, campaignId: pacific })).length === 0 && (await campaignNumbers(f)).length === 2, 'the contact moved to the eastern campaign');
      expect((await campaignNumbers(f)).map((n) => n.number).sort()).toEqual([phone('212', 0), phone('212', 1)]);
      // One inbox for the sync; the contact the webhook named was read by id, not by a search of the selection.
      expect(hs.stats.byRoute[SEARCH] ?? 0).toBe(searches);
    } finally {
      await d.close(2000);
      await server.close();
      await hs.close();
      await cleanup();
    }
  }, 120_000);
});

describe('a routed import interrupted', () => {
  it('resumes in another process from the sync\'s checkpoint: each campaign ends with its group\'s numbers, once', async () => {
    const { f, pacific, routes } = await eastAndPacific('2026-07-01T20:00:00Z');
    const hs = await startHubSpotStandIn();
    const want = { east: ['212', '617'].flatMap((a) => Array.from({ length: 20 }, (_, i) => phone(a, i))), pacific: Array.from({ length: 20 }, (_, i) => phone('808', i)) };
    for (const p of [...want.east, ...want.pacific]) hs.createContact({ firstname: 'F', phone: p });
    const { prefix, cleanup } = testPrefix();
    // Pages of 10: six searches, paced at HubSpot's 5 a second, so the import is caught between two pages.
    const config = daemonConfig(f, prefix, [{
      id: 'national', routes, source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, clientSecret: 'hs-client-secret', pageSize: 10 },
      mapping: MAPPING, schedule: { every: '1d' }, compliance: COMPLIANCE,
    }], dialerOf(f));
    const now = () => Date.parse('2026-07-01T20:00:00Z');
    const a = await Daemon.start(config, { log: quietLog, now });
    let b: Daemon | undefined;
    try {
      const started = await waitFor(async () => (await runs(a, 'national')).find((r) => r.mode === 'full' && r.status === 'running' && r.seen >= 10), 'the import past its first page');
      await a.close(2000);
      b = await Daemon.start(config, { log: quietLog, now });
      const done = await waitFor(async () => (await runs(b!, 'national')).find((r) => r.id === started.id && r.status === 'done'), 'the import resumed and done');
      // It was stopped between two pages and read on from the page after the last one it applied: each contact once.
      expect(done).toHaveProperty('interruptedAt');
      expect(done.seen).toBe(60);
      await settle(b);
      const numbers = { east: (await campaignNumbers(f)).map((n) => n.number), pacific: (await campaignNumbers({ ...f, campaignId: pacific })).map((n) => n.number) };
      expect(numbers.east.sort()).toEqual(want.east.sort());
      expect(numbers.pacific.sort()).toEqual(want.pacific.sort());
    } finally {
      await b?.close(2000);
      await f.server.close();
      await hs.close();
      await cleanup();
    }
  }, 120_000);
});

describe('a routed sync\'s mirror', () => {
  it('writes every campaign\'s calls as activities, counts them against each callee\'s window and keeps Florida\'s call starts for its cap', async () => {
    // 16:00 in New York, 10:00 in Honolulu: both groups open.
    const start = '2026-07-01T20:00:00Z';
    const { f, pacific, routes } = await eastAndPacific(start, {
      mode: 'Power', agents: 2, maxAttempts: 3, callingHours: ALL_DAY, retryDelaySeconds: { NoAnswer: 900, Busy: 600, CallError: 600, Machine: 900, Abandoned: 600 },
    });
    const { server } = f;
    const dir = mkdtempSync(join(tmpdir(), 'cds-routes-mirror-'));
    const csv = join(dir, 'national.csv');
    const sink = join(dir, 'activities.jsonl');
    const phones = [phone('212', 0), phone('212', 1), phone('305', 0), phone('305', 1), phone('808', 0), phone('808', 1)];
    writeFileSync(csv, `id,phone\n${phones.map((p, i) => `c${i},${p}`).join('\n')}\n`);
    const { prefix, cleanup } = testPrefix();
    const d = await Daemon.start(daemonConfig(f, prefix, [{
      id: 'national', routes,
      source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, schedule: { every: '1d' }, compliance: COMPLIANCE,
      mirror: { sink: { type: 'file', path: sink }, every: '1d', late: '1m' },
    }], dialerOf(f)),
    { log: quietLog, now: () => Date.parse(start) });
    try {
      const rt = d.runtimes.get('national')!;
      await settle(d);
      await server.advance(3600);
      const calls = { east: await callDetailRecords(f), pacific: await callDetailRecords({ ...f, campaignId: pacific }) };
      expect(calls.east.length).toBeGreaterThan(0);
      expect(calls.pacific.length).toBeGreaterThan(0);
      await d.triggerMirror('national', 'test');
      const written = await waitFor(async () => {
        let lines: { campaignId: string }[] = [];
        try { lines = readFileSync(sink, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)); } catch { return null; }
        return lines.length === calls.east.length + calls.pacific.length ? lines : null;
      }, 'an activity for every call of both campaigns');
      expect(written.filter((a) => a.campaignId === pacific).length).toBe(calls.pacific.length);
      const status = await syncStatus(rt);
      expect(status.routes!.map((r) => [r.window!.callsInside, r.window!.callsOutside, r.mirror?.mirrored])).toEqual([
        [calls.east.length, 0, calls.east.length], [calls.pacific.length, 0, calls.pacific.length]]);
      // Only Florida's numbers are under a cap: their starts are kept by the eastern campaign's window.
      expect((await d.redis.hkeys(rt.routes![0]!.state.keys.window.starts)).sort()).toEqual([phone('305', 0), phone('305', 1)]);
      expect(await d.redis.exists(rt.routes![1]!.state.keys.window.starts)).toBe(0);
    } finally {
      await d.close(2000);
      await server.close();
      await cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('the configuration of routes', () => {
  const base = { dialer: { baseUrl: 'http://127.0.0.1:1', accountId: 'a', apiToken: 't' } };
  const sync = (extra: Record<string, unknown>) => ({ id: 's', source: { type: 'csv', path: 'x.csv' }, mapping: { phone: 'phone' }, compliance: {}, ...extra });
  const problems = (raw: unknown): string[] => {
    try {
      parseConfig(raw, 'test', {});
      return [];
    } catch (err) {
      return (err as { problems: string[] }).problems;
    }
  };

  it('takes routes whose zones are IANA names, each zone in one route', () => {
    const c = parseConfig({ ...base, syncs: [sync({ routes: [{ campaignId: 'e', zones: ['America/New_York'] }, { campaignId: 'w', zones: ['America/Los_Angeles'] }] })] }, 'test', {});
    expect(c.syncs[0]!.routes).toHaveLength(2);
    expect(c.syncs[0]!.campaignId).toBe('');
  });

  it.each([
    ['a zone in two routes', sync({ routes: [{ campaignId: 'e', zones: ['America/New_York', 'America/Chicago'] }, { campaignId: 'c', zones: ['America/Chicago'] }] }),
      /^syncs\.0\.routes\.1\.zones\.0: America\/Chicago is already in routes\.0 \(campaign "e"\)/],
    ['a campaign in two routes', sync({ routes: [{ campaignId: 'e', zones: ['America/New_York'] }, { campaignId: 'e', zones: ['America/Chicago'] }] }),
      /^syncs\.0\.routes\.1\.campaignId: campaign "e" is already routes\.0's/],
    ['a zone no one knows', sync({ routes: [{ campaignId: 'e', zones: ['America/Nowhere'] }] }), /^syncs\.0\.routes\.0\.zones\.0: an IANA time zone/],
    ['both campaignId and routes', sync({ campaignId: 'x', routes: [{ campaignId: 'e', zones: ['America/New_York'] }] }), /^syncs\.0\.campaignId: give either campaignId .* or routes/],
    ['neither', sync({}), /^syncs\.0\.campaignId: give either campaignId/],
    ['routes with the rules off', sync({ compliance: { off: 'informational calls' }, routes: [{ campaignId: 'e', zones: ['America/New_York'] }] }), /^syncs\.0\.routes: routes need the calling-window rules \(they are off: informational calls\)/],
    ['routes beside compliance.zones', sync({ compliance: { zones: ['America/New_York'] }, routes: [{ campaignId: 'e', zones: ['America/New_York'] }] }), /^syncs\.0\.compliance\.zones: a routed sync takes the zones of its routes/],
    ['a clock in two routes', sync({ routes: [{ campaignId: 'w', zones: ['America/Phoenix'] }, { campaignId: 'b', zones: ['America/Creston'] }] }),
      /^syncs\.0\.routes\.1\.zones\.0: America\/Creston keeps the same clock as America\/Phoenix, which is already in routes\.0 \(campaign "w"\)/],
    ['a state without a row', sync({ routes: [{ campaignId: 'x', states: ['XX'] }] }), /^syncs\.0\.routes\.0\.states\.0: a state with a row \(FL, RI, .*\); a state without one has the federal window/],
    ['a state in two routes for one clock', sync({ routes: [{ campaignId: 'a', states: ['FL'] }, { campaignId: 'b', states: ['FL'], zones: ['America/Chicago'] }] }),
      /^syncs\.0\.routes\.1\.states\.0: FL is already in routes\.0 \(campaign "a"\) for every clock/],
    ['a route with neither zones nor states', sync({ routes: [{ campaignId: 'a' }] }), /^syncs\.0\.routes\.0\.zones: give the route zones, states or both/],
    ['routes by state without the state rows', sync({ compliance: { stateRules: false }, routes: [{ campaignId: 'a', states: ['RI'] }, { campaignId: 'b', zones: ['America/New_York'] }] }),
      /^syncs\.0\.routes\.0\.states: routes by state need the state rows \(compliance\.stateRules\)/],
  ])('refuses %s, saying what is wrong', (_, s, message) => {
    const found = problems({ ...base, syncs: [s] });
    expect(found.some((p) => message.test(p)), found.join('\n')).toBe(true);
  });

  it('takes routes by state beside routes by zone on the same clocks, and one state on two clocks', () => {
    expect(problems({ ...base, syncs: [sync({ routes: [
      { campaignId: 'ny', zones: ['America/New_York', 'America/Chicago'] }, { campaignId: 'ri', states: ['RI'] },
      { campaignId: 'fe', states: ['FL'], zones: ['America/New_York'] }, { campaignId: 'fc', states: ['FL'], zones: ['America/Chicago'] },
    ] })] })).toEqual([]);
  });

  it('takes the daemon\'s compliance block for a routed sync', () => {
    expect(problems({ ...base, compliance: {}, syncs: [sync({ compliance: undefined, routes: [{ campaignId: 'e', zones: ['America/New_York'] }] })] })).toEqual([]);
    // Without any block: the default rules.
    expect(problems({ ...base, syncs: [sync({ compliance: undefined, routes: [{ campaignId: 'e', zones: ['America/New_York'] }] })] })).toEqual([]);
  });
});
