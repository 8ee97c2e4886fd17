// Exemptions from the Do Not Call registry and state lists, read from a contact's mapped fields. The periods are data,
// with their sources; a date that cannot be read (or lies in the future) exempts nothing and is a record error of the
// contact: failing closed, its numbers are then judged by the lists alone. No exemption lifts the company's own list.

/** One kind of exemption: the mapping field naming it, how long it lasts after its date (null: until withdrawn). */
export interface ExemptionRule {
  field: 'consent' | 'lastPurchase' | 'lastInquiry';
  /** Said in evidence and docs. */
  name: string;
  months: number | null;
  source: string;
}

export const EXEMPTION_RULES: readonly ExemptionRule[] = [
  { field: 'consent', name: 'written consent', months: null, source: '16 CFR 310.4(b)(1)(iii)(B)(1): the person\'s express written agreement to be called, until withdrawn' },
  { field: 'lastPurchase', name: 'purchase', months: 18, source: '16 CFR 310.2(q): an established business relationship, 18 months after the last purchase, rental, lease or financial transaction' },
  { field: 'lastInquiry', name: 'inquiry', months: 3, source: '16 CFR 310.2(q): an established business relationship, 3 months after an inquiry or application' },
];

/** Consent lasts until withdrawn: the end an exemption of consent is stored with. */
export const UNTIL_WITHDRAWN = -1;

export interface Exemption {
  /** When it ends (ms since the epoch), or UNTIL_WITHDRAWN. */
  until: number;
  /** In words, for the evidence: "purchase 2026-03-01 (until 2027-09-01)". */
  why: string;
}

export interface ExemptionError { field: string; value: string; reason: string }

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

/**
 * A date as CRMs give them: `2026-03-01` (a day: it counts from its first moment anywhere, 00:00 at UTC+14, so an
 * exemption counted from it never lasts longer than it could), an ISO time with its offset, or epoch milliseconds
 * (HubSpot's date properties, as a number or digits). Returns its instant (ms) or why it cannot be read.
 */
export function readDate(raw: unknown): { at: number; day: boolean } | string {
  if (typeof raw === 'number' && !Number.isInteger(raw)) return 'not a date';
  const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw.trim() : null;
  if (text === null) return 'not a date';
  if (/^\d{10,13}$/.test(text)) {
    const ms = Number(text.length === 13 ? text : `${text}000`);
    return { at: ms, day: false };
  }
  const d = DAY.exec(text);
  if (d) {
    // The day's first moment anywhere (UTC+14): an exemption counted from it ends no later than it could.
    const at = Date.parse(`${text}T00:00:00+14:00`);
    const back = new Date(Date.UTC(Number(d[1]), Number(d[2]) - 1, Number(d[3])));
    if (Number.isNaN(at) || back.getUTCMonth() !== Number(d[2]) - 1) return 'not a calendar date';
    return { at, day: true };
  }
  if (TIME.test(text)) {
    const at = Date.parse(text);
    if (!Number.isNaN(at)) return { at, day: false };
  }
  return 'not a date (2026-03-01, an ISO time with its offset, or epoch milliseconds)';
}

/** The instant `months` calendar months after `at` (the same day of the month, or the month's last when it has none). */
export function addMonths(at: number, months: number): number {
  const d = new Date(at);
  const target = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, 1, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds()));
  const last = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(d.getUTCDate(), last));
  return target.getTime();
}

function shown(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

/** Pipedrive's custom field objects ({value}) and single-entry lists read as their value. */
function unwrap(value: unknown): unknown {
  if (Array.isArray(value) && value.length === 1) return unwrap(value[0]);
  return value && typeof value === 'object' && !Array.isArray(value) && 'value' in value ? (value as { value: unknown }).value : value;
}

/**
 * The exemption a contact's fields give it now (the one lasting longest), and the fields that could not be read.
 * `fields` maps each rule's field name to the CRM field the mapping names (absent: not read).
 */
export function readExemption(values: Record<string, unknown>, fields: Partial<Record<ExemptionRule['field'], string>>, now: number): { exemption: Exemption | null; errors: ExemptionError[] } {
  const errors: ExemptionError[] = [];
  let best: Exemption | null = null;
  for (const rule of EXEMPTION_RULES) {
    const field = fields[rule.field];
    if (!field) continue;
    const raw = unwrap(values[field]);
    if (raw === null || raw === undefined || raw === '') continue;
    const read = readDate(raw);
    const problem = typeof read === 'string' ? read : read.at > now ? 'a date in the future' : null;
    if (problem || typeof read === 'string') {
      errors.push({ field, value: shown(raw), reason: `${rule.name} date in field ${field}: ${problem}; the contact has no ${rule.name} exemption from the Do Not Call lists until it reads as a date` });
      continue;
    }
    const until = rule.months === null ? UNTIL_WITHDRAWN : addMonths(read.at, rule.months);
    if (until !== UNTIL_WITHDRAWN && until <= now) continue;
    const day = read.day ? String(raw).trim() : new Date(read.at).toISOString();
    const why = until === UNTIL_WITHDRAWN ? `${rule.name} of ${day} (until withdrawn)` : `${rule.name} of ${day} (until ${new Date(until).toISOString()})`;
    if (!best || until === UNTIL_WITHDRAWN || (best.until !== UNTIL_WITHDRAWN && until > best.until)) best = { until, why };
  }
  return { exemption: best, errors };
}

/** Whether an exemption stored with `until` holds at `now`. */
export function exemptAt(until: number | undefined, now: number): boolean {
  return until !== undefined && (until === UNTIL_WITHDRAWN || until > now);
}
