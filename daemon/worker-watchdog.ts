// Keeps a BullMQ worker taking jobs: after a Redis failover its blocking connection can stay wedged (BullMQ issues
// #648, #3088, #4138), the worker alive but idle while jobs wait. When jobs have waited longer than `stallMs` and the
// worker has none in hand (and the queue is not paused by a rate limit), the worker is replaced by a fresh one with
// fresh connections. A healthy worker is never replaced: one busy with jobs, or idle with nothing waiting, is left be.
import type { Job, Queue, Worker } from 'bullmq';
import type { Logger } from 'pino';

export class WorkerWatchdog<T> {
  private worker: Worker<T>;
  private readonly make: () => Worker<T>;
  private readonly queue: Queue<T>;
  private readonly log: Logger;
  private readonly stallMs: number;
  private inHand = 0;
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
    this.inHand = 0;
    w.on('active', () => { this.inHand++; this.lastTaken = Date.now(); });
    const done = (_job: Job<T> | undefined) => { this.inHand = Math.max(0, this.inHand - 1); };
    w.on('completed', done);
    w.on('failed', done);
    return w;
  }

  private async check(): Promise<void> {
    if (this.checking || this.worker.closing) return;
    this.checking = true;
    try {
      const waiting = await this.queue.getWaitingCount();
      const limited = await this.queue.getRateLimitTtl();
      if (!waiting || limited > 0 || this.inHand > 0 || (await this.queue.isPaused())) { this.waitingSince = null; return; }
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

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.worker.close();
  }
}
