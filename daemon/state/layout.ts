// Moves a Redis written by an earlier version of the daemon (keys without hash tags) to today's layout, once, before
// anything else runs: the sync state, the mirror's marks and the daily budgets keep their contents under their new
// names, so an upgrade neither re-imports nor writes a call activity twice. Queues are not moved: open batches are
// queued again from the state (resumeBatches) and schedules are set again in the new queues. The move from state
// version 1 to 2 (state-version.ts runs it, under its lock).
import { Queue } from 'bullmq';
import { Cluster } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisClient } from './connection.ts';
import type { DaemonKeys, SyncKeys } from './keys.ts';

export const LAYOUT = '2';

async function keysMatching(redis: RedisClient, pattern: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  return out;
}

/** The glob pattern matching exactly the keys that start with `prefix` (glob characters in it escaped). */
function under(prefix: string): string {
  return `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
}

/** A sync as the move knows it: its id, its campaign's key and today's keys. */
export interface SyncToMove { id: string; keys: SyncKeys; campaign: string }

/**
 * Moves the old layout of every configured sync (`<prefix>:sync:<id>:…`, `<prefix>:campaign:<key>:…`) and of the
 * daemon's own keys, if this Redis holds one. Idempotent; the caller holds the state's lock (keys.stateLock), so one
 * process at a time does it.
 */
export async function upgradeLayout(redis: RedisClient, keys: DaemonKeys, syncs: SyncToMove[], log: Logger): Promise<void> {
  if ((await redis.get(keys.layout)) === LAYOUT) return;
  // A Redis Cluster never held the old layout (its scripts need one slot), and a fresh Redis has nothing to move.
  if (redis instanceof Cluster) { await redis.set(keys.layout, LAYOUT); return; }
  const p = keys.prefix;
  const moves: [string, string][] = [];
  const seenCampaigns = new Set<string>();
  for (const s of syncs) {
    const oldSync = `${p}:sync:${s.id}:`;
    for (const k of await keysMatching(redis, under(oldSync))) {
      // History is charts only (kept a day): not worth moving.
      if (!k.includes(':history:')) moves.push([k, `${s.keys.sync}:${k.slice(oldSync.length)}`]);
    }
    if (seenCampaigns.has(s.campaign)) continue;
    seenCampaigns.add(s.campaign);
    const oldCampaign = `${p}:campaign:${s.campaign}:`;
    for (const k of await keysMatching(redis, under(oldCampaign))) moves.push([k, `${s.keys.campaign}:${k.slice(oldCampaign.length)}`]);
  }
  for (const k of await keysMatching(redis, under(`${p}:budget:`))) {
    const m = /^(.*):budget:([^:]+):([^:]+)(:.*)?$/.exec(k);
    if (m) moves.push([k, `${keys.budget(m[2]!, m[3]!)}${m[4] ?? ''}`]);
  }
  if (await redis.exists(`${p}:redis-run-id`)) moves.push([`${p}:redis-run-id`, keys.redisRunId]);
  for (const [from, to] of moves) await redis.rename(from, to);
  // The old queues: their schedules and jobs would never run again (no worker listens there).
  const metas = [...await keysMatching(redis, `${p}:syncs:meta`), ...await keysMatching(redis, `${p}:push-*:meta`)];
  const oldQueues = metas.map((k) => k.slice(p.length + 1, -':meta'.length)).filter((q) => /^(syncs|push-[0-9a-f]{12})$/.test(q));
  for (const name of oldQueues) {
    const q = new Queue(name, { connection: redis, prefix: p });
    await q.obliterate({ force: true }).catch((err: Error) => log.warn({ queue: name, err: err.message }, 'could not remove a queue of the old layout'));
    await q.close();
  }
  await redis.del(`${p}:schedulers`, `${p}:lock:schedulers`);
  await redis.set(keys.layout, LAYOUT);
  if (moves.length || oldQueues.length) log.info({ keys: moves.length, queues: oldQueues.length }, 'moved the Redis state to the hash-tagged layout (Redis Cluster ready)');
}
