// The one place that answers "may this callee be dialed now, and until when?": a rule set (federal window, state
// rows, the operator's window) applied in every zone the callee may be in, intersected, as UTC instants.
import { offsetAt } from '../wall-clock.ts';
import type { Location } from './locate.ts';
import { FEDERAL, STATE_RULE_BY_STATE, WEEKDAYS, type Holiday, type Hours, type WindowRule } from './rules.ts';

/** What a sync (or the daemon, or the n8n node's options) names: the operator's own, tighter window on top of the law's. */
export interface RuleSet {
  /** Apply the state rows (default true). */
  stateRules: boolean;
  /** The operator's window (callee-local), e.g. 09:00–20:00, and the weekdays it allows (default all). */
  operator?: { hours: Hours; days?: readonly (typeof WEEKDAYS)[number][] };
}

export const DEFAULT_RULE_SET: RuleSet = { stateRules: true };

export interface Window {
  /** Whether a call may start at the instant asked about. */
  open: boolean;
  /** Open: when the current window ends (ms). Closed: when the next one ends. Null: no window in the horizon. */
  closesAt: number | null;
  /** Closed: when the next window opens. Open: when the one after the current opens. Null: none in the horizon. */
  opensAt: number | null;
}

/** How far ahead windows are looked for (a week plus holidays). */
const HORIZON_DAYS = 15;
const DAY = 86_400_000;

const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** The rules that apply to a callee in these states under this rule set (the federal one first). */
export function rulesFor(states: readonly string[], ruleSet: RuleSet): WindowRule[] {
  const rules: WindowRule[] = [FEDERAL];
  if (ruleSet.stateRules) for (const s of states) { const r = STATE_RULE_BY_STATE.get(s); if (r) rules.push(r); }
  if (ruleSet.operator) {
    const allowed = new Set(ruleSet.operator.days ?? WEEKDAYS);
    rules.push({
      name: 'operator', source: 'the operator\'s own window (the daemon\'s compliance.window, the n8n node\'s Operator Window)', hours: ruleSet.operator.hours,
      days: Object.fromEntries(WEEKDAYS.filter((d) => !allowed.has(d)).map((d) => [d, null])),
    });
  }
  return rules;
}

/** The tightest per-number cap of the rules (Florida: 3 in 24 h), or undefined. */
export function capFor(rules: readonly WindowRule[]): { calls: number; hours: number } | undefined {
  let cap: { calls: number; hours: number } | undefined;
  for (const r of rules) if (r.cap && (!cap || r.cap.calls / r.cap.hours < cap.calls / cap.hours)) cap = r.cap;
  return cap;
}

function holidayDate(h: Holiday, year: number): number {
  if ('day' in h) return Date.UTC(year, h.month - 1, h.day);
  const wd = WEEKDAYS.indexOf(h.weekday);
  if (h.nth > 0) {
    const first = new Date(Date.UTC(year, h.month - 1, 1)).getUTCDay();
    return Date.UTC(year, h.month - 1, 1 + ((wd - first + 7) % 7) + (h.nth - 1) * 7);
  }
  const lastDay = new Date(Date.UTC(year, h.month, 0));
  return Date.UTC(year, h.month - 1, lastDay.getUTCDate() - ((lastDay.getUTCDay() - wd + 7) % 7));
}

/** Whether a local date (as a UTC midnight) is one of the holidays, or the day a weekend holiday is kept. */
export function isHoliday(holidays: readonly Holiday[], date: number): boolean {
  const year = new Date(date).getUTCFullYear();
  for (const y of [year - 1, year, year + 1]) {
    for (const h of holidays) {
      const d = holidayDate(h, y);
      const wd = new Date(d).getUTCDay();
      if (d === date || (wd === 6 && d - DAY === date) || (wd === 0 && d + DAY === date)) return true;
    }
  }
  return false;
}

/** The local hours [from, to) in minutes a date allows under all rules, or null. */
function hoursOn(rules: readonly WindowRule[], date: number): [number, number] | null {
  const weekday = WEEKDAYS[new Date(date).getUTCDay()]!;
  let from = 0, to = 24 * 60;
  for (const r of rules) {
    const h = r.days && weekday in r.days ? r.days[weekday] : r.hours;
    if (!h || (r.holidays && isHoliday(r.holidays, date))) return null;
    from = Math.max(from, minutes(h[0]));
    to = Math.min(to, minutes(h[1]));
  }
  return from < to ? [from, to] : null;
}

/** The instant a zone's clock reads `wall` (a local time as if UTC); in a repeated hour the later reading if `late`. */
function instant(zone: string, wall: number, late: boolean): number {
  const candidates = [wall - offsetAt(zone, wall - DAY / 2), wall - offsetAt(zone, wall + DAY / 2)]
    .filter((t) => t + offsetAt(zone, t) === wall);
  if (!candidates.length) return wall - offsetAt(zone, wall - DAY / 2);
  return late ? Math.max(...candidates) : Math.min(...candidates);
}

/** A zone's allowed intervals [start, end) in UTC ms from the local day before `at` over the horizon. */
function zoneIntervals(zone: string, rules: readonly WindowRule[], at: number): [number, number][] {
  const localToday = Math.floor((at + offsetAt(zone, at)) / DAY) * DAY;
  const out: [number, number][] = [];
  for (let date = localToday - DAY; date <= localToday + HORIZON_DAYS * DAY; date += DAY) {
    const h = hoursOn(rules, date);
    if (!h) continue;
    // Open at the later reading of a repeated time, close at the earlier one: never a minute outside.
    out.push([instant(zone, date + h[0] * 60_000, true), instant(zone, date + h[1] * 60_000, false)]);
  }
  return out;
}

function intersect(a: [number, number][], b: [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  let i = 0, j = 0;
  while (i < a.length && j < b.length) {
    const start = Math.max(a[i]![0], b[j]![0]);
    const end = Math.min(a[i]![1], b[j]![1]);
    if (start < end) out.push([start, end]);
    if (a[i]![1] < b[j]![1]) i++; else j++;
  }
  return out;
}

/** The allowed intervals (UTC ms, sorted) of a callee from the day before `at` over the horizon. */
export function intervals(zones: readonly string[], rules: readonly WindowRule[], at: number): [number, number][] {
  if (!zones.length) return [];
  // Rules read on the callee's clock, in each of its zones; a rule read on a fixed clock too, on that clock.
  const own = rules.filter((r) => !r.clocks || r.clocks.includes('callee'));
  let out = zones.map((z) => zoneIntervals(z, own, at)).reduce(intersect);
  for (const r of rules) for (const clock of r.clocks ?? []) if (clock !== 'callee') out = intersect(out, zoneIntervals(clock, [r], at));
  return out;
}

const cache = new Map<string, [number, number][]>();

/**
 * A callee's intervals around `at`, computed once per UTC day (from its start: they reach from the local day before
 * to the horizon, so they hold `at`): the mirror judges every call it reads, and Intl costs microseconds a call.
 */
function cachedIntervals(l: Pick<Location, 'zones' | 'states'>, ruleSet: RuleSet, at: number): [number, number][] {
  const day = Math.floor(at / DAY) * DAY;
  const key = `${l.zones.join(' ')}|${l.states.join(' ')}|${JSON.stringify(ruleSet)}|${day}`;
  let found = cache.get(key);
  if (!found) {
    if (cache.size > 10_000) cache.clear();
    found = intervals(l.zones, rulesFor(l.states, ruleSet), day);
    cache.set(key, found);
  }
  return found;
}

/** May a callee be dialed at `at`, and when does that change. A callee whose zones are unknown is never open. */
export function callingWindow(location: Pick<Location, 'zones' | 'states'>, ruleSet: RuleSet, at: number): Window {
  return sharedWindow([location], ruleSet, at);
}

/**
 * The window several callees share (a campaign holding them all): the intersection of each one's own window, each
 * under its own state's rules. None: never open.
 */
export function sharedWindow(locations: readonly Pick<Location, 'zones' | 'states'>[], ruleSet: RuleSet, at: number): Window {
  if (!locations.length) return { open: false, opensAt: null, closesAt: null };
  const all = locations.map((l) => cachedIntervals(l, ruleSet, at)).reduce(intersect);
  const k = all.findIndex(([, end]) => end > at);
  if (k < 0) return { open: false, opensAt: null, closesAt: null };
  const [start, end] = all[k]!;
  if (start <= at) return { open: true, closesAt: end, opensAt: all[k + 1]?.[0] ?? null };
  return { open: false, opensAt: start, closesAt: end };
}
