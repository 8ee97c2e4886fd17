// SIGTERM ends `start` within 2 s, exit 0, saying so in the log, whatever the daemon is doing: waiting for a Redis that
// is down at start (with /health answering 503 naming it meanwhile), running on a Redis Cluster that has gone, reading
// a CRM page that does not come, or waiting for the dialer's answer to a push. Each daemon runs as a real process with
// the default shutdownTimeout (20 s): a stop that waited for it would be late.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { campaignNumbers, dialerFixture, freePort, REDIS_URL, spawnDaemon, testPrefix, waitFor, type DaemonProcess, type DialerFixture } from '../support/daemon.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { startRedisCluster } from '../support/redis-cluster.ts';

/** The log lines (JSON) a daemon wrote. */
const lines = (d: DaemonProcess) => d.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; [k: string]: unknown });

/** SIGTERM, then the exit code and how long the process took to end. */
async function stopTimed(d: DaemonProcess): Promise<{ code: number | null; ms: number }> {
  const t0 = performance.now();
  const code = await d.stop();
  const ms = performance.now() - t0;
  if (process.env.SIGTERM_TIMES) console.log(`SIGTERM to exit: ${Math.round(ms)} ms, code ${code}`);
  return { code, ms };
}

/** The address the daemon listens on from its first moment (its "starting" line). */
const earlyAddress = (d: DaemonProcess) => waitFor(() => lines(d).find((l) => l.msg.startsWith('starting: /health answers'))?.address as string | undefined, 'the daemon to listen', 30_000);

/** A stop said in the log: "stopping" at the signal, "stopped" at the end. */
function expectStopLines(d: DaemonProcess): void {
  const msgs = lines(d).map((l) => l.msg);
  expect(msgs).toContain('stopping');
  expect(msgs).toContain('stopped');
  expect(d.output()).not.toMatch(/\n\s+at /);
}

let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'cds-sigterm-')); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function csvSync(campaignId: string, phones: string[]): Record<string, unknown> {
  const path = join(dir, `contacts-${Math.random().toString(36).slice(2)}.csv`);
  writeFileSync(path, ['id,phone', ...phones.map((p, i) => `${i + 1},${p}`)].join('\n'));
  return { id: 'csv', campaignId, source: { type: 'csv', path }, mapping: { phone: 'phone' }, schedule: { every: '1h' } };
}

describe('SIGTERM while Redis is down at start', () => {
  it('answers /health 503 naming Redis from the start, warns with the URL and what it does, and stops in < 2 s with exit 0', async () => {
    const redisPort = await freePort(); // nothing listens there
    const d = await spawnDaemon({
      redis: { url: `redis://127.0.0.1:${redisPort}`, prefix: 'never' }, http: { host: '127.0.0.1', port: 0 },
      dialer: { baseUrl: 'http://127.0.0.1:9', accountId: 'a', apiToken: 'cdk_unused', timeZone: 'America/New_York' },
      syncs: [csvSync('c', ['+12122345670'])], log: { level: 'info' },
    }, dir);
    try {
      const address = await earlyAddress(d);
      const health = await fetch(`${address}/health`);
      expect(health.status).toBe(503);
      const body = await health.json() as { status: string; redis: string };
      expect(body.status).toBe('starting');
      expect(body.redis).toMatch(new RegExp(`^Redis at redis://127\\.0\\.0\\.1:${redisPort} is unreachable \\(connect ECONNREFUSED[^)]*\\); the daemon keeps trying$`));
      expect((await fetch(`${address}/ops/api/syncs`)).status).toBe(503);
      const warning = await waitFor(() => lines(d).find((l) => /is unreachable/.test(l.msg)), 'the Redis warning');
      expect(warning.msg).toMatch(new RegExp(`^Redis at redis://127\\.0\\.0\\.1:${redisPort} is unreachable \\(.+\\): the daemon keeps trying to connect, every 2 s at most, and starts once Redis answers; ` +
        '/health answers 503 meanwhile\\. Is Redis running, and is redis\\.url in the configuration right\\?$'));
      const { code, ms } = await stopTimed(d);
      expect(code).toBe(0);
      expect(ms).toBeLessThan(2000);
      expectStopLines(d);
      expect(lines(d).find((l) => l.msg.startsWith('stopping before the daemon started'))?.msg).toMatch(`Redis at redis://127.0.0.1:${redisPort} is unreachable`);
    } finally {
      await d.kill();
    }
  }, 60_000);
});

describe('SIGTERM with work under way', () => {
  let f: DialerFixture;
  const redis = testPrefix();
  beforeAll(async () => { f = await dialerFixture(); });
  afterAll(async () => { await f?.server.close(); await redis.cleanup(); });

  it('mid-pull: a CRM page that does not come is given up; the daemon stops in < 2 s with exit 0', async () => {
    const hs: HubSpotStandIn = await startHubSpotStandIn({ contacts: 20 });
    const proxy: Proxy = await startProxy(hs.url);
    let held = 0;
    const never = new Promise<void>(() => {});
    const d = await spawnDaemon({
      redis: { url: REDIS_URL, prefix: redis.prefix }, http: { host: '127.0.0.1', port: 0 },
      dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 } },
      syncs: [{ id: 'hs', campaignId: f.campaignId, source: { type: 'hubspot', baseUrl: proxy.url, accessToken: hs.token }, mapping: { phone: 'phone', defaultCountry: 'US' }, schedule: { every: '1h' } }],
      log: { level: 'info' },
    }, dir);
    try {
      await d.address;
      // From now on the CRM's search pages never come (the checks at start have passed).
      proxy.hold = (req) => (req.method === 'POST' && /\/search/.test(req.url ?? '') ? (held++, { before: never }) : undefined);
      await waitFor(() => held > 0, 'a page read held', 30_000);
      const { code, ms } = await stopTimed(d);
      expect(code).toBe(0);
      expect(ms).toBeLessThan(2000);
      expectStopLines(d);
    } finally {
      await d.kill();
      await proxy.close();
      await hs.close();
    }
  }, 90_000);

  it('mid-push: a push waiting for a slow dialer is given up and put back; stop in < 2 s, exit 0; the restart adds every number once', async () => {
    const proxy = await startProxy(f.server.url);
    let held = 0;
    let release!: () => void;
    const slow = new Promise<void>((r) => { release = r; });
    const phones = ['+12122345671', '+12122345672', '+12122345673'];
    const config = {
      redis: { url: REDIS_URL, prefix: redis.prefix }, http: { host: '127.0.0.1', port: 0 },
      dialer: { baseUrl: proxy.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 } },
      syncs: [{ ...csvSync(f.campaignId, phones), id: 'push' }], log: { level: 'info' },
    };
    // The dialer takes the numbers at once but its answer does not come (the check's empty add passes).
    proxy.hold = (req) => (req.method === 'POST' && /\/numbers/.test(req.url ?? '') && Number(req.headers['content-length'] ?? 0) > 2 ? (held++, { after: slow }) : undefined);
    const d = await spawnDaemon(config, dir);
    let again: DaemonProcess | null = null;
    try {
      await waitFor(() => held > 0, 'a push waiting for its answer', 30_000);
      const { code, ms } = await stopTimed(d);
      expect(code).toBe(0);
      expect(ms).toBeLessThan(2000);
      expectStopLines(d);
      expect(lines(d).map((l) => l.msg)).toContain('the daemon is stopping: a batch waiting for the dialer goes back to the queue (the next attempt looks up what it added)');
      proxy.hold = null;
      release();
      again = await spawnDaemon(config, dir);
      await waitFor(async () => (await campaignNumbers(f)).length >= phones.length, 'the numbers after the restart', 60_000);
      await waitFor(async () => again!.output().includes('looked up a batch whose answer was lost'), 'the batch looked up', 30_000);
      expect((await campaignNumbers(f)).map((n) => n.number).sort()).toEqual(phones);
    } finally {
      release();
      await d.kill();
      await again?.stop();
      await proxy.close();
    }
  }, 120_000);
});

describe('SIGTERM after the Redis Cluster has gone', () => {
  it('three daemons each stop in < 2 s with exit 0, saying Redis is unreachable', async () => {
    const cluster = await startRedisCluster();
    const f = await dialerFixture();
    const daemons: DaemonProcess[] = [];
    let gone = false;
    try {
      const config = {
        redis: { cluster: cluster.urls, prefix: 'sigterm' }, http: { host: '127.0.0.1', port: 0 },
        dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 } },
        syncs: [csvSync(f.campaignId, ['+12122345674'])], log: { level: 'info' },
      };
      for (let i = 0; i < 3; i++) daemons.push(await spawnDaemon(config, dir));
      const addresses = await Promise.all(daemons.map((d) => d.address));
      await waitFor(async () => (await campaignNumbers(f)).length === 1, 'the sync to run');
      await cluster.stop();
      gone = true;
      for (const address of addresses) {
        const body = await waitFor(async () => {
          const res = await fetch(`${address}/health`);
          return res.status === 503 ? await res.json() as { redis: string } : null;
        }, '/health to see the cluster gone', 30_000);
        expect(body.redis).toMatch(/^Redis at the cluster redis:\/\/127\.0\.0\.1:\d+.* (is unreachable|did not answer)/);
      }
      const stops = await Promise.all(daemons.map(stopTimed));
      for (const [i, { code, ms }] of stops.entries()) {
        expect(code, daemons[i]!.output()).toBe(0);
        expect(ms).toBeLessThan(2000);
        expectStopLines(daemons[i]!);
        expect(lines(daemons[i]!).some((l) => l.msg.startsWith('stopping without waiting for running jobs: Redis is unreachable'))).toBe(true);
      }
    } finally {
      for (const d of daemons) await d.kill();
      if (!gone) await cluster.stop();
      await f.server.close();
    }
  }, 180_000);
});
