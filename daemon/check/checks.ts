// `check`: every connection and permission each sync needs, tried read-only and cheaply (a few requests a sync), one
// result each: Redis, the dialer (the key, its roles, the campaigns, the time zone), each sync's CRM (through its
// registry entry's `check`) or CSV file, webhooks, calling windows. `start` runs the same checks (see refusals.ts).
import type { Logger } from 'pino';
import type { Config, SyncConfig } from '../config.ts';
import type { CrmContext } from '../crm/crm.ts';
import { crmOf } from '../crm/registry.ts';
import type { Metrics } from '../metrics.ts';
import type { RedisClient } from '../state/connection.ts';
import type { DaemonKeys } from '../state/keys.ts';
import { checkDialer } from './dialer.ts';
import { checkRedis } from './redis.ts';
import { failed, skip, error, type CheckResult, type CheckStatus } from './result.ts';
import { checkCsvSource, checkWebhookSource } from './sources.ts';
import { checkWebhooks } from './webhooks.ts';
import { checkWindows } from './windows.ts';
import { checkDnc } from './dnc.ts';

export interface CheckDeps {
  /** Null when Redis did not answer (`redisProblem` says why): the CRM checks need it (their pacing is kept there). */
  redis: RedisClient | null;
  redisProblem: string | null;
  keys: DaemonKeys;
  log: Logger;
  metrics: Metrics;
}

export interface CheckOptions {
  /** Only these syncs (a refused sync's re-check); default: every sync. */
  syncs?: readonly string[];
  /** The checks every sync shares (Redis, http.publicUrl); default true. */
  shared?: boolean;
  now?: number;
}

export interface SyncVerdict {
  /** The worst status of the sync's results. */
  status: CheckStatus;
  /** What `start` refuses the sync for (failures that would make a rule fail open); empty: not refused. */
  refusals: CheckResult[];
  /** Results that could not tell (error): a refusing check among them is tried again (refusals.ts). */
  unsure: CheckResult[];
}

export interface CheckReport {
  /** No result failed (warnings allowed). */
  ok: boolean;
  durationMs: number;
  checks: CheckResult[];
  syncs: Record<string, SyncVerdict>;
}

const RANK: Record<CheckStatus, number> = { ok: 0, skip: 0, warn: 1, error: 2, fail: 3 };

/** A CRM's check, a CSV file's, or nothing to check for a generic webhook source. */
async function checkSource(sync: SyncConfig, deps: CheckDeps): Promise<CheckResult[]> {
  if (sync.source.type === 'csv') return checkCsvSource(sync);
  if (sync.source.type === 'webhook') return checkWebhookSource(sync);
  const crm = crmOf(sync.source.type)!;
  if (!deps.redis) return [skip(sync.id, 'crm.login', `not checked: the CRM's request pacing is kept in Redis, which did not answer (${deps.redisProblem})`)];
  const ctx: CrmContext = { redis: deps.redis, keys: deps.keys, log: deps.log, metrics: deps.metrics };
  try {
    return await crm.check(sync, ctx);
  } catch (err) {
    return [error(sync.id, 'crm.login', `${sync.source.type}: ${(err as Error).message}`)];
  }
}

export async function checkConfig(config: Config, deps: CheckDeps, options: CheckOptions = {}): Promise<CheckReport> {
  const started = performance.now();
  const syncs = config.syncs.filter((s) => !options.syncs || options.syncs.includes(s.id));
  const shared = options.shared !== false;
  const [redis, dialer, sources, lists] = await Promise.all([
    shared ? checkRedis(config.redis, deps.redis, deps.redisProblem) : Promise.resolve([]),
    checkDialer(config, syncs, options.now),
    Promise.all(syncs.map((s) => checkSource(s, deps))),
    checkDnc(config, syncs, deps.redis, deps.redisProblem, options.now),
  ]);
  const webhooks = checkWebhooks(config, syncs).filter((r) => shared || r.sync !== null);
  const bySync = new Map<string | null, CheckResult[]>([[null, [...redis, ...webhooks.filter((r) => r.sync === null)]]]);
  syncs.forEach((s, i) => bySync.set(s.id, [
    ...dialer.filter((r) => r.sync === s.id), ...sources[i]!, ...webhooks.filter((r) => r.sync === s.id), ...checkWindows(s),
    ...lists.filter((r) => r.sync === s.id),
  ]));
  const checks = [...bySync.values()].flat();
  const verdicts: Record<string, SyncVerdict> = {};
  for (const s of syncs) {
    const own = bySync.get(s.id)!;
    verdicts[s.id] = {
      status: own.reduce<CheckStatus>((w, r) => (RANK[r.status] > RANK[w] ? r.status : w), 'ok'),
      refusals: own.filter((r) => r.status === 'fail' && r.refuses),
      unsure: own.filter((r) => r.status === 'error'),
    };
  }
  return { ok: !checks.some(failed), durationMs: Math.round(performance.now() - started), checks, syncs: verdicts };
}
