// An upgrade that loses nothing and does nothing twice. Two processes of the previous version (0.1.0, the commit the
// state's version record came after: its own tree and `npm ci`, see support/previous-version.ts) import a HubSpot
// selection into a campaign and mirror its calls back; two processes of this version join; the old ones leave one by
// one with SIGTERM, each while the import is still going and a mirror write is at the CRM. Then the same with no old
// process left running at all: only 0.1.0's Redis AOF file, copied and a Redis started on it, and this version on
// that. Each ends with every number in the campaign once (none sent twice) and every call once in HubSpot.
import type { ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { callKey } from '../../daemon/mirror/mirror.ts';
import { DaemonKeys, campaignKey, type SyncKeys } from '../../daemon/state/keys.ts';
import { STATE_VERSION } from '../../daemon/state/state-version.ts';
import { VERSION } from '../../daemon/version.ts';
import { freePort, REDIS_URL, spawnDaemon, startRedisServer, testPrefix, waitFor, type DaemonProcess } from '../support/daemon.ts';
import { previousVersion } from '../support/previous-version.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { createAccount, createCampaign, createKey, startServer, type TestServer } from '../support/server.ts';

const CONTACTS = 1500;
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
const dir = mkdtempSync(join(tmpdir(), 'cds-upgrade-'));
let previousCli = '';

beforeAll(() => {
  const started = Date.now();
  previousCli = join(previousVersion(), 'daemon/cli.ts');
  console.log(`rolling upgrade: the previous version ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}, 900_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface World {
  server: TestServer;
  /** The dialer, as the daemons reach it: every phone number they send is counted here. */
  dialer: Proxy;
  hs: HubSpotStandIn;
  /** HubSpot, as the daemons reach it: holds each call write a while, so that a mirror write is at the CRM when a process leaves. */
  crm: Proxy;
  accountId: string;
  token: string;
  campaignId: string;
  prefix: string;
  cleanup(): Promise<void>;
  /** Every phone number sent to be added, as often as it was sent. */
  sent: string[];
  /** Call writes the CRM proxy is holding now. */
  holding: number;
  procs: { name: string; p: DaemonProcess }[];
}

async function world(): Promise<World> {
  const server = await startServer({ seed: 37, clockStart: '2026-11-02T13:00:00Z' });
  const dialer = await startProxy(server.url);
  const hs = await startHubSpotStandIn({ contacts: CONTACTS, searchPerSecond: 100, requestsPer10Seconds: 2000 });
  const crm = await startProxy(hs.url);
  const account = await createAccount(server, 'Upgrade Co', 'America/New_York');
  const campaign = await createCampaign(server, account.id, { name: 'Leads', type: 'Dynamic', state: 'Active', dialer: { mode: 'Power', agents: 6, maxAttempts: 1, callingHours: ALL_DAY } });
  const token = await createKey(server, account.id, ['CampaignNumberAdmin', 'CampaignReader']);
  const { prefix, cleanup } = testPrefix();
  const w: World = { server, dialer, hs, crm, accountId: account.id, token, campaignId: campaign.id, prefix, cleanup, sent: [], holding: 0, procs: [] };
  dialer.interceptWithBody = (req, body) => {
    if (req.method === 'POST' && /\/numbers(\?|$)/.test(req.url!)) w.sent.push(...(JSON.parse(body.toString()) as { number: string }[]).map((e) => e.number));
    return undefined;
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

async function start(w: World, name: string, redisUrl: string, cli?: string): Promise<DaemonProcess> {
  const p = await spawnDaemon(config(w, redisUrl), dir, { UPGRADE_DIALER_TOKEN: w.token, UPGRADE_HUBSPOT_TOKEN: w.hs.token }, cli);
  w.procs.push({ name, p });
  await Promise.race([p.address, new Promise((_, reject) => p.child.once('exit', (code) => reject(new Error(`${name} exited ${code}:\n${p.output().slice(-3000)}`))))]);
  return p;
}

const keysOf = (w: World): SyncKeys => new DaemonKeys(w.prefix).sync('leads', campaignKey(w.dialer.url, w.accountId, w.campaignId));

function expectedNumbers(w: World): string[] {
  return [...new Set(w.hs.contacts().map((c) => parsePhoneNumberFromString(c.properties.phone!, 'US')?.number).filter((n) => n !== undefined))].sort();
}

async function numbers(w: World): Promise<string[]> {
  const res = await w.server.request(`/v1/accounts/${w.accountId}/campaigns/${w.campaignId}/numbers?range=[0,9999]`, { token: w.token });
  return ((await res.json()) as { number: string }[]).map((n) => n.number);
}

async function records(w: World): Promise<{ number: string; attempt: number; startedAtLocal: string }[]> {
  const res = await w.server.request(`/v1/accounts/${w.accountId}/campaigns/${w.campaignId}/reports/callDetails?range=[0,9999]`, { token: w.token });
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
  const at = { numbers: (await numbers(w)).length, calls: w.hs.calls().length, records: (await records(w)).length };
  expect(at.numbers, `${name} leaves mid-import`).toBeLessThan(expected);
  expect(at.calls, `${name} leaves mid-mirror`).toBeLessThan(at.records);
  expect(await p.stop(), `${name}'s exit code after SIGTERM`).toBe(0);
  return at;
}

/** Everything imported once, every call mirrored once; the daemons have nothing left to do. */
async function finish(w: World, redis: Redis): Promise<void> {
  const expected = expectedNumbers(w);
  const keys = keysOf(w);
  await waitFor(async () => (await numbers(w)).length === expected.length && (await redis.hlen(keys.batches)) === 0, 'the whole import', 120_000);
  // A last round of calls, after the old processes are gone, then the mirror catches up.
  await w.server.advance(1800);
  const all = await records(w);
  await waitFor(async () => w.hs.calls().length >= all.length && (await redis.hlen(keys.mirror.pending)) === 0, `${all.length} calls in HubSpot`, 120_000);
  await delay(1500); // a write still in flight would show as one call too many
  expect((await numbers(w)).sort()).toEqual(expected);
  expect(w.sent.length - new Set(w.sent).size, 'phone numbers sent twice').toBe(0);
  expect(new Set(w.sent).size).toBe(expected.length);
  const got = activityKeys(w);
  expect(got.length - new Set(got).size, 'calls written twice').toBe(0);
  expect(new Set(got)).toEqual(new Set(all.map((r) => callKey(w.campaignId, r))));
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
