// Keeps a BullMQ worker taking jobs: after a Redis failover its blocking connection can stay wedged (BullMQ issues
// #648, #3088, #4138), the worker alive but idle while jobs wait. When jobs have waited (or a delayed job has been
// due: a retry's backoff, a schedule's next run) longer than `stallMs` while no job of the queue is active anywhere
// (BullMQ's own active list: a wedged worker's jobs leave it once their locks lapse) and the queue is neither paused
// nor rate-limited, and this worker took no job meanwhile, it is replaced by a fresh one with fresh connections. A
// healthy worker is never replaced: busy (its jobs are active) or idle with nothing waiting or due.
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
      const waiting = (await this.queue.getWaitingCount()) + (await this.overdueDelayed());
      const active = await this.queue.getActiveCount();
      const limited = await this.queue.getRateLimitTtl();
      if (!waiting || active > 0 || limited > 0 || (await this.queue.isPaused())) { this.waitingSince = null; return; }
      this.waitingSince ??= Date.now();
      const now = Date.now();
      if (now - this.waitingSince < this.stallMs || now - this.lastTaken < this.stallMs) return;
      this.log.warn({ queue: this.queue.name, waiting, idleMs: now - this.lastTaken }, 'the worker took no job while jobs waited (a wedged Redis connection after a failover?): starting a fresh worker');
      const old = this.worker;
      this.worker = this.watch(this.make());
      this.lastTaken = now;
      this.waitingSince = null;
      // Its connections may never answer: closing it is not waited for.
      void old.close(true).catch(() => {});
    } catch {
      // Redis away: the next check sees again.
    } finally {
      this.checking = false;
    }
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
