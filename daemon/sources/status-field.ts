// The mirror's own write to a contact (the number's final status, `mirror.statusProperty`) as the contact sync sees
// it: a change the sync need not read, so a webhook about it queues no pull.
import { isDeepStrictEqual } from 'node:util';
import type { SyncConfig } from '../config.ts';

/**
 * The status field whose changes a source may ignore, or null: none is configured, or the sync reads it itself
 * (`also` names the fields a source reads beyond the mapping, e.g. HubSpot's selection filters), when a change to it
 * can change a contact's numbers, variables or selection.
 */
export function ignorableStatusField(sync: SyncConfig, also: readonly string[] = []): string | null {
  const field = sync.mirror?.statusProperty;
  if (!field) return null;
  const read = new Set([...sync.mapping.phone, ...Object.values(sync.mapping.variables), ...sync.mapping.doNotCall.map((d) => d.field), ...also]);
  return read.has(field) ? null : field;
}

/**
 * The fields a change touched, from a record before and after it (`custom.<key>` for the record's `customKey`
 * object): every field `before` carries that differs, plus, when `before` is a whole record (it has an `id`), fields
 * only `after` has. `ignore` lists bookkeeping fields every change touches (update times).
 */
export function changedFields(before: Record<string, unknown>, after: Record<string, unknown>, customKey: string, ignore: readonly string[]): string[] {
  const whole = 'id' in before;
  const changed: string[] = [];
  const compare = (b: Record<string, unknown>, a: Record<string, unknown>, prefix: string, skip: readonly string[]) => {
    const keys = new Set([...Object.keys(b), ...(whole ? Object.keys(a) : [])]);
    for (const k of keys) if (!skip.includes(k) && !isDeepStrictEqual(b[k] ?? null, a[k] ?? null)) changed.push(`${prefix}${k}`);
  };
  compare(before, after, '', [...ignore, customKey]);
  const objectOf = (v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? v as Record<string, unknown> : {});
  if (customKey in before || (whole && customKey in after)) compare(objectOf(before[customKey]), objectOf(after[customKey]), 'custom.', []);
  return changed;
}
