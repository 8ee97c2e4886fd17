// Each sync's recent history for the operations page's charts: counts per minute (kept 2 h) and per 10 minutes
// (kept a day) in Redis, added up in memory by the workers as they work and written in one pipeline every few seconds.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { RedisClient } from '../state/connection.ts';
import type { Logger } from 'pino';
import type { DialerConfig, SyncConfig } from '../config.ts';
import type { DaemonKeys } from '../state/keys.ts';

/**
 * Added up within a point: numbers added, deleted and rejected by the dialer, activities written, mirror lag (sum
 * of the runs' lags and how many runs, for a mean), and requests (`req:<budget>`, one per request that reached
 * the service, 429s included: they count against the budget too).
 */
export type Counter = 'added' | 'deleted' | 'rejected' | 'activities' | 'lagMs' | 'lagRuns' | `req:${Budget}`;
/** Levels: a point holds the last value set within it. */
export type Gauge = 'parked' | 'mirrorParked';
/** The request budgets the daemon spends: the dialer API key's, and the CRM gates' (crm/http.ts). */
export type Budget = 'dialer' | 'hubspot' | 'hubspot-search' | 'pipedrive';

export interface Resolution {
  /** One point. */
  stepMs: number;
  /** One Redis hash holds the points of one block: few enough fields to stay a compact listpack. */
  blockMs: number;
  /** A block's hash expires this long after the block ends. */
  keepMs: number;
  /** How many points the page shows. */
  points: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
export const RESOLUTIONS = {
  hour: { stepMs: MINUTE, blockMs: 10 * MINUTE, keepMs: 2 * HOUR, points: 60 },
  day: { stepMs: 10 * MINUTE, blockMs: HOUR, keepMs: 24 * HOUR, points: 144 },
} as const satisfies Record<string, Resolution>;
export type View = keyof typeof RESOLUTIONS;

/** How many seconds' worth each budget allows, per second (null when this sync does not use it). */
export function budgetLimits(sync: SyncConfig, dialer: DialerConfig): Partial<Record<Budget, number>> {
  const limits: Partial<Record<Budget, number>> = { dialer: dialer.rateLimit.perSecond };
  const s = sync.source;
  if (s.type === 'hubspot') { limits.hubspot = s.requestsPer10Seconds / 10; limits['hubspot-search'] = s.searchPerSecond; }
  if (s.type === 'pipedrive') limits.pipedrive = s.burstPer2Seconds / 2;
  return limits;
}

/** The budget a CRM gate's key spends (`<prefix>:gate:<budget>:<account hash>`, DaemonKeys.gate). */
export function budgetOfGate(gateKey: string): Budget | null {
  const name = /:gate:([a-z-]+):[^:]+$/.exec(gateKey)?.[1];
  return name === 'hubspot' || name === 'hubspot-search' || name === 'pipedrive' ? name : null;
}

interface Pending { counters: Map<string, number>; gauges: Map<string, number> }

/** One sync's handle: what its workers call. */
export class SyncHistory {
  readonly syncId: string;
  private readonly history: History;
  constructor(history: History, syncId: string) {
    this.history = history; this.syncId = syncId;
  }

  /** Adds to this minute's counters and sets its levels (in memory; written within `FLUSH_MS`). */
  record(counters: Partial<Record<Counter, number>>, gauges: Partial<Record<Gauge, number>> = {}): void {
    this.history.add(this.syncId, counters, gauges);
  }

  /** Runs `fn` with requests made inside it counted as this sync's (see `countRequest`). */
  run<T>(fn: () => T): T {
    return current.run(this, fn);
  }
}

const current = new AsyncLocalStorage<SyncHistory>();

/** Counts one request against `budget` for the sync whose job is running (none outside a job: not counted). */
export function countRequest(budget: Budget | null): void {
  if (budget) current.getStore()?.record({ [`req:${budget}`]: 1 });
}

/** Runs `fn` as a job of the sync `h` belongs to, or as it is without one. */
export function inSync<T>(h: SyncHistory | undefined, fn: () => T): T {
  return h ? h.run(fn) : fn();
}

export const FLUSH_MS = 5000;

/** One series: per point, its value, or null where nothing was recorded. */
export interface HistoryView { stepMs: number; points: number; start: number; series: Record<string, (number | null)[]> }

/** The histories of one daemon's syncs. */
export class History {
  private readonly redis: RedisClient;
  private readonly keys: DaemonKeys;
  private readonly log: Logger;
  private readonly syncs = new Map<string, SyncHistory>();
  /** Per sync, per minute (its index since the epoch): what is not written yet. */
  private pending = new Map<string, Map<number, Pending>>();
  private readonly timer: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();

  constructor(redis: RedisClient, keys: DaemonKeys, log: Logger) {
    this.redis = redis; this.keys = keys; this.log = log;
    this.timer = setInterval(() => { void this.flush(); }, FLUSH_MS);
    this.timer.unref();
  }

  of(syncId: string): SyncHistory {
    let h = this.syncs.get(syncId);
    if (!h) this.syncs.set(syncId, h = new SyncHistory(this, syncId));
    return h;
  }

  add(syncId: string, counters: Partial<Record<Counter, number>>, gauges: Partial<Record<Gauge, number>>, now = Date.now()): void {
    let minutes = this.pending.get(syncId);
    if (!minutes) this.pending.set(syncId, minutes = new Map());
    const minute = Math.floor(now / MINUTE);
    let p = minutes.get(minute);
    if (!p) minutes.set(minute, p = { counters: new Map(), gauges: new Map() });
    for (const [k, v] of Object.entries(counters)) if (v) p.counters.set(k, (p.counters.get(k) ?? 0) + v);
    for (const [k, v] of Object.entries(gauges)) if (v !== undefined) p.gauges.set(k, v);
  }

  /** Writes what was added up since the last flush: one pipeline of HINCRBY/HSET and PEXPIREAT for every resolution. */
  flush(): Promise<void> {
    const next = this.writing.then(() => this.write());
    this.writing = next.catch(() => {});
    return next;
  }

  private async write(): Promise<void> {
    if (!this.pending.size) return;
    const pending = this.pending;
    this.pending = new Map();
    // One pipeline per sync: its keys share a slot, so a Redis Cluster takes it whole.
    for (const [syncId, minutes] of pending) {
    const m = this.redis.pipeline();
      // Minutes in time order, so a level's last value within a 10-minute point is its latest.
      for (const minute of [...minutes.keys()].sort((a, b) => a - b)) {
        const p = minutes.get(minute)!;
        const at = minute * MINUTE;
        for (const [view, r] of Object.entries(RESOLUTIONS) as [View, Resolution][]) {
          const block = Math.floor(at / r.blockMs);
          const key = this.keys.history(syncId, view, block);
          const point = Math.floor(at / r.stepMs);
          for (const [k, v] of p.counters) m.hincrby(key, `${point}:${k}`, v);
          for (const [k, v] of p.gauges) m.hset(key, `${point}:${k}`, v);
          m.pexpireat(key, (block + 1) * r.blockMs + r.keepMs);
        }
      }
    try {
      const results = await m.exec();
      const failed = results?.find(([err]) => err);
      if (failed) throw failed[0];
    } catch (err) {
      // Charts only: a point lost to a Redis hiccup is not worth holding memory or retrying for.
      this.log.warn({ err: (err as Error).message }, 'could not write the operations page\'s history');
    }
    }
  }

  /** The last `points` points of one resolution, ending with the one `now` falls in. */
  async read(syncId: string, view: View, now = Date.now()): Promise<HistoryView> {
    await this.flush();
    const r: Resolution = RESOLUTIONS[view];
    const last = Math.floor(now / r.stepMs);
    const first = last - r.points + 1;
    const blocks: number[] = [];
    for (let b = Math.floor((first * r.stepMs) / r.blockMs); b <= Math.floor((last * r.stepMs) / r.blockMs); b++) blocks.push(b);
    const m = this.redis.pipeline();
    for (const b of blocks) m.hgetall(this.keys.history(syncId, view, b));
    const hashes = ((await m.exec()) ?? []).map(([err, v]) => (err ? {} : v as Record<string, string>));
    const series: Record<string, (number | null)[]> = {};
    for (const h of hashes) {
      for (const [field, value] of Object.entries(h)) {
        const colon = field.indexOf(':');
        const i = Number(field.slice(0, colon)) - first;
        if (colon < 0 || !(i >= 0 && i < r.points)) continue;
        const name = field.slice(colon + 1);
        (series[name] ??= new Array<number | null>(r.points).fill(null))[i] = Number(value);
      }
    }
    return { stepMs: r.stepMs, points: r.points, start: first * r.stepMs, series };
  }

  /** Writes what is left, waiting at most `timeoutMs`: with Redis away its commands would wait forever, and so would shutdown. */
  async close(timeoutMs = 1000): Promise<void> {
    clearInterval(this.timer);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.flush(), new Promise((r) => { timer = setTimeout(r, timeoutMs); })]);
    clearTimeout(timer);
  }
}
