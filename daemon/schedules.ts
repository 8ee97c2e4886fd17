// The sync queue's job schedulers: the ones the configuration wants, and the check that sets in BullMQ what it lacks.
import { setTimeout as delay } from 'node:timers/promises';
import type { JobSchedulerJson, Queue, RepeatOptions } from 'bullmq';
import type { Logger } from 'pino';
import type { SyncConfig } from './config.ts';
import type { Metrics } from './metrics.ts';
import type { RedisClient } from './state/connection.ts';
import type { DaemonKeys } from './state/keys.ts';
import { Lease } from './state/lease.ts';

export interface SyncJobData { syncId: string; trigger?: string; kind?: 'pull' | 'mirror' | 'compare' | 'window' | 'lists' }

/** One job scheduler as the configuration wants it. */
export interface WantedScheduler {
  /** BullMQ's scheduler id: `tick-`, `compare-`, `mirror-` or `window-` and the sync id. */
  key: string;
  syncId: string;
  /** Its field in the daemon's `schedulers` hash (the sync id for its pulls, for the layout's sake). */
  field: string;
  /** What the `schedulers` hash records of it: a process started with another configuration writes another. */
  spec: string;
  repeat: Omit<RepeatOptions, 'key'>;
  data: SyncJobData;
}

/** How long the check's lock lasts if its holder dies (a check takes a few commands per scheduler). */
const LOCK_MS = 10_000;

/** What the `schedulers` hash holds for a scheduler a process removed: older processes must not set it again. */
const REMOVED = 'removed';

/**
 * The schedulers a sync needs: its pulls, its comparison (a source that compares), its mirror, its calling window's
 * check, and the loads of its Do Not Call lists' folders (`listsEvery`).
 */
export function wantedSchedulers(sync: SyncConfig, compareEvery: number | undefined, windowEvery?: number, listsEvery?: number): WantedScheduler[] {
  const s = sync.schedule;
  const wanted: WantedScheduler[] = [{
    key: `tick-${sync.id}`, syncId: sync.id, field: sync.id, spec: JSON.stringify(s),
    repeat: 'every' in s ? { every: s.every } : { pattern: s.cron, tz: s.tz ?? 'UTC' },
    data: { syncId: sync.id, trigger: 'schedule', kind: 'pull' },
  }];
  if (compareEvery) {
    wanted.push({
      key: `compare-${sync.id}`, syncId: sync.id, field: `compare-${sync.id}`, spec: JSON.stringify({ every: compareEvery }),
      repeat: { every: compareEvery }, data: { syncId: sync.id, trigger: 'compare', kind: 'compare' },
    });
  }
  if (sync.mirror) {
    wanted.push({
      key: `mirror-${sync.id}`, syncId: sync.id, field: `mirror-${sync.id}`, spec: JSON.stringify({ every: sync.mirror.every }),
      repeat: { every: sync.mirror.every }, data: { syncId: sync.id, trigger: 'schedule', kind: 'mirror' },
    });
  }
  if (windowEvery) {
    wanted.push({
      key: `window-${sync.id}`, syncId: sync.id, field: `window-${sync.id}`, spec: JSON.stringify({ every: windowEvery }),
      repeat: { every: windowEvery }, data: { syncId: sync.id, trigger: 'schedule', kind: 'window' },
    });
  }
  if (listsEvery && sync.dnc?.lists.length) {
    wanted.push({
      key: `lists-${sync.id}`, syncId: sync.id, field: `lists-${sync.id}`, spec: JSON.stringify({ every: listsEvery }),
      repeat: { every: listsEvery }, data: { syncId: sync.id, trigger: 'schedule', kind: 'lists' },
    });
  }
  return wanted;
}

/**
 * What to do with one scheduler. At start a process sets the schedules of its configuration (the configuration
 * started last wins); later checks only restore what went missing, and leave alone a schedule that a process with
 * another configuration set, so that an old and a new process of a rolling deploy do not take turns re-setting it
 * (each upsert of an `every` scheduler fires a run at once).
 * `nextRun`: whether the job of the scheduler's next run exists (BullMQ makes the one after it only when it runs).
 */
export function schedulerAction(wanted: WantedScheduler, stored: string | undefined, actual: JobSchedulerJson<SyncJobData> | undefined, nextRun: boolean, atStart: boolean):
  { do: 'keep' } | { do: 'leave'; why: string } | { do: 'set' } | { do: 'restore'; missing: string } {
  if (atStart && stored !== wanted.spec) return { do: 'set' };
  if (stored !== undefined && stored !== wanted.spec) return { do: 'leave', why: stored === REMOVED ? 'removed by a process started later' : `set to ${stored} by a process started later` };
  if (!actual) return { do: 'restore', missing: 'the scheduler' };
  const same = actual.name === 'tick' && JSON.stringify(actual.template?.data ?? null) === JSON.stringify(wanted.data)
    && ('every' in wanted.repeat && wanted.repeat.every !== undefined
      ? actual.every === wanted.repeat.every && !actual.pattern
      : actual.pattern === wanted.repeat.pattern && (actual.tz ?? 'UTC') === wanted.repeat.tz && !actual.every);
  if (!same) return { do: 'restore', missing: 'its schedule (BullMQ holds another)' };
  if (!nextRun) return { do: 'restore', missing: 'its next run' };
  return { do: 'keep' };
}

/**
 * Keeps BullMQ's job schedulers in line with the configuration. One process checks at a time (a lock in Redis), so
 * several processes never upsert at once (BullMQ's schedulers then duplicate or drop their next job); a check reads
 * the scheduler list once and each scheduler's next job, and writes only what is missing or different.
 */
export class Schedules {
  private readonly queue: Queue<SyncJobData>;
  private readonly redis: RedisClient;
  private readonly keys: DaemonKeys;
  private readonly log: Logger;
  private readonly metrics: Metrics;
  private readonly wanted: () => WantedScheduler[];
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private checking = false;

  constructor(queue: Queue<SyncJobData>, redis: RedisClient, keys: DaemonKeys, log: Logger, metrics: Metrics, wanted: () => WantedScheduler[]) {
    this.queue = queue;
    this.redis = redis;
    this.keys = keys;
    this.log = log;
    this.metrics = metrics;
    this.wanted = wanted;
  }

  /** Checks every `everyMs` from now on (the first check is the caller's, at start). */
  repeat(everyMs: number): void {
    this.timer = setInterval(() => { void this.checkLater('periodic'); }, everyMs);
    this.timer.unref();
  }

  /** A check whose failure (Redis away) is logged: the next periodic or reconnection check tries again. */
  async checkLater(why: string): Promise<void> {
    // While Redis is away a check waits for it (commands queue): the timer must not pile more up behind it.
    if (this.stopped || this.checking) return;
    this.checking = true;
    try {
      await this.check(false);
    } catch (err) {
      // A check cut off by the shutdown (Redis closed under it) is no failure.
      if (!this.stopped) this.log.warn({ err: (err as Error).message, why }, 'schedule check failed; the next one tries again');
    } finally {
      this.checking = false;
    }
  }

  /** No more checks (the process is shutting down). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Compares BullMQ's schedulers with the configuration and sets what differs; at start it also removes the
   * schedulers of syncs no longer configured. Returns the syncs whose pull scheduler it set (an `every` scheduler
   * just set fires at once). Another process checking meanwhile: a later check does nothing (that one restores what is
   * missing), a start waits for it.
   */
  async check(atStart: boolean): Promise<Set<string>> {
    const lock = new Lease(this.redis, this.keys.schedulersLock, LOCK_MS);
    const pulls = new Set<string>();
    // The lock outlives a check by far (a few commands per scheduler); a process killed holding it delays the
    // next check by at most this long. A start waits for it: the schedules of its configuration must be set, and the
    // other processes' checks would only restore their own.
    while (await lock.take()) {
      if (!atStart) return pulls;
      await delay(100);
    }
    try {
      const storedKey = this.keys.schedulers;
      const [stored, list] = await Promise.all([this.redis.hgetall(storedKey), this.queue.getJobSchedulers()]);
      const actual = new Map(list.map((s) => [s.key, s]));
      const wanted = this.wanted();
      for (const w of wanted) {
        const a = actual.get(w.key);
        const nextRun = a?.next ? (await this.queue.getJobState(`repeat:${w.key}:${a.next}`)) !== 'unknown' : false;
        const action = schedulerAction(w, stored[w.field], a, nextRun, atStart);
        if (action.do === 'keep') continue;
        if (action.do === 'leave') {
          this.log.debug({ sync: w.syncId, scheduler: w.key, why: action.why }, 'schedule left as another process set it');
          continue;
        }
        try {
          // A scheduler without its next job is set anew, not updated: an update would wait for the lost run's
          // successor; set anew, an `every` schedule runs at once, which is what a sync that missed its run needs.
          if (action.do === 'restore' && a) await this.queue.removeJobScheduler(w.key);
          await this.queue.upsertJobScheduler(w.key, w.repeat, { name: 'tick', data: w.data });
          await this.redis.hset(storedKey, w.field, w.spec);
        } catch (err) {
          this.log.warn({ sync: w.syncId, scheduler: w.key, err: (err as Error).message }, 'could not set a schedule; the next check tries again');
          continue;
        }
        if (w.key.startsWith('tick-')) pulls.add(w.syncId);
        if (action.do === 'set') this.log.info({ sync: w.syncId, scheduler: w.key, repeat: w.repeat }, 'schedule set');
        else {
          this.metrics.schedulesRestored.inc({ sync: w.syncId });
          this.log.info({ sync: w.syncId, scheduler: w.key, missing: action.missing, repeat: w.repeat }, 'schedule restored');
        }
      }
      if (atStart) {
        const keep = new Set(wanted.map((w) => w.key));
        for (const s of list) {
          if (keep.has(s.key)) continue;
          await this.queue.removeJobScheduler(s.key);
          // Marked, not forgotten: a process still running the older configuration must not restore it.
          await this.redis.hset(storedKey, s.key.startsWith('tick-') ? s.key.slice('tick-'.length) : s.key, REMOVED);
          this.log.info({ scheduler: s.key }, 'schedule removed (no longer configured)');
        }
      }
      this.metrics.schedulesChecked.set(Date.now() / 1000);
    } finally {
      await lock.release();
    }
    return pulls;
  }
}
