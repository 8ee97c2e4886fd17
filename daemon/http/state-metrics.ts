// Reads the state gauges of /metrics (metrics.ts names them) from Redis at each scrape: what stops calls or work, as
// `status` and /ops show it (sync/status.ts), but only the few keys each gauge needs, since Prometheus asks every 15 s.
//
// Cost of a scrape, per sync: the refusal (1 HGET), the latest run ids (1 LRANGE) and their statuses (1 HGET each,
// 10 at a time, stopping at the first run that did not fail); per campaign (a routed sync: per route) HLEN of its
// Do Not Call marks, parked records and Do Not Call lists' kept-out numbers, the mirror's meta (1 HMGET) with a mirror,
// and with a calling window its state (1 HMGET), SCARD of its waiting numbers and ZCARD of its capped ones. Only while
// a campaign is Paused: its sync's refusal again and what the window's `wanted` reads (2 SMEMBERS of window groups,
// 1 HMGET, each list's copy record). Counting by value costs an HSCAN of the hash: the lists' kept-out numbers (when
// any) and, for a windowed sync with parked records, those waiting for the window; a hash of BIG entries or more is
// counted at most once every RECOUNT_BIG_MS. Once for all syncs: each Do Not Call list's copy record (1 GET; the
// company's list: 1 HLEN).
//
// A scrape never waits for a Redis that does not answer: while the connection is down nothing is read, and a reading
// that takes longer than STATE_READ_TIMEOUT_MS is given up; both answer cds_redis_up 0 and no other state series.
import type { RedisClient } from '../state/connection.ts';
import type { StateReader, StateReading } from '../metrics.ts';
import type { ListHealth } from '../dnc/gate.ts';
import type { RunningDaemon } from './running-daemon.ts';
import type { SyncKeys } from '../state/keys.ts';
import { refusalOf } from '../check/refusals.ts';
import { WAITING_FOR_WINDOW } from '../push/push-queue.ts';
import { decodeParked } from '../state/sync-state.ts';
import { campaignsOf, type SyncRuntime } from '../sync/run.ts';

/** How long a scrape waits for the state's reading before it answers cds_redis_up 0. */
export const STATE_READ_TIMEOUT_MS = 2000;
/** A hash this big is counted by value at most once every RECOUNT_BIG_MS (a smaller one at every scrape). */
const BIG = 10_000;
const RECOUNT_BIG_MS = 60_000;
/** Run ids read at a time while counting failed runs in a row (the runs list keeps 100). */
const RUNS_PAGE = 10;
/** A failed reading is logged at most this often. */
const WARN_EVERY_MS = 60_000;
const DAY_MS = 86_400_000;
/** The kept-out count of numbers waiting for a list that cannot vouch for them. */
export const WAITING_LIST = '(waiting)';

/** `p`, or null once `ms` have passed. */
export async function withinMs<T>(p: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<null>((r) => { timer = setTimeout(() => r(null), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}

/** Counts of a hash's values by class, kept for the big hashes between their recounts. */
class HashCounts {
  private readonly kept = new Map<string, { at: number; counts: Map<string, number> }>();

  /** `size`: the hash's HLEN, read by the caller. `classOf`: a value's class (null: not counted). */
  async count(redis: RedisClient, key: string, size: number, classOf: (value: string) => string | null): Promise<Map<string, number>> {
    if (!size) { this.kept.delete(key); return new Map(); }
    const kept = this.kept.get(key);
    if (kept && size >= BIG && Date.now() - kept.at < RECOUNT_BIG_MS) return kept.counts;
    const counts = new Map<string, number>();
    let cursor = '0';
    do {
      const [next, flat] = await redis.hscan(key, cursor, 'COUNT', 1000);
      cursor = next;
      for (let i = 1; i < flat.length; i += 2) {
        const c = classOf(flat[i]!);
        if (c !== null) counts.set(c, (counts.get(c) ?? 0) + 1);
      }
    } while (cursor !== '0');
    if (size >= BIG) this.kept.set(key, { at: Date.now(), counts }); else this.kept.delete(key);
    return counts;
  }
}

/** How many of the sync's latest runs in a row ended failed; runs still running (a retry's) are passed over. */
async function failedInARow(redis: RedisClient, keys: SyncKeys): Promise<number> {
  let failed = 0;
  for (let from = 0; from < 100; from += RUNS_PAGE) {
    const ids = await redis.lrange(keys.runs, from, from + RUNS_PAGE - 1);
    const statuses = await Promise.all(ids.map((id) => redis.hget(keys.run(id), 'status')));
    for (const s of statuses) {
      if (s === 'failed') failed++;
      else if (s !== 'running') return failed;
    }
    if (ids.length < RUNS_PAGE) return failed;
  }
  return failed;
}

type Series = Required<StateReading>;

/** The reader the daemon gives its Metrics (metrics.readStateWith): one reading of the state per scrape. */
export function stateReader(d: RunningDaemon, timeoutMs = STATE_READ_TIMEOUT_MS): StateReader {
  const counts = new HashCounts();
  /** A reading given up (Redis did not answer in time) that has not ended yet: no other starts meanwhile. */
  let hung: Promise<unknown> | null = null;
  let warnedAt = 0;
  const warn = (err: unknown, what: string) => {
    if (Date.now() - warnedAt < WARN_EVERY_MS) return;
    warnedAt = Date.now();
    d.log.warn({ err: (err as Error).message }, `/metrics: ${what}; its state series are left out of this scrape`);
  };
  const down = (): StateReading => ({ redisUp: [{ labels: {}, value: 0 }] });

  async function readSync(rt: SyncRuntime, out: Series): Promise<void> {
    const sync = rt.config.id;
    const redis = d.redis;
    const campaigns = campaignsOf(rt);
    const windowed = campaigns.some((c) => c.window);
    const [refusal, failed, each] = await Promise.all([
      refusalOf(redis, rt.state.keys.meta),
      failedInARow(redis, rt.state.keys),
      Promise.all(campaigns.map(async (c) => {
        const k = c.state.keys;
        const [doNotCall, parked, keptOutSize, mirror, hold, dirty, capped] = await Promise.all([
          redis.hlen(k.doNotCall), redis.hlen(k.parked), redis.hlen(k.dncKeptOut),
          rt.config.mirror ? redis.hmget(k.mirror.meta, 'parked', 'lagMs') : null,
          c.window ? c.window.hold() : null,
          c.window ? redis.scard(k.dirty) : 0,
          c.window ? redis.zcard(k.window.capped) : 0,
        ]);
        const [keptOut, waiting] = await Promise.all([
          counts.count(redis, k.dncKeptOut, keptOutSize, (list) => (list.startsWith('?') ? WAITING_LIST : list)),
          c.window && parked ? counts.count(redis, k.parked, parked, (raw) => (decodeParked(raw).code === WAITING_FOR_WINDOW ? WAITING_FOR_WINDOW : null)) : null,
        ]);
        return { c, doNotCall, parked, keptOut, mirror, hold, heldByWindow: (hold ? dirty : 0) + (waiting?.get(WAITING_FOR_WINDOW) ?? 0), capped };
      })),
    ]);
    if (refusal) {
      for (const check of new Set(refusal.problems.map((p) => p.check))) out.syncRefused.push({ labels: { sync, check }, value: 1 });
      out.syncRefusedSince.push({ labels: { sync }, value: Date.parse(refusal.at) / 1000 });
    }
    out.runsFailed.push({ labels: { sync }, value: failed });
    const sum = (f: (e: (typeof each)[number]) => number) => each.reduce((n, e) => n + f(e), 0);
    out.numbersHeld.push({ labels: { sync, rule: 'do_not_call' }, value: sum((e) => e.doNotCall) });
    if (windowed) {
      out.numbersHeld.push({ labels: { sync, rule: 'window' }, value: sum((e) => e.heldByWindow) });
      out.numbersHeld.push({ labels: { sync, rule: 'cap' }, value: sum((e) => e.capped) });
    }
    out.recordsParked.push({ labels: { sync, kind: 'push' }, value: sum((e) => e.parked) });
    if (rt.config.mirror) {
      out.recordsParked.push({ labels: { sync, kind: 'mirror' }, value: sum((e) => Number(e.mirror?.[0] ?? 0) || 0) });
      const lags = each.map((e) => e.mirror?.[1]).filter((v): v is string => v !== null && v !== undefined && v !== '' && Number.isFinite(Number(v)));
      if (lags.length) out.mirrorLagLast.push({ labels: { sync }, value: Math.max(...lags.map(Number)) / 1000 });
    }
    // Every list of the sync (the company's first), and those waiting for a list that cannot vouch.
    const names = campaigns[0]?.dnc?.gate.names ?? [];
    for (const list of [...names, WAITING_LIST]) out.numbersKeptOut.push({ labels: { sync, list }, value: sum((e) => e.keptOut.get(list) ?? 0) });
    for (const { c, hold } of each) {
      if (!hold) continue;
      const labels = { sync, campaign: c.config.campaignId };
      out.campaignHeld.push({ labels: { ...labels, reason: hold.reason }, value: 1 });
      if (hold.since !== null) out.campaignHeldSince.push({ labels, value: hold.since / 1000 });
      if (hold.opensAt !== null) out.campaignNextOpen.push({ labels, value: hold.opensAt / 1000 });
    }
  }

  /** Each Do Not Call list once, however many syncs it holds: its copy's age and limit, and whether it vouches. */
  async function readLists(out: Series): Promise<void> {
    const seen = new Set<string>();
    for (const rt of d.runtimes.values()) {
      const gate = campaignsOf(rt)[0]?.dnc?.gate;
      if (!gate || gate.names.every((n) => seen.has(n))) continue;
      const health: ListHealth[] = await gate.health();
      const now = gate.now();
      for (const h of health) {
        if (seen.has(h.list)) continue;
        seen.add(h.list);
        const labels = { list: h.list };
        out.dncListCanVouch.push({ labels, value: h.cannotVouch === null ? 1 : 0 });
        if (h.maxAgeDays !== null) out.dncListMaxAge.push({ labels, value: h.maxAgeDays * DAY_MS / 1000 });
        // (staleAt is the copy's date plus maxAgeDays: null without a copy.)
        if (h.staleAt !== null && h.maxAgeDays !== null) out.dncListAge.push({ labels, value: (now - (h.staleAt - h.maxAgeDays * DAY_MS)) / 1000 });
      }
    }
  }

  async function readAll(): Promise<StateReading> {
    const out: Series = {
      syncRefused: [], syncRefusedSince: [], campaignHeld: [], campaignNextOpen: [], campaignHeldSince: [], numbersHeld: [], numbersKeptOut: [],
      recordsParked: [], mirrorLagLast: [], runsFailed: [], dncListAge: [], dncListMaxAge: [], dncListCanVouch: [], redisUp: [{ labels: {}, value: 1 }],
    };
    const parts = [...d.runtimes.values()].map((rt) => readSync(rt, out).catch((err: unknown) => warn(err, `reading the state of sync "${rt.config.id}" failed`)));
    parts.push(readLists(out).catch((err: unknown) => warn(err, 'reading the Do Not Call lists failed')));
    await Promise.all(parts);
    return out;
  }

  const redisAnswers = () => d.redisProblem() === null && !hung;
  return {
    redisAnswers,
    async read() {
      if (!redisAnswers()) return down();
      const reading = readAll();
      const result = await withinMs(reading, timeoutMs);
      if (result) return result;
      hung = reading.catch(() => {}).finally(() => { hung = null; });
      warn(new Error(`no answer within ${timeoutMs} ms`), 'Redis did not answer the state\'s reading in time');
      return down();
    },
  };
}
