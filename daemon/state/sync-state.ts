// The sync state in Redis (contacts, what the campaign holds, claims, open batches, parked records, runs): every change
// goes through a script of commands/ so each step is atomic and a crash between two steps leaves a state the next
// run resumes. Records are stored with short field names and decoded here, once, into named fields.
import { pino } from 'pino';
import { ReplicaAcks } from './replication.ts';
import type { RedisClient } from './connection.ts';
import type { SyncKeys } from './keys.ts';
import { withScripts } from './scripts.ts';

/** What the campaign holds for a phone number. */
export interface HeldNumber {
  /** Number record id in the campaign. */
  numberId: string;
  /** Hash of the variable values it was added with ('?' when adopted from a server that does not list them). */
  hash: string;
  /** Contact it belongs to (null when adopted from the campaign and not yet matched). */
  contactId: string | null;
  /** Sync that holds it. */
  syncId: string;
  /** When it was recorded (ms): a scan that started later must have seen it. */
  recordedAt: number;
  /** Why it is still there although it should be gone or changed (its status forbade the deletion). */
  keptBecause: string | null;
  /** The variables' hash the daemon gave up replacing it with (so it does not try again until they change). */
  refusedHash: string | null;
  /** The W3C traceparent of the push that added it (only while tracing). */
  traceparent: string | null;
  /**
   * No sync of the daemon added it (the campaign held it before, or another key, the console, an upload or n8n added
   * it): the sync leaves it as it is unless it owns the campaign (ownsCampaign).
   */
  foreign: boolean;
}

/** A number the dialer refused. */
export interface ParkedNumber { reason: string; code: string; contactId: string | null; at: number; traceparent: string | null }

/** Everything the state says of one phone number (the operations page's lookup). */
export interface NumberState {
  /** What the campaign holds for it (any sync's: see `syncId`). */
  held: HeldNumber | null;
  /** This sync's contacts holding it, first read first. */
  contactIds: string[];
  /** Waiting to be planned. */
  dirty: boolean;
  /** The open batch that claims it (`batch` null if recorded meanwhile), and the attempt sending it, if one is. */
  claim: { batchId: string; batch: Batch | null; sending: string | null } | null;
  parked: ParkedNumber | null;
  /** Contacts holding it marked Do Not Call, of every sync feeding the campaign. */
  doNotCall: number;
}

/** An add entry: [e164, contactId, varValues, hash]; a delete entry: [e164, numberId, thenAdd 0|1, wantedHash]. */
export type AddEntry = [string, string, string[], string];
export type DeleteEntry = [string, string, 0 | 1, string | null];
/** `traceparent`: the span that planned it (tracing on), for a push that starts in another trace to link back to. */
export type Batch =
  | { kind: 'add'; syncId: string; runId: string; at: number; traceparent: string | null; entries: AddEntry[] }
  | { kind: 'del'; syncId: string; runId: string; at: number; traceparent: string | null; entries: DeleteEntry[] };

export interface RunRecord {
  id: string; sync: string; trigger: string; mode: 'full' | 'incremental' | 'compare' | 'inbox' | 'plan';
  status: 'running' | 'done' | 'failed'; startedAt: string; endedAt?: string; durationMs?: number; error?: string;
  seen: number; changed: number; left: number; invalid: number; planned: number; pushed: number; deleted: number; rejected: number;
  /** The trace the run started in (tracing on). */
  traceId?: string;
}

/** What a batch's answer settled, as the record script takes it. */
export interface BatchOutcome {
  /** [e164, number id, 1 if the campaign had it already]. */
  created?: [string, string, 0 | 1][];
  /** [e164, reason, code]. */
  rejected?: [string, string, string][];
  deleted?: string[];
  /** [e164, why it stays]. */
  kept?: [string, string][];
}

/**
 * A contact as the sync stores it: its phone numbers (E.164) and the variables it wants them added with; one marked
 * Do Not Call wants none of its numbers in the campaign, whoever else holds them.
 */
/** A number a plan wrote into an add batch: the contact wanting it, and the exemption that let it past a list. */
export interface PlannedAdd { phone: string; contact: string; exemption?: string; until?: number }

export interface PlanResult {
  batchIds: string[];
  skipped: number;
  planned: number;
  held: string[];
  added: PlannedAdd[];
  /** Numbers a contact wants that a Do Not Call list keeps out (it holds them, or cannot vouch for them). */
  keptOut: string[];
  /** Numbers a Do Not Call list holds (or cannot vouch for) that the plan decided without keeping them out. */
  released: string[];
}

export interface StoredContact { id: string; phones: string[]; varValues: string[]; hash: string; doNotCall?: boolean; exempt?: { until: number; why: string } }

/**
 * A dry run's finding for one phone number: a change, or `others`: the campaign holds it, no sync of the daemon added
 * it, and the sync leaves it as it is.
 */
export interface DryAction { phone: string; action: 'add' | 'replace' | 'delete' | 'others'; heldContact: string | null }

/**
 * What the campaign holds for a phone number as a start will know it once it has read the campaign (dryPlan): the
 * record in Redis (undefined), none (null: the campaign no longer holds it), or one the daemon has no record of.
 */
export type KnownHeld = undefined | null | { numberId: string; hash: string; foreign: boolean };

export function decodeHeld(raw: string): HeldNumber {
  const h = JSON.parse(raw) as { i: string; h: string; c: string | false | null; s: string; t: number; k?: string; x?: string; p?: string; f?: 1 };
  return { numberId: h.i, hash: h.h, contactId: typeof h.c === 'string' ? h.c : null, syncId: h.s, recordedAt: h.t, keptBecause: h.k ?? null,
    refusedHash: h.x ?? null, traceparent: h.p ?? null, foreign: h.f === 1 };
}

export function decodeParked(raw: string): ParkedNumber {
  const p = JSON.parse(raw) as { r: string; code: string; c: string | null; t: number; p?: string };
  return { reason: p.r, code: p.code, contactId: p.c, at: p.t, traceparent: p.p ?? null };
}

function decodeBatch(raw: string): Batch {
  const b = JSON.parse(raw) as { k: 'add' | 'del'; s: string; r: string; t: number; e: (AddEntry | DeleteEntry)[]; p?: string };
  const traceparent = b.p ?? null;
  if (b.k === 'add') {
    // cjson writes an empty list as {}.
    const entries = (b.e as AddEntry[]).map((e): AddEntry => [e[0], e[1], Array.isArray(e[2]) ? e[2] : [], e[3]]);
    return { kind: 'add', syncId: b.s, runId: b.r, at: b.t, traceparent, entries };
  }
  return { kind: 'del', syncId: b.s, runId: b.r, at: b.t, traceparent, entries: (b.e as DeleteEntry[]).map((e): DeleteEntry => [e[0], e[1], e[2], e[3] || null]) };
}

/** Ids are stored newline-separated and phones comma-separated: a CRM id may hold neither. */
export function storableId(id: string): boolean {
  return id.length > 0 && id.length <= 200 && !/[\n,]/.test(id);
}

/** A claim's answer: null when the batch is the attempt's; 'gone' when nothing of it may be sent; else its owner. */
export type Claim = null | 'gone' | { owner: string; retryInMs: number };
const claimed = ([owner, retryInMs]: [string, number]): Claim => (owner ? { owner, retryInMs: Number(retryInMs) } : Number(retryInMs) < 0 ? 'gone' : null);

export class SyncState {
  readonly redis: RedisClient;
  readonly keys: SyncKeys;
  readonly syncId: string;
  /** Intent marks (a batch in flight, an activity pending) reach a replica before what they guard is sent. */
  readonly acks: ReplicaAcks;
  constructor(redis: RedisClient, keys: SyncKeys, syncId: string, acks = new ReplicaAcks(redis, pino({ level: 'silent' }))) {
    this.redis = withScripts(redis); this.keys = keys; this.syncId = syncId; this.acks = acks;
  }

  /**
   * Writes contacts (or deletions: `{deleted: id}`) and marks the phone numbers they touch for planning; a contact
   * marked or unmarked Do Not Call is a change like any other (its numbers are planned again).
   */
  async applyContacts(changes: ({ contact: StoredContact } | { deleted: string })[]): Promise<{ changed: number; unchanged: number; removed: number }> {
    if (!changes.length) return { changed: 0, unchanged: 0, removed: 0 };
    const args: string[] = [];
    for (const c of changes) {
      if ('deleted' in c) args.push(c.deleted, '', '');
      // x, w: the contact's Do Not Call exemption, when until (ms, -1 until withdrawn) and why: the plan lets its numbers
      // past the registry and state lists while it holds. A change of them changes the value, so its numbers are planned again.
      else args.push(c.contact.id, c.contact.phones.join(','), JSON.stringify({ v: c.contact.varValues, h: c.contact.hash, ...(c.contact.doNotCall ? { d: 1 } : {}), ...(c.contact.exempt ? { x: c.contact.exempt.until, w: c.contact.exempt.why } : {}) }));
    }
    const k = this.keys;
    const [changed, unchanged, removed] = await this.redis.cdsApplyContacts(k.contacts, k.phones, k.dirty, k.doNotCall, ...args);
    return { changed, unchanged, removed };
  }

  /**
   * Plans the given dirty phone numbers into batches; returns the new batch ids and how many were left claimed.
   * `whole`: adds short of a full batch are not written but left dirty and returned as `held`. `traceparent`: the
   * planning span, kept with each batch (tracing on only).
   */
  async plan(phones: string[], onLeave: 'delete' | 'keep', maxBatch: number, runId: string, whole = false, traceparent?: string, owns = false, marks?: readonly string[], now = Date.now()): Promise<PlanResult> {
    if (!phones.length) return { batchIds: [], skipped: 0, planned: 0, held: [], added: [], keptOut: [], released: [] };
    const k = this.keys;
    const [batchIds, skipped, planned, held, flat, keptOut, released] = await this.redis.cdsPlan(k.contacts, k.phones, k.dirty, k.have, k.claims, k.batches, k.counter, k.doNotCall, k.window.takenOut, k.others,
      this.syncId, onLeave, maxBatch, now, runId, whole ? 1 : 0, traceparent ?? '', owns ? 1 : 0, ...(marks ? phones.map((p, i) => marks[i] + p) : phones));
    const added: PlannedAdd[] = [];
    for (let i = 0; i < flat.length; i += 4) {
      added.push({ phone: flat[i]!, contact: flat[i + 1]!, ...(flat[i + 2] ? { exemption: flat[i + 2]!, until: Number(flat[i + 3]) } : {}) });
    }
    return { batchIds, skipped, planned, held, added, keptOut, released };
  }

  /**
   * What plan would do, writing nothing, for a desired state given in full (phone number -> the contact wanting it and
   * its variables' hash, or `blocked` when a contact holding it is marked Do Not Call): numbers wanted, and numbers
   * held but not wanted, go through the plan's own decision. `known`: what the campaign holds, as the start will know
   * it after reading the campaign (see KnownHeld); numbers in it but not wanted are decided too.
   */
  async dryPlan(wanted: Map<string, { contactId: string; hash: string; blocked?: boolean }>, onLeave: 'delete' | 'keep', owns = false, known = new Map<string, KnownHeld>()): Promise<DryAction[]> {
    const out: DryAction[] = [];
    const ask = async (args: string[]) => {
      if (!args.length) return;
      const flat = await this.redis.cdsDryPlan(this.keys.have, this.syncId, onLeave, owns ? 1 : 0, ...args);
      for (let i = 0; i < flat.length; i += 3) out.push({ phone: flat[i]!, action: flat[i + 1] as DryAction['action'], heldContact: flat[i + 2] || null });
    };
    const asKnown = (phone: string): string => {
      const k = known.get(phone);
      if (k === undefined) return '';
      if (k === null) return '-';
      return JSON.stringify({ i: k.numberId, h: k.hash, c: false, s: this.syncId, t: 0, ...(k.foreign ? { f: 1 } : {}) });
    };
    let chunk: string[] = [];
    const add = async (...args: string[]) => {
      chunk.push(...args);
      if (chunk.length >= 5000) { await ask(chunk); chunk = []; }
    };
    for (const [phone, w] of wanted) await add(phone, w.blocked ? '' : w.contactId, w.blocked ? '' : w.hash, w.blocked ? '1' : '0', asKnown(phone));
    for await (const page of this.scanHeld()) {
      for (const [phone] of page) if (!wanted.has(phone)) await add(phone, '', '', '0', asKnown(phone));
    }
    for (const [phone, k] of known) if (k && !wanted.has(phone)) await add(phone, '', '', '0', asKnown(phone));
    await ask(chunk);
    return out;
  }

  /** `traceparent`: the span that sent the batch, kept with each number added or parked (tracing on only). */
  async record(batchId: string, outcome: BatchOutcome, traceparent?: string): Promise<{ pushed: number; deleted: number; rejected: number; kept: number }> {
    const k = this.keys;
    const [pushed, deleted, rejected, kept] = await this.redis.cdsRecord(k.have, k.claims, k.batches, k.inflight, k.parked, k.dirty, k.others,
      batchId, Date.now(), JSON.stringify(outcome), traceparent ?? '');
    return { pushed, deleted, rejected, kept };
  }

  /**
   * Records the numbers a scan of the campaign (started at `startedAt`) found: [e164, number id, hash]. One the daemon
   * had no record of is the sync's (`adopted`) only when an open add batch of the sync claims it (its answer was lost);
   * any other is `found`: not added by the daemon, left alone by the plan (see reconcile-5.lua).
   */
  async reconcile(startedAt: number, numbers: [string, string, string][]): Promise<{ adopted: number; updated: number; found: number }> {
    if (!numbers.length) return { adopted: 0, updated: 0, found: 0 };
    const k = this.keys;
    const [adopted, updated, found] = await this.redis.cdsReconcile(k.have, k.dirty, k.claims, k.batches, k.others, this.syncId, startedAt, ...numbers.flat());
    return { adopted, updated, found };
  }

  /** Whether an open add batch of this sync claims each phone number (its push may have added it: it is the sync's). */
  async pushedBySync(phones: string[]): Promise<boolean[]> {
    if (!phones.length) return [];
    const ids = await this.redis.hmget(this.keys.claims, ...phones);
    const open = [...new Set(ids.filter((id): id is string => id !== null))];
    const batches = new Map<string, Batch | null>();
    for (const id of open) batches.set(id, await this.batch(id));
    return ids.map((id) => { const b = id ? batches.get(id) : null; return !!b && b.kind === 'add' && b.syncId === this.syncId; });
  }

  /** Forgets numbers of this sync a scan started at `startedAt` did not find (they go back to dirty). */
  async forget(startedAt: number, phones: string[]): Promise<number> {
    if (!phones.length) return 0;
    return this.redis.cdsForget(this.keys.have, this.keys.claims, this.keys.dirty, this.keys.others, this.syncId, startedAt, ...phones);
  }

  /**
   * Claims a batch for the attempt about to send it (`token` names the attempt; `seen` is the owner it found when it
   * started, whose additions it looked up), on a replica before this returns. From now until its answer is recorded,
   * the campaign may hold what it added. Returns null when the batch is this attempt's; 'gone' when the batch is no
   * longer open (recorded, or lost with a master that failed over); otherwise another attempt is sending it and this
   * one must not: the owner, and the ms until it may be taken over if it does not renew its claim.
   */
  async claimInflight(batchId: string, token: string, seen: string | null, deadAfterMs: number): Promise<Claim> {
    const [result] = await this.acks.write(this.keys.inflight, (p) => p.cdsClaim(this.keys.inflight, this.keys.batches, batchId, token, seen ?? '', deadAfterMs));
    return claimed(result as [string, number]);
  }
  /** Renews this attempt's claim just before it sends a request; null while the batch is still its own. */
  async renewInflight(batchId: string, token: string, deadAfterMs: number): Promise<Claim> {
    return claimed(await this.redis.cdsClaim(this.keys.inflight, this.keys.batches, batchId, token, '', deadAfterMs));
  }
  /** The attempt that sent this batch and has not recorded its answer (it died, or the answer was lost), or null. */
  async inflight(batchId: string): Promise<string | null> {
    const mark = await this.redis.hget(this.keys.inflight, batchId);
    return mark === null ? null : /^(.*)\|\d+$/.exec(mark)?.[1] ?? mark;
  }
  /** The batch was refused whole: nothing was added. */
  async clearInflight(batchId: string): Promise<void> { await this.redis.hdel(this.keys.inflight, batchId); }

  /** Adds to a run's counts. */
  async countRun(runId: string, counts: Record<string, number>): Promise<void> {
    const m = this.redis.multi();
    for (const [field, n] of Object.entries(counts)) if (n) m.hincrby(this.keys.run(runId), field, n);
    await m.exec();
  }

  async batch(batchId: string): Promise<Batch | null> {
    const raw = await this.redis.hget(this.keys.batches, batchId);
    return raw ? decodeBatch(raw) : null;
  }

  /** The open batches of the campaign, a page at a time: [batch id, batch]. */
  async *scanBatches(): AsyncGenerator<[string, Batch][]> {
    yield* scanHash(this.redis, this.keys.batches, 200, decodeBatch);
  }

  /** What the campaign holds, a page at a time: [phone number, held record]. */
  async *scanHeld(): AsyncGenerator<[string, HeldNumber][]> {
    yield* scanHash(this.redis, this.keys.have, 1000, decodeHeld);
  }

  async held(phones: string[]): Promise<(HeldNumber | null)[]> {
    if (!phones.length) return [];
    return (await this.redis.hmget(this.keys.have, ...phones)).map((raw) => (raw ? decodeHeld(raw) : null));
  }

  async numberState(phone: string): Promise<NumberState> {
    const k = this.keys;
    const [held, owners, dirty, batchId, parked, doNotCall] = await Promise.all([
      this.redis.hget(k.have, phone), this.redis.hget(k.phones, phone), this.redis.sismember(k.dirty, phone), this.redis.hget(k.claims, phone),
      this.redis.hget(k.parked, phone), this.redis.hget(k.doNotCall, phone),
    ]);
    const claim = batchId ? { batchId, batch: await this.batch(batchId), sending: await this.inflight(batchId) } : null;
    return { held: held ? decodeHeld(held) : null, contactIds: owners ? owners.split('\n') : [], dirty: dirty === 1, claim,
      parked: parked ? decodeParked(parked) : null, doNotCall: Number(doNotCall ?? 0) };
  }

  /** The first contact holding each phone number (or null). */
  async firstOwners(phones: string[]): Promise<(string | null)[]> {
    if (!phones.length) return [];
    return (await this.redis.hmget(this.keys.phones, ...phones)).map((raw) => raw?.split('\n')[0] ?? null);
  }

  async *scanParked(count = 1000): AsyncGenerator<[string, ParkedNumber][]> {
    yield* scanHash(this.redis, this.keys.parked, count, decodeParked);
  }

  /** A run's first `count` record errors, as `recordErrors` stored them (the run keeps its first 1,000). */
  async runErrors<T extends { contactId: string }>(runId: string, count: number): Promise<T[]> {
    if (count <= 0) return [];
    return (await this.redis.lrange(this.keys.runErrors(runId), 0, count - 1)).map((raw) => JSON.parse(raw) as T);
  }

  async recordErrors(runId: string, errors: { contactId: string }[]): Promise<void> {
    if (!errors.length) return;
    const key = this.keys.runErrors(runId);
    await this.redis.multi()
      .rpush(key, ...errors.slice(0, 1000).map((e) => JSON.stringify(e)))
      .ltrim(key, 0, 999)
      .expire(key, 30 * 86_400)
      .hincrby(this.keys.run(runId), 'invalid', errors.length)
      .exec();
  }
}

/** HSCAN to the end (COUNT is a hint), each page decoded. */
async function* scanHash<T>(redis: RedisClient, key: string, count: number, decode: (raw: string) => T): AsyncGenerator<[string, T][]> {
  let cursor = '0';
  do {
    const [next, flat] = await redis.hscan(key, cursor, 'COUNT', count);
    cursor = next;
    const page: [string, T][] = [];
    for (let i = 0; i < flat.length; i += 2) page.push([flat[i]!, decode(flat[i + 1]!)]);
    if (page.length) yield page;
  } while (cursor !== '0');
}
