// Do Not Call as the mapping names it: which values of a CRM field mark a contact, read one way for every source.
// The table of values is data; a value it does not hold marks nothing silently: the contact is held and reported.

/** A Do Not Call field: its name and, for option fields (Pipedrive's option ids), the values that mark a contact. */
export interface DoNotCallField { field: string; marked?: (string | number)[] }

/**
 * Values read without a `marked` list, compared trimmed and lower-cased. Sources: Salesforce's DoNotCall and
 * HubSpot's booleancheckbox properties (true/false; HubSpot sends them as the strings "true"/"false"), spreadsheet
 * and form exports (yes/no, y/n, 1/0, on/off, checked/unchecked, x). An empty or missing value is not marked.
 */
export const DO_NOT_CALL_VALUES: { readonly marked: readonly string[]; readonly clear: readonly string[] } = {
  marked: ['true', 'yes', 'y', '1', 'on', 'checked', 'x'],
  clear: ['false', 'no', 'n', '0', 'off', 'unchecked', ''],
};

const MARKED = new Set(DO_NOT_CALL_VALUES.marked);
const CLEAR = new Set(DO_NOT_CALL_VALUES.clear);

/** One field's reading: marked, clear, or a value that cannot be read (the contact is then held as marked). */
type Reading = { marked: boolean } | { unreadable: string };

function shown(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

/** Pipedrive's v2 custom field objects ({value, ...}) read as their value. */
function unwrap(value: unknown): unknown {
  return value && typeof value === 'object' && !Array.isArray(value) && 'value' in value ? (value as { value: unknown }).value : value;
}

function readOne(raw: unknown, marked: Set<string> | null): Reading {
  const value = unwrap(raw);
  if (value === null || value === undefined) return { marked: false };
  if (Array.isArray(value)) {
    // A multiple-option field (or a list of values): marked when any entry marks it.
    let any = false;
    for (const v of value) {
      const r = readOne(v, marked);
      if ('unreadable' in r) return { unreadable: shown(value) };
      any ||= r.marked;
    }
    return { marked: any };
  }
  if (typeof value === 'object') return { unreadable: shown(value) };
  const text = String(value).trim();
  if (marked) return { marked: marked.has(text) };
  const key = text.toLowerCase();
  if (MARKED.has(key)) return { marked: true };
  if (CLEAR.has(key)) return { marked: false };
  return { unreadable: shown(value) };
}

export interface DoNotCallReading {
  marked: boolean;
  /** Fields whose value could not be read: the contact is held as marked until they read as a value of the table. */
  unreadable: { field: string; value: string; reason: string }[];
}

/** Whether a contact's fields mark it Do Not Call: any field marking it (or not readable) does. */
export function readDoNotCall(fields: Record<string, unknown>, rules: readonly DoNotCallField[]): DoNotCallReading {
  const out: DoNotCallReading = { marked: false, unreadable: [] };
  for (const rule of rules) {
    const r = readOne(fields[rule.field], rule.marked ? new Set(rule.marked.map((v) => String(v).trim())) : null);
    if ('unreadable' in r) {
      out.marked = true;
      out.unreadable.push({
        field: rule.field, value: r.unreadable,
        reason: rule.marked
          ? `Do Not Call field ${rule.field} holds a value that is not an option id or text (mapping.doNotCall.marked lists ${rule.marked.join(', ')}); the contact's numbers are held out of the campaign until it does`
          : `Do Not Call field ${rule.field} holds a value that is neither yes (${DO_NOT_CALL_VALUES.marked.join(', ')}) nor no (${DO_NOT_CALL_VALUES.clear.filter(Boolean).join(', ')}, empty); the contact's numbers are held out of the campaign until it is one`,
      });
    } else if (r.marked) out.marked = true;
  }
  return out;
}
