// The CRM fields a sync reads and writes, as its mapping names them, judged against the CRM's own field list (HubSpot's
// properties, Pipedrive's person fields, Salesforce's describe): each exists, with a type the mapping can read; a
// missing one is named with the existing fields that are close to it.
import type { SyncConfig } from '../config.ts';
import { fail, ok, type CheckResult } from './result.ts';

/** What the sync does with a field: read a phone, a variable, Do Not Call, callee evidence, a filter; write a status. */
export type FieldUse = 'phone' | 'variable' | 'doNotCall' | 'timeZone' | 'region' | 'postalCode' | 'country' | 'filter' | 'status';

export interface MappedField {
  field: string;
  use: FieldUse;
  /** Where the configuration names it (mapping.phone, mirror.statusProperty, ...). */
  setting: string;
  /** Do Not Call: the values that mark a contact (option ids or text), when the mapping lists them. */
  marked?: readonly (string | number)[];
}

/** Every field the sync's mapping (and mirror) names, Do Not Call included (the CRM's own, such as Salesforce's DoNotCall). */
export function mappedFields(sync: SyncConfig): MappedField[] {
  const m = sync.mapping;
  const fields: MappedField[] = [
    ...m.phone.map((field) => ({ field, use: 'phone' as const, setting: 'mapping.phone' })),
    ...Object.entries(m.variables).map(([name, field]) => ({ field, use: 'variable' as const, setting: `mapping.variables.${name}` })),
    ...m.doNotCall.map((d) => ({ field: d.field, use: 'doNotCall' as const, setting: 'mapping.doNotCall', ...(d.marked ? { marked: d.marked } : {}) })),
  ];
  for (const use of ['timeZone', 'region', 'postalCode', 'country'] as const) {
    const field = m[use];
    if (field) fields.push({ field, use, setting: `mapping.${use}` });
  }
  if (sync.mirror?.statusProperty && sync.mirror.sink.type === 'source') fields.push({ field: sync.mirror.statusProperty, use: 'status', setting: 'mirror.statusProperty' });
  return fields;
}

/** Levenshtein distance, case-insensitive (field names differ in case between CRMs and their UIs). */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  let row = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const next = [i];
    for (let j = 1; j <= t.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (s[i - 1] === t[j - 1] ? 0 : 1));
    row = next;
  }
  return row[t.length]!;
}

/** The names among `names` close to `name` (a typo away, or holding it), nearest first, at most `max`. */
export function closeNames(name: string, names: Iterable<string>, max = 3): string[] {
  const limit = Math.max(2, Math.floor(name.length / 3));
  const lower = name.toLowerCase();
  return [...new Set(names)]
    .map((n) => ({ n, d: editDistance(name, n), holds: n.length > 2 && (n.toLowerCase().includes(lower) || lower.includes(n.toLowerCase())) }))
    .filter((c) => c.n !== name && (c.d <= limit || c.holds))
    .sort((a, b) => a.d - b.d || a.n.localeCompare(b.n))
    .slice(0, max)
    .map((c) => c.n);
}

/** A field as the CRM lists it. `options`: an option field's values (id or internal value, and label). */
export interface CrmField {
  name: string;
  type: string;
  label?: string;
  options?: readonly { value: string; label: string }[];
  /** The sync may write it (for the mirror's status field); undefined: not known. */
  writable?: boolean;
}

export interface FieldJudge {
  /** The CRM's word for its fields ("HubSpot contact property", "Pipedrive person field", "Salesforce field on Contact"). */
  noun: string;
  /** Why the CRM's type cannot serve this use, or null when it can. */
  problem(f: CrmField, use: MappedField): string | null;
  /** Where to find or make the field, for the fix. */
  where: string;
}

/**
 * One line per field that is missing or of a type the mapping cannot read (a Do Not Call field's refuses the sync:
 * without it every contact reads as not marked), and one line for all those that are right.
 */
export function judgeFields(sync: SyncConfig, fields: readonly MappedField[], catalog: readonly CrmField[], judge: FieldJudge): CheckResult[] {
  const byName = new Map(catalog.map((f) => [f.name.toLowerCase(), f]));
  // A field is found by its name; a close one also by its label (Pipedrive's custom fields are named by a hash).
  const byLabel = new Map(catalog.filter((f) => f.label && f.label !== f.name).map((f) => [f.label!, f]));
  const shown = (f: CrmField) => (f.label && f.label !== f.name ? `${f.name} ("${f.label}")` : f.name);
  const out: CheckResult[] = [];
  const right: string[] = [];
  for (const m of fields) {
    const dnc = m.use === 'doNotCall';
    const check = dnc ? 'crm.doNotCall' : 'crm.field';
    const found = byName.get(m.field.toLowerCase());
    if (!found) {
      const close = [...new Set(closeNames(m.field, [...catalog.map((f) => f.name), ...byLabel.keys()])
        .map((n) => byLabel.get(n) ?? byName.get(n.toLowerCase())!))].slice(0, 3);
      const closeText = close.length ? `; close ones that exist: ${close.map(shown).join(', ')}` : '';
      const consequence = dnc ? ': every contact would read as not marked Do Not Call, and be called' : '';
      out.push(fail(sync.id, check, `${m.setting}: the ${judge.noun} "${m.field}" does not exist${closeText}${consequence}`,
        `name an existing field in ${m.setting}${close.length ? ` (${close[0]!.name}?)` : ''}, or create "${m.field}" (${judge.where})`, dnc));
      continue;
    }
    const problem = judge.problem(found, m);
    if (problem) {
      out.push(fail(sync.id, check, `${m.setting}: the ${judge.noun} "${shown(found)}" (${found.type}) ${problem}`,
        dnc ? 'map a yes/no field, or list the values that mark a contact in mapping.doNotCall.marked (an option field\'s option ids)' : `map a field of a type this use reads (${judge.where})`,
        dnc));
      continue;
    }
    right.push(found.name);
  }
  if (right.length) out.push(ok(sync.id, 'crm.fields', `${right.length} mapped field${right.length === 1 ? '' : 's'} exist with types the mapping reads: ${[...new Set(right)].join(', ')}`));
  return out;
}
