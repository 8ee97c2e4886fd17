// The lease on a real Redis: one holder at a time, renewed and released only by its holder, lapsing when it is not
// renewed (a holder that died), and waited for by the next.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { Lease } from '../../daemon/state/lease.ts';
import { REDIS_URL, testPrefix } from '../support/daemon.ts';

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
});
