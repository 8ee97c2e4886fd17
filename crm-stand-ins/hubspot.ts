// Stand-in for HubSpot's CRM API (contact search, read, batch read, list memberships, rate limits, v3-signed webhooks) seeded with generated contacts.
import { createHmac, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { generatePeople } from './contacts.ts';

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
  /** Date-versioned path segment served; default '2026-09'. The legacy v3 paths are served too. */
  apiVersion?: string;
  /** Search requests admitted per rolling second; default 5. */
  searchPerSecond?: number;
  /** Other requests admitted per rolling 10 seconds; default 190. */
  requestsPer10Seconds?: number;
  /** When set, createContact / updateContact / deleteContact POST signed webhook events here. */
  webhookUrl?: string;
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
}

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
  close(): Promise<void>;
}

// Documented limits of the CRM search endpoints.
const MAX_FILTER_GROUPS = 5;
const MAX_FILTERS_PER_GROUP = 6;
const MAX_FILTERS_TOTAL = 18;
const MAX_SEARCH_LIMIT = 200;
const MAX_SEARCH_RESULTS = 10_000;
const MAX_BATCH_READ = 100;
const MAX_MEMBERSHIPS_LIMIT = 250;

// What HubSpot returns for a contact when no properties are asked for.
const DEFAULT_PROPERTIES = ['createdate', 'email', 'firstname', 'hs_object_id', 'lastmodifieddate', 'lastname'];
// The properties a free-text `query` looks in.
const QUERY_PROPERTIES = ['firstname', 'lastname', 'email', 'phone', 'company'];
const READ_ONLY = new Set(['hs_object_id', 'createdate', 'lastmodifieddate']);

const SEED_BASE_MS = Date.parse('2026-01-01T00:00:00.000Z');
const FIRST_ID = 1001;
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

interface ContactRecord {
  id: string;
  idNum: number;
  properties: Record<string, string | null>;
  createdMs: number;
  updatedMs: number;
  archived: boolean;
}

/** A column whose values only grow along an index array, so a range filter on it is a binary search. */
interface Column {
  property: string;
  keys: number[];
}

/** Records in one order plus the monotonic columns along that order. */
interface OrderedIndex {
  records: ContactRecord[];
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

function toView(rec: ContactRecord): StoredContact {
  return {
    id: rec.id,
    properties: { ...rec.properties },
    createdAt: rec.properties.createdate!,
    updatedAt: rec.properties.lastmodifieddate!,
    archived: rec.archived,
  };
}

/**
 * Contacts kept in two orders: by id (which is also createdate order) and by lastmodifieddate. Writes get
 * strictly increasing timestamps, so both orders only ever grow at the end: an update moves the contact from its
 * place (found by binary search) to the end, and nothing is ever re-sorted. Searches on either order
 * binary-search their range instead of scanning, which keeps a page of 200 among 100,000 contacts well under a
 * millisecond.
 */
class ContactStore {
  readonly byId = new Map<string, ContactRecord>();
  /** Bumped on every write; cached search results are only valid for one version. */
  version = 0;
  private idOrder: ContactRecord[] = [];
  private idKeys: number[] = [];
  private createdKeys: number[] = [];
  private modOrder: ContactRecord[] = [];
  private modKeys: number[] = [];
  private lastWriteMs = 0;
  private nextId = FIRST_ID;
  private readonly now: () => number;

  constructor(now: () => number) {
    this.now = now;
  }

  /** A write time later than every earlier one, so lastmodifieddate orders writes even when the clock stands still. */
  private writeTime(): number {
    const t = this.now();
    this.lastWriteMs = t > this.lastWriteMs ? t : this.lastWriteMs + 1;
    return this.lastWriteMs;
  }

  private insert(props: Record<string, string | null>, ms: number): ContactRecord {
    const idNum = this.nextId++;
    const id = String(idNum);
    const iso = new Date(ms).toISOString();
    const properties: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(props)) if (!READ_ONLY.has(k)) properties[k] = v;
    properties.hs_object_id = id;
    properties.createdate = iso;
    properties.lastmodifieddate = iso;
    const rec: ContactRecord = { id, idNum, properties, createdMs: ms, updatedMs: ms, archived: false };
    this.byId.set(id, rec);
    this.idOrder.push(rec);
    this.idKeys.push(idNum);
    this.createdKeys.push(ms);
    this.modOrder.push(rec);
    this.modKeys.push(ms);
    this.version++;
    return rec;
  }

  seed(count: number, seed: number): void {
    const people = generatePeople(count, seed);
    for (const p of people) {
      // Distinct, increasing timestamps make the seeded order deterministic.
      const ms = SEED_BASE_MS + p.index;
      this.insert({ firstname: p.firstName, lastname: p.lastName, email: p.email, phone: p.phone, company: p.company }, ms);
      if (ms > this.lastWriteMs) this.lastWriteMs = ms;
    }
  }

  create(props: Record<string, string>): ContactRecord {
    return this.insert(props, this.writeTime());
  }

  live(id: string): ContactRecord | undefined {
    const rec = this.byId.get(id);
    return rec && !rec.archived ? rec : undefined;
  }

  /** Returns the properties whose value changed. */
  update(rec: ContactRecord, props: Record<string, string | null>): string[] {
    const changed: string[] = [];
    for (const [k, v] of Object.entries(props)) {
      if (READ_ONLY.has(k)) continue;
      if ((rec.properties[k] ?? null) !== v) changed.push(k);
      rec.properties[k] = v;
    }
    const ms = this.writeTime();
    this.unlinkModified(rec);
    rec.updatedMs = ms;
    rec.properties.lastmodifieddate = new Date(ms).toISOString();
    this.modOrder.push(rec);
    this.modKeys.push(ms);
    this.version++;
    return changed;
  }

  archive(rec: ContactRecord): number {
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
  private unlinkModified(rec: ContactRecord): void {
    const i = lowerBound(this.modKeys, rec.updatedMs, false);
    this.modOrder.splice(i, 1);
    this.modKeys.splice(i, 1);
  }

  liveInIdOrder(): ContactRecord[] {
    return this.idOrder;
  }

  /** The order a search walks: by lastmodifieddate, or by id (equal to createdate order). */
  index(order: 'id' | 'modified'): OrderedIndex {
    if (order === 'modified') return { records: this.modOrder, columns: [{ property: 'lastmodifieddate', keys: this.modKeys }] };
    return {
      records: this.idOrder,
      columns: [
        { property: 'hs_object_id', keys: this.idKeys },
        { property: 'createdate', keys: this.createdKeys },
      ],
    };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Search

interface SearchFilter {
  propertyName: string;
  operator: Operator;
  value?: string | number | boolean;
  highValue?: string | number | boolean;
  values?: Array<string | number | boolean>;
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
  after?: string | number;
  query?: string;
}

const scalar = { type: ['string', 'number', 'boolean'] };
const searchBodySchema = {
  type: 'object',
  properties: {
    filterGroups: {
      type: 'array',
      maxItems: MAX_FILTER_GROUPS,
      items: {
        type: 'object',
        required: ['filters'],
        properties: {
          filters: {
            type: 'array',
            maxItems: MAX_FILTERS_PER_GROUP,
            items: {
              type: 'object',
              required: ['propertyName', 'operator'],
              properties: {
                propertyName: { type: 'string', minLength: 1 },
                operator: { type: 'string', enum: OPERATORS },
                value: scalar,
                highValue: scalar,
                values: { type: 'array', items: scalar },
              },
            },
          },
        },
      },
    },
    sorts: {
      type: 'array',
      items: {
        anyOf: [
          { type: 'string', minLength: 1 },
          {
            type: 'object',
            required: ['propertyName'],
            properties: { propertyName: { type: 'string', minLength: 1 }, direction: { type: 'string', enum: ['ASCENDING', 'DESCENDING'] } },
          },
        ],
      },
    },
    properties: { type: 'array', items: { type: 'string' } },
    limit: { type: 'integer', minimum: 1, maximum: MAX_SEARCH_LIMIT },
    after: { type: ['string', 'integer'] },
    query: { type: 'string' },
  },
} as const;

class ValidationError extends Error {}

const NUMERIC_PROPERTIES: Record<string, (r: ContactRecord) => number> = {
  hs_object_id: (r) => r.idNum,
  createdate: (r) => r.createdMs,
  lastmodifieddate: (r) => r.updatedMs,
};
const DATE_PROPERTIES = new Set(['createdate', 'lastmodifieddate']);

/** Numbers for numeric/date properties: dates may be ms since the epoch or ISO strings, as HubSpot accepts. */
function numericValue(property: string, raw: string | number | boolean | undefined, where: string): number {
  if (raw === undefined) throw new ValidationError(`${where}: a value is required`);
  const s = String(raw).trim();
  if (/^-?\d+(\.\d+)?$/.test(s)) return Number(s);
  if (DATE_PROPERTIES.has(property)) {
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

type Predicate = (r: ContactRecord) => boolean;

function compileFilter(f: SearchFilter, where: string): Predicate {
  const prop = f.propertyName;
  const op = f.operator;
  if (op === 'HAS_PROPERTY') return (r) => r.properties[prop] != null && r.properties[prop] !== '';
  if (op === 'NOT_HAS_PROPERTY') return (r) => r.properties[prop] == null || r.properties[prop] === '';
  if (op === 'CONTAINS_TOKEN' || op === 'NOT_CONTAINS_TOKEN') {
    if (f.value === undefined) throw new ValidationError(`${where}: ${op} needs a value`);
    const match = tokenMatcher(String(f.value));
    const has = (r: ContactRecord) => {
      const v = r.properties[prop];
      return v != null && match(v);
    };
    return op === 'CONTAINS_TOKEN' ? has : (r) => !has(r);
  }
  if ((op === 'IN' || op === 'NOT_IN') && (!f.values || f.values.length === 0)) {
    throw new ValidationError(`${where}: ${op} needs a non-empty 'values' array`);
  }
  const get = NUMERIC_PROPERTIES[prop];
  if (get) {
    if (op === 'IN' || op === 'NOT_IN') {
      const set = new Set(f.values!.map((v, i) => numericValue(prop, v, `${where}.values[${i}]`)));
      return op === 'IN' ? (r) => set.has(get(r)) : (r) => !set.has(get(r));
    }
    const x = numericValue(prop, f.value, where);
    switch (op) {
      case 'EQ': return (r) => get(r) === x;
      case 'NEQ': return (r) => get(r) !== x;
      case 'LT': return (r) => get(r) < x;
      case 'LTE': return (r) => get(r) <= x;
      case 'GT': return (r) => get(r) > x;
      case 'GTE': return (r) => get(r) >= x;
      case 'BETWEEN': {
        const hi = numericValue(prop, f.highValue, `${where}.highValue`);
        return (r) => get(r) >= x && get(r) <= hi;
      }
    }
  }
  // String properties compare case-insensitively, like HubSpot's search index.
  if (op === 'IN' || op === 'NOT_IN') {
    const set = new Set(f.values!.map((v) => String(v).toLowerCase()));
    const has = (r: ContactRecord) => {
      const v = r.properties[prop];
      return v != null && set.has(v.toLowerCase());
    };
    return op === 'IN' ? has : (r) => !has(r);
  }
  if (f.value === undefined) throw new ValidationError(`${where}: ${op} needs a value`);
  const x = String(f.value);
  if (op === 'EQ' || op === 'NEQ') {
    const lx = x.toLowerCase();
    const eq = (r: ContactRecord) => {
      const v = r.properties[prop];
      return v != null && (v === x || v.toLowerCase() === lx);
    };
    return op === 'EQ' ? eq : (r) => !eq(r);
  }
  const cmp = (r: ContactRecord): number | undefined => {
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
function rangeOf(filter: SearchFilter, column: Column, where: string): [number, number] | undefined {
  const keys = column.keys;
  const n = keys.length;
  const v = () => numericValue(column.property, filter.value, where);
  switch (filter.operator) {
    case 'EQ': { const x = v(); return [lowerBound(keys, x, false), lowerBound(keys, x, true)]; }
    case 'GT': return [lowerBound(keys, v(), true), n];
    case 'GTE': return [lowerBound(keys, v(), false), n];
    case 'LT': return [0, lowerBound(keys, v(), false)];
    case 'LTE': return [0, lowerBound(keys, v(), true)];
    case 'BETWEEN': {
      const hi = numericValue(column.property, filter.highValue, `${where}.highValue`);
      return [lowerBound(keys, v(), false), lowerBound(keys, hi, true)];
    }
    default: return undefined;
  }
}

interface Plan {
  records: ContactRecord[];
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

function planSearch(store: ContactStore, body: SearchBody): Plan {
  const groups = body.filterGroups ?? [];
  const total = groups.reduce((n, g) => n + g.filters.length, 0);
  if (total > MAX_FILTERS_TOTAL) {
    throw new ValidationError(`filterGroups: at most ${MAX_FILTERS_TOTAL} filters in total are allowed; got ${total}`);
  }
  const sort = parseSort(body.sorts);
  const sortProperty = sort?.property ?? 'hs_object_id';
  const descending = sort?.descending ?? false;
  const indexed = sortProperty === 'lastmodifieddate' ? 'modified' : 'id';
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
      const r = column && rangeOf(f, column, where);
      if (r) {
        gLo = Math.max(gLo, r[0]);
        gHi = Math.min(gHi, r[1]);
      }
      // With one group the walked range already applies a range filter; with several it is only their hull.
      if (!r || groups.length > 1) preds.push(compileFilter(f, where));
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
      const text = QUERY_PROPERTIES.map((p) => r.properties[p] ?? '').join(' ').toLowerCase();
      return terms.every((t) => text.includes(t));
    });
  }
  const predicate: Predicate | undefined = exact ? undefined : conditions.length === 1 ? conditions[0] : (r) => conditions.every((p) => p(r));
  const orderedByIndex = sortProperty === 'lastmodifieddate' || sortProperty === 'hs_object_id' || sortProperty === 'createdate';
  return { records: index.records, lo, hi, descending, predicate, sortProperty: orderedByIndex ? undefined : sortProperty };
}

/** Everything the plan matches, in result order. */
function collect(plan: Plan): ContactRecord[] {
  const out: ContactRecord[] = [];
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

function resultView(rec: ContactRecord, props: readonly string[]) {
  const properties: Record<string, string | null> = {};
  for (const p of props) properties[p] = rec.properties[p] ?? null;
  properties.hs_object_id = rec.id;
  properties.createdate = rec.properties.createdate!;
  properties.lastmodifieddate = rec.properties.lastmodifieddate!;
  return {
    id: rec.id,
    properties,
    createdAt: rec.properties.createdate!,
    updatedAt: rec.properties.lastmodifieddate!,
    archived: false,
  };
}

function requestedProperties(raw: unknown): string[] {
  const list = (Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : [])
    .flatMap((s) => String(s).split(','))
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return list.length > 0 ? list : DEFAULT_PROPERTIES;
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

type ErrorCategory = 'VALIDATION_ERROR' | 'RATE_LIMITS' | 'OBJECT_NOT_FOUND' | 'INVALID_AUTHENTICATION';

function errorBody(category: ErrorCategory, message: string, extra: Record<string, unknown> = {}) {
  return { status: 'error', message, correlationId: randomUUID(), category, ...extra };
}

interface ContactList {
  name: string;
  /** recordId → ms when added */
  members: Map<string, number>;
}

export async function startHubSpotStandIn(opts: HubSpotStandInOptions = {}): Promise<HubSpotStandIn> {
  const now = opts.now ?? Date.now;
  const token = opts.token ?? 'hs-test-token';
  const clientSecret = opts.clientSecret ?? 'hs-client-secret';
  const apiVersion = opts.apiVersion ?? '2026-09';
  const host = opts.host ?? '127.0.0.1';
  const searchWindow = new RollingWindow(1000, opts.searchPerSecond ?? 5);
  const requestWindow = new RollingWindow(10_000, opts.requestsPer10Seconds ?? 190);
  const store = new ContactStore(now);
  store.seed(opts.contacts ?? 0, opts.seed ?? 1);

  const stats: HubSpotStandInStats = { requests: 0, searches: 0, rateLimited: 0, maxSearchesInAnySecond: 0, webhooksDelivered: 0, webhookFailures: 0 };
  const lists = new Map<string, ContactList>();
  let nextListId = 1;
  let failRemaining = 0;
  let failRetryAfter = 1;
  let nextEventId = 1;
  let webhookChain: Promise<void> = Promise.resolve();
  // Paging re-runs the same query many times; its matches stay valid until the next write.
  const searchCache = new Map<string, { version: number; matches: ContactRecord[] }>();

  // Filter values may be strings, numbers or booleans, as HubSpot accepts them.
  const app = Fastify({ logger: false, forceCloseConnections: true, ajv: { customOptions: { allowUnionTypes: true } } });

  app.setErrorHandler((error: FastifyError, _request, reply) => {
    if (error instanceof ValidationError) return reply.code(400).send(errorBody('VALIDATION_ERROR', error.message));
    if (error.validation) {
      return reply.code(400).send(errorBody('VALIDATION_ERROR', `Invalid input: ${error.message}`, {
        errors: error.validation.map((v) => ({ message: `${v.instancePath || error.validationContext || ''} ${v.message ?? ''}`.trim(), context: v.params })),
      }));
    }
    const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    return reply.code(status).send({ status: 'error', message: error.message, correlationId: randomUUID(), category: status === 400 ? 'VALIDATION_ERROR' : 'INTERNAL_ERROR' });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(errorBody('OBJECT_NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]} in this HubSpot stand-in`)),
  );

  function tooMany(reply: FastifyReply, retryAfter: number, message: string, policyName: string) {
    stats.rateLimited++;
    return reply
      .code(429)
      .header('Retry-After', String(retryAfter))
      .send(errorBody('RATE_LIMITS', message, { errorType: 'RATE_LIMIT', policyName }));
  }

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    stats.requests++;
    if (failRemaining > 0) {
      failRemaining--;
      return tooMany(reply, failRetryAfter, 'You have reached your secondly limit.', 'SECONDLY');
    }
    const auth = request.headers.authorization;
    if (!auth) {
      return reply.code(401).send(errorBody('INVALID_AUTHENTICATION', 'Authentication credentials not found. This API supports OAuth 2.0 authentication and private app access tokens (Authorization: Bearer <token>).'));
    }
    if (auth !== `Bearer ${token}`) {
      return reply.code(401).send(errorBody('INVALID_AUTHENTICATION', 'The access token provided is invalid or expired. Send the private app access token as Authorization: Bearer <token>.'));
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

  async function search(request: FastifyRequest<{ Body: SearchBody | undefined }>) {
    const body = request.body ?? {};
    const limit = body.limit ?? 10;
    const afterRaw = body.after === undefined || body.after === '' ? '0' : String(body.after);
    if (!/^\d+$/.test(afterRaw)) throw new ValidationError(`after: must be an integer offset given as a string; got '${afterRaw}'`);
    const after = Number(afterRaw);
    if (after + limit > MAX_SEARCH_RESULTS) {
      throw new ValidationError(
        `Paging beyond ${MAX_SEARCH_RESULTS} results is not allowed: after (${after}) + limit (${limit}) exceeds ${MAX_SEARCH_RESULTS}. ` +
          'Narrow the search instead, e.g. restart with lastmodifieddate GTE the last value read.',
      );
    }
    const plan = planSearch(store, body);
    let total: number;
    let page: ContactRecord[];
    if (!plan.predicate && !plan.sortProperty) {
      total = plan.hi - plan.lo;
      page = [];
      for (let k = after; k < Math.min(after + limit, total); k++) {
        page.push(plan.records[plan.descending ? plan.hi - 1 - k : plan.lo + k]!);
      }
    } else {
      const key = JSON.stringify([body.filterGroups, body.sorts, body.query]);
      let cached = searchCache.get(key);
      if (!cached || cached.version !== store.version) {
        cached = { version: store.version, matches: collect(plan) };
        searchCache.set(key, cached);
        if (searchCache.size > 32) searchCache.delete(searchCache.keys().next().value!);
      }
      total = cached.matches.length;
      page = cached.matches.slice(after, after + limit);
    }
    const props = requestedProperties(body.properties);
    const next = after + page.length;
    return {
      total,
      results: page.map((r) => resultView(r, props)),
      ...(next < total ? { paging: { next: { after: String(next) } } } : {}),
    };
  }

  async function readOne(request: FastifyRequest<{ Params: { id: string }; Querystring: { properties?: string | string[] } }>, reply: FastifyReply) {
    const rec = store.live(request.params.id);
    if (!rec) return reply.code(404).send(errorBody('OBJECT_NOT_FOUND', `No contact with id ${request.params.id}`));
    return resultView(rec, requestedProperties(request.query.properties));
  }

  interface BatchReadBody {
    inputs: Array<{ id: string | number }>;
    properties?: string[];
    idProperty?: string;
  }
  async function batchRead(request: FastifyRequest<{ Body: BatchReadBody }>) {
    const startedAt = new Date(now()).toISOString();
    const { inputs, idProperty } = request.body;
    const props = requestedProperties(request.body.properties);
    let lookup: (id: string) => ContactRecord | undefined = (id) => store.live(id);
    if (idProperty && idProperty !== 'hs_object_id') {
      const wanted = new Set(inputs.map((i) => String(i.id).toLowerCase()));
      const found = new Map<string, ContactRecord>();
      for (const rec of store.liveInIdOrder()) {
        const v = rec.properties[idProperty]?.toLowerCase();
        if (v !== undefined && wanted.has(v) && !found.has(v)) found.set(v, rec);
      }
      lookup = (id) => found.get(id.toLowerCase());
    }
    const results = [];
    for (const input of inputs) {
      const rec = lookup(String(input.id));
      if (rec) results.push(resultView(rec, props));
    }
    return { status: 'COMPLETE', results, startedAt, completedAt: new Date(now()).toISOString() };
  }
  const batchReadSchema = {
    body: {
      type: 'object',
      required: ['inputs'],
      properties: {
        inputs: { type: 'array', maxItems: MAX_BATCH_READ, items: { type: 'object', required: ['id'], properties: { id: { type: ['string', 'integer'] } } } },
        properties: { type: 'array', items: { type: 'string' } },
        idProperty: { type: 'string' },
      },
    },
  };

  async function memberships(
    request: FastifyRequest<{ Params: { listId: string }; Querystring: { limit?: number; after?: string } }>,
    reply: FastifyReply,
  ) {
    const list = lists.get(request.params.listId);
    if (!list) return reply.code(404).send(errorBody('OBJECT_NOT_FOUND', `No list with id ${request.params.listId}`));
    const limit = request.query.limit ?? 100;
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
      properties: { limit: { type: 'integer', minimum: 1, maximum: MAX_MEMBERSHIPS_LIMIT }, after: { type: 'string' } },
    },
  };

  for (const base of [`/crm/objects/${apiVersion}/contacts`, '/crm/v3/objects/contacts']) {
    app.post(`${base}/search`, { schema: { body: searchBodySchema } }, search);
    app.post(`${base}/batch/read`, { schema: batchReadSchema }, batchRead);
    app.get(`${base}/:id`, readOne);
  }
  for (const base of [`/crm/lists/${apiVersion}`, '/crm/v3/lists']) {
    app.get(`${base}/:listId/memberships`, { schema: membershipsSchema }, memberships);
  }

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

  function fire(rec: ContactRecord, occurredAt: number, changes: Array<{ type: string; propertyName?: string; propertyValue?: string }>) {
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

  function requireLive(id: string, what: string): ContactRecord {
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
      if (!list.members.has(id)) list.members.set(id, t);
    }
  }
  function createList(name: string, ids: string[]): string {
    const listId = String(nextListId++);
    lists.set(listId, { name, members: new Map() });
    addToList(listId, ids);
    return listId;
  }
  function removeFromList(listId: string, ids: string[]): void {
    const list = requireList(listId, 'lists.remove');
    for (const id of ids) list.members.delete(id);
  }

  return {
    url,
    token,
    apiVersion,
    createContact(props) {
      const rec = store.create(props);
      fire(rec, rec.createdMs, [{ type: 'contact.creation' }]);
      return toView(rec);
    },
    updateContact(id, props) {
      const rec = requireLive(id, 'updateContact');
      const changed = store.update(rec, props);
      fire(rec, rec.updatedMs, changed.map((p) => ({ type: 'contact.propertyChange', propertyName: p, propertyValue: rec.properties[p] ?? '' })));
      return toView(rec);
    },
    deleteContact(id) {
      const rec = requireLive(id, 'deleteContact');
      const at = store.archive(rec);
      // HubSpot drops archived records from every list.
      for (const list of lists.values()) list.members.delete(id);
      fire(rec, at, [{ type: 'contact.deletion' }]);
    },
    getContact(id) {
      const rec = store.byId.get(id);
      return rec ? toView(rec) : undefined;
    },
    contacts() {
      return store.liveInIdOrder().map(toView);
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
  });
  console.log(`HubSpot stand-in listening on ${standIn.url} (API version ${standIn.apiVersion}, ${standIn.contacts().length} contacts)`);
  console.log(`Access token: ${standIn.token}`);
  if (values['webhook-url']) console.log(`Webhooks to: ${values['webhook-url']}`);
  const stop = () => void standIn.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (import.meta.main) await main();
