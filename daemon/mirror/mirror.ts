// The mirror of one sync: reads the campaign's new call-detail records from a watermark (wall-clock end time, read
// again `late` before it and across a repeated fall-back hour), and writes each call attempt once as an activity on
// the contact the number came from. Exactly once: an attempt is marked pending before it is written and done with
// the CRM's id after; a pending attempt found after a crash is looked up in the CRM before it is written again.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { MirrorConfig } from '../config.ts';
import { SourceError } from '../errors.ts';
import type { Metrics } from '../metrics.ts';
import { DialerError, type DialerClient } from '../dialer.ts';
import { inSpan, linkTo, tracing } from '../telemetry.ts';
import { writeIsolating, type Activity, type Sink, type WriteResult } from '../sinks/sink.ts';
import type { SyncState } from '../state/sync-state.ts';
import { Lease } from '../state/lease.ts';
import type { SyncHistory } from '../history/history.ts';
import { LagMeter } from './lag.ts';
import type { CampaignWindow } from '../compliance/campaign-window.ts';
import { formatWall, readFrom, toUtc, wallMs } from '../local-time.ts';
import { localWallTime, offsetAt } from '../../api/wall-clock.ts';
import { DEFAULT_RULES, outcomeOf, type CallDetail, type Rule } from '../outcomes.ts';

export interface MirrorRuntime {
  syncId: string;
  campaignId: string;
  config: MirrorConfig;
  timeZone: string;
  sink: Sink;
  dialer: DialerClient;
  /** The sync's state: the mirror's own keys are under it, and it tells which contact holds a number. */
  state: SyncState;
  log: Logger;
  metrics: Metrics;
  history: SyncHistory;
  /** How long a run's lease outlives its last renewal (the job lock's life: a run that died is taken over after it). */
  leaseMs: number;
  /** The sync's calling window: it counts call starts for per-number caps. */
  window?: CampaignWindow;
  /** Asks for a plan of the sync (a routed sync's: every route's), after numbers were taken out at their cap. */
  plan?: () => Promise<void>;
}

export interface MirrorRunResult {
  read: number; written: number; skipped: number; parked: number;
  /** Attempts found in the CRM by a look-up (a write whose answer or mark was lost). */
  resolved: number;
  /** Writes whose answer was lost in this run (left pending, then looked up). */
  uncertain: number;
  durationMs: number;
}

/** Records a report read asks for, at least; rounded up to whole sink batches (see pageSize). */
const PAGE = 500;
/** Writes in a row whose answers were lost before a run stops (the CRM is down, not hiccuping). */
const DOUBTS_BEFORE_STOPPING = 5;

/** A key of a campaign's call: 20 characters of its digest, short enough for a title, no ':' (a BullMQ-safe id). */
const digest = (text: string): string => createHash('sha256').update(text).digest('base64url').slice(0, 20);

/**
 * The call's key, stable per call. The attempt alone does not name a call: a number taken out of the campaign and
 * added again (at its cap, marked Do Not Call and unmarked, a contact that left the selection and came back) starts
 * its attempts at 1 again, so the key holds the call's start too (the report's local time, as the dialer keeps it).
 */
export function callKey(campaignId: string, r: Pick<CallDetail, 'number' | 'attempt' | 'startedAtLocal'>): string {
  return digest(`${campaignId}\n${r.number}\n${r.attempt}\n${r.startedAtLocal}`);
}

/** The attempt's key (campaign, number, attempt), which versions before callKey wrote: their activities carry it. */
export function attemptKey(campaignId: string, number: string, attempt: number): string {
  return digest(`${campaignId}\n${number}\n${attempt}`);
}

/**
 * Which key a record is written under, read once a run. Records the mirror wrote before per-call keys keep the
 * attempt's key they were written with: those ending at or before `attemptKeysUntil` (its watermark when this version
 * first ran), so that reading them again finds their marks. (This version writes the scheme with every watermark: a
 * watermark alone was written by a version before.) A mirror with no state (a first start, or a Redis that
 * lost everything) cannot tell which key a record already in the CRM carries: records ending before `lookUpBothBefore`
 * (when its state began again) are looked up by both, the attempt's only where the CRM holds that same call.
 */
interface KeyScheme { attemptKeysUntil: string; lookUpBothBefore: string }

async function keyScheme(rt: MirrorRuntime): Promise<KeyScheme> {
  const mk = rt.state.keys.mirror;
  const [until, both, watermark] = await rt.state.redis.hmget(mk.meta, 'attemptKeysUntil', 'lookUpBothBefore', 'watermark');
  if (typeof until === 'string') return { attemptKeysUntil: until, lookUpBothBefore: both ?? '' };
  const now = Date.now();
  const scheme = watermark ? { attemptKeysUntil: watermark, lookUpBothBefore: '' } : { attemptKeysUntil: '', lookUpBothBefore: localWallTime(now, rt.timeZone) };
  // On a replica before any record is written under it: a failover that lost it would read the boundary again from
  // a later watermark, and look up records written under per-call keys by their attempt's key.
  await rt.state.acks.write(mk.meta, (p) => p.hset(mk.meta, 'attemptKeysUntil', scheme.attemptKeysUntil, 'lookUpBothBefore', scheme.lookUpBothBefore));
  rt.log.info({ sync: rt.syncId, ...scheme }, 'mirror: calls are keyed by their start from here on (records before keep the attempt\'s key they were written with)');
  return scheme;
}

function keyOf(rt: MirrorRuntime, scheme: KeyScheme, r: CallDetail): string {
  return r.endedAtLocal <= scheme.attemptKeysUntil ? attemptKey(rt.campaignId, r.number, r.attempt) : callKey(rt.campaignId, r);
}

function record(raw: Record<string, unknown>): CallDetail | null {
  if (typeof raw.number !== 'string' || typeof raw.attempt !== 'number' || typeof raw.endedAtLocal !== 'string' || typeof raw.startedAtLocal !== 'string') return null;
  return raw as unknown as CallDetail;
}

/** The contact a number came from: the one the contact sync added it for, else the first contact holding it. */
async function contactOf(rt: MirrorRuntime, numbers: string[]): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  if (!numbers.length) return out;
  const [held, owners] = await Promise.all([rt.state.held(numbers), rt.state.firstOwners(numbers)]);
  numbers.forEach((n, i) => {
    const h = held[i];
    out.set(n, h?.syncId === rt.syncId && h.contactId ? h.contactId : owners[i] ?? null);
  });
  return out;
}

function activityOf(rt: MirrorRuntime, scheme: KeyScheme, r: CallDetail, contactId: string | null, rules: Rule[]): Activity {
  const startedAt = toUtc(r.startedAtLocal, rt.timeZone);
  const answeredAt = r.answeredAtLocal ? toUtc(r.answeredAtLocal, rt.timeZone, startedAt) : null;
  const endedAt = toUtc(r.endedAtLocal, rt.timeZone, answeredAt ?? startedAt);
  const key = keyOf(rt, scheme, r);
  const legacyKey = r.endedAtLocal < scheme.lookUpBothBefore ? attemptKey(rt.campaignId, r.number, r.attempt) : key;
  return {
    key, ...(legacyKey === key ? {} : { legacyKey }), record: r, outcome: outcomeOf(r, rules), contactId,
    startedAt, answeredAt, endedAt, durationMs: answeredAt === null ? 0 : Math.max(0, endedAt - answeredAt), campaignId: rt.campaignId,
  };
}

/** The number's final status, when this attempt settled it. */
function finalStatus(r: CallDetail): string | null {
  return r.outcome === 'Success' ? 'Success' : r.outcome === 'FailureWithNoRetryLeft' ? 'Failure' : null;
}

/**
 * Records a report page holds: whole batches of the sink, so that each write request of a rate-limited CRM carries a
 * full batch (a page of 500 was 200 + 200 + 100 for Salesforce: a sixth of its requests spent half empty).
 */
function pageSize(rt: MirrorRuntime): number {
  return Math.ceil(PAGE / rt.sink.maxBatch) * rt.sink.maxBatch;
}

/** A page of the report; a 429 is waited out (a read is safe to repeat), as the contact sync's scans do. */
async function readPage(rt: MirrorRuntime, first: number, from: string | null, signal?: AbortSignal): Promise<Record<string, unknown>[]> {
  for (;;) {
    try {
      return await rt.dialer.listCallDetails(rt.campaignId, first, first + pageSize(rt) - 1, from ? { endedAtLocal_gte: from } : {});
    } catch (err) {
      if (!(err instanceof DialerError) || err.kind !== 'rate-limited' || signal?.aborted) throw err;
      rt.metrics.rateLimited.inc({ service: 'dialer' });
      await new Promise((r) => setTimeout(r, Math.max(100, err.retryAfterMs)));
    }
  }
}

/**
 * Which of these activities the CRM already holds, in one look-up (the sink's cost per time span or pass, not per
 * activity). A search index shows new records after a lag: activities marked pending less than that long ago are
 * looked up only once it has passed.
 */
async function lookUp(rt: MirrorRuntime, activities: Activity[], signal?: AbortSignal): Promise<Map<string, string>> {
  const mk = rt.state.keys.mirror;
  const newest = Math.max(0, ...activities.map((a) => a.pendingAt ?? 0), Number(await rt.state.redis.hget(mk.meta, 'verifyFrom') ?? 0));
  const wait = newest + rt.sink.indexLagMs - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, Math.min(wait, rt.sink.indexLagMs)));
  const found = await rt.sink.findWritten(activities, await rt.state.redis.hget(mk.meta, 'lookupCursor'), signal);
  if (found.cursor !== null) await rt.state.redis.hset(mk.meta, 'lookupCursor', found.cursor);
  rt.log.info({ sync: rt.syncId, records: activities.length, found: found.ids.size, first: activities[0]?.key, last: activities.at(-1)?.key },
    'mirror looked up attempts in the CRM');
  return found.ids;
}

/**
 * Pending attempts (a process died while writing them, or their answer was lost): the CRM says, in one look-up for
 * all of them, which it holds; those are settled, the rest are returned to be written again.
 */
async function settlePending(rt: MirrorRuntime, counts: MirrorRunResult, signal?: AbortSignal): Promise<Activity[]> {
  const pending = Object.values(await rt.state.redis.hgetall(rt.state.keys.mirror.pending)).map((raw) => JSON.parse(raw) as Activity);
  if (!pending.length) return [];
  const found = await lookUp(rt, pending, signal);
  const rewrite: Activity[] = [];
  const held: [Activity, string][] = [];
  for (const a of pending) {
    const id = found.get(a.key);
    if (id) held.push([a, id]); else rewrite.push(a);
  }
  counts.resolved += await settled(rt, held, signal);
  return rewrite;
}

/** Activities the CRM turned out to hold: marked done (and their numbers' final statuses written, as after a write). */
async function settled(rt: MirrorRuntime, held: [Activity, string][], signal?: AbortSignal): Promise<number> {
  if (!held.length) return 0;
  const mk = rt.state.keys.mirror;
  const m = rt.state.redis.multi();
  for (const [a, id] of held) {
    m.hset(mk.done(a.record.endedAtLocal), a.key, id).expire(mk.done(a.record.endedAtLocal), rt.config.keepDays * 86_400).hdel(mk.pending, a.key).hdel(mk.parked, a.key);
  }
  await m.hincrby(mk.meta, 'mirrored', held.length).exec();
  await writeFinalStatuses(rt, held.map(([a]) => a), signal);
  return held.length;
}

/**
 * Writes the final statuses these activities give their numbers' contacts, together (a contact with several gets the
 * one that ended last). Best effort: the activity is what must not be lost or doubled; a later attempt's record
 * writes its contact's status again.
 */
async function writeFinalStatuses(rt: MirrorRuntime, activities: Activity[], signal?: AbortSignal): Promise<void> {
  if (!rt.config.statusProperty || !rt.sink.writeStatuses) return;
  const latest = new Map<string, Activity>();
  for (const a of activities) {
    if (!a.contactId || !finalStatus(a.record)) continue;
    const other = latest.get(a.contactId);
    if (!other || a.endedAt >= other.endedAt) latest.set(a.contactId, a);
  }
  if (!latest.size) return;
  const statuses = [...latest.values()].map((a) => ({ contactId: a.contactId!, status: finalStatus(a.record)! }));
  try {
    const refused = await rt.sink.writeStatuses(statuses, signal);
    if (refused.length) rt.log.warn({ sync: rt.syncId, statuses: statuses.length, refused: refused.length, err: refused[0]!.reason }, 'could not write the final status');
  } catch (err) {
    rt.log.warn({ sync: rt.syncId, statuses: statuses.length, refused: statuses.length, err: (err as Error).message }, 'could not write the final status');
  }
}

/** The run's lease passed to another run (this one stalled past it): it must write nothing more. */
class LeaseLost extends Error {}

/**
 * Writes activities and records each result as it comes; what an answer leaves unsettled stays pending. A record the
 * CRM refuses is parked alone, with its reason, and the rest of its batch is written (writeIsolating).
 */
async function writeAll(rt: MirrorRuntime, lease: Lease, activities: Activity[], counts: MirrorRunResult, signal?: AbortSignal, lag?: LagMeter): Promise<void> {
  const mk = rt.state.keys.mirror;
  let doubtsInARow = 0;
  for (let i = 0; i < activities.length; i += rt.sink.maxBatch) {
    const batch = activities.slice(i, i + rt.sink.maxBatch);
    // Still this run's to write: a run that stalled past its lease (its job taken again, after a failover lost the
    // job's lock) stops here, before writing what the run that took over may be writing too.
    if (!(await lease.renew())) throw new LeaseLost();
    const pendingAt = Date.now();
    // On a replica before the write: a failover that lost the mark would let another process write the batch again.
    await rt.state.acks.write(mk.pending, (p) => { for (const a of batch) p.hset(mk.pending, a.key, JSON.stringify({ ...a, pendingAt })); });
    const byKey = new Map(batch.map((a) => [a.key, a]));
    const writtenAll: Activity[] = [];
    const settle = async (results: WriteResult[]) => {
      const m = rt.state.redis.multi();
      for (const r of results) {
        const a = byKey.get(r.key);
        if (!a) continue;
        if (r.ok) {
          m.hset(mk.done(a.record.endedAtLocal), a.key, r.id).expire(mk.done(a.record.endedAtLocal), rt.config.keepDays * 86_400);
          m.hdel(mk.parked, a.key);
          counts.written++;
        } else {
          m.hset(mk.parked, a.key, JSON.stringify({ reason: r.reason, at: Date.now(), activity: a }));
          counts.parked++;
        }
        m.hdel(mk.pending, a.key);
      }
      m.hincrby(mk.meta, 'mirrored', results.filter((r) => r.ok).length);
      await m.exec();
      // One line a write: a duplicate in the CRM can be traced to the write (or the look-up) that made it.
      rt.log.info({ sync: rt.syncId, records: results.length, written: results.filter((r) => r.ok).length, parked: results.filter((r) => !r.ok).length,
        first: results[0]?.key, last: results.at(-1)?.key }, 'mirror wrote a batch');
      const written = results.flatMap((r) => (r.ok && byKey.has(r.key) ? [byKey.get(r.key)!] : []));
      lag?.wrote(written.map((a) => a.endedAt));
      rt.history.record({ activities: written.length });
      rt.metrics.mirrored.inc({ sync: rt.syncId }, written.length);
      writtenAll.push(...written);
    };
    try {
      await writeTraced(rt, batch, () => writeIsolating(rt.sink, batch, settle, signal));
    } catch (err) {
      if (err instanceof SourceError && err.uncertain && !signal?.aborted && ++doubtsInARow < DOUBTS_BEFORE_STOPPING) {
        // The CRM may hold what this request carried: it stays pending, to be looked up (never sent again blindly),
        // and the rest goes on.
        counts.uncertain++;
        rt.log.warn({ sync: rt.syncId, activities: batch.length, err: err.message }, 'a write\'s answer was lost: it is looked up before anything is written again');
        continue;
      }
      throw err;
    } finally {
      // The batch's statuses together, however many requests isolating a refused record took (best effort: it
      // never throws).
      await writeFinalStatuses(rt, writtenAll, signal);
    }
    doubtsInARow = 0;
    const last = batch[batch.length - 1]!;
    await rt.state.redis.hset(mk.meta, 'lastRecordAt', new Date(last.endedAt).toISOString());
  }
}

/**
 * A batch's write in a `mirror write` span linked to the spans that added its numbers (the traceparent each held
 * number keeps): one more read of the held records, only while tracing.
 */
function writeTraced(rt: MirrorRuntime, batch: Activity[], write: () => Promise<void>): Promise<void> {
  if (!tracing()) return write();
  return (async () => {
    const phones = [...new Set(batch.map((a) => a.record.number))];
    const held = await rt.state.held(phones);
    const links = [...new Set(held.map((h) => h?.traceparent).filter((p): p is string => !!p))].flatMap((p) => linkTo(p) ?? []);
    return inSpan('mirror write', () => ({ 'cds.sync': rt.syncId, 'cds.campaign': rt.campaignId, 'cds.attempt_keys': batch.map((a) => a.key), 'cds.phones': phones }),
      write, { links });
  })();
}

/**
 * One mirror run. `since` (wall-clock time) re-reads from there (a backfill): attempts already mirrored are
 * skipped; those older than `keepDays` are looked up in the CRM first.
 */
export function mirrorRun(rt: MirrorRuntime, options: { since?: string; signal?: AbortSignal } = {}): Promise<MirrorRunResult> {
  return inSpan('mirror run', () => ({ 'cds.sync': rt.syncId, 'cds.campaign': rt.campaignId }), async (span) => {
    const counts = await mirrorRunNow(rt, options);
    span?.setAttributes({ 'cds.read': counts.read, 'cds.written': counts.written, 'cds.parked': counts.parked });
    return counts;
  }, { root: true }); // a trace of its own (its writes link to the traces that added the numbers)
}

async function mirrorRunNow(rt: MirrorRuntime, options: { since?: string; signal?: AbortSignal }): Promise<MirrorRunResult> {
  const started = performance.now();
  const counts: MirrorRunResult = { read: 0, written: 0, skipped: 0, parked: 0, resolved: 0, uncertain: 0, durationMs: 0 };
  // One run of a sync's mirror at a time, across processes. Its job alone does not ensure it: a failover can lose the
  // job's lock while its run goes on, and the job then runs again elsewhere. A second run waits for the first to end
  // (or to lapse, if its process died), then reads from where that one left off.
  const lease = new Lease(rt.state.redis, rt.state.keys.mirror.lease, rt.leaseMs, rt.state.acks);
  if (!(await lease.takeWaiting(2 * rt.leaseMs, options.signal))) {
    rt.log.info({ sync: rt.syncId }, 'another process is mirroring this sync and has not finished: this run ends (that one reads the same records)');
    return counts;
  }
  try {
    await mirrorHeld(rt, lease, counts, options);
  } catch (err) {
    if (!(err instanceof LeaseLost)) throw err;
    rt.log.warn({ sync: rt.syncId, ...counts }, 'this mirror run stalled past its lease and another took over: it stopped before writing more');
  } finally {
    await lease.release().catch(() => {});
  }
  counts.durationMs = Math.round(performance.now() - started);
  return counts;
}

/** A mirror run, its lease held. */
async function mirrorHeld(rt: MirrorRuntime, lease: Lease, counts: MirrorRunResult, options: { since?: string; signal?: AbortSignal }): Promise<void> {
  const started = performance.now();
  const mk = rt.state.keys.mirror;
  const rules = rt.config.rules ?? DEFAULT_RULES;
  const lag = new LagMeter();

  // 1. Attempts whose write was under way when a process died, or whose answer was lost.
  const rewrite = await settlePending(rt, counts, options.signal);
  // Attempts the CRM refused (nothing was written) are tried again by every run, their contact looked up afresh.
  const parked = Object.values(await rt.state.redis.hgetall(mk.parked)).map((raw) => (JSON.parse(raw) as { activity: Activity }).activity);
  const parkedContacts = await contactOf(rt, [...new Set(parked.map((a) => a.record.number))]);
  for (const a of parked) {
    a.contactId = parkedContacts.get(a.record.number) ?? a.contactId;
    if (!rt.sink.needsContact || a.contactId) rewrite.push(a);
  }
  if (rewrite.length) await writeAll(rt, lease, rewrite, counts, options.signal);

  // 2. New records, from the watermark (or the backfill's start).
  const scheme = await keyScheme(rt);
  const meta = await rt.state.redis.hgetall(mk.meta);
  let verifying = meta.verify === '1';
  const from = options.since ?? (meta.watermark ? readFrom(meta.watermark, rt.timeZone, rt.config.late) : null);
  const oldest = formatWall(Date.now() - rt.config.keepDays * 86_400_000);
  let watermark = meta.watermark ?? '';
  // The next page is read while this one is written: reads then cost no slot of the CRM's budget.
  const prefetch = (first: number) => {
    const p = readPage(rt, first, from, options.signal);
    p.catch(() => {}); // awaited below; a failure surfaces there
    return p;
  };
  let next = prefetch(0);
  const size = pageSize(rt);
  for (let first = 0; ; first += size) {
    if (options.signal?.aborted) break;
    const raw = await next;
    if (raw.length === size) next = prefetch(first + size);
    const page = raw.map(record).filter((r): r is CallDetail => r !== null);
    counts.read += page.length;
    // A number taken out at its cap (a retry pending past it) is deleted by a plan, asked for now: the dialer's retry
    // is minutes away, the mirror's lag seconds.
    if (rt.window && await rt.window.recordStarts(page.map((r) => [r.number, r.attempt, toUtc(r.startedAtLocal, rt.timeZone), r.outcome] as const))) await rt.plan?.();
    const newest = page.reduce<string | null>((n, r) => (n === null || r.endedAtLocal > n ? r.endedAtLocal : n), null);
    if (newest) lag.read(toUtc(newest, rt.timeZone));
    const keys = page.map((r) => keyOf(rt, scheme, r));
    const done = await Promise.all(page.map((r, i) => rt.state.redis.hexists(mk.done(r.endedAtLocal), keys[i]!)));
    const isPending = page.length ? await rt.state.redis.hmget(mk.pending, ...keys) : [];
    // A parked record read again (within `late` of the watermark) was tried at the start of this run: not again.
    const isParked = page.length ? await rt.state.redis.hmget(mk.parked, ...keys) : [];
    const fresh = page.filter((_, i) => !done[i] && !isPending[i] && !isParked[i]);
    counts.skipped += page.length - fresh.length;
    if (rt.window) await rt.window.countCalls(fresh.map((r) => [r.number, toUtc(r.startedAtLocal, rt.timeZone)] as const));
    const contacts = await contactOf(rt, [...new Set(fresh.map((r) => r.number))]);
    const candidates = fresh.map((r) => activityOf(rt, scheme, r, contacts.get(r.number) ?? null, rules));
    // Past the memory of what was mirrored (a backfill of long ago), or after Redis may have lost its last marks:
    // ask the CRM, in one look-up for the page, rather than risk a second activity. After a Redis restart only the
    // marks of the last writes can be lost, and records are written in the order they are read: once a page's
    // records are all new to the CRM, the rest are too, and writing goes on at full speed.
    const doubtful = candidates.filter((a) => verifying || a.record.endedAtLocal < oldest);
    const found = doubtful.length ? await lookUp(rt, doubtful, options.signal) : new Map<string, string>();
    if (verifying && fresh.length && found.size === 0) {
      verifying = false;
      await rt.state.redis.hdel(mk.meta, 'verify', 'verifyFrom');
    }
    const activities: Activity[] = [];
    const held: [Activity, string][] = [];
    for (const a of candidates) {
      const id = found.get(a.key);
      if (id) { held.push([a, id]); continue; }
      if (rt.sink.needsContact && !a.contactId) {
        await rt.state.redis.hset(mk.parked, a.key, JSON.stringify({ reason: 'no contact of this sync holds the number', at: Date.now(), activity: a }));
        counts.parked++;
        continue;
      }
      activities.push(a);
    }
    counts.resolved += await settled(rt, held, options.signal);
    await writeAll(rt, lease, activities, counts, options.signal, lag);
    for (const r of page) if (r.endedAtLocal > watermark) watermark = r.endedAtLocal;
    // (With the key scheme, always: a watermark without it is one a version before per-call keys wrote. A run going on
    // after Redis lost everything writes both again, so the next run keys records as this one did.)
    if (watermark) await rt.state.redis.hset(mk.meta, 'watermark', watermark, 'attemptKeysUntil', scheme.attemptKeysUntil, 'lookUpBothBefore', scheme.lookUpBothBefore);
    if (raw.length < size) break;
  }
  // Writes whose answers this run lost: looked up now (and written again if the CRM does not hold them), not left
  // for a later run.
  if (counts.uncertain && !options.signal?.aborted) {
    const again = await settlePending(rt, counts, options.signal);
    if (again.length) await writeAll(rt, lease, again, counts, options.signal, lag);
  }
  counts.durationMs = Math.round(performance.now() - started);
  if (verifying && !options.signal?.aborted) await rt.state.redis.hdel(mk.meta, 'verify', 'verifyFrom');
  counts.parked = await rt.state.redis.hlen(mk.parked);
  await rt.state.redis.hset(mk.meta, 'parked', counts.parked, 'lastRun', JSON.stringify({ ...counts, at: new Date().toISOString() }));
  const lagMs = lag.lagMs();
  if (lagMs !== null) {
    await rt.state.redis.hset(mk.meta, 'lagMs', lagMs);
    rt.metrics.mirrorLag.observe({ sync: rt.syncId }, lagMs / 1000);
  }
  rt.history.record(lagMs === null ? {} : { lagMs, lagRuns: 1 }, { mirrorParked: counts.parked });
  // Runs come with every call.finished event: routine ones are debug; settled crashes and parked records are news.
  if (counts.resolved || counts.parked) rt.log.info({ sync: rt.syncId, ...counts }, 'mirror run');
  else rt.log.debug({ sync: rt.syncId, ...counts }, 'mirror run');
}

/** Reads a backfill start: an instant (with Z or an offset) in the account's wall clock, or a wall-clock time as it is. */
export function backfillStart(since: string, timeZone: string): string {
  if (/(Z|[+-]\d{2}:?\d{2})$/.test(since)) {
    const instant = Date.parse(since);
    if (Number.isNaN(instant)) throw new Error(`--since ${since}: not an ISO time`);
    return formatWall(instant + offsetAt(timeZone, instant));
  }
  wallMs(since.length === 10 ? `${since}T00:00:00` : since);
  return since.length === 10 ? `${since}T00:00:00` : since.slice(0, 19);
}
