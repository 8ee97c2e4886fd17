// The Redis state's scripts, each on its own against a real Redis: what each does, that a dry run decides exactly as
// a plan, and that a process dying between any two steps of apply → plan → send → record leaves a state the next run
// finishes without losing or doubling a number.
import { Redis } from 'ioredis';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { DaemonKeys } from '../../daemon/state/keys.ts';
import { SCRIPTS } from '../../daemon/state/scripts.ts';
import { SyncState, type AddEntry, type StoredContact } from '../../daemon/state/sync-state.ts';
import { WindowState } from '../../daemon/state/window-state.ts';
import { REDIS_URL, testPrefix } from '../support/daemon.ts';

const redis = new Redis(REDIS_URL);
const prefixes: { cleanup(): Promise<void> }[] = [];
afterAll(async () => {
  for (const p of prefixes) await p.cleanup();
  redis.disconnect();
});

function freshState(syncId = 'a', campaign = 'c1'): SyncState {
  const p = testPrefix();
  prefixes.push(p);
  return new SyncState(redis, new DaemonKeys(p.prefix).sync(syncId, campaign), syncId);
}

/** Syncs a and b feeding one campaign (they share its keys). */
function twoSyncsOfOneCampaign(): [SyncState, SyncState] {
  const p = testPrefix();
  prefixes.push(p);
  const keys = new DaemonKeys(p.prefix);
  return [new SyncState(redis, keys.sync('a', 'shared'), 'a'), new SyncState(redis, keys.sync('b', 'shared'), 'b')];
}

function contact(id: string, phones: string[], varValues: string[] = [id]): StoredContact {
  return { id, phones, varValues, hash: `h(${varValues.join('|')})` };
}

/** What a dialer would answer for a batch: every add created with an id, every delete done. */
async function answer(state: SyncState, batchId: string, existing = new Set<string>()): Promise<void> {
  const b = (await state.batch(batchId))!;
  if (b.kind === 'add') await state.record(batchId, { created: b.entries.map((e): [string, string, 0 | 1] => [e[0], `n-${e[0]}`, existing.has(e[0]) ? 1 : 0]) });
  else await state.record(batchId, { deleted: b.entries.map((e) => e[0]) });
}

async function dirty(state: SyncState): Promise<string[]> { return (await state.redis.smembers(state.keys.dirty)).sort(); }

/** Plans everything dirty and answers every batch, until nothing is left (what runs and push jobs do together). */
async function settle(state: SyncState, onLeave: 'delete' | 'keep' = 'delete'): Promise<void> {
  for (let round = 0; round < 10; round++) {
    const phones = await dirty(state);
    const open = [...(await state.redis.hkeys(state.keys.batches))];
    if (!phones.length && !open.length) return;
    const { batchIds } = await state.plan(phones, onLeave, 2, 'run');
    for (const id of new Set([...open, ...batchIds])) await answer(state, id);
  }
  throw new Error('the state did not settle in 10 rounds');
}

async function heldMap(state: SyncState): Promise<Record<string, { numberId: string; contactId: string | null; hash: string }>> {
  const out: Record<string, { numberId: string; contactId: string | null; hash: string }> = {};
  for await (const page of state.scanHeld()) for (const [p, h] of page) out[p] = { numberId: h.numberId, contactId: h.contactId, hash: h.hash };
  return out;
}

describe('the scripts', () => {
  it('each compiles, names its keys in its file name, and has a header naming KEYS and ARGV', async () => {
    expect(SCRIPTS.map((s) => s.name).sort()).toEqual(['applyContacts', 'claim', 'dryPlan', 'forget', 'gateHold', 'gateTake', 'lease', 'notifyAlert', 'plan', 'reconcile', 'record', 'stateOpen', 'windowAdmit', 'windowJudge', 'windowProbe', 'windowRelease', 'windowTakeOut']);
    for (const s of SCRIPTS) {
      await expect(redis.script('LOAD', s.lua), s.name).resolves.toMatch(/^[0-9a-f]{40}$/);
      for (let k = 1; k <= s.numberOfKeys; k++) expect(s.lua, `${s.name} documents KEYS[${k}]`).toContain(`KEYS[${k}]`);
      if (s.lua.includes('ARGV')) expect(s.lua, `${s.name} documents its ARGV`).toMatch(/Input:[\s\S]*ARGV/);
      expect(s.lua, `${s.name} has no unresolved include`).not.toContain('@include');
    }
  });
});

describe('applyContacts', () => {
  let s: SyncState;
  beforeEach(() => { s = freshState(); });

  it('writes contacts, marks their phones dirty, keeps owners in read order, and changes nothing when applied twice', async () => {
    expect(await s.applyContacts([{ contact: contact('c1', ['+1']) }, { contact: contact('c2', ['+1', '+2']) }])).toEqual({ changed: 2, unchanged: 0, removed: 0 });
    expect(await dirty(s)).toEqual(['+1', '+2']);
    expect(await s.firstOwners(['+1', '+2', '+3'])).toEqual(['c1', 'c2', null]);
    await s.redis.del(s.keys.dirty);
    expect(await s.applyContacts([{ contact: contact('c1', ['+1']) }, { contact: contact('c2', ['+1', '+2']) }])).toEqual({ changed: 0, unchanged: 2, removed: 0 });
    expect(await dirty(s)).toEqual([]);
  });

  it('moves a changed phone to its new owner and marks old and new dirty; a deletion releases every phone', async () => {
    await s.applyContacts([{ contact: contact('c1', ['+1']) }, { contact: contact('c2', ['+1']) }]);
    await s.redis.del(s.keys.dirty);
    await s.applyContacts([{ contact: contact('c1', ['+3']) }]);
    expect(await dirty(s)).toEqual(['+1', '+3']);
    expect(await s.firstOwners(['+1', '+3'])).toEqual(['c2', 'c1']);
    expect(await s.applyContacts([{ deleted: 'c2' }, { deleted: 'never-seen' }])).toEqual({ changed: 0, unchanged: 0, removed: 1 });
    expect(await s.firstOwners(['+1'])).toEqual([null]);
  });
});

describe('plan and record', () => {
  let s: SyncState;
  beforeEach(() => { s = freshState(); });

  it('adds wanted numbers in batches of at most maxBatch, claiming each; a claimed number stays dirty and is skipped', async () => {
    await s.applyContacts(['+1', '+2', '+3'].map((p, i) => ({ contact: contact(`c${i}`, [p]) })));
    const first = await s.plan(['+1', '+2'], 'delete', 1, 'r1');
    expect(first).toMatchObject({ skipped: 0, planned: 2 });
    expect(first.batchIds).toHaveLength(2);
    const b = (await s.batch(first.batchIds[0]!))!;
    expect(b).toMatchObject({ kind: 'add', syncId: 'a', runId: 'r1' });
    expect((b.entries as AddEntry[])[0]!.slice(0, 3)).toEqual(['+1', 'c0', ['c0']]);
    await s.redis.sadd(s.keys.dirty, '+1');
    expect(await s.plan(['+1', '+3'], 'delete', 10, 'r1')).toMatchObject({ skipped: 1, planned: 1 });
    expect(await dirty(s)).toEqual(['+1']);
  });

  it('keeps the planning span\'s traceparent with the batch; numberState tells a number\'s contacts, claim, sending attempt and record', async () => {
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    await s.applyContacts([{ contact: contact('c0', ['+1']) }, { contact: contact('c1', ['+1', '+2']) }]);
    expect(await s.numberState('+1')).toEqual({ held: null, contactIds: ['c0', 'c1'], dirty: true, claim: null, parked: null, doNotCall: 0 });
    const { batchIds: [id] } = await s.plan(['+1'], 'delete', 10, 'r1', false, tp);
    expect(await s.batch(id!)).toMatchObject({ kind: 'add', runId: 'r1', traceparent: tp });
    expect((await s.numberState('+1')).claim).toMatchObject({ batchId: id, batch: { traceparent: tp }, sending: null });
    expect(await s.claimInflight(id!, 'attempt-1', null, 60_000)).toBeNull();
    expect((await s.numberState('+1')).claim!.sending).toBe('attempt-1');
    await s.record(id!, { created: [['+1', 'n-1', 0]] }, tp);
    expect(await s.numberState('+1')).toMatchObject({ held: { numberId: 'n-1', contactId: 'c0', traceparent: tp }, claim: null, parked: null });
    // Tracing off: no traceparent.
    const { batchIds: [other] } = await s.plan(['+2'], 'delete', 10, 'r2');
    expect((await s.batch(other!))!.traceparent).toBeNull();
  });

  it('whole batches only: adds short of a batch stay dirty and unclaimed, are returned, and fill the next plan\'s batch', async () => {
    await s.applyContacts(['+1', '+2', '+3', '+4', '+5'].map((p, i) => ({ contact: contact(`c${i}`, [p]) })));
    const first = await s.plan(['+1', '+2', '+3'], 'delete', 2, 'r1', true);
    expect(first).toMatchObject({ planned: 2, held: ['+3'] });
    expect(first.batchIds).toHaveLength(1);
    expect(await s.redis.hexists(s.keys.claims, '+3')).toBe(0);
    expect(await dirty(s)).toEqual(['+3', '+4', '+5']);
    const second = await s.plan([...first.held, '+4', '+5'], 'delete', 2, 'r1', true);
    expect(second).toMatchObject({ planned: 2, held: ['+5'] });
    expect(((await s.batch(second.batchIds[0]!))!.entries as AddEntry[]).map((e) => e[0])).toEqual(['+3', '+4']);
    // Without `whole`, the rest goes out as it is.
    const last = await s.plan(second.held, 'delete', 2, 'r1');
    expect(last).toMatchObject({ planned: 1, held: [] });
    expect(await dirty(s)).toEqual([]);
  });

  it('an in-flight claim lets one attempt of a batch send it: another at once stands down; a later one takes over an owner that stopped renewing', async () => {
    await s.applyContacts([{ contact: contact('c0', ['+1']) }]);
    const { batchIds: [id] } = await s.plan(['+1'], 'delete', 10, 'r1');
    const MIN = 60_000;
    expect(await s.claimInflight(id!, 'A', null, MIN)).toBeNull();
    expect(await s.claimInflight(id!, 'A', null, MIN)).toBeNull(); // its own claim written again (a failover retry)
    expect(await s.renewInflight(id!, 'A', MIN)).toBeNull();
    expect(await s.inflight(id!)).toBe('A');
    // B started while A was running and saw no claim then: A's claim stands.
    expect(await s.claimInflight(id!, 'B', null, MIN)).toEqual({ owner: 'A', retryInMs: expect.any(Number) });
    // C saw A's claim when it started, but A renewed it within the minute: A may still be sending.
    const early = await s.claimInflight(id!, 'C', 'A', MIN);
    expect(early).toEqual({ owner: 'A', retryInMs: expect.any(Number) });
    expect((early as { retryInMs: number }).retryInMs).toBeGreaterThan(MIN - 5000);
    // Once A has not renewed for as long, C takes over (deadAfter 0 stands in for the minute passed); A, back, stands down.
    expect(await s.claimInflight(id!, 'C', 'A', 0)).toBeNull();
    expect(await s.renewInflight(id!, 'A', MIN)).toEqual({ owner: 'C', retryInMs: expect.any(Number) });
    expect(await s.inflight(id!)).toBe('C');
    // Recorded (or lost with a master that failed over): nothing of it may be sent, by anyone.
    await s.record(id!, { created: [['+1', 'n1', 0]] });
    expect(await s.renewInflight(id!, 'C', MIN)).toBe('gone');
    expect(await s.claimInflight(id!, 'E', null, MIN)).toBe('gone');
    expect(await s.inflight(id!)).toBeNull();
    // A mark from before claims named their owner (a time only) is an attempt long gone.
    await s.applyContacts([{ contact: contact('c1', ['+2']) }]);
    const { batchIds: [old] } = await s.plan(['+2'], 'delete', 10, 'r1');
    await s.redis.hset(s.keys.inflight, old!, '1795674000000');
    expect(await s.inflight(old!)).toBe('1795674000000');
    expect(await s.claimInflight(old!, 'D', '1795674000000', MIN)).toBeNull();
  });

  it('whole batches only: deletions and replaces short of a batch stay dirty and unclaimed too, and are returned', async () => {
    await s.applyContacts(['+1', '+2', '+3', '+4'].map((p, i) => ({ contact: contact(`c${i}`, [p]) })));
    await settle(s);
    // Three leave, one changes its variables (a replace: its deletion goes first).
    await s.applyContacts([{ deleted: 'c0' }, { deleted: 'c1' }, { deleted: 'c2' }, { contact: contact('c3', ['+4'], ['new']) }]);
    const first = await s.plan(['+1', '+2', '+3', '+4'], 'delete', 3, 'r1', true);
    expect(first).toMatchObject({ planned: 3, held: ['+4'] });
    expect((await s.batch(first.batchIds[0]!))!.kind).toBe('del');
    expect(await s.redis.hexists(s.keys.claims, '+4')).toBe(0);
    expect(await dirty(s)).toEqual(['+4']);
    const last = await s.plan(first.held, 'delete', 3, 'r1');
    expect(last).toMatchObject({ planned: 1, held: [] });
    expect((await s.batch(last.batchIds[0]!))!.entries[0]).toEqual(['+4', 'n-+4', 1, 'h(new)']);
  });

  it('record settles created, rejected and unsettled entries, releases the claims, and is a no-op the second time', async () => {
    await s.applyContacts(['+1', '+2', '+3'].map((p, i) => ({ contact: contact(`c${i}`, [p]) })));
    const { batchIds: [id] } = await s.plan(['+1', '+2', '+3'], 'delete', 10, 'r1');
    expect(await s.claimInflight(id!, 'attempt-1', null, 1000)).toBeNull();
    expect(await s.record(id!, { created: [['+1', 'n1', 0], ['+9', 'stranger', 0]], rejected: [['+2', 'bad number', 'invalid']] })).toEqual({ pushed: 1, deleted: 0, rejected: 1, kept: 0 });
    expect(await s.held(['+1', '+2'])).toEqual([expect.objectContaining({ numberId: 'n1', contactId: 'c0', syncId: 'a' }), null]);
    expect(await s.batch(id!)).toBeNull();
    expect(await s.inflight(id!)).toBeNull();
    expect(await s.redis.hlen(s.keys.claims)).toBe(0);
    expect(await dirty(s)).toEqual(['+3']); // unsettled: back to dirty
    const parked = []; for await (const page of s.scanParked()) parked.push(...page);
    expect(parked).toEqual([['+2', expect.objectContaining({ reason: 'bad number', code: 'invalid', contactId: 'c1' })]]);
    expect(await s.record(id!, { created: [['+3', 'n3', 0]] })).toEqual({ pushed: 0, deleted: 0, rejected: 0, kept: 0 });
  });

  it("record keeps the sending span's traceparent with each number added or parked (tracing on), and none without one; a plan keeps it", async () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await s.applyContacts(['+11', '+12', '+13'].map((p, i) => ({ contact: contact(`t${i}`, [p]) })));
    const { batchIds: [id] } = await s.plan(['+11', '+12', '+13'], 'delete', 10, 'r1');
    await s.record(id!, { created: [['+11', 'n11', 0]], rejected: [['+12', 'bad number', 'invalid']] }, tp);
    expect((await s.held(['+11']))[0]).toMatchObject({ numberId: 'n11', traceparent: tp });
    const parked = []; for await (const page of s.scanParked()) parked.push(...page);
    expect(parked.find(([p]) => p === '+12')?.[1]).toMatchObject({ traceparent: tp });
    const { batchIds: [next] } = await s.plan(['+13'], 'delete', 10, 'r2');
    await s.record(next!, { created: [['+13', 'n13', 0]] });
    expect((await s.held(['+13']))[0]).toMatchObject({ numberId: 'n13', traceparent: null });
    // A later plan rewriting the held record (the contact's variables changed) keeps what it carried.
    await s.applyContacts([{ contact: { ...contact('t0', ['+11']), varValues: ['x'], hash: 'h2' } }]);
    await s.plan(['+11'], 'delete', 10, 'r3');
    expect((await s.held(['+11']))[0]?.traceparent).toBe(tp);
  });

  it('replaces a number whose variables changed, deletes one that left (onLeave delete), notes one kept (onLeave keep)', async () => {
    await s.applyContacts([{ contact: contact('c1', ['+1'], ['x']) }, { contact: contact('c2', ['+2']) }]);
    await settle(s);
    await s.applyContacts([{ contact: contact('c1', ['+1'], ['y']) }, { deleted: 'c2' }]);
    const { batchIds } = await s.plan(await dirty(s), 'delete', 10, 'r2');
    const batch = (await s.batch(batchIds[0]!))!;
    expect(batch.kind).toBe('del');
    expect(batch.entries.map((e) => [e[0], e[2], e[3]]).sort()).toEqual([['+1', 1, 'h(y)'], ['+2', 0, null]]);
    await answer(s, batchIds[0]!);
    expect(await dirty(s)).toEqual(['+1']); // deleted to be added again
    await settle(s);
    expect(await heldMap(s)).toEqual({ '+1': { numberId: 'n-+1', contactId: 'c1', hash: 'h(y)' } });

    const k = freshState();
    await k.applyContacts([{ contact: contact('c2', ['+2']) }]);
    await settle(k, 'keep');
    await k.applyContacts([{ deleted: 'c2' }]);
    expect((await k.plan(await dirty(k), 'keep', 10, 'r')).batchIds).toEqual([]);
    expect((await k.held(['+2']))[0]?.keptBecause).toMatch(/onLeave: keep/);
  });

  it('a number another sync holds in the campaign stays that sync\'s', async () => {
    const [a, b] = twoSyncsOfOneCampaign();
    await a.applyContacts([{ contact: contact('ca', ['+1']) }]);
    await settle(a);
    await b.applyContacts([{ contact: contact('cb', ['+1'], ['other']) }]);
    expect((await b.plan(['+1'], 'delete', 10, 'r')).batchIds).toEqual([]);
    expect((await b.held(['+1']))[0]).toMatchObject({ syncId: 'a', contactId: 'ca' });
  });

  it('a kept answer records why and the refused hash, so the same replacement is not planned again until the variables change', async () => {
    await s.applyContacts([{ contact: contact('c1', ['+1'], ['x']) }]);
    await settle(s);
    await s.applyContacts([{ contact: contact('c1', ['+1'], ['y']) }]);
    const { batchIds: [id] } = await s.plan(['+1'], 'delete', 10, 'r');
    expect(await s.record(id!, { kept: [['+1', 'status Success forbids deleting it']] })).toMatchObject({ kept: 1 });
    expect((await s.held(['+1']))[0]).toMatchObject({ keptBecause: 'status Success forbids deleting it', refusedHash: 'h(y)' });
    await s.redis.sadd(s.keys.dirty, '+1');
    expect((await s.plan(['+1'], 'delete', 10, 'r')).batchIds).toEqual([]);
    await s.applyContacts([{ contact: contact('c1', ['+1'], ['z']) }]);
    expect((await s.plan(['+1'], 'delete', 10, 'r')).batchIds).toHaveLength(1);
  });
});

describe('Do Not Call', () => {
  const marked = (id: string, phones: string[]): StoredContact => ({ id, phones, varValues: [], hash: '', doNotCall: true });

  it('a marked holder blocks its numbers: never added although another contact wants one, deleted whatever onLeave says, added again once unmarked', async () => {
    for (const onLeave of ['delete', 'keep'] as const) {
      const s = freshState();
      await s.applyContacts([{ contact: contact('a', ['+1']) }, { contact: contact('b', ['+2']) }]);
      await settle(s, onLeave);
      // a marked Do Not Call; c, not marked, shares +3 with d, marked: +3 is held out although c wants it.
      expect(await s.applyContacts([{ contact: marked('a', ['+1']) }, { contact: contact('c', ['+3']) }, { contact: marked('d', ['+3']) }]))
        .toEqual({ changed: 3, unchanged: 0, removed: 0 });
      expect(await s.redis.hgetall(s.keys.doNotCall)).toEqual({ '+1': '1', '+3': '1' });
      const { batchIds } = await s.plan(await dirty(s), onLeave, 10, 'r');
      const entries = (await Promise.all(batchIds.map((id) => s.batch(id)))).map((b) => [b!.kind, b!.entries.map((e) => e[0])]);
      expect(entries).toEqual([['del', ['+1']]]);
      for (const id of batchIds) await answer(s, id);
      expect(await heldMap(s)).toEqual({ '+2': { numberId: 'n-+2', contactId: 'b', hash: 'h(b)' } });
      // Applied again (a page read twice): nothing changes, nothing is planned.
      expect(await s.applyContacts([{ contact: marked('a', ['+1']) }, { contact: marked('d', ['+3']) }])).toEqual({ changed: 0, unchanged: 2, removed: 0 });
      expect(await dirty(s)).toEqual([]);
      // Unmarked (a) and deleted (d): both numbers come back, +3 for c.
      await s.applyContacts([{ contact: contact('a', ['+1']) }, { deleted: 'd' }]);
      expect(await s.redis.hgetall(s.keys.doNotCall)).toEqual({});
      await settle(s, onLeave);
      expect(Object.keys(await heldMap(s)).sort()).toEqual(['+1', '+2', '+3']);
      expect((await s.held(['+3']))[0]?.contactId).toBe('c');
    }
  });

  it('counts a number\'s marked holders: it stays blocked until the last of them is unmarked, moves with a marked contact\'s phones', async () => {
    const s = freshState();
    await s.applyContacts([{ contact: marked('a', ['+1', '+2']) }, { contact: marked('b', ['+2']) }, { contact: contact('c', ['+2']) }]);
    expect(await s.redis.hgetall(s.keys.doNotCall)).toEqual({ '+1': '1', '+2': '2' });
    await s.applyContacts([{ contact: marked('a', ['+1', '+3']) }]);
    expect(await s.redis.hgetall(s.keys.doNotCall)).toEqual({ '+1': '1', '+2': '1', '+3': '1' });
    await settle(s);
    expect(await heldMap(s)).toEqual({});
    await s.applyContacts([{ contact: contact('b', ['+2']) }, { deleted: 'a' }]);
    expect(await s.redis.hgetall(s.keys.doNotCall)).toEqual({});
    await settle(s);
    expect(Object.keys(await heldMap(s)).sort()).toEqual(['+2']);
    expect((await s.held(['+2']))[0]?.contactId).toBe('b');
  });

  it('a mark in one sync holds the number out of the campaign whichever sync feeding it added it, and that sync never adds it back while marked', async () => {
    const [a, b] = twoSyncsOfOneCampaign();
    await b.applyContacts([{ contact: contact('cb', ['+1']) }]);
    await settle(b);
    expect((await b.held(['+1']))[0]).toMatchObject({ syncId: 'b', contactId: 'cb' });
    // A contact of sync a, marked, holds the same number: a's plan deletes b's number.
    await a.applyContacts([{ contact: marked('ca', ['+1']) }]);
    await settle(a);
    expect(await heldMap(a)).toEqual({});
    // b's contact changes: b plans the number, and does not add it while a's mark stands.
    await b.applyContacts([{ contact: contact('cb', ['+1'], ['changed']) }]);
    expect((await b.plan(await dirty(b), 'delete', 10, 'r')).batchIds).toEqual([]);
    // Unmarked in a (and a's contact wants it no more): b's next change adds it again.
    await a.applyContacts([{ deleted: 'ca' }]);
    await settle(a);
    await b.applyContacts([{ contact: contact('cb', ['+1'], ['again']) }]);
    await settle(b);
    expect((await b.held(['+1']))[0]).toMatchObject({ syncId: 'b', contactId: 'cb', hash: 'h(again)' });
  });

  it('a number whose deletion a final status refused (it was dialed) stays; one kept by onLeave keep is deleted', async () => {
    const s = freshState();
    await s.applyContacts([{ contact: contact('a', ['+1']) }, { contact: contact('b', ['+2']) }]);
    await settle(s, 'keep');
    await s.applyContacts([{ contact: contact('a', ['+1'], ['new']) }, { deleted: 'b' }]);
    const { batchIds: [id] } = await s.plan(await dirty(s), 'keep', 10, 'r');
    await s.record(id!, { kept: [['+1', 'not deleted: the number is Success']] });
    expect((await s.held(['+2']))[0]?.keptBecause).toMatch(/onLeave: keep/);
    await s.applyContacts([{ contact: marked('a', ['+1']) }, { contact: marked('b', ['+2']) }]);
    const dry = await s.dryPlan(new Map([['+1', { contactId: 'a', hash: '', blocked: true }], ['+2', { contactId: 'b', hash: '', blocked: true }]]), 'keep');
    const { batchIds } = await s.plan(await dirty(s), 'keep', 10, 'r');
    expect(batchIds).toHaveLength(1);
    expect((await s.batch(batchIds[0]!))!.entries.map((e) => e[0])).toEqual(['+2']);
    expect(dry.map((a) => [a.phone, a.action])).toEqual([['+2', 'delete']]);
  });
});

describe('reconcile and forget', () => {
  it('records unknown numbers as not the sync\'s, updates changed ones, and forgets only this sync\'s older unclaimed numbers the scan missed', async () => {
    const s = freshState();
    await s.applyContacts([{ contact: contact('c1', ['+1']) }, { contact: contact('c2', ['+2']) }, { contact: contact('c3', ['+3']) }]);
    await settle(s);
    const scanStarted = Date.now() + 1;
    // +2's record id changed (deleted and added again outside the daemon); +7 was never added by the daemon.
    expect(await s.reconcile(scanStarted, [['+1', 'n-+1', 'h(c1)'], ['+2', 'other-id', 'h(c2)'], ['+7', 'n7', '?']])).toEqual({ adopted: 0, updated: 1, found: 2 });
    expect((await s.held(['+7']))[0]).toMatchObject({ numberId: 'n7', contactId: null, hash: '?', foreign: true });
    expect((await s.held(['+2']))[0]).toMatchObject({ numberId: 'other-id', contactId: null, foreign: true });
    expect((await s.held(['+1']))[0]).toMatchObject({ foreign: false });
    expect(await s.redis.hgetall(s.keys.others)).toEqual({ '+2': 'replaced', '+7': 'found' });
    await s.redis.del(s.keys.dirty);
    await s.redis.hset(s.keys.claims, '+1', 'a.99'); // an open batch's answer decides +1
    expect(await s.forget(scanStarted, ['+1', '+3', '+7', '+8'])).toBe(1);
    expect(await dirty(s)).toEqual(['+3']);
    expect(await s.forget(0, ['+2'])).toBe(0); // recorded after that scan started
    expect(await s.forget(scanStarted + 1, ['+2'])).toBe(1); // gone from the campaign: forgotten, and no longer counted
    expect(await s.redis.hgetall(s.keys.others)).toEqual({ '+7': 'found' });
  });

  it('takes a number an open add batch of the sync claims as the sync\'s: its push\'s answer was lost', async () => {
    const s = freshState();
    await s.applyContacts([{ contact: contact('c1', ['+1']) }, { contact: contact('c2', ['+2']) }]);
    const { batchIds: [id] } = await s.plan(await dirty(s), 'delete', 10, 'r');
    // The dialer added both, and the answer never came back; a reconcile finds them, and one added by hand.
    expect(await s.reconcile(Date.now(), [['+1', 'n1', 'h(c1)'], ['+2', 'n2', 'h(c2)'], ['+3', 'n3', '?']])).toEqual({ adopted: 2, updated: 0, found: 1 });
    expect(await s.pushedBySync(['+1', '+2', '+3'])).toEqual([true, true, false]);
    await s.record(id!, { created: [['+1', 'n1', 0], ['+2', 'n2', 0]] });
    expect((await s.held(['+1', '+2', '+3'])).map((h) => h?.foreign)).toEqual([false, false, true]);
  });
});

describe('numbers no sync added', () => {
  /** A sync whose campaign holds +1 (wanted, other variables), +2 (wanted, same variables), +3 (unwanted), +4 (a Do Not Call contact's), none added by it. */
  async function handFilled(): Promise<SyncState> {
    const s = freshState();
    await s.reconcile(Date.now(), [['+1', 'n1', 'h(by hand)'], ['+2', 'n2', 'h(c2)'], ['+3', 'n3', 'h(x)'], ['+4', 'n4', 'h(y)']]);
    await s.redis.del(s.keys.dirty);
    await s.applyContacts([{ contact: contact('c1', ['+1']) }, { contact: contact('c2', ['+2']) }, { contact: { ...contact('c4', ['+4']), doNotCall: true } }, { contact: contact('c5', ['+5']) }]);
    await s.redis.sadd(s.keys.dirty, '+1', '+2', '+3', '+4', '+5');
    return s;
  }

  it('are never replaced or deleted, except by a Do Not Call mark; the dry run says the same, naming them', async () => {
    for (const onLeave of ['delete', 'keep'] as const) {
      const s = await handFilled();
      const wanted = new Map([['+1', { contactId: 'c1', hash: 'h(c1)' }], ['+2', { contactId: 'c2', hash: 'h(c2)' }], ['+4', { contactId: 'c4', hash: '', blocked: true }], ['+5', { contactId: 'c5', hash: 'h(c5)' }]]);
      const dry = await s.dryPlan(wanted, onLeave);
      expect(dry.map((a) => [a.phone, a.action]).sort()).toEqual([['+1', 'others'], ['+2', 'others'], ['+3', 'others'], ['+4', 'delete'], ['+5', 'add']]);
      const { batchIds } = await s.plan(await dirty(s), onLeave, 10, 'r');
      const real: [string, string][] = [];
      for (const id of batchIds) { const b = (await s.batch(id))!; for (const e of b.entries) real.push([e[0], b.kind]); }
      expect(real.sort()).toEqual([['+4', 'del'], ['+5', 'add']]);
      expect((await s.held(['+1', '+2', '+3'])).map((h) => [h?.foreign, h?.contactId])).toEqual([[true, null], [true, null], [true, null]]);
    }
  });

  it('are the sync\'s own to replace and delete when it owns the campaign (ownsCampaign)', async () => {
    const s = await handFilled();
    const wanted = new Map([['+1', { contactId: 'c1', hash: 'h(c1)' }], ['+2', { contactId: 'c2', hash: 'h(c2)' }], ['+4', { contactId: 'c4', hash: '', blocked: true }], ['+5', { contactId: 'c5', hash: 'h(c5)' }]]);
    const dry = await s.dryPlan(wanted, 'delete', true);
    expect(dry.map((a) => [a.phone, a.action]).sort()).toEqual([['+1', 'replace'], ['+3', 'delete'], ['+4', 'delete'], ['+5', 'add']]);
    const { batchIds } = await s.plan(await dirty(s), 'delete', 10, 'r', false, undefined, true);
    const real: [string, string][] = [];
    for (const id of batchIds) { const b = (await s.batch(id))!; for (const e of b.entries) real.push([e[0], b.kind === 'add' ? 'add' : e[2] === 1 ? 'replace' : 'delete']); }
    expect(real.sort()).toEqual(dry.map((a) => [a.phone, a.action]).sort());
    // +2 is taken as it is (same variables): the sync's from now on.
    expect((await s.held(['+2']))[0]).toMatchObject({ contactId: 'c2', foreign: false });
    expect(await s.redis.hlen(s.keys.others)).toBe(0);
  });

  it('a number the dialer already held when the sync sent it is recorded as not the sync\'s', async () => {
    const s = freshState();
    await s.applyContacts([{ contact: contact('c1', ['+1']) }, { contact: contact('c2', ['+2']) }]);
    const { batchIds: [id] } = await s.plan(await dirty(s), 'delete', 10, 'r');
    await answer(s, id!, new Set(['+2']));
    expect((await s.held(['+1', '+2'])).map((h) => h?.foreign)).toEqual([false, true]);
    expect(await s.redis.hgetall(s.keys.others)).toEqual({ '+2': 'duplicate' });
    // Its contact leaves: the number the sync added goes, the one it found stays.
    await s.applyContacts([{ deleted: 'c1' }, { deleted: 'c2' }]);
    const { batchIds } = await s.plan(await dirty(s), 'delete', 10, 'r');
    expect(batchIds).toHaveLength(1);
    expect((await s.batch(batchIds[0]!))!.entries.map((e) => e[0])).toEqual(['+1']);
  });
});

describe('dry plan', () => {
  it('reports exactly what plan then does, for every kind of decision', async () => {
    const s = freshState();
    await s.applyContacts([
      { contact: contact('keep', ['+1']) }, { contact: contact('change', ['+2'], ['old']) }, { contact: contact('leave', ['+3']) },
    ]);
    await settle(s);
    const wanted = new Map([
      ['+1', { contactId: 'keep', hash: 'h(keep)' }], ['+2', { contactId: 'change', hash: 'h(new)' }], ['+4', { contactId: 'new', hash: 'h(new)' }],
    ]);
    const dry = await s.dryPlan(wanted, 'delete');
    expect(dry.map((a) => [a.phone, a.action]).sort()).toEqual([['+2', 'replace'], ['+3', 'delete'], ['+4', 'add']]);
    expect(dry.find((a) => a.phone === '+3')?.heldContact).toBe('leave');
    expect(await dirty(s)).toEqual([]); // wrote nothing

    await s.applyContacts([{ contact: contact('change', ['+2'], ['new']) }, { deleted: 'leave' }, { contact: contact('new', ['+4'], ['new']) }]);
    const { batchIds } = await s.plan(await dirty(s), 'delete', 10, 'r');
    const real: [string, string][] = [];
    for (const id of batchIds) {
      const b = (await s.batch(id))!;
      for (const e of b.entries) real.push([e[0], b.kind === 'add' ? 'add' : e[2] === 1 ? 'replace' : 'delete']);
    }
    expect(real.sort()).toEqual(dry.map((a) => [a.phone, a.action]).sort());
  });
});

describe('a process dying between two steps', () => {
  // The steps a sync takes for one page of contacts; a crash after step k leaves Redis as it was then, and the next
  // run repeats from the start: the page applied again, dirty numbers planned, open batches sent again (the dialer's
  // look-up finds what the lost answer had added) and recorded.
  const STEPS = ['apply', 'plan', 'send', 'record'] as const;
  for (let crashAfter = 0; crashAfter < STEPS.length; crashAfter++) {
    it(`after ${STEPS[crashAfter]}: the next run ends with every wanted number held once`, async () => {
      const s = freshState();
      const page = Array.from({ length: 5 }, (_, i) => ({ contact: contact(`c${i}`, [`+10${i}`]) }));
      const campaign = new Map<string, string>(); // what the dialer holds: phone -> number id
      const send = async (batchId: string): Promise<void> => {
        const b = (await s.batch(batchId))!;
        expect(await s.claimInflight(batchId, 'attempt', null, 1000)).toBeNull();
        for (const e of b.entries) if (b.kind === 'add' && !campaign.has(e[0])) campaign.set(e[0], `n-${e[0]}`);
      };
      const record = async (batchId: string): Promise<void> => {
        const b = (await s.batch(batchId))!;
        if (b.kind === 'add') await s.record(batchId, { created: b.entries.map((e): [string, string, 0 | 1] => [e[0], campaign.get(e[0])!, 1]) });
      };
      // The first run, cut short.
      await s.applyContacts(page);
      let ids: string[] = [];
      if (crashAfter >= 1) ids = (await s.plan(await dirty(s), 'delete', 2, 'r1')).batchIds;
      if (crashAfter >= 2) for (const id of ids) await send(id);
      if (crashAfter >= 3) await record(ids[0]!); // one batch recorded, the process died before the others
      // The next run.
      await s.applyContacts(page);
      await s.plan(await dirty(s), 'delete', 2, 'r2');
      for await (const open of s.scanBatches()) for (const [id] of open) { if (!(await s.inflight(id))) await send(id); await record(id); }
      expect(await dirty(s)).toEqual([]);
      expect(await s.redis.hlen(s.keys.claims)).toBe(0);
      expect([...campaign.keys()].sort()).toEqual(page.map((c) => c.contact.phones[0]).sort());
      expect(Object.keys(await heldMap(s)).sort()).toEqual([...campaign.keys()].sort());
    });
  }
});

describe('the CRM gates', () => {
  it('space requests by the interval across callers, let a burst through after a pause, and hold everyone after a 429', async () => {
    const p = testPrefix(); prefixes.push(p);
    const gate = new DaemonKeys(p.prefix).gate('test', 'acct');
    const s = freshState(); // defines the scripts on this connection
    const waits = [];
    const slots = [];
    for (let i = 0; i < 4; i++) {
      const [wait, slot] = await s.redis.cdsGateTake(gate, 1000, 0);
      waits.push(wait); slots.push(slot);
    }
    expect(waits[0]).toBe(0);
    // Each later caller is told to wait about one interval more than the one before, and its slot is at least one interval later.
    for (let i = 1; i < 4; i++) expect(waits[i]! - waits[i - 1]!).toBeGreaterThan(900);
    for (let i = 1; i < 4; i++) expect(slots[i]! - slots[i - 1]!).toBeGreaterThanOrEqual(1000);
    const burst = new DaemonKeys(p.prefix).gate('test', 'burst');
    const bw = [];
    for (let i = 0; i < 3; i++) bw.push((await s.redis.cdsGateTake(burst, 1000, 2))[0]);
    expect(bw).toEqual([0, 0, 0]);
    await s.redis.cdsGateHold(burst, 60_000);
    expect((await s.redis.cdsGateTake(burst, 1000, 2))[0]).toBeGreaterThan(55_000);
  });
});

describe('the calling window\'s state', () => {
  function freshWindow(): WindowState {
    const p = testPrefix(); prefixes.push(p);
    return new WindowState(redis, new DaemonKeys(p.prefix).sync('a', 'c1'));
  }

  it('admits evidence and groups in one step, counting the groups that were new', async () => {
    const w = freshWindow();
    expect(await w.admit([['+12125550100', 'area code 212 (group America/New_York|)'], ['+13055550100', 'area code 305 (group America/New_York|FL)']],
      ['America/New_York|', 'America/New_York|FL'])).toBe(2);
    expect(await w.admit([['+12125550101', 'area code 212 (group America/New_York|)']], ['America/New_York|'])).toBe(0);
    expect((await w.groups()).sort()).toEqual(['America/New_York|', 'America/New_York|FL']);
    expect(await w.evidence(['+13055550100', '+19995550100'])).toEqual(['area code 305 (group America/New_York|FL)', null]);
  });

  it('keeps the state set, since when, the next edge and the report\'s counts, decoded', async () => {
    const w = freshWindow();
    expect(await w.meta()).toEqual({ state: null, checkedAt: null, nextEdgeAt: null, since: null, callsInside: 0, callsOutside: 0, judgement: { judgedAt: null, baseline: 0, current: false, unjudged: 0, error: null } });
    await w.setState('Paused', 1_000, null, true);
    await w.countCalls(3, 0);
    await w.countCalls(2, 1);
    expect(await w.lastState()).toBe('Paused');
    expect(await w.meta()).toEqual({ state: 'Paused', checkedAt: 1_000, nextEdgeAt: null, since: 1_000, callsInside: 5, callsOutside: 1, judgement: { judgedAt: null, baseline: 0, current: false, unjudged: 0, error: null } });
    // A check that keeps the state moves the check's time, not since when.
    await w.setState('Paused', 1_500, 8_000, false);
    expect(await w.stateSince()).toEqual({ state: 'Paused', since: 1_000, next: 8_000 });
    await w.setState('Active', 2_000, 9_000, true);
    expect(await w.meta()).toMatchObject({ state: 'Active', checkedAt: 2_000, nextEdgeAt: 9_000, since: 2_000 });
    // A state an older version set (no since): from the first check that keeps it.
    await w.redis.hdel(w.keys.meta, 'since');
    await w.setState('Active', 3_000, 9_000, false);
    expect(await w.stateSince()).toEqual({ state: 'Active', since: 3_000, next: 9_000 });
  });

  it('replaces the judgement of the numbers held in one step: groups, evidence and meta move together', async () => {
    const w = freshWindow();
    await w.judgementStale('the dialer did not answer');
    expect(await w.judgement()).toEqual({ judgedAt: null, baseline: 0, current: false, unjudged: 0, error: 'the dialer did not answer' });
    expect(await w.judge(1_000, 3, 1, [['+447912345678', 'country code +44 (group Europe/London)'], ['+80012345678', 'no zone']], ['Europe/London'])).toBe(1);
    expect(await w.judgement()).toEqual({ judgedAt: 1_000, baseline: 3, current: true, unjudged: 1, error: null });
    expect(await w.foreign(10)).toEqual({ total: 2, numbers: expect.arrayContaining([['+447912345678', 'country code +44 (group Europe/London)'], ['+80012345678', 'no zone']]) });
    // The next judgement replaces the last one whole: nothing of it is left behind.
    expect(await w.judge(2_000, 0, 0, [], [])).toBe(0);
    expect(await w.heldGroups()).toEqual([]);
    expect(await w.foreign(10)).toEqual({ total: 0, numbers: [] });
    expect(await w.foreignEvidence('+447912345678')).toBeNull();
    expect(await w.judgement()).toMatchObject({ judgedAt: 2_000, baseline: 0, current: true, unjudged: 0 });
    await w.judgementStale(null);
    expect((await w.judgement()).current).toBe(false);
    await w.judgementCurrent();
    expect(await w.judgement()).toMatchObject({ current: true, error: null });
  });

  it('counts the records the daemon accounts for: those held, and the adds and deletions of batches in flight', async () => {
    const w = freshWindow();
    const k = new DaemonKeys(w.keys.meta.split(':')[0]!).sync('a', 'c1');
    expect(await w.accounted()).toEqual({ held: 0, adding: 0, deleting: 0 });
    await redis.hset(k.have, '+1', '{}', '+2', '{}', '+3', '{}');
    // Batches planned but not sent are not in flight: the dialer has not seen them.
    await redis.hset(k.batches, 'b1', JSON.stringify({ k: 'add', s: 'a', r: 'r', t: 1, e: [['+4', 'h', []], ['+5', 'h', []]] }),
      'b2', JSON.stringify({ k: 'del', s: 'a', r: 'r', t: 1, e: [['+1', 'id1', 'h']] }), 'b3', JSON.stringify({ k: 'add', s: 'a', r: 'r', t: 1, e: [['+6', 'h', []]] }));
    expect(await w.accounted()).toEqual({ held: 3, adding: 0, deleting: 0 });
    await redis.hset(k.inflight, 'b1', '1', 'b2', '1', 'gone', '1');
    expect(await w.accounted()).toEqual({ held: 3, adding: 2, deleting: 1 });
  });

  it('keeps call starts, and releases each number held at its cap to one caller only', async () => {
    const w = freshWindow();
    await w.saveStarts([['+13055550100', { starts: { '1@100': 100, '2@200': 200 }, record: { id: '77', seen: 2 } }]]);
    expect(await w.starts(['+13055550100', '+13055550101'])).toEqual([{ starts: { '1@100': 100, '2@200': 200 }, record: { id: '77', seen: 2 } }, null]);
    // As an older version kept them (the starts alone): read as starts, with no record.
    await w.redis.hset(w.keys.starts, '+13055550101', JSON.stringify({ '1@100': 100 }));
    expect((await w.starts(['+13055550101']))[0]).toEqual({ starts: { '1@100': 100 } });
    await w.holdCapped([['+13055550100', 5_000], ['+13055550101', 6_000], ['+13055550102', 9_000]]);
    expect(await w.capped()).toEqual({ held: 3, nextReleaseAt: 5_000 });
    expect(await w.releaseCapped(4_999)).toBe(0);
    // Three callers at once at 6,000: the two due numbers are released once in all.
    const released = await Promise.all([w.releaseCapped(6_000), w.releaseCapped(6_000), w.releaseCapped(6_000)]);
    expect(released.reduce((a, b) => a + b, 0)).toBe(2);
    expect(await w.capped()).toEqual({ held: 1, nextReleaseAt: 9_000 });
  });

  it('takes numbers out at their cap: the plan deletes them and adds them nowhere until their release marks them dirty', async () => {
    const [a, b] = twoSyncsOfOneCampaign();
    const w = new WindowState(redis, a.keys);
    await a.applyContacts([{ contact: contact('ca', ['+1', '+2']) }]);
    await b.applyContacts([{ contact: contact('cb', ['+3']) }]);
    await settle(a);
    await settle(b);
    // +1 is a's, +3 b's: each is marked dirty for the sync holding it; +9 (held by none) for the window's own sync.
    expect(await w.takeOut([['+1', 5_000], ['+3', 5_000], ['+9', 7_000]])).toBe(3);
    expect(await w.takeOut([['+1', 5_000]])).toBe(0);
    expect(await dirty(a)).toEqual(['+1', '+9']);
    expect(await dirty(b)).toEqual(['+3']);
    expect([...await w.takenOut(['+1', '+2', '+3'])]).toEqual(['+1', '+3']);
    await settle(a);
    await settle(b);
    // The campaign (both syncs') holds only +2.
    expect(Object.keys(await heldMap(a))).toEqual(['+2']);
    // Wanted again (a contact's change) while taken out: still not added.
    await a.redis.sadd(a.keys.dirty, '+1');
    await settle(a);
    expect(Object.keys(await heldMap(a))).toEqual(['+2']);
    // Its cap passes: released once (also held in the capped set: counted once), marked dirty, added again.
    await w.holdCapped([['+1', 5_000]]);
    expect(await w.releaseCapped(4_999)).toBe(0);
    expect(await w.releaseCapped(5_000)).toBe(2);
    expect([...await w.takenOut(['+1', '+3', '+9'])]).toEqual(['+9']);
    expect(await dirty(a)).toEqual(['+1', '+3']);
    await settle(a);
    expect(Object.keys(await heldMap(a)).sort()).toEqual(['+1', '+2']);
  });
});
