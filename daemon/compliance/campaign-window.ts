// Holds a campaign to its callees' calling windows: the campaign is Active only while a call may start for every
// number it holds (the intersection of their window groups), and Paused from `margin` before that closes. Numbers
// whose window is unknown never enter; a number from a new group is admitted (and the campaign paused if that
// group's window is closed) before it is planned. Setting a state is idempotent, so a check after kill -9, a lost
// Redis write or a second process only sets again what the window wants; a missed edge is made good at the next
// check (every `checkEvery`, and at every start before any work). What it keeps in Redis, state/window-state.ts stores.
import type { Logger } from 'pino';
import type { DialerClient } from '../dialer.ts';
import type { RedisClient } from '../state/connection.ts';
import type { SyncKeys } from '../state/keys.ts';
import { WindowState } from '../state/window-state.ts';
import type { Compliance } from './config.ts';
import { cappedUntil } from './cap.ts';
import { campaignEdge, parseGroup, windowGroup, type CampaignState, type GroupEdge, type WindowGroup } from './groups.ts';
import { capFor, rulesFor, sharedWindow } from './window.ts';
import { locate, type LocationFields } from './locate.ts';

/** Where a contact's location fields are (the mapping's names). */
export interface LocationMapping { timeZone?: string; region?: string; postalCode?: string; country?: string }

export interface Located {
  phone: string; group: WindowGroup | null; evidence: string;
  /** Outside the sync's `compliance.zones`: another sync's number, left out without an error. */
  elsewhere?: true;
}

export interface WindowStatus {
  /** The state the daemon last set (null: not yet). */
  state: CampaignState | null;
  checkedAt: string | null;
  /** When the state changes next (opens, or pauses a margin before the close). */
  nextEdgeAt: string | null;
  /** The window groups of the numbers admitted (`<zones>|<states>`). */
  groups: string[];
  heldByCap: number;
  nextCapReleaseAt: string | null;
  /** Calls the mirror read, by whether they started inside their callee's window. */
  callsInside: number;
  callsOutside: number;
}

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

  constructor(o: { redis: RedisClient; keys: SyncKeys; dialer: DialerClient; campaignId: string; compliance: Compliance; mapping: LocationMapping; log: Logger; now?: () => number }) {
    this.state = new WindowState(o.redis, o.keys);
    this.dialer = o.dialer;
    this.campaignId = o.campaignId;
    this.compliance = o.compliance;
    this.mapping = o.mapping;
    this.log = o.log;
    this.now = o.now ?? Date.now;
  }

  /** Where each of a contact's phones is, from its mapped fields (read as text) and the numbers. */
  locate(fields: Record<string, unknown>, phones: readonly string[]): Located[] {
    const where: LocationFields = {};
    for (const k of ['timeZone', 'region', 'postalCode', 'country'] as const) {
      const field = this.mapping[k];
      const value = field ? text(fields[field]) : undefined;
      if (value) where[k] = value;
    }
    const only = this.compliance.zones && new Set(this.compliance.zones);
    return phones.map((phone) => {
      const l = locate(phone, where, this.compliance.evidence);
      const elsewhere = only && l.zones.length > 0 && !l.zones.every((z) => only.has(z));
      return { phone, group: windowGroup(l, this.compliance.ruleSet), evidence: l.evidence, ...(elsewhere ? { elsewhere: true } : {}) };
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
    await this.enforce('numbers admitted');
  }

  /** What the campaign should be now, from the groups admitted so far (no numbers: Active, nothing to hold). */
  async wanted(at = this.now()): Promise<GroupEdge & { groups: number }> {
    const members = await this.state.groups();
    if (!members.length) return { group: '', want: 'Active', next: null, groups: 0 };
    return { group: '', ...campaignEdge(members.map(parseGroup), this.compliance.ruleSet, at, this.compliance.margin), groups: members.length };
  }

  /**
   * Sets the campaign's state to what its window wants, when the state the daemon last set differs (or is not known:
   * Redis lost it). Returns the state and whether it was set, so the caller can plan the numbers that waited.
   */
  async enforce(why: string): Promise<{ state: CampaignState; changed: boolean; next: number | null }> {
    const w = await this.wanted();
    const last = await this.state.lastState();
    if (last !== w.want) {
      await this.dialer.setCampaignState(this.campaignId, w.want);
      this.log.info({ campaign: this.campaignId, from: last ?? 'unknown', to: w.want, next: w.next && new Date(w.next).toISOString(), why, groups: w.groups }, 'calling window: campaign state set');
    }
    await this.state.setState(w.want, this.now(), w.next);
    return { state: w.want, changed: last !== w.want, next: w.next };
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
    const known = await this.state.starts(capped);
    const now = this.now();
    const out: [string, number][] = [];
    await this.state.saveStarts(capped.map((phone, i) => {
      const cap = caps[phones.indexOf(phone)]!;
      const span = cap.hours * 3_600_000;
      const starts = known[i] ?? {};
      const before = Math.max(-Infinity, ...Object.values(starts));
      let newest: readonly [string, number, number, string?] | undefined;
      // Keyed by attempt and start: a number added again (its cap passed) is a new record, counting attempts from 1.
      for (const c of calls) {
        if (c[0] !== phone) continue;
        starts[`${c[1]}@${c[2]}`] = c[2];
        // Kept before by attempt alone (an older version): the same call, counted once.
        if (starts[c[1]] === c[2]) delete starts[c[1]];
        if (!newest || c[2] > newest[2]) newest = c;
      }
      const until = cappedUntil(Object.values(starts), cap, now);
      if (until !== null && newest && newest[2] >= before && newest[3] === 'FailureWithRetryPending') out.push([phone, until]);
      // Only the calls the cap can still count.
      return [phone, Object.fromEntries(Object.entries(starts).filter(([, t]) => t > now - span))] as const;
    }));
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
      const t = cappedUntil(Object.values(known[phones.indexOf(phone)]!), cap, now);
      if (t !== null) { held.add(phone); until.push([phone, t]); }
    });
    await this.state.holdCapped(until);
    for (const phone of await this.state.takenOut([...held])) held.delete(phone);
    return held;
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
    const [meta, groups, capped] = await Promise.all([this.state.meta(), this.state.groups(), this.state.capped()]);
    const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
    return {
      state: meta.state, checkedAt: iso(meta.checkedAt), nextEdgeAt: iso(meta.nextEdgeAt),
      groups: groups.sort(), heldByCap: capped.held, nextCapReleaseAt: iso(capped.nextReleaseAt),
      callsInside: meta.callsInside, callsOutside: meta.callsOutside,
    };
  }

  /** Where a number's callee is (the evidence in words), and its own window now; null: not admitted here. */
  async numberWindow(phone: string): Promise<{ evidence: string; open: boolean; opensAt: string | null; closesAt: string | null } | null> {
    const [evidence] = await this.state.evidence([phone]);
    const key = groupOf(evidence);
    if (!evidence || !key) return null;
    const w = sharedWindow([parseGroup(key)], this.compliance.ruleSet, this.now());
    const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
    return { evidence, open: w.open, opensAt: iso(w.opensAt), closesAt: iso(w.closesAt) };
  }

  /** Whether the campaign is held closed now (planning waits: a Paused campaign takes no numbers). */
  async closed(): Promise<boolean> {
    return (await this.state.lastState()) === 'Paused';
  }
}
