// What `status` and the operations page show of a sync: its last runs and their record errors, what it holds, its
// parked records (and of them those waiting for the calling window), its mirror's lag.
import type { ListHealth } from '../dnc/gate.ts';
import { redactPhone, type RecordError } from './contacts.ts';
import { campaignsOf, readRun, type SyncRuntime } from './run.ts';
import type { NumberState, RunRecord } from '../state/sync-state.ts';
import type { WindowStatus } from '../compliance/campaign-window.ts';
import { rulesStatus, type RulesStatus } from '../compliance/in-force.ts';
import { traceIdOf, viewerLink } from '../telemetry.ts';
import { refusalOf, type Refusal } from '../check/refusals.ts';
import { WAITING_FOR_WINDOW } from '../push/push-queue.ts';

export interface SyncStatus {
  /** campaignId: '' for a routed sync (its campaigns are its routes'). */
  sync: string; source: string; campaignId: string;
  /** `numbers`, `openBatches` and `doNotCall` are the campaign's (shared by every sync feeding it); the rest are the sync's. */
  contacts: number; numbers: number; dirty: number; openBatches: number; parked: number;
  /** Phone numbers held out of the campaign because a contact holding them is marked Do Not Call. */
  doNotCall: number;
  /**
   * Numbers the campaign holds that no sync of the daemon added (there before the sync's first run, or added by another
   * key, the console, an upload or n8n): kept as they are unless the sync owns the campaign (`ownsCampaign`).
   */
  notThisSyncs: number;
  /** The sync owns its campaign alone (`ownsCampaign`): the numbers no sync added are taken as its own. */
  ownsCampaign: boolean;
  /**
   * The Do Not Call lists that hold the sync's numbers (the company's own first): each copy's date and age against its
   * limit, or why it cannot vouch, and how many numbers a contact wants that each keeps out of the campaign; `waiting`
   * counts those kept out because a list cannot vouch for them (they go in once a copy can). `off`: why no registry or
   * state list holds the sync.
   */
  doNotCallLists: { off: string | null; lists: (ListHealth & { keptOut: number })[]; waiting: number };
  /**
   * Numbers the dialer refused (409) because the calling window had paused the campaign: parked until the window opens
   * and a run sends them ("waiting for the window: N"). A routed sync's is the sum of its routes'.
   */
  waitingForWindow: number;
  /**
   * Webhook deliveries waiting in the sync's inbox for a run (a burst drains through it), and the sync's webhook
   * requests this process is receiving at this moment.
   */
  inbox: number; receiving: number;
  runs: RunRecord[];
  /** `traceId`: the trace of the push that parked it (tracing on), for /ops to link. */
  parkedRecords: { phone: string; contactId: string | null; reason: string; code: string; at: string; traceId: string | null }[];
  /**
   * The record errors of the runs shown, newest run first: contacts a run refused before sending anything of them (a
   * number that cannot be dialed, a variable over the API's limit), with the reason. Values are already masked.
   */
  recordErrors: (RecordError & { run: string })[];
  /**
   * When the whole selection was last compared with what the sync holds (a full read or the scheduled comparison
   * that finds contacts gone without a webhook), and how often it is; null: never / not compared (no CRM source).
   */
  lastCompareAt: string | null; compareEvery: number | null;
  /** What the mirror (call-detail records back to the CRM) last reported; null before it ran. */
  mirror: MirrorStatus | null;
  /** Whether the calling-window rules hold the sync, which (federal, state rows, operator window, evidence), or off and why. */
  rules: RulesStatus;
  /**
   * Why the sync is refused (it adds no numbers): what its checks found would make a rule fail open, each with its
   * fix; null when it is not (check/refusals.ts).
   */
  refused: Refusal | null;
  /**
   * The calling window (compliance), null without one: the campaign state the daemon set, the next edge, the window
   * groups, numbers held by the window (waiting while it is closed: `dirty`) and by caps, calls inside and outside.
   */
  window: (WindowStatus & { heldByWindow: number }) | null;
  /**
   * A routed sync's campaigns (null: not routed), each with what it holds and its own window; the sync's counts above
   * are their sums (a contact split over two routes is counted in each).
   */
  routes: RouteStatus[] | null;
}

export interface RouteStatus {
  /** The route's id (`<sync>@<campaign>`), as its batches and push jobs name it. */
  id: string; campaignId: string; zones: string[]; states: string[];
  contacts: number; numbers: number; dirty: number; openBatches: number; parked: number; doNotCall: number; notThisSyncs: number;
  /** As the sync's: numbers refused while the window paused this campaign, waiting for it to open. */
  waitingForWindow: number;
  window: (WindowStatus & { heldByWindow: number }) | null;
  /** The route's mirror (its campaign's call-detail records), null without one or before it ran. */
  mirror: MirrorStatus | null;
}

/** The parked numbers of one campaign runtime that wait for its window to open (one pass over the parked records). */
async function waitingForWindow(rt: SyncRuntime): Promise<number> {
  let n = 0;
  for await (const page of rt.state.scanParked()) for (const [, p] of page) if (p.code === WAITING_FOR_WINDOW) n++;
  return n;
}

/** What one campaign runtime holds (a sync's own, or one route's). */
async function holdings(rt: SyncRuntime): Promise<Omit<RouteStatus, 'id' | 'campaignId' | 'zones' | 'states' | 'window' | 'mirror' | 'waitingForWindow'>> {
  const { redis, keys } = rt.state;
  const [contacts, numbers, dirty, openBatches, parked, doNotCall, notThisSyncs] = await Promise.all([
    redis.hlen(keys.contacts), redis.hlen(keys.have), redis.scard(keys.dirty), redis.hlen(keys.batches), redis.hlen(keys.parked), redis.hlen(keys.doNotCall),
    redis.hlen(keys.others),
  ]);
  return { contacts, numbers, dirty, openBatches, parked, doNotCall, notThisSyncs };
}

export interface MirrorStatus {
  lagMs: number | null; mirrored: number | null; parked: number | null; lastRecordAt: string | null;
  /** A mirror that writes no activity (`sink: none`, or given to a sync under the state rows for their caps): `mirrored` counts calls read. */
  countsOnly: boolean;
}

function readMirror(raw: Record<string, string>, rt: SyncRuntime): MirrorStatus | null {
  if (!Object.keys(raw).length) return null;
  const num = (v: string | undefined) => (v !== undefined && v !== '' && Number.isFinite(Number(v)) ? Number(v) : null);
  return { lagMs: num(raw.lagMs), mirrored: num(raw.mirrored), parked: num(raw.parked), lastRecordAt: raw.lastRecordAt || null, countsOnly: rt.config.mirror?.sink.type === 'none' };
}

/** The sync's Do Not Call lists and what they keep out of its campaigns (see SyncStatus.doNotCallLists). */
async function listsStatus(rt: SyncRuntime): Promise<SyncStatus['doNotCallLists']> {
  const campaigns = campaignsOf(rt);
  const gate = campaigns[0]?.dnc?.gate;
  if (!gate) return { off: rt.config.dnc?.off ?? null, lists: [], waiting: 0 };
  const health = await gate.health();
  const kept = new Map<string, number>();
  let waiting = 0;
  // Costs what the lists keep out (one read of each campaign's record of them).
  for (const c of campaigns) {
    for (const list of await rt.state.redis.hvals(c.state.keys.dncKeptOut)) {
      if (list.startsWith('?')) { waiting++; continue; }
      kept.set(list, (kept.get(list) ?? 0) + 1);
    }
  }
  return { off: gate.off ?? null, lists: health.map((h) => ({ ...h, keptOut: kept.get(h.list) ?? 0 })), waiting };
}

export async function syncStatus(rt: SyncRuntime, runs = 10, parked = 20, errors = 20): Promise<SyncStatus> {
  const { redis, keys } = rt.state;
  const [inbox, runIds, mirror] = await Promise.all([redis.llen(keys.inbox), redis.lrange(keys.runs, 0, runs - 1), redis.hgetall(keys.mirror.meta)]);
  const routes = rt.routes ? await Promise.all(rt.routes.map(async (r): Promise<RouteStatus> => {
    const h = await holdings(r);
    return { id: r.config.id, campaignId: r.config.campaignId, zones: [...r.route!.zones?.zones ?? []], states: [...r.route!.states ?? []], ...h,
      waitingForWindow: await waitingForWindow(r), window: await windowStatus(r, h.dirty),
      mirror: readMirror(await redis.hgetall(r.state.keys.mirror.meta), r) };
  })) : null;
  const own = routes ?? [await holdings(rt)];
  const sum = (k: keyof Awaited<ReturnType<typeof holdings>>) => own.reduce((n, h) => n + h[k], 0);
  const [contacts, numbers, dirty, openBatches, parkedCount, doNotCall, notThisSyncs] = [sum('contacts'), sum('numbers'), sum('dirty'), sum('openBatches'), sum('parked'), sum('doNotCall'), sum('notThisSyncs')];
  const lastCompareAt = await redis.hget(keys.meta, 'lastCompareAt');
  const records = (await Promise.all(runIds.map((id) => readRun(redis, keys.run(id))))).filter((r): r is RunRecord => r !== null);
  const recordErrors: SyncStatus['recordErrors'] = [];
  for (const r of records) {
    if (r.invalid) for (const e of await rt.state.runErrors<RecordError>(r.id, errors - recordErrors.length)) recordErrors.push({ run: r.id, ...e });
  }
  // HSCAN's COUNT is a hint: follow the cursor until enough are read or the hash is done.
  const parkedRecords: SyncStatus['parkedRecords'] = [];
  for (const campaign of campaignsOf(rt)) {
    for await (const page of campaign.state.scanParked(parked)) {
      for (const [phone, p] of page.slice(0, parked - parkedRecords.length)) {
        parkedRecords.push({ phone: redactPhone(phone), contactId: p.contactId, reason: p.reason, code: p.code, at: new Date(p.at).toISOString(), traceId: traceIdOf(p.traceparent) });
      }
      if (parkedRecords.length >= parked) break;
    }
  }
  const waiting = routes ? routes.reduce((n, r) => n + r.waitingForWindow, 0) : await waitingForWindow(rt);
  return { sync: rt.config.id, source: rt.source.kind, campaignId: rt.config.campaignId, contacts, numbers, dirty, openBatches, parked: parkedCount, doNotCall, notThisSyncs, ownsCampaign: rt.config.ownsCampaign,
    doNotCallLists: await listsStatus(rt),
    waitingForWindow: waiting,
    inbox, receiving: rt.arrivals.count, runs: records, parkedRecords, recordErrors,
    lastCompareAt: lastCompareAt && rt.source.compareEvery ? new Date(Number(lastCompareAt)).toISOString() : null, compareEvery: rt.source.compareEvery ?? null,
    mirror: readMirror(mirror, rt), rules: rulesStatus(rt.config.rules), refused: await refusalOf(redis, keys.meta), window: await windowStatus(rt, dirty), routes };
}

async function windowStatus(rt: SyncRuntime, dirty: number): Promise<SyncStatus['window']> {
  if (!rt.window) return null;
  const w = await rt.window.status();
  return { ...w, heldByWindow: w.state === 'Paused' ? dirty : 0 };
}

/**
 * What a sync knows of one phone number, in one word: held (the campaign has it for this sync), parked (the dialer
 * refused it), sending / planned (an open batch claims it), dirty (waiting to be planned, or held back by the calling
 * window), do-not-call (a contact holding it is marked so), elsewhere (another sync of the campaign holds it), wanted
 * (a contact holds it and none of the above: the window's cap, or a run still to come), not-this-syncs (the campaign
 * holds it and no sync of the daemon added it: kept as it is), unknown.
 */
export type NumberCondition = 'held' | 'parked' | 'sending' | 'planned' | 'dirty' | 'do-not-call' | 'elsewhere' | 'not-this-syncs' | 'wanted' | 'unknown';

export interface NumberStatus {
  sync: string; campaignId: string; phone: string; state: NumberCondition;
  /** The contact it was added for (held), else the first of this sync's contacts holding it. */
  contactId: string | null;
  contactIds: string[];
  /** The campaign's number id, and the sync holding it (this one, or another feeding the same campaign). */
  numberId: string | null; heldBy: string | null;
  /** Why it is still in the campaign though it should be gone or changed. */
  keptBecause: string | null;
  dirty: boolean;
  /** The open batch claiming it (the campaign's: `sync` may be another sync feeding it). */
  batch: { id: string; sync: string | null; kind: 'add' | 'del' | null; run: string | null; plannedAt: string | null; sending: boolean } | null;
  parked: { reason: string; code: string; contactId: string | null; at: string } | null;
  doNotCall: number;
  /** The calling window's evidence (compliance on; null when the window has not admitted it); absent without one. */
  window?: { evidence: string; open: boolean; opensAt: string | null; closesAt: string | null } | null;
  /** The trace of the push that added or parked it, else of the plan that batched it; the viewer link when configured. */
  traceId: string | null; traceparent: string | null; traceOf: 'push' | 'plan' | null; traceUrl: string | null;
}

function condition(sync: string, n: NumberState): NumberCondition {
  if (n.held?.foreign) return 'not-this-syncs';
  if (n.held?.syncId === sync) return 'held';
  if (n.parked) return 'parked';
  if (n.claim) return n.claim.sending ? 'sending' : 'planned';
  if (n.dirty) return 'dirty';
  if (n.doNotCall > 0 && n.contactIds.length) return 'do-not-call';
  if (n.held) return 'elsewhere';
  return n.contactIds.length ? 'wanted' : 'unknown';
}

/** One phone number (E.164) as the sync's state, its calling window and its traces know it; `viewer`: telemetry.viewerUrl. */
/** What the sync knows of the number: in its campaign, or (a routed sync) in the campaign of the route that knows it. */
export async function numberStatusOf(rt: SyncRuntime, phone: string, viewer: string | undefined): Promise<NumberStatus> {
  let first: NumberStatus | null = null;
  for (const c of campaignsOf(rt)) {
    const s = await numberStatus(c, phone, viewer);
    if (s.state !== 'unknown') return s;
    first ??= s;
  }
  return first!;
}

async function numberStatus(rt: SyncRuntime, phone: string, viewer: string | undefined): Promise<NumberStatus> {
  const n = await rt.state.numberState(phone);
  const mine = n.held?.syncId === rt.config.id ? n.held : null;
  const b = n.claim?.batch ?? null;
  const pushed = mine?.traceparent ?? n.parked?.traceparent ?? null;
  const traceparent = pushed ?? b?.traceparent ?? null;
  const traceId = traceIdOf(traceparent);
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    sync: rt.config.id, campaignId: rt.config.campaignId, phone, state: condition(rt.config.id, n),
    contactId: mine?.contactId ?? n.parked?.contactId ?? n.contactIds[0] ?? null, contactIds: n.contactIds,
    numberId: n.held?.numberId ?? null, heldBy: n.held?.syncId ?? null, keptBecause: mine?.keptBecause ?? null, dirty: n.dirty,
    batch: n.claim ? { id: n.claim.batchId, sync: b?.syncId ?? null, kind: b?.kind ?? null, run: b?.runId ?? null, plannedAt: b ? iso(b.at) : null, sending: n.claim.sending !== null } : null,
    parked: n.parked ? { reason: n.parked.reason, code: n.parked.code, contactId: n.parked.contactId, at: iso(n.parked.at) } : null,
    doNotCall: n.doNotCall,
    ...(rt.window ? { window: await rt.window.numberWindow(phone) } : {}),
    traceId, traceparent: traceId ? traceparent : null, traceOf: traceId ? (pushed ? 'push' : 'plan') : null, traceUrl: viewerLink(viewer, traceId),
  };
}
