// The Do Not Call lists in a sync's runs: every batch of numbers a plan considers is judged by the sync's gate first
// (the plan acts on the verdicts, with the wanting contact's exemption); what it adds gets its evidence; a number a
// contact marks Do Not Call in the CRM goes on the company's list; and when a list's copy changes or an exemption ends,
// the numbers it may concern are planned again.
import type { DncGate, Judged } from '../dnc/gate.ts';
import { checkedLists, recordEvidence, type Evidence } from '../dnc/evidence.ts';
import type { PlanResult, SyncState } from '../state/sync-state.ts';
import type { MappedContact } from './contacts.ts';
import type { Logger } from 'pino';

/** What a sync's runs need of the Do Not Call lists (app.ts builds it per sync). */
export interface SyncDnc {
  gate: DncGate;
  /** Days a day's evidence is kept (doNotCallAuditDays). */
  auditDays: number;
  /** The campaign's id (the evidence names it); a route's own. */
  campaignId: string;
}

/** What the company's list records as who added a number the CRM marks Do Not Call. */
export const crmMarkBy = (syncId: string) => `sync:${syncId} (the CRM's Do Not Call mark)`;

/** The list a kept-out number is counted under: the first that holds it, or `?` and the first that cannot vouch. */
function keptOutBy(j: Judged): string {
  const listed = j.answers.find((a) => a.status === 'listed');
  if (listed) return listed.list;
  return `?${j.answers.find((a) => a.status === 'cannot-vouch')?.list ?? '?'}`;
}

/**
 * After a plan of judged numbers: the evidence of each number it added (the lists' answers and the exemption that let
 * it in), when each exemption it relied on ends (the number is planned again then), and which numbers the lists keep
 * out (status and /ops count them). Costs one transaction and a write per number added.
 */
export async function afterJudgedPlan(state: SyncState, dnc: SyncDnc, judged: readonly Judged[], result: PlanResult, now: number): Promise<void> {
  const byPhone = new Map(judged.map((j) => [j.phone, j]));
  const at = new Date(now).toISOString();
  const evidence: Evidence[] = result.added.map((a) => ({
    at, phone: a.phone, campaign: dnc.campaignId, sync: state.syncId, contact: a.contact,
    lists: checkedLists(byPhone.get(a.phone)?.answers ?? []),
    ...(a.exemption ? { exemption: a.exemption } : {}),
  }));
  const k = state.keys;
  const m = state.redis.multi();
  for (const a of result.added) if (a.until !== undefined && a.until > 0) m.zadd(k.dncExemptEnds, a.until, a.phone);
  // A number stays counted as kept out until a plan decides it otherwise: numbers a plan skipped (not dirty) keep theirs.
  const out = result.keptOut.flatMap((p) => [p, keptOutBy(byPhone.get(p)!)]);
  const clear = [...judged.filter((j) => j.verdict === 'clear').map((j) => j.phone), ...result.released, ...result.added.map((a) => a.phone)];
  if (out.length) m.hset(k.dncKeptOut, ...out);
  if (clear.length) m.hdel(k.dncKeptOut, ...clear);
  const results = await m.exec();
  const failed = results?.find(([err]) => err);
  if (failed) throw failed[0]!;
  await recordEvidence(state.redis, k, evidence, dnc.auditDays);
}

/**
 * Puts the numbers of contacts marked Do Not Call in the CRM on the company's list (a readable mark only: a value that
 * cannot be read holds the contact out, but says nothing of its wish). A number already there keeps its first record.
 */
export async function recordCrmMarks(gate: DncGate, syncId: string, contacts: readonly MappedContact[]): Promise<number> {
  const phones = [...new Set(contacts.filter((c) => c.markedDoNotCall).flatMap((c) => c.phones))];
  if (!phones.length) return 0;
  // Only those not on it yet: every full read sees the marked contacts again, and the list logs every add asked.
  const answers = await gate.company.lookup(phones);
  const missing = phones.filter((_, i) => answers[i]!.status === 'not-listed');
  return missing.length ? gate.company.add(missing, { by: crmMarkBy(syncId) }) : 0;
}

/**
 * Before a run plans: the numbers whose exemption has ended are planned again (they leave, unless the contact has a
 * new one); when the lists' copies changed since the campaign's numbers were last checked (a new copy, a change list),
 * every number the campaign holds is planned again by the sync that holds it. The first costs what ended; the second
 * the campaign's size, once per new copy (a registry is downloaded at most once a day).
 */
export async function recheckCampaign(state: SyncState, dnc: SyncDnc, log: Logger, now = Date.now()): Promise<{ ended: number; rechecked: number }> {
  const { redis, keys: k } = state;
  const ended = await redis.zrangebyscore(k.dncExemptEnds, '-inf', now, 'LIMIT', 0, 10_000);
  if (ended.length) await redis.multi().sadd(k.dirty, ...ended).zrem(k.dncExemptEnds, ...ended).exec();
  const fingerprint = await dnc.gate.fingerprint();
  if (fingerprint === null) return { ended: ended.length, rechecked: 0 };
  const seen = await redis.hget(k.meta, 'dncChecked');
  if (seen === fingerprint) return { ended: ended.length, rechecked: 0 };
  let rechecked = 0;
  // The numbers the lists kept out: a change list may have deleted them, a new copy may vouch for them now.
  let cursor = '0';
  do {
    const [next, flat] = await redis.hscan(k.dncKeptOut, cursor, 'COUNT', 1000);
    cursor = next;
    const phones = flat.filter((_, i) => i % 2 === 0);
    if (phones.length) rechecked += await redis.sadd(k.dirty, ...phones);
  } while (cursor !== '0');
  do {
    const [next, flat] = await redis.hscan(k.have, cursor, 'COUNT', 1000);
    cursor = next;
    const bySync = new Map<string, string[]>();
    for (let i = 0; i < flat.length; i += 2) {
      let sync = state.syncId;
      try { sync = (JSON.parse(flat[i + 1]!) as { s?: string }).s ?? sync; } catch { /* planned by this sync */ }
      let list = bySync.get(sync);
      if (!list) bySync.set(sync, list = []);
      list.push(flat[i]!);
    }
    for (const [sync, phones] of bySync) {
      await redis.sadd(sync === state.syncId ? k.dirty : k.dirtyOf(sync), ...phones);
      rechecked += phones.length;
    }
  } while (cursor !== '0');
  await redis.hset(k.meta, 'dncChecked', fingerprint);
  if (seen !== null || rechecked) log.info({ sync: state.syncId, rechecked, lists: fingerprint }, 'Do Not Call lists changed: every number the campaign holds is checked again');
  return { ended: ended.length, rechecked };
}

