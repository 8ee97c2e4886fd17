// kill -9 with the calling window on: a daemon process (spawned, following the reference server's simulation clock
// through `dialerClock`) is killed while its campaign is Active; the server's clock passes the window's edge (the
// pause, `margin` before the close) while no process runs; the next process pauses the campaign at its start, before
// the clock moves on, and no call starts outside its callee's window through the night.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { locate } from '../../daemon/compliance/locate.ts';
import { callingWindow, DEFAULT_RULE_SET } from '../../api/calling-window/window.ts';
import { toUtc } from '../../daemon/local-time.ts';
import { callDetailRecords, campaignNumbers, REDIS_URL, spawnDaemon, testPrefix, waitFor, type DaemonProcess } from '../support/daemon.ts';
import { createAccount, createCampaign, createKey, startServer } from '../support/server.ts';

const TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
// New York in July (EDT, UTC-4): the federal window is 12:00Z–01:00Z; with a 30-minute margin the daemon pauses at 00:30Z.
const START = '2026-07-01T23:00:00Z';
const PAUSE_EDGE = Date.parse('2026-07-02T00:30:00Z');
const PHONES = Array.from({ length: 400 }, (_, i) => `+1212234${String(5000 + i)}`);
const dir = mkdtempSync(join(tmpdir(), 'cds-compliance-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Call { number: string; attempt: number; startedAtLocal: string }

it('an edge passed while the daemon was killed is made good by the next process before the dialer\'s clock moves on', async () => {
  const server = await startServer({ seed: 2727, clockStart: START, clockMode: 'manual' });
  const account = await createAccount(server, 'Night Co', TZ);
  const campaign = await createCampaign(server, account.id, {
    name: 'Evening', type: 'Dynamic', state: 'Active',
    // The server's own hours are all day: only the daemon's window holds the calls.
    dialer: { mode: 'Power', agents: 1, maxAttempts: 3, callingHours: ALL_DAY, retryDelaySeconds: { NoAnswer: 900, Busy: 600, CallError: 600, Machine: 900, Abandoned: 600 } },
  });
  const token = await createKey(server, account.id, ['CampaignAdmin']);
  const f = { server, accountId: account.id, token, campaignId: campaign.id };
  const { prefix, cleanup } = testPrefix();
  const csv = join(dir, 'evening.csv');
  writeFileSync(csv, `id,phone\n${PHONES.map((p, i) => `c${i},${p}`).join('\n')}\n`);
  const config = {
    redis: { url: REDIS_URL, prefix },
    http: { host: '127.0.0.1', port: 0 },
    dialer: { baseUrl: server.url, accountId: account.id, apiToken: '${CW_DIALER_TOKEN}', rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
    dialerClock: { url: `${server.url}/console/clock`, token: '${CW_CONSOLE_TOKEN}', every: '1s' },
    // A check every 10 minutes of real time: within this test only the start's check can pause the campaign.
    compliance: { checkEvery: '10m', margin: '30m' },
    log: { level: 'info' },
    syncs: [{ id: 'evening', campaignId: campaign.id, source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, schedule: { every: '1d' } }],
  };
  const env = { CW_DIALER_TOKEN: token, CW_CONSOLE_TOKEN: server.consoleToken };
  const campaignState = async () => {
    const res = await server.request(`/v1/accounts/${account.id}/campaigns?filter=${encodeURIComponent(JSON.stringify({ ids: [campaign.id] }))}`, { token });
    return ((await res.json()) as { state: string }[])[0]!.state;
  };
  const clock = async () => Date.parse(((await server.console('GET', '/clock')) as { now: string }).now);
  const advance = async (minutes: number) => { for (let m = 0; m < minutes; m += 5) await server.advance(Math.min(5, minutes - m) * 60); };
  let d: DaemonProcess | null = null;
  try {
    // 19:00 in New York: open. The first process adds the numbers and dials for an hour.
    d = await spawnDaemon(config, dir, env);
    await d.address;
    await waitFor(async () => (await campaignNumbers(f)).length === PHONES.length, 'the numbers in the open campaign');
    expect(await campaignState()).toBe('Active');
    await advance(60);
    const beforeKill = (await callDetailRecords<Call>(f)).length;
    expect(beforeKill).toBeGreaterThan(0);

    // kill -9 at 20:00 (00:00Z), Active; the dialer's clock passes the pause edge (00:30Z) while no process runs.
    await d.kill();
    d = null;
    await advance(45);
    const down = await clock();
    expect(down).toBeGreaterThan(PAUSE_EDGE);
    expect(await campaignState()).toBe('Active');
    // The dialer went on dialing inside the window's margin (lawful: before 21:00 in New York).
    expect((await callDetailRecords<Call>(f)).length).toBeGreaterThan(beforeKill);

    // The next process pauses the campaign at its start, before anything else and before the clock moves on.
    d = await spawnDaemon(config, dir, env);
    await d.address;
    expect(await clock()).toBe(down);
    expect(await campaignState()).toBe('Paused');
    const set = d.output().split('\n').find((l) => l.includes('"msg":"calling window: campaign state set"'));
    expect(set).toMatch(/"from":"Active".*"to":"Paused".*"why":"start"/);

    // Through the night, to 07:00 in New York (11:00Z): numbers wait, none is called.
    await advance(10 * 60 + 15);
    expect(await campaignState()).toBe('Paused');
    const waiting = (await campaignNumbers(f)).filter((n) => n.status === 'NotContacted' || n.status === 'RetryPending');
    expect(waiting.length).toBeGreaterThan(0); // an Active campaign would have dialed them after the close
    const calls = await callDetailRecords<Call>(f);
    const starts = calls.map((c) => ({ ...c, at: toUtc(c.startedAtLocal, TZ) }));
    expect(starts.filter((c) => c.at >= down)).toEqual([]);
    expect(starts.filter((c) => !callingWindow(locate(c.number), DEFAULT_RULE_SET, c.at).open)).toEqual([]);
  } finally {
    await d?.kill();
    await server.close();
    await cleanup();
  }
}, 180_000);
