// The push queue of one dialer API key: one job is one dialer API call (a batch of adds or deletions), the queue's
// limiter is the key's rate limit, a 429 pauses the whole queue, and a batch whose answer was lost is looked up in
// the campaign before it is sent again.
import { createHash } from 'node:crypto';
import { DelayedError, Queue, RateLimitError, Worker, type ConnectionOptions, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { DialerConfig } from '../config.ts';
import type { Metrics } from '../metrics.ts';
import { inSync, type SyncHistory } from '../history/history.ts';
import type { AddEntry, Claim, DeleteEntry, SyncState } from '../state/sync-state.ts';
import { isolateRefused } from '../isolate.ts';
import { holderToken } from '../state/lease.ts';
import { WorkerWatchdog } from '../worker-watchdog.ts';
import { currentTraceparent, inSpan, linksOutsideTrace, queueTelemetry } from '../telemetry.ts';
import { DialerClient, DialerError, type CampaignNumber } from '../dialer.ts';

export interface PushJobData { batchId: string; syncId: string }
type Counts = { pushed: number; deleted: number; rejected: number; kept: number };

/** What the push worker needs of a sync. */
export interface PushTarget {
  state: SyncState;
  campaignId: string;
  varNames: string[];
  /** Called after a batch is recorded, so phone numbers left dirty get planned. */
  afterBatch(): Promise<void>;
  /** Marks the campaign for a full reconciliation before the next plan (a batch's outcome is unknown for good). */
  needsReconcile(reason: string): Promise<void>;
  /** The sync's charts on the operations page. */
  history: SyncHistory;
  /** The campaign's calling window (the rules on): the state it set, and when it changes next. */
  window?: { status(): Promise<{ state: string | null; nextEdgeAt: string | null; heldClosedBecause: string | null }> };
}

/**
 * The code of a number the dialer refused because the calling window paused its campaign (a Paused campaign takes no
 * numbers, spec §1): it waits, parked, and the window's opening starts a run that sends it. `status` and /ops count them.
 */
export const WAITING_FOR_WINDOW = 'waiting_for_window';

/**
 * Requests one batch may spend setting aside entries the dialer refuses: bisecting out one bad entry of 10,000 takes
 * about 2 × log2(10,000) ≈ 27; past this the rest waits for the next run rather than spend the key's budget.
 */
const MAX_REQUESTS_PER_BATCH = 40;

const NOTHING: Counts = { pushed: 0, deleted: 0, rejected: 0, kept: 0 };


/** Statuses that never change again: a number in one of them stays, with the reason recorded. */
const FINAL = new Set(['Success', 'Failure', 'Blacklisted']);

/** One queue per API key (never the token itself in Redis: a hash of where and who). */
export function pushQueueName(dialer: DialerConfig): string {
  const id = createHash('sha256').update(`${dialer.baseUrl}\n${dialer.accountId}\n${dialer.apiToken}`).digest('hex').slice(0, 12);
  // In braces: a hash tag, so all of the queue's keys share one slot of a Redis Cluster and queues spread over masters.
  return `{push-${id}}`;
}

/** BullMQ's limiter counts whole jobs per window: `perSecond` jobs per second, never a burst above the key's rate. */
export function limiterFor(dialer: DialerConfig): { max: number; duration: number } {
  const { perSecond } = dialer.rateLimit;
  return perSecond >= 1 ? { max: Math.floor(perSecond), duration: 1000 } : { max: 1, duration: Math.ceil(1000 / perSecond) };
}

export class PushQueue {
  readonly name: string;
  readonly queue: Queue<PushJobData>;
  readonly client: DialerClient;
  private worker: WorkerWatchdog<PushJobData> | null = null;
  private readonly dialer: DialerConfig;
  private readonly connection: ConnectionOptions;
  private readonly prefix: string;
  private readonly targets: Map<string, PushTarget>;
  private readonly log: Logger;
  private readonly metrics: Metrics;
  /** How long a batch's claim outlives its owner's last renewal (half the job lock's life). */
  private claimDeadAfterMs = 7500;
  /** Aborted when the daemon stops: a request waiting for the dialer is given up, its job put back (see process). */
  private readonly stopping?: AbortSignal;

  constructor(dialer: DialerConfig, connection: ConnectionOptions, prefix: string, targets: Map<string, PushTarget>, log: Logger, metrics: Metrics, stopping?: AbortSignal) {
    this.dialer = dialer; this.connection = connection; this.prefix = prefix; this.targets = targets; this.log = log; this.metrics = metrics; this.stopping = stopping;
    this.name = pushQueueName(dialer);
    this.client = new DialerClient(dialer, stopping);
    this.queue = new Queue<PushJobData>(this.name, {
      connection, prefix, telemetry: queueTelemetry(),
      defaultJobOptions: {
        attempts: dialer.attempts,
        backoff: { type: 'exponential', delay: 1000, jitter: 0.5 },
        removeOnComplete: { age: 3600, count: 1000 },
        removeOnFail: { age: 7 * 86_400 },
      },
    });
    this.queue.on('error', (err) => log.warn({ err: err.message, queue: this.name }, 'push queue error'));
  }

  async enqueue(syncId: string, batchIds: string[]): Promise<void> {
    if (!batchIds.length) return;
    // The batch id is the job id: queuing a batch twice (a plan resumed after a crash) adds it once.
    await this.queue.addBulk(batchIds.map((batchId) => ({
      name: 'batch', data: { batchId, syncId }, opts: { jobId: batchId },
    })));
  }

  startWorker(lockDuration: number): void {
    this.claimDeadAfterMs = Math.floor(lockDuration / 2);
    this.worker = new WorkerWatchdog(() => this.newWorker(lockDuration), this.queue, this.log);
  }

  private newWorker(lockDuration: number): Worker<PushJobData> {
    const worker = new Worker<PushJobData>(this.name, (job, token) => inSync(this.targets.get(job.data.syncId)?.history, () => this.process(job, token)), {
      connection: this.connection, prefix: this.prefix, telemetry: queueTelemetry(),
      concurrency: this.dialer.concurrency,
      limiter: limiterFor(this.dialer),
      lockDuration,
      stalledInterval: Math.max(1000, Math.floor(lockDuration / 2)),
      maxStalledCount: 100,
      // A job paused by 429s again and again must not run forever.
      maxStartedAttempts: this.dialer.attempts * 20,
    });
    worker.on('error', (err) => this.log.error({ err: err.message, queue: this.name }, 'push worker error'));
    worker.on('failed', (job, err) => {
      if (job) this.log.warn({ batch: job.data.batchId, sync: job.data.syncId, err: err.message }, 'push job failed');
    });
    return worker;
  }

  async close(): Promise<void> {
    await this.worker?.close();
    await this.queue.close();
  }

  private async rateLimited(err: DialerError): Promise<never> {
    this.metrics.rateLimited.inc({ service: 'dialer' });
    this.log.info({ queue: this.name, retryAfterMs: err.retryAfterMs }, 'dialer answered 429: pausing the queue');
    await this.queue.rateLimit(Math.max(err.retryAfterMs, 100));
    throw new RateLimitError();
  }

  private isLastAttempt(job: Job): boolean {
    return job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  }

  private async process(job: Job<PushJobData>, token?: string): Promise<string> {
    const target = this.targets.get(job.data.syncId);
    if (!target) return 'unknown sync (removed from the configuration)';
    const batch = await target.state.batch(job.data.batchId);
    if (!batch) return 'already recorded';
    const started = performance.now();
    const counts = await this.unlessStopping(job, token, () => inSpan('push batch', () => ({
      'cds.sync': job.data.syncId, 'cds.batch': job.data.batchId, 'cds.run': batch.runId, 'cds.campaign': target.campaignId,
      'cds.kind': batch.kind, 'cds.phones': batch.entries.map((e) => e[0]), 'cds.attempt': job.attemptsMade + 1,
    }), () => (batch.kind === 'add'
      ? this.processAdd(job, token, target, batch.entries, batch.runId)
      : this.processDelete(job, target, batch.entries)),
    // A batch queued again after its planner died (resumeBatches) starts a trace of its own: linked to the plan's.
    { links: linksOutsideTrace(batch.traceparent, { 'cds.link': 'planned by' }) }));
    this.metrics.pushSeconds.observe({ kind: batch.kind }, (performance.now() - started) / 1000);
    this.log.debug({ batch: job.data.batchId, ...counts }, 'batch recorded');
    await target.state.countRun(batch.runId, { pushed: counts.pushed, deleted: counts.deleted, rejected: counts.rejected });
    target.history.record({ added: counts.pushed, deleted: counts.deleted, rejected: counts.rejected }, { parked: await target.state.redis.hlen(target.state.keys.parked) });
    await target.afterBatch();
    return `added ${counts.pushed}, deleted ${counts.deleted}, kept ${counts.kept}, rejected ${counts.rejected}`;
  }

  /**
   * A batch whose request the daemon's stop gave up is put back without spending an attempt: as after a crash, its
   * in-flight mark makes the next attempt (here after the restart, or in another process) look up what it added first.
   */
  private async unlessStopping<T>(job: Job<PushJobData>, token: string | undefined, push: () => Promise<T>): Promise<T> {
    try {
      return await push();
    } catch (err) {
      if (!this.stopping?.aborted || !(err instanceof DialerError) || !token) throw err;
      this.log.info({ batch: job.data.batchId, sync: job.data.syncId, err: err.message }, 'the daemon is stopping: a batch waiting for the dialer goes back to the queue (the next attempt looks up what it added)');
      await job.moveToDelayed(Date.now(), token).catch(() => {});
      throw new DelayedError();
    }
  }

  /** The campaign's numbers page by page; a 429 pauses the key's queue too, since the scan spends the same budget. */
  scanNumbers(campaignId: string): AsyncGenerator<CampaignNumber[]> {
    return this.client.scanNumbers(campaignId, async (ms) => {
      this.metrics.rateLimited.inc({ service: 'dialer' });
      await this.queue.rateLimit(ms);
      await new Promise((r) => setTimeout(r, ms));
    });
  }

  /** Phone number → number record of the campaign, for the given phone numbers. */
  private async lookUp(campaignId: string, phones: Set<string>): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    const started = Date.now();
    for await (const page of this.scanNumbers(campaignId)) {
      for (const n of page) if (phones.has(n.number)) found.set(n.number, n.id);
      if (found.size === phones.size) break;
    }
    this.log.info({ campaignId, looked: phones.size, found: found.size, ms: Date.now() - started }, 'looked up a batch whose answer was lost');
    return found;
  }

  /**
   * Another attempt of this batch holds its claim (the job taken again while an earlier run still goes on, as after
   * a failover that lost its lock): it sends the batch, and this attempt comes back when that one's claim could lapse,
   * to find the batch recorded, or its owner gone and what it added in the campaign. Not a failed attempt.
   */
  private async standDown(job: Job<PushJobData>, token: string | undefined, other: { owner: string; retryInMs: number }): Promise<never> {
    this.log.info({ batch: job.data.batchId, sync: job.data.syncId, owner: other.owner, retryInMs: other.retryInMs }, 'another attempt is sending this batch: this one stands down');
    if (token) await job.moveToDelayed(Date.now() + Math.max(other.retryInMs, 500), token).catch(() => {}); // its lock may be gone too
    throw new DelayedError();
  }

  private async processAdd(job: Job<PushJobData>, token: string | undefined, target: PushTarget, all: AddEntry[], runId: string): Promise<Counts> {
    const { state, campaignId } = target;
    const created: [string, string, 0 | 1][] = [];
    const rejected: [string, string, string][] = [];
    let entries = all;
    const seen = await state.inflight(job.data.batchId);
    if (seen) {
      // An earlier attempt sent this batch and died before recording the answer: whatever the campaign has now
      // was added by it, and sending those again would duplicate them on a server that allows duplicates.
      const found = await this.lookUp(campaignId, new Set(entries.map((e) => e[0])));
      for (const e of entries) { const id = found.get(e[0]); if (id) created.push([e[0], id, 0]); }
      entries = entries.filter((e) => !found.has(e[0]));
    }
    if (entries.length) {
      // The batch is this attempt's before anything is sent, and stays so (renewed before each request) until sent.
      const me = holderToken();
      // A batch gone meanwhile (recorded by another attempt, or lost with a master that failed over) sends nothing more:
      // what is left to record is no one's (a lost batch's numbers are planned again).
      const mine = async (claim: Claim): Promise<boolean> => claim === null || (claim !== 'gone' && await this.standDown(job, token, claim));
      if (!(await mine(await state.claimInflight(job.data.batchId, me, seen, this.claimDeadAfterMs)))) return NOTHING;
      // Slices still to send: the batch, then what is left of it after the dialer named (or bisection found) the
      // entries it refuses. One bad entry costs a few more requests, never the batch.
      const pending: AddEntry[][] = [entries];
      let sentAny = false;
      let requests = 0;
      const refuseAll = (reason: string, code: string, from: AddEntry[][]) => {
        for (const slice of from.splice(0)) for (const e of slice) rejected.push([e[0], reason, code]);
      };
      while (pending.length) {
        const slice = pending.shift()!;
        let answer;
        if (++requests > MAX_REQUESTS_PER_BATCH) {
          refuseAll(`not sent: the dialer refused parts of its batch ${MAX_REQUESTS_PER_BATCH} times; retried on the next run`, 'isolation_limit', [slice, ...pending]);
          break;
        }
        if (!(await mine(await state.renewInflight(job.data.batchId, me, this.claimDeadAfterMs)))) return NOTHING;
        this.log.debug({ batch: job.data.batchId, numbers: slice.length, first: slice[0]![0], last: slice.at(-1)![0] }, 'sending a batch');
        try {
          answer = await this.client.addNumbers(campaignId, slice.map((e) => ({ number: e[0], varValues: e[2] })), target.varNames);
        } catch (err) {
          if (!(err instanceof DialerError) || this.stopping?.aborted) throw err;
          if (err.kind === 'rate-limited') {
            // Refused whole: this slice added nothing. What earlier slices added is known: recorded now, while the
            // rest goes back to dirty for the next plan (sent once the key's budget allows). Left in flight, the next
            // attempt would read the whole campaign to learn it again.
            if (!sentAny) await state.clearInflight(job.data.batchId);
            else {
              const r = await state.record(job.data.batchId, { created, rejected }, currentTraceparent());
              await state.countRun(runId, { pushed: r.pushed, rejected: r.rejected });
              await target.afterBatch();
            }
            return this.rateLimited(err);
          }
          if (err.kind === 'transient' && !this.isLastAttempt(job)) throw err;
          if (err.kind === 'transient') {
            await target.needsReconcile(`batch ${job.data.batchId}: ${err.message}`);
            refuseAll(err.message, err.status ? `http_${err.status}` : 'network', [slice, ...pending]);
            break;
          }
          const split = splitRefused(err, slice);
          if (!split) {
            // Not an entry's fault (the campaign is not Active, the key may not add): the rest would be refused alike.
            const paused = err.status === 409 ? await this.paused(err, target) : null;
            if (paused) {
              const numbers = [slice, ...pending].reduce((n, part) => n + part.length, 0);
              this.log.info({ sync: job.data.syncId, batch: job.data.batchId, campaignId, numbers, nextEdgeAt: paused.nextEdgeAt }, paused.sentence(numbers));
            }
            refuseAll(paused?.byWindow ? paused.reason : err.message, paused?.byWindow ? WAITING_FOR_WINDOW : `http_${err.status}`, [slice, ...pending]);
            break;
          }
          for (const [e, reason] of split.refused) rejected.push([e[0], reason, `http_${err.status}`]);
          pending.unshift(...split.retry.filter((part) => part.length));
          this.log.info({ batch: job.data.batchId, sync: job.data.syncId, status: err.status, entries: slice.length,
            refused: split.refused.length, again: split.retry.map((part) => part.length) }, 'dialer refused a batch: sending the rest without what it refused');
          continue;
        }
        sentAny = true;
        const sent = new Map(slice.map((e) => [e[0], e]));
        for (const n of answer.created) if (sent.has(n.number)) created.push([n.number, String(n.id), 0]);
        const duplicates = new Set<string>();
        for (const r of answer.rejected) {
          const e164 = slice[r.index]?.[0] ?? r.number;
          if (r.code === 'duplicate') duplicates.add(e164);
          else rejected.push([e164, r.reason, r.code ?? 'rejected']);
        }
        if (duplicates.size) {
          // Already live in the campaign (added outside this daemon): adopt the existing record.
          const found = await this.lookUp(campaignId, duplicates);
          for (const e164 of duplicates) {
            const id = found.get(e164);
            if (id) created.push([e164, id, 1]);
            else rejected.push([e164, 'the dialer called it a duplicate, but the campaign does not list it', 'duplicate']);
          }
        }
      }
      if (!sentAny) await state.clearInflight(job.data.batchId); // every request was refused: the server added nothing
    }
    // The numbers remember the span that added them: a call's mirror write links back to it (state.record).
    const r = await state.record(job.data.batchId, { created, rejected }, currentTraceparent());
    this.metrics.records.inc({ sync: job.data.syncId, outcome: 'pushed' }, r.pushed);
    if (r.rejected) this.metrics.records.inc({ sync: job.data.syncId, outcome: 'rejected' }, r.rejected);
    return r;
  }

  /**
   * Whether a 409 to an add means the campaign is Paused (the reference server names the state in its answer; the
   * window knows the state it set), and what to tell the operator: why the numbers are not in the campaign and when
   * they go. Null: another refusal (a Static campaign, one that is Finished).
   */
  private async paused(err: DialerError, target: PushTarget): Promise<{ byWindow: boolean; reason: string; nextEdgeAt: string | null; sentence(n: number): string } | null> {
    const stated: unknown = err.body?.state;
    const window = target.window ? await target.window.status().catch(() => null) : null;
    const byWindow = window?.state === 'Paused' && (stated === undefined || stated === 'Paused');
    if (!byWindow && stated !== 'Paused') return null;
    const campaign = `campaign ${target.campaignId}`;
    if (byWindow) {
      const when = window.nextEdgeAt ? `, next at ${window.nextEdgeAt}` : '';
      const why = window.heldClosedBecause ?? 'its callees\' calling window is closed';
      return {
        byWindow, nextEdgeAt: window.nextEdgeAt,
        reason: `waiting for the window: ${campaign} is Paused (${why}); sent when the window opens${when}`,
        sentence: (n) => `waiting for the window: the dialer refused ${n} number${n === 1 ? '' : 's'} (409) because the calling window paused ${campaign} (${why}); ` +
          `they wait in Redis and are sent when the window opens and the campaign is Active again${when}`,
      };
    }
    return {
      byWindow, nextEdgeAt: null, reason: err.message,
      sentence: (n) => `the dialer refused ${n} number${n === 1 ? '' : 's'} (409) because ${campaign} is Paused, and not by this sync's calling window` +
        `${target.window ? '' : ' (the rules are off for this sync)'}: they are sent again by the first run that reads the source after someone sets the campaign Active`,
    };
  }

  private async processDelete(job: Job<PushJobData>, target: PushTarget, entries: DeleteEntry[]): Promise<Counts> {
    const { state, campaignId } = target;
    const phoneOf = new Map(entries.map((e) => [e[1], e[0]]));
    const deleted: string[] = [];
    const kept: [string, string][] = [];
    const rejected: [string, string, string][] = [];
    let ids = entries.map((e) => e[1]);
    while (ids.length) {
      try {
        await this.client.deleteNumbers(campaignId, ids);
        deleted.push(...ids.map((id) => phoneOf.get(id)!));
        break;
      } catch (err) {
        if (!(err instanceof DialerError) || this.stopping?.aborted) throw err;
        if (err.kind === 'rate-limited') return this.rateLimited(err);
        if (err.kind === 'transient' && !this.isLastAttempt(job)) throw err;
        const body = err.body ?? {};
        const missing: string[] = err.status === 404 && Array.isArray(body.missingIds) ? body.missingIds.map(String) : [];
        const blocking: { id: string; status: string }[] = err.status === 409 && Array.isArray(body.blocking) ? body.blocking : [];
        if (!missing.length && !blocking.length) {
          for (const id of ids) rejected.push([phoneOf.get(id)!, err.message, err.status ? `http_${err.status}` : 'network']);
          break;
        }
        // Deleting is all-or-nothing: set aside the ids it named and send the rest again.
        for (const id of missing) deleted.push(phoneOf.get(id)!); // already gone (an earlier attempt, or by hand)
        for (const b of blocking) {
          const e164 = phoneOf.get(String(b.id))!;
          if (FINAL.has(b.status)) kept.push([e164, `not deleted: the number is ${b.status}`]);
          else rejected.push([e164, `not deleted yet: the number is ${b.status}; retried on the next run`, 'not_deletable']);
        }
        const named = new Set([...missing, ...blocking.map((b) => String(b.id))]);
        ids = ids.filter((id) => !named.has(id));
      }
    }
    const r = await state.record(job.data.batchId, { deleted, kept, rejected });
    this.metrics.records.inc({ sync: job.data.syncId, outcome: 'deleted' }, r.deleted);
    return r;
  }
}

/** The indices of a slice that a 400 names in its field errors (`/3/varValues`, `/3`), each with its detail. */
function namedEntries(err: DialerError, size: number): Map<number, string> {
  const named = new Map<number, string>();
  const errors: unknown = err.body?.errors;
  if (!Array.isArray(errors)) return named;
  for (const e of errors) {
    const m = typeof e?.name === 'string' && e.in === 'body' ? /^\/(\d+)(?:\/|$)/.exec(e.name) : null;
    const index = m ? Number(m[1]) : NaN;
    if (index < size && !named.has(index)) named.set(index, typeof e.detail === 'string' ? e.detail.replace(/^Entry \d+ /, 'the entry ') : err.message);
  }
  return named;
}

/**
 * What to do with a slice the dialer refused with a 4xx: the entries a 400 names are refused alone (with the dialer's
 * words) and the rest sent again; a 400 that names none, or a 413 (too many for the server), is split in two until the
 * refused entry stands alone. Null: the refusal is not about the entries (401, 403, 404, 409…).
 */
function splitRefused(err: DialerError, slice: AddEntry[]): { refused: [AddEntry, string][]; retry: AddEntry[][] } | null {
  if (err.status !== 400 && err.status !== 413) return null;
  const errors: unknown = err.body?.errors;
  // A 400 about the query (varNames) or the body as a whole is no entry's fault.
  if (Array.isArray(errors) && errors.length && !errors.some((e) => e?.in === 'body' && typeof e.name === 'string' && e.name !== '')) return null;
  const named = err.status === 400 ? namedEntries(err, slice.length) : new Map<number, string>();
  return isolateRefused(slice, (_, i) => (named.has(i) ? `the dialer refused it: ${named.get(i)}` : undefined), `the dialer refused it: ${err.message}`);
}
