// Call results back into the CRM: contacts in, calls simulated on the manual clock across New York's fall-back
// hour, each attempt exactly once as an activity on its contact (HubSpot, Pipedrive, a JSON-lines file), a 207
// partial failure or a 400 for a whole batch parking only the failed records, a kill -9 in the middle of mirroring,
// and a backfill adding nothing.
import { execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { startPipedriveStandIn, type PipedriveStandIn } from '../../crm-stand-ins/pipedrive.ts';
import { Daemon } from '../../daemon/app.ts';
import { offsetAt } from '../../api/wall-clock.ts';
import { formatWall } from '../../daemon/local-time.ts';
import { callKey } from '../../daemon/mirror/mirror.ts';
import { DaemonKeys, campaignKey } from '../../daemon/state/keys.ts';
import { Redis } from 'ioredis';
import { parseConfig } from '../../daemon/config.ts';
import { callDetailRecords, daemonConfig, freePort, numberCount, quietLog, REDIS_URL, rulesOff, spawnDaemon, startRedisServer, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { startProxy } from '../support/proxy.ts';
import { createAccount, createCampaign, createKey, startServer } from '../support/server.ts';

const TZ = 'America/New_York';
const OPS_TOKEN = 'an operations token for the mirror tests';
/** 00:00 in New York, two hours before its clock falls back from 02:00 EDT to 01:00 EST. */
const START = '2026-11-01T04:00:00Z';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
const dir = mkdtempSync(join(tmpdir(), 'cds-mirror-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Record { id: string; number: string; attempt: number; startedAtLocal: string; endedAtLocal: string; ringResult: string; outcome: string }

/** A reference server on the manual clock with a dialing Dynamic campaign and a key that may add numbers and read reports. */
async function dialer(seed: number, agents = 3): Promise<DialerFixture> {
  const server = await startServer({ seed, clockStart: START });
  const account = await createAccount(server, 'Mirror Co', TZ);
  const campaign = await createCampaign(server, account.id, {
    name: 'Callbacks', type: 'Dynamic', state: 'Active',
    dialer: { mode: 'Power', agents, maxAttempts: 2, callingHours: ALL_DAY, retryDelaySeconds: { NoAnswer: 1200, Busy: 900, CallError: 900, Machine: 1200, Abandoned: 600 } },
  });
  const token = await createKey(server, account.id, ['CampaignNumberAdmin', 'CampaignReader']);
  return { server, accountId: account.id, token, campaignId: campaign.id };
}

const records = (f: DialerFixture) => callDetailRecords<Record>(f);

const e164 = (phone: string | null | undefined) => (phone ? parsePhoneNumberFromString(phone, 'US')?.number ?? null : null);
const keyOf = (title: unknown) => /\[cds:([^\]]+)\]/.exec(String(title))?.[1];

/** Each record once among the activities (by the key in their titles), and nothing else. */
function expectOnePerAttempt(f: DialerFixture, all: Record[], titles: unknown[]): void {
  const keys = titles.map(keyOf);
  expect(new Set(keys).size).toBe(keys.length);
  expect(new Set(keys)).toEqual(new Set(all.map((r) => callKey(f.campaignId, r))));
}

describe('mirror into HubSpot across a fall-back hour', () => {
  let f: DialerFixture;
  let hs: HubSpotStandIn;
  let d: Daemon;
  const { prefix, cleanup } = testPrefix();
  beforeAll(async () => {
    // One agent for 200 numbers: dialing goes on through the whole window, the repeated hour included.
    f = await dialer(11, 1);
    hs = await startHubSpotStandIn({ contacts: 200 });
    d = await Daemon.start(daemonConfig(f, prefix, [{
      id: 'hs', campaignId: f.campaignId,
      source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, searchPerSecond: 50 },
      mapping: { phone: 'phone', variables: { firstName: 'firstname' }, defaultCountry: 'US' },
      mirror: { every: '1h', statusProperty: 'dialer_status' },
    }], { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
      http: { host: '127.0.0.1', port: 0, adminToken: OPS_TOKEN } }), { log: quietLog });
    await waitFor(async () => (await numberCount(f)) === 200, 'the contacts in the campaign');
  });
  afterAll(async () => {
    await d?.close(2000);
    await hs?.close();
    await f?.server.close();
    await cleanup();
  });

  /** Runs the mirror and waits until the stand-in holds one activity per record so far. */
  async function mirrorAll(): Promise<Record[]> {
    const all = await records(f);
    await d.triggerMirror('hs', 'test');
    await waitFor(() => hs.calls().length >= all.length, `${all.length} activities`);
    return all;
  }

  it('writes each attempt once, on its contact, with the time in UTC, while the wall clock repeats an hour', async () => {
    // Four hours in ten-minute steps, mirroring after each: 00:00 EDT to 03:00 EST, through 01:00-02:00 twice.
    for (let step = 0; step < 24; step++) {
      await f.server.advance(600);
      await mirrorAll();
    }
    const all = await mirrorAll();
    expect(all.length).toBeGreaterThan(40);
    // Calls ended in the repeated hour on both of its passes: its wall-clock times run backwards once in end order.
    const repeated = all.filter((r) => r.endedAtLocal.startsWith('2026-11-01T01:'));
    expect(repeated.length).toBeGreaterThan(10);
    const ends = await d.redis.hget(d.runtimes.get('hs')!.state.keys.mirror.meta, 'watermark');
    expect(ends! >= '2026-11-01T01:59:00').toBe(true);
    const calls = hs.calls();
    expectOnePerAttempt(f, all, calls.map((c) => c.properties.hs_call_title));
    const contactOf = new Map(hs.contacts().map((c) => [e164(c.properties.phone), c.id]));
    for (const c of calls) {
      const r = all.find((x) => callKey(f.campaignId, x) === keyOf(c.properties.hs_call_title))!;
      expect(c.contactIds).toEqual([contactOf.get(r.number)]);
      expect(c.properties).toMatchObject({ hs_call_direction: 'OUTBOUND', hs_call_to_number: r.number });
      // The UTC instant reads as the record's wall-clock start in the account's zone.
      const at = Date.parse(String(c.properties.hs_timestamp));
      expect(formatWall(at + offsetAt(TZ, at))).toBe(r.startedAtLocal);
      const expected = r.ringResult === 'Busy' ? 'BUSY' : r.ringResult === 'NoAnswer' ? 'NO_ANSWER' : r.ringResult === 'Answer' ? 'COMPLETED' : 'FAILED';
      expect(c.properties.hs_call_status).toBe(expected);
    }
    // The number's final status reached its contact.
    const settled = all.filter((r) => r.outcome === 'Success');
    expect(settled.length).toBeGreaterThan(1);
    // Statuses follow their batch's activities (the wait above ends at the last activity).
    await waitFor(() => settled.every((r) => hs.getContact(contactOf.get(r.number)!)!.properties.dialer_status === 'Success'), 'the final statuses on their contacts');
    // Written together through batch updates (up to 100 contacts each), never one request per contact.
    expect(hs.stats.contactsBatchUpdated).toBeGreaterThanOrEqual(settled.length);
    expect(hs.stats.byRoute['PATCH contacts/:id'] ?? 0).toBe(0);
    expect(hs.stats.byRoute['POST contacts/batch/update']).toBeLessThan(settled.length);
  }, 120_000);

  it('parks only the records a 207 refuses, and writes them once HubSpot takes them', async () => {
    const before = hs.calls().length;
    await f.server.advance(1800);
    const all = await records(f);
    const fresh = all.slice(before);
    expect(fresh.length).toBeGreaterThan(1);
    const refused = fresh[0]!.number;
    hs.failCalls((p) => (p.hs_call_to_number === refused ? 'hs_call_to_number: refused by a validation rule' : false));
    await d.triggerMirror('hs', 'test');
    const mk = d.runtimes.get('hs')!.state.keys.mirror;
    const refusedCount = fresh.filter((r) => r.number === refused).length;
    await waitFor(async () => (await d.redis.hlen(mk.parked)) === refusedCount && hs.calls().length === all.length - refusedCount, 'the refused records parked, the rest written');
    const parked = Object.values(await d.redis.hgetall(mk.parked)).map((v) => JSON.parse(v));
    expect(parked.every((p) => /validation rule/.test(p.reason) && p.activity.record.number === refused)).toBe(true);
    hs.failCalls(null);
    await d.triggerMirror('hs', 'test');
    await waitFor(async () => hs.calls().length === all.length && (await d.redis.hlen(mk.parked)) === 0, 'the parked records written');
    expectOnePerAttempt(f, all, hs.calls().map((c) => c.properties.hs_call_title));
  }, 60_000);

  it('parks only the calls HubSpot refuses with a 400 for their whole batch, found by halving it; the rest written once', async () => {
    const before = hs.calls().length;
    await f.server.advance(3600);
    const all = await records(f);
    const fresh = all.slice(before);
    expect(fresh.length).toBeGreaterThanOrEqual(16);
    const refused = fresh[Math.floor(fresh.length / 2)]!.number;
    const refusedCount = fresh.filter((r) => r.number === refused).length;
    // HubSpot's property validation refuses the whole batch, naming no input: nothing of it is created.
    const mk = d.runtimes.get('hs')!.state.keys.mirror;
    hs.failCalls((p) => (p.hs_call_to_number === refused ? 'hs_call_body: refused by a validation rule' : false), 'whole-batch');
    try {
      const creates = () => hs.stats.byRoute['POST calls/batch/create'] ?? 0;
      const sent = creates();
      await d.triggerMirror('hs', 'test');
      await waitFor(async () => (await d.redis.hlen(mk.parked)) === refusedCount && hs.calls().length === all.length - refusedCount, 'the refused calls parked, the rest written');
      // Each refused call costs the halvings that isolate it, never a request per call of its batch.
      const bound = Math.ceil(fresh.length / 100) + 2 * refusedCount * Math.ceil(Math.log2(Math.min(100, fresh.length)));
      expect(creates() - sent).toBeLessThanOrEqual(bound);
      expect(creates() - sent).toBeLessThan(fresh.length);
      const parked = Object.values(await d.redis.hgetall(mk.parked)).map((v) => JSON.parse(v));
      expect(parked.map((p) => p.reason)).toEqual(Array(refusedCount).fill('VALIDATION_ERROR: hs_call_body: refused by a validation rule'));
      expect(parked.every((p) => p.activity.record.number === refused)).toBe(true);
      await waitFor(async () => JSON.parse((await d.redis.hget(mk.meta, 'lastRun')) ?? '{}').parked === refusedCount, 'the run to count them parked');
    } finally {
      hs.failCalls(null);
    }
    // Retry parked records (/ops) queues a mirror run, which tries parked calls again first: once HubSpot takes them,
    // each is written once and nothing stays parked.
    const retry = await fetch(`${d.address}/ops/api/syncs/hs/retry`, {
      method: 'POST', headers: { authorization: `Basic ${Buffer.from(`ops:${OPS_TOKEN}`).toString('base64')}`, 'x-requested-with': 'campaign-sync' },
    });
    expect(await retry.json()).toEqual({ requeued: 0, activities: refusedCount });
    await waitFor(async () => hs.calls().length === all.length && (await d.redis.hlen(mk.parked)) === 0, 'the parked calls written');
    expectOnePerAttempt(f, all, hs.calls().map((c) => c.properties.hs_call_title));
  }, 60_000);

  it('backfills from the start without adding an activity that exists', async () => {
    const all = await mirrorAll();
    const mk = d.runtimes.get('hs')!.state.keys.mirror;
    await d.triggerMirror('hs', 'backfill', '2026-11-01T00:00:00');
    const backfill = await waitFor(async () => (await d.redis.hget(mk.meta, 'backfill')), 'the backfill to end');
    expect(JSON.parse(backfill)).toMatchObject({ read: all.length, written: 0, skipped: all.length });
    expect(hs.calls().length).toBe(all.length);
    // The strict stand-in refused none of the sink's writes or searches (the 207s above are failCalls', not counted).
    expect(hs.refusals()).toEqual([]);
  }, 60_000);
});

describe('mirror into Pipedrive and into a JSON-lines file', () => {
  let f: DialerFixture;
  let pd: PipedriveStandIn;
  let d: Daemon;
  const file = join(dir, 'activities.jsonl');
  const { prefix, cleanup } = testPrefix();
  beforeAll(async () => {
    f = await dialer(12);
    pd = await startPipedriveStandIn({ persons: 20 });
    d = await Daemon.start(daemonConfig(f, prefix, [
      { id: 'pd', campaignId: f.campaignId, source: { type: 'pipedrive', baseUrl: pd.url, apiToken: pd.apiToken, burstPer2Seconds: 100 },
        mapping: { phone: 'phones', defaultCountry: 'US' }, mirror: { every: '1h' } },
      { id: 'file', campaignId: f.campaignId, source: { type: 'webhook', secret: 'whsec_c2VjcmV0' }, mapping: { phone: 'phone' },
        mirror: { every: '1h', sink: { type: 'file', path: file } } },
    ], { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ } }), { log: quietLog, http: false });
    await waitFor(async () => (await numberCount(f)) >= 20, 'the persons in the campaign');
  });
  afterAll(async () => {
    await d?.close(2000);
    await pd?.close();
    await f?.server.close();
    await cleanup();
  });

  it('writes one call log per attempt on its person, and one line per attempt', async () => {
    await f.server.advance(3 * 3600);
    const all = await records(f);
    expect(all.length).toBeGreaterThan(20);
    await d.triggerMirror('pd', 'test');
    await d.triggerMirror('file', 'test');
    await waitFor(() => pd.callLogs().length >= all.length, 'the call logs');
    const logs = pd.callLogs();
    expectOnePerAttempt(f, all, logs.map((l) => l.subject));
    const personOf = new Map(pd.persons().flatMap((p) => p.phones.map((ph) => [e164(ph.value), p.id] as const)));
    for (const l of logs) {
      const r = all.find((x) => callKey(f.campaignId, x) === keyOf(l.subject))!;
      expect(l.person_id).toBe(personOf.get(r.number));
      expect(l.to_phone_number).toBe(r.number);
      expect(l.start_time).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
      expect(['connected', 'no_answer', 'left_voicemail', 'busy', 'wrong_number']).toContain(l.outcome);
    }
    await waitFor(() => {
      try { return readFileSync(file, 'utf8').trim().split('\n').length >= all.length; } catch { return false; }
    }, 'the file lines');
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((l) => l.key).sort()).toEqual(all.map((r) => callKey(f.campaignId, r)).sort());
    // The strict stand-in refused none of the sink's call logs.
    expect(pd.refusals()).toEqual([]);
  }, 60_000);
});

describe('kill -9 in the middle of mirroring', () => {
  it('resolves the write whose answer was lost against HubSpot, and writes no activity twice', async () => {
    const f = await dialer(13);
    const hs = await startHubSpotStandIn({ contacts: 25, searchPerSecond: 100 });
    const proxy = await startProxy(hs.url);
    const { prefix, cleanup } = testPrefix();
    let child: Awaited<ReturnType<typeof spawnDaemon>> | null = null;
    try {
      const config = (everyMirror: string) => ({
        redis: { prefix }, http: { host: '127.0.0.1', port: 0 }, takeoverAfter: '2s', log: { level: 'warn' },
        dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: '${MIRROR_DIALER_TOKEN}', rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
        syncs: [{ id: 'hs', campaignId: f.campaignId, mapping: { phone: 'phone', defaultCountry: 'US' },
          source: { type: 'hubspot', baseUrl: proxy.url, accessToken: '${MIRROR_HUBSPOT_TOKEN}', searchPerSecond: 50 }, mirror: { every: everyMirror } }],
      });
      const env = { MIRROR_DIALER_TOKEN: f.token, MIRROR_HUBSPOT_TOKEN: hs.token };
      child = await spawnDaemon(config('1h'), dir, env);
      await waitFor(async () => (await numberCount(f)) === 25, 'the contacts in the campaign');
      await f.server.advance(2 * 3600);
      const all = await records(f);
      // The first batch of activities is created in HubSpot; the daemon dies before it hears so.
      let killed: Promise<void> | null = null;
      proxy.onAnswer = (exchange) => {
        if (!killed && exchange.method === 'POST' && /\/calls\/batch\/create/.test(exchange.path)) {
          killed = child!.kill();
          return 'drop';
        }
      };
      await child.kill();
      child = await spawnDaemon(config('1s'), dir, env);
      await waitFor(() => killed !== null, 'a batch written while the daemon dies');
      await killed;
      const written = hs.calls().length;
      expect(written).toBeGreaterThan(0);
      const redis = new Redis(REDIS_URL);
      const mk = new DaemonKeys(prefix).sync('hs', campaignKey(f.server.url, f.accountId, f.campaignId)).mirror.meta;
      try {
        expect(await redis.hlen(`${mk}:pending`)).toBe(written);
        proxy.onAnswer = null;
        child = await spawnDaemon(config('1s'), dir, env);
        // The restarted daemon settles the pending writes (found in HubSpot) and writes the rest.
        await waitFor(async () => (await redis.hlen(`${mk}:pending`)) === 0 && Number(await redis.hget(mk, 'mirrored')) === all.length, 'every attempt settled', 60_000);
      } finally {
        redis.disconnect();
      }
      expectOnePerAttempt(f, all, hs.calls().map((c) => c.properties.hs_call_title));
      // The lost answer was settled by a search, not by writing again.
      expect(proxy.exchanges.some((e) => e.method === 'POST' && /\/calls\/search/.test(e.path))).toBe(true);
    } finally {
      await child?.kill();
      await proxy.close();
      await hs.close();
      await f.server.close();
      await cleanup();
    }
  }, 120_000);
});

describe("the dialer's call.finished events", () => {
  it('mirror each call without waiting for the poll; forged events are refused; a backfill adds nothing', async () => {
    const server = await startServer({ seed: 14, clockStart: START });
    const hs = await startHubSpotStandIn({ contacts: 15 });
    const { prefix, cleanup } = testPrefix();
    const port = await freePort();
    const daemonUrl = `http://127.0.0.1:${port}`;
    let d: Daemon | null = null;
    try {
      const account = await createAccount(server, 'Events Co', TZ);
      const endpoint = await server.console('POST', `/accounts/${account.id}/webhookEndpoints`, { url: `${daemonUrl}/webhooks/hs/events` });
      const campaign = await createCampaign(server, account.id, {
        name: 'Evented', type: 'Dynamic', state: 'Active', webhookEndpointId: endpoint.id,
        dialer: { mode: 'Power', agents: 3, maxAttempts: 1, callingHours: ALL_DAY },
      });
      const token = await createKey(server, account.id, ['CampaignNumberAdmin', 'CampaignReader']);
      const f: DialerFixture = { server, accountId: account.id, token, campaignId: campaign.id };
      const raw = rulesOff({
        redis: { prefix }, http: { host: '127.0.0.1', port, publicUrl: daemonUrl }, log: { level: 'error' },
        dialer: { baseUrl: server.url, accountId: account.id, apiToken: token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
        // The poll is an hour away: only events can bring the activities in time.
        syncs: [{ id: 'hs', campaignId: campaign.id, source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, searchPerSecond: 50 },
          mapping: { phone: 'phone', defaultCountry: 'US' }, mirror: { every: '1h', eventsSecret: endpoint.secret } }],
      });
      d = await Daemon.start(parseConfig(raw, 'test', {}), { log: quietLog });
      await waitFor(async () => (await numberCount(f)) === 15, 'the contacts in the campaign');
      const forged = await fetch(`${daemonUrl}/webhooks/hs/events`, {
        method: 'POST', body: JSON.stringify({ type: 'call.finished' }),
        headers: { 'content-type': 'application/json', 'webhook-id': 'evt_x', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' },
      });
      expect(forged.status).toBe(401);
      await server.advance(3600);
      const all = await records(f);
      expect(all.length).toBeGreaterThan(10);
      await waitFor(() => hs.calls().length === all.length, 'the activities, brought by events');
      expectOnePerAttempt(f, all, hs.calls().map((c) => c.properties.hs_call_title));

      // The backfill command, as an operator runs it, beside the running daemon.
      const file = join(dir, 'events.json');
      writeFileSync(file, JSON.stringify({ ...raw, http: { ...raw.http, port: 0 } }));
      // Asynchronously: the daemon of this process must keep serving while the command runs.
      const { stdout } = await promisify(execFile)(process.execPath, [join(import.meta.dirname, '../../daemon/cli.ts'), 'backfill', 'hs', '--since', '2026-11-01', '--config', file], { encoding: 'utf8', timeout: 60_000 });
      expect(JSON.parse(stdout)).toMatchObject({ since: '2026-11-01T00:00:00', read: all.length, written: 0, skipped: all.length });
      expect(hs.calls().length).toBe(all.length);
    } finally {
      await d?.close(2000);
      await hs.close();
      await server.close();
      await cleanup();
    }
  }, 90_000);
});

describe('mirroring with two processes, and across a Redis restart', () => {
  it('two daemon processes on one Redis write each attempt once', async () => {
    const f = await dialer(15);
    const hs = await startHubSpotStandIn({ contacts: 40, searchPerSecond: 100 });
    const { prefix, cleanup } = testPrefix();
    const procs: Awaited<ReturnType<typeof spawnDaemon>>[] = [];
    try {
      const config = {
        redis: { prefix }, http: { host: '127.0.0.1', port: 0 }, takeoverAfter: '2s', log: { level: 'warn' },
        dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: '${TWO_DIALER_TOKEN}', rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
        syncs: [{ id: 'hs', campaignId: f.campaignId, mapping: { phone: 'phone', defaultCountry: 'US' },
          source: { type: 'hubspot', baseUrl: hs.url, accessToken: '${TWO_HUBSPOT_TOKEN}', searchPerSecond: 50 }, mirror: { every: '1s' } }],
      };
      const env = { TWO_DIALER_TOKEN: f.token, TWO_HUBSPOT_TOKEN: hs.token };
      procs.push(await spawnDaemon(config, dir, env), await spawnDaemon(config, dir, env));
      await waitFor(async () => (await numberCount(f)) === 40, 'the contacts in the campaign');
      // Calls keep ending while both processes poll every second.
      for (let i = 0; i < 6; i++) {
        await f.server.advance(600);
        const all = await records(f);
        await waitFor(() => hs.calls().length >= all.length, `${all.length} activities`);
      }
      const all = await records(f);
      expect(all.length).toBeGreaterThan(20);
      expectOnePerAttempt(f, all, hs.calls().map((c) => c.properties.hs_call_title));
    } finally {
      for (const p of procs) await p.kill();
      await hs.close();
      await f.server.close();
      await cleanup();
    }
  }, 120_000);

  it('a Redis killed and restarted mid-mirroring loses and repeats nothing', async () => {
    const port = await freePort();
    const redisDir = mkdtempSync(join(tmpdir(), 'cds-mirror-redis-'));
    let redisServer: ChildProcess | null = null;
    const startRedis = async () => { redisServer = await startRedisServer(port, redisDir); };
    await startRedis();
    const f = await dialer(16);
    const hs = await startHubSpotStandIn({ contacts: 40, searchPerSecond: 100 });
    let d: Daemon | null = null;
    try {
      d = await Daemon.start(parseConfig(rulesOff({
        redis: { url: `redis://127.0.0.1:${port}`, prefix: 'mr' }, http: { host: '127.0.0.1', port: 0 }, log: { level: 'error' },
        dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
        syncs: [{ id: 'hs', campaignId: f.campaignId, mapping: { phone: 'phone', defaultCountry: 'US' },
          source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, searchPerSecond: 50 }, mirror: { every: '1s' } }],
      }), 'test', {}), { log: quietLog, http: false });
      await waitFor(async () => (await numberCount(f)) === 40, 'the contacts in the campaign');
      await f.server.advance(1800);
      const first = await records(f);
      await waitFor(() => hs.calls().length >= first.length, 'the first activities');
      const exited = new Promise((r) => redisServer!.once('exit', r));
      redisServer!.kill('SIGKILL');
      await exited;
      await f.server.advance(1800);
      await startRedis();
      const all = await records(f);
      await waitFor(() => hs.calls().length >= all.length, 'every activity after the restart', 60_000);
      expectOnePerAttempt(f, all, hs.calls().map((c) => c.properties.hs_call_title));
      // The restart was noticed and the next run checked HubSpot before writing what it found unmarked.
      const check = new Redis(port, '127.0.0.1');
      try {
        await waitFor(async () => (await check.hget(new DaemonKeys('mr').sync('hs', campaignKey(f.server.url, f.accountId, f.campaignId)).mirror.meta, 'verify')) === null, 'the verifying run');
      } finally {
        check.disconnect();
      }
      expectOnePerAttempt(f, all, hs.calls().map((c) => c.properties.hs_call_title));
    } finally {
      await d?.close(2000);
      (redisServer as ChildProcess | null)?.kill('SIGKILL');
      rmSync(redisDir, { recursive: true, force: true });
      await hs.close();
      await f.server.close();
    }
  }, 120_000);
});

describe('answers lost around a write that creates activities', () => {
  // Every few writes the CRM's answer is lost: replaced by a 502 or cut off after the CRM stored the activities, or
  // a 503 before it stored anything. A write that creates must never be sent again on such a doubt: it is settled
  // by looking up what the CRM holds, in bulk, over far more activities than one page of that look-up.
  function loseAnswers(proxy: Awaited<ReturnType<typeof startProxy>>, isCreate: (method: string, path: string) => boolean, every = { before: 9, failed: 5, cut: 7 }) {
    let n = 0;
    const lost = { after: 0, before: 0 };
    proxy.intercept = (req) => {
      if (!isCreate(req.method!, req.url!) || ++n % every.before !== 0) return undefined;
      lost.before++;
      return { status: 503, headers: { 'content-type': 'application/json' }, body: '{"message":"unavailable"}' };
    };
    let m = 0;
    proxy.onAnswer = (exchange) => {
      if (!isCreate(exchange.method, exchange.path) || exchange.status >= 300) return undefined;
      m++;
      if (m % every.failed === 0) { lost.after++; return { status: 502 }; }
      if (m % every.cut === 0) { lost.after++; return 'drop'; }
      return undefined;
    };
    return lost;
  }

  async function mirrorUntil(d: Daemon, syncId: string, done: () => boolean, what: string): Promise<void> {
    await waitFor(async () => {
      if (done()) return true;
      await d.triggerMirror(syncId, 'test');
      return false;
    }, what, 120_000);
  }

  it('HubSpot: every call once, although batches of 100 were answered 502, cut off, or refused with a 503', async () => {
    const f = await dialer(21, 12);
    const hs = await startHubSpotStandIn({ contacts: 300, searchPerSecond: 100, requestsPer10Seconds: 1000 });
    const proxy = await startProxy(hs.url);
    const { prefix, cleanup } = testPrefix();
    const d = await Daemon.start(daemonConfig(f, prefix, [{
      id: 'hs', campaignId: f.campaignId,
      source: { type: 'hubspot', baseUrl: proxy.url, accessToken: hs.token, searchPerSecond: 50, requestsPer10Seconds: 1000 },
      mapping: { phone: 'phone', defaultCountry: 'US' }, mirror: { every: '1h' },
    }], { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ } }), { log: quietLog, http: false });
    try {
      await waitFor(async () => (await numberCount(f)) >= 200, 'the contacts in the campaign');
      await f.server.advance(4 * 3600);
      const all = await records(f);
      expect(all.length).toBeGreaterThan(250); // more than a page of the look-up's search (200 a page)
      // Batches of 100: every second answer is a 502, every third cut off, every fourth request refused before HubSpot.
      const lost = loseAnswers(proxy, (method, path) => method === 'POST' && path.includes('/calls/batch/create'), { before: 4, failed: 2, cut: 3 });
      await mirrorUntil(d, 'hs', () => hs.calls().length >= all.length && lost.after >= 2, `${all.length} calls`);
      proxy.intercept = null; proxy.onAnswer = null;
      await d.triggerMirror('hs', 'test');
      await waitFor(async () => (await d.redis.hlen(d.runtimes.get('hs')!.state.keys.mirror.pending)) === 0, 'nothing pending');
      expect(lost.after).toBeGreaterThan(1);
      expect(lost.before).toBeGreaterThan(0);
      expectOnePerAttempt(f, all, hs.calls().map((c) => c.properties.hs_call_title));
    } finally {
      await d.close(2000); await proxy.close(); await hs.close(); await f.server.close(); await cleanup();
    }
  }, 180_000);

  it('Pipedrive: every call log once, although answers were 502, cut off, or refused with a 503', async () => {
    const f = await dialer(22, 12);
    const pd = await startPipedriveStandIn({ persons: 120 });
    const proxy = await startProxy(pd.url);
    const { prefix, cleanup } = testPrefix();
    const d = await Daemon.start(daemonConfig(f, prefix, [{
      id: 'pd', campaignId: f.campaignId, source: { type: 'pipedrive', baseUrl: proxy.url, apiToken: pd.apiToken, burstPer2Seconds: 200, dailyTokens: 10_000_000 },
      mapping: { phone: 'phones', defaultCountry: 'US' }, mirror: { every: '1h' },
    }], { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ } }), { log: quietLog, http: false });
    try {
      await waitFor(async () => (await numberCount(f)) >= 100, 'the persons in the campaign');
      await f.server.advance(3 * 3600);
      const all = await records(f);
      expect(all.length).toBeGreaterThan(150); // more than three pages of call logs (50 a page)
      const lost = loseAnswers(proxy, (method, path) => method === 'POST' && /\/v1\/callLogs$/.test(path));
      try { await mirrorUntil(d, 'pd', () => pd.callLogs().length >= all.length && lost.after >= 2, `${all.length} call logs`); } catch (e) {
        console.log('DEBUG', pd.callLogs().length, lost, await d.redis.hgetall(d.runtimes.get('pd')!.state.keys.mirror.meta), await d.redis.hlen(d.runtimes.get('pd')!.state.keys.mirror.pending), (await d.syncQueue.getFailed()).slice(0, 3).map((j) => j.failedReason));
        throw e;
      }
      proxy.intercept = null; proxy.onAnswer = null;
      await d.triggerMirror('pd', 'test');
      await waitFor(async () => (await d.redis.hlen(d.runtimes.get('pd')!.state.keys.mirror.pending)) === 0, 'nothing pending');
      expect(lost.after).toBeGreaterThan(1);
      expect(lost.before).toBeGreaterThan(0);
      expectOnePerAttempt(f, all, pd.callLogs().map((l) => l.subject));
    } finally {
      await d.close(2000); await proxy.close(); await pd.close(); await f.server.close(); await cleanup();
    }
  }, 180_000);
});
