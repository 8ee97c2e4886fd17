// Nothing lost, nothing twice: a 20,000-contact sync killed with SIGKILL at several points (one of them the moment
// the dialer has added a batch and the daemon has not yet heard), a Redis killed and restarted mid-sync, and two
// daemon processes sharing one Redis. Each ends with the campaign holding exactly the selected contacts once.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { Daemon } from '../../daemon/app.ts';
import { parseConfig } from '../../daemon/config.ts';
import { DaemonKeys, SyncKeys, campaignKey } from '../../daemon/state/keys.ts';
import { campaignNumbers, dialerFixture, freePort, quietLog, REDIS_URL, rulesOff, spawnDaemon, startRedisServer, testPrefix, waitFor, type DaemonProcess, type DialerFixture } from '../support/daemon.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';

const dir = mkdtempSync(join(tmpdir(), 'cds-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The phone numbers the stand-in's selected contacts should put in the campaign. */
function expectedNumbers(hs: HubSpotStandIn): string[] {
  return hs.contacts()
    .filter((c) => c.properties.hs_lead_status !== 'UNQUALIFIED')
    .map((c) => parsePhoneNumberFromString(c.properties.phone!, 'US')!.number)
    .sort();
}

interface World { f: DialerFixture; proxy: Proxy; hs: HubSpotStandIn; prefix: string; cleanup(): Promise<void>; duplicatesRejected: number; posts: number }

async function world(contacts: number): Promise<World> {
  const f = await dialerFixture();
  const proxy = await startProxy(f.server.url);
  const hs = await startHubSpotStandIn({ contacts, searchPerSecond: 100 });
  // A tenth of the contacts are outside the selection.
  for (const c of hs.contacts()) if (Number(c.id) % 10 === 3) hs.updateContact(c.id, { hs_lead_status: 'UNQUALIFIED' });
  const { prefix, cleanup } = testPrefix();
  const w: World = { f, proxy, hs, prefix, cleanup, duplicatesRejected: 0, posts: 0 };
  proxy.onAnswer = (exchange, body) => {
    if (exchange.method === 'POST' && /\/numbers(\?|$)/.test(exchange.path)) {
      w.posts++;
      // The server refusing a number as already there would mean the daemon sent it twice.
      const answer = JSON.parse(body.toString() || '{}') as { rejected?: { code: string }[] };
      w.duplicatesRejected += (answer.rejected ?? []).filter((r) => r.code === 'duplicate').length;
    }
  };
  return w;
}

function rawConfig(w: World, redisUrl = REDIS_URL): Record<string, unknown> {
  return {
    redis: { url: redisUrl, prefix: w.prefix },
    http: { host: '127.0.0.1', port: 0 },
    dialer: { baseUrl: w.proxy.url, accountId: w.f.accountId, apiToken: '${CRASH_DIALER_TOKEN}', rateLimit: { perSecond: 40, burst: 40 }, maxNumbersPerRequest: 250 },
    takeoverAfter: '2s',
    log: { level: process.env.DAEMON_TEST_LOG ?? 'info' },
    syncs: [{
      id: 'leads',
      source: {
        type: 'hubspot', baseUrl: w.hs.url, accessToken: '${CRASH_HUBSPOT_TOKEN}', searchPerSecond: 40,
        selection: { filterGroups: [{ filters: [{ propertyName: 'hs_lead_status', operator: 'NEQ', value: 'UNQUALIFIED' }] }] },
      },
      campaignId: w.f.campaignId,
      mapping: { phone: 'phone', variables: { firstName: 'firstname', company: 'company' }, defaultCountry: 'US' },
      schedule: { every: '1h' },
    }],
  };
}

/** The keys of the sync the spawned daemons run (its dialer is the proxy). */
function leadsKeys(w: World): SyncKeys {
  return new DaemonKeys(w.prefix).sync('leads', campaignKey(w.proxy.url, w.f.accountId, w.f.campaignId));
}

function env(w: World): Record<string, string> {
  return { CRASH_DIALER_TOKEN: w.f.token, CRASH_HUBSPOT_TOKEN: w.hs.token };
}

/** The campaign holds exactly these phone numbers, each once, and the daemon has nothing left to do. */
async function settled(w: World, redis: Redis, expected: string[]): Promise<boolean> {
  const numbers = (await campaignNumbers(w.f)).map((n) => n.number).sort();
  if (numbers.length !== expected.length || numbers.some((n, i) => n !== expected[i])) return false;
  if (await redis.hlen(leadsKeys(w).batches)) return false;
  return true;
}

async function countNumbers(w: World): Promise<number> {
  const res = await w.f.server.request(`/v1/accounts/${w.f.accountId}/campaigns/${w.f.campaignId}/numbers?range=[0,0]`, { token: w.f.token });
  return Number(res.headers.get('x-total-count'));
}

describe('kill -9 of the daemon at several points of a 20,000-contact sync', () => {
  let w: World;
  let d: DaemonProcess | null = null;
  const redis = new Redis(REDIS_URL);
  beforeAll(async () => { w = await world(22_222); });
  afterAll(async () => {
    await d?.kill();
    await w.cleanup(); redis.disconnect();
    await w.hs.close(); await w.proxy.close(); await w.f.server.close();
  });

  it('restarted each time, ends with the campaign holding exactly the selected contacts once', async () => {
    const expected = expectedNumbers(w.hs);
    expect(expected.length).toBe(20_000);
    expect(new Set(expected).size).toBe(20_000);

    // 1. In the middle of the full import.
    d = await spawnDaemon(rawConfig(w), dir, env(w));
    await waitFor(async () => (await countNumbers(w)) >= 3000, 'a first part of the import');
    await d.kill();

    // 2. The dialer has just added a batch; the daemon dies before it hears the answer.
    let killedAtAnswer: Promise<void> | null = null;
    const postsBefore = w.posts;
    const counting = w.proxy.onAnswer!;
    w.proxy.onAnswer = (exchange, body) => {
      counting(exchange, body);
      if (!killedAtAnswer && exchange.method === 'POST' && exchange.status === 201 && w.posts >= postsBefore + 3) {
        killedAtAnswer = d!.kill();
        return 'drop';
      }
    };
    d = await spawnDaemon(rawConfig(w), dir, env(w));
    await waitFor(() => killedAtAnswer !== null, 'a batch answered while the daemon dies');
    await killedAtAnswer;
    w.proxy.onAnswer = counting;

    // 3. Once more, a little later in the import.
    d = await spawnDaemon(rawConfig(w), dir, env(w));
    const at = await countNumbers(w);
    await waitFor(async () => (await countNumbers(w)) >= Math.min(at + 4000, 18_000), 'more of the import');
    await d.kill();

    // 4. Let it finish.
    d = await spawnDaemon(rawConfig(w), dir, env(w));
    await waitFor(() => settled(w, redis, expected), 'the campaign to hold exactly the selected numbers', 120_000);
    expect(w.duplicatesRejected).toBe(0);

    // The selection then changes: contacts leave it, others join, one changes its variables; killed again mid-way.
    const leaving = w.hs.contacts().filter((c) => Number(c.id) % 10 === 5).slice(0, 1500);
    for (const c of leaving) w.hs.updateContact(c.id, { hs_lead_status: 'UNQUALIFIED' });
    const joining = w.hs.contacts().filter((c) => c.properties.hs_lead_status === 'UNQUALIFIED' && Number(c.id) % 10 === 3).slice(0, 700);
    for (const c of joining) w.hs.updateContact(c.id, { hs_lead_status: 'OPEN' });
    const renamed = w.hs.contacts().find((c) => c.properties.hs_lead_status !== 'UNQUALIFIED')!;
    w.hs.updateContact(renamed.id, { firstname: 'Renamed' });
    const after = expectedNumbers(w.hs);
    const deletesBefore = w.proxy.exchanges.filter((e) => e.method === 'DELETE').length;
    await d.kill();
    d = await spawnDaemon({ ...rawConfig(w), syncs: [{ ...(rawConfig(w).syncs as any[])[0], schedule: { every: '1s' } }] }, dir, env(w));
    await waitFor(() => w.proxy.exchanges.filter((e) => e.method === 'DELETE').length > deletesBefore, 'deletions to start');
    await d.kill();
    d = await spawnDaemon(rawConfig(w), dir, env(w));
    await waitFor(() => settled(w, redis, after), 'the campaign to follow the changed selection', 120_000);
    const renamedNumber = parsePhoneNumberFromString(renamed.properties.phone!, 'US')!.number;
    const record = (await campaignNumbers(w.f)).find((n) => n.number === renamedNumber)!;
    expect(record.varValues[0]).toBe('Renamed');
    expect(w.duplicatesRejected).toBe(0);
  }, 300_000);
});

describe('Redis killed and restarted mid-sync', () => {
  let w: World;
  let redisServer: ChildProcess | null = null;
  let daemon: Daemon | null = null;
  let port = 0;
  const redisDir = mkdtempSync(join(tmpdir(), 'cds-redis-'));
  const startRedis = async () => { redisServer = await startRedisServer(port, redisDir); };
  beforeAll(async () => {
    port = await freePort();
    await startRedis();
    w = await world(8000);
  });
  afterAll(async () => {
    await daemon?.close(2000);
    redisServer?.kill('SIGKILL');
    rmSync(redisDir, { recursive: true, force: true });
    await w.hs.close(); await w.proxy.close(); await w.f.server.close();
  });

  it('is survived: the sync finishes with every selected contact once', async () => {
    const expected = expectedNumbers(w.hs);
    const config = parseConfig(rulesOff(rawConfig(w, `redis://127.0.0.1:${port}`)), 'test', env(w));
    daemon = await Daemon.start(config, { log: quietLog, http: false });
    await waitFor(async () => (await countNumbers(w)) >= 1500, 'part of the import');
    const runIdBefore = await daemon.redis.get(new DaemonKeys(w.prefix).redisRunId);
    const exited = new Promise((r) => redisServer!.once('exit', r));
    redisServer!.kill('SIGKILL');
    await exited;
    await startRedis();
    const check = new Redis(port, '127.0.0.1');
    try {
      // The restart is noticed (Redis's run id changed), and the sync reconciles with the campaign.
      await waitFor(async () => (await check.get(new DaemonKeys(w.prefix).redisRunId)) !== runIdBefore, 'the restart to be noticed');
      await waitFor(async () => (await check.hget(leadsKeys(w).meta, 'reconcile')) === null, 'the reconciliation after the restart');
      await waitFor(() => settled(w, check, expected), 'the sync to finish after the restart', 120_000);
      expect(w.duplicatesRejected).toBe(0);
    } finally {
      check.disconnect();
    }
  }, 180_000);
});

describe('two daemon processes on one Redis', () => {
  let w: World;
  const procs: DaemonProcess[] = [];
  const redis = new Redis(REDIS_URL);
  beforeAll(async () => { w = await world(11_111); });
  afterAll(async () => {
    for (const p of procs) await p.kill();
    await w.cleanup(); redis.disconnect();
    await w.hs.close(); await w.proxy.close(); await w.f.server.close();
  });

  it('share the work and create no duplicate', async () => {
    const expected = expectedNumbers(w.hs);
    procs.push(await spawnDaemon(rawConfig(w), dir, env(w)), await spawnDaemon(rawConfig(w), dir, env(w)));
    await waitFor(() => settled(w, redis, expected), 'the campaign to hold the selected numbers', 120_000);
    expect(w.duplicatesRejected).toBe(0);
    // Both processes pushed batches (each has its own /metrics).
    const pushedBy = await Promise.all(procs.map(async (p) => {
      const text = await (await fetch(`${await p.address}/metrics`)).text();
      return [...text.matchAll(/^cds_numbers_total\{[^}]*outcome="pushed"[^}]*\} (\d+)/gm)].reduce((a, m) => a + Number(m[1]), 0);
    }));
    expect(pushedBy.every((n) => n > 0)).toBe(true);
    expect(pushedBy[0]! + pushedBy[1]!).toBe(expected.length);
    // One scheduler for the one sync's pulls and one for its comparison, however many processes started.
    const queue = new Queue(new DaemonKeys(w.prefix).syncQueue, { connection: redis, prefix: w.prefix });
    try {
      expect((await queue.getJobSchedulers()).map((s) => s.key).sort()).toEqual(['compare-leads', 'tick-leads']);
    } finally {
      await queue.close();
    }
  }, 180_000);
});

describe('SIGTERM in the middle of a full import', () => {
  let w: World;
  let d: DaemonProcess | null = null;
  const redis = new Redis(REDIS_URL);
  beforeAll(async () => { w = await world(6000); });
  afterAll(async () => {
    await d?.kill();
    await w.cleanup(); redis.disconnect();
    await w.hs.close(); await w.proxy.close(); await w.f.server.close();
  });

  it('stops between two pages, and the run resumes from its checkpoint after the restart', async () => {
    const expected = expectedNumbers(w.hs);
    // Slow reads (4 searches/s) so the import is still running when the signal comes; a long deadline so that
    // only an interrupted run, not the deadline, can explain a prompt exit.
    const slow = (config: Record<string, any>) => ({
      ...config, shutdownTimeout: '60s',
      syncs: config.syncs.map((s: any) => ({ ...s, source: { ...s.source, searchPerSecond: 4 } })),
    });
    d = await spawnDaemon(slow(rawConfig(w)), dir, env(w));
    await waitFor(async () => (await countNumbers(w)) >= 1000, 'part of the import');
    expect(await d.stop()).toBe(0);
    const [runId] = await redis.lrange(leadsKeys(w).runs, 0, 0);
    const run = await redis.hgetall(leadsKeys(w).run(runId!));
    expect(run).toMatchObject({ mode: 'full', status: 'running' });
    expect(run.interruptedAt).toBeDefined();
    expect(Number(run.seen)).toBeLessThan(6000);
    d = await spawnDaemon(rawConfig(w), dir, env(w));
    await waitFor(() => settled(w, redis, expected), 'the import to finish after the restart', 120_000);
    // The same run went on where it stopped: its counts add up to one read of the selection.
    await waitFor(async () => (await redis.hget(leadsKeys(w).run(runId!), 'status')) === 'done', 'the resumed run to end');
    expect(Number(await redis.hget(leadsKeys(w).run(runId!), 'seen'))).toBe(expected.length);
    expect(w.duplicatesRejected).toBe(0);
  }, 180_000);
});

/** Holds the HubSpot search that is the `nth` one the proxy sees until `release` (the first ones pass). */
function holdSearch(proxy: Proxy, nth: number): { held(): boolean; release(): void } {
  let searches = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => { release = r; });
  let holding = false;
  proxy.hold = (req) => {
    if (!(req.method === 'POST' && /\/contacts\/search/.test(req.url!)) || ++searches !== nth) return undefined;
    holding = true;
    return { before: gate };
  };
  return { held: () => holding, release };
}

/** How many of the daemons' log lines are about run `runId` and say `msg`. */
const runLines = (procs: DaemonProcess[], runId: string, msg: string) =>
  procs.flatMap((p) => p.output().split('\n')).filter((l) => l.includes(`"run":"${runId}"`) && l.includes(`"msg":"${msg}`)).length;

describe('a full read\'s hazards: its job lock lost, its record of what it read lost', () => {
  let w: World;
  let hsProxy: Proxy;
  let procs: DaemonProcess[] = [];
  const redis = new Redis(REDIS_URL);
  const config = () => {
    const c = rawConfig(w) as { syncs: { source: Record<string, unknown> }[] };
    c.syncs[0]!.source.baseUrl = hsProxy.url;
    return c;
  };
  beforeEach(async () => {
    w = await world(3000);
    hsProxy = await startProxy(w.hs.url);
    procs = [];
  });
  afterEach(async () => {
    for (const p of procs) await p.kill();
    await w.cleanup();
    await hsProxy.close(); await w.hs.close(); await w.proxy.close(); await w.f.server.close();
  });
  afterAll(() => { redis.disconnect(); });

  it('never has two processes run one sync at once (a lost job lock): the import ends exact, nothing deleted', async () => {
    const expected = expectedNumbers(w.hs);
    // The fifth page's read is held while the run's BullMQ lock is taken away: the lock lapses, BullMQ's stalled
    // check gives the job to a worker again (this or the other process), and the first run is still going on.
    const search = holdSearch(hsProxy, 5);
    procs.push(await spawnDaemon(config(), dir, env(w)), await spawnDaemon(config(), dir, env(w)));
    await waitFor(() => search.held(), 'the fifth page\'s read to be held');
    const keys = leadsKeys(w);
    const [runId] = await redis.lrange(keys.runs, 0, 0);
    const jobKey = `${w.prefix}:${new DaemonKeys(w.prefix).syncQueue}:${runId}`;
    const firstToken = await redis.get(`${jobKey}:lock`);
    expect(firstToken).not.toBeNull();
    await redis.del(`${jobKey}:lock`);
    // Taken again: the job carries a new lock (its worker's), or was put back to wait for the first run to end.
    await waitFor(async () => {
      const lock = await redis.get(`${jobKey}:lock`);
      return (lock && lock !== firstToken) || Number(await redis.hget(jobKey, 'stc')) > 0;
    }, 'the job to be taken again after its lock lapsed', 30_000);
    // Long enough for a second run to read the rest of the selection (a few pages at 40 searches/s).
    await waitFor(async () => (await redis.hget(keys.meta, 'fullDone')) === '1' || (await redis.exists(`${jobKey}:lock`)) === 0, 'the second taker to finish or stand down', 30_000);
    search.release();
    // Every start of the run (in either process) has ended: the held one went on after its read was answered.
    const ended = () => runLines(procs, runId!, 'run done') + runLines(procs, runId!, 'run failed') + runLines(procs, runId!, 'run stopped');
    await waitFor(() => runLines(procs, runId!, 'run started') > 0 && runLines(procs, runId!, 'run started') === ended(), 'every start of the run to end', 60_000);
    await waitFor(() => settled(w, redis, expected), 'the campaign to hold exactly the selected numbers', 120_000);
    expect(await redis.hlen(keys.contacts)).toBe(expected.length);
    expect(runLines(procs, runId!, 'run started')).toBe(1);
    expect(w.proxy.exchanges.filter((e) => e.method === 'DELETE').length).toBe(0);
    expect(w.duplicatesRejected).toBe(0);
  }, 180_000);

  it('takes no contact for gone when the set of ids it read is lost mid-read, and leaves the comparison due', async () => {
    const expected = expectedNumbers(w.hs);
    const search = holdSearch(hsProxy, 5);
    procs.push(await spawnDaemon(config(), dir, env(w)));
    await waitFor(() => search.held(), 'the fifth page\'s read to be held');
    const keys = leadsKeys(w);
    const [runId] = await redis.lrange(keys.runs, 0, 0);
    expect(await redis.scard(keys.seen(runId!))).toBeGreaterThan(300);
    await redis.del(keys.seen(runId!));
    search.release();
    await waitFor(() => runLines(procs, runId!, 'run done') === 1, 'the run to end');
    await waitFor(() => settled(w, redis, expected), 'the campaign to hold exactly the selected numbers', 60_000);
    expect(await redis.hlen(keys.contacts)).toBe(expected.length);
    expect(procs[0]!.output()).toContain('record of the contacts it read was lost');
    // The read compared nothing: the comparison's schedule still finds one due.
    expect(await redis.hget(keys.meta, 'lastCompareAt')).toBeNull();
    expect(await redis.hget(keys.meta, 'fullDone')).toBe('1');
    expect(w.proxy.exchanges.filter((e) => e.method === 'DELETE').length).toBe(0);
  }, 120_000);
});
