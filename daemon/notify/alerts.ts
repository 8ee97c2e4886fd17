// What fires now: each sync's states that stop calls or lose work, read as `status` reads them (a refusal, the state
// the calling window last set and why it wants it, the runs' records), a few Redis reads per sync and campaign.
import { refusalOf, type Refusal } from '../check/refusals.ts';
import { campaignsOf, type SyncRuntime } from '../sync/run.ts';
import type { RedisClient } from '../state/connection.ts';
import type { FoundAlert } from '../state/notify-state.ts';

/** The docs' section each kind of alert links to (a page and its heading's anchor). */
export const DOCS_SECTIONS = {
  refused: 'daemon.md#before-the-first-start-init-and-check',
  held: 'calling-windows.md#holding-the-dialer-to-the-window',
  heldByLists: 'do-not-call.md#failing-closed-and-saying-so',
  runs: 'operations.md#when-things-go-wrong',
} as const;

export interface AlertsOptions {
  redis: RedisClient;
  /** Runs failing in a row before it fires. */
  runsFailing: number;
  /** The docs' address (`notify.docsUrl`). */
  docsUrl: string;
}

/** One sync's alerts firing now. Throws when its state cannot be read: its alerts are then left as they are. */
export async function syncAlerts(rt: SyncRuntime, o: AlertsOptions): Promise<FoundAlert[]> {
  const sync = rt.config.id;
  const docs = (section: keyof typeof DOCS_SECTIONS) => `${o.docsUrl}/${DOCS_SECTIONS[section]}`;
  const found: FoundAlert[] = [];
  const refusal = await refusalOf(o.redis, rt.state.keys.meta);
  if (refusal) {
    found.push({ kind: 'refused', sync, campaign: '', reason: refusal.problems.map((p) => p.message).join('; '), ...fixOf(refusal), docs: docs('refused'), since: Date.parse(refusal.at) });
  }
  for (const c of campaignsOf(rt)) {
    const held = await heldBecause(c, refusal);
    if (held) found.push({ kind: 'held', sync, campaign: c.config.campaignId, reason: held.reason, ...(held.fix ? { fix: held.fix } : {}), docs: docs(held.section) });
  }
  const runs = await failingRuns(rt, o.redis, o.runsFailing);
  if (runs) found.push({ kind: 'runs', sync, campaign: '', ...runs, docs: docs('runs') });
  return found;
}

function fixOf(refusal: Refusal): { fix?: string } {
  const fixes = [...new Set(refusal.problems.map((p) => p.fix).filter((f): f is string => !!f))];
  return fixes.length ? { fix: fixes.join('; ') } : {};
}

/**
 * Why the daemon holds the campaign Paused for something other than its callees' closed window (null: it does not):
 * its sync is refused (the daemon resumes nothing then), or what `wanted()` says closes it (numbers not judged, a
 * number with no zone, a Do Not Call list that cannot vouch).
 */
async function heldBecause(c: SyncRuntime, refusal: Refusal | null): Promise<{ reason: string; fix?: string; section: keyof typeof DOCS_SECTIONS } | null> {
  if (!c.window || (await c.window.lastState()) !== 'Paused') return null;
  if (refusal) {
    return { reason: `its sync is refused, and the daemon does not resume the campaign until the refusal is lifted (${refusal.problems.map((p) => p.message).join('; ')})`, ...fixOf(refusal), section: 'refused' };
  }
  const why = (await c.window.wanted()).closedBecause;
  if (!why) return null;
  // The causes as wanted() words them, each with its fix (a list's own reason says where its copy comes from).
  if (why.startsWith('Do Not Call')) return { reason: why, fix: 'load a current copy of the list, as the reason says (campaign-sync dnc load <list>)', section: 'heldByLists' };
  if (/zone is unknown/.test(why)) return { reason: why, fix: 'delete the numbers with no zone from the campaign (/ops lists them, with their evidence, under the calling window)', section: 'held' };
  if (/not judged|could not be read/.test(why)) {
    return { reason: why, fix: 'each window check reads the campaign\'s numbers again: if this lasts, make sure the dialer answers and the sync\'s key may list the campaign\'s numbers', section: 'held' };
  }
  return { reason: why, section: 'held' };
}

/** Runs read to judge a streak: enough to pass `runsFailing`, a few more to date it. */
const EXTRA_RUNS = 10;

/** The sync's last finished runs failing `runsFailing` times or more in a row (a run still running is not counted). */
async function failingRuns(rt: SyncRuntime, redis: RedisClient, runsFailing: number): Promise<{ reason: string; fix: string; since?: number } | null> {
  const keys = rt.state.keys;
  const limit = runsFailing + EXTRA_RUNS;
  const ids = await redis.lrange(keys.runs, 0, limit - 1);
  if (ids.length < runsFailing) return null;
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.hmget(keys.run(id), 'status', 'error', 'startedAt');
  const runs = ((await pipeline.exec()) ?? []).map(([err, v]) => {
    if (err) throw err;
    const [status, error, startedAt] = v as (string | null)[];
    return { status, error, startedAt };
  });
  let i = 0;
  while (i < runs.length && runs[i]!.status === 'running') i++;
  const streak = [];
  for (; i < runs.length && runs[i]!.status === 'failed'; i++) streak.push(runs[i]!);
  if (streak.length < runsFailing) return null;
  // Every run read failed, and there are more: the streak may be longer.
  const more = i === runs.length && ids.length === limit;
  const oldest = Date.parse(streak.at(-1)!.startedAt ?? '');
  return {
    reason: `its last ${streak.length}${more ? ' or more' : ''} runs failed; the latest: ${streak[0]!.error ?? 'no error recorded'}`,
    fix: 'correct what the error names (a credential, a selection, a file, the CRM\'s availability): the next run that succeeds ends this; `campaign-sync status` lists the runs',
    ...(Number.isFinite(oldest) ? { since: oldest } : {}),
  };
}
