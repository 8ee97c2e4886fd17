// Numbers whose standing on the company's Do Not Call list changed (a command or the endpoint added or removed them):
// every sync a contact of which holds them plans them again, so an added one leaves its campaign and a removed one
// may go back. Costs one HMGET of the numbers per campaign.
import type { RedisClient } from '../state/connection.ts';
import type { SyncKeys } from '../state/keys.ts';

/** A sync as the commands and the endpoint hold it: its campaigns' keys (a routed sync's are its routes'). */
export interface HeldBy { config: { id: string }; state: { keys: SyncKeys }; routes?: HeldBy[] }

/**
 * After the company's list changed (a number added or removed by a command or the endpoint): the numbers are planned
 * again by every sync a contact of which holds them (an added one leaves its campaign, a removed one may go back).
 * Returns the ids of the syncs that have numbers to plan: run them (a plan-only run) to act at once.
 */
export async function replanHeld(redis: RedisClient, syncs: Iterable<HeldBy>, phones: readonly string[]): Promise<string[]> {
  const touched: string[] = [];
  for (const rt of syncs) {
    const marked = await replanNumbers(redis, (rt.routes ?? [rt]).map((c) => c.state.keys), phones);
    if (marked) touched.push(rt.config.id);
  }
  return touched;
}

/** Marks the numbers dirty in each of these syncs whose contacts hold them; returns how many (sync, number) pairs. */
export async function replanNumbers(redis: RedisClient, syncs: readonly SyncKeys[], phones: readonly string[]): Promise<number> {
  if (!phones.length) return 0;
  let marked = 0;
  for (const k of syncs) {
    const holders = await redis.hmget(k.phones, ...phones);
    const held = phones.filter((_, i) => holders[i]);
    if (held.length) marked += await redis.sadd(k.dirty, ...held);
  }
  return marked;
}
