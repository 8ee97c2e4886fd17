// `start` fails closed on configuration: it runs the checks of `check`, and a sync whose check finds what would make a
// rule fail open (a Do Not Call field the CRM does not have, a windowed sync whose key cannot pause its campaign, a cap
// with no way to count its calls), or whose campaign cannot take numbers, is refused: it sends nothing to its campaign
// (its pulls and plans do nothing, its calling window sets no state: compliance/campaign-window.ts) while the others run.
// The refusal is kept in Redis, in the sync's meta hash, so that every process honours it and `status` and /ops show it.
//
// A refusal heals by a change outside the daemon (a field created, a role given), so it is checked again: every
// RECHECK_MS by each `start` process, by `sync <id>` before it runs, and at every start. A refusal that a real answer
// caused (the dialer's 403 to a pause) is lifted by the next state change that passes (the window keeps trying it),
// since a probe cannot disprove a real 403. What may heal by itself (no answer, a 5xx, a timeout) never refuses: it is
// tried again with the refused syncs.
import type { Logger } from 'pino';
import type { RedisClient } from '../state/connection.ts';
import type { CheckReport } from './checks.ts';
import { resultLine } from './report.ts';
import type { CheckResult } from './result.ts';

/** How often a `start` process checks its refused (and not yet judged) syncs again. */
export const RECHECK_MS = 5 * 60_000;

/** The meta hash field holding a sync's refusal (JSON). */
const FIELD = 'refused';

export interface RefusalProblem {
  check: string;
  message: string;
  fix?: string;
  /** Seen in a real answer (not by a probe): lifted only when the same request passes. */
  observed?: boolean;
}

export interface Refusal {
  /** When the sync was first refused (ISO). */
  at: string;
  /** When it was last checked (ISO). */
  checkedAt: string;
  problems: RefusalProblem[];
}

export async function refusalOf(redis: RedisClient, metaKey: string): Promise<Refusal | null> {
  const raw = await redis.hget(metaKey, FIELD);
  return raw ? (JSON.parse(raw) as Refusal) : null;
}

function problemOf(r: CheckResult, observed = false): RefusalProblem {
  return { check: r.check, message: r.message, ...(r.fix ? { fix: r.fix } : {}), ...(observed ? { observed: true } : {}) };
}

export interface RefusalsDeps {
  redis: RedisClient;
  log: Logger;
  syncIds: readonly string[];
  /** The sync's meta hash (a routed sync's own). */
  metaOf(syncId: string): string;
  /** The checks of these syncs (not the shared ones). */
  check(syncIds: readonly string[]): Promise<CheckReport>;
  /** A refusal was lifted: the sync's work may start (its runs did nothing meanwhile). */
  lifted(syncId: string): Promise<void>;
}

export class Refusals {
  private readonly deps: RefusalsDeps;
  /** Syncs whose refusing checks could not tell (no answer): checked again with the refused ones. */
  private readonly unsure = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(deps: RefusalsDeps) { this.deps = deps; }

  /** Checks these syncs (default: all) and records each one's refusal, or lifts it. */
  async check(syncIds: readonly string[] = this.deps.syncIds): Promise<CheckReport> {
    const report = await this.deps.check(syncIds);
    const { log } = this.deps;
    for (const r of report.checks) {
      if (r.status === 'fail' || r.status === 'error') log.error({ sync: r.sync, check: r.check, fix: r.fix }, `check: ${resultLine(r)}`);
      else if (r.status === 'warn') log.warn({ sync: r.sync, check: r.check, fix: r.fix }, `check: ${resultLine(r)}`);
    }
    for (const id of syncIds) {
      const verdict = report.syncs[id];
      if (!verdict) continue;
      if (verdict.unsure.length) this.unsure.add(id); else this.unsure.delete(id);
      await this.record(id, verdict.refusals.map((r) => problemOf(r)));
    }
    return report;
  }

  /** A real answer refused what a rule needs (the dialer's 403 to a pause): the sync is refused until it passes. */
  async refuseObserved(syncId: string, result: CheckResult): Promise<void> {
    const current = await refusalOf(this.deps.redis, this.deps.metaOf(syncId));
    if (current?.problems.some((p) => p.observed && p.check === result.check && p.message === result.message)) return;
    await this.record(syncId, [...(current?.problems ?? []).filter((p) => !p.observed || p.check !== result.check), problemOf(result, true)], true);
  }

  /** The request a refusal observed (`check`) passed: that problem is gone. */
  async passed(syncId: string, check: string): Promise<void> {
    const current = await refusalOf(this.deps.redis, this.deps.metaOf(syncId));
    if (!current?.problems.some((p) => p.observed && p.check === check)) return;
    await this.record(syncId, current.problems.filter((p) => !(p.observed && p.check === check)), true);
  }

  /**
   * Sets the sync's problems: a probe's are replaced by the latest check (`keepObserved`: these are the whole list),
   * observed ones stay until their request passes. No problem left lifts the refusal.
   */
  private async record(syncId: string, problems: RefusalProblem[], keepObserved = false): Promise<void> {
    const { redis, log } = this.deps;
    const key = this.deps.metaOf(syncId);
    const current = await refusalOf(redis, key);
    const observed = keepObserved ? [] : (current?.problems ?? []).filter((p) => p.observed && !problems.some((q) => q.check === p.check && q.message === p.message));
    const all = [...problems, ...observed];
    const now = new Date().toISOString();
    if (!all.length) {
      if (!current) return;
      await redis.hdel(key, FIELD);
      log.warn({ sync: syncId }, `sync "${syncId}" is no longer refused: its checks pass; it adds numbers again`);
      await this.deps.lifted(syncId);
      return;
    }
    await redis.hset(key, FIELD, JSON.stringify({ at: current?.at ?? now, checkedAt: now, problems: all } satisfies Refusal));
    if (!current || JSON.stringify(current.problems) !== JSON.stringify(all)) {
      log.error({ sync: syncId, problems: all }, `sync "${syncId}" is REFUSED: it adds no numbers until this is fixed (the other syncs run): ${all.map((p) => `${p.message}${p.fix ? `; fix: ${p.fix}` : ''}`).join(' | ')}`);
    }
  }

  /** Checks refused and unsure syncs again every `everyMs` (after the first wait), until stop(). */
  repeat(everyMs = RECHECK_MS): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.recheck().catch((err: Error) => this.deps.log.warn({ err: err.message }, 'check: re-checking refused syncs failed; the next round tries again'))
        .finally(() => { this.running = null; });
    }, everyMs);
    this.timer.unref();
  }

  async recheck(): Promise<void> {
    const due: string[] = [];
    for (const id of this.deps.syncIds) {
      if (this.unsure.has(id) || await refusalOf(this.deps.redis, this.deps.metaOf(id))) due.push(id);
    }
    if (due.length) await this.check(due);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
