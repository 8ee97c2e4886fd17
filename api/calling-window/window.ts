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

/** Easter Sunday of a Gregorian year (the anonymous algorithm of Meeus's "Astronomical Algorithms"), as a UTC midnight. */
function easter(year: number): number {
  const a = year % 19, b = Math.floor(year / 100), c = year % 100, d = Math.floor(b / 4), e = b % 4;
  const f = Math.floor((b + 8) / 25), g = Math.floor((b - f + 1) / 3), h = (19 * a + b - d - g + 15) % 30;
  const i = Math.floor(c / 4), k = c % 4, l = (32 + 2 * e + 2 * i - h - k) % 7, m = Math.floor((a + 11 * h + 22 * l) / 451);
  const month = Math.floor((h + l - 7 * m + 114) / 31), day = ((h + l - 7 * m + 114) % 31) + 1;
  return Date.UTC(year, month - 1, day);
}

/** The date (a UTC midnight) a holiday falls on in a year, before any weekend observance; null: not that year. */
function holidayDate(h: Holiday, year: number): number | null {
  if (h.years && ((year - h.years.from) % h.years.every + h.years.every) % h.years.every !== 0) return null;
  let date: number;
  if ('easter' in h) date = easter(year) + h.easter * DAY;
  else if ('day' in h) date = Date.UTC(year, h.month - 1, h.day);
  else {
    const wd = WEEKDAYS.indexOf(h.weekday);
    if (h.nth > 0) {
      const first = new Date(Date.UTC(year, h.month - 1, 1)).getUTCDay();
      date = Date.UTC(year, h.month - 1, 1 + ((wd - first + 7) % 7) + (h.nth - 1) * 7);
    } else {
      const lastDay = new Date(Date.UTC(year, h.month, 0));
      date = Date.UTC(year, h.month - 1, lastDay.getUTCDate() - ((lastDay.getUTCDay() - wd + 7) % 7));
    }
  }
  return date + (h.shift ?? 0) * DAY;
}

/** The holiday a local date (as a UTC midnight) is, or the day its statute keeps a weekend one on; undefined: none. */
export function holidayOn(holidays: readonly Holiday[], date: number): Holiday | undefined {
  const year = new Date(date).getUTCFullYear();
  for (const y of [year - 1, year, year + 1]) {
    for (const h of holidays) {
      const d = holidayDate(h, y);
      if (d === null) continue;
      if (d === date) return h;
      const moved = { 6: h.observed?.sat, 0: h.observed?.sun }[new Date(d).getUTCDay()];
      if (moved && d + moved * DAY === date) return h;
    }
  }
  return undefined;
}

/** Whether a local date (as a UTC midnight) is one of the holidays, or the day its statute keeps a weekend one on. */
export function isHoliday(holidays: readonly Holiday[], date: number): boolean {
  return holidayOn(holidays, date) !== undefined;
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
