// Routes: which of a routed sync's campaigns a callee's window group goes to. Routes naming states are tried first
// (their callees' stricter rows then narrow only their own campaign), then those by zone; zones match as clocks.
import { ClockSet } from './clocks.ts';
import type { WindowGroup } from './groups.ts';

export interface Route {
  /** The clocks whose callees the route takes (null: any). */
  zones: ClockSet | null;
  /** The states whose callees it takes (null: a route by zones alone). */
  states: ReadonlySet<string> | null;
}

/** A route as the configuration gives it. */
export function routeOf(r: { zones?: readonly string[]; states?: readonly string[] }): Route {
  return { zones: r.zones ? new ClockSet(r.zones) : null, states: r.states ? new Set(r.states) : null };
}

/**
 * The index of the route a group goes to, or -1: first a route with states that holds all of the group's states
 * (those with a row) and clocks, then the first route without states that holds all of its clocks.
 */
export function routeFor(routes: readonly Route[], g: Pick<WindowGroup, 'zones' | 'states'>): number {
  const clocks = (r: Route) => !r.zones || g.zones.every((z) => r.zones!.holds(z));
  const byState = g.states.length ? routes.findIndex((r) => r.states && g.states.every((s) => r.states!.has(s)) && clocks(r)) : -1;
  return byState >= 0 ? byState : routes.findIndex((r) => !r.states && clocks(r));
}
