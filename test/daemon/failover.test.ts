// Exactly once through a Redis Cluster failover that loses what its master acknowledged: the replica of the master
// holding a sync's keys is paused and its replication link clogged, so the master's next acknowledged writes never
// reach it; the master is then killed and the replica promoted without them. Made deterministic, not found by luck.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { callKey } from '../../daemon/mirror/mirror.ts';
import { DaemonKeys, campaignKey } from '../../daemon/state/keys.ts';
import { spawnDaemon, testPrefix, waitFor, type DaemonProcess } from '../support/daemon.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { startRedisCluster, type RedisClusterUnderTest } from '../support/redis-cluster.ts';
import { createAccount, createCampaign, createKey, startServer, type TestServer } from '../support/server.ts';

const CONTACTS = 400;
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };

/** Whether a client of the node on `port` is blocked in WAIT (a daemon holding a write until a replica has its mark). */
async function blockedInWait(port: number): Promise<boolean> {
  const r = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  r.on('error', () => {});
  try {
    await r.connect();
    return /\bcmd=wait\b/.test(await r.client('LIST') as string);
  } finally {
    r.disconnect();
  }
}

describe('a Redis Cluster failover that loses acknowledged writes', () => {
  let cluster: RedisClusterUnderTest;
  let server: TestServer;
  let proxy: Proxy;
  let hs: HubSpotStandIn;
  let accountId: string;
  let token: string;
  let campaignId: string;
  let client: Cluster;
  const procs: DaemonProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'cds-failover-'));
  const { prefix } = testPrefix();
  const sentPhones: string[] = [];
  const sends: { at: number; phones: string[] }[] = [];

  beforeAll(async () => {
    cluster = await startRedisCluster();
    client = new Cluster(cluster.urls.map((u) => ({ host: '127.0.0.1', port: Number(new URL(u).port) })), { redisOptions: { maxRetriesPerRequest: 20 } });
    server = await startServer({ seed: 7, clockStart: '2026-11-02T13:00:00Z' });
    proxy = await startProxy(server.url);
    // Every phone number the daemons send to be added, as often as they send it.
    proxy.interceptWithBody = (req, body) => {
      if (req.method === 'POST' && /\/numbers(\?|$)/.test(req.url!)) {
        const phones = (JSON.parse(body.toString()) as { number: string }[]).map((e) => e.number);
        sentPhones.push(...phones);
        sends.push({ at: Date.now(), phones });
      }
      return undefined;
    };
    const account = await createAccount(server, 'Failover Co', 'America/New_York');
    accountId = account.id;
    const campaign = await createCampaign(server, accountId, { name: 'A', type: 'Dynamic', state: 'Active', dialer: { mode: 'Power', agents: 6, maxAttempts: 1, callingHours: ALL_DAY } });
    campaignId = campaign.id;
    token = await createKey(server, accountId, ['CampaignNumberAdmin', 'CampaignReader']);
    hs = await startHubSpotStandIn({ contacts: CONTACTS, searchPerSecond: 100, requestsPer10Seconds: 2000 });
  }, 120_000);
  afterAll(async () => {
    for (const p of procs) await p.kill().catch(() => {});
    client?.disconnect();
    await hs?.close(); await proxy?.close(); await server?.close(); await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const config = () => ({
    redis: { cluster: cluster.urls, prefix },
    http: { host: '127.0.0.1', port: 0 },
    dialer: { baseUrl: proxy.url, accountId, apiToken: '${FAILOVER_DIALER_TOKEN}', rateLimit: { perSecond: 1, burst: 1 }, maxNumbersPerRequest: 50 },
    takeoverAfter: '2s',
    log: { level: 'info' },
    syncs: [{
      id: 's0', campaignId, schedule: { every: '1h' },
      source: { type: 'hubspot', baseUrl: hs.url, accessToken: '${FAILOVER_HUBSPOT_TOKEN}', searchPerSecond: 50, requestsPer10Seconds: 1000 },
      mapping: { phone: 'phone', variables: { firstName: 'firstname' }, defaultCountry: 'US' },
      mirror: { every: '1s' },
    }],
  });
  const env = () => ({ FAILOVER_DIALER_TOKEN: token, FAILOVER_HUBSPOT_TOKEN: hs.token });
  const keys = () => new DaemonKeys(prefix).sync('s0', campaignKey(proxy.url, accountId, campaignId));
  const tagOf = (key: string) => /\{[^}]+\}/.exec(key)![0];

  async function records(): Promise<{ number: string; attempt: number; startedAtLocal: string }[]> {
    const res = await server.request(`/v1/accounts/${accountId}/campaigns/${campaignId}/reports/callDetails?range=[0,9999]`, { token });
    return (await res.json()) as { number: string; attempt: number; startedAtLocal: string }[];
  }
  async function numbers(): Promise<string[]> {
    const res = await server.request(`/v1/accounts/${accountId}/campaigns/${campaignId}/numbers?range=[0,9999]`, { token });
    return ((await res.json()) as { number: string }[]).map((n) => n.number);
  }
  /** The daemons' warnings and what they said about Redis and the mirror, printed when a check fails. */
  const explain = () => {
    for (const [i, p] of procs.entries()) {
      console.log(p.output().split('\n').filter((l) => /"level":(40|50|60)/.test(l) || /Redis restarted|mirror|reconcil/.test(l)).slice(-25).join('\n'));
      // The whole log, for what the last lines leave out.
      const file = join(tmpdir(), `cds-failover-${process.pid}-${i}.log`);
      writeFileSync(file, p.output());
      console.log(`the daemon's whole log: ${file}`);
    }
  };
  async function checked(what: () => Promise<unknown>): Promise<void> {
    try {
      await what();
    } catch (err) {
      explain();
      throw err;
    }
  }
  const callKeys = () => hs.calls().map((c) => /\[cds:([^\]]+)\]/.exec(String(c.properties.hs_call_title))?.[1]);

  /**
   * Pauses the replica of the master holding `key`, clogs its link, runs `act` (which must make a daemon write an
   * intent mark there and wait until the daemon either sent what it guards or is holding it for a replica), then
   * kills the master and lets the replica, which never got those writes, take over. The old master rejoins after.
   */
  async function loseAcknowledgedWrites(key: string, act: (master: number) => Promise<void>): Promise<void> {
    const master = await cluster.masterOf(key);
    const replica = await cluster.replicaOf(master);
    cluster.pause(replica);
    try {
      await cluster.clogReplication(master, tagOf(key));
      await act(master);
      await cluster.kill(master);
    } finally {
      cluster.resume(replica);
    }
    await cluster.healthy();
    await cluster.restart(master);
  }

  it('imports: a batch whose in-flight mark the failover lost is sent to the dialer once', async () => {
    for (let i = 0; i < 2; i++) procs.push(await spawnDaemon(config(), dir, env()));
    // The first batches in, the rest of the import still to come: the next in-flight marks land on the clogged master.
    await waitFor(async () => (await numbers()).length >= 50, 'the first batch in the campaign', 60_000);
    const adds = () => proxy.exchanges.filter((e) => e.method === 'POST' && e.path.includes('/numbers'));
    await loseAcknowledgedWrites(keys().inflight, async (master) => {
      const before = adds().length;
      await waitFor(async () => adds().length > before || await blockedInWait(master), 'a push sent, or held for a replica', 60_000);
    });
    await checked(() => waitFor(async () => (await numbers()).length === CONTACTS && (await client.hlen(keys().batches)) === 0, 'the whole import', 120_000));
    // Each phone number went out once: a re-sent batch would show its numbers twice (the reference server refuses the
    // copies as duplicates; a server that allows duplicates would keep them).
    const campaignNumbers = new Set(await numbers()).size;
    if (sentPhones.length !== new Set(sentPhones).size) {
      explain();
      const twice = new Set(sentPhones.filter((p, i) => sentPhones.indexOf(p) !== i));
      for (const x of sends) if (x.phones.some((p) => twice.has(p))) console.log('sent twice, in:', new Date(x.at).toISOString(), x.phones.length, 'numbers from', x.phones[0], 'to', x.phones.at(-1));
    }
    expect(campaignNumbers).toBe(CONTACTS);
    expect(sentPhones.length - new Set(sentPhones).size).toBe(0);
    expect(new Set(sentPhones).size).toBe(CONTACTS);
  }, 300_000);

  it('mirrors: a batch whose pending marks the failover lost is written to the CRM once by the processes that take over', async () => {
    await server.advance(1800);
    const first = await records();
    expect(first.length).toBeGreaterThan(20);
    // Mirrored before the fault, so the watermark and the done marks are on the replica too. Long enough for a worker
    // wedged by the import test's failover to be replaced by the watchdog (30 s) first, as in cluster.test.ts.
    await checked(() => waitFor(() => hs.calls().length >= first.length, 'the first calls mirrored', 150_000));
    await loseAcknowledgedWrites(keys().mirror.pending, async (master) => {
      await server.advance(1800);
      const before = hs.calls().length;
      await waitFor(async () => hs.calls().length > before || await blockedInWait(master), 'a mirror batch written, or held for a replica', 60_000);
      // The processes die with the master: the run that wrote (or held) the batch cannot carry its own marks over
      // to the new master; the next process reads from what the promoted replica holds.
      for (const p of procs.splice(0)) await p.kill();
    });
    for (let i = 0; i < 2; i++) procs.push(await spawnDaemon(config(), dir, env()));
    const all = await records();
    await waitFor(async () => hs.calls().length >= all.length && (await client.hlen(keys().mirror.pending)) === 0, `${all.length} calls in HubSpot`, 120_000);
    // A batch written again comes before the newer records (the mirror reads in end order from its watermark).
    const got = callKeys();
    if (got.length !== new Set(got).size) explain();
    expect(got.length - new Set(got).size).toBe(0);
    expect(new Set(got)).toEqual(new Set(all.map((r) => callKey(campaignId, r))));
  }, 300_000);
});
