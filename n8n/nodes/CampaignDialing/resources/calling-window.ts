// Campaign Number > Calling Window: whether a phone number's callee may be called now (or at a given time) and when
// that changes, from the rules and tables the sync daemon applies (api/calling-window/); no request is made, nothing
// is dialed, and no credential is asked for (see the node's credentials entry).
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { heldBecause, placeCallee, type Evidence, type LocationFields } from '../../../api/calling-window/locate.ts';
import { STATE_RULES, WEEKDAYS, type Hours, type Weekday } from '../../../api/calling-window/rules.ts';
import { callingWindow, intervals, rulesFor, type RuleSet } from '../../../api/calling-window/window.ts';
import { localWallTime, offsetAt } from '../../../api/wall-clock.ts';
import { operationError } from '../shared/errors.ts';
import { show } from '../shared/fields.ts';
import { forEachItem } from '../shared/items.ts';
import { phoneNumberField, readPhoneNumber } from '../shared/phone-number.ts';

const R = 'campaignNumber';
/** The operation's value: it sends no request, so the node's credential is hidden (not asked for) under it. */
export const CALLING_WINDOW = 'callingWindow';
const shown = show(R, [CALLING_WINDOW]);

/** The evidence fields besides the phone number, as the daemon's mapping names them. */
const EVIDENCE_FIELDS: Array<{ name: keyof LocationFields; displayName: string; placeholder: string; description: string }> = [
  {
    name: 'timeZone', displayName: 'Time Zone', placeholder: 'e.g. {{ $json.timeZone }}',
    description: 'The callee\'s time zone as the CRM holds it, if it does: an IANA name such as America/New_York, or a HubSpot hs_timezone value',
  },
  {
    name: 'region', displayName: 'State or Province', placeholder: 'e.g. {{ $json.state }}',
    description: 'The US state or Canadian province of the callee\'s address, as a code (FL, ON) or a name (Florida), if known',
  },
  {
    name: 'postalCode', displayName: 'Postal Code', placeholder: 'e.g. {{ $json.zip }}',
    description: 'The address\'s US ZIP code or Canadian postal code, if known; read when no state or province is given',
  },
  {
    name: 'country', displayName: 'Country', placeholder: 'e.g. {{ $json.country }}',
    description: 'The address\'s country (US, CA, or their names), if known; it tells how to read the state and the postal code',
  },
];

const DAY_NAMES: Record<Weekday, string> = {
  sun: 'Sunday', mon: 'Monday', tue: 'Tuesday', wed: 'Wednesday', thu: 'Thursday', fri: 'Friday', sat: 'Saturday',
};

/** The words Operator Window Days takes for each weekday, lower case: its value (mon) and its full name (monday). */
const DAY_BY_WORD: ReadonlyMap<string, Weekday> = new Map(WEEKDAYS.flatMap((d) => [[d, d], [DAY_NAMES[d].toLowerCase(), d]] as const));

/** The state rows' names, from the rules table itself, so the Apply State Rules description cannot leave one out. */
const STATE_ROW_NAMES = STATE_RULES.map((r) => r.name).sort((a, b) => a.localeCompare(b));
const inAList = (names: readonly string[]) => (names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`);

export const callingWindowFields: INodeProperties[] = [
  phoneNumberField('to check, in international format (+14155550100), usually an expression reading a field of the item. This operation only checks whether its callee may be called now; it dials nothing and adds nothing.', shown),
  {
    displayName: 'To add a number only once its callee may be called, put a Wait node (Resume: At Specified Time, Date and Time {{ $json.opensAt }}) between this operation and Add. The Wait node waits for its first item\'s time: run one number per execution (e.g. a sub-workflow run once for each item).',
    name: 'waitNotice',
    type: 'notice',
    default: '',
    displayOptions: shown,
  },
  ...EVIDENCE_FIELDS.map(({ name, displayName, placeholder, description }): INodeProperties => ({
    displayName, name, type: 'string', default: '', placeholder, description, displayOptions: shown,
  })),
  {
    displayName: 'Options',
    name: 'windowOptions',
    type: 'collection',
    placeholder: 'Add Option',
    default: {},
    displayOptions: shown,
    options: [
      {
        displayName: 'Apply State Rules',
        name: 'stateRules',
        type: 'boolean',
        default: true,
        description: `Whether the stricter hours of the callee's state apply on top of the federal 08:00–21:00 (the rows of ${inAList(STATE_ROW_NAMES)}), as the daemon's compliance.stateRules`,
      },
      {
        displayName: 'At',
        name: 'at',
        type: 'dateTime',
        default: '',
        description: 'The time to answer for instead of now; without an offset it is read in the workflow\'s time zone',
      },
      {
        displayName: 'Evidence',
        name: 'evidence',
        type: 'options',
        options: [
          { name: 'All', value: 'all', description: 'The callee may be in the zones of every piece of evidence, and is called only while all of their windows are open' },
          { name: 'Best', value: 'best', description: 'The strongest piece that names zones decides: the time zone, then the address, then the number' },
        ],
        default: 'all',
        description: 'Which evidence places the callee, as the daemon\'s compliance.evidence',
      },
      {
        displayName: 'Operator Window Days',
        name: 'operatorDays',
        type: 'multiOptions',
        // Listed in n8n's order for options (by name), not the week's.
        options: WEEKDAYS.map((value) => ({ name: DAY_NAMES[value], value })).sort((a, b) => a.name.localeCompare(b.name)),
        default: [],
        description: 'The weekdays your own calling window allows, in the callee\'s time; none chosen: every day. An expression may give a list or a text such as mon,tue,wed (commas or spaces, any case, full names too).',
      },
      {
        displayName: 'Operator Window From',
        name: 'operatorFrom',
        type: 'string',
        default: '',
        placeholder: 'e.g. 09:00',
        description: 'Start of your own calling window (HH:MM, the callee\'s local time), inside the law\'s, as the daemon\'s compliance.window.from',
      },
      {
        displayName: 'Operator Window To',
        name: 'operatorTo',
        type: 'string',
        default: '',
        placeholder: 'e.g. 20:00',
        description: 'End of your own calling window (HH:MM or 24:00, the callee\'s local time), as the daemon\'s compliance.window.to',
      },
    ],
  },
];

const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;

/**
 * The weekdays of Operator Window Days. The editor gives a list of values; an expression may give a list or a text
 * ("mon,tue,wed", "Monday Friday"), read whole: every word a weekday (its value or full name, any case) or the field
 * is refused naming the value, never read in part. Nothing set: every day. A text or expression that names no day is
 * refused too: it is not the editor's "none chosen", and reading it as every day would widen the window.
 */
function operatorDaysOf(ctx: IExecuteFunctions, options: IDataObject, itemIndex: number): Weekday[] {
  if (!Object.hasOwn(options, 'operatorDays')) return [];
  const value: unknown = options.operatorDays;
  if (Array.isArray(value) && value.length === 0) return [];
  const shown = typeof value === 'string' ? `"${value}"` : value === undefined ? 'nothing (an expression that gave undefined)' : JSON.stringify(value);
  const wrong = (message: string) => operationError(ctx.getNode(), message, {
    itemIndex,
    description: 'Pick weekdays from the list, or give them as a list or a text of weekdays separated by commas or spaces, by value or full name in any case, e.g. mon,tue,wed,thu,fri or Monday, Friday. Remove the option to allow every day.',
  });
  const parts = Array.isArray(value) ? value : [value];
  const days = new Set<Weekday>();
  for (const part of parts) {
    if (typeof part !== 'string') throw wrong(`Operator Window Days must be weekdays, not ${shown}`);
    for (const word of part.split(/[\s,;]+/).filter(Boolean)) {
      const day = DAY_BY_WORD.get(word.toLowerCase());
      if (!day) throw wrong(`Operator Window Days has no day "${word}" (in ${shown})`);
      days.add(day);
    }
  }
  if (!days.size) throw wrong(`Operator Window Days names no weekday: ${shown}`);
  return WEEKDAYS.filter((d) => days.has(d));
}

/** The rule set of the options: state rules, and the operator's window when one is set (days alone: all day on those). */
function ruleSetOf(ctx: IExecuteFunctions, options: IDataObject, itemIndex: number): RuleSet {
  const wrong = (message: string, description: string) => operationError(ctx.getNode(), message, { itemIndex, description });
  const stateRules = options.stateRules !== false;
  const from = String(options.operatorFrom ?? '').trim();
  const to = String(options.operatorTo ?? '').trim();
  const days = operatorDaysOf(ctx, options, itemIndex);
  if (!from && !to && !days.length) return { stateRules };
  let hours: Hours = ['00:00', '24:00'];
  if (from || to) {
    if (!from || !to) throw wrong(`Operator Window ${from ? 'To' : 'From'} is empty for item ${itemIndex}`, 'Set both ends of your own window (e.g. 09:00 and 20:00), or neither.');
    if (!HHMM.test(from)) throw wrong(`Operator Window From must be a time HH:MM, not "${from}"`, 'Give a local time such as 09:00.');
    if (!HHMM.test(to) && to !== '24:00') throw wrong(`Operator Window To must be a time HH:MM or 24:00, not "${to}"`, 'Give a local time such as 20:00.');
    if (from >= to) throw wrong(`Operator Window From (${from}) must be before Operator Window To (${to})`, 'A window does not span midnight.');
    hours = [from, to];
  }
  return { stateRules, operator: { hours, ...(days.length ? { days } : {}) } };
}

/**
 * The instant the At option names, or now. An ISO date and time with an offset (or Z) is that instant; without one it
 * is read on the workflow's clock, as n8n's date pickers mean it.
 */
function instantOf(ctx: IExecuteFunctions, value: unknown, itemIndex: number): number {
  if (value === undefined || value === null || value === '') return Date.now();
  if (value instanceof Date) return value.getTime();
  const toMillis = (value as { toMillis?: unknown }).toMillis;
  if (typeof toMillis === 'function') return Number(toMillis.call(value)); // a DateTime of an expression ($now)
  const text = String(value).trim();
  const m = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2})(:\d{2}(?:\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/i.exec(text);
  const wall = m ? Date.parse(`${m[1]}T${m[2] ?? '00:00'}${m[3] ?? ':00'}Z`) : NaN;
  if (!m || Number.isNaN(wall)) {
    throw operationError(ctx.getNode(), `The option At needs a date and time, not "${text}"`, {
      itemIndex, description: 'Use the date picker, or an ISO 8601 value such as 2026-03-02T15:00:00Z.',
    });
  }
  const zone = m[4];
  if (zone) {
    if (/^z$/i.test(zone)) return wall;
    const sign = zone.startsWith('-') ? -1 : 1;
    const [hh, mm] = [zone.slice(1, 3), zone.slice(-2)];
    return wall - sign * (Number(hh) * 60 + Number(mm)) * 60_000;
  }
  // The workflow's wall clock: the offset taken twice finds the instant across a change of offset.
  const timeZone = ctx.getTimezone();
  return wall - offsetAt(timeZone, wall - offsetAt(timeZone, wall));
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

const twoDigits = (n: number) => String(n).padStart(2, '0');

/** An instant on a zone's clock, ISO 8601 to the second with that clock's offset: 2026-11-30T09:00:00-05:00. */
function onClock(ms: number | null, timeZone: string): string | null {
  if (ms === null) return null;
  const minutes = Math.round(offsetAt(timeZone, ms) / 60_000);
  const sign = minutes < 0 ? '-' : '+';
  return `${localWallTime(ms, timeZone)}${sign}${twoDigits(Math.floor(Math.abs(minutes) / 60))}:${twoDigits(Math.abs(minutes) % 60)}`;
}

/**
 * The clock the answer's local times are written on. One zone: the callee's. Several (the callee may be in any of
 * them): the zone whose own window sets the answer's next change, i.e. while closed the one whose window opens last
 * (opensAt is its opening), while open the one whose window closes first (closesAt is its close); of zones that set it
 * together (one clock under several names: Europe/Guernsey … Europe/London) the first by name, as when a fixed clock
 * (Mississippi's) sets it alone. None, or no window in the horizon with several zones: null.
 */
function clockOf(zones: readonly string[], states: readonly string[], ruleSet: RuleSet, at: number, w: { open: boolean; opensAt: number | null; closesAt: number | null }): string | null {
  if (zones.length <= 1) return zones[0] ?? null;
  const edge = w.open ? w.closesAt : w.opensAt;
  if (edge === null) return null;
  const rules = rulesFor(states, ruleSet);
  return zones.find((zone) => intervals([zone], rules, at).some(([start, end]) => (w.open ? end : start) === edge)) ?? zones[0]!;
}

function answer(ctx: IExecuteFunctions, itemIndex: number): IDataObject {
  const text = String(ctx.getNodeParameter('phoneNumber', itemIndex, '') ?? '').trim();
  if (!text) {
    throw operationError(ctx.getNode(), `The Phone Number field is empty for item ${itemIndex}`, {
      itemIndex, description: 'Give the phone number in international format, e.g. +14155550100, usually an expression such as {{ $json.phone }}.',
    });
  }
  const read = readPhoneNumber(text);
  if (!read.ok) {
    throw operationError(ctx.getNode(), `The phone number "${text}" of item ${itemIndex} cannot be read: ${read.reason}`, {
      itemIndex, description: 'Give it in international format: + and the country calling code, then the number, e.g. +14155550100 or +44 20 7946 0018 (spaces, dashes, dots and brackets are ignored).',
    });
  }
  const fields: LocationFields = {};
  for (const { name } of EVIDENCE_FIELDS) {
    const value = String(ctx.getNodeParameter(name, itemIndex, '') ?? '').trim();
    if (value) fields[name] = value;
  }
  const options = ctx.getNodeParameter('windowOptions', itemIndex, {}) as IDataObject;
  const evidence: Evidence = options.evidence === 'best' ? 'best' : 'all';
  const ruleSet = ruleSetOf(ctx, options, itemIndex);
  const at = instantOf(ctx, options.at, itemIndex);

  const location = placeCallee(read.number, fields, evidence);
  const window = callingWindow(location, ruleSet, at);
  // Open: a call may start at once, so opensAt is the instant asked about (a Wait node set to it goes straight on).
  const opensAt = window.open ? at : window.opensAt;
  const reason = !location.zones.length
    ? `The callee cannot be placed in any time zone (${location.evidence}), so no calling window is known: give a time zone, a state or a postal code`
    : !window.open && opensAt === null ? 'No calling window opens in the next 15 days under these rules' : heldBecause(location);
  const timeZone = clockOf(location.zones, location.states, ruleSet, at, window);
  return {
    number: read.e164,
    open: window.open,
    opensAt: iso(opensAt),
    closesAt: iso(window.closesAt),
    // The same instants on the callee's own clock (see clockOf for a callee in several zones), and on every zone's.
    opensAtLocal: timeZone === null ? null : onClock(opensAt, timeZone),
    closesAtLocal: timeZone === null ? null : onClock(window.closesAt, timeZone),
    timeZone,
    localTimes: location.zones.map((zone) => ({ timeZone: zone, opensAt: onClock(opensAt, zone), closesAt: onClock(window.closesAt, zone) })),
    evidence: location.evidence,
    zones: location.zones,
    states: location.states,
    rules: rulesFor(location.states, ruleSet).map(({ name, source }) => ({ name, source })),
    reason,
  };
}

export async function executeCallingWindow(ctx: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[]> {
  return forEachItem(ctx, items, async (i) => [answer(ctx, i)]);
}
