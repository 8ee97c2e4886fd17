// A schedule never goes missing: a job scheduler deleted, or its next run lost, under running daemon processes is set
// again within the check interval, by one of them only, and a scheduled run follows (on one Redis and on a Redis
// Cluster); a reconnection to Redis checks at once; a process with an older configuration leaves alone the schedule a
// newer one set.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { Daemon } from '../../daemon/app.ts';
import { DaemonKeys, campaignKey } from '../../daemon/state/keys.ts';
import { startRedisCluster, type RedisClusterUnderTest } from '../support/redis-cluster.ts';
import { daemonConfig, dialerFixture, freePort, quietLog, REDIS_URL, spawnDaemon, startRedisServer, testPrefix, waitFor, type DaemonProcess, type DialerFixture } from '../support/daemon.ts';

const dir = mkdtempSync(join(tmpdir(), 'cds-schedules-'));
const csv = join(dir, 'leads.csv');
writeFileSync(csv, `id,phone,first\nc1,${validPhone(1)},Ann\nc2,${validPhone(2)},Ben\n`);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function rawConfig(f: DialerFixture, prefix: string, redisUrl: string, scheduleCheckEvery: string, schedule = { every: '1h' }): Record<string, unknown> {
  return {
    redis: { url: redisUrl, prefix },
    http: { host: '127.0.0.1', port: 0 },
    dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: '${SCHEDULES_DIALER_TOKEN}' },
    scheduleCheckEvery,
    log: { level: 'info' },
    syncs: [{ id: 'leads', campaignId: f.campaignId, source: { type: 'csv', path: csv }, mapping: { id: 'id', phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'first' } }, schedule }],
  };
}

/** How many runs the sync's schedule started that have finished. */
async function scheduledRuns(redis: Redis | Cluster, f: DialerFixture, prefix: string): Promise<number> {
  const keys = new DaemonKeys(prefix).sync('leads', campaignKey(f.server.url, f.accountId, f.campaignId));
  const ids = await redis.lrange(keys.runs, 0, -1);
  const runs = await Promise.all(ids.map((id) => redis.hmget(keys.run(id), 'trigger', 'status')));
  return runs.filter(([trigger, status]) => trigger === 'schedule' && status === 'done').length;
}

/** One metric's value (summed over its labels) on a daemon's /metrics. */
async function metric(p: DaemonProcess, name: string): Promise<number> {
  const text = await (await fetch(`${await p.address}/metrics`)).text();
  return [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((a, m) => a + Number(m[1]), 0);
}

/** The daemon's log lines saying it restored a schedule. */
function restoredLines(p: DaemonProcess): Record<string, unknown>[] {
  return p.output().split('\n').filter((l) => l.includes('"schedule restored"')).map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The processes' `schedule restored` lines logged after this call, when the returned function is called. */
function restoredFromNow(ps: DaemonProcess[]): () => Record<string, unknown>[] {
  const before = ps.map((p) => restoredLines(p).length);
  return () => ps.flatMap((p, i) => restoredLines(p).slice(before[i]));
}

describe('a job scheduler lost under two running daemon processes', () => {
  let f: DialerFixture;
  const { prefix, cleanup } = testPrefix();
  const redis = new Redis(REDIS_URL);
  let queue: Queue;
  const procs: DaemonProcess[] = [];
  const env = () => ({ SCHEDULES_DIALER_TOKEN: f.token });
  /** Waits until every process has compared the schedulers with its configuration since `since`. */
  const checkedSince = (since: number, ps = procs) =>
    waitFor(async () => (await Promise.all(ps.map((p) => metric(p, 'cds_schedules_checked_timestamp_seconds')))).every((t) => t * 1000 > since), 'every process to check its schedules', 10_000);

  beforeAll(async () => {
    f = await dialerFixture();
    queue = new Queue(new DaemonKeys(prefix).syncQueue, { connection: redis, prefix });
    procs.push(await spawnDaemon(rawConfig(f, prefix, REDIS_URL, '1s'), dir, env()));
    await procs[0]!.address;
    // The schedule set at start fires at once (an `every` scheduler); the second process finds it set.
    await waitFor(async () => (await scheduledRuns(redis, f, prefix)) >= 1, 'the first scheduled run');
    procs.push(await spawnDaemon(rawConfig(f, prefix, REDIS_URL, '1s'), dir, env()));
    await procs[1]!.address;
  }, 60_000);

  afterAll(async () => {
    for (const p of procs) await p.kill();
    await queue?.close();
    await cleanup();
    redis.disconnect();
    await f?.server.close();
  });

  it('is set again within the check interval, by one process, and a scheduled run follows', async () => {
    const before = await scheduledRuns(redis, f, prefix);
    const deletedAt = Date.now();
    expect(await queue.removeJobScheduler('tick-leads')).toBe(true);
    expect(await queue.getJobScheduler('tick-leads')).toBeUndefined();
    const back = await waitFor(() => queue.getJobScheduler('tick-leads'), 'the scheduler to be back', 10_000);
    // The bound: one check interval (1 s here), plus the time a check and its upsert take.
    expect(Date.now() - deletedAt).toBeLessThan(3000);
    expect(back).toMatchObject({ every: 3_600_000, template: { data: { syncId: 'leads', trigger: 'schedule', kind: 'pull' } } });
    await waitFor(async () => (await scheduledRuns(redis, f, prefix)) > before, 'a scheduled run after the restore');

    // Both processes checked after the restore; one of them restored it, once, and said so.
    await checkedSince(Date.now());
    const lines = procs.flatMap(restoredLines);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, sync: 'leads', scheduler: 'tick-leads', missing: 'the scheduler' });
    expect((await Promise.all(procs.map((p) => metric(p, 'cds_schedules_restored_total')))).reduce((a, b) => a + b)).toBe(1);
    // One next run, not one per process.
    expect((await queue.getDelayed()).filter((j) => j.id!.startsWith('repeat:tick-leads:'))).toHaveLength(1);
  }, 30_000);

  it('whose next run was lost (its delayed job gone, as with the last second of an AOF) gets one again', async () => {
    const before = await scheduledRuns(redis, f, prefix);
    const restored = restoredFromNow(procs);
    const { next } = (await queue.getJobScheduler('tick-leads'))!;
    const jobId = `repeat:tick-leads:${next}`;
    expect(await queue.getJobState(jobId)).toBe('delayed');
    // The scheduler's own keys stay: only its next job goes, which BullMQ alone would never make again.
    await redis.multi().del(queue.toKey(jobId)).zrem(queue.toKey('delayed'), jobId).exec();
    expect(await queue.getJobState(jobId)).toBe('unknown');

    await waitFor(async () => (await scheduledRuns(redis, f, prefix)) > before, 'a scheduled run after the restore', 10_000);
    // The restoring process logs after setting the scheduler, whose first run (on any process) may end before that.
    await waitFor(() => restored().length > 0, 'the restore logged', 10_000);
    const lines = restored();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ sync: 'leads', scheduler: 'tick-leads', missing: 'its next run' });
    await waitFor(async () => (await queue.getDelayed()).filter((j) => j.id!.startsWith('repeat:tick-leads:')).length === 1, 'one next run');
  }, 30_000);

  it('set by a process started later with another schedule is left alone by the older processes', async () => {
    const restored = restoredFromNow(procs);
    const newer = await spawnDaemon(rawConfig(f, prefix, REDIS_URL, '1s', { every: '2h' }), dir, env());
    try {
      await newer.address;
      expect(await queue.getJobScheduler('tick-leads')).toMatchObject({ every: 7_200_000 });
      // Several checks of each older process later, the newer schedule still holds and nothing was restored.
      await checkedSince(Date.now() + 1500);
      expect(await queue.getJobScheduler('tick-leads')).toMatchObject({ every: 7_200_000 });
      expect(restored()).toHaveLength(0);
    } finally {
      await newer.kill();
    }
  }, 30_000);
});

describe('schedulers as the configuration wants them', () => {
  it('are left alone check after check: a cron schedule with its zone, and a mirror\'s', async () => {
    const f = await dialerFixture();
    const { prefix, cleanup } = testPrefix();
    const sync = {
      id: 'leads', campaignId: f.campaignId, source: { type: 'csv', path: csv }, mapping: { id: 'id', phone: 'phone', defaultCountry: 'US' },
      schedule: { cron: '0 0 3 * * *', tz: 'Europe/Berlin' }, mirror: { every: '1d', sink: { type: 'file', path: join(dir, 'activities.jsonl') } },
    };
    const d = await Daemon.start(daemonConfig(f, prefix, [sync], { scheduleCheckEvery: '1s' }), { log: quietLog, http: false });
    try {
      const queue = d.syncQueue;
      expect((await queue.getJobSchedulers()).map((s) => s.key).sort()).toEqual(['mirror-leads', 'tick-leads']);
      const since = Date.now();
      await waitFor(async () => ((await d.metrics.schedulesChecked.get()).values[0]?.value ?? 0) * 1000 > since + 1000, 'two checks', 10_000);
      expect((await d.metrics.schedulesRestored.get()).values).toEqual([]);
      expect(await queue.getJobScheduler('tick-leads')).toMatchObject({ pattern: '0 0 3 * * *', tz: 'Europe/Berlin' });
    } finally {
      await d.close();
      await cleanup();
      await f.server.close();
    }
  }, 30_000);
});

describe('a job scheduler lost while the daemon\'s Redis connections drop', () => {
  let f: DialerFixture;
  let redisServer: ChildProcess | null = null;
  let redis: Redis;
  let queue: Queue;
  let d: DaemonProcess | null = null;
  const redisDir = mkdtempSync(join(tmpdir(), 'cds-schedules-redis-'));
  const prefix = 'sched';

  beforeAll(async () => {
    const port = await freePort();
    // A Redis of this test's own: CLIENT KILL must not cut other tests' connections.
    redisServer = await startRedisServer(port, redisDir, 'none');
    redis = new Redis(port, '127.0.0.1');
    queue = new Queue(new DaemonKeys(prefix).syncQueue, { connection: redis, prefix });
    f = await dialerFixture();
    // A periodic check far away: only the reconnection can explain a prompt restore.
    d = await spawnDaemon(rawConfig(f, prefix, `redis://127.0.0.1:${port}`, '10m'), dir, { SCHEDULES_DIALER_TOKEN: f.token });
    await d.address;
    await waitFor(async () => (await scheduledRuns(redis, f, prefix)) >= 1, 'the first scheduled run');
  }, 60_000);

  afterAll(async () => {
    await d?.kill();
    await queue?.close();
    redis?.disconnect();
    redisServer?.kill('SIGKILL');
    rmSync(redisDir, { recursive: true, force: true });
    await f?.server.close();
  });

  it('is set again as soon as the connection is back, and a scheduled run follows', async () => {
    const before = await scheduledRuns(redis, f, prefix);
    expect(await queue.removeJobScheduler('tick-leads')).toBe(true);
    const killed = await redis.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes') as number;
    expect(killed).toBeGreaterThan(0);
    await waitFor(() => queue.getJobScheduler('tick-leads'), 'the scheduler to be back after the reconnection', 10_000);
    await waitFor(async () => (await scheduledRuns(redis, f, prefix)) > before, 'a scheduled run after the restore', 10_000);
    expect(restoredLines(d!)).toEqual([expect.objectContaining({ sync: 'leads', scheduler: 'tick-leads', missing: 'the scheduler' })]);
  }, 30_000);
});

describe('a job scheduler lost on a Redis Cluster', () => {
  let cluster: RedisClusterUnderTest;
  let client: Cluster;
  let queue: Queue;
  let f: DialerFixture;
  let d: DaemonProcess | null = null;
  const { prefix } = testPrefix();

  beforeAll(async () => {
    cluster = await startRedisCluster();
    client = new Cluster(cluster.urls.map((u) => ({ host: '127.0.0.1', port: Number(new URL(u).port) })), { redisOptions: { maxRetriesPerRequest: 20 } });
    queue = new Queue(new DaemonKeys(prefix).syncQueue, { connection: client, prefix });
    f = await dialerFixture();
    d = await spawnDaemon({ ...rawConfig(f, prefix, '', '1s'), redis: { cluster: cluster.urls, prefix } }, dir, { SCHEDULES_DIALER_TOKEN: f.token });
    await d.address;
    await waitFor(async () => (await scheduledRuns(client, f, prefix)) >= 1, 'the first scheduled run');
  }, 120_000);

  afterAll(async () => {
    await d?.kill();
    await queue?.close();
    client?.disconnect();
    await cluster?.stop();
    await f?.server.close();
  });

  it('is set again within the check interval, and a scheduled run follows', async () => {
    const before = await scheduledRuns(client, f, prefix);
    expect(await queue.removeJobScheduler('tick-leads')).toBe(true);
    await waitFor(() => queue.getJobScheduler('tick-leads'), 'the scheduler to be back', 10_000);
    await waitFor(async () => (await scheduledRuns(client, f, prefix)) > before, 'a scheduled run after the restore', 10_000);
    expect(restoredLines(d!)).toEqual([expect.objectContaining({ sync: 'leads', scheduler: 'tick-leads', missing: 'the scheduler' })]);
  }, 30_000);
});
