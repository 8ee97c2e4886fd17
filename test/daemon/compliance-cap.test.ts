// Proof on the reference server's simulation clock: a campaign whose dialer allows 6 attempts a number record, 15
// minutes apart, every call unanswered (each ends FailureWithRetryPending until the 6th), and Florida numbers (3
// calls in 24 hours): the mirror reads each number's 3rd call, the number is taken out of the campaign (its record
// deleted, its retry canceled) and added again, as a new record, when its cap passes. Over 26 simulated hours no
// number gets a 4th call in 24 hours; each gets its 4th call 24 hours or more after its first. The same for a routed
// sync (its eastern route's campaign, its own window and state).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Daemon } from '../../daemon/app.ts';
import { overCap } from '../../daemon/compliance/cap.ts';
import { toUtc } from '../../daemon/local-time.ts';
import { callKey, mirrorRun } from '../../daemon/mirror/mirror.ts';
import { dryRun } from '../../daemon/sync/dry-run.ts';
import { routeId } from '../../daemon/state/keys.ts';
import { syncStatus } from '../../daemon/sync/status.ts';
import { DEFAULT_OUTCOMES } from '../../server/dialer/model.ts';
import { callDetailRecords, daemonConfig, quietLog, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { createAccount, createCampaign, createKey, startServer } from '../support/server.ts';

const TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
// Miami, Miami, Fort Lauderdale, Orlando: Florida, Eastern time.
const FLORIDA = ['+13052345670', '+17862345671', '+19542345672', '+14072345673'];
const CAP = { calls: 3, hours: 24 };
const STEP_S = 300;
const dir = mkdtempSync(join(tmpdir(), 'cds-cap-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Call { number: string; attempt: number; startedAtLocal: string; outcome: string }

async function dialer(start: string, retrySeconds = 900): Promise<DialerFixture & { pacific: string }> {
  // Nobody answers: every call but a record's last ends FailureWithRetryPending.
  const server = await startServer({ seed: 27, clockStart: start, outcomes: { ...DEFAULT_OUTCOMES, ringResult: { Answer: 0, NoAnswer: 1, Busy: 0, CallError: 0 } } });
  const account = await createAccount(server, 'Cap Co', TZ);
  const campaign = await createCampaign(server, account.id, {
    name: 'Florida', type: 'Dynamic', state: 'Active',
    dialer: { mode: 'Power', agents: 2, maxAttempts: 6, callingHours: ALL_DAY, retryDelaySeconds: { NoAnswer: retrySeconds, Busy: retrySeconds, CallError: retrySeconds, Machine: retrySeconds, Abandoned: retrySeconds } },
  });
  // A routed sync's other campaign (no Florida number goes there).
  const pacific = (await createCampaign(server, account.id, { name: 'Pacific', type: 'Dynamic', state: 'Active', dialer: { callingHours: ALL_DAY } })).id;
  const token = await createKey(server, account.id, ['CampaignAdmin']);
  return { server, accountId: account.id, token, campaignId: campaign.id, pacific };
}

// (Without a mirror of its own, a sync under the state rows is given one that only counts calls for their caps.)
describe.each([['one campaign', false, true], ['a routed sync', true, true], ['one campaign, no mirror configured', false, false]])('a per-number cap with a dialer allowing more attempts than the cap (%s)', (_, routed, mirrored) => {
  it('takes a Florida number out at its 3rd call while its retry is pending and adds it again when its cap passes: no 4th call in 24 hours', async () => {
    // 07:00 in Miami: Florida's window opens at 08:00.
    const start = '2026-07-01T11:00:00Z';
    const f = await dialer(start);
    const { prefix, cleanup } = testPrefix();
    const csv = join(dir, 'florida.csv');
    const activities = join(dir, `calls-${routed ? 'routed' : 'one'}.jsonl`);
    writeFileSync(csv, `id,phone\n${FLORIDA.map((p, i) => `c${i},${p}`).join('\n')}\n`);
    let now = Date.parse(start);
    const d = await Daemon.start(daemonConfig(f, prefix, [{
      id: 'cap', ...(routed ? { routes: [{ campaignId: f.campaignId, zones: ['America/New_York'] }, { campaignId: f.pacific, zones: ['Pacific/Honolulu'] }] } : { campaignId: f.campaignId }),
      source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, schedule: { every: '1d' },
      compliance: { checkEvery: '5m', margin: '10m' },
      ...(mirrored ? { mirror: { sink: { type: 'file', path: activities }, every: '1d', late: '1m' } } : {}),
    }], { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ } }),
    { log: quietLog, now: () => now });
    try {
      const rt = d.runtimes.get('cap')!;
      // A routed sync's Florida numbers are its eastern route's: that campaign's window, state and mirror.
      const campaign = routed ? rt.routes![0]! : rt;
      const mirror = d.mirrors.get(routed ? routeId('cap', f.campaignId) : 'cap')!;
      const keys = campaign.state.keys;
      await waitFor(async () => (await d.redis.scard(keys.dirty)) === FLORIDA.length, 'the numbers waiting for the window');
      let takenOut = 0;
      let dryRunChecked = false;
      for (let t = 0; t < (26 * 3600) / STEP_S; t++) {
        now += STEP_S * 1000;
        await f.server.advance(STEP_S);
        // The window's check (opens the campaign, releases numbers whose cap passed), then the mirror's read.
        await d.enforceWindow(rt, 'test', true);
        await mirrorRun(mirror, {});
        takenOut = Math.max(takenOut, await d.redis.hlen(keys.window.takenOut));
        // A number taken out is deleted before the dialer's clock moves on (its retry is 15 minutes away).
        await waitFor(async () => {
          const out = await d.redis.hkeys(keys.window.takenOut);
          return !out.length || (await d.redis.hmget(keys.have, ...out)).every((h) => h === null);
        }, 'the numbers taken out at their cap deleted');
        if (takenOut && !dryRunChecked) {
          // Deleted, its contact still wanting it: a dry run treats it as the plan does, never an add.
          const lines: string[] = [];
          expect((await dryRun(rt, (l) => lines.push(l), 100)).add).toBe(0);
          expect(lines.filter((l) => /^ +add /.test(l))).toEqual([]);
          dryRunChecked = true;
        }
      }
      const calls = await callDetailRecords<Call>(f);
      const starts = new Map(FLORIDA.map((p) => [p, calls.filter((c) => c.number === p).map((c) => toUtc(c.startedAtLocal, TZ)).sort((a, b) => a - b)]));
      const over = FLORIDA.map((p) => overCap(starts.get(p)!, CAP));
      expect(over).toEqual(FLORIDA.map(() => 0));
      expect(takenOut).toBeGreaterThan(0);
      for (const p of FLORIDA) {
        const s = starts.get(p)!;
        // Its first record's 3 calls on day one, then (added again) more once its cap passed.
        expect(s.length, p).toBeGreaterThanOrEqual(4);
        expect(s[3]! - s[0]!, p).toBeGreaterThanOrEqual(24 * 3_600_000);
        // The calls after the 3rd are a new record's (its attempts counted from 1 again).
        expect(calls.filter((c) => c.number === p && c.attempt === 1).length, p).toBeGreaterThanOrEqual(2);
      }
      expect(calls.some((c) => c.attempt > 3)).toBe(false);
      if (mirrored) {
        // Each call once among the activities, a number's calls after it was added again (attempts from 1) too.
        await mirrorRun(mirror, {});
        const lines = readFileSync(activities, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { key: string }).key);
        expect(lines.length).toBe(new Set(lines).size);
        expect(new Set(lines)).toEqual(new Set(calls.map((c) => callKey(campaign.config.campaignId, c))));
      } else {
        expect(mirror.sink.kind).toBe('none');
      }
    } finally {
      await d.close(2000);
      await f.server.close();
      await cleanup();
    }
  }, 300_000);
});

// The take-out does not wait for the mirror: every window check reads the campaign's numbers with a retry pending and
// counts their records' attempts the mirror has not read yet; and the last process to stop pauses the campaign, since
// nothing would take a number out while no process runs. Retries 10 minutes apart; the daemon stopped for 30 minutes
// in the morning's first calls; the mirror read every 2 minutes, or every 30 (slower than the retries).
describe.each([['2 minutes', 2], ['30 minutes', 30]])('a per-number cap with the mirror read every %s and the daemon stopped for 30 minutes', (_, mirrorEvery) => {
  it('gives no number a 4th call in 24 hours, and no call while no process runs', async () => {
    const start = '2026-07-01T11:00:00Z';
    const f = await dialer(start, 600);
    const { prefix, cleanup } = testPrefix();
    const csv = join(dir, `florida-${mirrorEvery}.csv`);
    writeFileSync(csv, `id,phone\n${FLORIDA.map((p, i) => `c${i},${p}`).join('\n')}\n`);
    let now = Date.parse(start);
    const config = daemonConfig(f, prefix, [{
      id: 'cap', campaignId: f.campaignId, source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, schedule: { every: '1d' },
      compliance: { checkEvery: '5m', margin: '10m' }, mirror: { sink: { type: 'none' }, every: '1d', late: '1m' },
    }], { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ } });
    let d = await Daemon.start(config, { log: quietLog, now: () => now });
    // 08:16 to 08:46 in Miami: no process runs.
    const stopAt = Date.parse('2026-07-01T12:16:00Z');
    const restartAt = stopAt + 30 * 60_000;
    let pausedWhileStopped: string | null = null;
    let takenOut = 0;
    try {
      await waitFor(async () => (await d.redis.scard(d.runtimes.get('cap')!.state.keys.dirty)) === FLORIDA.length, 'the numbers waiting for the window');
      for (let t = 0; t < (26 * 3600) / 120; t++) {
        now += 120_000;
        await f.server.advance(120);
        if (now === stopAt) {
          // Two processes: the first to stop leaves the campaign to the other; the last pauses it.
          const other = await Daemon.start(config, { log: quietLog, now: () => now });
          await d.close(5000);
          expect((await campaign(f)).state).toBe('Active');
          await other.close(5000);
          pausedWhileStopped = (await campaign(f)).state;
          while (now < restartAt) { now += 120_000; await f.server.advance(120); }
          d = await Daemon.start(config, { log: quietLog, now: () => now });
        }
        const rt = d.runtimes.get('cap')!;
        const mirror = d.mirrors.get('cap')!;
        if ((now - Date.parse(start)) % 300_000 === 0) await d.enforceWindow(rt, 'test', true);
        if ((now - Date.parse(start)) % (mirrorEvery * 60_000) === 0) await mirrorRun(mirror, {});
        const keys = rt.state.keys;
        takenOut = Math.max(takenOut, await d.redis.hlen(keys.window.takenOut));
        // A number taken out is deleted (a plan) before the dialer's clock moves on.
        await waitFor(async () => {
          const out = await d.redis.hkeys(keys.window.takenOut);
          return !out.length || (await d.redis.hmget(keys.have, ...out)).every((h) => h === null);
        }, 'the numbers taken out at their cap deleted');
      }
      const calls = await callDetailRecords<Call>(f);
      const starts = new Map(FLORIDA.map((p) => [p, calls.filter((c) => c.number === p).map((c) => toUtc(c.startedAtLocal, TZ)).sort((a, b) => a - b)]));
      expect(FLORIDA.map((p) => overCap(starts.get(p)!, CAP))).toEqual(FLORIDA.map(() => 0));
      expect(pausedWhileStopped).toBe('Paused');
      expect(calls.filter((c) => { const t = toUtc(c.startedAtLocal, TZ); return t > stopAt && t < restartAt; })).toEqual([]);
      expect(takenOut).toBeGreaterThan(0);
      // `status` (and /ops) say what holds the cap, with a process and without.
      expect((await syncStatus(d.runtimes.get('cap')!)).window!.capHeldBy).toMatch(/^while a process runs: .*; while none runs: the campaign is Paused/);
      // Every number called up to its cap on day one, and again once it passed.
      for (const p of FLORIDA) expect(starts.get(p)!.length, p).toBeGreaterThanOrEqual(4);
    } finally {
      await d.close(2000);
      await f.server.close();
      await cleanup();
    }
  }, 300_000);
});

async function campaign(f: DialerFixture): Promise<{ state: string }> {
  const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns?filter=${encodeURIComponent(JSON.stringify({ ids: [f.campaignId] }))}`, { token: f.token });
  return ((await res.json()) as { state: string }[])[0]!;
}
