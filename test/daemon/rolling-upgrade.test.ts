// An upgrade that loses nothing and does nothing twice. Two processes of the previous version (0.1.0, the commit the
// state's version record came after: its own tree and `npm ci`, see support/previous-version.ts) import a HubSpot
// selection into a campaign and mirror its calls back; two processes of this version join; the old ones leave one by
// one with SIGTERM, each while the import is still going and a mirror write is at the CRM. Then the same with no old
// process left running at all: only 0.1.0's Redis AOF file, copied and a Redis started on it, and this version on
// that. Then from a8ba58f (the checkout operators ran before 0.1.0) with its documented configurations, following
// CHANGELOG.md's "Before you upgrade" steps literally: the new `check` on the old file, its fixes, then the rolling
// upgrade. Each ends with every number in its campaign once (none sent twice) and every call once in HubSpot.
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { callKey } from '../../daemon/mirror/mirror.ts';
import { DaemonKeys, campaignKey, type SyncKeys } from '../../daemon/state/keys.ts';
import type { CheckReport } from '../../daemon/check/checks.ts';
import { STATE_VERSION } from '../../daemon/state/state-version.ts';
import { VERSION } from '../../daemon/version.ts';
import { freePort, REDIS_URL, spawnDaemon, startRedisServer, testPrefix, waitFor, type DaemonProcess } from '../support/daemon.ts';
import { CHECKOUT_COMMIT, previousVersion } from '../support/previous-version.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { createAccount, createCampaign, createKey, startServer, type TestServer } from '../support/server.ts';

const CONTACTS = 1500;
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
const dir = mkdtempSync(join(tmpdir(), 'cds-upgrade-'));
let previousCli = '';
let checkoutCli = '';

beforeAll(() => {
  const started = Date.now();
  previousCli = join(previousVersion(), 'daemon/cli.ts');
  checkoutCli = join(previousVersion(CHECKOUT_COMMIT), 'daemon/cli.ts');
  console.log(`rolling upgrade: the earlier versions ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}, 1_200_000);

/** One sync and the campaign it feeds, with its own key. */
interface Feed { sync: string; campaignId: string; token: string }
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface World {
  server: TestServer;
  /** The dialer, as the daemons reach it: every phone number they send is counted here. */
  dialer: Proxy;
  hs: HubSpotStandIn;
  /** HubSpot, as the daemons reach it: holds each call write a while, so that a mirror write is at the CRM when a process leaves. */
  crm: Proxy;
  accountId: string;
  /** The first feed's key and campaign (the `leads` sync). */
  token: string;
  campaignId: string;
  /** Every sync of the world: `leads`, and `windowed` when asked for. */
  feeds: Feed[];
  prefix: string;
  cleanup(): Promise<void>;
  /** Every phone number the dialer took a request to add, as often as it was sent, by campaign id. */
  sent: Record<string, string[]>;
  /** Phone numbers in add requests the dialer refused whole (a paused campaign's 409), sent again later. */
  refusedWhole: number;
  /** Call writes the CRM proxy is holding now. */
  holding: number;
  procs: { name: string; p: DaemonProcess }[];
}

/**
 * `windowed`: a second campaign, fed by a sync held to calling windows, whose key has Campaign Admin too (as a8ba58f's
 * README asked of such a sync); the clock then starts where every callee's window is open for the whole test.
 */
async function world(options: { windowed?: boolean } = {}): Promise<World> {
  // Monday 2 November 2026, 20:00Z: 15:00 in New York, 10:00 in Honolulu; the test moves the clock on 75 minutes.
  const server = await startServer({ seed: 37, clockStart: options.windowed ? '2026-11-02T20:00:00Z' : '2026-11-02T13:00:00Z' });
  const dialer = await startProxy(server.url);
  const hs = await startHubSpotStandIn({ contacts: CONTACTS, searchPerSecond: 100, requestsPer10Seconds: 2000 });
  const crm = await startProxy(hs.url);
  const account = await createAccount(server, 'Upgrade Co', 'America/New_York');
  const campaign = await createCampaign(server, account.id, { name: 'Leads', type: 'Dynamic', state: 'Active', dialer: { mode: 'Power', agents: 6, maxAttempts: 1, callingHours: ALL_DAY } });
  const token = await createKey(server, account.id, ['CampaignNumberAdmin', 'CampaignReader']);
  const feeds: Feed[] = [{ sync: 'leads', campaignId: campaign.id, token }];
  if (options.windowed) {
    const second = await createCampaign(server, account.id, { name: 'Windowed leads', type: 'Dynamic', state: 'Active', dialer: { mode: 'Power', agents: 6, maxAttempts: 1, callingHours: ALL_DAY } });
    feeds.push({ sync: 'windowed', campaignId: second.id, token: await createKey(server, account.id, ['CampaignNumberAdmin', 'CampaignReader', 'CampaignAdmin']) });
  }
  const { prefix, cleanup } = testPrefix();
  const w: World = { server, dialer, hs, crm, accountId: account.id, token, campaignId: campaign.id, feeds, prefix, cleanup, sent: {}, refusedWhole: 0, holding: 0, procs: [] };
  // A phone number counts as sent when the dialer took the request (2xx: added, or refused as a duplicate, which a
  // second send of an added number would be). A request refused whole (409: a calling window had paused the campaign,
  // as while a process judges what it holds) added nothing: sending its numbers again is no duplicate.
  const asked = new WeakMap<object, { campaignId: string; numbers: string[] }>();
  dialer.interceptWithBody = (req, body) => {
    const added = req.method === 'POST' ? /\/campaigns\/([^/]+)\/numbers(\?|$)/.exec(req.url!) : null;
    if (added) asked.set(req, { campaignId: added[1]!, numbers: (JSON.parse(body.toString()) as { number: string }[]).map((e) => e.number) });
    return undefined;
  };
  dialer.onAnswer = (exchange, _body, req) => {
    const a = req && asked.get(req);
    if (a && exchange.status < 300) (w.sent[a.campaignId] ??= []).push(...a.numbers);
    else if (a) w.refusedWhole += a.numbers.length;
  };
  crm.hold = (req) => {
    if (!(req.method === 'POST' && /\/calls\/batch\/create/.test(req.url!))) return undefined;
    w.holding++;
    return { before: delay(1500).then(() => { w.holding--; }) };
  };
  return w;
}

async function closeWorld(w: World | undefined): Promise<void> {
  if (!w) return;
  for (const { p } of w.procs) await p.kill().catch(() => {});
  await w.cleanup().catch(() => {});
  await w.crm.close(); await w.hs.close(); await w.dialer.close(); await w.server.close();
}

/** Both versions read the same configuration: the import is paced (2 requests/s, 25 numbers each) so that it lasts. */
function config(w: World, redisUrl: string): Record<string, unknown> {
  return {
    redis: { url: redisUrl, prefix: w.prefix },
    http: { host: '127.0.0.1', port: 0 },
    dialer: { baseUrl: w.dialer.url, accountId: w.accountId, apiToken: '${UPGRADE_DIALER_TOKEN}', rateLimit: { perSecond: 2, burst: 2 }, maxNumbersPerRequest: 25 },
    takeoverAfter: '2s',
    log: { level: 'debug' },
    syncs: [{
      id: 'leads', campaignId: w.campaignId, schedule: { every: '1h' },
      source: { type: 'hubspot', baseUrl: w.crm.url, accessToken: '${UPGRADE_HUBSPOT_TOKEN}', searchPerSecond: 50, requestsPer10Seconds: 1000 },
      mapping: { phone: 'phone', variables: { firstName: 'firstname' }, defaultCountry: 'US' },
      mirror: { every: '1s' },
    }],
  };
}

/** The secrets the configurations name. */
const envOf = (w: World): Record<string, string> => ({
  UPGRADE_DIALER_TOKEN: w.token, UPGRADE_HUBSPOT_TOKEN: w.hs.token, UPGRADE_WINDOWED_TOKEN: w.feeds[1]?.token ?? '', UPGRADE_CONSOLE_TOKEN: w.server.consoleToken,
});

async function start(w: World, name: string, redisUrl: string, cli?: string, file = config(w, redisUrl)): Promise<DaemonProcess> {
  const p = await spawnDaemon(file, dir, envOf(w), cli);
  w.procs.push({ name, p });
  await Promise.race([p.address, new Promise((_, reject) => p.child.once('exit', (code) => reject(new Error(`${name} exited ${code}:\n${p.output().slice(-3000)}`))))]);
  return p;
}

const keysOf = (w: World, feed = w.feeds[0]!): SyncKeys => new DaemonKeys(w.prefix).sync(feed.sync, campaignKey(w.dialer.url, w.accountId, feed.campaignId));

function expectedNumbers(w: World): string[] {
  return [...new Set(w.hs.contacts().map((c) => parsePhoneNumberFromString(c.properties.phone!, 'US')?.number).filter((n) => n !== undefined))].sort();
}

async function numbers(w: World, feed = w.feeds[0]!): Promise<string[]> {
  const res = await w.server.request(`/v1/accounts/${w.accountId}/campaigns/${feed.campaignId}/numbers?range=[0,9999]`, { token: feed.token });
  return ((await res.json()) as { number: string }[]).map((n) => n.number);
}

async function records(w: World, feed = w.feeds[0]!): Promise<{ number: string; attempt: number; startedAtLocal: string }[]> {
  const res = await w.server.request(`/v1/accounts/${w.accountId}/campaigns/${feed.campaignId}/reports/callDetails?range=[0,9999]`, { token: feed.token });
  return (await res.json()) as { number: string; attempt: number; startedAtLocal: string }[];
}

const activityKeys = (w: World): (string | undefined)[] => w.hs.calls().map((c) => /\[cds:([^\]]+)\]/.exec(String(c.properties.hs_call_title))?.[1]);

/**
 * Calls happen (the dialer's clock moves on) and a process leaves with SIGTERM as soon as a mirror write is at the
 * CRM, the import still going: it must exit 0 (its running jobs finish or go back to the queue).
 */
async function leaveMidway(w: World, name: string, expected: number): Promise<{ numbers: number; calls: number; records: number }> {
  const p = w.procs.find((x) => x.name === name)!.p;
  await w.server.advance(900);
  await waitFor(() => w.holding > 0, `a mirror write at the CRM before ${name} leaves`, 60_000);
  const at = { numbers: (await numbers(w)).length, calls: w.hs.calls().length, records: (await Promise.all(w.feeds.map((f) => records(w, f)))).flat().length };
  expect(at.numbers, `${name} leaves mid-import`).toBeLessThan(expected);
  expect(at.calls, `${name} leaves mid-mirror`).toBeLessThan(at.records);
  expect(await p.stop(), `${name}'s exit code after SIGTERM`).toBe(0);
  return at;
}

/** Everything imported once, every call mirrored once, in every campaign; the daemons have nothing left to do. */
async function finish(w: World, redis: Redis): Promise<void> {
  const expected = expectedNumbers(w);
  for (const feed of w.feeds) {
    const keys = keysOf(w, feed);
    await waitFor(async () => (await numbers(w, feed)).length === expected.length && (await redis.hlen(keys.batches)) === 0, `the whole import of ${feed.sync}`, 120_000);
  }
  // A last round of calls, after the old processes are gone, then the mirror catches up.
  await w.server.advance(1800);
  const all = (await Promise.all(w.feeds.map(async (f) => (await records(w, f)).map((r) => callKey(f.campaignId, r))))).flat();
  await waitFor(async () => w.hs.calls().length >= all.length && (await Promise.all(w.feeds.map((f) => redis.hlen(keysOf(w, f).mirror.pending)))).every((n) => n === 0),
    `${all.length} calls in HubSpot`, 120_000);
  await delay(1500); // a write still in flight would show as one call too many
  for (const feed of w.feeds) {
    const sent = w.sent[feed.campaignId] ?? [];
    expect((await numbers(w, feed)).sort(), feed.sync).toEqual(expected);
    expect(sent.length - new Set(sent).size, `phone numbers sent twice to ${feed.sync}'s campaign`).toBe(0);
    expect(new Set(sent).size).toBe(expected.length);
  }
  const got = activityKeys(w);
  expect(got.length - new Set(got).size, 'calls written twice').toBe(0);
  expect(new Set(got)).toEqual(new Set(all));
  // This version opened the state and recorded it; 0.1.0's layout was read as it is (nothing migrated).
  expect(await redis.hgetall(new DaemonKeys(w.prefix).stateVersion)).toMatchObject({ version: String(STATE_VERSION), writtenBy: VERSION });
  for (const { name, p } of w.procs) {
    if (!name.startsWith('new')) continue;
    expect(p.output()).not.toContain('migrat');
    expect(await p.stop(), `${name}'s exit code after SIGTERM`).toBe(0);
  }
}

/**
 * Per process, from its debug log, for the summary: batches it sent, calls it wrote, and calls it found in the CRM
 * already (a write whose answer a leaving process never heard).
 */
function workOf(w: World): string {
  return w.procs.map(({ name, p }) => {
    const lines = p.output().split('\n');
    const batches = lines.filter((l) => l.includes('"msg":"sending a batch"')).length;
    const runs = lines.filter((l) => l.includes('"msg":"mirror run"'));
    const sum = (field: string) => runs.reduce((n, l) => n + Number(new RegExp(`"${field}":(\\d+)`).exec(l)?.[1] ?? 0), 0);
    return `${name}: ${batches} batches, ${sum('written')} calls written, ${sum('resolved')} found written`;
  }).join('; ');
}

describe('a rolling upgrade from 0.1.0', () => {
  let w: World;
  const redis = new Redis(REDIS_URL);
  beforeAll(async () => { w = await world(); });
  afterAll(async () => { await closeWorld(w); redis.disconnect(); });

  it('new processes join, the old ones leave one by one mid-import and mid-mirror: every number and every call once', async () => {
    const t0 = Date.now();
    const expected = expectedNumbers(w).length;
    await start(w, 'old1', REDIS_URL, previousCli);
    await start(w, 'old2', REDIS_URL, previousCli);
    await waitFor(async () => (await numbers(w)).length >= 200, 'the old processes importing', 60_000);
    await w.server.advance(900);
    await waitFor(() => w.hs.calls().length > 0, 'the old processes mirroring', 60_000);
    // 0.1.0 records no state version.
    expect(await redis.exists(new DaemonKeys(w.prefix).stateVersion)).toBe(0);
    await start(w, 'new1', REDIS_URL);
    await start(w, 'new2', REDIS_URL);
    const first = await leaveMidway(w, 'old1', expected);
    const second = await leaveMidway(w, 'old2', expected);
    await finish(w, redis);
    console.log(`rolling upgrade: ${expected} numbers, ${w.hs.calls().length} calls, ${((Date.now() - t0) / 1000).toFixed(1)} s; old1 left at ${JSON.stringify(first)}, ` +
      `old2 at ${JSON.stringify(second)}; ${workOf(w)}`);
  }, 300_000);
});

describe('an upgrade from 0.1.0\'s Redis AOF file alone', () => {
  let w: World;
  let oldRedis: ChildProcess | null = null;
  let newRedis: ChildProcess | null = null;
  let redis: Redis | null = null;
  const oldDir = mkdtempSync(join(tmpdir(), 'cds-upgrade-redis-'));
  const newDir = mkdtempSync(join(tmpdir(), 'cds-upgrade-redis-'));
  beforeAll(async () => { w = await world(); });
  afterAll(async () => {
    await closeWorld(w);
    redis?.disconnect();
    oldRedis?.kill('SIGKILL'); newRedis?.kill('SIGKILL');
    rmSync(oldDir, { recursive: true, force: true }); rmSync(newDir, { recursive: true, force: true });
  });

  it('a Redis restarted on it and this version started on that: every number and every call once', async () => {
    const t0 = Date.now();
    const expected = expectedNumbers(w).length;
    const oldPort = await freePort();
    oldRedis = await startRedisServer(oldPort, oldDir);
    const oldUrl = `redis://127.0.0.1:${oldPort}`;
    await start(w, 'old1', oldUrl, previousCli);
    await start(w, 'old2', oldUrl, previousCli);
    await waitFor(async () => (await numbers(w)).length >= 200, 'the old processes importing', 60_000);
    await w.server.advance(900);
    await waitFor(() => w.hs.calls().length > 0, 'the old processes mirroring', 60_000);
    const first = await leaveMidway(w, 'old1', expected);
    const second = await leaveMidway(w, 'old2', expected);
    // Redis stops (every write is in the AOF: fsync always); only its files are taken, to another Redis.
    const exited = new Promise((r) => oldRedis!.once('exit', r));
    oldRedis.kill('SIGTERM');
    await exited;
    oldRedis = null;
    cpSync(join(oldDir, 'appendonlydir'), join(newDir, 'appendonlydir'), { recursive: true });
    const newPort = await freePort();
    newRedis = await startRedisServer(newPort, newDir);
    const newUrl = `redis://127.0.0.1:${newPort}`;
    redis = new Redis(newUrl);
    expect(await redis.get(new DaemonKeys(w.prefix).layout)).toBe('2');
    expect(await redis.exists(new DaemonKeys(w.prefix).stateVersion)).toBe(0);
    await start(w, 'new1', newUrl);
    await start(w, 'new2', newUrl);
    await finish(w, redis);
    console.log(`upgrade from the AOF file: ${expected} numbers, ${w.hs.calls().length} calls, ${((Date.now() - t0) / 1000).toFixed(1)} s; old1 left at ${JSON.stringify(first)}, ` +
      `old2 at ${JSON.stringify(second)}; ${workOf(w)}`);
  }, 300_000);
});

/**
 * a8ba58f's documented configurations, as its README wrote them (its "Configuration" and "Calling windows"
 * sections): `leads` has no compliance block, its usual one, with a key that has Campaign Number Admin and Campaign
 * Reader (the README: the first adds, lists and deletes numbers, the second lets the mirror read the call-detail
 * report); `windowed` has the README's compliance block, with its own key that also has Campaign Admin (the README:
 * a sync held to calling windows pauses and resumes its campaign). Both read the whole portal. `fixed`: with what
 * CHANGELOG.md's "Before you upgrade" says, here the reason for `leads` (`compliance: { off: "<reason>" }`).
 * `compliance: undefined` at the top: no block there (spawnDaemon turns the rules off only without the key).
 */
function checkoutConfig(w: World, fixed: boolean): Record<string, unknown> {
  const sync = (id: string, campaignId: string) => ({
    id, campaignId, schedule: { every: '1h' },
    source: { type: 'hubspot', baseUrl: w.crm.url, accessToken: '${UPGRADE_HUBSPOT_TOKEN}', searchPerSecond: 50, requestsPer10Seconds: 1000 },
    mapping: { phone: 'phone', variables: { firstName: 'firstname' }, defaultCountry: 'US' },
    mirror: { every: '1s' },
  });
  return {
    redis: { url: REDIS_URL, prefix: w.prefix },
    http: { host: '127.0.0.1', port: 0 },
    dialer: { baseUrl: w.dialer.url, accountId: w.accountId, apiToken: '${UPGRADE_DIALER_TOKEN}', rateLimit: { perSecond: 2, burst: 2 }, maxNumbersPerRequest: 25, timeZone: 'America/New_York' },
    // The reference server's clock (demos and tests only, in both versions): the windows follow the dialer's time.
    dialerClock: { url: `${w.server.url}/console/clock`, token: '${UPGRADE_CONSOLE_TOKEN}', every: '1s' },
    takeoverAfter: '2s',
    log: { level: 'debug' },
    compliance: undefined,
    syncs: [
      { ...sync('leads', w.feeds[0]!.campaignId), ...(fixed ? { compliance: { off: 'informational calls, not telemarketing' } } : {}) },
      {
        ...sync('windowed', w.feeds[1]!.campaignId), dialer: { apiToken: '${UPGRADE_WINDOWED_TOKEN}', rateLimit: { perSecond: 2, burst: 2 } },
        compliance: { window: { from: '09:00', to: '20:00', days: ['mon', 'tue', 'wed', 'thu', 'fri'] }, stateRules: true, checkEvery: '30s', margin: '2m' },
      },
    ],
  };
}

/** This version's `campaign-sync check --config FILE --json` on a configuration, as an operator runs it. */
async function check(w: World, file: Record<string, unknown>): Promise<{ code: number | null; report: CheckReport }> {
  const path = join(dir, `check-${w.procs.length}-${Date.now()}.json`);
  writeFileSync(path, JSON.stringify(file, null, 2));
  const child = spawn(process.execPath, [join(import.meta.dirname, '../../daemon/cli.ts'), 'check', '--config', path, '--json'], { env: { ...process.env, ...envOf(w) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '', stderr = '';
  child.stdout.on('data', (b: Buffer) => { stdout += b.toString(); });
  child.stderr.on('data', (b: Buffer) => { stderr += b.toString(); });
  const code = await new Promise<number | null>((r) => child.on('close', r));
  try {
    return { code, report: JSON.parse(stdout) as CheckReport };
  } catch {
    throw new Error(`check exited ${code} without a report:\n${stdout}\n${stderr}`);
  }
}

describe('an upgrade from a8ba58f (the checkout before 0.1.0), following CHANGELOG.md\'s steps', () => {
  let w: World;
  const redis = new Redis(REDIS_URL);
  beforeAll(async () => { w = await world({ windowed: true }); });
  afterAll(async () => { await closeWorld(w); redis.disconnect(); });

  it('check on the old file names the fixes; with them, new processes join and the old leave one by one: every number and every call once', async () => {
    const t0 = Date.now();
    const expected = expectedNumbers(w).length;
    const old = checkoutConfig(w, false);
    await start(w, 'old1', REDIS_URL, checkoutCli, old);
    await start(w, 'old2', REDIS_URL, checkoutCli, old);
    await waitFor(async () => (await numbers(w)).length >= 200 && (await numbers(w, w.feeds[1])).length >= 200, 'the old processes importing', 60_000);
    await w.server.advance(900);
    await waitFor(() => w.hs.calls().length > 0, 'the old processes mirroring', 60_000);

    // 1. This version's check on the old file: it names what `leads` needs (start would refuse it), and says that the
    //    rules now hold a sync without a block; `windowed`, with its block and Campaign Admin, needs nothing.
    const before = await check(w, old);
    expect(before.code).toBe(1);
    expect(before.report.syncs.leads!.refusals.map((r) => r.check)).toEqual(['dialer.state']);
    expect(before.report.syncs.leads!.refusals[0]!.fix).toMatch(/give the key the Campaign Admin role, or turn the rules off for this sync with compliance: \{ off: "<reason>" \}/);
    expect(before.report.syncs.windowed!.refusals).toEqual([]);
    const rules = (r: CheckReport) => r.checks.filter((c) => c.check === 'windows.rules').map((c) => [c.sync, c.status]);
    expect(rules(before.report)).toEqual([['leads', 'warn'], ['windowed', 'ok']]);

    // 2. The fix it names, in the file: nothing refused, nothing warned about the rules.
    const fixed = checkoutConfig(w, true);
    const after = await check(w, fixed);
    expect(Object.values(after.report.syncs).flatMap((v) => v.refusals)).toEqual([]);
    expect(rules(after.report)).toEqual([['leads', 'ok'], ['windowed', 'ok']]);

    // 3. The rolling upgrade: this version beside the old processes, then SIGTERM to the old ones, one by one.
    await start(w, 'new1', REDIS_URL, undefined, fixed);
    await start(w, 'new2', REDIS_URL, undefined, fixed);
    const first = await leaveMidway(w, 'old1', expected);
    const second = await leaveMidway(w, 'old2', expected);
    await finish(w, redis);
    for (const { name, p } of w.procs) expect(p.output(), `${name} refused nothing`).not.toContain('is REFUSED');
    console.log(`rolling upgrade from a8ba58f: ${expected} numbers in each of 2 campaigns, ${w.hs.calls().length} calls, ${((Date.now() - t0) / 1000).toFixed(1)} s; ` +
      `old1 left at ${JSON.stringify(first)}, old2 at ${JSON.stringify(second)}; ${w.refusedWhole} numbers refused whole (409) and sent again; ${workOf(w)}`);
  }, 400_000);
});
