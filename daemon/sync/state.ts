// The sync state in Redis (contacts, what the campaign holds, claims, open batches, parked records, runs), changed
// only by Lua scripts so that every step is atomic and a crash between two steps leaves a state the next run resumes.
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { MappedContact, RecordError } from './contacts.ts';

/** What the campaign holds for a phone number: the number record's id, the hash of its variables, its contact. */
export interface HeldNumber {
  /** Number record id in the campaign. */
  i: string;
  /** Hash of the variable values it was added with. */
  h: string;
  /** Contact it belongs to (null when adopted from the campaign and not yet matched). */
  c: string | null;
  /** Sync that holds it. */
  s: string;
  /** When it was recorded (ms): a scan that started later must have seen it. */
  t: number;
  /** Why it is still there although it should be gone or changed (its status forbade the deletion). */
  k?: string;
  /** The variables' hash the daemon gave up replacing it with (so it does not try again until they change). */
  x?: string;
}

export interface Parked { r: string; code: string; c: string | null; t: number }

/** An add entry: [e164, contactId, varValues, hash]; a delete entry: [e164, numberId, thenAdd 0|1, wantedHash]. */
export type AddEntry = [string, string, string[], string];
export type DeleteEntry = [string, string, 0 | 1, string | null];
export interface Batch { k: 'add' | 'del'; s: string; r: string; t: number; e: (AddEntry | DeleteEntry)[] }

export interface RunRecord {
  id: string; sync: string; trigger: string; mode: 'full' | 'incremental' | 'plan';
  status: 'running' | 'done' | 'failed'; startedAt: string; endedAt?: string; durationMs?: number; error?: string;
  seen: number; changed: number; left: number; invalid: number; planned: number; pushed: number; deleted: number; rejected: number;
}

const APPLY_CONTACTS = `
local contacts, phones, dirty = KEYS[1], KEYS[2], KEYS[3]
local function owners(p)
  local v = redis.call('HGET', phones, p)
  local list = {}
  if v then for id in string.gmatch(v, '[^\\n]+') do list[#list + 1] = id end end
  return list
end
local function save(p, list)
  if #list == 0 then redis.call('HDEL', phones, p) else redis.call('HSET', phones, p, table.concat(list, '\\n')) end
end
local function remove_owner(p, id)
  local list, out = owners(p), {}
  for _, o in ipairs(list) do if o ~= id then out[#out + 1] = o end end
  save(p, out)
end
local function add_owner(p, id)
  local list = owners(p)
  for _, o in ipairs(list) do if o == id then return end end
  list[#list + 1] = id
  save(p, list)
end
local changed, unchanged, removed = 0, 0, 0
for i = 1, #ARGV, 3 do
  local id, p, value = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local old_raw = redis.call('HGET', contacts, id)
  local old_p = {}
  local old_value = nil
  if old_raw then
    local nl = string.find(old_raw, '\\n', 1, true)
    old_value = string.sub(old_raw, nl + 1)
    for x in string.gmatch(string.sub(old_raw, 1, nl - 1), '[^,]+') do old_p[#old_p + 1] = x end
  end
  if value == '' then
    if old_raw then
      for _, x in ipairs(old_p) do remove_owner(x, id); redis.call('SADD', dirty, x) end
      redis.call('HDEL', contacts, id)
      removed = removed + 1
    end
  elseif old_raw and old_raw == (p .. '\\n' .. value) then
    unchanged = unchanged + 1
  else
    redis.call('HSET', contacts, id, p .. '\\n' .. value)
    local new_p, new_set, old_set = {}, {}, {}
    for x in string.gmatch(p, '[^,]+') do new_p[#new_p + 1] = x; new_set[x] = true end
    for _, x in ipairs(old_p) do old_set[x] = true end
    for _, x in ipairs(old_p) do
      if not new_set[x] then remove_owner(x, id) end
      redis.call('SADD', dirty, x)
    end
    for _, x in ipairs(new_p) do
      if not old_set[x] then add_owner(x, id) end
      redis.call('SADD', dirty, x)
    end
    changed = changed + 1
  end
end
return {changed, unchanged, removed}
`;

// Decides, for each dirty phone number, what the campaign needs (add, replace, delete or nothing), claims the numbers
// it acts on and writes the batches, all at once: two planners can never claim one number, and a crash after this
// leaves batches that the next plan finds and queues.
const PLAN = `
local contacts, phones, dirty, have, claims, batches, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local sync, on_leave, max_batch, now, run = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local adds, dels, ids = {}, {}, {}
local skipped, planned = 0, 0
local function flush(kind, list)
  if #list == 0 then return end
  local id = sync .. '.' .. redis.call('INCR', counter)
  redis.call('HSET', batches, id, cjson.encode({k = kind, s = sync, r = run, t = now, e = list}))
  for _, e in ipairs(list) do redis.call('HSET', claims, e[1], id) end
  planned = planned + #list
  ids[#ids + 1] = id
end
for i = 6, #ARGV do
  local e = ARGV[i]
  if redis.call('SISMEMBER', dirty, e) == 1 then
    if redis.call('HEXISTS', claims, e) == 1 then
      skipped = skipped + 1
    else
      redis.call('SREM', dirty, e)
      local owners = redis.call('HGET', phones, e)
      local owner = owners and string.match(owners, '^[^\\n]+') or nil
      local value = nil
      if owner then
        local raw = redis.call('HGET', contacts, owner)
        if raw then value = cjson.decode(string.sub(raw, string.find(raw, '\\n', 1, true) + 1)) end
      end
      local held_raw = redis.call('HGET', have, e)
      local held = held_raw and cjson.decode(held_raw) or nil
      if held and held.s ~= sync then
        -- another sync holds this number in the campaign: the first one keeps it
      elseif value and not held then
        adds[#adds + 1] = {e, owner, value.v, value.h}
      elseif value and held then
        if held.h == value.h or held.h == '?' then
          if held.c ~= owner or held.k or held.x or held.h == '?' then
            held.c = owner; held.k = nil; held.x = nil; held.h = value.h
            redis.call('HSET', have, e, cjson.encode(held))
          end
        elseif held.x == value.h then
          -- replacing it with these values was refused (its status is final): nothing to do until they change
          if held.c ~= owner then held.c = owner; redis.call('HSET', have, e, cjson.encode(held)) end
        else
          dels[#dels + 1] = {e, held.i, 1, value.h}
        end
      elseif held and not held.k then
        if on_leave == 'delete' then
          dels[#dels + 1] = {e, held.i, 0, false}
        else
          held.k = 'left the selection; kept (onLeave: keep)'
          redis.call('HSET', have, e, cjson.encode(held))
        end
      end
      if #adds >= max_batch then flush('add', adds); adds = {} end
      if #dels >= max_batch then flush('del', dels); dels = {} end
    end
  end
end
flush('del', dels)
flush('add', adds)
return {ids, skipped, planned}
`;

// Records what the dialer answered for a batch and closes it, in one step: the numbers it holds, the parked ones,
// the claims released, the run's counts. Entries the answer did not settle go back to dirty.
const RECORD = `
local have, claims, batches, inflight, parked, dirty = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local batch_id, now, outcome = ARGV[1], tonumber(ARGV[2]), cjson.decode(ARGV[3])
local raw = redis.call('HGET', batches, batch_id)
if not raw then return {0, 0, 0, 0} end
local b = cjson.decode(raw)
local done = {}
local pushed, deleted, rejected, kept = 0, 0, 0, 0
local by = {}
for _, e in ipairs(b.e) do by[e[1]] = e end
for _, c in ipairs(outcome.created or {}) do
  local e = by[c[1]]
  if e and not done[c[1]] then
    redis.call('HSET', have, c[1], cjson.encode({i = c[2], h = e[4], c = e[2], s = b.s, t = now}))
    redis.call('HDEL', parked, c[1])
    done[c[1]] = true
    if c[3] ~= 1 then pushed = pushed + 1 end
  end
end
for _, r in ipairs(outcome.rejected or {}) do
  local e = by[r[1]]
  if e and not done[r[1]] then
    redis.call('HSET', parked, r[1], cjson.encode({r = r[2], code = r[3], c = e[2], t = now}))
    done[r[1]] = true
    rejected = rejected + 1
  end
end
for _, x in ipairs(outcome.deleted or {}) do
  local e = by[x]
  if e and not done[x] then
    redis.call('HDEL', have, x)
    redis.call('HDEL', parked, x)
    if e[3] == 1 then redis.call('SADD', dirty, x) end
    done[x] = true
    deleted = deleted + 1
  end
end
for _, k in ipairs(outcome.kept or {}) do
  local e = by[k[1]]
  local held_raw = redis.call('HGET', have, k[1])
  if e and held_raw and not done[k[1]] then
    local held = cjson.decode(held_raw)
    held.k = k[2]
    if e[4] then held.x = e[4] end
    redis.call('HSET', have, k[1], cjson.encode(held))
    done[k[1]] = true
    kept = kept + 1
  end
end
for _, e in ipairs(b.e) do
  if not done[e[1]] then redis.call('SADD', dirty, e[1]) end
  redis.call('HDEL', claims, e[1])
end
redis.call('HDEL', batches, batch_id)
redis.call('HDEL', inflight, batch_id)
return {pushed, deleted, rejected, kept}
`;

// Rebuilds what the campaign holds from a scan of its numbers: numbers the daemon did not know are adopted, numbers
// it held that the scan (started at ARGV[2]) did not see are forgotten and their phone numbers planned again.
const RECONCILE = `
local have, dirty = KEYS[1], KEYS[2]
local sync, started = ARGV[1], tonumber(ARGV[2])
local adopted, updated = 0, 0
for i = 3, #ARGV, 3 do
  local e, id, h = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local held_raw = redis.call('HGET', have, e)
  if not held_raw then
    redis.call('HSET', have, e, cjson.encode({i = id, h = h, c = false, s = sync, t = started}))
    redis.call('SADD', dirty, e)
    adopted = adopted + 1
  else
    local held = cjson.decode(held_raw)
    if held.i ~= id or held.h ~= h then
      held.i = id; held.h = h; held.t = started
      redis.call('HSET', have, e, cjson.encode(held))
      redis.call('SADD', dirty, e)
      updated = updated + 1
    end
  end
end
return {adopted, updated}
`;

/** Keys of one sync and of the campaign it feeds. */
export class SyncKeys {
  readonly sync: string;
  readonly campaign: string;
  constructor(prefix: string, syncId: string, campaignKey: string) {
    this.sync = `${prefix}:sync:${syncId}`;
    this.campaign = `${prefix}:campaign:${campaignKey}`;
  }
  get contacts() { return `${this.sync}:contacts`; }
  get phones() { return `${this.sync}:phones`; }
  get dirty() { return `${this.sync}:dirty`; }
  get parked() { return `${this.sync}:parked`; }
  get meta() { return `${this.sync}:meta`; }
  get runs() { return `${this.sync}:runs`; }
  get inbox() { return `${this.sync}:inbox`; }
  run(runId: string) { return `${this.sync}:run:${runId}`; }
  runErrors(runId: string) { return `${this.sync}:run:${runId}:errors`; }
  seen(runId: string) { return `${this.sync}:run:${runId}:seen`; }
  get have() { return `${this.campaign}:have`; }
  get claims() { return `${this.campaign}:claims`; }
  get batches() { return `${this.campaign}:batches`; }
  get inflight() { return `${this.campaign}:inflight`; }
  get counter() { return `${this.campaign}:counter`; }
}

/** A campaign's key: the same campaign id on two dialer accounts or servers is two campaigns. */
export function campaignKey(baseUrl: string, accountId: string, campaignId: string): string {
  return createHash('sha256').update(`${baseUrl}\n${accountId}\n${campaignId}`).digest('base64url').slice(0, 16);
}

type Scripts = {
  applyContacts(keys: [string, string, string], args: string[]): Promise<[number, number, number]>;
  plan(keys: string[], args: (string | number)[]): Promise<[string[], number, number]>;
  record(keys: string[], args: (string | number)[]): Promise<[number, number, number, number]>;
  reconcile(keys: string[], args: (string | number)[]): Promise<[number, number]>;
};

const defined = new WeakSet<Redis>();

function scripts(redis: Redis): Scripts {
  if (!defined.has(redis)) {
    redis.defineCommand('cdsApplyContacts', { numberOfKeys: 3, lua: APPLY_CONTACTS });
    redis.defineCommand('cdsPlan', { numberOfKeys: 7, lua: PLAN });
    redis.defineCommand('cdsRecord', { numberOfKeys: 6, lua: RECORD });
    redis.defineCommand('cdsReconcile', { numberOfKeys: 2, lua: RECONCILE });
    defined.add(redis);
  }
  const r = redis as any;
  return {
    applyContacts: (keys, args) => r.cdsApplyContacts(...keys, ...args),
    plan: (keys, args) => r.cdsPlan(...keys, ...args),
    record: (keys, args) => r.cdsRecord(...keys, ...args),
    reconcile: (keys, args) => r.cdsReconcile(...keys, ...args),
  };
}

/** Ids are stored newline-separated and phones comma-separated: a CRM id may hold neither. */
export function storableId(id: string): boolean {
  return id.length > 0 && id.length <= 200 && !/[\n,]/.test(id);
}

export class SyncState {
  private readonly s: Scripts;
  readonly redis: Redis;
  readonly keys: SyncKeys;
  readonly syncId: string;
  constructor(redis: Redis, keys: SyncKeys, syncId: string) {
    this.redis = redis; this.keys = keys; this.syncId = syncId;
    this.s = scripts(redis);
  }

  /** Writes mapped contacts (or deletions: `null`) and marks the phone numbers they touch for planning. */
  async applyContacts(changes: ({ contact: MappedContact } | { deleted: string })[]): Promise<{ changed: number; unchanged: number; removed: number }> {
    if (!changes.length) return { changed: 0, unchanged: 0, removed: 0 };
    const args: string[] = [];
    for (const c of changes) {
      if ('deleted' in c) args.push(c.deleted, '', '');
      else args.push(c.contact.id, c.contact.phones.join(','), JSON.stringify({ v: c.contact.varValues, h: c.contact.hash }));
    }
    const [changed, unchanged, removed] = await this.s.applyContacts([this.keys.contacts, this.keys.phones, this.keys.dirty], args);
    return { changed, unchanged, removed };
  }

  /** Plans the given dirty phone numbers into batches; returns the new batch ids and how many were left claimed. */
  async plan(phones: string[], onLeave: 'delete' | 'keep', maxBatch: number, runId: string): Promise<{ batchIds: string[]; skipped: number; planned: number }> {
    if (!phones.length) return { batchIds: [], skipped: 0, planned: 0 };
    const k = this.keys;
    const [batchIds, skipped, planned] = await this.s.plan(
      [k.contacts, k.phones, k.dirty, k.have, k.claims, k.batches, k.counter],
      [this.syncId, onLeave, maxBatch, Date.now(), runId, ...phones]);
    return { batchIds, skipped, planned };
  }

  async record(batchId: string, outcome: {
    created?: [string, string, 0 | 1][]; rejected?: [string, string, string][]; deleted?: string[]; kept?: [string, string][];
  }): Promise<{ pushed: number; deleted: number; rejected: number; kept: number }> {
    const k = this.keys;
    const [pushed, deleted, rejected, kept] = await this.s.record([k.have, k.claims, k.batches, k.inflight, k.parked, k.dirty],
      [batchId, Date.now(), JSON.stringify(outcome)]);
    return { pushed, deleted, rejected, kept };
  }

  async reconcile(startedAt: number, numbers: [string, string, string][]): Promise<{ adopted: number; updated: number }> {
    const [adopted, updated] = await this.s.reconcile([this.keys.have, this.keys.dirty], [this.syncId, startedAt, ...numbers.flat()]);
    return { adopted, updated };
  }

  async batch(batchId: string): Promise<Batch | null> {
    const raw = await this.redis.hget(this.keys.batches, batchId);
    if (!raw) return null;
    const b = JSON.parse(raw) as Batch;
    // cjson writes an empty list as {}.
    for (const e of b.e) if (b.k === 'add' && !Array.isArray(e[2])) (e as AddEntry)[2] = [];
    return b;
  }

  async recordErrors(runId: string, errors: RecordError[]): Promise<void> {
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
