// The worker watchdog on a real Redis and real BullMQ workers: a worker that takes no job while jobs wait is
// replaced (as one wedged by a failover would be), a busy or idle healthy worker never is.
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkerWatchdog } from '../../daemon/worker-watchdog.ts';
import { REDIS_URL, testPrefix, waitFor } from '../support/daemon.ts';

const t = testPrefix();
const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
afterAll(async () => { await t.cleanup(); redis.disconnect(); });

function collecting() {
  const lines: string[] = [];
  return { lines, log: pino({ level: 'warn' }, { write: (l: string) => { lines.push(l); } }) };
}

describe('the worker watchdog', () => {
  it('replaces a worker that takes no job while jobs wait, and the jobs then run', async () => {
    const queue = new Queue('wedged', { connection: redis, prefix: t.prefix });
    const done: string[] = [];
    let made = 0;
    const { lines, log } = collecting();
    const watchdog = new WorkerWatchdog(() => {
      made++;
      // The first worker never asks for a job: what a worker with a wedged blocking connection looks like from outside.
      return new Worker('wedged', async (job) => { done.push(job.name); }, { connection: redis, prefix: t.prefix, autorun: made > 1 });
    }, queue, log, 1500);
    try {
      await queue.add('a', {}); await queue.add('b', {});
      await waitFor(() => done.length === 2, 'both jobs done by the fresh worker', 20_000);
      expect(made).toBe(2);
      expect(lines.some((l) => /starting a fresh worker/.test(l))).toBe(true);
    } finally {
      await watchdog.close(); await queue.close();
    }
  });

  it('replaces a wedged worker when only a delayed job is due (a retry\'s backoff, a schedule\'s next run), which only a worker promotes', async () => {
    const queue = new Queue('wedged-delayed', { connection: redis, prefix: t.prefix });
    const done: string[] = [];
    let made = 0;
    const { log } = collecting();
    const watchdog = new WorkerWatchdog(() => {
      made++;
      return new Worker('wedged-delayed', async (job) => { done.push(job.name); }, { connection: redis, prefix: t.prefix, autorun: made > 1 });
    }, queue, log, 1500);
    try {
      await queue.add('retry', {}, { delay: 100 });
      expect(await queue.getWaitingCount()).toBe(0);
      await waitFor(() => done.length === 1, 'the delayed job done by the fresh worker', 20_000);
      expect(made).toBe(2);
    } finally {
      await watchdog.close(); await queue.close();
    }
  });

  it('leaves a worker alone while it has a job in hand, however long, and while nothing waits', async () => {
    const queue = new Queue('busy', { connection: redis, prefix: t.prefix });
    let made = 0;
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    const started: string[] = [];
    const { log } = collecting();
    const watchdog = new WorkerWatchdog(() => {
      made++;
      return new Worker('busy', async (job) => { started.push(job.name); if (job.name === 'long') await held; }, { connection: redis, prefix: t.prefix, concurrency: 1 });
    }, queue, log, 1000);
    try {
      await queue.add('long', {});
      await waitFor(() => started.includes('long'), 'the long job to start');
      await queue.add('next', {});
      // Three stall periods with a job waiting behind the one in hand: the worker is busy, not wedged.
      const until = Date.now() + 3500;
      await waitFor(() => Date.now() > until, 'three stall periods');
      expect(made).toBe(1);
      release();
      await waitFor(() => started.includes('next'), 'the waiting job to run on the same worker');
      expect(made).toBe(1);
    } finally {
      release();
      await watchdog.close(); await queue.close();
    }
  });

  it('replaces a worker when a job stays active without its lock, which no stalled check moves back, and the jobs then run', async () => {
    const queue = new Queue('orphaned', { connection: redis, prefix: t.prefix });
    const done: string[] = [];
    let made = 0;
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    const { lines, log } = collecting();
    const watchdog = new WorkerWatchdog(() => {
      made++;
      // The first worker's job hangs, its lock is lost and never renewed, and its stalled check does not run: what a
      // failover that wedged every connection of a process leaves (the job active, locked by no one, for ever).
      const first = made === 1;
      return new Worker('orphaned', async (job) => { if (first) await held; done.push(job.name); },
        { connection: redis, prefix: t.prefix, concurrency: 1, stalledInterval: 500, ...(first ? { skipStalledCheck: true, skipLockRenewal: true } : {}) });
    }, queue, log, 1500);
    try {
      const job = await queue.add('lost', {});
      await waitFor(async () => (await queue.getActiveCount()) === 1, 'the job taken');
      await redis.del(queue.toKey(`${job.id}:lock`));
      await queue.add('behind', {});
      await waitFor(() => done.length === 2, 'both jobs done by the fresh worker', 20_000);
      expect(done.sort()).toEqual(['behind', 'lost']);
      expect(made).toBe(2);
      expect(lines.some((l) => /without their locks/.test(l) && l.includes(String(job.id)))).toBe(true);
    } finally {
      release();
      await watchdog.close(); await queue.close();
    }
  });
});
