// Notifications without Prometheus (config `notify`): every `checkEvery` one process (a lease in Redis) looks at what
// fires (alerts.ts), steps each alert's record in Redis (pending, firing, repeated, resolved: notify-state.ts), and
// queues the message a step calls for to every destination (delivery.ts). Several processes thus send one message
// per event, a repeat every `repeatEvery` while it fires and one when it ends, as Alertmanager does.
import { createHash } from 'node:crypto';
import type { ConnectionOptions } from 'bullmq';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.ts';
import type { RedisClient } from '../state/connection.ts';
import type { DaemonKeys } from '../state/keys.ts';
import { Lease } from '../state/lease.ts';
import { fingerprintOf, NotifyState, type AlertRecord } from '../state/notify-state.ts';
import type { SyncRuntime } from '../sync/run.ts';
import { syncAlerts } from './alerts.ts';
import type { NotifyConfig } from './config.ts';
import { Deliveries, destinationLabel } from './delivery.ts';
import { notificationOf } from './messages.ts';

export interface NotificationsOptions {
  config: NotifyConfig;
  redis: RedisClient;
  keys: DaemonKeys;
  log: Logger;
  metrics: Metrics;
  /** The daemon's syncs. */
  runtimes: () => Iterable<SyncRuntime>;
  /** The clock of repeats and of the records' times (tests); default Date.now. */
  now?: () => number;
}

/** A message's id (the same for each destination and retry): the alert's fingerprint hashed, and its seq. */
function messageId(fingerprint: string, seq: number): string {
  return `msg_${createHash('sha256').update(fingerprint).digest('hex').slice(0, 20)}_${seq}`;
}

export class Notifications {
  private readonly o: NotificationsOptions;
  private readonly state: NotifyState;
  private readonly lease: Lease;
  private readonly deliveries: Deliveries;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private closed = false;
  /** Evaluations this process made (it held the lease): a test waits on it for one to pass. */
  evaluations = 0;
  /** Syncs whose state could not be read at the last evaluation (said once until it can be again). */
  private readonly unreadable = new Set<string>();

  private constructor(o: NotificationsOptions) {
    this.o = o;
    this.now = o.now ?? Date.now;
    this.state = new NotifyState(o.redis, o.keys);
    // Left to lapse, not released: one evaluation per period whichever process's timer comes first.
    this.lease = new Lease(o.redis, o.keys.notifyLease, Math.max(500, Math.floor(o.config.checkEvery * 0.9)));
    this.deliveries = new Deliveries({ connection: o.redis as ConnectionOptions, prefix: o.keys.queuePrefix, name: o.keys.notifyQueue,
      destinations: o.config.to, log: o.log, metrics: o.metrics });
  }

  /** Delivers the queued messages and evaluates every `checkEvery` (the first time at once). */
  static start(o: NotificationsOptions): Notifications {
    const n = new Notifications(o);
    o.log.info({ to: o.config.to.map(destinationLabel), checkEvery: o.config.checkEvery, repeatEvery: o.config.repeatEvery, runsFailing: o.config.runsFailing },
      'notifications on: refused syncs, held campaigns and failing runs are sent to their destinations');
    n.timer = setInterval(() => n.tick(), o.config.checkEvery);
    n.timer.unref();
    n.tick();
    return n;
  }

  /** One evaluation, unless the last is still running; a failure is logged (the next one tries again). */
  private tick(): void {
    if (this.running || this.closed) return;
    this.running = this.evaluate().catch((err: Error) => {
      if (!this.closed) this.o.log.warn({ err: err.message }, 'notifications: evaluating the alerts failed; the next check tries again');
    }).finally(() => { this.running = null; });
  }

  /**
   * Looks at what fires and queues the messages due, if this process holds the period's lease. Whether it evaluated.
   * A sync whose state cannot be read keeps its alerts as they are.
   */
  async evaluate(): Promise<boolean> {
    if (await this.lease.take()) return false;
    const { config, redis, log } = this.o;
    const now = this.now();
    const records = await this.state.all();
    /** The alerts whose step this round called for a message (queued at once). */
    const sent = new Set<string>();
    const step = async (fp: string, r: AlertRecord | null) => { if (r) { sent.add(fp); await this.queue(fp, r); } };
    for (const rt of this.o.runtimes()) {
      const sync = rt.config.id;
      let found;
      try {
        found = await syncAlerts(rt, { redis, runsFailing: config.runsFailing, docsUrl: config.docsUrl });
        this.unreadable.delete(sync);
      } catch (err) {
        if (!this.unreadable.has(sync)) log.warn({ sync, err: (err as Error).message }, `notifications: could not read the state of sync "${sync}"; its alerts stay as they are`);
        this.unreadable.add(sync);
        continue;
      }
      const firing = new Set(found.map(fingerprintOf));
      for (const alert of found) await step(fingerprintOf(alert), await this.state.firing(alert, now, config.repeatEvery));
      for (const [fp, r] of records) if (r.sync === sync && !firing.has(fp)) await step(fp, await this.state.clear(fp, now));
    }
    // A message a process decided on and did not queue (it died, or Redis failed it): queued now, under the same id.
    for (const [fp, r] of records) if (r.send && !sent.has(fp)) await this.queue(fp, r, true);
    this.evaluations++;
    return true;
  }

  /** Queues the message the record holds, then forgets it in the record. */
  private async queue(fp: string, r: AlertRecord, left = false): Promise<void> {
    const n = notificationOf(r, messageId(fp, r.send!.seq));
    await this.deliveries.send(n);
    await this.state.queued(fp, r.send!.seq);
    if (!left) this.o.log.info({ event: n.body.event, status: n.body.status, repeat: n.repeat, sync: r.sync, ...(r.campaign ? { campaign: r.campaign } : {}), id: n.id },
      `notification queued: ${n.body.event} ${n.body.status}${n.repeat ? ' (repeat)' : ''} for sync "${r.sync}"${r.campaign ? `, campaign ${r.campaign}` : ''}`);
  }

  /** Stops evaluating, waits for an evaluation under way, and stops delivering (queued messages wait for a process). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
    await this.deliveries.close();
  }
}
