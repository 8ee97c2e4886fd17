// Proof on the reference server's simulation clock: a sync with a calling-window rule set holds its campaign Paused
// outside the window every callee shares, across both 2026 US DST changes, with numbers in every US zone, Indiana's
// split area codes, Arizona (and the Navajo Nation's 928), Hawaii, Alaska, Puerto Rico, Florida, Rhode Island,
// Toronto and London: every call's start, in its callee's local time, is inside the callee's window; a number with
// no zone never enters; the state the daemon sets is made good after its Redis state is lost; a Florida number at
// its cap of 3 calls in 24 hours is held until the oldest call ages out.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { CampaignWindow, type WindowStatus } from '../../daemon/compliance/campaign-window.ts';
import { locate } from '../../daemon/compliance/locate.ts';
import { parseConfig } from '../../daemon/config.ts';
import { DialerClient } from '../../daemon/dialer.ts';
import { DaemonKeys, campaignKey } from '../../daemon/state/keys.ts';
import { callingWindow, DEFAULT_RULE_SET } from '../../api/calling-window/window.ts';
import { Daemon } from '../../daemon/app.ts';
import { toUtc } from '../../daemon/local-time.ts';
import { callDetailRecords, campaignNumbers, daemonConfig, quietLog, REDIS_URL, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { startRedisCluster } from '../support/redis-cluster.ts';
import { createAccount, createCampaign, createKey, startServer } from '../support/server.ts';

const TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
const AREAS = ['212', '312', '303', '602', '928', '213', '907', '808', '787', '305', '850', '219', '812', '317', '401', '416'];
const PHONES = [...AREAS.flatMap((a) => [0, 1].map((i) => `+1${a}234${String(5670 + i)}`)), '+447912345678', '+447912345679'];
const STEP_S = 300;
const OPS_TOKEN = 'an operations token for the window tests';
const dir = mkdtempSync(join(tmpdir(), 'cds-compliance-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Call { number: string; attempt: number; startedAtLocal: string }

async function dialer(start: string): Promise<DialerFixture> {
  const server = await startServer({ seed: 27, clockStart: start });
  const account = await createAccount(server, 'Windows Co', TZ);
  const campaign = await createCampaign(server, account.id, {
    name: 'National', type: 'Dynamic', state: 'Active',
    // The server's own hours are all day: only the daemon's window holds the calls.
    dialer: { mode: 'Power', agents: 2, maxAttempts: 3, callingHours: ALL_DAY, retryDelaySeconds: { NoAnswer: 900, Busy: 600, CallError: 600, Machine: 900, Abandoned: 600 } },
  });
  // Changing a campaign's state takes the Campaign Admin role.
  const token = await createKey(server, account.id, ['CampaignAdmin']);
  return { server, accountId: account.id, token, campaignId: campaign.id };
}

/** A one-sync configuration over a CSV of `rows` (`id,phone` lines) under the default rule set. */
function csvSync(f: DialerFixture, prefix: string, id: string, rows: string, redis?: Record<string, unknown>) {
  const csv = join(dir, `${id}.csv`);
  writeFileSync(csv, `id,phone\n${rows}\n`);
  const config = daemonConfig(f, prefix, [{
    id, campaignId: f.campaignId, source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, schedule: { every: '1d' }, compliance: {},
  }], { ...(redis ? { redis } : {}), dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ } });
  return { csv, config };
}

/** The campaign's state as the dialer tells it. */
async function campaignState(f: DialerFixture): Promise<string> {
  const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns?filter=${encodeURIComponent(JSON.stringify({ ids: [f.campaignId] }))}`, { token: f.token });
  return ((await res.json()) as { state: string }[])[0]!.state;
}

describe.each([
  ['spring forward (8 March 2026)', '2026-03-07T10:00:00Z'],
  ['fall back (1 November 2026)', '2026-10-31T10:00:00Z'],
])('calling windows across the %s', (_, start) => {
  it('starts every call inside its callee\'s window and never adds a number with no zone', async () => {
    const f = await dialer(start);
    const { prefix, cleanup } = testPrefix();
    const csv = join(dir, `${start.slice(0, 10)}.csv`);
    // The last contact's zone field names no zone and its number (+800, international freephone) maps to none.
    writeFileSync(csv, `id,phone,tz\n${PHONES.map((p, i) => `c${i},${p},`).join('\n')}\nnowhere,+80012345678,Mars/Base\n`);
    let now = Date.parse(start);
    const d = await Daemon.start(daemonConfig(f, prefix, [{
      id: 'national', campaignId: f.campaignId, source: { type: 'csv', path: csv },
      mapping: { phone: 'phone', timeZone: 'tz' }, schedule: { every: '1d' },
      compliance: { checkEvery: '5m', margin: '10m' },
      mirror: { sink: { type: 'file', path: join(dir, `${start.slice(0, 10)}.jsonl`) }, every: '1d' },
    }], { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
      http: { host: '127.0.0.1', port: 0, adminToken: OPS_TOKEN } }),
    { log: quietLog, now: () => now });
    try {
      const rt = d.runtimes.get('national')!;
      // 05:00 in New York: closed for every callee; the import admits the groups and pauses the campaign.
      await waitFor(async () => (await d.redis.scard(rt.state.keys.dirty)) === PHONES.length, 'the numbers waiting for the window');
      expect(await rt.window!.closed()).toBe(true);
      const states: string[] = [];
      for (let t = 0; t < (3 * 86_400) / STEP_S; t++) {
        now += STEP_S * 1000;
        await f.server.advance(STEP_S);
        // The window's check, as its scheduler runs it every checkEvery.
        const state = await d.enforceWindow(rt, 'test', true);
        if (state !== states.at(-1)) states.push(state);
        if (state === 'Active' && states.length === 1 + states.indexOf('Active') && (await campaignNumbers(f)).length < PHONES.length) {
          await waitFor(async () => (await campaignNumbers(f)).length === PHONES.length, 'the numbers added when the window opened');
        }
      }
      // Saturday's shared window opened and closed; Sunday stays shut (Rhode Island allows no Sunday call); Monday's opened.
      expect(states).toEqual(['Paused', 'Active', 'Paused', 'Active', 'Paused']);
      const calls = await callDetailRecords<Call>(f);
      const outside = calls.filter((c) => !callingWindow(locate(c.number), DEFAULT_RULE_SET, toUtc(c.startedAtLocal, TZ)).open);
      expect(outside).toEqual([]);
      // Every callee was called, in every zone.
      expect(new Set(calls.map((c) => c.number))).toEqual(new Set(PHONES));
      const numbers = await campaignNumbers(f);
      expect(numbers.map((n) => n.number)).not.toContain('+80012345678');
      const run = await d.redis.lrange(rt.state.keys.runs, 0, -1);
      const errors = (await Promise.all(run.map((id) => d.redis.lrange(rt.state.keys.runErrors(id), 0, -1)))).flat().map((e) => JSON.parse(e));
      expect(errors.some((e) => e.code === 'no_window' && /names no zone/.test(e.reason))).toBe(true);
      // The zone evidence of each number is kept for the operator.
      expect(await d.redis.hget(rt.state.keys.window.evidence, '+18082345670')).toMatch(/area code 808 .*Pacific\/Honolulu/);
      // /ops: the compliance report from the calls the mirror read (none outside), what is held, the next edge.
      await d.triggerMirror('national', 'test');
      const ops = async () => ((await (await fetch(`${d.address}/ops/api/syncs`, { headers: { authorization: `Basic ${Buffer.from(`ops:${OPS_TOKEN}`).toString('base64')}` } })).json()) as { syncs: { window: WindowStatus & { heldByWindow: number } }[] }).syncs[0]!.window;
      const w = await waitFor(async () => { const o = await ops(); return o.callsInside === calls.length ? o : null; }, 'every call counted by the mirror');
      expect(w).toMatchObject({ callsOutside: 0, heldByCap: 0, state: states.at(-1) });
      // 212 and 317 share New York's group: 16 area codes and London make 15 groups.
      expect(w.groups).toHaveLength(15);
      expect(Date.parse(w.nextEdgeAt!)).toBeGreaterThan(now);
      // One number's evidence and its own window now.
      const one = await fetch(`${d.address}/ops/api/syncs/national/window/${encodeURIComponent('+19282345670')}`, { headers: { authorization: `Basic ${Buffer.from(`ops:${OPS_TOKEN}`).toString('base64')}` } });
      expect(one.status).toBe(200);
      const body = await one.json() as { evidence: string; open: boolean; opensAt: string | null };
      expect(body.evidence).toMatch(/area code 928 .*America\/Denver, America\/Phoenix/);
      expect(body.open).toBe(callingWindow(locate('+19282345670'), DEFAULT_RULE_SET, now).open);
      const unknown = await fetch(`${d.address}/ops/api/syncs/national/window/${encodeURIComponent('+80012345678')}`, { headers: { authorization: `Basic ${Buffer.from(`ops:${OPS_TOKEN}`).toString('base64')}` } });
      expect(unknown.status).toBe(404);
    } finally {
      await d.close(2000);
      await f.server.close();
      await cleanup();
    }
  }, 240_000);
});

describe('a window edge missed', () => {
  it('is made good when Redis forgot the state the daemon set', async () => {
    const f = await dialer('2026-03-09T14:00:00Z'); // 10:00 in New York: open
    const { prefix, cleanup } = testPrefix();
    let now = Date.parse('2026-03-09T14:00:00Z');
    const d = await Daemon.start(csvSync(f, prefix, 'edge', 'c1,+12122345670').config, { log: quietLog, now: () => now });
    try {
      const rt = d.runtimes.get('edge')!;
      await waitFor(async () => (await campaignNumbers(f)).length === 1, 'the number in the open campaign');
      const state = () => campaignState(f);
      expect(await state()).toBe('Active');
      // 21:30 in New York, and Redis lost what the daemon set (a restart without the last second of AOF).
      now = Date.parse('2026-03-10T01:30:00Z');
      await d.redis.del(rt.state.keys.window.meta);
      expect(await d.enforceWindow(rt, 'test')).toBe('Paused');
      expect(await state()).toBe('Paused');
      expect(await rt.window!.closed()).toBe(true);
    } finally {
      await d.close(2000);
      await f.server.close();
      await cleanup();
    }
  });
});

describe('an edge passed while no process ran', () => {
  it('is made good by the next process at its start, before it does anything else; two processes agree', async () => {
    const f = await dialer('2026-07-01T14:00:00Z'); // 10:00 in New York: open
    const { prefix, cleanup } = testPrefix();
    let now = Date.parse('2026-07-01T14:00:00Z');
    const { config } = csvSync(f, prefix, 'down', 'c1,+12122345670\nc2,+13052345670');
    const state = () => campaignState(f);
    const first = await Daemon.start(config, { log: quietLog, now: () => now });
    await waitFor(async () => (await campaignNumbers(f)).length === 2, 'the numbers in the open campaign');
    expect(await state()).toBe('Active');
    await first.close(2000);
    // Florida's 20:00 passes (00:00 UTC) while no process runs; the next one pauses the campaign at its start.
    now = Date.parse('2026-07-02T00:30:00Z');
    const a = await Daemon.start(config, { log: quietLog, now: () => now });
    const b = await Daemon.start(config, { log: quietLog, now: () => now });
    try {
      expect(await state()).toBe('Paused');
      // Both processes check; the state stays what the window wants, and each sees it.
      expect(await a.enforceWindow(a.runtimes.get('down')!, 'test')).toBe('Paused');
      expect(await b.enforceWindow(b.runtimes.get('down')!, 'test')).toBe('Paused');
      // 08:00 in New York the next morning: Florida opens too.
      now = Date.parse('2026-07-02T12:00:00Z');
      expect(await b.enforceWindow(b.runtimes.get('down')!, 'test')).toBe('Active');
      expect(await a.enforceWindow(a.runtimes.get('down')!, 'test')).toBe('Active');
      expect(await state()).toBe('Active');
    } finally {
      await a.close(2000);
      await b.close(2000);
      await f.server.close();
      await cleanup();
    }
  });
});

describe('while the window is closed', () => {
  it('a contact that left still leaves the campaign at once', async () => {
    const f = await dialer('2026-07-01T14:00:00Z'); // 10:00 in New York: open
    const { prefix, cleanup } = testPrefix();
    let now = Date.parse('2026-07-01T14:00:00Z');
    const { csv, config } = csvSync(f, prefix, 'leave', 'c1,+12122345670\nc2,+12122345671');
    const d = await Daemon.start(config, { log: quietLog, now: () => now });
    try {
      const rt = d.runtimes.get('leave')!;
      await waitFor(async () => (await campaignNumbers(f)).length === 2, 'the numbers in the open campaign');
      now = Date.parse('2026-07-02T02:00:00Z'); // 22:00 in New York
      expect(await d.enforceWindow(rt, 'test')).toBe('Paused');
      writeFileSync(csv, 'id,phone\nc1,+12122345670\n');
      await d.triggerPull('leave', 'test');
      await waitFor(async () => (await campaignNumbers(f)).map((n) => n.number).join() === '+12122345670', 'the number of the contact gone deleted');
      expect(await rt.window!.closed()).toBe(true);
    } finally {
      await d.close(2000);
      await f.server.close();
      await cleanup();
    }
  });
});

describe('one selection split over syncs by zone', () => {
  it('puts each number in the campaign of the sync whose zones hold all of its callee\'s zones', async () => {
    const f = await dialer('2026-07-01T20:00:00Z'); // 16:00 in New York, 10:00 in Honolulu: both open
    const other = await createCampaign(f.server, f.accountId, { name: 'Pacific', type: 'Dynamic', state: 'Active', dialer: { callingHours: ALL_DAY } });
    const { prefix, cleanup } = testPrefix();
    const { csv, config } = csvSync(f, prefix, 'east', 'c1,+12122345670\nc2,+18082345670\nc3,+12192345670');
    // (The parsed sync less what parsing adds that a file cannot say: the rules it resolved.)
    const { rules: _resolved, dnc: _lists, ...parsed } = config.syncs[0]!;
    const both = daemonConfig(f, prefix, [
      { ...parsed, id: 'east', source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, compliance: { zones: ['America/New_York', 'America/Chicago'] } },
      { ...parsed, id: 'pacific', campaignId: other.id, source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, compliance: { zones: ['Pacific/Honolulu'] } },
    ], { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ } });
    const d = await Daemon.start(both, { log: quietLog, now: () => Date.parse('2026-07-01T20:00:00Z') });
    try {
      await waitFor(async () => (await campaignNumbers(f)).length === 2, 'New York and Indiana in the eastern campaign');
      const pacific = { ...f, campaignId: other.id };
      await waitFor(async () => (await campaignNumbers(pacific)).length === 1, 'Honolulu in the Pacific campaign');
      expect((await campaignNumbers(f)).map((n) => n.number).sort()).toEqual(['+12122345670', '+12192345670']);
      expect((await campaignNumbers(pacific)).map((n) => n.number)).toEqual(['+18082345670']);
      // Another sync's numbers are no record error of this one.
      const east = d.runtimes.get('east')!;
      const runs = await d.redis.lrange(east.state.keys.runs, 0, -1);
      expect((await Promise.all(runs.map((id) => d.redis.lrange(east.state.keys.runErrors(id), 0, -1)))).flat()).toEqual([]);
    } finally {
      await d.close(2000);
      await f.server.close();
      await cleanup();
    }
  });
});

describe('on a Redis Cluster', () => {
  it('holds numbers while the window is closed and adds them when it opens', async () => {
    const cluster = await startRedisCluster();
    const f = await dialer('2026-07-01T10:00:00Z'); // 06:00 in New York: closed
    const { prefix } = testPrefix();
    let now = Date.parse('2026-07-01T10:00:00Z');
    const d = await Daemon.start(csvSync(f, prefix, 'cl', 'c1,+12122345670\nc2,+18082345670', { cluster: cluster.urls, prefix }).config, { log: quietLog, now: () => now });
    try {
      const rt = d.runtimes.get('cl')!;
      await waitFor(async () => (await d.redis.scard(rt.state.keys.dirty)) === 2, 'the numbers waiting for the window');
      expect(await rt.window!.closed()).toBe(true);
      expect(await campaignNumbers(f)).toEqual([]);
      // 18:00 UTC: 08:00 in Honolulu, 14:00 in New York.
      now = Date.parse('2026-07-01T18:00:00Z');
      expect(await d.enforceWindow(rt, 'test')).toBe('Active');
      await waitFor(async () => (await campaignNumbers(f)).length === 2, 'the numbers added when the window opened');
      expect((await rt.window!.status()).groups).toEqual(['America/New_York', 'Pacific/Honolulu']);
    } finally {
      await d.close(2000);
      await f.server.close();
      await cluster.stop();
    }
  }, 120_000);
});

describe('a per-number cap', () => {
  it('holds a Florida number with 3 calls in the last 24 hours until the oldest ages out, and no other', async () => {
    const f = await dialer('2026-07-01T12:00:00Z');
    const { prefix, cleanup } = testPrefix();
    const redis = new Redis(REDIS_URL);
    let now = Date.parse('2026-07-01T16:00:00Z');
    const keys = new DaemonKeys(prefix).sync('cap', campaignKey(f.server.url, f.accountId, f.campaignId));
    const w = new CampaignWindow({
      redis, keys, campaignId: f.campaignId, mapping: {}, log: quietLog, now: () => now,
      dialer: new DialerClient(parseConfig({ dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token }, syncs: [{ id: 'x', campaignId: 'c', source: { type: 'csv', path: 'x.csv' }, mapping: { phone: 'p' } }] }, 'x', {}).dialer),
      compliance: { ruleSet: DEFAULT_RULE_SET, evidence: 'all', checkEvery: 30_000, margin: 120_000, rescanEvery: 3_600_000 },
    });
    try {
      const fl = '+13052345670', ny = '+12122345670';
      await w.admit(w.locate({}, [fl, ny]));
      const at = (h: number) => Date.parse('2026-07-01T12:00:00Z') + h * 3_600_000;
      // Calls read twice (a mirror page read again within `late`) count once.
      await w.recordStarts([[fl, 1, at(0)], [fl, 2, at(1)], [ny, 1, at(0)], [ny, 2, at(1)], [ny, 3, at(2)]]);
      await w.recordStarts([[fl, 2, at(1)], [fl, 3, at(2)]]);
      // Starts kept by attempt alone (before a number added again could repeat attempt numbers) count once too.
      const kept = async () => Object.values((JSON.parse((await redis.hget(keys.window.starts, fl))!) as { s: Record<string, number> }).s).sort();
      expect(await kept()).toEqual([at(0), at(1), at(2)]);
      await redis.hset(keys.window.starts, fl, JSON.stringify({ 1: at(0), 2: at(1) }));
      await w.recordStarts([[fl, 1, at(0)], [fl, 2, at(1)], [fl, 3, at(2)]]);
      expect(await kept()).toEqual([at(0), at(1), at(2)]);
      expect([...await w.capped([fl, ny])]).toEqual([fl]);
      // The oldest counted call (12:00) ages out 24 hours later.
      expect(await redis.zscore(keys.window.capped, fl)).toBe(String(at(24)));
      now = at(24) - 1;
      expect(await w.releaseCapped()).toBe(0);
      now = at(24);
      expect(await w.releaseCapped()).toBe(1);
      expect([...await w.capped([fl])]).toEqual([]);
    } finally {
      redis.disconnect();
      await f.server.close();
      await cleanup();
    }
  });
});
