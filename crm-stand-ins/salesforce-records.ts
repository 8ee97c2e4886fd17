// The Salesforce stand-in's objects: field definitions of Contact, Lead, Campaign, CampaignMember and Task, record ids, and values as REST JSON shows them.

export type SObjectName = 'Contact' | 'Lead' | 'Campaign' | 'CampaignMember' | 'Task';

export type FieldType = 'id' | 'reference' | 'string' | 'picklist' | 'boolean' | 'datetime' | 'date' | 'int';

/** Stored values: datetimes as ms since the epoch, dates as YYYY-MM-DD, ids as 18-character ids. */
export type FieldValue = string | number | boolean | null;

export interface FieldDef {
  name: string;
  type: FieldType;
  createable: boolean;
  updateable: boolean;
  /** For references: the relationship name SOQL walks (CampaignMember.ContactId → Contact) and the types it may point at. */
  relationship?: { name: string; to: readonly SObjectName[] };
  /** A restricted picklist's values. */
  values?: readonly string[];
  externalId?: boolean;
  /** A text field's length: a longer value is refused (STRING_TOO_LONG), as Salesforce refuses it. */
  length?: number;
  /** Derived from other fields (Name = FirstName + LastName); never written. */
  computed?: (r: SfRecord) => FieldValue;
}

export interface SObjectDef {
  name: SObjectName;
  keyPrefix: string;
  /** By lower-cased name: SOQL and JSON field names are case-insensitive. */
  fields: Map<string, FieldDef>;
  /** By lower-cased relationship name. */
  relationships: Map<string, FieldDef>;
}

export interface SfRecord {
  type: SObjectName;
  /** By canonical field name. */
  values: Record<string, FieldValue>;
}

const CASE_SAFE = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ012345';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ID_SHAPE = /^[a-zA-Z0-9]{15}(?:[A-Z0-5]{3})?$/;

/** The 3-character suffix that makes a 15-character, case-sensitive id case-safe: one character per 5, a bit per capital. */
function caseSafeSuffix(id15: string): string {
  let suffix = '';
  for (let chunk = 0; chunk < 3; chunk++) {
    let bits = 0;
    for (let i = 0; i < 5; i++) {
      const c = id15.charCodeAt(chunk * 5 + i);
      if (c >= 65 && c <= 90) bits |= 1 << i;
    }
    suffix += CASE_SAFE[bits];
  }
  return suffix;
}

/** An 18-character id: key prefix, a fixed instance part, the serial in base 62, then the case-safe suffix. */
export function makeId(keyPrefix: string, serial: number): string {
  let s = '';
  for (let n = serial; n > 0; n = Math.floor(n / 62)) s = BASE62[n % 62] + s;
  const id15 = `${keyPrefix}8d0${s.padStart(9, '0')}`;
  return id15 + caseSafeSuffix(id15);
}

/** The 18-character form of a 15- or 18-character id, or null when the text is no id. */
export function toId18(text: string): string | null {
  if (!ID_SHAPE.test(text)) return null;
  const id15 = text.slice(0, 15);
  const id18 = id15 + caseSafeSuffix(id15);
  // An 18-character id whose suffix does not match its first 15 characters was mistyped.
  return text.length === 18 && text.toUpperCase() !== id18.toUpperCase() ? null : id18;
}

/** "2026-01-01T00:00:00.000+0000", the form REST JSON gives datetimes in. */
export function sfDateTime(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '+0000');
}

const DATETIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,3})?(Z|[+-]\d{2}:?\d{2})$/;

/** Parses an ISO 8601 datetime with a zone (Z, +00:00 or +0000); NaN when it is not one. */
export function parseDateTime(text: string): number {
  const m = DATETIME.exec(text);
  if (!m) return Number.NaN;
  const zone = m[8] === 'Z' ? 'Z' : `${m[8]!.slice(0, 3)}:${m[8]!.slice(-2)}`;
  const ms = Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${(m[7] ?? '.000').padEnd(4, '0')}${zone}`);
  // Date.parse may roll 2026-02-30 over to March; a real calendar date survives the round trip.
  const day = new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!));
  return day.getUTCDate() === +m[3]! && +m[4]! < 24 && +m[5]! < 60 && +m[6]! < 60 ? ms : Number.NaN;
}

/** True for a real calendar date written YYYY-MM-DD. */
export function isDate(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const d = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(text);
}

function field(name: string, type: FieldType, more: Partial<FieldDef> = {}): FieldDef {
  const system = ['Id', 'CreatedDate', 'LastModifiedDate', 'SystemModstamp', 'IsDeleted'].includes(name);
  return { name, type, createable: !system, updateable: !system, ...more };
}

function define(name: SObjectName, keyPrefix: string, list: FieldDef[]): SObjectDef {
  const all = [
    field('Id', 'id'),
    ...list,
    field('OwnerId', 'reference'),
    field('CreatedDate', 'datetime'),
    field('LastModifiedDate', 'datetime'),
    field('SystemModstamp', 'datetime'),
    field('IsDeleted', 'boolean'),
  ];
  const fields = new Map(all.map((f) => [f.name.toLowerCase(), f]));
  // A configured custom field named like another field would silently replace it (field names are case-insensitive).
  if (fields.size < all.length) {
    const twice = all.find((f, i) => all.findIndex((g) => g.name.toLowerCase() === f.name.toLowerCase()) !== i)!;
    throw new RangeError(`${name}: the field ${twice.name} is defined twice; give the custom fields (customPhoneField, statusField, taskExternalIdField) names of their own`);
  }
  const relationships = new Map(all.filter((f) => f.relationship).map((f) => [f.relationship!.name.toLowerCase(), f]));
  return { name, keyPrefix, fields, relationships };
}

const fullName = (r: SfRecord): FieldValue =>
  [r.values.FirstName, r.values.LastName].filter((v) => typeof v === 'string' && v !== '').join(' ') || null;

/** The custom fields an org adds to Contact and Lead: a second phone number, and the text field the dialer writes a number's final status to. */
export interface PersonFields { customPhoneField: string; statusField: string }

function person(name: 'Contact' | 'Lead', keyPrefix: string, custom: PersonFields, extra: FieldDef[]): SObjectDef {
  return define(name, keyPrefix, [
    field('FirstName', 'string'),
    field('LastName', 'string'),
    field('Name', 'string', { createable: false, updateable: false, computed: fullName }),
    field('Email', 'string'),
    field('Phone', 'string'),
    field('MobilePhone', 'string'),
    field(custom.customPhoneField, 'string'),
    field('DoNotCall', 'boolean'),
    field(custom.statusField, 'string'),
    // A Long Text Area (32,000 characters) on both objects, where FirstName holds 40 and LastName 80.
    field('Description', 'string'),
    ...extra,
  ]);
}

export const TASK_SUBTYPES = ['Task', 'Email', 'ListEmail', 'Cadence', 'Call', 'LinkedIn'] as const;
export const CALL_TYPES = ['Internal', 'Inbound', 'Outbound'] as const;

/** The objects served, for given custom fields on Contact and Lead and a given external-ID field on Task. */
export function defineSchema(custom: PersonFields, taskExternalIdField: string): Map<string, SObjectDef> {
  const contact = person('Contact', '003', custom, [field('Title', 'string')]);
  const lead = person('Lead', '00Q', custom, [field('Company', 'string'), field('Status', 'string'), field('IsConverted', 'boolean', { createable: false, updateable: false })]);
  const campaign = define('Campaign', '701', [
    field('Name', 'string'),
    field('Type', 'string'),
    field('Status', 'string'),
    field('IsActive', 'boolean'),
  ]);
  const member = define('CampaignMember', '00v', [
    field('CampaignId', 'reference', { relationship: { name: 'Campaign', to: ['Campaign'] }, updateable: false }),
    field('ContactId', 'reference', { relationship: { name: 'Contact', to: ['Contact'] }, updateable: false }),
    field('LeadId', 'reference', { relationship: { name: 'Lead', to: ['Lead'] }, updateable: false }),
    field('LeadOrContactId', 'reference', { createable: false, updateable: false }),
    field('Status', 'string'),
    field('HasResponded', 'boolean', { createable: false, updateable: false }),
  ]);
  const task = define('Task', '00T', [
    field('WhoId', 'reference', { relationship: { name: 'Who', to: ['Contact', 'Lead'] } }),
    // Lengths as Task's describe gives them (Description is a long text area of 32,000).
    field('Subject', 'string', { length: 255 }),
    field('TaskSubtype', 'picklist', { values: TASK_SUBTYPES, updateable: false }),
    field('CallType', 'picklist', { values: CALL_TYPES }),
    field('Status', 'string'),
    field('Priority', 'string'),
    field('CallDurationInSeconds', 'int'),
    field('CallDisposition', 'string', { length: 255 }),
    field('CallObject', 'string', { length: 255 }),
    field('ActivityDate', 'date'),
    field('Description', 'string', { length: 32_000 }),
    field(taskExternalIdField, 'string', { externalId: true, length: 255 }),
  ]);
  return new Map([contact, lead, campaign, member, task].map((d) => [d.name.toLowerCase(), d]));
}

/** A stored value as REST JSON shows it. */
export function jsonValue(def: FieldDef, record: SfRecord): FieldValue {
  const v = def.computed ? def.computed(record) : (record.values[def.name] ?? null);
  return def.type === 'datetime' && typeof v === 'number' ? sfDateTime(v) : v;
}

/** `/services/data/v62.0/sobjects/Contact/003…`, the url of a record's attributes. */
export function recordUrl(apiVersion: string, record: SfRecord): string {
  return `/services/data/v${apiVersion}/sobjects/${record.type}/${record.values.Id}`;
}
