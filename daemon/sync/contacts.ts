// From a CRM contact to what the campaign should hold: phone numbers in E.164 and the mapped variable values.
import { createHash } from 'node:crypto';
import { MAX_VAR_VALUE } from '../../api/limits.ts';
import type { Mapping } from '../config.ts';
import { toE164 } from '../phone.ts';
import type { SourceContact } from '../sources/source.ts';
import { readDoNotCall } from './do-not-call.ts';
import { readExemption, type Exemption } from '../dnc/exemptions.ts';

/** A contact mapped for the campaign: the state the daemon keeps per contact. */
export interface MappedContact {
  id: string;
  /** Valid phone numbers in E.164, deduplicated, in field order. */
  phones: string[];
  varValues: string[];
  /** Hash of the variable values: a change means the campaign's number needs replacing. */
  hash: string;
  /** Marked Do Not Call (or its Do Not Call field cannot be read): its numbers leave the campaign and are never added. */
  doNotCall?: boolean;
  /** Marked by a readable Do Not Call value (not by one that cannot be read): its numbers go on the company's list. */
  markedDoNotCall?: boolean;
  /** Its exemption from the Do Not Call registry and state lists (consent, a purchase, an inquiry), if one holds now. */
  exempt?: Exemption;
}

export interface RecordError {
  contactId: string;
  line?: number;
  field: string;
  value: string;
  reason: string;
  code: 'invalid_number' | 'no_number' | 'bad_record' | 'no_window' | 'no_route' | 'unread_evidence';
}

/** Masks all but the last 4 digits: enough to find a record, not enough to call it. */
export function redactPhone(text: string): string {
  return text.replace(/\d(?=(?:\D*\d){4})/g, '•');
}

/** Strings a field holds: a string, a number, a list of either, or Pipedrive's [{value, primary, label}] entries. */
function fieldValues(value: unknown): string[] {
  if (value == null) return [];
  if (typeof value === 'string') return value.trim() ? [value] : [];
  if (typeof value === 'number' || typeof value === 'boolean') return [String(value)];
  if (Array.isArray(value)) return value.flatMap(fieldValues);
  if (typeof value === 'object' && 'value' in value) return fieldValues((value as { value: unknown }).value);
  return [];
}

function varValue(value: unknown): string {
  return fieldValues(value)[0] ?? '';
}

export function hashValues(values: string[]): string {
  return createHash('sha256').update(JSON.stringify(values)).digest('base64url').slice(0, 16);
}

/**
 * Maps one contact; invalid numbers become record errors, the valid ones still count. A contact marked Do Not Call
 * maps to its phone numbers alone, marked (a Do Not Call value that cannot be read is an error, and marks it). A
 * contact the dialer would refuse whole (a variable value over the API's limit) maps to no contact: it is refused
 * alone, with its reason, and what the campaign holds for it stays as it was until the CRM record is fixed.
 */
export function mapContact(contact: SourceContact, mapping: Mapping, now = Date.now()): { contact: MappedContact | null; errors: RecordError[] } {
  const errors: RecordError[] = [];
  const phones: string[] = [];
  for (const field of mapping.phone) {
    for (const raw of fieldValues(contact.fields[field])) {
      const result = toE164(raw, mapping.defaultCountry);
      if (result.ok) {
        if (!phones.includes(result.e164)) phones.push(result.e164);
      } else {
        errors.push({ contactId: contact.id, line: contact.line, field, value: redactPhone(raw), reason: result.reason, code: 'invalid_number' });
      }
    }
  }
  if (!phones.length && !errors.length) {
    errors.push({ contactId: contact.id, line: contact.line, field: mapping.phone.join(','), value: '', reason: 'no phone number', code: 'no_number' });
  }
  const dnc = readDoNotCall(contact.fields, mapping.doNotCall);
  for (const u of dnc.unreadable) errors.push({ contactId: contact.id, line: contact.line, field: u.field, value: u.value, reason: u.reason, code: 'bad_record' });
  // Its variables do not matter: nothing of it is sent, and whatever the campaign holds of it leaves.
  if (dnc.marked) return { contact: { id: contact.id, phones, varValues: [], hash: '', doNotCall: true, ...(dnc.unreadable.length ? {} : { markedDoNotCall: true }) }, errors };
  const { exemption, errors: unread } = readExemption(contact.fields, mapping, now);
  for (const u of unread) errors.push({ contactId: contact.id, line: contact.line, field: u.field, value: u.value, reason: u.reason, code: 'bad_record' });
  const varValues = Object.values(mapping.variables).map((field) => varValue(contact.fields[field]));
  const tooLong = Object.entries(mapping.variables).flatMap(([name, field], i) => {
    const length = varValues[i]!.length;
    if (length <= MAX_VAR_VALUE) return [];
    return [{
      contactId: contact.id, line: contact.line, field, value: '', code: 'bad_record' as const,
      reason: `variable ${name} (field ${field}) is ${length.toLocaleString('en')} characters long; the dialer takes at most ` +
        `${MAX_VAR_VALUE.toLocaleString('en')}, so the contact is not sent until the field is shortened`,
    }];
  });
  if (tooLong.length) return { contact: null, errors: [...errors, ...tooLong] };
  return { contact: { id: contact.id, phones, varValues, hash: hashValues(varValues), ...(exemption ? { exempt: exemption } : {}) }, errors };
}
