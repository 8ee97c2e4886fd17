// Window groups: callees whose calling windows are the same (same zones, same state rows) share a campaign, and
// that campaign's state follows their window: Active while a call may start, Paused from `margin` before the close.
// Pure: the edge job asks it what each group's campaign should be now, and when to ask again.
import type { Location } from '../../api/calling-window/locate.ts';
import { sharedWindow, type RuleSet } from '../../api/calling-window/window.ts';
import { STATE_RULE_BY_STATE } from '../../api/calling-window/rules.ts';

export interface WindowGroup {
  /** Stable name of the group, e.g. `America/Chicago+America/New_York|FL`: part of a campaign's name and Redis keys. */
  key: string;
  zones: string[];
  /** Only the states whose rows change the window (others do not split groups). */
  states: string[];
}

/** The group of a callee: its zones and the states among its own that have a row. Unknown zones: no group (held). */
export function windowGroup(location: Pick<Location, 'zones' | 'states'>, ruleSet: RuleSet): WindowGroup | null {
  if (!location.zones.length) return null;
  const states = ruleSet.stateRules ? location.states.filter((s) => STATE_RULE_BY_STATE.has(s)) : [];
  return { key: `${location.zones.join('+')}${states.length ? `|${states.join('+')}` : ''}`, zones: [...location.zones], states };
}

export type CampaignState = 'Active' | 'Paused';

export interface GroupEdge {
  group: string;
  want: CampaignState;
  /** When the answer changes next (ms), or null when the group never opens within the horizon. */
  next: number | null;
}

/**
 * What a campaign holding callees of these groups should be at `now`: Active from the opening of the window they all
 * share until `marginMs` before its close (a pause request must reach the dialer before the edge, and a call must
 * start before it), Paused otherwise; and when that changes next.
 */
export function campaignEdge(groups: readonly WindowGroup[], ruleSet: RuleSet, now: number, marginMs: number): Omit<GroupEdge, 'group'> {
  const w = sharedWindow(groups, ruleSet, now);
  if (w.open && w.closesAt! - marginMs > now) return { want: 'Active', next: w.closesAt! - marginMs };
  // Closed, or inside the margin: the next opening whose window outlasts the margin.
  let at = w.opensAt;
  let end = w.open ? (at === null ? null : sharedWindow(groups, ruleSet, at).closesAt) : w.closesAt;
  while (at !== null && end !== null && end - marginMs <= at) {
    const after = sharedWindow(groups, ruleSet, end);
    at = after.opensAt;
    end = after.closesAt;
  }
  return { want: 'Paused', next: at };
}

/** What each group's own campaign should be at `now` (one campaign per group). */
export function edges(groups: readonly WindowGroup[], ruleSet: RuleSet, now: number, marginMs: number): GroupEdge[] {
  return groups.map((g) => ({ group: g.key, ...campaignEdge([g], ruleSet, now, marginMs) }));
}

/** When the edge job must run next: the earliest change of any group (null: none within the horizon). */
export function nextEdge(list: readonly GroupEdge[]): number | null {
  const times = list.map((e) => e.next).filter((t): t is number => t !== null);
  return times.length ? Math.min(...times) : null;
}

/** A group back from its key. */
export function parseGroup(key: string): WindowGroup {
  const [zones = '', states = ''] = key.split('|');
  return { key, zones: zones.split('+').filter(Boolean), states: states.split('+').filter(Boolean) };
}
