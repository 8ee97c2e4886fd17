// The calling window governs every number its campaign holds, and fails closed (issue 36 §1, §2), on the reference
// server's simulation clock: numbers another key adds to a governed campaign are judged by their number and held to
// their windows; one with no zone holds the campaign Paused until it is gone; after Redis lost the daemon's state at
// night, the next processes pause the campaign before anything else and no call starts before its callee's window.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { WindowStatus } from '../../daemon/compliance/campaign-window.ts';
import { locate } from '../../daemon/compliance/locate.ts';
import { callingWindow, DEFAULT_RULE_SET } from '../../api/calling-window/window.ts';
import { Daemon } from '../../daemon/app.ts';
import type { SyncRuntime } from '../../daemon/sync/run.ts';
import { toUtc } from '../../daemon/local-time.ts';
import { callDetailRecords, campaignNumbers, daemonConfig, quietLog, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { createAccount, createCampaign, createKey, startServer } from '../support/server.ts';

const TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
const STEP_S = 300;
const OPS_TOKEN = 'an operations token for the holdings tests';
const ops = { authorization: `Basic ${Buffer.from(`ops:${OPS_TOKEN}`).toString('base64')}` };
const dir = mkdtempSync(join(tmpdir(), 'cds-holdings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Call { number: string; attempt: number; startedAtLocal: string }

async function dialer(start: string): Promise<DialerFixture & { otherToken: string }> {
  const server = await startServer({ seed: 36, clockStart: start });
  const account = await createAccount(server, 'Holdings Co', TZ);
  const campaign = await createCampaign(server, account.id, {
    name: 'Governed', type: 'Dynamic', state: 'Active',
    // The server's own hours are all day: only the daemon's window holds the calls.
    dialer: { mode: 'Power', agents: 2, maxAttempts: 3, callingHours: ALL_DAY, retryDelaySeconds: { NoAnswer: 600, Busy: 600, CallError: 600, Machine: 600, Abandoned: 600 } },
  });
  const token = await createKey(server, account.id, ['CampaignAdmin']);
  // Another key, as the n8n node or the console would use: it adds numbers the daemon knows nothing of.
  const otherToken = await createKey(server, account.id, ['CampaignNumberAdmin']);
  return { server, accountId: account.id, token, campaignId: campaign.id, otherToken };
}

function config(f: DialerFixture, prefix: string, id: string, rows: string) {
  const csv = join(dir, `${id}-${prefix}.csv`);
  writeFileSync(csv, `id,phone\n${rows}\n`);
  return daemonConfig(f, prefix, [{
    id, campaignId: f.campaignId, source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, schedule: { every: '1d' },
    compliance: { checkEvery: '5m', margin: '10m' },
  }], { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
    http: { host: '127.0.0.1', port: 0, adminToken: OPS_TOKEN } });
}

async function addByHand(f: DialerFixture & { otherToken: string }, phones: string[]): Promise<void> {
  const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/numbers`, { method: 'POST', token: f.otherToken, json: phones.map((number) => ({ number })) });
  expect(res.status).toBeLessThan(300);
  await res.arrayBuffer();
}

async function campaignState(f: DialerFixture): Promise<string> {
  const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns?filter=${encodeURIComponent(JSON.stringify({ ids: [f.campaignId] }))}`, { token: f.token });
  return ((await res.json()) as { state: string }[])[0]!.state;
}

/** Calls that started outside their callee's window, the callee judged by its number. */
const outside = (calls: Call[]) => calls.filter((c) => !callingWindow(locate(c.number), DEFAULT_RULE_SET, toUtc(c.startedAtLocal, TZ)).open);

async function windowOf(d: Daemon): Promise<WindowStatus> {
  const body = await (await fetch(`${d.address}/ops/api/syncs`, { headers: ops })).json() as { syncs: { window: WindowStatus }[] };
  return body.syncs[0]!.window;
}

/**
 * A daemon whose CSV sync has put one New York number into the governed campaign at `start`, for `body`; `clock.now`
 * is the daemon's time (the test moves it with the dialer's).
 */
async function withGoverned(start: string, id: string, body: (g: { f: Awaited<ReturnType<typeof dialer>>; d: Daemon; rt: SyncRuntime; clock: { now: number } }) => Promise<void>) {
  const f = await dialer(start);
  const { prefix, cleanup } = testPrefix();
  const clock = { now: Date.parse(start) };
  const d = await Daemon.start(config(f, prefix, id, 'c1,+12122345670'), { log: quietLog, now: () => clock.now });
  try {
    await waitFor(async () => (await campaignNumbers(f)).length === 1, 'the daemon\'s number in the open campaign');
    await body({ f, d, rt: d.runtimes.get(id)!, clock });
  } finally {
    await d.close(2000);
    await f.server.close();
    await cleanup();
  }
}

describe('numbers another key adds to a governed campaign', () => {
  it('are judged by their number and held to their windows', async () => {
    // 16:30 in New York, 21:30 in London: New York's window is open, London's closed.
    await withGoverned('2026-07-01T20:30:00Z', 'governed', async ({ f, d, rt, clock }) => {
      expect(await campaignState(f)).toBe('Active');
      const london = ['+447912345678', '+447912345679'];
      await addByHand(f, london);
      // The next check counts records the daemon does not account for, pauses, reads them and judges them.
      expect(await d.enforceWindow(rt, 'test', true)).toBe('Paused');
      expect(await campaignState(f)).toBe('Paused');
      const w = await windowOf(d);
      expect(w.holdings).toMatchObject({ foreign: 2, unjudged: 0, current: true });
      expect(w.holdings.groups).toEqual(['Europe/Guernsey+Europe/Isle_of_Man+Europe/Jersey+Europe/London']);
      expect(w.holdings.numbers.map((n) => n.phone)).toEqual(london);
      expect(w.holdings.numbers[0]!.evidence).toMatch(/^country code \+44 .*Europe\/London \(group /);
      // One such number's evidence and window, as for a number the daemon admitted.
      const one = await fetch(`${d.address}/ops/api/syncs/governed/window/${encodeURIComponent(london[0]!)}`, { headers: ops });
      expect(one.status).toBe(200);
      expect(await one.json()).toMatchObject({ open: false });
      // A day of checks every 5 minutes: no call outside any callee's window, and the London numbers are called when
      // both windows are open (12:00–20:00 UTC, New York's 08:00 to London's 21:00).
      for (let t = 0; t < 86_400 / STEP_S; t++) {
        await d.enforceWindow(rt, 'test', true);
        clock.now += STEP_S * 1000;
        await f.server.advance(STEP_S);
      }
      const calls = await callDetailRecords<Call>(f);
      expect(outside(calls)).toEqual([]);
      expect(new Set(calls.map((c) => c.number))).toEqual(new Set(['+12122345670', ...london]));
    });
  }, 180_000);

  it('a number with no zone holds the campaign Paused, named on /ops, until it is deleted', async () => {
    // 12:00 in New York: open.
    await withGoverned('2026-07-01T16:00:00Z', 'nozone', async ({ f, d, rt }) => {
      await addByHand(f, ['+80012345678']);
      expect(await d.enforceWindow(rt, 'test', true)).toBe('Paused');
      const w = await windowOf(d);
      expect(w.holdings).toMatchObject({ foreign: 1, unjudged: 1 });
      expect(w.heldClosedBecause).toMatch(/1 number whose callee's zone is unknown .*delete it/);
      expect(w.holdings.numbers[0]!.evidence).toMatch(/no zone/);
      // Deleted by its owner: the count drops, the next check reads again and the campaign opens.
      const held = (await campaignNumbers(f)).find((n) => n.number === '+80012345678')!;
      const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/numbers`, { method: 'DELETE', token: f.otherToken, json: [held.id] });
      expect(res.status).toBeLessThan(300);
      await res.arrayBuffer();
      expect(await d.enforceWindow(rt, 'test', true)).toBe('Active');
      expect((await windowOf(d)).holdings).toMatchObject({ foreign: 0, unjudged: 0, current: true });
    });
  }, 60_000);

  it('a read that failed leaves the campaign Paused until one succeeds', async () => {
    await withGoverned('2026-07-01T16:00:00Z', 'failing', async ({ f, d, rt }) => {
      expect(await campaignState(f)).toBe('Active');
      // The last look at the campaign failed (the dialer did not answer): what it holds is not known.
      await d.redis.hset(rt.state.keys.window.meta, 'current', '0', 'judgeError', 'the dialer did not answer');
      // Numbers admitted meanwhile decide on that judgement: Paused, with the reason on /ops.
      expect((await rt.window!.enforce('numbers admitted', false)).state).toBe('Paused');
      expect(await campaignState(f)).toBe('Paused');
      expect((await windowOf(d)).heldClosedBecause).toMatch(/could not be read: the dialer did not answer/);
      // The next check's look succeeds: the window decides again.
      expect(await d.enforceWindow(rt, 'test', true)).toBe('Active');
      expect((await windowOf(d)).heldClosedBecause).toBeNull();
    });
  }, 60_000);
});

describe('Redis lost the daemon\'s state at night', () => {
  it('the next processes pause the campaign before anything else, and no call starts before its callee\'s window', async () => {
    // 16:00 in New York: the numbers go in while the window is open.
    const start = '2026-07-01T20:00:00Z';
    const f = await dialer(start);
    const { prefix, cleanup } = testPrefix();
    let now = Date.parse(start);
    const phones = ['+12122345670', '+12122345671', '+13122345670', '+12132345670'];
    const cfg = config(f, prefix, 'night', phones.map((p, i) => `c${i},${p}`).join('\n'));
    const first = await Daemon.start(cfg, { log: quietLog, now: () => now });
    let a: Daemon | undefined, b: Daemon | undefined;
    try {
      await waitFor(async () => (await campaignNumbers(f)).length === phones.length, 'the numbers in the open campaign');
      // 01:36 in New York: the check pauses the campaign before the dialer's clock gets there; the numbers wait.
      now = Date.parse('2026-07-02T05:36:00Z');
      expect(await first.enforceWindow(first.runtimes.get('night')!, 'test', true)).toBe('Paused');
      await f.server.advance((now - Date.parse(start)) / 1000);
      await first.close(2000);
      // Redis loses everything the daemon kept (a restart without persistence); two processes start on it.
      await cleanup();
      // The first without schedules, so that no run of its own reads the CSV again: what it sets at its start is what
      // the dialer dials by until then (a CRM read takes minutes on a large list).
      a = await Daemon.start(cfg, { log: quietLog, now: () => now, schedules: false });
      expect(await campaignState(f)).toBe('Paused');
      now += STEP_S * 1000;
      await f.server.advance(STEP_S);
      expect(await callDetailRecords<Call>(f)).toEqual([]);
      b = await Daemon.start(cfg, { log: quietLog, now: () => now });
      expect(await campaignState(f)).toBe('Paused');
      // Through the night and the morning, both processes checking every 5 minutes.
      for (let t = 0; now < Date.parse('2026-07-02T17:00:00Z'); t++) {
        const d = t % 2 ? a : b;
        await d.enforceWindow(d.runtimes.get('night')!, 'test', true);
        now += STEP_S * 1000;
        await f.server.advance(STEP_S);
      }
      const calls = await callDetailRecords<Call>(f);
      expect(outside(calls)).toEqual([]);
      // Every number called, none before the window they share opened: 08:00 in Los Angeles (15:00 UTC).
      expect(new Set(calls.map((c) => c.number))).toEqual(new Set(phones));
      expect(calls.filter((c) => toUtc(c.startedAtLocal, TZ) < Date.parse('2026-07-02T15:00:00Z'))).toEqual([]);
    } finally {
      await Promise.all([first.close(2000), a?.close(2000), b?.close(2000)]);
      await f.server.close();
      await cleanup();
    }
  }, 180_000);
});
