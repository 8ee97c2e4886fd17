// The daemon on a real Redis Cluster (three masters, three replicas, AOF every second): three daemon processes and two
// syncs, a master killed with SIGKILL (its replica takes over) and a daemon process killed during an import, and the
// mirroring master killed at three points of a batch (before its marks, during its write, just after it). Every
// campaign ends with exactly its contacts' numbers once, every call is written once in the CRM.
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { callKey } from '../../daemon/mirror/mirror.ts';
import { DaemonKeys, campaignKey } from '../../daemon/state/keys.ts';
import { spawnDaemon, testPrefix, waitFor, type DaemonProcess } from '../support/daemon.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { startRedisCluster, type RedisClusterUnderTest } from '../support/redis-cluster.ts';
import { createAccount, createCampaign, createKey, startServer, type TestServer } from '../support/server.ts';

const CONTACTS = 2500;
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };

describe('on a Redis Cluster', () => {
  let cluster: RedisClusterUnderTest;
  let server: TestServer;
  let hs: HubSpotStandIn;
  let accountId: string;
  let token: string;
  let campaigns: string[];
  let client: Cluster;
  let dialerProxy: Proxy;
  let hsProxy: Proxy;
  const procs: DaemonProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'cds-cluster-daemon-'));
  const { prefix } = testPrefix();

  beforeAll(async () => {
    cluster = await startRedisCluster();
    client = new Cluster(cluster.urls.map((u) => ({ host: '127.0.0.1', port: Number(new URL(u).port) })), { redisOptions: { maxRetriesPerRequest: 20 } });
    server = await startServer({ seed: 31, clockStart: '2026-11-02T13:00:00Z' });
    const account = await createAccount(server, 'Cluster Co', 'America/New_York');
    accountId = account.id;
    const dialer = { mode: 'Power', agents: 6, maxAttempts: 1, callingHours: ALL_DAY };
    const a = await createCampaign(server, accountId, { name: 'A', type: 'Dynamic', state: 'Active', dialer });
    const b = await createCampaign(server, accountId, { name: 'B', type: 'Dynamic', state: 'Active' });
    campaigns = [a.id, b.id];
    token = await createKey(server, accountId, ['CampaignNumberAdmin', 'CampaignReader']);
    hs = await startHubSpotStandIn({ contacts: CONTACTS, searchPerSecond: 100, requestsPer10Seconds: 2000 });
    // In front of the dialer and of HubSpot: to stop the mirror at an exact point of a batch while a master is killed.
    dialerProxy = await startProxy(server.url);
    hsProxy = await startProxy(hs.url);
  }, 120_000);
  afterAll(async () => {
    for (const p of procs) await p.kill().catch(() => {});
    client?.disconnect();
    await hsProxy?.close(); await dialerProxy?.close();
    await hs?.close(); await server?.close(); await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const config = () => ({
    redis: { cluster: cluster.urls, prefix },
    http: { host: '127.0.0.1', port: 0 },
    dialer: { baseUrl: dialerProxy.url, accountId, apiToken: '${CLUSTER_DIALER_TOKEN}', rateLimit: { perSecond: 40, burst: 40 }, maxNumbersPerRequest: 200 },
    takeoverAfter: '2s',
    log: { level: 'info' },
    syncs: campaigns.map((campaignId, i) => ({
      id: `s${i}`, campaignId, schedule: { every: '1h' },
      source: { type: 'hubspot', baseUrl: hsProxy.url, accessToken: '${CLUSTER_HUBSPOT_TOKEN}', searchPerSecond: 50, requestsPer10Seconds: 1000 },
      mapping: { phone: 'phone', variables: { firstName: 'firstname' }, defaultCountry: 'US' },
      ...(i === 0 ? { mirror: { every: '1s' } } : {}),
    })),
  });
  const env = () => ({ CLUSTER_DIALER_TOKEN: token, CLUSTER_HUBSPOT_TOKEN: hs.token });
  const keysOf = (i: number) => new DaemonKeys(prefix).sync(`s${i}`, campaignKey(dialerProxy.url, accountId, campaigns[i]!));
  const expected = () => hs.contacts().map((c) => parsePhoneNumberFromString(c.properties.phone!, 'US')!.number).sort();

  async function numbers(campaignId: string): Promise<string[]> {
    const res = await server.request(`/v1/accounts/${accountId}/campaigns/${campaignId}/numbers?range=[0,9999]`, { token });
    return ((await res.json()) as { number: string }[]).map((n) => n.number).sort();
  }

  async function exactly(i: number, want: string[]): Promise<boolean> {
    const have = await numbers(campaigns[i]!);
    return have.length === want.length && have.every((n, k) => n === want[k]) && (await client.hlen(keysOf(i).batches)) === 0;
  }

  /** What the daemons and their state say, printed when a wait fails. */
  async function explain(): Promise<void> {
    for (const i of [0, 1]) {
      const k = keysOf(i);
      console.log(`sync s${i}: campaign ${(await numbers(campaigns[i]!)).length}, held ${await client.hlen(k.have)}, dirty ${await client.scard(k.dirty)}, batches ${await client.hlen(k.batches)}, contacts ${await client.hlen(k.contacts)}, meta`, await client.hgetall(k.meta));
    }
    for (const p of procs) console.log(p.output().split('\n').filter((l) => /"level":(40|50|60)/.test(l) || /mirror/.test(l)).slice(-15).join('\n'));
  }

  it('spreads the syncs over slots, each sync\'s keys (and each queue\'s) in one', async () => {
    const slot = (k: string) => client.cluster('KEYSLOT', k) as Promise<number>;
    const [a, b] = [keysOf(0), keysOf(1)];
    expect(await slot(a.contacts)).toBe(await slot(a.have));
    expect(await slot(a.mirror.pending)).toBe(await slot(a.batches));
    expect(await slot(a.have)).not.toBe(await slot(b.have));
  });

  it('imports exactly through a master killed mid-import and a daemon process killed', async () => {
    for (let i = 0; i < 3; i++) procs.push(await spawnDaemon(config(), dir, env()));
    const want = expected();
    expect(new Set(want).size).toBe(CONTACTS);
    await waitFor(async () => (await numbers(campaigns[0]!)).length >= 600, 'part of the import');
    const master = await cluster.masterOf(keysOf(0).have);
    await cluster.kill(master);
    await procs.shift()!.kill();
    await cluster.healthy();
    // Back as the replica of the master that took its slots, so that one can fail over in turn.
    await cluster.restart(master);
    try {
      await waitFor(async () => (await exactly(0, want)) && (await exactly(1, want)), 'both campaigns to hold exactly the contacts\' numbers', 180_000);
    } catch (err) {
      await explain();
      throw err;
    }
  }, 240_000);

  /**
   * Holds the first request `proxy` sees that `match`es, at `when` (before it is forwarded, or with the upstream's
   * answer held back), and resolves once one is held; `release` lets it go on.
   */
  function holdNext(proxy: Proxy, match: (req: IncomingMessage) => boolean, when: 'before' | 'after') {
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    let holding = false;
    proxy.hold = (req) => {
      if (!match(req)) return undefined;
      proxy.hold = null;
      holding = true;
      return { [when]: gate };
    };
    return { held: () => holding, release };
  }
  const reportRead = (req: IncomingMessage) => req.method === 'GET' && /\/reports\/callDetails/.test(req.url!);
  const callsWrite = (req: IncomingMessage) => req.method === 'POST' && /\/calls\/batch\/create/.test(req.url!);

  // The mirroring master killed at three points of a batch: before its pending marks are written (the run reading the
  // report), while it is being written (marks on the master, the write held on its way to HubSpot), and just after
  // (HubSpot has written it; its answer, and so the done marks, held back). The first also kills a daemon process.
  const points = [
    { name: 'before a batch\'s marks (and a daemon process killed)', proxy: () => dialerProxy, match: reportRead, when: 'before' as const },
    { name: 'during a batch\'s write', proxy: () => hsProxy, match: callsWrite, when: 'before' as const },
    { name: 'just after a batch\'s write', proxy: () => hsProxy, match: callsWrite, when: 'after' as const },
  ];
  for (const [i, point] of points.entries()) {
    it(`mirrors every call exactly once through a master killed ${point.name}`, async () => {
      const records = async () => {
        const res = await server.request(`/v1/accounts/${accountId}/campaigns/${campaigns[0]!}/reports/callDetails?range=[0,9999]`, { token });
        return (await res.json()) as { number: string; attempt: number; startedAtLocal: string }[];
      };
      if (i === 0) {
        await server.advance(3600);
        // Long enough for a worker wedged by the first failover to be replaced by the watchdog (30 s) first.
        await waitFor(() => hs.calls().length >= 50, 'some calls mirrored', 150_000);
      }
      const before = hs.calls().length;
      const hold = holdNext(point.proxy(), point.match, point.when);
      await server.advance(1800);
      await waitFor(() => hold.held(), `the mirror stopped ${point.name}`, 60_000);
      const master = await cluster.masterOf(keysOf(0).mirror.pending);
      await cluster.kill(master);
      if (i === 0) await procs.shift()!.kill();
      hold.release();
      await cluster.healthy();
      await cluster.restart(master);
      if (i === 0) procs.push(await spawnDaemon(config(), dir, env()));
      const all = await records();
      expect(all.length).toBeGreaterThan(before);
      try {
        await waitFor(() => hs.calls().length >= all.length, `${all.length} calls in HubSpot`, 180_000);
      } catch (err) {
        const m = keysOf(0).mirror;
        console.log(`calls ${hs.calls().length} of ${all.length}; pending ${await client.hlen(m.pending)}, parked ${await client.hlen(m.parked)}`, await client.hgetall(m.meta));
        await explain();
        throw err;
      }
      const keys = hs.calls().map((c) => /\[cds:([^\]]+)\]/.exec(String(c.properties.hs_call_title))?.[1]);
      expect(keys.length - new Set(keys).size).toBe(0);
      expect(new Set(keys)).toEqual(new Set(all.map((r) => callKey(campaigns[0]!, r))));
    }, 400_000);
  }
});
