// A campaign's calling-window state in Redis (compliance/campaign-window.ts decides, this stores): the window groups
// admitted with each number's zone evidence, the judgement of the numbers the campaign holds that the daemon did not
// admit, the campaign state the daemon last set, the call starts of numbers under a per-number cap, the numbers held
// at it and those taken out of the campaign at it. Admitting, judging, probing, taking out and releasing are scripts
// (windowAdmit-2.lua, windowJudge-3.lua, windowProbe-3.lua, windowTakeOut-2.lua, windowRelease-3.lua); the rest are
// single commands. The keys are the campaign's (keys.ts): every sync feeding it shares its window.
import type { RedisClient } from './connection.ts';
import type { SyncKeys } from './keys.ts';
import { withScripts } from './scripts.ts';
import { decodeHeld } from './sync-state.ts';

export type WindowCampaignState = 'Active' | 'Paused';

/** What the window's meta hash holds, decoded. */
export interface WindowMeta {
  /** The state the daemon last set (null: not yet, or Redis lost it). */
  state: WindowCampaignState | null;
  /** When it was last checked and the next edge (ms). */
  checkedAt: number | null;
  nextEdgeAt: number | null;
  /** Since when the campaign has been in `state` as the daemon set it (ms; a state an older version set: its first check since). */
  since: number | null;
  /** Calls the mirror read, by whether they started inside their callee's window. */
  callsInside: number;
  callsOutside: number;
  /** The judgement of what the campaign holds (see `Judgement`). */
  judgement: Judgement;
}

/** How far the window knows what the campaign holds. */
export interface Judgement {
  /** When the numbers the campaign holds were last read whole (null: never, or Redis lost it). */
  judgedAt: number | null;
  /** Records the daemon did not account for when that read began (another key's, or forgotten by Redis). */
  baseline: number;
  /** Whether the last look at the campaign (a probe or a read) succeeded and left nothing unjudged. */
  current: boolean;
  /** Numbers the campaign holds whose callee's zone is unknown: the campaign stays Paused while there are any. */
  unjudged: number;
  /** Why the last look failed. */
  error: string | null;
}

/**
 * A number's call starts the cap counts (`<attempt>@<start ms>` -> start ms), and how many attempts of the number
 * record the daemon holds now the mirror has read (that record's later attempts, read from its status, are calls the
 * mirror has not seen yet).
 */
export interface CallStarts {
  starts: Record<string, number>;
  record?: { id: string; seen: number };
}

/** Stored as `{s, r, n}`; an older version stored the starts alone. */
function decodeStarts(raw: string): CallStarts {
  const o = JSON.parse(raw) as Record<string, unknown>;
  if (!o.s || typeof o.s !== 'object') return { starts: o as Record<string, number> };
  return { starts: o.s as Record<string, number>, ...(typeof o.r === 'string' ? { record: { id: o.r, seen: Number(o.n) || 0 } } : {}) };
}

function encodeStarts(c: CallStarts): string {
  return JSON.stringify({ s: c.starts, ...(c.record ? { r: c.record.id, n: c.record.seen } : {}) });
}

const ms = (v: string | undefined) => (v ? Number(v) : null);

export class WindowState {
  readonly keys: SyncKeys['window'];
  readonly redis: RedisClient;
  private readonly sync: SyncKeys;

  constructor(redis: RedisClient, keys: SyncKeys) {
    this.redis = withScripts(redis);
    this.keys = keys.window;
    this.sync = keys;
  }

  /** Records where these numbers are and admits their groups, atomically: how many groups were new. */
  async admit(evidence: readonly (readonly [phone: string, evidence: string])[], groups: readonly string[]): Promise<number> {
    return this.redis.cdsWindowAdmit(this.keys.evidence, this.keys.groups, evidence.length, ...evidence.flat(), ...groups);
  }

  /** The window groups admitted (`<zones>|<states>`), unsorted. */
  groups(): Promise<string[]> { return this.redis.smembers(this.keys.groups); }

  /** Each number's evidence (null: not admitted). */
  async evidence(phones: readonly string[]): Promise<(string | null)[]> {
    return phones.length ? this.redis.hmget(this.keys.evidence, ...phones) : [];
  }

  async meta(): Promise<WindowMeta> {
    const m = await this.redis.hgetall(this.keys.meta);
    return {
      state: (m.state as WindowCampaignState | undefined) ?? null, checkedAt: ms(m.at), nextEdgeAt: ms(m.next), since: ms(m.since),
      callsInside: Number(m.callsInside ?? 0), callsOutside: Number(m.callsOutside ?? 0),
      judgement: {
        judgedAt: ms(m.judgedAt), baseline: Number(m.baseline ?? 0), current: m.current === '1',
        unjudged: Number(m.unjudged ?? 0), error: m.judgeError ?? null,
      },
    };
  }

  /** The judgement alone (what every check reads before it decides). */
  async judgement(): Promise<Judgement> {
    const [judgedAt, baseline, current, unjudged, error] = await this.redis.hmget(this.keys.meta, 'judgedAt', 'baseline', 'current', 'unjudged', 'judgeError');
    return { judgedAt: ms(judgedAt ?? undefined), baseline: Number(baseline ?? 0), current: current === '1', unjudged: Number(unjudged ?? 0), error: error ?? null };
  }

  /** The groups of the numbers held that the daemon did not admit, from the last judgement. */
  heldGroups(): Promise<string[]> { return this.redis.smembers(this.keys.held); }

  /** The numbers held that the daemon did not admit, with their evidence (at most `limit`). */
  async foreign(limit: number): Promise<{ total: number; numbers: [phone: string, evidence: string][] }> {
    const [total, [, flat]] = await Promise.all([this.redis.hlen(this.keys.foreign), this.redis.hscan(this.keys.foreign, '0', 'COUNT', limit)]);
    const numbers: [string, string][] = [];
    for (let i = 0; i + 1 < flat.length && numbers.length < limit; i += 2) numbers.push([flat[i]!, flat[i + 1]!]);
    return { total, numbers };
  }

  /** One number's evidence as judged from the campaign's holdings (null: not among them). */
  foreignEvidence(phone: string): Promise<string | null> { return this.redis.hget(this.keys.foreign, phone); }

  /** What the daemon accounts for in the campaign's records: those it holds, and the adds and deletions in flight. */
  async accounted(): Promise<{ held: number; adding: number; deleting: number }> {
    const [held, adding, deleting] = await this.redis.cdsWindowProbe(this.sync.have, this.sync.inflight, this.sync.batches);
    return { held, adding, deleting };
  }

  /** Replaces the judgement (one script: groups, evidence and meta move together). */
  async judge(at: number, baseline: number, unjudged: number, evidence: readonly (readonly [phone: string, evidence: string])[], groups: readonly string[]): Promise<number> {
    return this.redis.cdsWindowJudge(this.keys.held, this.keys.foreign, this.keys.meta, at, baseline, unjudged, evidence.length, ...evidence.flat(), ...groups);
  }

  /** The judgement is not current (a read failed, or records the daemon does not account for appeared). */
  async judgementStale(error: string | null): Promise<void> {
    if (error) await this.redis.hset(this.keys.meta, 'current', '0', 'judgeError', error);
    else await this.redis.hset(this.keys.meta, 'current', '0');
  }

  /** The last probe found nothing new: the judgement is current again. */
  async judgementCurrent(): Promise<void> {
    await this.redis.multi().hset(this.keys.meta, 'current', '1').hdel(this.keys.meta, 'judgeError').exec();
  }

  /** The state the daemon last set (null: not yet, or Redis lost it). */
  async lastState(): Promise<WindowCampaignState | null> {
    return (await this.redis.hget(this.keys.meta, 'state') as WindowCampaignState | null) ?? null;
  }

  /**
   * Remembers the state set, when, and the next edge; `entered`: the campaign was in another state (or none), so `at`
   * is also since when it is in this one. (A state kept from a version that did not record since when: from now.)
   */
  async setState(state: WindowCampaignState, at: number, next: number | null, entered: boolean): Promise<void> {
    const m = this.redis.multi().hset(this.keys.meta, 'state', state, 'at', at, 'next', next ?? '');
    await (entered ? m.hset(this.keys.meta, 'since', at) : m.hsetnx(this.keys.meta, 'since', at)).exec();
  }

  /** The state the daemon last set, since when and the next edge (ms): one HMGET, for the metrics. */
  async stateSince(): Promise<{ state: WindowCampaignState | null; since: number | null; next: number | null }> {
    const [state, since, next] = await this.redis.hmget(this.keys.meta, 'state', 'since', 'next');
    return { state: (state as WindowCampaignState | null) ?? null, since: ms(since ?? undefined), next: ms(next ?? undefined) };
  }

  /** Adds to the compliance report's counts (one MULTI: the two counts move together). */
  async countCalls(inside: number, outside: number): Promise<void> {
    await this.redis.multi().hincrby(this.keys.meta, 'callsInside', inside).hincrby(this.keys.meta, 'callsOutside', outside).exec();
  }

  /** The call starts kept for each number (null: none). */
  async starts(phones: readonly string[]): Promise<(CallStarts | null)[]> {
    if (!phones.length) return [];
    return (await this.redis.hmget(this.keys.starts, ...phones)).map((s) => (s ? decodeStarts(s) : null));
  }

  /** Replaces these numbers' kept call starts (the mirror's run writes them, one process at a time under its lease). */
  async saveStarts(starts: readonly (readonly [phone: string, starts: CallStarts])[]): Promise<void> {
    if (starts.length) await this.redis.hset(this.keys.starts, ...starts.flatMap(([p, s]) => [p, encodeStarts(s)]));
  }

  /** When each number was last taken out at its cap (ms; null: never). */
  async cuts(phones: readonly string[]): Promise<(number | null)[]> {
    if (!phones.length) return [];
    return (await this.redis.hmget(this.keys.cuts, ...phones)).map((v) => ms(v ?? undefined));
  }

  /** Records the instant these numbers are taken out at their cap (the calls before are earlier records'). */
  async cut(phones: readonly string[], at: number): Promise<void> {
    if (phones.length) await this.redis.hset(this.keys.cuts, ...phones.flatMap((p) => [p, at]));
  }

  /** The id of the number record the daemon holds for each phone (null: none held). */
  async heldIds(phones: readonly string[]): Promise<(string | null)[]> {
    if (!phones.length) return [];
    return (await this.redis.hmget(this.sync.have, ...phones)).map((raw) => (raw ? decodeHeld(raw).numberId : null));
  }

  /** Holds numbers at their cap until the instant each may be planned again (ms). */
  async holdCapped(held: readonly (readonly [phone: string, until: number])[]): Promise<void> {
    if (held.length) await this.redis.zadd(this.keys.capped, ...held.flatMap(([p, t]) => [t, p]));
  }

  /**
   * Releases the numbers whose hold has passed at `now`: how many (each counted by one caller only). Those taken out
   * are marked dirty for this window's sync, to be added again.
   */
  releaseCapped(now: number): Promise<number> {
    return this.redis.cdsWindowRelease(this.keys.capped, this.keys.takenOut, this.sync.dirty, now);
  }

  /**
   * Takes numbers out of the campaign at their cap until it passes (ms): each is marked dirty for the sync whose held
   * record names it (this window's sync when none holds it). How many were not taken out already.
   */
  async takeOut(until: readonly (readonly [phone: string, until: number])[]): Promise<number> {
    if (!until.length) return 0;
    const held = await this.redis.hmget(this.sync.have, ...until.map(([p]) => p));
    const bySync = new Map<string, (string | number)[]>();
    until.forEach(([phone, t], i) => {
      const s = held[i] ? (JSON.parse(held[i]) as { s?: string }).s : undefined;
      const dirty = s ? this.sync.dirtyOf(s) : this.sync.dirty;
      bySync.set(dirty, [...(bySync.get(dirty) ?? []), phone, t]);
    });
    let added = 0;
    for (const [dirty, args] of bySync) added += await this.redis.cdsWindowTakeOut(this.keys.takenOut, dirty, ...args);
    return added;
  }

  /** Which of these numbers are taken out at their cap now. */
  async takenOut(phones: readonly string[]): Promise<Set<string>> {
    if (!phones.length) return new Set();
    const until = await this.redis.hmget(this.keys.takenOut, ...phones);
    return new Set(phones.filter((_, i) => until[i] !== null));
  }

  /** How many numbers are held at their cap, and the first release (ms). */
  async capped(): Promise<{ held: number; nextReleaseAt: number | null }> {
    const [held, first] = await Promise.all([this.redis.zcard(this.keys.capped), this.redis.zrange(this.keys.capped, '0', '0', 'WITHSCORES')]);
    return { held, nextReleaseAt: ms(first[1]) };
  }
}
