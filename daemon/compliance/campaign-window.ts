// Holds a campaign to its callees' calling windows: the campaign is Active only while a call may start for every
// number it holds (the intersection of their window groups), and Paused from `margin` before that closes. "Every
// number it holds" is judged, not assumed: the groups of the numbers the daemon admitted, and the groups of the
// numbers the campaign holds that can still be called and the daemon did not admit (another key's, or forgotten
// when Redis lost the daemon's state), judged by their number. It fails closed: Active only from a complete, current
// judgement; with none (a first start, Redis lost it), after a failed read, or while records appear that the daemon
// does not account for, the campaign is Paused first and read again. Numbers whose window is unknown never enter; a
// number from a new group is admitted (and the campaign paused if that group's window is closed) before it is
// planned. Setting a state is idempotent, so a check after kill -9, a lost Redis write or a second process only sets
// again what the window wants; a missed edge is made good at the next check (every `checkEvery`, and at every start
// before any work). What it keeps in Redis, state/window-state.ts stores.
//
// A refused sync (check/refusals.ts) adds no numbers, so its window has nothing of its own to hold: it reads nothing
// and sets no state until the refusal is lifted. The one exception holds what the sync added before it was refused:
// a campaign the daemon had set Active is paused (and stays Paused), as no window follows it any more; see
// `standAside`.
import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Refusal } from '../check/refusals.ts';
import type { DialerClient } from '../dialer.ts';
import type { RedisClient } from '../state/connection.ts';
import type { SyncKeys } from '../state/keys.ts';
import { WindowState } from '../state/window-state.ts';
import type { Compliance } from './config.ts';
import { cappedUntil } from './cap.ts';
import { ClockSet } from './clocks.ts';
import { campaignEdge, parseGroup, windowGroup, type CampaignState, type GroupEdge, type WindowGroup } from './groups.ts';
import { capFor, rulesFor, sharedWindow } from '../../api/calling-window/window.ts';
import type { LocationFields, Unread } from '../../api/calling-window/locate.ts';
import { locate } from './locate.ts';

/** Where a contact's location fields are (the mapping's names). */
export interface LocationMapping { timeZone?: string; region?: string; postalCode?: string; country?: string }

export interface Located {
  phone: string; group: WindowGroup | null; evidence: string;
  /** Outside the sync's `compliance.zones`: another sync's number, left out without an error. */
  elsewhere?: true;
  /** The contact's location fields the rules cannot read (`field`: the CRM's name of it): the contact's record errors. */
  unread?: (Omit<Unread, 'field'> & { field: string })[];
  /** Why the number places nobody (held to every zone and state row of its country), e.g. `toll-free: no place`. */
  noPlace?: string;
}

export interface WindowStatus {
  /** The state the daemon last set (null: not yet). */
  state: CampaignState | null;
  /** Why it is Paused when no window is closed (the numbers held are not judged, or one has no zone); null otherwise. */
  heldClosedBecause: string | null;
  checkedAt: string | null;
  /** When the state changes next (opens, or pauses a margin before the close). */
  nextEdgeAt: string | null;
  /** The window groups of the numbers admitted (`<zones>|<states>`). */
  groups: string[];
  heldByCap: number;
  nextCapReleaseAt: string | null;
  /** What holds the numbers under a per-number cap to it, with a process running and without (null: none is capped). */
  capHeldBy: string | null;
  /** Calls the mirror read, by whether they started inside their callee's window. */
  callsInside: number;
  callsOutside: number;
  /** What the campaign holds that the daemon did not admit, as last judged. */
  holdings: {
    judgedAt: string | null; current: boolean; error: string | null;
    /** Numbers the campaign holds, can still call and the daemon did not admit; and those of them with no zone. */
    foreign: number; unjudged: number;
    /** Their window groups, and the first of them with their evidence. */
    groups: string[];
    numbers: { phone: string; evidence: string }[];
  };
}

/**
 * Why a campaign is held Paused though no window is closed, in a word: what it holds is not judged (or could not be
 * read), it holds a number with no zone, or a Do Not Call list cannot vouch for its numbers.
 */
export type ClosedFor = 'not_judged' | 'no_zone' | 'do_not_call_list';
/** What holds a campaign Paused (the metrics' `reason`): its callees' window is closed, a ClosedFor, or its sync is refused. */
export type HoldReason = 'window_closed' | ClosedFor | 'refused';

/** The statuses of the numbers a campaign may still call (§3.2): the window governs these. */
const CALLABLE = ['NotContacted', 'RetryPending'];
/** What /ops and `status` say holds a cap (see "The cap without the race" in docs/calling-windows.md). */
const CAP_HELD_BY = 'while a process runs: every window check reads the numbers with a retry pending and takes out those at their cap, ' +
  'besides the mirror; while none runs: the campaign is Paused (the last process pauses it as it stops); after a crash of the last one nothing ' +
  'holds them until a process starts, which takes out every number at its cap before any other work';
/** How many of the numbers the daemon did not admit `/ops` lists. */
const FOREIGN_SHOWN = 20;
const NO_ZONE = 'no zone: the campaign stays Paused while it holds this number';
/** A 429 on a read of what the campaign holds is waited out (at least a quarter second). */
const waitOut = (ms: number) => sleep(Math.max(ms, 250));

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return text(value[0]);
  if (value && typeof value === 'object' && 'value' in value) return text((value as { value: unknown }).value);
  return undefined;
}

/** The group a recorded evidence ends with (`… (group <key>)`). */
function groupOf(evidence: string | null | undefined): string | undefined {
  return evidence ? /\(group ([^)]+)\)$/.exec(evidence)?.[1] : undefined;
}

export class CampaignWindow {
  readonly compliance: Compliance;
  private readonly state: WindowState;
  private readonly dialer: DialerClient;
  private readonly campaignId: string;
  private readonly mapping: LocationMapping;
  private readonly log: Logger;
  private readonly now: () => number;
  /** The refusal of the sync this window belongs to (a route's: its routed sync's), if it is refused. */
  private readonly refusal: () => Promise<Refusal | null>;
  /** What the window last said about a refused sync's campaign (said again only when it changes). */
  private said: string | null = null;
  /**
   * Why the Do Not Call lists cannot vouch for the numbers the campaign holds (a registry copy too old, none loaded), so
   * that the campaign is held Paused as a closed window holds it; and when that starts (a copy's 31 days running out).
   */
  private readonly listHold: (holdsNumbers: boolean) => Promise<{ reason: string | null; at: number | null }>;

  constructor(o: { redis: RedisClient; keys: SyncKeys; dialer: DialerClient; campaignId: string; compliance: Compliance; mapping: LocationMapping; log: Logger; now?: () => number;
    refusal?: () => Promise<Refusal | null>; listHold?: (holdsNumbers: boolean) => Promise<{ reason: string | null; at: number | null }> }) {
    this.listHold = o.listHold ?? (async () => ({ reason: null, at: null }));
    this.state = new WindowState(o.redis, o.keys);
    this.dialer = o.dialer;
    this.campaignId = o.campaignId;
    this.compliance = o.compliance;
    this.mapping = o.mapping;
    this.log = o.log;
    this.now = o.now ?? Date.now;
    this.refusal = o.refusal ?? (async () => null);
  }

  /** Pauses the campaign at once (before a read that may take a while), unless the daemon last set it Paused. */
  private async pause(why: string): Promise<void> {
    const last = await this.state.lastState();
    if (last === 'Paused') return;
    await this.dialer.setCampaignState(this.campaignId, 'Paused');
    await this.state.setState('Paused', this.now(), null, true);
    this.log.warn({ campaign: this.campaignId, from: last ?? 'unknown', why }, 'calling window: campaign paused until what it holds is judged');
  }

  /** Records the campaign holds that the daemon does not account for (null: the dialer does not count them). */
  private async unaccounted(): Promise<number | null> {
    // The daemon's account first: a batch answered between the two reads is then counted by both, never by neither.
    const own = await this.state.accounted();
    const total = await this.dialer.countNumbers(this.campaignId, waitOut);
    return total === null ? null : total - own.held - own.adding + own.deleting;
  }

  /**
   * Reads every number the campaign can still call and judges those the daemon did not admit by their number (as
   * the compliance report judges a call): their groups count in the window from now on, and one with no zone holds
   * the campaign Paused. Costs a page per `pageSize` numbers the campaign can still call. `unaccounted`: the records
   * the daemon does not account for, when the caller has just counted them (else counted here, before the pages).
   */
  private async read(unaccounted?: number | null): Promise<void> {
    const baseline = Math.max(0, (unaccounted === undefined ? await this.unaccounted() : unaccounted) ?? 0);
    const evidence: [string, string][] = [];
    const groups = new Set<string>();
    let unjudged = 0;
    for await (const page of this.dialer.scanNumbers(this.campaignId, waitOut, { status: CALLABLE })) {
      const phones = [...new Set(page.map((n) => n.number))];
      const admitted = await this.state.evidence(phones);
      phones.forEach((phone, i) => {
        if (admitted[i]) return;
        const l = locate(phone);
        const group = windowGroup(l, this.compliance.ruleSet);
        if (group) groups.add(group.key); else unjudged++;
        evidence.push([phone, `${l.evidence} (${group ? `group ${group.key}` : NO_ZONE})`]);
      });
    }
    await this.state.judge(this.now(), baseline, unjudged, evidence, [...groups]);
    if (evidence.length) this.log.info({ campaign: this.campaignId, foreign: evidence.length, unjudged, groups: [...groups] }, 'calling window: numbers the daemon did not add are held to their windows');
  }

  /**
   * Looks at what the campaign holds before a check decides: reads it whole when there is no judgement (pausing it
   * first), when records appeared that the daemon does not account for (pausing it first), when records went that it
   * did not take out, or every `rescanEvery`; otherwise one request (the record count). A failure leaves the judgement
   * not current: the check pauses.
   */
  private async look(): Promise<void> {
    const j = await this.state.judgement();
    let unaccounted: number | null | undefined;
    try {
      if (j.judgedAt !== null) unaccounted = await this.unaccounted();
    } catch (err) {
      return this.unread(err as Error);
    }
    const grew = j.judgedAt !== null && (unaccounted === null || unaccounted! > j.baseline);
    if (grew) await this.state.judgementStale(null);
    // A pause the dialer refuses is not a failed read: it goes to the caller, which says what the campaign is.
    if (j.judgedAt === null) await this.pause('no judgement of the numbers it holds (a first start, or Redis lost the daemon\'s state)');
    else if (grew) await this.pause(unaccounted === null ? 'the dialer does not count the records' : `${unaccounted! - j.baseline} number records it holds that the daemon did not add`);
    try {
      if (j.judgedAt === null) await this.read();
      // Records went that the daemon did not take out (a number another key added, deleted again): read again, so a
      // number with no zone stops holding the campaign and the baseline comes down (no pause: nothing new is held).
      else if (grew || unaccounted! < j.baseline || this.now() - j.judgedAt >= this.compliance.rescanEvery) await this.read(unaccounted);
      else if (!j.current) await this.state.judgementCurrent();
    } catch (err) {
      await this.unread(err as Error);
    }
  }

  /** A read of what the campaign holds failed: the judgement is not current, so the check that follows pauses. */
  private async unread(err: Error): Promise<void> {
    await this.state.judgementStale(err.message);
    this.log.warn({ campaign: this.campaignId, err: err.message }, `calling window: could not read what campaign ${this.campaignId} holds (${err.message}); the window pauses it until a read succeeds`);
  }

  /** Where each of a contact's phones is, from its mapped fields (read as text) and the numbers. */
  locate(fields: Record<string, unknown>, phones: readonly string[]): Located[] {
    const where: LocationFields = {};
    for (const k of ['timeZone', 'region', 'postalCode', 'country'] as const) {
      const field = this.mapping[k];
      const value = field ? text(fields[field]) : undefined;
      if (value) where[k] = value;
    }
    const only = this.compliance.zones && new ClockSet(this.compliance.zones);
    return phones.map((phone) => {
      const l = locate(phone, where, this.compliance.evidence);
      const elsewhere = only && l.zones.length > 0 && !l.zones.every((z) => only.holds(z));
      return {
        phone, group: windowGroup(l, this.compliance.ruleSet), evidence: l.evidence, ...(elsewhere ? { elsewhere: true } : {}),
        ...(l.unread.length ? { unread: l.unread.map((u) => ({ ...u, field: this.mapping[u.field] ?? u.field })) } : {}),
        ...(l.noPlace ? { noPlace: l.noPlace } : {}),
      };
    });
  }

  /**
   * Records where these numbers are and admits their groups, then checks the campaign's state with them, so that a
   * number whose window is closed is never planned into an open campaign. Checked by every caller, not only the one
   * whose SADD added the group: another process may plan the same group's numbers before that one has paused it.
   */
  async admit(located: readonly Located[]): Promise<void> {
    const withGroup = located.filter((l) => l.group);
    if (!withGroup.length) return;
    const evidence = withGroup.map((l) => [l.phone, `${l.evidence} (group ${l.group!.key})`] as const);
    await this.state.admit(evidence, [...new Set(withGroup.map((l) => l.group!.key))]);
    // The judgement as it stands (the last check's): a run's pages do not each read the campaign.
    await this.enforce('numbers admitted', false);
  }

  /**
   * What the campaign should be now: Paused while what it holds is not judged (or holds a number with no zone), else
   * from the groups admitted and held (no numbers: Active, nothing to hold). `closedBecause` says why when no window is,
   * `closedFor` the same in a word.
   */
  async wanted(at = this.now()): Promise<GroupEdge & { groups: number; closedBecause: string | null; closedFor: ClosedFor | null }> {
    const [members, held, j] = await Promise.all([this.state.groups(), this.state.heldGroups(), this.state.judgement()]);
    const all = [...new Set([...members, ...held])];
    const closed = (closedFor: ClosedFor, closedBecause: string) => ({ group: '', want: 'Paused' as const, next: null, groups: all.length, closedBecause, closedFor });
    if (j.judgedAt === null) return closed('not_judged', 'the numbers the campaign holds are not judged yet');
    if (!j.current) return closed('not_judged', j.error ? `what the campaign holds could not be read: ${j.error}` : 'the campaign holds numbers not judged yet');
    if (j.unjudged) return closed('no_zone', `the campaign holds ${j.unjudged} number${j.unjudged === 1 ? '' : 's'} whose callee's zone is unknown (added by another key): delete ${j.unjudged === 1 ? 'it' : 'them'} from the campaign`);
    const lists = await this.listHold(all.length > 0);
    if (lists.reason) return closed('do_not_call_list', lists.reason);
    if (!all.length) return { group: '', want: 'Active', next: null, groups: 0, closedBecause: null, closedFor: null };
    const edge = campaignEdge(all.map(parseGroup), this.compliance.ruleSet, at, this.compliance.margin);
    // A list that stops vouching before the window's next edge pauses the campaign then.
    const next = lists.at !== null && (edge.next === null || lists.at < edge.next) && edge.want === 'Active' ? lists.at : edge.next;
    return { group: '', ...edge, next, groups: all.length, closedBecause: null, closedFor: null };
  }

  /**
   * Why the daemon holds the campaign Paused, for the metrics (null: it last set it Active, or never set it): what holds
   * it, since when (ms) and, when only the window is closed, when it next opens (ms). One HMGET while it is not Paused;
   * while it is, the refusal (one HGET) and, unless refused, what `wanted` reads.
   */
  async hold(): Promise<{ reason: HoldReason; since: number | null; opensAt: number | null } | null> {
    const s = await this.state.stateSince();
    if (s.state !== 'Paused') return null;
    if (await this.refusal()) return { reason: 'refused', since: s.since, opensAt: null };
    const w = await this.wanted();
    return { reason: w.closedFor ?? 'window_closed', since: s.since, opensAt: w.closedFor ? null : s.next };
  }

  /**
   * Sets the campaign's state to what its window wants, when the state the daemon last set differs (or is not known:
   * Redis lost it). `look`: read what the campaign holds first (every check does; admitting numbers uses the last
   * check's judgement). Returns the state and whether it was set, so the caller can plan the numbers that waited.
   */
  async enforce(why: string, look = true): Promise<{ state: CampaignState | null; changed: boolean; next: number | null; refused?: true }> {
    const refusal = await this.refusal();
    if (refusal) return { ...await this.standAside(refusal, why), next: null, refused: true };
    this.said = null;
    if (look) await this.look();
    const w = await this.wanted();
    const last = await this.state.lastState();
    if (last !== w.want) {
      await this.dialer.setCampaignState(this.campaignId, w.want);
      this.log.info({ campaign: this.campaignId, from: last ?? 'unknown', to: w.want, next: w.next && new Date(w.next).toISOString(), why, groups: w.groups, ...(w.closedBecause ? { closedBecause: w.closedBecause } : {}) }, 'calling window: campaign state set');
    }
    await this.state.setState(w.want, this.now(), w.next, last !== w.want);
    return { state: w.want, changed: last !== w.want, next: w.next };
  }

  /**
   * A refused sync's campaign: the window neither reads nor sets it, so what the campaign is stays what it was, with
   * two exceptions that only ever close it. A campaign the daemon set Active is paused: the sync's own numbers may be
   * in it, and no window follows them while the sync is refused (nor its pulls, which would take out a number marked
   * Do Not Call meanwhile). A pause the dialer refused (403, the refusal `observed`) is tried again: its passing is
   * what lifts that refusal. A campaign the daemon paused stays Paused; one it never set is not touched. Returns the
   * state the daemon last set (null: never), and whether it set one now.
   */
  private async standAside(refusal: Refusal, why: string): Promise<{ state: CampaignState | null; changed: boolean }> {
    const last = await this.state.lastState();
    const retry = refusal.problems.some((p) => p.observed && p.check === 'dialer.state');
    const fix = refusal.problems.map((p) => `${p.message}${p.fix ? `; fix: ${p.fix}` : ''}`).join(' | ');
    if (last === 'Active' || (retry && last === null)) {
      // (A 403 here goes to the caller, which says the campaign stays as it was.)
      await this.dialer.setCampaignState(this.campaignId, 'Paused');
      await this.state.setState('Paused', this.now(), null, true);
      this.said = null;
      this.log.warn({ campaign: this.campaignId, from: last ?? 'unknown', why, problems: refusal.problems }, last === 'Active'
        ? `campaign ${this.campaignId} paused: its sync is refused, and the numbers the sync added before are held by no calling window until the refusal is lifted; it stays Paused until then (${fix})`
        : `campaign ${this.campaignId} paused: the dialer took the pause it had refused (403); the window follows the campaign again`);
      return { state: 'Paused', changed: true };
    }
    const now = last === 'Paused'
      ? `campaign ${this.campaignId} stays Paused (the daemon paused it for its calling window): the daemon does not resume it while its sync is refused`
      : `campaign ${this.campaignId} stays ${await this.dialerState()}: its sync is refused and does not touch it (no numbers, no state change) until the refusal is lifted`;
    const line = `${now}; fix: ${fix}`;
    if (line !== this.said) this.log.warn({ campaign: this.campaignId, why, problems: refusal.problems }, line);
    else this.log.debug({ campaign: this.campaignId, why }, line);
    this.said = line;
    return { state: last, changed: false };
  }

  /** The campaign's state as the dialer has it, for a sentence (a read; "as it is" when it cannot be read). */
  private async dialerState(): Promise<string> {
    try {
      const [campaign] = await this.dialer.campaigns([this.campaignId]);
      return campaign?.state ?? 'as it is';
    } catch {
      return 'as it is';
    }
  }

  /** The per-number cap of each number's group (Florida: 3 in 24 h), from the evidence recorded when it was admitted. */
  private async caps(phones: readonly string[]): Promise<({ calls: number; hours: number } | undefined)[]> {
    const evidence = await this.state.evidence(phones);
    return evidence.map((e) => {
      const key = groupOf(e);
      return key ? capFor(rulesFor(parseGroup(key).states, this.compliance.ruleSet)) : undefined;
    });
  }

  /**
   * Keeps the call starts of numbers under a cap (from the call-detail records the mirror reads; a record read again
   * is the same call), and takes out of the campaign each number that, counting these calls, is at its cap while its
   * newest call's outcome is FailureWithRetryPending: its number record would call it again by itself (the dialer's
   * maxAttempts may exceed the cap), so it is deleted now and added again once its cap passes. A number at its cap
   * whose newest outcome is final stays (it is only held from being added again). `calls`: [phone, attempt, start ms,
   * outcome]. Returns how many numbers were newly taken out (the caller plans, to delete them).
   */
  async recordStarts(calls: readonly (readonly [string, number, number, string?])[]): Promise<number> {
    const phones = [...new Set(calls.map(([p]) => p))];
    const caps = await this.caps(phones);
    const capped = phones.filter((_, i) => caps[i]);
    if (!capped.length) return 0;
    const [known, records, cuts] = await Promise.all([this.state.starts(capped), this.state.heldIds(capped), this.state.cuts(capped)]);
    const now = this.now();
    const out: [string, number][] = [];
    await this.state.saveStarts(capped.map((phone, i) => {
      const cap = caps[phones.indexOf(phone)]!;
      const span = cap.hours * 3_600_000;
      const starts = known[i]?.starts ?? {};
      const cut = cuts[i] ?? -Infinity;
      // The attempts of the record held now that the mirror has read (a new record: none yet), for `watchCaps`.
      const record = known[i]?.record?.id === records[i] ? known[i]?.record : undefined;
      let seen = record?.seen ?? 0;
      const before = Math.max(-Infinity, ...Object.values(starts));
      let newest: readonly [string, number, number, string?] | undefined;
      // Keyed by attempt and start: a number added again (its cap passed) is a new record, counting attempts from 1.
      for (const c of calls) {
        if (c[0] !== phone) continue;
        // A call read before (the mirror reads the last minutes again), or one that started before the number was last
        // taken out, is not one of the record held now.
        if (!starts[`${c[1]}@${c[2]}`] && starts[c[1]] !== c[2] && c[2] > cut) seen = Math.max(seen, c[1]);
        starts[`${c[1]}@${c[2]}`] = c[2];
        // Kept before by attempt alone (an older version): the same call, counted once.
        if (starts[c[1]] === c[2]) delete starts[c[1]];
        if (!newest || c[2] > newest[2]) newest = c;
      }
      const until = cappedUntil(Object.values(starts), cap, now);
      if (until !== null && newest && newest[2] >= before && newest[3] === 'FailureWithRetryPending') out.push([phone, until]);
      // Only the calls the cap can still count.
      return [phone, { starts: Object.fromEntries(Object.entries(starts).filter(([, t]) => t > now - span)), ...(records[i] ? { record: { id: records[i]!, seen } } : {}) }] as const;
    }));
    await this.state.cut(out.map(([p]) => p), now);
    const taken = await this.state.takeOut(out);
    if (taken) this.log.info({ campaign: this.campaignId, numbers: out.map(([p, t]) => `${p} until ${new Date(t).toISOString()}`) }, 'per-number cap: numbers at their cap with a retry pending taken out of the campaign until it passes');
    return taken;
  }

  /**
   * The numbers among these that are at their cap now: they are not planned (added or replaced) until the oldest
   * counted call ages out; each is remembered with that instant, for `releaseCapped`. Numbers taken out at their cap
   * are not among them: the plan itself deletes them (and adds them nowhere) until they are released.
   */
  async capped(phones: readonly string[]): Promise<Set<string>> {
    const held = new Set<string>();
    if (!phones.length) return held;
    const known = await this.state.starts(phones);
    const withCalls = phones.filter((_, i) => known[i]);
    if (!withCalls.length) return held;
    const caps = await this.caps(withCalls);
    const now = this.now();
    const until: [string, number][] = [];
    withCalls.forEach((phone, i) => {
      const cap = caps[i];
      if (!cap) return;
      const t = cappedUntil(Object.values(known[phones.indexOf(phone)]!.starts), cap, now);
      if (t !== null) { held.add(phone); until.push([phone, t]); }
    });
    await this.state.holdCapped(until);
    for (const phone of await this.state.takenOut([...held])) held.delete(phone);
    return held;
  }

  /** Whether any group of numbers the campaign holds is under a per-number cap. */
  private async holdsCapped(): Promise<boolean> {
    const [members, held] = await Promise.all([this.state.groups(), this.state.heldGroups()]);
    return members.concat(held).some((g) => capFor(rulesFor(parseGroup(g).states, this.compliance.ruleSet)) !== undefined);
  }

  /**
   * Holds the caps between the mirror's reads: reads the campaign's numbers with a retry pending and takes out each
   * whose calls the cap counts (those the mirror read, plus its record's attempts the mirror has not read yet, counted
   * as made now) leave no room for the retry. One page per `pageSize` such numbers, and only for a campaign holding
   * numbers under a cap. Returns how many were newly taken out (the caller plans, to delete them).
   */
  async watchCaps(): Promise<number> {
    if (!await this.holdsCapped()) return 0;
    const out: [string, number][] = [];
    for await (const page of this.dialer.scanNumbers(this.campaignId, waitOut, { status: ['RetryPending'] })) {
      const phones = page.map((n) => n.number);
      const [caps, known] = await Promise.all([this.caps(phones), this.state.starts(phones)]);
      const now = this.now();
      page.forEach((n, i) => {
        const cap = caps[i];
        if (!cap) return;
        const record = known[i]?.record;
        const unseen = Math.max(0, n.attempts - (record?.id === n.id ? record.seen : 0));
        const until = cappedUntil([...Object.values(known[i]?.starts ?? {}), ...Array<number>(unseen).fill(now)], cap, now);
        if (until !== null) out.push([n.number, until]);
      });
    }
    // (Before the take-out: a crash between the two takes it out again at the next check.)
    await this.state.cut(out.map(([p]) => p), this.now());
    const taken = await this.state.takeOut(out);
    if (taken) this.log.info({ campaign: this.campaignId, numbers: out.map(([p, t]) => `${p} until ${new Date(t).toISOString()}`) }, 'per-number cap: numbers whose record made calls the mirror has not read yet, at their cap with a retry pending, taken out');
    return taken;
  }

  /**
   * Pauses the campaign when it holds numbers under a cap and no process will be left to watch them (the last one is
   * stopping): the dialer would retry them past their cap. The next start sets it as its window wants. Whether it did.
   */
  async pauseUnwatched(): Promise<boolean> {
    const last = await this.state.lastState();
    // A refused sync's campaign that the daemon never set is not the daemon's to pause (see standAside).
    if (last === 'Paused' || (last === null && await this.refusal()) || !await this.holdsCapped()) return false;
    await this.dialer.setCampaignState(this.campaignId, 'Paused');
    await this.state.setState('Paused', this.now(), null, true);
    this.log.warn({ campaign: this.campaignId }, 'per-number cap: campaign paused while no daemon process runs (the last one is stopping): nothing would hold its numbers to their caps');
    return true;
  }

  /** Which of these numbers are taken out of the campaign at their cap now (the plan deletes them). */
  takenOut(phones: readonly string[]): Promise<Set<string>> { return this.state.takenOut(phones); }

  /** Numbers whose cap has passed: forgotten as capped (and as taken out, marked dirty); the caller plans them again. */
  releaseCapped(): Promise<number> { return this.state.releaseCapped(this.now()); }

  /**
   * Counts calls by whether they started inside their callee's window (the compliance report; outside must stay 0).
   * `calls`: [phone, start ms] of call attempts read for the first time.
   */
  async countCalls(calls: readonly (readonly [string, number])[]): Promise<void> {
    if (!calls.length) return;
    const phones = [...new Set(calls.map(([p]) => p))];
    const evidence = await this.state.evidence(phones);
    const groups = new Map(phones.map((p, i) => [p, groupOf(evidence[i])]));
    let inside = 0, outside = 0;
    for (const [phone, start] of calls) {
      const key = groups.get(phone);
      // A number the daemon did not place (added by hand) is judged from the number itself.
      const where = key ? parseGroup(key) : locate(phone);
      if (sharedWindow([where], this.compliance.ruleSet, start).open) inside++; else outside++;
    }
    await this.state.countCalls(inside, outside);
  }

  /** What /ops and `status` show: the state set, the next edge, the groups, the numbers held by the window and by caps. */
  async status(): Promise<WindowStatus> {
    const [meta, groups, capped, held, foreign, wanted, holdsCapped] = await Promise.all([this.state.meta(), this.state.groups(), this.state.capped(),
      this.state.heldGroups(), this.state.foreign(FOREIGN_SHOWN), this.wanted(), this.holdsCapped()]);
    const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
    const j = meta.judgement;
    return {
      state: meta.state, heldClosedBecause: wanted.closedBecause, checkedAt: iso(meta.checkedAt), nextEdgeAt: iso(meta.nextEdgeAt),
      groups: groups.sort(), heldByCap: capped.held, nextCapReleaseAt: iso(capped.nextReleaseAt), capHeldBy: holdsCapped ? CAP_HELD_BY : null,
      callsInside: meta.callsInside, callsOutside: meta.callsOutside,
      holdings: {
        judgedAt: iso(j.judgedAt), current: j.current && j.judgedAt !== null, error: j.error, foreign: foreign.total, unjudged: j.unjudged,
        groups: held.sort(), numbers: foreign.numbers.map(([phone, evidence]) => ({ phone, evidence })).sort((a, b) => a.phone.localeCompare(b.phone)),
      },
    };
  }

  /** Where a number's callee is (the evidence in words), and its own window now; null: not admitted here. */
  async numberWindow(phone: string): Promise<{ evidence: string; open: boolean; opensAt: string | null; closesAt: string | null } | null> {
    // Admitted by the daemon, else judged among what the campaign holds.
    const evidence = (await this.state.evidence([phone]))[0] ?? await this.state.foreignEvidence(phone);
    const key = groupOf(evidence);
    if (!evidence || !key) return null;
    const w = sharedWindow([parseGroup(key)], this.compliance.ruleSet, this.now());
    const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
    return { evidence, open: w.open, opensAt: iso(w.opensAt), closesAt: iso(w.closesAt) };
  }

  /** The state the daemon last set the campaign to (null: never, or Redis lost it). */
  lastState(): Promise<CampaignState | null> { return this.state.lastState(); }

  /** Whether the campaign is held closed now (planning waits: a Paused campaign takes no numbers). */
  async closed(): Promise<boolean> {
    return (await this.state.lastState()) === 'Paused';
  }
}
