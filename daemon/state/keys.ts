// Every Redis key the daemon writes, named here and nowhere else: what a key holds is documented beside its name.
//
// Redis Cluster: every key carries a hash tag (the part in braces decides its slot). A campaign's keys and the keys of
// every sync feeding it share the tag {<campaign key>}, because the state's scripts touch both at once; different
// campaigns spread over the masters. A push queue's keys share its queue name's tag ({push-<key hash>}), the sync
// queue's {syncs}: BullMQ's documented rule (a hash tag in the queue name or prefix). A gate, a budget and the daemon's
// own keys are each alone in their slot.
import { createHash } from 'node:crypto';

/** The daemon's own keys (not a sync's), and the prefix BullMQ's queues use. */
export class DaemonKeys {
  readonly prefix: string;
  constructor(prefix: string) { this.prefix = prefix; }
  /** BullMQ's prefix for the daemon's queues (it names its own keys below it; the queue names carry the tags). */
  get queuePrefix() { return this.prefix; }
  /** The queue of sync, plan and mirror jobs. */
  get syncQueue() { return '{syncs}'; }
  /** Redis's run ids when the daemon last looked: a different one means a restart or failover that may have lost writes. */
  get redisRunId() { return `${this.prefix}:{daemon}:redis-run-id`; }
  /** The lock one process holds while it upserts job schedulers. */
  get schedulersLock() { return `${this.prefix}:{daemon}:lock:schedulers`; }
  /** hash: scheduler key -> the schedule it was upserted with. */
  get schedulers() { return `${this.prefix}:{daemon}:schedulers`; }
  /** Which key layout this Redis holds (layout.ts moves an older one); kept for processes of 0.1.0, which read it. */
  get layout() { return `${this.prefix}:{daemon}:layout`; }
  /**
   * hash: the state's version (`version`, the layout number state-version.ts knows), the package version of the
   * process that last opened it (`writtenBy`) and when (`at`). Tagged {daemon} like the daemon's other own keys: on a
   * Redis Cluster one slot holds it, which every process reads.
   */
  get stateVersion() { return `${this.prefix}:{daemon}:state-version`; }
  /**
   * The lease of the one process migrating the state (state-version.ts). The name of 0.1.0's layout lock, so a process
   * of that version starting meanwhile waits for it too.
   */
  get stateLock() { return `${this.prefix}:{daemon}:layout:lock`; }
  /** A CRM gate (the next free slot of a paced budget), one per CRM account and budget. */
  gate(name: string, account: string) { return `${this.prefix}:{gate-${name}-${account}}:gate:${name}:${account}`; }
  /** A CRM's daily budget counter, one per CRM account (a day's suffix is added to it). */
  budget(name: string, account: string) { return `${this.prefix}:{budget-${name}-${account}}:budget:${name}:${account}`; }
  sync(syncId: string, campaign: string, reader?: SyncKeys): SyncKeys { return new SyncKeys(this.prefix, syncId, campaign, reader); }
  /**
   * A routed sync's own keys (its read: meta, cursor, runs, inbox, run lease), tagged by the sync, not by a campaign:
   * its campaigns are its routes'. Their `campaign` keys are never written.
   */
  routedSync(syncId: string): SyncKeys { return new SyncKeys(this.prefix, syncId, `routes-${syncId}`); }
  /**
   * hash: one block of a sync's history for the operations page (history/history.ts), fields
   * `<point index>:<series>`; `view` is its resolution (hour: per-minute points, day: per-10-minute points).
   */
  history(syncId: string, view: string, block: number) { return `${this.prefix}:{history-${syncId}}:sync:${syncId}:history:${view}:${block}`; }
  /**
   * hash: alert fingerprint (`<kind>|<sync>|<campaign>`) -> the alert's record JSON (notify/, state/notify-state.ts):
   * pending, firing or resolved, since when, when its last message was sent, and the message still to be queued.
   */
  get notifyAlerts() { return `${this.prefix}:{notify}:alerts`; }
  /** The lease of the one process evaluating the alerts (taken every `notify.checkEvery`, left to lapse). */
  get notifyLease() { return `${this.prefix}:{notify}:lease`; }
  /** The queue of notification deliveries (one job per message and destination), tagged like the alerts. */
  get notifyQueue() { return '{notify}'; }
}

/** Keys of one sync, of its mirror and of the campaign it feeds (shared by every sync feeding that campaign). */
export class SyncKeys {
  readonly sync: string;
  readonly campaign: string;
  /** A route's: the routed sync whose one read feeds it; its runs (records, counts, errors) are that sync's. */
  private readonly reader?: SyncKeys;
  private readonly prefix: string;
  private readonly campaignKey: string;
  constructor(prefix: string, syncId: string, campaignKey: string, reader?: SyncKeys) {
    this.sync = `${prefix}:{${campaignKey}}:sync:${syncId}`;
    this.campaign = `${prefix}:{${campaignKey}}:campaign:${campaignKey}`;
    this.reader = reader;
    this.prefix = prefix;
    this.campaignKey = campaignKey;
  }
  /** The dirty set of another sync feeding the same campaign (the one whose held record names it). */
  dirtyOf(syncId: string): string { return new SyncKeys(this.prefix, syncId, this.campaignKey).dirty; }
  /** hash: contact id -> "<phones>\n<value JSON>" (what the CRM last gave, mapped). */
  get contacts() { return `${this.sync}:contacts`; }
  /** hash: phone number -> contact ids holding it, newline-separated. */
  get phones() { return `${this.sync}:phones`; }
  /** set: phone numbers to plan. */
  get dirty() { return `${this.sync}:dirty`; }
  /** hash: phone number -> why the dialer refused it (and, while tracing, `p`: the refusing push batch's traceparent). */
  get parked() { return `${this.sync}:parked`; }
  /** hash: cursors, resume points and flags of the sync. */
  get meta() { return `${this.sync}:meta`; }
  /** list: the last 100 run ids, newest first. */
  get runs(): string { return this.reader?.runs ?? `${this.sync}:runs`; }
  /** The lease of the process running the sync's run (one at a time, whatever BullMQ's job locks say). */
  get runLease() { return `${this.sync}:run-lease`; }
  /** list: webhook deliveries waiting for the next run. */
  get inbox() { return `${this.sync}:inbox`; }
  /** hash: one run's record and counts. */
  run(runId: string): string { return this.reader?.run(runId) ?? `${this.sync}:run:${runId}`; }
  /** list: one run's invalid records (the first 1,000). */
  runErrors(runId: string): string { return this.reader?.runErrors(runId) ?? `${this.sync}:run:${runId}:errors`; }
  /** set: contact ids a full read saw. */
  seen(runId: string) { return `${this.sync}:run:${runId}:seen`; }
  /** A signed webhook request already received (its signature's hash). */
  replay(hash: string) { return `${this.sync}:replay:${hash}`; }
  /** A webhook event id already received (its hash). */
  event(hash: string) { return `${this.sync}:event:${hash}`; }
  /** The mirror's keys (call-detail records to CRM activities). */
  get mirror() {
    const base = `${this.sync}:mirror`;
    return {
      /** hash: watermark, lag, counts, verify flag. */
      meta: base,
      /** hash: attempt key -> activity JSON, while its write is under way. */
      pending: `${base}:pending`,
      /** hash: attempt key -> {reason, at, activity} the CRM refused. */
      parked: `${base}:parked`,
      /** string: the token of the process whose run mirrors the sync now (lapses unless renewed). */
      lease: `${base}:lease`,
      /** hash: attempt key -> CRM id, one per day of the records' end (so old days expire). */
      done: (endedAtLocal: string) => `${base}:done:${endedAtLocal.slice(0, 10)}`,
    };
  }
  /** The calling window's keys (compliance/campaign-window.ts), the campaign's: every sync feeding it shares its window. */
  get window() {
    const base = `${this.campaign}:window`;
    return {
      /** set: the window groups of the numbers admitted to the campaign (`<zones>|<states>`). */
      groups: `${base}:groups`,
      /**
       * set: the window groups of the numbers the campaign holds that can still be called and the daemon did not admit
       * (added through the API by another key, or before Redis lost the daemon's state), from the last judgement.
       */
      held: `${base}:held`,
      /** hash: phone number -> evidence (ending with its group, or "no zone"), of each such number, from the last judgement. */
      foreign: `${base}:foreign`,
      /**
       * hash: state (the one the daemon last set), at, next (the next edge, ms), since (when it entered that state, ms);
       * the judgement of what the campaign holds: judgedAt, baseline, current, unjudged, judgeError (window-state.ts
       * decodes them).
       */
      meta: base,
      /** hash: phone number -> where its callee is, in words (the zone evidence /ops shows). */
      evidence: `${base}:evidence`,
      /**
       * hash: phone number (under a per-number cap) -> JSON of its calls in the cap's span (`<attempt>@<start>` -> start
       * ms) and how many attempts of the record held now the mirror has read (window-state.ts decodes it).
       */
      starts: `${base}:starts`,
      /**
       * hash: phone number -> when it was last taken out at its cap (ms): a call that started before is an earlier
       * record's. Its own key, not in `starts`: the window's check writes it while the mirror writes `starts`.
       */
      cuts: `${base}:cuts`,
      /** sorted set: phone number held at its cap, scored by when it may be planned again (ms). */
      capped: `${base}:capped`,
      /**
       * hash: phone number -> when its cap passes (ms), for a number taken out of the campaign at its cap while its
       * number record still had a retry pending (the plan deletes it and adds it to none while it is here).
       */
      takenOut: `${base}:taken-out`,
    };
  }
  /**
   * hash: phone number -> held record JSON (what the campaign holds); its `p`, while tracing, is the W3C traceparent of
   * the push batch span that added the number (a call's mirror write links to it).
   */
  get have() { return `${this.campaign}:have`; }
  /**
   * hash: phone number -> how the campaign came to hold it without any sync of the daemon adding it (`found`: a
   * reconcile found it in the campaign; `replaced`: its record was deleted and added again outside the daemon;
   * `duplicate`: the dialer already held it when a sync sent it). Its held record carries `f`; the plan leaves such a
   * number alone unless the sync owns the campaign (ownsCampaign). Counted by `status`, /ops and the dry run.
   */
  get others() { return `${this.campaign}:others`; }
  /** hash: phone number -> the open batch acting on it. */
  get claims() { return `${this.campaign}:claims`; }
  /** hash: batch id -> batch JSON, from plan until its answer is recorded. */
  get batches() { return `${this.campaign}:batches`; }
  /** hash: batch id -> when it was sent (its answer may be lost). */
  get inflight() { return `${this.campaign}:inflight`; }
  /** The campaign's batch counter. */
  get counter() { return `${this.campaign}:counter`; }
  /**
   * hash: phone number -> how many contacts holding it, of every sync feeding the campaign, are marked Do Not Call
   * (the number is kept out of the campaign whichever sync added it).
   */
  get doNotCall() { return `${this.campaign}:do-not-call`; }
  /**
   * hash: phone number -> JSON of the Do Not Call check that let it in when it was last added (dnc/evidence.ts's
   * Evidence: which lists, which copy of each, which exemption), for `campaign-sync dnc why`.
   */
  get dncEvidence() { return `${this.campaign}:dnc:evidence`; }
  /**
   * hash: check id -> JSON of what the numbers of one plan were checked under (when, the campaign and sync, each list's
   * copy: its date, change lists and file per area code), named by their evidence lines (dnc/evidence.ts).
   */
  get dncChecks() { return `${this.campaign}:dnc:checks`; }
  /** list: the same evidence of every number added on one day (UTC, YYYY-MM-DD), oldest first, for the auditor's export; it expires. */
  dncAudit(day: string) { return `${this.campaign}:dnc:audit:${day}`; }
  /**
   * hash: phone number a contact wants that a Do Not Call list keeps out of the campaign -> the list (the first that holds
   * it, or cannot vouch for it: then `?` before its name); counted by status, /ops and the window's hold.
   */
  get dncKeptOut() { return `${this.campaign}:dnc:kept-out`; }
  /** sorted set: phone number the sync holds under a Do Not Call exemption, scored by when the exemption ends (ms). */
  get dncExemptEnds() { return `${this.sync}:dnc:exempt-ends`; }
}

/** A route's id (a routed sync's campaign): the sync's id and its campaign's, so reordering routes keeps each one's state. */
export function routeId(syncId: string, campaignId: string): string {
  return `${syncId}@${campaignId}`;
}

/** A campaign's key: the same campaign id on two dialer accounts or servers is two campaigns. */
export function campaignKey(baseUrl: string, accountId: string, campaignId: string): string {
  return createHash('sha256').update(`${baseUrl}\n${accountId}\n${campaignId}`).digest('base64url').slice(0, 16);
}

/**
 * Do Not Call lists' keys (daemon/dnc/). A list's name is checked by daemon/dnc/names.ts (no braces, no colons).
 * Redis Cluster: each list's record has its own tag {dnc-<list>}; each bitmap of a list and area code its own
 * {dnc-<list>-<area code>}, so the area codes spread over the masters. The company's own list is one slot, {dnc-own-<list>}.
 */
export class DncKeys {
  private readonly prefix: string;
  constructor(prefix: string) { this.prefix = prefix; }
  /** string: the JSON record of the list's current copy (store.ts's CopyRecord); switching it switches the copy. */
  copy(list: string) { return `${this.prefix}:{dnc-${list}}:dnc:${list}:copy`; }
  /**
   * string: one bit per 7-digit number of an area code (offset = the number's last 7 digits; 1.25 MB), of one
   * generation of the list's copy. Bit 0 (exchange 000, never a number) is always set: a key that reads 0 there is gone.
   */
  bitmap(list: string, areaCode: string, generation: string) { return `${this.prefix}:{dnc-${list}-${areaCode}}:dnc:${list}:${areaCode}:${generation}`; }
  /** The lease of the one process loading the list's folder now (the daemon's scheduled load; lapses if it dies). */
  loadLease(list: string) { return `${this.prefix}:{dnc-${list}}:dnc:${list}:load-lease`; }
  /** hash: phone number (E.164) -> JSON of who put it on the company's own list, when and why. */
  ownNumbers(list: string) { return `${this.prefix}:{dnc-own-${list}}:dnc-own:${list}:numbers`; }
  /** list: every add and remove asked of the company's own list (JSON: op, number, by, at, reason), oldest first. */
  ownLog(list: string) { return `${this.prefix}:{dnc-own-${list}}:dnc-own:${list}:log`; }
  /** A signed request to POST /dnc/company already received (its signed content's hash), for the timestamp tolerance. */
  endpointReplay(hash: string) { return `${this.prefix}:{dnc-endpoint}:dnc-endpoint:replay:${hash}`; }
  /** A webhook-id POST /dnc/company already handled (its hash): the sender's retry of it changes nothing again. */
  endpointEvent(hash: string) { return `${this.prefix}:{dnc-endpoint}:dnc-endpoint:event:${hash}`; }
}
