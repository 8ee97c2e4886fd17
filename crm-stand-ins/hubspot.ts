// Stand-in for HubSpot's CRM API (contact search, read, batch read, update, contact properties, lists and their memberships (by id, in join order, per record), call logging, a private app token's scopes, rate limits, v3-signed webhooks) seeded with generated contacts,
// as strict as HubSpot's OpenAPI files: a drifting request is refused as HubSpot refuses it, and counted.
import { createHmac, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { generatePeople, seededDoNotCall } from './contacts.ts';
import { areaCodesOption } from './command-line.ts';
import { RefusalLog, type Refusal } from './refusals.ts';

export interface HubSpotStandInOptions {
  /** Default 0 (any free port). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Private-app access token expected as `Authorization: Bearer <token>`; default 'hs-test-token'. */
  token?: string;
  /** App client secret that signs webhooks (v3); default 'hs-client-secret'. */
  clientSecret?: string;
  /** Generated contacts to seed; default 0. */
  contacts?: number;
  seed?: number;
  /**
   * When set, every seeded contact gets the custom booleancheckbox property DO_NOT_CALL_PROPERTY, "true" for this share
   * of them (0 to 1) and "false" for the rest. HubSpot has no Do Not Call property of its own (its contact properties
   * have hs_email_optout for email only): an account that tracks it has a custom property like this one.
   */
  doNotCallShare?: number;
  /** The area codes of the seeded contacts' phones (NANP; default: 100 US area codes). */
  areaCodes?: readonly number[];
  /**
   * The date version this stand-in reports as `apiVersion` (for clients' paths); default '2026-09'. Every version HubSpot
   * publishes (HUBSPOT_DATE_VERSIONS) and the legacy v3 paths are served; any other is refused.
   */
  apiVersion?: string;
  /** Search requests admitted per rolling second; default 5. */
  searchPerSecond?: number;
  /** Other requests admitted per rolling 10 seconds; default 190. */
  requestsPer10Seconds?: number;
  /** When set, createContact / updateContact / deleteContact POST signed webhook events here. */
  webhookUrl?: string;
  /**
   * The private app's scopes (POST /oauth/v2/private-apps/get/access-token-info answers them); a request that needs
   * one the app lacks is answered 403 MISSING_SCOPES, as HubSpot does. Default: DEFAULT_SCOPES.
   */
  scopes?: readonly string[];
  /** Custom contact properties besides HubSpot's default ones (and the Do Not Call one seeded with doNotCallShare). */
  properties?: readonly PropertyInput[];
  /** Clock in ms; default Date.now. */
  now?: () => number;
}

export interface StoredContact {
  id: string;
  properties: Record<string, string | null>;
  createdAt: string;
  updatedAt: string;
  archived: boolean;
}

export interface HubSpotEvent {
  eventId: number;
  subscriptionId: number;
  portalId: number;
  appId: number;
  occurredAt: number;
  /** contact.creation | contact.propertyChange | contact.deletion */
  subscriptionType: string;
  attemptNumber: number;
  objectId: number;
  propertyName?: string;
  propertyValue?: string;
  changeSource: string;
}

/** A call engagement as stored, with the contacts it is associated with (association type 194, call to contact). */
export interface StoredCall {
  id: string;
  properties: Record<string, string | null>;
  createdAt: string;
  updatedAt: string;
  archived: boolean;
  contactIds: string[];
}

/**
 * Decides whether a call input fails validation: true (a generic message) or a message fails it; false or '' lets it
 * through. It sees the input's properties as strings (hs_timestamp already as ISO 8601), before the stand-in adds its own.
 */
export type CallFailurePredicate = (properties: Record<string, string>) => boolean | string;

/**
 * How a batch create answers inputs that fail: `multi-status`, a 207 whose errors name each by its objectWriteTraceId
 * (the others created); `whole-batch`, a 400 for the batch naming no input, nothing created (HubSpot's property
 * validation, e.g. "Property values were not valid"; the date-versioned reference documents only 201 and an error);
 * `whole-batch-traced`, the same 400 whose context names the inputs' objectWriteTraceIds.
 */
export type BatchFailureAnswer = 'multi-status' | 'whole-batch' | 'whole-batch-traced';

export interface HubSpotStandInStats {
  /** Requests received on any path, including refused ones. */
  requests: number;
  /** Search requests admitted by the search rate limit. */
  searches: number;
  /** Requests answered 429 (rate limits and failNext). */
  rateLimited: number;
  /** Most search requests admitted within any rolling second. */
  maxSearchesInAnySecond: number;
  /** Webhook POSTs fired by contact changes that got an HTTP answer / that failed to connect. */
  webhooksDelivered: number;
  webhookFailures: number;
  /** Call engagements created over HTTP (single and batch). */
  callsCreated: number;
  /** Contacts updated through batch/update. */
  contactsBatchUpdated: number;
  /**
   * Requests received per route, keyed `METHOD route` without the version (`GET lists/:listId/memberships/join-order`,
   * `POST contacts/search`, `POST lists/records/memberships/batch/read`): what a client read, to prove its cost.
   */
  byRoute: Record<string, number>;
  /**
   * Requests (or batch inputs) refused because they drift from HubSpot's API: a path it does not serve, a body its
   * schema refuses (types, required fields, unknown fields), a value it does not take. Not counted: 401s, 429s, ids
   * that are not found, and failures a test asks for with failCalls. Tests of a client assert it stays 0.
   */
  refused: number;
}

/** One refused request, as `refusals()` lists it. */
export type HubSpotRefusal = Refusal;

/** A contact property as the properties API gives it (its `type` and `fieldType`; an enumeration's options). */
export interface PropertyInput {
  name: string;
  label?: string;
  type: 'string' | 'number' | 'date' | 'datetime' | 'enumeration' | 'bool' | 'phone_number';
  fieldType: 'text' | 'textarea' | 'number' | 'date' | 'booleancheckbox' | 'select' | 'radio' | 'checkbox' | 'phonenumber' | 'calculation_equation';
  options?: readonly { label: string; value: string }[];
  /** A value HubSpot computes (hs_object_id, createdate): it cannot be written. */
  readOnlyValue?: boolean;
}

/** What a private app token may do, for the tests that take some away. */
export const DEFAULT_SCOPES = ['oauth', 'crm.objects.contacts.read', 'crm.objects.contacts.write', 'crm.lists.read', 'crm.schemas.contacts.read'] as const;

export interface HubSpotStandIn {
  /** Base URL, e.g. http://127.0.0.1:PORT */
  url: string;
  token: string;
  apiVersion: string;
  createContact(props: Record<string, string>): StoredContact;
  updateContact(id: string, props: Record<string, string | null>): StoredContact;
  deleteContact(id: string): void;
  getContact(id: string): StoredContact | undefined;
  /** Live (not archived) contacts in id order. */
  contacts(): StoredContact[];
  lists: {
    create(name: string, ids: string[]): string;
    add(listId: string, ids: string[]): void;
    remove(listId: string, ids: string[]): void;
  };
  sendWebhook(events: HubSpotEvent[], opts?: { url?: string; timestamp?: number; secret?: string }): Promise<{ status: number; body: string }>;
  signV3(method: string, uri: string, body: string, timestamp: number, secret?: string): string;
  /** Resolves when every webhook fired so far by contact changes got an answer (or failed to connect). */
  flushWebhooks(): Promise<void>;
  stats: HubSpotStandInStats;
  /** Makes the next n requests (any endpoint) answer 429 with Retry-After: retryAfterSeconds. */
  failNext(n: number, retryAfterSeconds?: number): void;
  /** Call engagements in id (creation) order. */
  calls(): StoredCall[];
  /** The refused requests counted in stats.refused (the last 100), to show what drifted. */
  refusals(): HubSpotRefusal[];
  /**
   * Call inputs the predicate matches fail validation (in a batch, as `answer` says: a 207 error entry by default; a
   * 400 alone) until failCalls(null).
   */
  failCalls(predicate: CallFailurePredicate | null, answer?: BatchFailureAnswer): void;
  close(): Promise<void>;
}

/**
 * The date versions HubSpot publishes the contacts, calls and lists APIs in (its OpenAPI collection). They are served
 * beside the legacy v3 paths (`/crm/v3/objects/...`, `/crm/v3/lists/...`); any other version is a path HubSpot has not.
 */
export const HUBSPOT_DATE_VERSIONS = ['2025-09', '2026-03', '2026-09'] as const;

// Documented limits of the CRM search endpoints.
const MAX_FILTER_GROUPS = 5;
const MAX_FILTERS_PER_GROUP = 6;
const MAX_FILTERS_TOTAL = 18;
const MAX_SEARCH_LIMIT = 200;
const MAX_SEARCH_RESULTS = 10_000;
const MAX_BATCH_READ = 100;
/** Inputs per batch update (HubSpot's documented cap). */
const MAX_BATCH_UPDATE = 100;
const MAX_MEMBERSHIPS_LIMIT = 250;

const SEED_BASE_MS = Date.parse('2026-01-01T00:00:00.000Z');
const PORTAL_ID = 62515;
const APP_ID = 1160452;
const SUBSCRIPTION_IDS: Record<string, number> = { 'contact.creation': 4001, 'contact.propertyChange': 4002, 'contact.deletion': 4003 };

const OPERATORS = ['EQ', 'NEQ', 'LT', 'LTE', 'GT', 'GTE', 'BETWEEN', 'IN', 'NOT_IN', 'HAS_PROPERTY', 'NOT_HAS_PROPERTY', 'CONTAINS_TOKEN', 'NOT_CONTAINS_TOKEN'] as const;
type Operator = (typeof OPERATORS)[number];

/** base64(HMAC-SHA256(secret, method + uri + body + timestamp)), HubSpot's v3 request signature. */
export function signHubSpotV3(secret: string, method: string, uri: string, body: string, timestamp: number): string {
  return createHmac('sha256', secret).update(`${method}${uri}${body}${timestamp}`, 'utf8').digest('base64');
}

// ---------------------------------------------------------------------------------------------------------------
// Store

interface ObjectRecord {
  id: string;
  idNum: number;
  properties: Record<string, string | null>;
  createdMs: number;
  updatedMs: number;
  archived: boolean;
}

/**
 * What differs between the object types served (contacts, calls): HubSpot names the system timestamps differently per
 * type, and a read without `properties` returns a different default set. Search, reads and the store are written once
 * against this.
 */
interface ObjectSchema {
  /** Singular, for messages. */
  noun: string;
  firstId: number;
  createdProperty: string;
  modifiedProperty: string;
  /** What a read returns when no properties are asked for. */
  defaultProperties: readonly string[];
  /** The properties a free-text search `query` looks in. */
  queryProperties: readonly string[];
  /** Properties the stand-in sets itself; writes to them are ignored. */
  readOnly: ReadonlySet<string>;
  /** Properties compared as numbers in filters (ids, and date-times as ms since the epoch). */
  numeric: Readonly<Record<string, (r: ObjectRecord) => number>>;
  /** The numeric properties whose filter values may also be ISO 8601 strings. */
  dates: ReadonlySet<string>;
}

function defineSchema(o: {
  noun: string;
  firstId: number;
  createdProperty: string;
  modifiedProperty: string;
  defaultProperties: readonly string[];
  queryProperties: readonly string[];
  /** Further date-time properties, read from the stored ISO string. */
  dateProperties?: readonly string[];
}): ObjectSchema {
  const numeric: Record<string, (r: ObjectRecord) => number> = {
    hs_object_id: (r) => r.idNum,
    [o.createdProperty]: (r) => r.createdMs,
    [o.modifiedProperty]: (r) => r.updatedMs,
  };
  for (const p of o.dateProperties ?? []) {
    numeric[p] = (r) => {
      const v = r.properties[p];
      return v == null ? Number.NaN : Date.parse(v);
    };
  }
  return {
    ...o,
    readOnly: new Set(['hs_object_id', o.createdProperty, o.modifiedProperty]),
    numeric,
    dates: new Set([o.createdProperty, o.modifiedProperty, ...(o.dateProperties ?? [])]),
  };
}

const CONTACT_SCHEMA = defineSchema({
  noun: 'contact',
  firstId: 1001,
  createdProperty: 'createdate',
  modifiedProperty: 'lastmodifieddate',
  defaultProperties: ['createdate', 'email', 'firstname', 'hs_object_id', 'lastmodifieddate', 'lastname'],
  queryProperties: ['firstname', 'lastname', 'email', 'phone', 'company'],
});

// Calls get ids of their own range so a test can never mistake a call id for a contact id.
const CALL_SCHEMA = defineSchema({
  noun: 'call',
  firstId: 30_000_001,
  createdProperty: 'hs_createdate',
  modifiedProperty: 'hs_lastmodifieddate',
  defaultProperties: ['hs_createdate', 'hs_lastmodifieddate', 'hs_object_id'],
  queryProperties: ['hs_call_title', 'hs_call_body', 'hs_call_to_number', 'hs_call_from_number'],
  dateProperties: ['hs_timestamp'],
});

/** A column whose values only grow along an index array, so a range filter on it is a binary search. */
interface Column {
  property: string;
  keys: number[];
}

/** Records in one order plus the monotonic columns along that order. */
interface OrderedIndex {
  records: ObjectRecord[];
  columns: Column[];
}

function lowerBound(keys: number[], value: number, strict: boolean): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < value || (strict && keys[mid] === value)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function toView(rec: ObjectRecord, schema: ObjectSchema): StoredContact {
  return {
    id: rec.id,
    properties: { ...rec.properties },
    createdAt: rec.properties[schema.createdProperty]!,
    updatedAt: rec.properties[schema.modifiedProperty]!,
    archived: rec.archived,
  };
}

/**
 * Records of one object type kept in two orders: by id (which is also creation order) and by last modification. Writes
 * get strictly increasing timestamps, so both orders only ever grow at the end: an update moves the record from its
 * place (found by binary search) to the end, and nothing is ever re-sorted. Searches on either order binary-search
 * their range instead of scanning, which keeps a page of 200 among 100,000 contacts well under a millisecond.
 */
class ObjectStore {
  readonly byId = new Map<string, ObjectRecord>();
  readonly schema: ObjectSchema;
  /** Bumped on every write; cached search results are only valid for one version. */
  version = 0;
  private idOrder: ObjectRecord[] = [];
  private idKeys: number[] = [];
  private createdKeys: number[] = [];
  private modOrder: ObjectRecord[] = [];
  private modKeys: number[] = [];
  private lastWriteMs = 0;
  private nextId: number;
  private readonly now: () => number;

  constructor(now: () => number, schema: ObjectSchema) {
    this.now = now;
    this.schema = schema;
    this.nextId = schema.firstId;
  }

  /** A write time later than every earlier one, so the modified date orders writes even when the clock stands still. */
  private writeTime(): number {
    const t = this.now();
    this.lastWriteMs = t > this.lastWriteMs ? t : this.lastWriteMs + 1;
    return this.lastWriteMs;
  }

  /** Inserts at a given time; seeding uses it with times that must only increase. */
  insertAt(props: Record<string, string | null>, ms: number): ObjectRecord {
    const { createdProperty, modifiedProperty, readOnly } = this.schema;
    const idNum = this.nextId++;
    const id = String(idNum);
    const iso = new Date(ms).toISOString();
    const properties: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(props)) if (!readOnly.has(k)) properties[k] = v;
    properties.hs_object_id = id;
    properties[createdProperty] = iso;
    properties[modifiedProperty] = iso;
    const rec: ObjectRecord = { id, idNum, properties, createdMs: ms, updatedMs: ms, archived: false };
    this.byId.set(id, rec);
    this.idOrder.push(rec);
    this.idKeys.push(idNum);
    this.createdKeys.push(ms);
    this.modOrder.push(rec);
    this.modKeys.push(ms);
    if (ms > this.lastWriteMs) this.lastWriteMs = ms;
    this.version++;
    return rec;
  }

  create(props: Record<string, string | null>): ObjectRecord {
    return this.insertAt(props, this.writeTime());
  }

  live(id: string): ObjectRecord | undefined {
    const rec = this.byId.get(id);
    return rec && !rec.archived ? rec : undefined;
  }

  /** Returns the properties whose value changed. */
  update(rec: ObjectRecord, props: Record<string, string | null>): string[] {
    const changed: string[] = [];
    for (const [k, v] of Object.entries(props)) {
      if (this.schema.readOnly.has(k)) continue;
      if ((rec.properties[k] ?? null) !== v) changed.push(k);
      rec.properties[k] = v;
    }
    const ms = this.writeTime();
    this.unlinkModified(rec);
    rec.updatedMs = ms;
    rec.properties[this.schema.modifiedProperty] = new Date(ms).toISOString();
    this.modOrder.push(rec);
    this.modKeys.push(ms);
    this.version++;
    return changed;
  }

  archive(rec: ObjectRecord): number {
    this.unlinkModified(rec);
    const i = lowerBound(this.idKeys, rec.idNum, false);
    this.idOrder.splice(i, 1);
    this.idKeys.splice(i, 1);
    this.createdKeys.splice(i, 1);
    rec.archived = true;
    this.version++;
    return this.writeTime();
  }

  // A splice moves memory once (well under a millisecond at 100,000); rebuilding the orders would cost far more.
  private unlinkModified(rec: ObjectRecord): void {
    const i = lowerBound(this.modKeys, rec.updatedMs, false);
    this.modOrder.splice(i, 1);
    this.modKeys.splice(i, 1);
  }

  liveInIdOrder(): ObjectRecord[] {
    return this.idOrder;
  }

  /** The order a search walks: by the modified date, or by id (equal to creation order). */
  index(order: 'id' | 'modified'): OrderedIndex {
    if (order === 'modified') return { records: this.modOrder, columns: [{ property: this.schema.modifiedProperty, keys: this.modKeys }] };
    return {
      records: this.idOrder,
      columns: [
        { property: 'hs_object_id', keys: this.idKeys },
        { property: this.schema.createdProperty, keys: this.createdKeys },
      ],
    };
  }
}

/** The custom Do Not Call property seeded with `doNotCallShare` (a booleancheckbox: HubSpot gives its values as "true"/"false"). */
export const DO_NOT_CALL_PROPERTY = 'do_not_call';

const YES_NO = [{ label: 'Yes', value: 'true' }, { label: 'No', value: 'false' }] as const;

/** HubSpot's default contact properties that the daemon and its tests touch (HubSpot has some hundreds more). */
const DEFAULT_PROPERTIES: readonly PropertyInput[] = [
  { name: 'hs_object_id', label: 'Record ID', type: 'number', fieldType: 'number', readOnlyValue: true },
  { name: 'createdate', label: 'Create Date', type: 'datetime', fieldType: 'date', readOnlyValue: true },
  { name: 'lastmodifieddate', label: 'Last Modified Date', type: 'datetime', fieldType: 'date', readOnlyValue: true },
  { name: 'firstname', label: 'First Name', type: 'string', fieldType: 'text' },
  { name: 'lastname', label: 'Last Name', type: 'string', fieldType: 'text' },
  { name: 'email', label: 'Email', type: 'string', fieldType: 'text' },
  { name: 'phone', label: 'Phone Number', type: 'string', fieldType: 'phonenumber' },
  { name: 'mobilephone', label: 'Mobile Phone Number', type: 'string', fieldType: 'phonenumber' },
  { name: 'fax', label: 'Fax Number', type: 'string', fieldType: 'phonenumber' },
  { name: 'company', label: 'Company Name', type: 'string', fieldType: 'text' },
  { name: 'jobtitle', label: 'Job Title', type: 'string', fieldType: 'text' },
  { name: 'address', label: 'Street Address', type: 'string', fieldType: 'text' },
  { name: 'city', label: 'City', type: 'string', fieldType: 'text' },
  { name: 'state', label: 'State/Region', type: 'string', fieldType: 'text' },
  { name: 'zip', label: 'Postal Code', type: 'string', fieldType: 'text' },
  { name: 'country', label: 'Country/Region', type: 'string', fieldType: 'text' },
  {
    name: 'hs_timezone', label: 'Time Zone', type: 'enumeration', fieldType: 'select',
    options: ['America/New_York', 'America/Chicago', 'America/Denver', 'America/Phoenix', 'America/Los_Angeles', 'America/Anchorage', 'Pacific/Honolulu']
      .map((z) => ({ label: z, value: z.toLowerCase().replace(/\//g, '_slash_') })),
  },
  { name: 'hs_email_optout', label: 'Unsubscribed from all email', type: 'bool', fieldType: 'booleancheckbox', options: YES_NO },
  {
    name: 'lifecyclestage', label: 'Lifecycle Stage', type: 'enumeration', fieldType: 'radio',
    options: ['subscriber', 'lead', 'marketingqualifiedlead', 'salesqualifiedlead', 'opportunity', 'customer', 'evangelist', 'other'].map((v) => ({ label: v, value: v })),
  },
];
function seedContacts(store: ObjectStore, count: number, seed: number, doNotCallShare: number | undefined, areaCodes?: readonly number[]): void {
  for (const p of generatePeople(count, seed, 0, areaCodes)) {
    const dnc: Record<string, string> = doNotCallShare === undefined ? {} : { [DO_NOT_CALL_PROPERTY]: String(seededDoNotCall(p.index, doNotCallShare, seed)) };
    // Distinct, increasing timestamps make the seeded order deterministic.
    store.insertAt({ firstname: p.firstName, lastname: p.lastName, email: p.email, phone: p.phone, company: p.company, ...dnc }, SEED_BASE_MS + p.index);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Search

interface SearchFilter {
  propertyName: string;
  operator: Operator;
  value?: string;
  highValue?: string;
  values?: string[];
}
interface SearchSort {
  propertyName: string;
  direction?: 'ASCENDING' | 'DESCENDING';
}
interface SearchBody {
  filterGroups?: Array<{ filters: SearchFilter[] }>;
  sorts?: Array<SearchSort | string>;
  properties?: string[];
  limit?: number;
  after?: string;
  query?: string;
}

/*
 * Request bodies as HubSpot's OpenAPI files (contacts, calls, lists; v3 and the date versions) describe them, checked
 * strictly: HubSpot reads them into classes that refuse unknown fields ("Unrecognized field") and build only with their
 * required attributes ("Cannot build Filter, some of required attributes are not set"). Filter values are strings
 * there (value, highValue and each of values); a JSON number is refused. The files also mark fields required that
 * HubSpot's guides leave out (a search's after, limit, sorts; a batch read's propertiesWithHistory; a call's
 * associations): only the fields HubSpot does refuse without are required here. `title` names the class in messages.
 */
const searchBodySchema = {
  title: 'PublicObjectSearchRequest',
  type: 'object',
  additionalProperties: false,
  properties: {
    filterGroups: {
      type: 'array',
      maxItems: MAX_FILTER_GROUPS,
      items: {
        title: 'FilterGroup',
        type: 'object',
        additionalProperties: false,
        required: ['filters'],
        properties: {
          filters: {
            type: 'array',
            maxItems: MAX_FILTERS_PER_GROUP,
            items: {
              title: 'Filter',
              type: 'object',
              additionalProperties: false,
              required: ['propertyName', 'operator'],
              properties: {
                propertyName: { type: 'string', minLength: 1 },
                operator: { type: 'string', enum: OPERATORS },
                value: { type: 'string' },
                highValue: { type: 'string' },
                values: { type: 'array', items: { type: 'string' } },
              },
            },
          },
        },
      },
    },
    // The OpenAPI files have sorts as strings; HubSpot's search guide sends {propertyName, direction}: both are taken.
    sorts: {
      type: 'array',
      items: {
        anyOf: [
          { type: 'string', minLength: 1 },
          {
            title: 'Sort',
            type: 'object',
            additionalProperties: false,
            required: ['propertyName'],
            properties: { propertyName: { type: 'string', minLength: 1 }, direction: { type: 'string', enum: ['ASCENDING', 'DESCENDING'] } },
          },
        ],
      },
    },
    properties: { type: 'array', items: { type: 'string' } },
    limit: { type: 'integer', minimum: 1, maximum: MAX_SEARCH_LIMIT },
    after: { type: 'string' },
    query: { type: 'string' },
  },
} as const;

/** A 400 VALIDATION_ERROR for a request HubSpot would refuse: counted in stats.refused. */
class ValidationError extends Error {}
/** A 400 VALIDATION_ERROR about the data (a contact gone) or one a test asked for (failCalls): not a drift, not counted. */
class DataRefusal extends Error {}

/** What ajv reports about a body or query that fails its schema (verbose: with the value and the schema around it). */
interface SchemaProblem {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
  data?: unknown;
  parentSchema?: { title?: string; properties?: Record<string, unknown> };
}

/** `/filterGroups/0/filters/0/highValue` → `filterGroups[0].filters[0].highValue`. */
function fieldPath(pointer: string): string {
  return pointer.split('/').slice(1).map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : `${i === 0 ? '' : '.'}${p.replace(/~1/g, '/').replace(/~0/g, '~')}`)).join('');
}

function described(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `the ${typeof v} ${JSON.stringify(v)}`;
}

/**
 * HubSpot's wording for a body it cannot read (its JSON reader's "Unrecognized field" and "Cannot build X, some of
 * required attributes are not set [...]"), naming the field by its path. Of several branch failures (anyOf), the one
 * that is not about the value's type says most.
 */
function schemaMessage(problems: readonly SchemaProblem[], context: string): { message: string; in: string } {
  const specific = problems.filter((p) => p.keyword !== 'anyOf');
  const p = specific.find((e) => e.keyword !== 'type') ?? specific[0] ?? problems[0]!;
  const path = fieldPath(p.instancePath);
  const where = context === 'body' ? path : `${context}${path ? ` ${path}` : ''}`;
  const at = where ? ` at ${where}` : '';
  const title = p.parentSchema?.title;
  switch (p.keyword) {
    case 'additionalProperties': {
      const known = Object.keys(p.parentSchema?.properties ?? {});
      return { in: where, message: `Unrecognized field "${String(p.params.additionalProperty)}"${at}${title ? ` (${title})` : ''}, not marked as ignorable (${known.length} known properties: ${known.join(', ')})` };
    }
    case 'required':
      return { in: where, message: `Cannot build ${title ?? 'the input'}${at}, some of required attributes are not set [${String(p.params.missingProperty)}]` };
    case 'type':
      return { in: where, message: `${where || 'the body'} must be ${String(p.params.type)}; got ${described(p.data)}` };
    case 'enum':
      return { in: where, message: `${where}: ${described(p.data)} is not one of ${(p.params.allowedValues as unknown[]).join(', ')}` };
    default:
      return { in: where, message: `${where || 'the body'} ${p.message ?? 'is not valid'}` };
  }
}

/** Numbers for numeric/date properties: dates may be ms since the epoch or ISO strings, as HubSpot accepts. */
function numericValue(schema: ObjectSchema, property: string, raw: string | undefined, where: string): number {
  if (raw === undefined) throw new ValidationError(`${where}: a value is required`);
  const s = String(raw).trim();
  if (/^-?\d+(\.\d+)?$/.test(s)) return Number(s);
  if (schema.dates.has(property)) {
    const ms = Date.parse(s);
    if (!Number.isNaN(ms)) return ms;
    throw new ValidationError(`${where}: '${s}' is not a date; give ms since the epoch or an ISO 8601 string`);
  }
  throw new ValidationError(`${where}: '${s}' is not a number`);
}

function compareLoose(a: string, b: string): number {
  const na = Number(a);
  const nb = Number(b);
  if (a.trim() !== '' && b.trim() !== '' && Number.isFinite(na) && Number.isFinite(nb)) return na - nb;
  const la = a.toLowerCase();
  const lb = b.toLowerCase();
  return la < lb ? -1 : la > lb ? 1 : 0;
}

function tokenMatcher(pattern: string): (text: string) => boolean {
  const p = pattern.toLowerCase();
  const re = p.includes('*')
    ? new RegExp(`^${p.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`)
    : undefined;
  const test = (s: string) => (re ? re.test(s) : s === p);
  return (text) => {
    const t = text.toLowerCase();
    if (test(t)) return true;
    return t.split(/[\s@.,;:()+\-_/]+/).some((tok) => tok !== '' && test(tok));
  };
}

type Predicate = (r: ObjectRecord) => boolean;

function compileFilter(schema: ObjectSchema, f: SearchFilter, where: string): Predicate {
  const prop = f.propertyName;
  const op = f.operator;
  if (op === 'HAS_PROPERTY') return (r) => r.properties[prop] != null && r.properties[prop] !== '';
  if (op === 'NOT_HAS_PROPERTY') return (r) => r.properties[prop] == null || r.properties[prop] === '';
  if (op === 'CONTAINS_TOKEN' || op === 'NOT_CONTAINS_TOKEN') {
    if (f.value === undefined) throw new ValidationError(`${where}: ${op} needs a value`);
    const match = tokenMatcher(String(f.value));
    const has = (r: ObjectRecord) => {
      const v = r.properties[prop];
      return v != null && match(v);
    };
    return op === 'CONTAINS_TOKEN' ? has : (r) => !has(r);
  }
  if ((op === 'IN' || op === 'NOT_IN') && (!f.values || f.values.length === 0)) {
    throw new ValidationError(`${where}: ${op} needs a non-empty 'values' array`);
  }
  const get = schema.numeric[prop];
  if (get) {
    if (op === 'IN' || op === 'NOT_IN') {
      const set = new Set(f.values!.map((v, i) => numericValue(schema, prop, v, `${where}.values[${i}]`)));
      return op === 'IN' ? (r) => set.has(get(r)) : (r) => !set.has(get(r));
    }
    const x = numericValue(schema, prop, f.value, where);
    switch (op) {
      case 'EQ': return (r) => get(r) === x;
      case 'NEQ': return (r) => get(r) !== x;
      case 'LT': return (r) => get(r) < x;
      case 'LTE': return (r) => get(r) <= x;
      case 'GT': return (r) => get(r) > x;
      case 'GTE': return (r) => get(r) >= x;
      case 'BETWEEN': {
        const hi = numericValue(schema, prop, f.highValue, `${where}.highValue`);
        return (r) => get(r) >= x && get(r) <= hi;
      }
    }
  }
  // String properties compare case-insensitively, like HubSpot's search index.
  if (op === 'IN' || op === 'NOT_IN') {
    const set = new Set(f.values!.map((v) => String(v).toLowerCase()));
    const has = (r: ObjectRecord) => {
      const v = r.properties[prop];
      return v != null && set.has(v.toLowerCase());
    };
    return op === 'IN' ? has : (r) => !has(r);
  }
  if (f.value === undefined) throw new ValidationError(`${where}: ${op} needs a value`);
  const x = String(f.value);
  if (op === 'EQ' || op === 'NEQ') {
    const lx = x.toLowerCase();
    const eq = (r: ObjectRecord) => {
      const v = r.properties[prop];
      return v != null && (v === x || v.toLowerCase() === lx);
    };
    return op === 'EQ' ? eq : (r) => !eq(r);
  }
  const cmp = (r: ObjectRecord): number | undefined => {
    const v = r.properties[prop];
    return v == null ? undefined : compareLoose(v, x);
  };
  switch (op) {
    case 'LT': return (r) => (cmp(r) ?? 0) < 0;
    case 'LTE': return (r) => { const c = cmp(r); return c !== undefined && c <= 0; };
    case 'GT': return (r) => (cmp(r) ?? 0) > 0;
    case 'GTE': return (r) => { const c = cmp(r); return c !== undefined && c >= 0; };
    case 'BETWEEN': {
      if (f.highValue === undefined) throw new ValidationError(`${where}: BETWEEN needs a highValue`);
      const hi = String(f.highValue);
      return (r) => {
        const v = r.properties[prop];
        return v != null && compareLoose(v, x) >= 0 && compareLoose(v, hi) <= 0;
      };
    }
  }
  throw new ValidationError(`${where}: unknown operator ${String(op)}`);
}

/** The index range [lo, hi) that filters on a monotonic column allow, or undefined when a filter is not such a range. */
function rangeOf(schema: ObjectSchema, filter: SearchFilter, column: Column, where: string): [number, number] | undefined {
  const keys = column.keys;
  const n = keys.length;
  const v = () => numericValue(schema, column.property, filter.value, where);
  switch (filter.operator) {
    case 'EQ': { const x = v(); return [lowerBound(keys, x, false), lowerBound(keys, x, true)]; }
    case 'GT': return [lowerBound(keys, v(), true), n];
    case 'GTE': return [lowerBound(keys, v(), false), n];
    case 'LT': return [0, lowerBound(keys, v(), false)];
    case 'LTE': return [0, lowerBound(keys, v(), true)];
    case 'BETWEEN': {
      const hi = numericValue(schema, column.property, filter.highValue, `${where}.highValue`);
      return [lowerBound(keys, v(), false), lowerBound(keys, hi, true)];
    }
    default: return undefined;
  }
}

interface Plan {
  records: ObjectRecord[];
  lo: number;
  hi: number;
  descending: boolean;
  /** Undefined when every filter was turned into the range, so the range is exactly the result. */
  predicate?: Predicate;
  /** Set when results must be sorted on a property no index is ordered by. */
  sortProperty?: string;
}

function parseSort(sorts: SearchBody['sorts'], where = 'sorts'): { property: string; descending: boolean } | undefined {
  if (!sorts || sorts.length === 0) return undefined;
  if (sorts.length > 1) throw new ValidationError(`${where}: only one sort rule can be applied to a search; got ${sorts.length}`);
  const s = sorts[0]!;
  if (typeof s === 'string') return s.startsWith('-') ? { property: s.slice(1), descending: true } : { property: s, descending: false };
  return { property: s.propertyName, descending: s.direction === 'DESCENDING' };
}

function planSearch(store: ObjectStore, body: SearchBody): Plan {
  const schema = store.schema;
  const groups = body.filterGroups ?? [];
  const total = groups.reduce((n, g) => n + g.filters.length, 0);
  if (total > MAX_FILTERS_TOTAL) {
    throw new ValidationError(`filterGroups: at most ${MAX_FILTERS_TOTAL} filters in total are allowed; got ${total}`);
  }
  const sort = parseSort(body.sorts);
  const sortProperty = sort?.property ?? 'hs_object_id';
  const descending = sort?.descending ?? false;
  const indexed = sortProperty === schema.modifiedProperty ? 'modified' : 'id';
  const index = store.index(indexed);
  const byColumn = new Map(index.columns.map((c) => [c.property, c]));

  // Filter groups OR together: the range to walk is the hull of the groups' ranges.
  let lo = index.records.length;
  let hi = 0;
  let exact = groups.length <= 1 && !body.query;
  const groupPredicates: Predicate[] = [];
  groups.forEach((g, gi) => {
    let gLo = 0;
    let gHi = index.records.length;
    const preds: Predicate[] = [];
    g.filters.forEach((f, fi) => {
      const where = `filterGroups[${gi}].filters[${fi}]`;
      const column = byColumn.get(f.propertyName);
      const r = column && rangeOf(schema, f, column, where);
      if (r) {
        gLo = Math.max(gLo, r[0]);
        gHi = Math.min(gHi, r[1]);
      }
      // With one group the walked range already applies a range filter; with several it is only their hull.
      if (!r || groups.length > 1) preds.push(compileFilter(schema, f, where));
      if (!r) exact = false;
    });
    lo = Math.min(lo, gLo);
    hi = Math.max(hi, gHi);
    if (preds.length > 0) groupPredicates.push(preds.length === 1 ? preds[0]! : (r) => preds.every((p) => p(r)));
  });
  if (groups.length === 0) {
    lo = 0;
    hi = index.records.length;
  }
  if (hi < lo) hi = lo;

  const conditions: Predicate[] = [];
  if (groupPredicates.length > 0) conditions.push(groupPredicates.length === 1 ? groupPredicates[0]! : (r) => groupPredicates.some((p) => p(r)));
  if (body.query && body.query.trim() !== '') {
    const terms = body.query.toLowerCase().split(/\s+/).filter((t) => t !== '');
    conditions.push((r) => {
      const text = schema.queryProperties.map((p) => r.properties[p] ?? '').join(' ').toLowerCase();
      return terms.every((t) => text.includes(t));
    });
  }
  const predicate: Predicate | undefined = exact ? undefined : conditions.length === 1 ? conditions[0] : (r) => conditions.every((p) => p(r));
  const orderedByIndex = sortProperty === schema.modifiedProperty || sortProperty === 'hs_object_id' || sortProperty === schema.createdProperty;
  return { records: index.records, lo, hi, descending, predicate, sortProperty: orderedByIndex ? undefined : sortProperty };
}

/** Everything the plan matches, in result order. */
function collect(plan: Plan): ObjectRecord[] {
  const out: ObjectRecord[] = [];
  const { records, lo, hi, predicate } = plan;
  for (let i = lo; i < hi; i++) {
    const r = records[i]!;
    if (!predicate || predicate(r)) out.push(r);
  }
  if (plan.sortProperty) {
    const p = plan.sortProperty;
    const dir = plan.descending ? -1 : 1;
    // The walk is in id order and the sort is stable, so ties stay in id order.
    out.sort((a, b) => {
      const va = a.properties[p];
      const vb = b.properties[p];
      if (va == null || vb == null) return va == null ? (vb == null ? 0 : 1) : -1;
      return dir * compareLoose(va, vb);
    });
  } else if (plan.descending) {
    out.reverse();
  }
  return out;
}

/** HubSpot's SimplePublicObject: the asked-for properties (null when unset) plus the id and both system dates. */
function resultView(schema: ObjectSchema, rec: ObjectRecord, props: readonly string[]) {
  const created = rec.properties[schema.createdProperty]!;
  const modified = rec.properties[schema.modifiedProperty]!;
  const properties: Record<string, string | null> = {};
  for (const p of props) properties[p] = rec.properties[p] ?? null;
  properties.hs_object_id = rec.id;
  properties[schema.createdProperty] = created;
  properties[schema.modifiedProperty] = modified;
  return { id: rec.id, properties, createdAt: created, updatedAt: modified, archived: false };
}

/** A query parameter HubSpot takes repeated, comma-separated, or both. */
function listParam(raw: unknown): string[] {
  return (Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : [])
    .flatMap((s) => String(s).split(','))
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function requestedProperties(schema: ObjectSchema, raw: unknown): readonly string[] {
  const list = listParam(raw);
  return list.length > 0 ? list : schema.defaultProperties;
}

// ---------------------------------------------------------------------------------------------------------------
// Calls

const MAX_BATCH_CREATE = 100;
// HubSpot's defined association type for a call's association to a contact.
const CALL_TO_CONTACT = 194;
const CALL_DIRECTIONS = ['INBOUND', 'OUTBOUND'];
const CALL_STATUSES = ['BUSY', 'CALLING_CRM_USER', 'CANCELED', 'COMPLETED', 'CONNECTING', 'FAILED', 'IN_PROGRESS', 'NO_ANSWER', 'QUEUED', 'RINGING'];
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

interface AssociationInput {
  to: { id: string };
  types: Array<{ associationCategory: string; associationTypeId: number }>;
}
interface CallInput {
  properties: Record<string, unknown>;
  associations?: AssociationInput[];
  objectWriteTraceId?: string;
}
/** A call input that passed validation, ready to store. */
interface ValidCall {
  properties: Record<string, string>;
  contactIds: string[];
}

// Only the JSON shape is checked here, so that a batch with one bad value still creates the others (see checkCall).
const associationsSchema = {
  type: 'array',
  items: {
    title: 'PublicAssociationsForObject',
    type: 'object',
    additionalProperties: false,
    required: ['to', 'types'],
    properties: {
      to: { title: 'PublicObjectId', type: 'object', additionalProperties: false, required: ['id'], properties: { id: { type: 'string' } } },
      types: {
        type: 'array',
        items: {
          title: 'AssociationSpec',
          type: 'object',
          additionalProperties: false,
          required: ['associationCategory', 'associationTypeId'],
          properties: {
            associationCategory: { type: 'string', enum: ['HUBSPOT_DEFINED', 'INTEGRATOR_DEFINED', 'USER_DEFINED', 'WORK'] },
            associationTypeId: { type: 'integer' },
          },
        },
      },
    },
  },
} as const;
/** A single create (SimplePublicObjectInputForCreate): objectWriteTraceId belongs to batch inputs only. */
const callInputSchema = {
  title: 'SimplePublicObjectInputForCreate',
  type: 'object',
  additionalProperties: false,
  required: ['properties'],
  properties: { properties: { type: 'object' }, associations: associationsSchema },
} as const;
/** A batch create's input (SimplePublicObjectBatchInputForCreate). */
const batchCallInputSchema = {
  ...callInputSchema,
  title: 'SimplePublicObjectBatchInputForCreate',
  properties: { ...callInputSchema.properties, objectWriteTraceId: { type: 'string' } },
} as const;

interface PropertyProblem {
  name: string;
  error: string;
  message: string;
}

/** HubSpot's wording for property values it refuses: one JSON entry per property, so a client can show each. */
function propertyProblems(problems: PropertyProblem[]): string {
  const list = problems.map((p) => ({ isValid: false, message: p.message, error: p.error, name: p.name }));
  return `Property values were not valid: ${JSON.stringify(list)}`;
}

/**
 * Why a call input is refused. `drift` when the input itself is wrong for HubSpot (a missing or invalid value, an
 * association type it has not); not when the data is (a contact gone) or a test asked for it (failCalls).
 */
interface CallRefusal {
  message: string;
  drift: boolean;
}

/**
 * Validates one call input the way HubSpot's create endpoints do; returns the call to store or why it is refused.
 * hs_timestamp is stored as an ISO 8601 string whichever form it came in, as HubSpot reads date-times back.
 */
function checkCall(input: CallInput, isLiveContact: (id: string) => boolean, failure: CallFailurePredicate | null): ValidCall | CallRefusal {
  const drift = (message: string): CallRefusal => ({ message, drift: true });
  const properties: Record<string, string> = {};
  const problems: PropertyProblem[] = [];
  for (const [name, value] of Object.entries(input.properties)) {
    if (typeof value === 'string') properties[name] = value;
    else if (typeof value === 'number' && Number.isFinite(value)) properties[name] = String(value);
    else problems.push({ name, error: 'INVALID_TYPE', message: `${name}: give a string or a number; got ${JSON.stringify(value)}` });
  }
  const ts = properties.hs_timestamp;
  if (ts === undefined || ts.trim() === '') {
    if (!problems.some((p) => p.name === 'hs_timestamp')) {
      return drift('Error creating CALL. Some required properties were not set: hs_timestamp (when the call happened, as ms since the epoch or an ISO 8601 date-time).');
    }
  } else {
    const t = ts.trim();
    const ms = /^\d+$/.test(t) ? Number(t) : ISO_DATE_TIME.test(t) ? Date.parse(t) : Number.NaN;
    // An invalid Date also catches ms values beyond the range a date can hold.
    if (Number.isNaN(new Date(ms).getTime())) {
      problems.push({ name: 'hs_timestamp', error: 'INVALID_DATE', message: `hs_timestamp: '${ts}' is not a date; give ms since the epoch or an ISO 8601 date-time` });
    } else {
      properties.hs_timestamp = new Date(ms).toISOString();
    }
  }
  const enumeration = (name: string, allowed: readonly string[]) => {
    const v = properties[name];
    if (v !== undefined && v !== '' && !allowed.includes(v)) {
      problems.push({ name, error: 'INVALID_OPTION', message: `${v} was not one of the allowed options: ${allowed.join(', ')}` });
    }
  };
  enumeration('hs_call_direction', CALL_DIRECTIONS);
  enumeration('hs_call_status', CALL_STATUSES);
  const duration = properties.hs_call_duration;
  if (duration !== undefined && duration !== '' && !/^\d+(\.\d+)?$/.test(duration.trim())) {
    problems.push({ name: 'hs_call_duration', error: 'INVALID_INTEGER', message: `hs_call_duration: '${duration}' is not a number of milliseconds` });
  }
  if (problems.length > 0) return drift(propertyProblems(problems));

  const contactIds: string[] = [];
  for (const [i, a] of (input.associations ?? []).entries()) {
    const id = String(a.to.id);
    if (a.types.length === 0) return drift(`associations[${i}]: give at least one association type, e.g. HUBSPOT_DEFINED ${CALL_TO_CONTACT} (call to contact)`);
    for (const t of a.types) {
      if (t.associationCategory !== 'HUBSPOT_DEFINED' || t.associationTypeId !== CALL_TO_CONTACT) {
        return drift(`associations[${i}]: association type ${t.associationCategory} ${t.associationTypeId} is not one this stand-in knows; ` +
          `a call is associated with a contact by HUBSPOT_DEFINED ${CALL_TO_CONTACT}`);
      }
    }
    if (!isLiveContact(id)) return { message: `associations[${i}]: no contact with id ${id} to associate the call with`, drift: false };
    if (!contactIds.includes(id)) contactIds.push(id);
  }

  const verdict = failure?.({ ...properties });
  if (verdict) return { message: typeof verdict === 'string' ? verdict : 'Call refused by the failCalls predicate of this stand-in', drift: false };
  return { properties, contactIds };
}

// ---------------------------------------------------------------------------------------------------------------
// Rate limits

/** Admissions in a rolling window; refused requests do not count against the window. */
class RollingWindow {
  private readonly times: number[] = [];
  private head = 0;
  readonly windowMs: number;
  readonly max: number;

  constructor(windowMs: number, max: number) {
    this.windowMs = windowMs;
    this.max = max;
  }

  private expire(now: number): void {
    while (this.head < this.times.length && this.times[this.head]! <= now - this.windowMs) this.head++;
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times.splice(0, this.head);
      this.head = 0;
    }
  }

  /** Admits and returns the count in the window, or returns undefined when the window is full. */
  admit(now: number): number | undefined {
    this.expire(now);
    if (this.times.length - this.head >= this.max) return undefined;
    this.times.push(now);
    return this.times.length - this.head;
  }

  remaining(now: number): number {
    this.expire(now);
    return Math.max(0, this.max - (this.times.length - this.head));
  }

  /** Whole seconds until the oldest admission leaves the window. */
  retryAfterSeconds(now: number): number {
    const oldest = this.times[this.head];
    if (oldest === undefined) return 1;
    return Math.max(1, Math.ceil((oldest + this.windowMs - now) / 1000));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Server

type ErrorCategory = 'VALIDATION_ERROR' | 'RATE_LIMITS' | 'OBJECT_NOT_FOUND' | 'INVALID_AUTHENTICATION' | 'MISSING_SCOPES';

/** Where a private app asks for its token's scopes (HubSpot's private apps guide). */
const TOKEN_INFO_PATH = '/oauth/v2/private-apps/get/access-token-info';

/** The scope a route needs (HubSpot's reference lists these; contact writes and calls both need contacts.write). */
function requiredScope(method: string, route: string): string | null {
  if (route === TOKEN_INFO_PATH) return null;
  if (/\/lists(\/|$)/.test(route)) return 'crm.lists.read';
  if (/\/properties\//.test(route)) return 'crm.objects.contacts.read';
  const calls = /\/calls(\/|$)/.test(route);
  if (method === 'GET' || route.endsWith('/search') || route.endsWith('/batch/read')) return 'crm.objects.contacts.read';
  return calls || /\/contacts(\/|$)/.test(route) ? 'crm.objects.contacts.write' : null;
}

function errorBody(category: ErrorCategory, message: string, extra: Record<string, unknown> = {}) {
  return { status: 'error', message, correlationId: randomUUID(), category, ...extra };
}

interface ContactList {
  name: string;
  /** recordId → ms when last added */
  members: Map<string, number>;
  /** recordId → ms when first added (kept after a removal, as HubSpot's firstAddedTimestamp is) */
  firstAdded: Map<string, number>;
  /** Bumped by every change of the membership (HubSpot's listVersion). */
  version: number;
  /** The members in join order (time, then id), rebuilt when the version moved. */
  joinOrder?: { version: number; entries: [number, number][] };
}

/** A batch endpoint's request body schema: `inputs` (required) and the endpoint's other fields; nothing else. */
function batchInputSchema(title: string, inputs: Record<string, unknown>, fields: Record<string, unknown> = {}) {
  return { body: { title, type: 'object', additionalProperties: false, required: ['inputs'], properties: { inputs, ...fields } } };
}

/** A batch endpoint's answer when every input was handled. */
function batchResponse<T>(startedAt: string, results: T[], completedAtMs: number) {
  return { status: 'COMPLETE', results, startedAt, completedAt: new Date(completedAtMs).toISOString() };
}

/** The record id HubSpot gives contacts' object type in the lists API. */
const CONTACT_OBJECT_TYPE_ID = '0-1';

/** A join-order cursor: the join time and record id of the last member a page returned (opaque to clients). */
function joinCursor(ms: number, id: number): string {
  return Buffer.from(`${ms}:${id}`).toString('base64url');
}
function readJoinCursor(cursor: string): [number, number] | null {
  const m = /^(\d+):(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  return m ? [Number(m[1]), Number(m[2])] : null;
}

export async function startHubSpotStandIn(opts: HubSpotStandInOptions = {}): Promise<HubSpotStandIn> {
  const now = opts.now ?? Date.now;
  const token = opts.token ?? 'hs-test-token';
  const clientSecret = opts.clientSecret ?? 'hs-client-secret';
  const apiVersion = opts.apiVersion ?? '2026-09';
  if (!(HUBSPOT_DATE_VERSIONS as readonly string[]).includes(apiVersion)) {
    throw new Error(`apiVersion ${apiVersion}: HubSpot publishes these APIs in ${HUBSPOT_DATE_VERSIONS.join(', ')} (and the legacy v3 paths)`);
  }
  const host = opts.host ?? '127.0.0.1';
  const searchWindow = new RollingWindow(1000, opts.searchPerSecond ?? 5);
  const requestWindow = new RollingWindow(10_000, opts.requestsPer10Seconds ?? 190);
  const store = new ObjectStore(now, CONTACT_SCHEMA);
  seedContacts(store, opts.contacts ?? 0, opts.seed ?? 1, opts.doNotCallShare, opts.areaCodes);
  const calls = new ObjectStore(now, CALL_SCHEMA);
  /** call id → the contact ids it is associated with, in the order given. */
  const callContacts = new Map<string, string[]>();
  let callFailure: CallFailurePredicate | null = null;
  let batchFailureAnswer: BatchFailureAnswer = 'multi-status';

  const stats: HubSpotStandInStats = {
    requests: 0, searches: 0, rateLimited: 0, maxSearchesInAnySecond: 0, webhooksDelivered: 0, webhookFailures: 0, callsCreated: 0, contactsBatchUpdated: 0, refused: 0,
    byRoute: {},
  };
  const refusals = new RefusalLog(stats);
  const refuse = (request: FastifyRequest, status: number, message: string) => refusals.record(request, status, message);
  const lists = new Map<string, ContactList>();
  let nextListId = 1;
  const scopes = new Set<string>(opts.scopes ?? DEFAULT_SCOPES);
  const definedProperties = new Map<string, PropertyInput>([...DEFAULT_PROPERTIES, ...(opts.doNotCallShare === undefined ? [] : [{
    name: DO_NOT_CALL_PROPERTY, label: 'Do not call', type: 'bool' as const, fieldType: 'booleancheckbox' as const, options: YES_NO,
  }]), ...(opts.properties ?? [])].map((p) => [p.name, p]));
  let failRemaining = 0;
  let failRetryAfter = 1;
  let nextEventId = 1;
  let webhookChain: Promise<void> = Promise.resolve();

  // Strict as HubSpot: no type coercion (a number is not a string), and unknown fields are refused, not removed.
  const app = Fastify({
    logger: false, forceCloseConnections: true,
    ajv: { customOptions: { allowUnionTypes: true, coerceTypes: false, removeAdditional: false, verbose: true } },
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof DataRefusal) return reply.code(400).send(errorBody('VALIDATION_ERROR', error.message));
    let status = 400;
    let body;
    if (error instanceof ValidationError) {
      body = errorBody('VALIDATION_ERROR', error.message);
    } else if (error.validation) {
      const problem = schemaMessage(error.validation as SchemaProblem[], error.validationContext ?? 'body');
      body = errorBody('VALIDATION_ERROR', `Invalid input JSON: ${problem.message}`, { errors: [{ message: problem.message, in: problem.in }] });
    } else {
      // Fastify's own refusals: a body that is not JSON (400), too large (413), of another content type (415).
      status = error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
      body = { status: 'error', message: status === 400 ? `Invalid input JSON: ${error.message}` : error.message, correlationId: randomUUID(), category: status === 400 ? 'VALIDATION_ERROR' : 'INTERNAL_ERROR' };
    }
    if (status < 500) refuse(request, status, body.message);
    return reply.code(status).send(body);
  });
  app.setNotFoundHandler((request, reply) => {
    const message = `No route ${request.method} ${request.url.split('?')[0]} in this HubSpot stand-in (HubSpot serves ${HUBSPOT_DATE_VERSIONS.join(', ')} and the legacy v3 paths)`;
    refuse(request, 404, message);
    return reply.code(404).send(errorBody('OBJECT_NOT_FOUND', message));
  });

  function tooMany(reply: FastifyReply, retryAfter: number, message: string, policyName: string) {
    stats.rateLimited++;
    return reply
      .code(429)
      .header('Retry-After', String(retryAfter))
      .send(errorBody('RATE_LIMITS', message, { errorType: 'RATE_LIMIT', policyName }));
  }

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    stats.requests++;
    const route = `${request.method} ${(request.routeOptions.url ?? 'unknown')
      .replace(/^\/crm\/(objects\/[^/]+|v3\/objects)\//, '').replace(/^\/crm\/(lists\/[^/]+|v3\/lists)/, 'lists')}`;
    stats.byRoute[route] = (stats.byRoute[route] ?? 0) + 1;
    if (failRemaining > 0) {
      failRemaining--;
      return tooMany(reply, failRetryAfter, 'You have reached your secondly limit.', 'SECONDLY');
    }
    // The token-info endpoint takes the token in its body, not as a bearer.
    if (request.routeOptions.url === TOKEN_INFO_PATH) return;
    const auth = request.headers.authorization;
    if (!auth) {
      return reply.code(401).send(errorBody('INVALID_AUTHENTICATION', 'Authentication credentials not found. This API supports OAuth 2.0 authentication and private app access tokens (Authorization: Bearer <token>).'));
    }
    if (auth !== `Bearer ${token}`) {
      return reply.code(401).send(errorBody('INVALID_AUTHENTICATION', 'The access token provided is invalid or expired. Send the private app access token as Authorization: Bearer <token>.'));
    }
    const needed = requiredScope(request.method, request.routeOptions.url ?? '');
    if (needed && !scopes.has(needed)) {
      return reply.code(403).send(errorBody('MISSING_SCOPES', 'This app hasn\'t been granted all required scopes to make this call. Read more about required scopes here: https://developers.hubspot.com/scopes.', {
        errors: [{ message: 'One or more of the following scopes are required.', context: { requiredGranularScopes: [needed] } }],
      }));
    }
    const t = now();
    if (request.routeOptions.url?.endsWith('/search')) {
      const inWindow = searchWindow.admit(t);
      if (inWindow === undefined) {
        return tooMany(reply, 1, `You have reached your secondly limit of ${searchWindow.max} search requests.`, 'SECONDLY');
      }
      stats.searches++;
      if (inWindow > stats.maxSearchesInAnySecond) stats.maxSearchesInAnySecond = inWindow;
      return;
    }
    if (requestWindow.admit(t) === undefined) {
      return tooMany(reply, requestWindow.retryAfterSeconds(t), `You have reached your ten_secondly_rolling limit of ${requestWindow.max} requests.`, 'TEN_SECONDLY_ROLLING');
    }
    // The search endpoints do not send these headers on HubSpot either.
    reply.header('X-HubSpot-RateLimit-Interval-Milliseconds', '10000');
    reply.header('X-HubSpot-RateLimit-Max', String(requestWindow.max));
    reply.header('X-HubSpot-RateLimit-Remaining', String(requestWindow.remaining(t)));
  });

  /** The search endpoint of one object type. */
  function searchOf(objects: ObjectStore) {
    // Paging re-runs the same query many times; its matches stay valid until the next write.
    const searchCache = new Map<string, { version: number; matches: ObjectRecord[] }>();
    return async (request: FastifyRequest<{ Body: SearchBody | undefined }>) => {
      const body = request.body ?? {};
      const limit = body.limit ?? 10;
      const afterRaw = body.after === undefined || body.after === '' ? '0' : String(body.after);
      if (!/^\d+$/.test(afterRaw)) throw new ValidationError(`after: must be an integer offset given as a string; got '${afterRaw}'`);
      const after = Number(afterRaw);
      if (after + limit > MAX_SEARCH_RESULTS) {
        throw new ValidationError(
          `Paging beyond ${MAX_SEARCH_RESULTS} results is not allowed: after (${after}) + limit (${limit}) exceeds ${MAX_SEARCH_RESULTS}. ` +
            `Narrow the search instead, e.g. restart with ${objects.schema.modifiedProperty} GTE the last value read.`,
        );
      }
      const plan = planSearch(objects, body);
      let total: number;
      let page: ObjectRecord[];
      if (!plan.predicate && !plan.sortProperty) {
        total = plan.hi - plan.lo;
        page = [];
        for (let k = after; k < Math.min(after + limit, total); k++) {
          page.push(plan.records[plan.descending ? plan.hi - 1 - k : plan.lo + k]!);
        }
      } else {
        const key = JSON.stringify([body.filterGroups, body.sorts, body.query]);
        let cached = searchCache.get(key);
        if (!cached || cached.version !== objects.version) {
          cached = { version: objects.version, matches: collect(plan) };
          searchCache.set(key, cached);
          if (searchCache.size > 32) searchCache.delete(searchCache.keys().next().value!);
        }
        total = cached.matches.length;
        page = cached.matches.slice(after, after + limit);
      }
      const props = requestedProperties(objects.schema, body.properties);
      const next = after + page.length;
      return {
        total,
        results: page.map((r) => resultView(objects.schema, r, props)),
        ...(next < total ? { paging: { next: { after: String(next) } } } : {}),
      };
    };
  }

  type ReadRequest = FastifyRequest<{ Params: { id: string }; Querystring: { properties?: string | string[]; associations?: string | string[] } }>;
  /** The single-record read of one object type; `associationsOf` answers `?associations=` for the types it knows. */
  function readOf(objects: ObjectStore, associationsOf?: (rec: ObjectRecord, toType: string) => object | undefined) {
    return async (request: ReadRequest, reply: FastifyReply) => {
      const rec = objects.live(request.params.id);
      if (!rec) return reply.code(404).send(errorBody('OBJECT_NOT_FOUND', `No ${objects.schema.noun} with id ${request.params.id}`));
      const view = resultView(objects.schema, rec, requestedProperties(objects.schema, request.query.properties));
      if (!associationsOf) return view;
      // HubSpot leaves out association types it has nothing for, and ignores ones it does not know.
      const associations: Record<string, object> = {};
      for (const toType of listParam(request.query.associations)) {
        const found = associationsOf(rec, toType);
        if (found) associations[toType] = found;
      }
      return Object.keys(associations).length > 0 ? { ...view, associations } : view;
    };
  }

  interface BatchReadBody {
    inputs: Array<{ id: string }>;
    properties?: string[];
    idProperty?: string;
  }
  async function batchRead(request: FastifyRequest<{ Body: BatchReadBody }>) {
    const startedAt = new Date(now()).toISOString();
    const { inputs, idProperty } = request.body;
    const props = requestedProperties(CONTACT_SCHEMA, request.body.properties);
    let lookup: (id: string) => ObjectRecord | undefined = (id) => store.live(id);
    if (idProperty && idProperty !== 'hs_object_id') {
      const wanted = new Set(inputs.map((i) => String(i.id).toLowerCase()));
      const found = new Map<string, ObjectRecord>();
      for (const rec of store.liveInIdOrder()) {
        const v = rec.properties[idProperty]?.toLowerCase();
        if (v !== undefined && wanted.has(v) && !found.has(v)) found.set(v, rec);
      }
      lookup = (id) => found.get(id.toLowerCase());
    }
    const results = [];
    for (const input of inputs) {
      const rec = lookup(String(input.id));
      if (rec) results.push(resultView(CONTACT_SCHEMA, rec, props));
    }
    return batchResponse(startedAt, results, now());
  }
  const batchReadSchema = batchInputSchema('BatchReadInputSimplePublicObjectId', {
    type: 'array',
    maxItems: MAX_BATCH_READ,
    items: { title: 'SimplePublicObjectId', type: 'object', additionalProperties: false, required: ['id'], properties: { id: { type: 'string' } } },
  }, {
    properties: { type: 'array', items: { type: 'string' } },
    propertiesWithHistory: { type: 'array', items: { type: 'string' } },
    idProperty: { type: 'string' },
  });

  async function memberships(
    request: FastifyRequest<{ Params: { listId: string }; Querystring: { limit?: string; after?: string } }>,
    reply: FastifyReply,
  ) {
    // Query values are text: limit is checked here, as the body schemas coerce nothing.
    const limit = request.query.limit === undefined ? 100 : Number(request.query.limit);
    if (limit < 1 || limit > MAX_MEMBERSHIPS_LIMIT) throw new ValidationError(`limit: at most ${MAX_MEMBERSHIPS_LIMIT} records a page (and at least 1); got ${limit}`);
    const list = lists.get(request.params.listId);
    if (!list) return reply.code(404).send(errorBody('OBJECT_NOT_FOUND', `No list with id ${request.params.listId}`));
    // The cursor is the last recordId returned, so members added while paging don't shift later pages.
    const after = request.query.after ? Number(request.query.after) : -Infinity;
    if (Number.isNaN(after)) throw new ValidationError(`after: '${request.query.after}' is not a cursor returned by this endpoint`);
    const ids = [...list.members.keys()].map(Number).filter((id) => id > after).sort((a, b) => a - b);
    const page = ids.slice(0, limit);
    const results = page.map((id) => ({ recordId: String(id), membershipTimestamp: new Date(list.members.get(String(id))!).toISOString() }));
    const last = page[page.length - 1];
    return {
      results,
      ...(ids.length > limit && last !== undefined
        ? { paging: { next: { after: String(last), link: `${request.url.split('?')[0]}?limit=${limit}&after=${last}` } } }
        : {}),
    };
  }
  const membershipsSchema = {
    querystring: {
      type: 'object',
      properties: { limit: { type: 'string', pattern: '^[0-9]{1,9}$' }, after: { type: 'string' }, before: { type: 'string' } },
    },
  };

  /**
   * Memberships in the order records joined the list (time, then record id), ascending from an `after` cursor. The
   * cursor names the last member returned, so members who join later come after it however long it is kept.
   */
  async function joinOrder(
    request: FastifyRequest<{ Params: { listId: string }; Querystring: { limit?: string; after?: string; before?: string } }>,
    reply: FastifyReply,
  ) {
    const limit = request.query.limit === undefined ? 100 : Number(request.query.limit);
    if (limit < 1 || limit > MAX_MEMBERSHIPS_LIMIT) throw new ValidationError(`limit: at most ${MAX_MEMBERSHIPS_LIMIT} records a page (and at least 1); got ${limit}`);
    if (request.query.before !== undefined && request.query.after === undefined) {
      throw new ValidationError('before: this stand-in pages join order forwards only (give after, or no offset)');
    }
    const list = lists.get(request.params.listId);
    if (!list) return reply.code(404).send(errorBody('OBJECT_NOT_FOUND', `No list with id ${request.params.listId}`));
    if (list.joinOrder?.version !== list.version) {
      const entries = [...list.members].map(([id, ms]): [number, number] => [ms, Number(id)]);
      entries.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      list.joinOrder = { version: list.version, entries };
    }
    const entries = list.joinOrder.entries;
    let start = 0;
    if (request.query.after) {
      const at = readJoinCursor(request.query.after);
      if (!at) throw new ValidationError(`after: '${request.query.after}' is not a cursor returned by this endpoint`);
      // First entry strictly after the cursor's (time, id).
      let lo = 0, hi = entries.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        const e = entries[mid]!;
        if (e[0] < at[0] || (e[0] === at[0] && e[1] <= at[1])) lo = mid + 1; else hi = mid;
      }
      start = lo;
    }
    const page = entries.slice(start, start + limit);
    const last = page[page.length - 1];
    return {
      results: page.map(([ms, id]) => ({ recordId: String(id), membershipTimestamp: new Date(ms).toISOString() })),
      ...(start + limit < entries.length && last
        ? { paging: { next: { after: joinCursor(last[0], last[1]), link: `${request.url.split('?')[0]}?limit=${limit}&after=${joinCursor(last[0], last[1])}` } } }
        : {}),
    };
  }

  /** The lists each record is in (BatchInputRecordIdInput → BatchResponseRecordIdWithMemberships). */
  async function recordMemberships(request: FastifyRequest<{ Body: { inputs: { objectTypeId: string; recordId: string }[] } }>) {
    const startedAt = new Date(now()).toISOString();
    const results = request.body.inputs.map(({ objectTypeId, recordId }) => {
      const recordListMemberships = [];
      if (objectTypeId === CONTACT_OBJECT_TYPE_ID) {
        for (const [listId, list] of lists) {
          const added = list.members.get(recordId);
          if (added === undefined) continue;
          recordListMemberships.push({
            listId, listVersion: list.version, isPublicList: false,
            firstAddedTimestamp: new Date(list.firstAdded.get(recordId) ?? added).toISOString(), lastAddedTimestamp: new Date(added).toISOString(),
          });
        }
      }
      return { objectTypeId, recordId, recordListMemberships };
    });
    return batchResponse(startedAt, results, now());
  }
  const recordMembershipsSchema = batchInputSchema('BatchInputRecordIdInput', {
    type: 'array',
    items: {
      title: 'RecordIdInput', type: 'object', additionalProperties: false, required: ['objectTypeId', 'recordId'],
      properties: { objectTypeId: { type: 'string', pattern: '^[0-9]+-[0-9]+$' }, recordId: { type: 'string', pattern: '^[0-9]+$' } },
    },
  });

  /** An input's property values as stored (text or null); a value of another type is a problem. */
  function propertyValues(input: Record<string, unknown>, problems: PropertyProblem[]): Record<string, string | null> {
    const props: Record<string, string | null> = {};
    for (const [name, value] of Object.entries(input)) {
      if (typeof value === 'string' || value === null) props[name] = value;
      else if (typeof value === 'number' && Number.isFinite(value)) props[name] = String(value);
      else problems.push({ name, error: 'INVALID_TYPE', message: `${name}: give a string, a number or null; got ${JSON.stringify(value)}` });
    }
    return props;
  }
  const updatedView = (rec: ObjectRecord, props: Record<string, string | null>) =>
    resultView(CONTACT_SCHEMA, rec, [...new Set([...CONTACT_SCHEMA.defaultProperties, ...Object.keys(props)])]);

  async function patchContact(request: FastifyRequest<{ Params: { id: string }; Body: { properties: Record<string, unknown> } }>, reply: FastifyReply) {
    const rec = store.live(request.params.id);
    if (!rec) return reply.code(404).send(errorBody('OBJECT_NOT_FOUND', `No contact with id ${request.params.id}`));
    const problems: PropertyProblem[] = [];
    const props = propertyValues(request.body.properties, problems);
    if (problems.length > 0) throw new ValidationError(propertyProblems(problems));
    applyContactUpdate(rec, props);
    return updatedView(rec, props);
  }
  const patchContactSchema = {
    body: { title: 'SimplePublicObjectInput', type: 'object', additionalProperties: false, required: ['properties'], properties: { properties: { type: 'object' } } },
  };

  /**
   * Batch update by record id: a value of a wrong type refuses the whole batch (400, nothing written); ids of no
   * live contact are a 207 whose error names them, the others updated.
   */
  async function batchUpdateContacts(request: FastifyRequest<{ Body: { inputs: { id: string; properties: Record<string, unknown> }[] } }>, reply: FastifyReply) {
    const startedAt = new Date(now()).toISOString();
    const problems: PropertyProblem[] = [];
    const updates: [ObjectRecord, Record<string, string | null>][] = [];
    const missing: string[] = [];
    for (const input of request.body.inputs) {
      const props = propertyValues(input.properties, problems);
      const rec = store.live(input.id);
      if (rec) updates.push([rec, props]); else missing.push(input.id);
    }
    if (problems.length > 0) throw new ValidationError(propertyProblems(problems));
    for (const [rec, props] of updates) applyContactUpdate(rec, props);
    stats.contactsBatchUpdated += updates.length;
    const answer = batchResponse(startedAt, updates.map(([rec, props]) => updatedView(rec, props)), now());
    if (!missing.length) return answer;
    return reply.code(207).send({
      ...answer, numErrors: 1,
      errors: [{ status: 'error', category: 'OBJECT_NOT_FOUND', message: 'Could not get some CONTACT objects, they may be deleted or not exist. Check that ids are valid.', context: { ids: missing }, errors: [], links: {} }],
    });
  }
  const batchUpdateSchema = batchInputSchema('BatchInputSimplePublicObjectBatchInput', {
    type: 'array',
    maxItems: MAX_BATCH_UPDATE,
    items: {
      title: 'SimplePublicObjectBatchInput', type: 'object', additionalProperties: false, required: ['id', 'properties'],
      properties: { id: { type: 'string' }, properties: { type: 'object' }, idProperty: { type: 'string' }, objectWriteTraceId: { type: 'string' } },
    },
  });

  const isLiveContact = (id: string) => store.live(id) !== undefined;

  function storeCall(call: ValidCall): ObjectRecord {
    const rec = calls.create(call.properties);
    callContacts.set(rec.id, call.contactIds);
    stats.callsCreated++;
    return rec;
  }
  /** What the create endpoints answer: every property the call has. */
  const createdView = (rec: ObjectRecord) => resultView(CALL_SCHEMA, rec, Object.keys(rec.properties));

  async function createCall(request: FastifyRequest<{ Body: CallInput }>, reply: FastifyReply) {
    const checked = checkCall(request.body, isLiveContact, callFailure);
    if ('message' in checked) throw checked.drift ? new ValidationError(checked.message) : new DataRefusal(checked.message);
    return reply.code(201).send(createdView(storeCall(checked)));
  }

  /**
   * Inputs that fail validation become entries of `errors` (answered 207, even when every input fails) while the others
   * are created; each entry names its input's objectWriteTraceId, the only way to map it back to the input.
   */
  async function batchCreateCalls(request: FastifyRequest<{ Body: { inputs: CallInput[] } }>, reply: FastifyReply) {
    const startedAt = new Date(now()).toISOString();
    const checked = request.body.inputs.map((input) => ({ input, result: checkCall(input, isLiveContact, callFailure) }));
    const failed = checked.flatMap(({ input, result }) => ('message' in result && !result.drift ? [{ input, message: result.message }] : []));
    if (failed.length > 0 && batchFailureAnswer !== 'multi-status') {
      // The whole batch refused, nothing created: the first failure's words, and the inputs only when traced.
      const traced = failed.flatMap(({ input }) => (input.objectWriteTraceId !== undefined ? [input.objectWriteTraceId] : []));
      return reply.code(400).send(errorBody('VALIDATION_ERROR', failed[0]!.message,
        batchFailureAnswer === 'whole-batch-traced' && traced.length ? { context: { objectWriteTraceId: traced } } : {}));
    }
    const results = [];
    const errors = [];
    for (const [i, { input, result }] of checked.entries()) {
      const traceId = input.objectWriteTraceId;
      if ('message' in result) {
        if (result.drift) refuse(request, 207, `inputs[${i}]: ${result.message}`);
        errors.push({ status: 'error', category: 'VALIDATION_ERROR', message: result.message, ...(traceId !== undefined ? { context: { objectWriteTraceId: [traceId] } } : {}) });
      } else {
        // The date-versioned reference documents objectWriteTraceId on each created result; the legacy paths behave the same here.
        results.push({ ...createdView(storeCall(result)), ...(traceId !== undefined ? { objectWriteTraceId: traceId } : {}) });
      }
    }
    const body = {
      status: 'COMPLETE',
      results,
      ...(errors.length > 0 ? { numErrors: errors.length, errors } : {}),
      startedAt,
      completedAt: new Date(now()).toISOString(),
    };
    return reply.code(errors.length > 0 ? 207 : 201).send(body);
  }
  const batchCreateSchema = {
    body: {
      type: 'object',
      required: ['inputs'],
      title: 'BatchInputSimplePublicObjectBatchInputForCreate',
      additionalProperties: false,
      properties: { inputs: { type: 'array', minItems: 1, maxItems: MAX_BATCH_CREATE, items: batchCallInputSchema } },
    },
  };

  function callAssociations(rec: ObjectRecord, toType: string) {
    if (toType !== 'contacts' && toType !== 'contact') return undefined;
    // Associations to archived contacts are gone, as on HubSpot.
    const ids = (callContacts.get(rec.id) ?? []).filter(isLiveContact);
    if (ids.length === 0) return undefined;
    return { results: ids.map((id) => ({ id, type: 'call_to_contact' })) };
  }

  /** A list's definition (GET /crm/v3/lists/{listId}): its name, object type and size. */
  async function listById(request: FastifyRequest<{ Params: { listId: string } }>, reply: FastifyReply) {
    const list = lists.get(request.params.listId);
    if (!list) return reply.code(404).send(errorBody('OBJECT_NOT_FOUND', `No list with id ${request.params.listId}`));
    return {
      list: {
        listId: request.params.listId, listVersion: list.version, name: list.name, objectTypeId: CONTACT_OBJECT_TYPE_ID,
        processingType: 'MANUAL', processingStatus: 'COMPLETE', size: list.members.size,
      },
    };
  }

  /** Every defined contact property: the default ones, the custom ones, and any a stored contact holds (as text). */
  function allProperties(): PropertyInput[] {
    const all = new Map(definedProperties);
    for (const rec of store.liveInIdOrder()) {
      for (const name of Object.keys(rec.properties)) if (!all.has(name)) all.set(name, { name, label: name, type: 'string', fieldType: 'text' });
    }
    return [...all.values()];
  }
  const propertyView = (p: PropertyInput) => ({
    name: p.name, label: p.label ?? p.name, type: p.type, fieldType: p.fieldType, description: '', groupName: 'contactinformation',
    options: (p.options ?? []).map((o, i) => ({ label: o.label, value: o.value, displayOrder: i, hidden: false })),
    calculated: false, externalOptions: false, hasUniqueValue: p.name === 'hs_object_id', hidden: false, formField: !p.readOnlyValue,
    hubspotDefined: DEFAULT_PROPERTIES.some((d) => d.name === p.name),
    modificationMetadata: { archivable: !p.readOnlyValue, readOnlyDefinition: DEFAULT_PROPERTIES.some((d) => d.name === p.name), readOnlyValue: p.readOnlyValue === true },
  });
  async function contactProperties() {
    return { results: allProperties().map(propertyView) };
  }
  async function contactProperty(request: FastifyRequest<{ Params: { propertyName: string } }>, reply: FastifyReply) {
    const p = allProperties().find((x) => x.name === request.params.propertyName);
    if (!p) return reply.code(404).send(errorBody('OBJECT_NOT_FOUND', `Unable to find property with name: ${request.params.propertyName}`));
    return propertyView(p);
  }

  /** What HubSpot tells about a private app's token: the account, the app and the scopes. */
  async function tokenInfo(request: FastifyRequest<{ Body: { tokenKey: string } }>, reply: FastifyReply) {
    if (request.body.tokenKey !== token) return reply.code(401).send(errorBody('INVALID_AUTHENTICATION', 'The access token provided is invalid or expired.'));
    return { userId: 7_000_001, hubId: PORTAL_ID, appId: APP_ID, scopes: [...scopes] };
  }
  const tokenInfoSchema = {
    body: { title: 'TokenInfoRequest', type: 'object', additionalProperties: false, required: ['tokenKey'], properties: { tokenKey: { type: 'string', minLength: 1 } } },
  };

  const objectPaths = (type: string) => [...HUBSPOT_DATE_VERSIONS.map((v) => `/crm/objects/${v}/${type}`), `/crm/v3/objects/${type}`];
  for (const base of objectPaths('contacts')) {
    app.post(`${base}/search`, { schema: { body: searchBodySchema } }, searchOf(store));
    app.post(`${base}/batch/read`, { schema: batchReadSchema }, batchRead);
    app.get(`${base}/:id`, readOf(store));
    app.patch(`${base}/:id`, { schema: patchContactSchema }, patchContact);
    app.post(`${base}/batch/update`, { schema: batchUpdateSchema }, batchUpdateContacts);
  }
  for (const base of objectPaths('calls')) {
    app.post(base, { schema: { body: callInputSchema } }, createCall);
    app.post(`${base}/batch/create`, { schema: batchCreateSchema }, batchCreateCalls);
    app.post(`${base}/search`, { schema: { body: searchBodySchema } }, searchOf(calls));
    app.get(`${base}/:id`, readOf(calls, callAssociations));
  }
  for (const base of [...HUBSPOT_DATE_VERSIONS.map((v) => `/crm/lists/${v}`), '/crm/v3/lists']) {
    app.get(`${base}/:listId/memberships`, { schema: membershipsSchema }, memberships);
    app.get(`${base}/:listId/memberships/join-order`, { schema: membershipsSchema }, joinOrder);
    app.post(`${base}/records/memberships/batch/read`, { schema: recordMembershipsSchema }, recordMemberships);
    app.get(`${base}/:listId`, listById);
  }
  app.get('/crm/v3/properties/contacts', contactProperties);
  app.get('/crm/v3/properties/contacts/:propertyName', contactProperty);
  app.post(TOKEN_INFO_PATH, { schema: tokenInfoSchema }, tokenInfo);

  await app.listen({ port: opts.port ?? 0, host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port ?? 0;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  async function sendWebhook(events: HubSpotEvent[], o: { url?: string; timestamp?: number; secret?: string } = {}) {
    const target = o.url ?? opts.webhookUrl;
    if (!target) throw new Error('sendWebhook: no url given and the stand-in was started without webhookUrl');
    const timestamp = o.timestamp ?? now();
    const body = JSON.stringify(events);
    const res = await fetch(target, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'X-HubSpot-Request-Timestamp': String(timestamp),
        'X-HubSpot-Signature-v3': signHubSpotV3(o.secret ?? clientSecret, 'POST', target, body, timestamp),
        'X-HubSpot-Signature-Version': 'v3',
      },
      body,
    });
    return { status: res.status, body: await res.text() };
  }

  function fire(rec: ObjectRecord, occurredAt: number, changes: Array<{ type: string; propertyName?: string; propertyValue?: string }>) {
    if (!opts.webhookUrl || changes.length === 0) return;
    const events: HubSpotEvent[] = changes.map((c) => ({
      eventId: nextEventId++,
      subscriptionId: SUBSCRIPTION_IDS[c.type]!,
      portalId: PORTAL_ID,
      appId: APP_ID,
      occurredAt,
      subscriptionType: c.type,
      attemptNumber: 0,
      objectId: rec.idNum,
      ...(c.propertyName !== undefined ? { propertyName: c.propertyName, propertyValue: c.propertyValue ?? '' } : {}),
      changeSource: 'CRM_UI',
    }));
    // One POST at a time, in write order, so a receiver sees events in the order they happened.
    webhookChain = webhookChain.then(
      () => sendWebhook(events).then(
        () => { stats.webhooksDelivered++; },
        () => { stats.webhookFailures++; },
      ),
    );
  }

  /** Shared by updateContact and PATCH: the write, then one propertyChange event per changed property. */
  function applyContactUpdate(rec: ObjectRecord, props: Record<string, string | null>): void {
    const changed = store.update(rec, props);
    fire(rec, rec.updatedMs, changed.map((p) => ({ type: 'contact.propertyChange', propertyName: p, propertyValue: rec.properties[p] ?? '' })));
  }

  function requireLive(id: string, what: string): ObjectRecord {
    const rec = store.live(id);
    if (!rec) throw new Error(`${what}: no live contact with id ${id}`);
    return rec;
  }
  function requireList(listId: string, what: string): ContactList {
    const list = lists.get(listId);
    if (!list) throw new Error(`${what}: no list with id ${listId}`);
    return list;
  }

  function addToList(listId: string, ids: string[]): void {
    const list = requireList(listId, 'lists.add');
    const t = now();
    for (const id of ids) {
      requireLive(id, 'lists.add');
      if (list.members.has(id)) continue;
      list.members.set(id, t);
      if (!list.firstAdded.has(id)) list.firstAdded.set(id, t);
      list.version++;
    }
  }
  function createList(name: string, ids: string[]): string {
    const listId = String(nextListId++);
    lists.set(listId, { name, members: new Map(), firstAdded: new Map(), version: 0 });
    addToList(listId, ids);
    return listId;
  }
  function removeFromList(listId: string, ids: string[]): void {
    const list = requireList(listId, 'lists.remove');
    for (const id of ids) if (list.members.delete(id)) list.version++;
  }

  return {
    url,
    token,
    apiVersion,
    createContact(props) {
      const rec = store.create(props);
      fire(rec, rec.createdMs, [{ type: 'contact.creation' }]);
      return toView(rec, CONTACT_SCHEMA);
    },
    updateContact(id, props) {
      const rec = requireLive(id, 'updateContact');
      applyContactUpdate(rec, props);
      return toView(rec, CONTACT_SCHEMA);
    },
    deleteContact(id) {
      const rec = requireLive(id, 'deleteContact');
      const at = store.archive(rec);
      // HubSpot drops archived records from every list.
      for (const list of lists.values()) if (list.members.delete(id)) list.version++;
      fire(rec, at, [{ type: 'contact.deletion' }]);
    },
    getContact(id) {
      const rec = store.byId.get(id);
      return rec ? toView(rec, CONTACT_SCHEMA) : undefined;
    },
    contacts() {
      return store.liveInIdOrder().map((rec) => toView(rec, CONTACT_SCHEMA));
    },
    lists: { create: createList, add: addToList, remove: removeFromList },
    sendWebhook,
    signV3(method, uri, body, timestamp, secret = clientSecret) {
      return signHubSpotV3(secret, method, uri, body, timestamp);
    },
    flushWebhooks() {
      return webhookChain;
    },
    stats,
    failNext(n, retryAfterSeconds = 1) {
      failRemaining = n;
      failRetryAfter = retryAfterSeconds;
    },
    calls() {
      return calls.liveInIdOrder().map((rec) => ({ ...toView(rec, CALL_SCHEMA), contactIds: [...(callContacts.get(rec.id) ?? [])] }));
    },
    failCalls(predicate, answer = 'multi-status') {
      callFailure = predicate;
      batchFailureAnswer = answer;
    },
    refusals: () => refusals.list(),
    close: () => app.close(),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// CLI: ./dev node crm-stand-ins/hubspot.ts --port 4100 --contacts 300 [--webhook-url URL]

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '4100' },
      host: { type: 'string' },
      contacts: { type: 'string', default: '0' },
      seed: { type: 'string' },
      token: { type: 'string' },
      'client-secret': { type: 'string' },
      'api-version': { type: 'string' },
      'webhook-url': { type: 'string' },
      'search-per-second': { type: 'string' },
      'requests-per-10-seconds': { type: 'string' },
      'do-not-call-share': { type: 'string' },
      'area-codes': { type: 'string' },
    },
  });
  const num = (s: string | undefined) => (s === undefined ? undefined : Number(s));
  const standIn = await startHubSpotStandIn({
    port: num(values.port),
    host: values.host,
    contacts: num(values.contacts),
    seed: num(values.seed),
    token: values.token,
    clientSecret: values['client-secret'],
    apiVersion: values['api-version'],
    webhookUrl: values['webhook-url'],
    searchPerSecond: num(values['search-per-second']),
    requestsPer10Seconds: num(values['requests-per-10-seconds']),
    doNotCallShare: num(values['do-not-call-share']),
    areaCodes: areaCodesOption(values, 'area-codes', 'usage: ./dev node crm-stand-ins/hubspot.ts --port 4100 --contacts 300 [--area-codes 212,808,907] [--do-not-call-share 0.1] [--webhook-url URL]'),
  });
  console.log(`HubSpot stand-in listening on ${standIn.url} (API version ${standIn.apiVersion}, ${standIn.contacts().length} contacts)`);
  console.log(`Access token: ${standIn.token}`);
  if (values['webhook-url']) console.log(`Webhooks to: ${values['webhook-url']}`);
  const stop = () => void standIn.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (import.meta.main) await main();
