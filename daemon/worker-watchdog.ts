// Keeps a BullMQ worker taking jobs: after a Redis failover its blocking connection can stay wedged (BullMQ issues
// #648, #3088, #4138), the worker alive but idle while jobs wait. When jobs have waited (or a delayed job has been
// due: a retry's backoff, a schedule's next run) longer than `stallMs` while no job of the queue is active anywhere
// (BullMQ's own active list: a wedged worker's jobs leave it once their locks lapse) and the queue is neither paused
// nor rate-limited, and this worker took no job meanwhile, it is replaced by a fresh one with fresh connections. A
// healthy worker is never replaced: busy (its jobs are active) or idle with nothing waiting or due. A job left
// active without its lock (its holder lost it) is moved back by some worker's stalled check within two
// `stalledInterval`s; one left so for `stallMs` shows that no stalled check works (its connection wedged too): such a
// job counts as no active job, and the worker is replaced, so that a fresh one's stalled check moves it back.
import type { Queue, Worker } from 'bullmq';
import type { Logger } from 'pino';

/** How late a delayed job may be promoted by a healthy worker. */
const OVERDUE_MS = 1000;

export class WorkerWatchdog<T> {
  private worker: Worker<T>;
  private readonly make: () => Worker<T>;
  private readonly queue: Queue<T>;
  private readonly log: Logger;
  private readonly stallMs: number;
  private lastTaken = Date.now();
  private waitingSince: number | null = null;
  private readonly timer: NodeJS.Timeout;
  private checking = false;
  /** Active jobs seen without their lock: id → when first seen so. */
  private readonly lockless = new Map<string, number>();

  constructor(make: () => Worker<T>, queue: Queue<T>, log: Logger, stallMs = 30_000) {
    this.make = make; this.queue = queue; this.log = log; this.stallMs = stallMs;
    this.worker = this.watch(make());
    this.timer = setInterval(() => { void this.check(); }, Math.max(1000, Math.floor(stallMs / 3)));
    this.timer.unref();
  }

  get current(): Worker<T> { return this.worker; }

  private watch(w: Worker<T>): Worker<T> {
    w.on('active', () => { this.lastTaken = Date.now(); });
    return w;
  }

  private async check(): Promise<void> {
    if (this.checking || this.worker.closing) return;
    this.checking = true;
    try {
      const now = Date.now();
      const orphans = await this.orphans(now);
      if (orphans.length) {
        this.replace(now, { queue: this.queue.name, jobs: orphans, forMs: this.stallMs },
          'jobs stayed active without their locks and no stalled check moved them back (a wedged Redis connection after a failover?): starting a fresh worker');
        return;
      }
      const waiting = (await this.queue.getWaitingCount()) + (await this.overdueDelayed());
      const active = (await this.queue.getActiveCount()) - this.lockless.size;
      const limited = await this.queue.getRateLimitTtl();
      if (!waiting || active > 0 || limited > 0 || (await this.queue.isPaused())) { this.waitingSince = null; return; }
      this.waitingSince ??= now;
      if (now - this.waitingSince < this.stallMs || now - this.lastTaken < this.stallMs) return;
      this.replace(now, { queue: this.queue.name, waiting, idleMs: now - this.lastTaken }, 'the worker took no job while jobs waited (a wedged Redis connection after a failover?): starting a fresh worker');
    } catch {
      // Redis away: the next check sees again.
    } finally {
      this.checking = false;
    }
  }

  private replace(now: number, fields: Record<string, unknown>, why: string): void {
    this.log.warn(fields, why);
    const old = this.worker;
    this.worker = this.watch(this.make());
    this.lastTaken = now;
    this.waitingSince = null;
    this.lockless.clear();
    // Its connections may never answer: closing it is not waited for.
    void old.close(true).catch(() => {});
  }

  /** Active jobs without their lock for `stallMs` or more (the first 100 active jobs are looked at). */
  private async orphans(now: number): Promise<string[]> {
    const client = await this.queue.getBackend().client;
    const ids = (await this.queue.getActive(0, 99)).flatMap((j) => (j.id ? [j.id] : []));
    const locked = ids.length ? await Promise.all(ids.map((id) => client.get(this.queue.toKey(`${id}:lock`)))) : [];
    const without = new Set(ids.filter((_, i) => locked[i] === null));
    for (const id of this.lockless.keys()) if (!without.has(id)) this.lockless.delete(id);
    for (const id of without) if (!this.lockless.has(id)) this.lockless.set(id, now);
    return [...this.lockless].filter(([, since]) => now - since >= this.stallMs).map(([id]) => id);
  }

  /**
   * Delayed jobs (a retry's backoff, a schedule's next run) more than a second overdue: the worker itself moves those
   * to waiting, so a wedged one leaves them delayed for ever and the waiting count alone would never show it.
   */
  private overdueDelayed(): Promise<number> {
    return this.queue.getDelayedCount(Date.now() - OVERDUE_MS);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.worker.close();
  }
}
