// The lease on a real Redis: one holder at a time, renewed and released only by its holder, lapsing when it is not
// renewed (a holder that died), and waited for by the next.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { Lease } from '../../daemon/state/lease.ts';
import { ReplicaAcks } from '../../daemon/state/replication.ts';
import { freePort, REDIS_URL, startRedisServer, testPrefix, waitFor } from '../support/daemon.ts';

const t = testPrefix();
const redis = new Redis(REDIS_URL);
afterAll(async () => { await t.cleanup(); redis.disconnect(); });

describe('a lease', () => {
  it('has one holder at a time; only the holder renews or releases it', async () => {
    const key = `${t.prefix}:lease:a`;
    const a = new Lease(redis, key, 60_000);
    const b = new Lease(redis, key, 60_000);
    expect(await a.take()).toBeNull();
    expect(await a.take()).toBeNull(); // taken again by its holder: renewed
    const other = await b.take();
    expect(other?.holder).toBe(a.token);
    expect(other!.lapsesInMs).toBeGreaterThan(50_000);
    expect(await b.renew()).toBe(false);
    await b.release(); // not b's to release
    expect(await redis.get(key)).toBe(a.token);
    expect(await a.renew()).toBe(true);
    await a.release();
    expect(await redis.get(key)).toBeNull();
    expect(await b.take()).toBeNull();
  });

  it('lapses when its holder stops renewing it, and the next one waiting takes it then', async () => {
    const key = `${t.prefix}:lease:b`;
    const dead = new Lease(redis, key, 300);
    const next = new Lease(redis, key, 60_000);
    expect(await dead.take()).toBeNull();
    expect(await next.takeWaiting(0)).toBe(false); // not waiting: refused at once
    expect(await next.takeWaiting(10_000)).toBe(true);
    expect(await redis.get(key)).toBe(next.token);
    expect(await dead.renew()).toBe(false); // back too late: it must stop acting
  });

  it('kept renewed durably, has one renewal at a time while no replica answers, not one more each tick', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cds-lease-'));
    const [masterPort, replicaPort] = [await freePort(), await freePort()];
    const master = await startRedisServer(masterPort, dir, 'none');
    const replica = await startRedisServer(replicaPort, mkdtempSync(join(dir, 'replica-')), 'none');
    const m = new Redis(masterPort, '127.0.0.1');
    const r = new Redis(replicaPort, '127.0.0.1');
    try {
      await r.replicaof('127.0.0.1', String(masterPort));
      await waitFor(async () => /connected_slaves:1/.test(await m.info('replication')), 'the replica connected');
      const acks = new ReplicaAcks(m, pino({ level: 'silent' }));
      const lease = new Lease(m, 'lease:kept', 300, acks);
      expect(await lease.take()).toBeNull();
      const waits = async () => Number(/cmdstat_wait:calls=(\d+)/.exec(await m.info('commandstats'))?.[1] ?? 0);
      // The replica stalls (still connected, never acknowledging): each durable renewal waits, a WAIT a second.
      replica.kill('SIGSTOP');
      const kept = lease.keepRenewed();
      const before = await waits();
      const until = Date.now() + 2500;
      await waitFor(() => Date.now() > until, 'two and a half seconds of ticks (every 100 ms)');
      const during = (await waits()) - before;
      kept.stop();
      // One renewal waiting: about one WAIT a second. A renewal started each tick would be 25 waiting by now.
      expect(during).toBeGreaterThanOrEqual(1);
      expect(during).toBeLessThanOrEqual(4);
      // A renewal still waiting at stop gives up before its next attempt (sent after the release, it would take the
      // lease again for a holder that is done): a durable write whose signal aborted sends nothing.
      await expect(acks.write('lease:other', (p) => p.set('lease:other', '1'), AbortSignal.abort())).rejects.toThrow();
      expect(await m.get('lease:other')).toBeNull();
    } finally {
      replica.kill('SIGCONT');
      m.disconnect(); r.disconnect();
      master.kill('SIGKILL'); replica.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
