// One sync run: webhook deliveries, then the source's pages (mapped, applied, planned page by page so pushing
// starts at once), then the plan of whatever is left dirty. A run killed at any point is resumed by the same job.
import type { RedisClient } from '../state/connection.ts';
import type { Logger } from 'pino';
import type { SyncConfig } from '../config.ts';
import type { Metrics } from '../metrics.ts';
import type { PushQueue } from '../push/push-queue.ts';
import type { CampaignWindow, Located } from '../compliance/campaign-window.ts';
import { routeFor, type Route } from '../compliance/routes.ts';
import type { PullPage, Source } from '../sources/source.ts';
import type { SourceContact } from '../sources/source.ts';
import { hashValues, mapContact, redactPhone, type MappedContact, type RecordError } from './contacts.ts';
import { storableId, type SyncState, type RunRecord } from '../state/sync-state.ts';
import type { Arrivals } from './arrivals.ts';
import { currentTraceparent, inSpan, linkActiveSpan, traceIdOf } from '../telemetry.ts';
import { Lease } from '../state/lease.ts';
import { VERDICT_MARK } from '../dnc/gate.ts';
import { afterJudgedPlan, recheckCampaign, recordCrmMarks, type SyncDnc } from './dnc-check.ts';

export interface SyncRuntime {
  config: SyncConfig;
  state: SyncState;
  source: Source;
  push: PushQueue;
  log: Logger;
  metrics: Metrics;
  /** The calling window the sync's campaign is held to (compliance), if any. */
  window?: CampaignWindow;
  /** The sync's webhook requests this process is receiving: while one is, part batches wait for it. */
  arrivals: Arrivals;
  /** How long the run's lease outlives its holder (the daemon's takeoverAfter). */
  leaseMs: number;
  /**
   * A routed sync (config `routes`): one runtime per campaign, each with its own state, calling window and push target,
   * all fed by this runtime's one read (its source, cursor, inbox and runs). This runtime then has no campaign itself.
   */
  routes?: SyncRuntime[];
  /**
   * A route of a routed sync: the sync whose read feeds it, the clocks whose callees it takes (null: any) and the
   * states (null: a route by zones alone).
   */
  route?: Route & { of: SyncRuntime };
  /**
   * The Do Not Call lists that hold the campaign's numbers (the company's own, and the registry and state lists the
   * configuration names): every number is judged by them before a plan, and its evidence kept. A routed sync's routes
   * each have their own (the campaign id differs); the routed sync's records the CRM's marks.
   */
  dnc?: SyncDnc;
}

/** The runtimes that hold a campaign's state: a routed sync's routes, or the sync itself. */
export function campaignsOf(rt: SyncRuntime): SyncRuntime[] {
  return rt.routes ?? [rt];
}

/** The route a located number goes to, or -1: none (see routeFor). */
export function routeIndex(routes: readonly SyncRuntime[], l: Located): number {
  return l.group ? routeFor(routes.map((r) => r.route!), l.group) : -1;
}

/** Numbers a run holds back between pages to fill whole batches, per campaign runtime (see plan). */
type Carry = Map<SyncRuntime, string[]>;
function carryOf(carry: Carry | undefined, rt: SyncRuntime): string[] | undefined {
  if (!carry) return undefined;
  let list = carry.get(rt);
  if (!list) carry.set(rt, list = []);
  return list;
}

/** The daemon is stopping: the run stops between two pages (everything before is applied and checkpointed). */
export class Interrupted extends Error {}

/** Another process runs the sync (its run lease is taken): this job waits `retryInMs` and asks again. */
export class RunBusy extends Error {
  readonly holder: string;
  readonly retryInMs: number;
  constructor(holder: string, retryInMs: number) {
    super(`the sync's run is held by ${holder}`);
    this.holder = holder; this.retryInMs = retryInMs;
  }
}

/**
 * Another process took the sync's run lease while this one ran: its BullMQ job lock was lost (a failover, a stalled
 * event loop) and the job was given to a worker again. This run stopped before its next act; the other goes on.
 */
export class RunStopped extends Error {}

/**
 * The member a full read or a comparison puts first in its set of ids seen: a contact id can never be it (ids have no
 * newline). A set without it was lost (expired, deleted, a Redis that forgot it): it cannot say what left.
 */
const SEEN_FROM_THE_START = '\n';

/** An inbox item: contacts a webhook delivered, ids it said were deleted, or ids it said changed (read by id). */
export interface InboxItem { c?: SourceContact[]; d?: string[]; r?: string[]; /** The delivering webhook's traceparent (tracing on). */ p?: string }

const COUNTS = ['seen', 'changed', 'left', 'invalid', 'planned', 'pushed', 'deleted', 'rejected'] as const;

/** Inbox items a drain reads at a time (a generic webhook's item may carry 10,000 contacts). */
const INBOX_CHUNK = 100;
/** Contacts a drain applies and plans together. */
const APPLY_CHUNK = 1000;
/** Contacts read by id in one CRM request, when the source does not say (HubSpot's batch read). */
const READ_BATCH = 100;

function redisOf(rt: SyncRuntime): RedisClient { return rt.state.redis; }

export async function readRun(redis: RedisClient, key: string): Promise<RunRecord | null> {
  const h = await redis.hgetall(key);
  if (!h.id) return null;
  const run: any = { ...h };
  for (const k of [...COUNTS, 'durationMs', 'startedAtMs']) if (k in h) run[k] = Number(h[k]);
  delete run.startedAtMs;
  return run as RunRecord;
}

/**
 * Plans phone numbers and queues the batches; returns how many numbers were planned. With `carry` (a run between two
 * pages of its read) only whole add batches are written: the remainder stays dirty and is carried in `carry` to the
 * next call, so a rate-limited dialer key spends each request on a full batch, not on every page's remainder.
 */
export function plan(rt: SyncRuntime, phones: string[], runId: string, carry?: string[]): Promise<number> {
  return inSpan('plan', () => ({ 'cds.sync': rt.config.id, 'cds.run': runId, 'cds.phones': phones }), async (span) => {
    const planned = await planNow(rt, phones, runId, carry);
    span?.setAttribute('cds.planned', planned);
    return planned;
  });
}

async function planNow(rt: SyncRuntime, phones: string[], runId: string, carry?: string[]): Promise<number> {
  // A campaign held Paused by its calling window takes no numbers: they stay dirty until the window opens. A number
  // at its cap (Florida: 3 calls in 24 h) is not added again until its oldest counted call ages out; one taken out at
  // its cap (a retry pending) goes to the plan, which deletes it.
  if (rt.window) {
    if (phones.length && await rt.window.closed()) {
      // Taking numbers out goes on (a Do Not Call, a contact gone or a number taken out at its cap must not wait for
      // the opening to leave: its retry could start then).
      const [holders, out] = await Promise.all([redisOf(rt).hmget(rt.state.keys.phones, ...phones), rt.window.takenOut(phones)]);
      const leaving = phones.filter((p, i) => !holders[i] || out.has(p));
      return leaving.length ? planNow({ ...rt, window: undefined }, leaving, runId) : 0;
    }
    const capped = [...await rt.window.capped(phones)];
    if (capped.length) {
      // Held only if a contact still holds it (an add or a replace): taking a number out is never a call.
      const holders = await redisOf(rt).hmget(rt.state.keys.phones, ...capped);
      const hold = new Set(capped.filter((_, i) => holders[i]));
      phones = phones.filter((p) => !hold.has(p));
    }
  }
  const max = rt.push.client.config.maxNumbersPerRequest;
  const all = carry ? [...new Set([...carry.splice(0), ...phones])] : phones;
  let planned = 0;
  let held: string[] = [];
  for (let i = 0; i < all.length; i += 1000) {
    const chunk = [...held, ...all.slice(i, i + 1000)];
    // The Do Not Call lists judge every number first (their bitmaps are in other slots than the plan's keys).
    const judged = rt.dnc ? await rt.dnc.gate.judge(chunk) : null;
    const now = rt.dnc?.gate.now() ?? Date.now();
    const r = await rt.state.plan(chunk, rt.config.onLeave, max, runId, carry !== undefined, currentTraceparent(), rt.config.ownsCampaign,
      judged?.map((j) => VERDICT_MARK[j.verdict]), now);
    // Queued first: a batch written but not queued waits for the next run's resumeBatches (a failover cutting the
    // evidence's write must not leave it there).
    await rt.push.enqueue(rt.config.id, r.batchIds);
    if (judged) await afterJudgedPlan(rt.state, rt.dnc!, judged, r, now);
    planned += r.planned;
    held = r.held;
  }
  carry?.push(...held);
  if (planned) await redisOf(rt).hincrby(rt.state.keys.run(runId), 'planned', planned);
  return planned;
}

/**
 * Whether more work for the sync is known to be coming, so that what does not fill a batch may wait for it: a webhook
 * this process is receiving (its end releases what waits), webhook deliveries in the inbox beyond the first
 * `inboxTaken` (each queued a run), or a read someone asked for (a run is queued). Never a guess, never a timer.
 */
async function moreComing(campaign: SyncRuntime, inboxTaken = 0): Promise<boolean> {
  // A route's work comes through the routed sync's inbox and reads.
  const rt = campaign.route?.of ?? campaign;
  const { keys } = rt.state;
  // A source that does not pull reads nothing more when asked to (and its runs leave compareWanted as it is).
  const [inbox, flags] = await Promise.all([
    rt.state.redis.llen(keys.inbox), rt.source.pulls ? rt.state.redis.hmget(keys.meta, 'pullWanted', 'fullRequested', 'compareWanted') : [],
  ]);
  return inbox > inboxTaken || flags.some((f) => f !== null) || rt.arrivals.hold();
}

/**
 * Whether a batch of the sync is open (planned, its answer not yet recorded): recording it plans what is dirty again
 * (PushTarget.afterBatch), so a part batch may wait for it instead of queuing behind it as a request of its own.
 */
async function sending(rt: SyncRuntime): Promise<boolean> {
  const own = new RegExp(`^${rt.config.id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.\\d+$`);
  // Batch ids only (their entries are not read): the open batches of the campaign, few beside its numbers.
  return (await rt.state.redis.hkeys(rt.state.keys.batches)).some((id) => own.test(id));
}

/**
 * Plans every dirty phone number of the sync in whole batches, then whatever is left, unless `wholeOnly` (a run
 * still reading will plan the rest at its end), more is known to be coming (see moreComing) or a batch of the sync
 * is being sent (see sending): a burst of webhooks then reaches the dialer in whole batches, and a lone webhook goes
 * at once.
 */
export async function planDirty(rt: SyncRuntime, runId: string, wholeOnly = false): Promise<number> {
  if (rt.routes) {
    let planned = 0;
    for (const route of rt.routes) planned += await planDirty(route, runId, wholeOnly);
    return planned;
  }
  const redis = redisOf(rt);
  let cursor = '0';
  let planned = 0;
  const carry: string[] = [];
  do {
    const [next, members] = await redis.sscan(rt.state.keys.dirty, cursor, 'COUNT', 1000);
    cursor = next;
    planned += await plan(rt, members, runId, carry);
  } while (cursor !== '0');
  if (wholeOnly || !carry.length) return planned;
  if (await moreComing(rt) || await sending(rt)) {
    rt.log.debug({ sync: rt.config.id, held: carry.length }, 'part batch held: more is coming');
    return planned;
  }
  return planned + (await plan(rt, carry, runId));
}

/**
 * Queues batches that a plan wrote but never queued (its process died in between), and retries batches whose job
 * failed. Always safe, even beside a live planner: the job id is the batch id, so queuing twice adds one job, and a
 * batch is deleted (when its answer is recorded) before its job completes.
 */
export async function resumeBatches(rt: SyncRuntime): Promise<number> {
  if (rt.routes) {
    let resumed = 0;
    for (const route of rt.routes) resumed += await resumeBatches(route);
    return resumed;
  }
  let resumed = 0;
  for await (const page of rt.state.scanBatches()) {
    for (const [id, b] of page) {
      if (b.syncId !== rt.config.id) continue;
      const job = await rt.push.queue.getJob(id);
      if (!job) { await rt.push.enqueue(rt.config.id, [id]); resumed++; }
      else if (await job.isFailed()) { await job.retry(); resumed++; }
    }
  }
  if (resumed) rt.log.info({ sync: rt.config.id, resumed }, 'queued batches left open by an earlier plan');
  return resumed;
}

/**
 * Rebuilds what the daemon believes the campaign holds from the campaign itself. A number it had no record of is the
 * sync's only when an open add batch of the sync claims it (a push whose answer was lost); any other (there before
 * this sync existed, or added by another key, the console, an upload or n8n) is recorded as not added by the daemon and
 * kept as it is, unless the sync owns the campaign (ownsCampaign). Numbers gone from the campaign are forgotten and
 * planned again.
 */
export async function reconcileCampaign(rt: SyncRuntime): Promise<{ adopted: number; updated: number; found: number; forgotten: number; numbers: number }> {
  const started = Date.now();
  const seen = new Set<string>();
  let chunk: [string, string, string][] = [];
  let adopted = 0, updated = 0, found = 0;
  const flush = async () => {
    const r = await rt.state.reconcile(started, chunk);
    adopted += r.adopted; updated += r.updated; found += r.found; chunk = [];
  };
  for await (const page of rt.push.scanNumbers(rt.config.campaignId)) {
    for (const n of page) {
      seen.add(n.number);
      chunk.push([n.number, String(n.id), heldHash(n)]);
    }
    if (chunk.length >= 500) await flush();
  }
  if (chunk.length) await flush();
  let forgotten = 0;
  for await (const page of rt.state.scanHeld()) {
    // The script checks again, atomically, that each is still this sync's, older than the scan and unclaimed.
    forgotten += await rt.state.forget(started, page.filter(([phone, h]) => h.syncId === rt.config.id && h.recordedAt < started && !seen.has(phone)).map(([phone]) => phone));
  }
  const others = await rt.state.redis.hlen(rt.state.keys.others);
  rt.log.info({ sync: rt.config.id, campaign: rt.config.campaignId, numbers: seen.size, adopted, updated, found, forgotten, notThisSyncs: others, ms: Date.now() - started },
    others ? `reconciled with the campaign: ${others} of its numbers were not added by this sync and ${rt.config.ownsCampaign ? 'are taken as its own (ownsCampaign)' : 'are kept as they are'}`
      : 'reconciled with the campaign');
  return { adopted, updated, found, forgotten, numbers: seen.size };
}

/** The hash a campaign's number record is held with: of its variables, or '?' for a server that does not list them. */
export function heldHash(n: { varValues?: unknown }): string {
  return Array.isArray(n.varValues) ? hashValues(n.varValues as string[]) : '?';
}

/** Whether a start's run reads the campaign first (its first run, or a batch's answer was lost since). */
export async function reconcileDue(rt: SyncRuntime, campaign: SyncRuntime): Promise<boolean> {
  const [fullDone, flagged] = await Promise.all([rt.state.redis.hget(rt.state.keys.meta, 'fullDone'), rt.state.redis.hget(campaign.state.keys.meta, 'reconcile')]);
  return !fullDone || flagged !== null;
}

interface PageCounts { seen: number; changed: number; left: number; invalid: number }

/** The page's contacts that can be stored, mapped; the record errors of the others (and of the page's own). */
export function mapPage(rt: SyncRuntime, page: PullPage): { mapped: [SourceContact, MappedContact][]; errors: RecordError[] } {
  const errors: RecordError[] = (page.errors ?? []).map((e) => ({ contactId: e.contactId ?? '', line: e.line, field: e.field ?? '', value: e.value ?? '', reason: e.reason, code: 'bad_record' }));
  const mapped: [SourceContact, MappedContact][] = [];
  for (const c of page.contacts) {
    if (!storableId(c.id)) {
      errors.push({ contactId: c.id.slice(0, 50), line: c.line, field: 'id', value: '', reason: 'id is empty, too long, or has a comma or newline', code: 'bad_record' });
      continue;
    }
    const { contact, errors: e } = mapContact(c, rt.config.mapping);
    errors.push(...e);
    if (contact) mapped.push([c, contact]);
  }
  return { mapped, errors };
}

/** A number kept out of every campaign for where its callee is (no zone: no_window; a routed sync's no route: no_route). */
function placeError(rt: SyncRuntime, c: SourceContact, l: Located, code: 'no_window' | 'no_route', reason: string): RecordError {
  return { contactId: c.id, line: c.line, field: rt.config.mapping.phone.join(','), value: redactPhone(l.phone), reason: `${reason}: ${l.evidence}`, code };
}

/**
 * The contact's location fields the rules cannot read, each a record error (once per contact, from the numbers it
 * still has): its numbers are not kept out, but held to the strictest window the rest of its evidence allows.
 */
function unreadErrors(c: SourceContact, located: readonly Located[]): RecordError[] {
  const unread = located.find((l) => l.unread)?.unread ?? [];
  return unread.map((u) => ({
    contactId: c.id, line: c.line, field: u.field, value: u.value, code: 'unread_evidence',
    reason: `${u.said}: the callee may be elsewhere, so it is held to the window every other piece of its evidence allows (${located.map((l) => `${redactPhone(l.phone)}: ${l.group ? l.group.key : 'no window'}`).join('; ')})`,
  }));
}

/** Records an applied page in its run: the ids a full read saw, the record errors, the counts and their metrics. */
async function countPage(rt: SyncRuntime, runId: string, page: PullPage, seenKey: string | null, errors: RecordError[], changed: number, left: number): Promise<PageCounts> {
  const redis = redisOf(rt);
  if (seenKey && page.contacts.length) {
    await redis.multi().sadd(seenKey, ...page.contacts.map((c) => c.id)).expire(seenKey, 2 * 86_400).exec();
  }
  await rt.state.recordErrors(runId, errors);
  const counts = { seen: page.contacts.length, changed, left, invalid: errors.length };
  await redis.multi().hincrby(rt.state.keys.run(runId), 'seen', counts.seen).hincrby(rt.state.keys.run(runId), 'changed', counts.changed)
    .hincrby(rt.state.keys.run(runId), 'left', counts.left).exec();
  rt.metrics.contactsSeen.inc({ sync: rt.config.id }, counts.seen);
  rt.metrics.contactsChanged.inc({ sync: rt.config.id }, counts.changed);
  if (counts.invalid) rt.metrics.invalid.inc({ sync: rt.config.id }, counts.invalid);
  return counts;
}

/**
 * Where a mapped contact's numbers may go, as a run decides it (and the dry run with it): with a calling window, a number
 * whose callee cannot be placed in any zone has no window and never enters the campaign (a record error); one outside
 * the sync's compliance.zones is another sync's, left out without an error.
 */
export function placeContact(rt: SyncRuntime, c: SourceContact, contact: MappedContact): { phones: string[]; located: Located[]; errors: RecordError[] } {
  if (!rt.window) return { phones: contact.phones, located: [], errors: [] };
  const where = rt.window.locate(c.fields, contact.phones).filter((l) => !l.elsewhere);
  const errors = [...unreadErrors(c, where), ...where.filter((l) => !l.group).map((l) => placeError(rt, c, l, 'no_window', 'no calling window'))];
  return { phones: where.filter((l) => l.group).map((l) => l.phone), located: where, errors };
}

/**
 * A routed sync's contact: the numbers each route takes (the route whose zones hold all of the callee's zones), and a
 * record error for each number in no route (or with no window).
 */
export function routeContact(rt: SyncRuntime, routes: readonly SyncRuntime[], c: SourceContact, contact: MappedContact): { located: Located[][]; errors: RecordError[] } {
  const located = routes.map((): Located[] => []);
  // Every route has the sync's rule set: any of them places the callee.
  const where = routes[0]!.window!.locate(c.fields, contact.phones);
  const errors = unreadErrors(c, where);
  for (const l of where) {
    const i = routeIndex(routes, l);
    if (i >= 0) located[i]!.push(l);
    else errors.push(l.group ? placeError(rt, c, l, 'no_route', 'in no route: no route holds all of its callee\'s zones') : placeError(rt, c, l, 'no_window', 'no calling window'));
  }
  return { located, errors };
}

/** Maps, applies and plans one page (in whole batches when given a `carry`, see plan); returns its counts. */
async function applyPage(rt: SyncRuntime, runId: string, page: PullPage, seenKey: string | null, carry?: Carry): Promise<PageCounts> {
  if (rt.routes) return applyRoutedPage(rt, rt.routes, runId, page, seenKey, carry);
  const { mapped, errors } = mapPage(rt, page);
  if (rt.dnc) await recordCrmMarks(rt.dnc.gate, rt.config.id, mapped.map(([, c]) => c));
  const changes: ({ contact: MappedContact } | { deleted: string })[] = [];
  const phones = new Set<string>();
  const located: Located[] = [];
  for (const [c, contact] of mapped) {
    const placed = placeContact(rt, c, contact);
    errors.push(...placed.errors);
    located.push(...placed.located);
    contact.phones = placed.phones;
    changes.push({ contact });
    for (const p of contact.phones) phones.add(p);
  }
  for (const id of page.left ?? []) changes.push({ deleted: id });
  // Their groups first: a number from a group whose window is closed pauses the campaign before it can be planned.
  if (rt.window) await rt.window.admit(located);
  const applied = await rt.state.applyContacts(changes);
  const counts = await countPage(rt, runId, page, seenKey, errors, applied.changed, applied.removed);
  await plan(rt, [...phones], runId, carryOf(carry, rt));
  return counts;
}

/**
 * A routed sync's page: each contact is mapped and located once, and each of its numbers goes to the route whose zones
 * hold all of its callee's zones; every route gets the contact with its own numbers, or as deleted when it has none
 * of them there (a contact whose number moved to another group leaves the old route's campaign). A number in no
 * route is a record error (no_route). The page's counts are the sync's; a contact split over routes counts once per
 * campaign it changed in, and leaving a campaign for another is no change of its own.
 */
async function applyRoutedPage(rt: SyncRuntime, routes: SyncRuntime[], runId: string, page: PullPage, seenKey: string | null, carry?: Carry): Promise<PageCounts> {
  const { mapped, errors } = mapPage(rt, page);
  if (routes[0]?.dnc) await recordCrmMarks(routes[0].dnc.gate, rt.config.id, mapped.map(([, c]) => c));
  const per = routes.map(() => ({ changes: [] as ({ contact: MappedContact } | { deleted: string })[], phones: new Set<string>(), located: [] as Located[] }));
  for (const [c, contact] of mapped) {
    const routed = routeContact(rt, routes, c, contact);
    errors.push(...routed.errors);
    routed.located.forEach((located, i) => {
      const to = per[i]!;
      if (!located.length) { to.changes.push({ deleted: c.id }); return; }
      to.changes.push({ contact: { ...contact, phones: located.map((l) => l.phone) } });
      to.located.push(...located);
      for (const l of located) to.phones.add(l.phone);
    });
  }
  const left = (page.left ?? []).map((id) => ({ deleted: id }));
  let changed = 0, removed = 0;
  for (const [i, route] of routes.entries()) {
    const to = per[i]!;
    // Their groups first: a number from a group whose window is closed pauses the campaign before it can be planned.
    await route.window!.admit(to.located);
    changed += (await route.state.applyContacts(to.changes)).changed;
    removed += (await route.state.applyContacts(left)).removed;
  }
  const counts = await countPage(rt, runId, page, seenKey, errors, changed, removed);
  for (const [i, route] of routes.entries()) await plan(route, [...per[i]!.phones], runId, carryOf(carry, route));
  return counts;
}

/**
 * Contacts held but not seen by a full read or a comparison have left the selection. A set of ids seen that lost its
 * first member was lost: nothing is taken out (null), and the comparison's next tick compares again.
 */
async function sweep(rt: SyncRuntime, runId: string, seenKey: string, fence: Fence): Promise<number | null> {
  const redis = redisOf(rt);
  if (!(await redis.sismember(seenKey, SEEN_FROM_THE_START))) {
    rt.log.error({ sync: rt.config.id, run: runId }, 'the run\'s record of the contacts it read was lost: none is taken for gone; the next comparison decides what left');
    return null;
  }
  let left = 0;
  // A routed sync's read decides for each of its campaigns: a contact a route holds and the read did not see left it.
  for (const campaign of campaignsOf(rt)) {
    let cursor = '0';
    do {
      await fence.check();
      const [next, flat] = await redis.hscan(campaign.state.keys.contacts, cursor, 'COUNT', 1000);
      cursor = next;
      const ids = flat.filter((_, i) => i % 2 === 0);
      if (!ids.length) continue;
      const present = await redis.smismember(seenKey, ...ids);
      const gone = ids.filter((_, i) => !present[i]);
      if (gone.length) left += (await applyPage(campaign, runId, { contacts: [], left: gone }, null)).left;
    } while (cursor !== '0');
  }
  return left;
}

/**
 * Applies what the webhooks delivered, oldest first: the contacts they carried and the deletions they named, many
 * deliveries together, planned in whole batches only (the run's final plan sends the rest); the contacts they named
 * are read by id together, in the CRM's batches. Ids short of a batch wait while more is coming: their deliveries stay
 * at the inbox's head for the next run (re-applying a delivery changes nothing, by hash).
 */
async function drainInbox(rt: SyncRuntime, runId: string, signal?: AbortSignal): Promise<void> {
  const redis = redisOf(rt);
  const key = rt.state.keys.inbox;
  const readBatch = rt.source.readBatch ?? READ_BATCH;
  const carry: Carry = new Map();
  const reads = new Set<string>();
  /** Deliveries at the inbox's head that are applied, their reads (if any) not yet done. */
  let taken = 0;
  const read = async () => {
    // The contacts the webhooks named, read by id together (a storm of events about one contact is one read).
    if (reads.size && rt.source.read) {
      for await (const page of rt.source.read([...reads], signal)) await applyPage(rt, runId, page, null, carry);
    }
    reads.clear();
    // Applying is idempotent (by hash): deliveries applied twice after a crash here change nothing.
    await redis.ltrim(key, taken, -1);
    taken = 0;
  };
  for (;;) {
    const items = await redis.lrange(key, taken, taken + INBOX_CHUNK - 1);
    if (!items.length) break;
    let page: PullPage = { contacts: [], left: [] };
    for (const raw of items) {
      const item = JSON.parse(raw) as InboxItem;
      // A delivery taken by a run its webhook did not queue (runs coalesce): the run's span links to the webhook's.
      if (item.p) linkActiveSpan(item.p);
      page.contacts.push(...item.c ?? []);
      page.left!.push(...item.d ?? []);
      if (page.contacts.length + page.left!.length >= APPLY_CHUNK) {
        await applyPage(rt, runId, page, null, carry);
        page = { contacts: [], left: [] };
      }
      for (const id of item.r ?? []) reads.add(id);
    }
    if (page.contacts.length || page.left!.length) await applyPage(rt, runId, page, null, carry);
    taken += items.length;
    if (reads.size >= readBatch || !reads.size) await read();
  }
  if (!taken) return;
  if (reads.size && rt.source.read && await moreComing(rt, taken)) {
    rt.log.debug({ sync: rt.config.id, ids: reads.size }, 'reads short of a batch held: more is coming');
    return;
  }
  await read();
}

/**
 * Runs one sync; `runId` is the job's id, so a resumed job continues the same run. One process at a time runs a sync,
 * whatever BullMQ's job locks say: a failover or a stalled event loop can lose a job's lock and give the job to a second
 * worker while the first goes on, and two runs of one full read would each take the other's half for contacts that
 * left. The run holds the sync's lease (taken durably, renewed before each page and each removal), or throws RunBusy.
 */
export async function runSync(rt: SyncRuntime, runId: string, trigger: string, signal?: AbortSignal): Promise<RunRecord> {
  const lease = new Lease(rt.state.redis, rt.state.keys.runLease, rt.leaseMs, rt.state.acks);
  const other = await lease.take();
  if (other) throw new RunBusy(other.holder, other.lapsesInMs);
  const kept = lease.keepRenewed();
  const fence: Fence = {
    lost: kept.lost,
    check: async () => { if (kept.lost.aborted || !(await lease.renew())) throw new RunStopped('another process took the sync\'s run'); },
  };
  try {
    return await inSpan('sync run', () => ({ 'cds.sync': rt.config.id, 'cds.run': runId, 'cds.trigger': trigger }), () => runSyncNow(rt, runId, trigger, fence, signal),
      { root: !CONTINUES_ITS_TRACE.has(trigger) });
  } finally {
    kept.stop();
    await lease.release().catch(() => {});
  }
}

/** The run's lease: `check` throws RunStopped once another process holds it; `lost` aborts then (a renewal found it). */
interface Fence { lost: AbortSignal; check(): Promise<void> }

/**
 * Runs that belong to the trace that asked for them (a webhook's change, a command, an operator's retry). The others
 * (a schedule, a comparison, the calling window opening, the first run, a Redis restart) are asked for by a BullMQ
 * job scheduler's chain or by a start, whose trace would otherwise hold every run for ever: each starts a trace of
 * its own, linked to what asked.
 */
const CONTINUES_ITS_TRACE = new Set(['webhook', 'command line', 'operator retry']);

async function runSyncNow(rt: SyncRuntime, runId: string, trigger: string, fence: Fence, signal?: AbortSignal): Promise<RunRecord> {
  const redis = redisOf(rt);
  const { keys } = rt.state;
  const runKey = keys.run(runId);
  let run = await readRun(redis, runKey);
  // A job given to a worker again after its run ended (its lock was lost before it could complete): nothing to do.
  if (run?.status === 'done') {
    rt.log.info({ sync: rt.config.id, run: runId }, 'run already done: its job was taken again after its lock was lost');
    return run;
  }
  if (!run) {
    const meta = await redis.hgetall(keys.meta);
    const full = meta.fullRequested === '1' || !meta.fullDone || rt.source.kind === 'csv';
    // A run reads the source when something asked for a read (a schedule, a command, a webhook that names no
    // contact) or a comparison; a run queued only by webhooks whose contacts are read by id reads just those.
    const mode = !rt.source.pulls ? 'plan' : full ? 'full' : meta.compareWanted ? 'compare' : meta.pullWanted ? 'incremental' : 'inbox';
    const now = Date.now();
    const fields: Record<string, string | number> = { id: runId, sync: rt.config.id, trigger, mode, status: 'running', startedAt: new Date(now).toISOString(), startedAtMs: now };
    for (const c of COUNTS) fields[c] = 0;
    // The trace the run started in (/ops links it); a resumed run keeps it.
    const traceId = traceIdOf(currentTraceparent());
    if (traceId) fields.traceId = traceId;
    await redis.multi().hset(runKey, fields).expire(runKey, 30 * 86_400).lpush(keys.runs, runId).ltrim(keys.runs, 0, 99)
      .hdel(keys.meta, 'fullRequested', 'pullWanted', ...(mode === 'plan' || mode === 'inbox' ? [] : ['compareWanted'])).exec();
    run = (await readRun(redis, runKey))!;
  }
  const startedAtMs = Number(await redis.hget(runKey, 'startedAtMs'));
  const started = performance.now();
  const log = rt.log.child({ sync: rt.config.id, run: runId });
  log.info({ mode: run.mode, trigger }, 'run started');
  try {
    const meta = await redis.hgetall(keys.meta);
    // (A route's reconcile flag is its own: its campaign's batches set it.)
    for (const campaign of campaignsOf(rt)) {
      if (await reconcileDue(rt, campaign)) {
        await reconcileCampaign(campaign);
        await redis.hdel(campaign.state.keys.meta, 'reconcile');
      }
      // A sync that owns its campaign alone takes over the numbers no sync added: each is planned once, and its first
      // plan makes it the sync's (plan-10.lua), so this costs what is left to take over, not the campaign's size.
      if (campaign.config.ownsCampaign) {
        const others = await redis.hkeys(campaign.state.keys.others);
        for (let i = 0; i < others.length; i += 1000) await redis.sadd(campaign.state.keys.dirty, ...others.slice(i, i + 1000));
      }
      // Exemptions that ended, and lists whose copy changed since the campaign's numbers were checked: planned again.
      if (campaign.dnc) await recheckCampaign(campaign.state, campaign.dnc, log, campaign.dnc.gate.now());
    }
    // Parked records are retried by every run that reads the source, not by the runs webhooks queue: those come
    // with every change, and retrying every parked number for each would make a webhook cost the parked count.
    // A source that does not pull (generic webhooks) plans every run; the runs its webhooks queue skip the retry too.
    if (run.mode !== 'inbox' && !(run.mode === 'plan' && run.trigger === 'webhook')) {
      for (const { state: { keys: k } } of campaignsOf(rt)) {
        const parked = await redis.hkeys(k.parked);
        for (let i = 0; i < parked.length; i += 1000) await redis.sadd(k.dirty, ...parked.slice(i, i + 1000));
      }
    }
    await resumeBatches(rt);
    await drainInbox(rt, runId, signal);
    if (rt.source.pulls && run.mode !== 'inbox') {
      const full = run.mode === 'full';
      const compare = run.mode === 'compare';
      const seenKey = full || compare ? keys.seen(runId) : null;
      let resume = meta.resumeRun === runId ? meta.resume ?? null : null;
      if (seenKey) {
        // The set of ids seen decides what left: a resumed read whose set is gone reads from the start again.
        if (resume && !(await redis.sismember(seenKey, SEEN_FROM_THE_START))) {
          log.warn('the run\'s record of the contacts it read is gone (expired or lost): it reads the selection from the start');
          resume = null;
        }
        if (!resume) await redis.multi().del(seenKey).sadd(seenKey, SEEN_FROM_THE_START).expire(seenKey, 2 * 86_400).exec();
      }
      const pages = rt.source.pull({
        full, compare, since: meta.cursor ? Number(meta.cursor) : null, resume,
        position: meta.sourcePosition ?? null,
        savePosition: async (position) => { await redis.hset(keys.meta, 'sourcePosition', position); },
        checkpoint: async (position) => { await redis.hset(keys.meta, 'resume', position, 'resumeRun', runId); },
        signal: signal ? AbortSignal.any([signal, fence.lost]) : fence.lost,
        known: async (ids) => {
          const known = new Set<string>();
          if (!ids.length) return known;
          for (const campaign of campaignsOf(rt)) {
            const held = await redis.hmget(campaign.state.keys.contacts, ...ids);
            ids.forEach((id, i) => { if (held[i] !== null) known.add(id); });
          }
          return known;
        },
      });
      // Numbers short of a whole batch wait for the next page; they stay dirty, so planDirty below (or, after a
      // crash, the resumed run's) plans them.
      const carry: Carry = new Map();
      for await (const page of pages) {
        // Checked before applying: by now the source has checkpointed every page applied so far.
        if (signal?.aborted) throw new Interrupted('the daemon is stopping');
        await fence.check();
        const counts = await applyPage(rt, runId, page, seenKey, carry);
        log.debug(counts, 'page applied');
        if (seenKey && page.present?.length) {
          await redis.multi().sadd(seenKey, ...page.present).expire(seenKey, 2 * 86_400).exec();
        }
      }
      const swept = seenKey ? await sweep(rt, runId, seenKey, fence) : null;
      await fence.check();
      const done = redis.multi().hset(keys.meta, 'cursor', startedAtMs, 'fullDone', '1').hdel(keys.meta, 'resume', 'resumeRun');
      // A full read compares too: a comparison asked for meanwhile is done (the schedule's first tick fires at once).
      // One whose record of the ids it read was lost did not compare: the comparison's next tick does.
      if (swept !== null) done.hset(keys.meta, 'lastCompareAt', startedAtMs).hdel(keys.meta, 'compareWanted');
      await done.exec();
      if (seenKey) await redis.del(seenKey);
    } else {
      await redis.hset(keys.meta, 'fullDone', '1');
    }
    await planDirty(rt, runId);
    const durationMs = Math.round(performance.now() - started);
    await redis.hset(runKey, 'status', 'done', 'endedAt', new Date().toISOString(), 'durationMs', durationMs);
    rt.metrics.runSeconds.observe({ sync: rt.config.id, mode: run.mode }, durationMs / 1000);
    const done = (await readRun(redis, runKey))!;
    log.info({ seen: done.seen, changed: done.changed, left: done.left, invalid: done.invalid, planned: done.planned, durationMs }, 'run done');
    return done;
  } catch (err) {
    if (err instanceof RunStopped || fence.lost.aborted) {
      // The run is another process's now: its record is left to that one.
      log.warn({ err: (err as Error).message }, 'run stopped: another process took the sync\'s run (this one\'s job lock was lost)');
      throw err instanceof RunStopped ? err : new RunStopped((err as Error).message);
    }
    const interrupted = err instanceof Interrupted || (signal?.aborted ?? false);
    if (interrupted) {
      await redis.hset(runKey, 'status', 'running', 'interruptedAt', new Date().toISOString());
      log.info('run interrupted by shutdown; it resumes from its checkpoint');
      throw err instanceof Interrupted ? err : new Interrupted((err as Error).message);
    }
    await redis.hset(runKey, 'status', 'failed', 'error', (err as Error).message, 'endedAt', new Date().toISOString(),
      'durationMs', Math.round(performance.now() - started));
    log.error({ err: (err as Error).message }, 'run failed');
    throw err;
  }
}
