// A stand-in for the parts of Pipedrive's API a sync daemon uses: persons (API v2, cursor paging, update), person fields, filters, call logs (add, list, read), v2 webhooks, token-budget rate limits;
// a request that drifts from Pipedrive's v1/v2 API description is refused as Pipedrive refuses it, and counted.
import { randomBytes, randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { intOption, parseStandInArgs, shareOption, stopOnSignals } from './command-line.ts';
import { generatePeople, seededDoNotCall, validPhone } from './contacts.ts';
import { RefusalLog, type Refusal } from './refusals.ts';

export interface PersonContact { value: string; primary: boolean; label: string }

/** A person as API v2 returns it (GET /api/v2/persons). Objects handed out are frozen: a write replaces, never mutates. */
export interface StoredPerson {
  id: number;
  name: string;
  first_name: string | null;
  last_name: string | null;
  owner_id: number;
  org_id: number | null;
  /** RFC 3339 UTC, whole seconds, e.g. "2026-01-01T00:00:00Z" (Pipedrive's own v2 resolution). */
  add_time: string;
  update_time: string;
  visible_to: number;
  phones: PersonContact[];
  emails: PersonContact[];
  label_ids: number[];
  picture_id: number | null;
  is_deleted: boolean;
  custom_fields: Record<string, unknown>;
}

export interface ContactInput { value: string; primary?: boolean; label?: string }

/** What createPerson takes; keys it does not know become custom fields (Pipedrive keys them by field hash). */
export interface PersonInput {
  name: string;
  first_name?: string | null;
  last_name?: string | null;
  owner_id?: number;
  org_id?: number | null;
  visible_to?: number;
  phones?: ContactInput[];
  emails?: ContactInput[];
  custom_fields?: Record<string, unknown>;
  [customField: string]: unknown;
}

export type CallLogOutcome = 'connected' | 'no_answer' | 'left_message' | 'left_voicemail' | 'wrong_number' | 'busy';

export interface StoredCallLog {
  id: string;
  outcome: CallLogOutcome;
  to_phone_number: string;
  from_phone_number: string | null;
  start_time: string;
  end_time: string;
  duration: string | null;
  subject: string | null;
  note: string | null;
  person_id: number | null;
  org_id: number | null;
  deal_id: number | null;
  lead_id: string | null;
  activity_id: number | null;
  user_id: number;
  company_id: number;
  has_recording: boolean;
}

/**
 * Decides whether a call log being added fails: true (a generic message) or a message fails it with a 400; false or ''
 * lets it through. It sees the log as it would be stored.
 */
export type CallLogFailurePredicate = (log: StoredCallLog) => boolean | string;

export type WebhookAction = 'create' | 'change' | 'delete';

/** A custom person field: its key (Pipedrive's 40-character hash), name, type and an option field's options. */
export interface PersonFieldInput {
  key: string;
  name: string;
  field_type: 'varchar' | 'varchar_auto' | 'text' | 'double' | 'monetary' | 'date' | 'set' | 'enum' | 'user' | 'org' | 'people' | 'phone' | 'time' | 'timerange' | 'daterange' | 'address';
  options?: readonly { id: number; label: string }[];
}

/** A person's standard fields as GET /api/v2/personFields names them (field_code) and types them. */
const STANDARD_PERSON_FIELDS: readonly { code: string; name: string; type: string }[] = [
  { code: 'id', name: 'ID', type: 'int' },
  { code: 'name', name: 'Name', type: 'varchar' },
  { code: 'first_name', name: 'First name', type: 'varchar' },
  { code: 'last_name', name: 'Last name', type: 'varchar' },
  { code: 'label_ids', name: 'Labels', type: 'set' },
  { code: 'phone', name: 'Phone', type: 'phone' },
  { code: 'email', name: 'Email', type: 'varchar' },
  { code: 'owner_id', name: 'Owner', type: 'user' },
  { code: 'org_id', name: 'Organization', type: 'org' },
  { code: 'add_time', name: 'Person created', type: 'date' },
  { code: 'update_time', name: 'Update time', type: 'date' },
  { code: 'visible_to', name: 'Visible to', type: 'visible_to' },
  { code: 'picture_id', name: 'Profile picture', type: 'picture' },
];

export interface WebhookTarget { url: string; user: string; password: string }

export interface PipedriveStandInOptions {
  port?: number;
  host?: string;
  /** Accepted as header `x-api-token` or query `api_token`. */
  apiToken?: string;
  /** Seeded persons, from contacts.ts's generatePeople. */
  persons?: number;
  seed?: number;
  /**
   * When set, every seeded person gets the single-option custom field DO_NOT_CALL_FIELD: Yes for this share of them
   * (0 to 1), No for the rest. Pipedrive has no Do Not Call field of its own, nor a yes/no field type: an account that
   * tracks it has an option field like this one, whose value API v2 gives as the chosen option's id.
   */
  doNotCallShare?: number;
  /** Requests per rolling 2 s per token; 20 is the Lite plan's figure for an API token. */
  burstPer2Seconds?: number;
  /** Daily token budget per token, reset at 00:00 UTC of the injected clock; 30,000 is the base budget of one Lite seat. */
  dailyTokens?: number;
  /** When set, createPerson/updatePerson/deletePerson POST a v2 webhook here with HTTP Basic auth. */
  webhook?: WebhookTarget;
  /** Custom person fields besides the standard ones (and DO_NOT_CALL_FIELD when doNotCallShare is set). */
  personFields?: readonly PersonFieldInput[];
  /** Milliseconds since the epoch; drives update_time, the burst window and the daily budget. */
  now?: () => number;
}

export interface PipedriveStandInStats {
  requests: number;
  rateLimited: number;
  tokensUsed: number;
  /** Counts every authenticated arrival, refused or not, so a client that overruns the burst limit shows it here. */
  maxRequestsInAny2Seconds: number;
  webhooksSent: number;
  webhooksFailed: number;
  /**
   * Requests refused because they drift from Pipedrive's API as its OpenAPI files (v1, v2) describe it: a path it does
   * not serve, a query parameter it does not have, a body field it does not know or of the wrong type. Not counted:
   * 401s, 429s, ids not found, and failures a test asks for with failCallLogs. Tests of a client assert it stays 0.
   */
  refused: number;
}

/** One refused request, as `refusals()` lists it. */
export type PipedriveRefusal = Refusal;

export interface PipedriveStandIn {
  url: string;
  apiToken: string;
  createPerson(p: PersonInput): StoredPerson;
  /** Bumps update_time (never backwards, see `stamp`). */
  updatePerson(id: number, patch: Partial<PersonInput>): StoredPerson;
  deletePerson(id: number): void;
  getPerson(id: number): StoredPerson | undefined;
  /** In id order. */
  persons(): StoredPerson[];
  callLogs(): StoredCallLog[];
  /** A filter of persons (its `type` as Pipedrive's filters have one: people, deals, org, ...; default people). */
  filters: { create(name: string, predicate: (p: StoredPerson) => boolean, type?: string): number };
  sendWebhook(
    action: WebhookAction, person: StoredPerson, previous?: StoredPerson | null, opts?: Partial<WebhookTarget>,
  ): Promise<{ status: number; body: string }>;
  /** Resolves once every auto-fired webhook got an answer (or failed to connect). */
  flushWebhooks(): Promise<void>;
  stats: PipedriveStandInStats;
  /** The next n authenticated requests answer 429 as if a burst limit were hit (x-ratelimit-* headers, no Retry-After). */
  failNext(n: number): void;
  /** Call logs the predicate matches are refused (400) until failCallLogs(null). */
  failCallLogs(predicate: CallLogFailurePredicate | null): void;
  /** The refused requests counted in stats.refused (the last 100), to show what drifted. */
  refusals(): PipedriveRefusal[];
  close(): Promise<void>;
}

const DEFAULT_TOKEN = 'pd-test-token';

/** The person field seeded with `doNotCallShare`: a single-option (enum) field, keyed by its 40-character hash. */
export const DO_NOT_CALL_FIELD = {
  key: '5f1c0d9ae7b24c6f8a3e2b1d0c9f8e7a6b5c4d3e', name: 'Do not call', field_type: 'enum',
  options: [{ id: 101, label: 'Yes' }, { id: 102, label: 'No' }],
} as const;
const BURST_WINDOW_MS = 2000;
const SEED_BASE_MS = Date.parse('2026-01-01T00:00:00Z');
const MAX_LIMIT = 500;
const MAX_IDS = 100;
// Pipedrive documents 50 as the upper limit of GET /v1/callLogs.
const MAX_CALL_LOG_LIMIT = 50;
const COMPANY_ID = 1;
const USER_ID = 1;
const WEBHOOK_ID = 1;
const ERROR_INFO = 'Please check developers.pipedrive.com for more information about Pipedrive API.';

/**
 * Token cost per request. Pipedrive prices each operation: a v1 list 20, a v1 single read 2, a v1 write 10, and v2
 * reads at half their v1 price (list 10, single 1). Routes not listed (404s) cost nothing but still count toward the burst.
 */
const TOKEN_COSTS: Record<string, number> = {
  'GET /api/v2/persons': 10,
  'GET /api/v2/persons/:id': 1,
  // A v2 write, half of v1's 10 like the v2 reads.
  'PATCH /api/v2/persons/:id': 5,
  'POST /v1/callLogs': 10,
  'POST /api/v1/callLogs': 10,
  'GET /v1/callLogs': 20,
  'GET /api/v1/callLogs': 20,
  'GET /v1/callLogs/:id': 2,
  'GET /api/v2/personFields': 10,
  'GET /v1/filters/:id': 2,
  'GET /api/v1/callLogs/:id': 2,
};

const OUTCOMES: readonly CallLogOutcome[] = ['connected', 'no_answer', 'left_message', 'left_voicemail', 'wrong_number', 'busy'];
/** The body fields of POST /v1/callLogs (AddCallLogRequest in Pipedrive's v1 OpenAPI). */
const CALL_LOG_KEYS = new Set(['outcome', 'to_phone_number', 'start_time', 'end_time', 'user_id', 'activity_id', 'subject', 'duration',
  'from_phone_number', 'person_id', 'org_id', 'deal_id', 'lead_id', 'note']);
/** The query parameters of GET /api/v2/persons (v2 OpenAPI) and of GET /v1/callLogs (v1), besides api_token. */
const PERSONS_QUERY = new Set(['filter_id', 'ids', 'owner_id', 'org_id', 'deal_id', 'updated_since', 'updated_until', 'sort_by', 'sort_direction',
  'include_fields', 'custom_fields', 'limit', 'cursor']);
const CALL_LOGS_QUERY = new Set(['start', 'limit']);
const PERSON_FIELDS_QUERY = new Set(['include_fields', 'limit', 'cursor']);
const PERSON_KEYS = new Set(['name', 'first_name', 'last_name', 'owner_id', 'org_id', 'visible_to', 'phones', 'emails', 'custom_fields']);
const VISIBLE_TO = [1, 3, 5, 7];
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
const CALL_TIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

type SortBy = 'id' | 'update_time' | 'add_time';
type Direction = 'asc' | 'desc';

/** A stored person plus its update_time as a number, so that ordering never re-parses dates. */
interface Entry { person: StoredPerson; upd: number }
/** Position in an ordering: update time (ms, 0 in id order) then id. */
interface Key { u: number; id: number }

/** A refusal; `drift` (the default) when the request itself is wrong for Pipedrive, counted in stats.refused. */
class BadRequest extends Error {
  readonly status: number;
  readonly drift: boolean;
  constructor(message: string, status = 400, drift = true) {
    super(message);
    this.status = status;
    this.drift = drift;
  }
}

/** Refuses query parameters the endpoint does not have (a misspelt or v1-only one would otherwise be ignored silently). */
function knownQuery(query: Record<string, unknown>, known: ReadonlySet<string>): void {
  for (const name of Object.keys(query)) {
    if (name !== 'api_token' && !known.has(name)) throw new BadRequest(`${name}: not a parameter of this endpoint; it takes ${[...known].join(', ')}`);
  }
}

function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function splitName(name: string): { first: string | null; last: string | null } {
  const trimmed = name.trim();
  const at = trimmed.indexOf(' ');
  if (at < 0) return { first: trimmed || null, last: null };
  return { first: trimmed.slice(0, at), last: trimmed.slice(at + 1).trim() || null };
}

/** Pipedrive marks exactly one entry primary; the first when the caller marks none. */
function contacts(list: ContactInput[] | undefined, defaultLabel: string): PersonContact[] {
  if (!list) return [];
  const firstPrimary = list.findIndex((c) => c.primary);
  return list.map((c, i) => ({ value: String(c.value), primary: i === (firstPrimary < 0 ? 0 : firstPrimary), label: c.label ?? defaultLabel }));
}

/** "+12125550123" → "(212) 555-0123", the way a user types a second number in the app. */
function usDisplay(e164: string): string {
  const d = e164.replace(/^\+1/, '');
  return `(${d.slice(0, 3)}) ${d.slice(3, 6)}-${d.slice(6)}`;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

function compareKey(e: Entry, k: Key, byUpdate: boolean): number {
  if (byUpdate && e.upd !== k.u) return e.upd < k.u ? -1 : 1;
  return e.person.id - k.id;
}

/** First index whose entry is not below k. */
function lowerBound(arr: Entry[], k: Key, byUpdate: boolean): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKey(arr[mid]!, k, byUpdate) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index whose entry is above k. */
function upperBound(arr: Entry[], k: Key, byUpdate: boolean): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKey(arr[mid]!, k, byUpdate) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

interface ListQuery {
  sortBy: SortBy;
  direction: Direction;
  limit: number;
  after: Key | null;
  since: number | null;
  until: number | null;
  ids: number[] | null;
  ownerId: number | null;
  filter: ((p: StoredPerson) => boolean) | null;
}

function single(query: Record<string, unknown>, name: string): string | undefined {
  const v = query[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new BadRequest(`${name}: given more than once; pass it once`);
  return v;
}

function positiveInt(name: string, raw: string): number {
  if (!/^\d{1,15}$/.test(raw) || Number(raw) < 1) throw new BadRequest(`${name}: must be a positive integer; got "${raw}"`);
  return Number(raw);
}

function rfc3339Param(name: string, raw: string): number {
  const ms = Date.parse(raw);
  if (!RFC3339.test(raw) || Number.isNaN(ms)) throw new BadRequest(`${name}: must be an RFC 3339 date-time such as 2026-01-01T00:00:00Z; got "${raw}"`);
  return ms;
}

function encodeCursor(sortBy: SortBy, direction: Direction, k: Key): string {
  return Buffer.from(JSON.stringify({ s: sortBy, d: direction, u: k.u, i: k.id })).toString('base64url');
}

function decodeCursor(raw: string, sortBy: SortBy, direction: Direction): Key {
  let c: unknown;
  try {
    c = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw new BadRequest('cursor: not a cursor this endpoint issued; pass additional_data.next_cursor from the previous page');
  }
  const o = c as { s?: unknown; d?: unknown; u?: unknown; i?: unknown } | null;
  if (!o || typeof o.u !== 'number' || typeof o.i !== 'number') {
    throw new BadRequest('cursor: not a cursor this endpoint issued; pass additional_data.next_cursor from the previous page');
  }
  if (o.s !== sortBy || o.d !== direction) {
    throw new BadRequest(`cursor: was issued for sort_by=${String(o.s)}&sort_direction=${String(o.d)}; repeat those with it`);
  }
  return { u: o.u, id: o.i };
}

/** Non-negative whole number from a query parameter, or the default when absent. */
function offsetParam(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d{1,15}$/.test(raw)) throw new BadRequest(`${name}: must be a whole number of 0 or more; got "${raw}"`);
  return Number(raw);
}

/**
 * The body of PATCH /api/v2/persons/{id}. API v2 takes custom fields only inside `custom_fields`, so any other key it
 * does not know is refused rather than silently turned into a custom field.
 */
function parsePersonPatch(body: unknown): Partial<PersonInput> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new BadRequest('body: must be a JSON object');
  const b = body as Record<string, unknown>;
  const keys = Object.keys(b);
  if (keys.length === 0) throw new BadRequest(`body: give at least one of ${[...PERSON_KEYS].join(', ')}`);
  for (const k of keys) {
    if (!PERSON_KEYS.has(k)) throw new BadRequest(`${k}: not a person field; custom fields go inside custom_fields, keyed by field key`);
  }
  const id = (name: string, nullable: boolean) => {
    const v = b[name];
    if (v === undefined || (nullable && v === null)) return;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new BadRequest(`${name}: must be a positive integer${nullable ? ' or null' : ''}; got ${JSON.stringify(v)}`);
  };
  if (b.name !== undefined && (typeof b.name !== 'string' || b.name.trim() === '')) throw new BadRequest(`name: must be a non-empty string; got ${JSON.stringify(b.name)}`);
  for (const name of ['first_name', 'last_name']) {
    if (b[name] !== undefined && b[name] !== null && typeof b[name] !== 'string') throw new BadRequest(`${name}: must be a string or null; got ${JSON.stringify(b[name])}`);
  }
  id('owner_id', false);
  id('org_id', true);
  if (b.visible_to !== undefined && !VISIBLE_TO.includes(b.visible_to as number)) {
    throw new BadRequest(`visible_to: must be one of ${VISIBLE_TO.join(', ')}; got ${JSON.stringify(b.visible_to)}`);
  }
  for (const name of ['phones', 'emails']) {
    const v = b[name];
    if (v === undefined) continue;
    if (!Array.isArray(v)) throw new BadRequest(`${name}: must be an array of { value, primary?, label? }`);
    v.forEach((c: unknown, i) => {
      const e = c as Record<string, unknown> | null;
      if (!e || typeof e !== 'object' || typeof e.value !== 'string' || e.value === '') throw new BadRequest(`${name}[${i}].value: must be a non-empty string`);
      if (e.primary !== undefined && typeof e.primary !== 'boolean') throw new BadRequest(`${name}[${i}].primary: must be true or false`);
      if (e.label !== undefined && typeof e.label !== 'string') throw new BadRequest(`${name}[${i}].label: must be a string`);
    });
  }
  if (b.custom_fields !== undefined && (!b.custom_fields || typeof b.custom_fields !== 'object' || Array.isArray(b.custom_fields))) {
    throw new BadRequest('custom_fields: must be an object of field key to value');
  }
  // A single-option field takes one of its option ids (an integer; v2 no longer coerces strings) or null.
  const dnc = (b.custom_fields as Record<string, unknown> | undefined)?.[DO_NOT_CALL_FIELD.key];
  if (dnc !== undefined && dnc !== null && !DO_NOT_CALL_FIELD.options.some((o) => o.id === dnc)) {
    throw new BadRequest(`custom_fields.${DO_NOT_CALL_FIELD.key}: must be one of the option ids ${DO_NOT_CALL_FIELD.options.map((o) => o.id).join(', ')} or null; got ${JSON.stringify(dnc)}`);
  }
  return b as Partial<PersonInput>;
}

export async function startPipedriveStandIn(opts: PipedriveStandInOptions = {}): Promise<PipedriveStandIn> {
  const now = opts.now ?? Date.now;
  const apiToken = opts.apiToken ?? DEFAULT_TOKEN;
  const burstLimit = opts.burstPer2Seconds ?? 20;
  const dailyTokens = opts.dailyTokens ?? 30_000;

  const byIdMap = new Map<number, Entry>();
  /** Sorted by id; add_time order is the same order because add_time never goes backwards (see `stamp`). */
  const byId: Entry[] = [];
  /** Sorted by (update_time, id), so updated_since starts with a binary search. */
  const byUpdate: Entry[] = [];
  const filterPredicates = new Map<number, { name: string; predicate: (p: StoredPerson) => boolean; type: string }>();
  /** Custom person fields: the configured ones, the seeded Do Not Call one, and any key a person's custom_fields holds (as text). */
  function customFields(): PersonFieldInput[] {
    const all = new Map<string, PersonFieldInput>((opts.personFields ?? []).map((f) => [f.key, f]));
    if (opts.doNotCallShare !== undefined && !all.has(DO_NOT_CALL_FIELD.key)) {
      all.set(DO_NOT_CALL_FIELD.key, { key: DO_NOT_CALL_FIELD.key, name: DO_NOT_CALL_FIELD.name, field_type: 'enum', options: DO_NOT_CALL_FIELD.options });
    }
    for (const e of byId) for (const key of Object.keys(e.person.custom_fields)) if (!all.has(key)) all.set(key, { key, name: key, field_type: 'varchar' });
    return [...all.values()];
  }
  const callLogs: StoredCallLog[] = [];
  const callLogsById = new Map<string, StoredCallLog>();
  let callLogFailure: CallLogFailurePredicate | null = null;
  let nextId = 1;
  let nextFilterId = 1;
  let lastStamp = 0;

  /**
   * The time a write records, in whole seconds. Pipedrive's v2 times have 1-second resolution, so two writes in one second
   * share an update_time; that is why updated_since is inclusive (>=) here. It also never goes backwards, even when an
   * injected clock is behind the seeded times, so an incremental sync that remembers the last update_time misses nothing.
   */
  function stamp(): number {
    const sec = Math.floor(now() / 1000) * 1000;
    lastStamp = Math.max(lastStamp, sec);
    return lastStamp;
  }

  function insertEntry(e: Entry): void {
    byIdMap.set(e.person.id, e);
    byId.splice(upperBound(byId, { u: 0, id: e.person.id }, false), 0, e);
    byUpdate.splice(upperBound(byUpdate, { u: e.upd, id: e.person.id }, true), 0, e);
  }

  function removeEntry(e: Entry): void {
    byIdMap.delete(e.person.id);
    byId.splice(lowerBound(byId, { u: 0, id: e.person.id }, false), 1);
    byUpdate.splice(lowerBound(byUpdate, { u: e.upd, id: e.person.id }, true), 1);
  }

  function buildPerson(id: number, input: Partial<PersonInput>, base: StoredPerson | null, addMs: number, updMs: number): StoredPerson {
    let first = base?.first_name ?? null;
    let last = base?.last_name ?? null;
    let name = base?.name ?? '';
    if (input.name !== undefined) {
      name = String(input.name);
      ({ first, last } = splitName(name));
    }
    if (input.first_name !== undefined) first = input.first_name;
    if (input.last_name !== undefined) last = input.last_name;
    if (input.name === undefined && (input.first_name !== undefined || input.last_name !== undefined)) {
      name = [first, last].filter(Boolean).join(' ');
    }
    const custom: Record<string, unknown> = { ...base?.custom_fields, ...input.custom_fields };
    for (const [k, v] of Object.entries(input)) if (!PERSON_KEYS.has(k)) custom[k] = v;
    return deepFreeze({
      id,
      name,
      first_name: first,
      last_name: last,
      owner_id: input.owner_id ?? base?.owner_id ?? USER_ID,
      org_id: input.org_id !== undefined ? input.org_id : base?.org_id ?? null,
      add_time: rfc3339(addMs),
      update_time: rfc3339(updMs),
      visible_to: input.visible_to ?? base?.visible_to ?? 3,
      phones: input.phones ? contacts(input.phones, 'work') : structuredClone(base?.phones ?? []),
      emails: input.emails ? contacts(input.emails, 'work') : structuredClone(base?.emails ?? []),
      label_ids: [],
      picture_id: null,
      is_deleted: false,
      custom_fields: structuredClone(custom),
    });
  }

  // Seed: ids from 1, update_time = 2026-01-01T00:00:00Z + index seconds.
  const seedCount = opts.persons ?? 0;
  if (seedCount > 0) {
    for (const g of generatePeople(seedCount, opts.seed ?? 1)) {
      const t = SEED_BASE_MS + g.index * 1000;
      const phones: ContactInput[] = [{ value: g.phone, primary: true, label: 'work' }];
      if ((g.index + 1) % 10 === 0) phones.push({ value: usDisplay(validPhone(seedCount + g.index)), primary: false, label: 'mobile' });
      const id = nextId++;
      const dnc = opts.doNotCallShare === undefined ? {}
        : { custom_fields: { [DO_NOT_CALL_FIELD.key]: DO_NOT_CALL_FIELD.options[seededDoNotCall(g.index, opts.doNotCallShare, opts.seed ?? 1) ? 0 : 1].id } };
      const person = buildPerson(id, {
        name: `${g.firstName} ${g.lastName}`, first_name: g.firstName, last_name: g.lastName,
        phones, emails: [{ value: g.email, primary: true, label: 'work' }], ...dnc,
      }, null, t, t);
      const e: Entry = { person, upd: t };
      // Seeds arrive in id and time order, so appending keeps both orderings sorted.
      byIdMap.set(id, e);
      byId.push(e);
      byUpdate.push(e);
      lastStamp = Math.max(lastStamp, t);
    }
  }

  // ---- rate limiting (per token, in the injected clock) ----
  const accepted: number[] = [];
  const arrivals: number[] = [];
  let dayKey = '';
  let dayTokensUsed = 0;
  let failing = 0;
  const stats: PipedriveStandInStats = {
    requests: 0, rateLimited: 0, tokensUsed: 0, maxRequestsInAny2Seconds: 0, webhooksSent: 0, webhooksFailed: 0, refused: 0,
  };
  const refusals = new RefusalLog(stats);
  const refuse = (request: FastifyRequest, status: number, message: string) => refusals.record(request, status, message);

  function prune(list: number[], t: number): void {
    while (list.length && list[0]! <= t - BURST_WINDOW_MS) list.shift();
  }

  function rateHeaders(reply: FastifyReply, t: number, remaining: number): void {
    // Seconds until the oldest request in the window leaves it and frees a slot; a full window when it is empty.
    const oldest = accepted[0];
    const reset = oldest === undefined ? BURST_WINDOW_MS / 1000 : Math.max(1, Math.ceil((oldest + BURST_WINDOW_MS - t) / 1000));
    reply.header('x-ratelimit-limit', String(burstLimit));
    reply.header('x-ratelimit-remaining', String(Math.max(0, remaining)));
    reply.header('x-ratelimit-reset', String(reset));
    // Pipedrive documents this as the day's allowance left; under token-based limits that allowance is the token budget.
    reply.header('x-daily-requests-left', String(Math.max(0, dailyTokens - dayTokensUsed)));
  }

  function overLimit(reply: FastifyReply, info: string): FastifyReply {
    stats.rateLimited++;
    return reply.code(429).send({ success: false, error: 'Request over limit', errorCode: 429, error_info: info, data: null, additional_data: null });
  }

  function errorBody(status: number, message: string) {
    return { success: false, error: message, errorCode: status, error_info: ERROR_INFO, data: null, additional_data: null };
  }

  // ---- webhooks ----
  let webhookChain: Promise<void> = Promise.resolve();

  async function sendWebhook(
    action: WebhookAction, person: StoredPerson, previous: StoredPerson | null = null, target: Partial<WebhookTarget> = {},
  ): Promise<{ status: number; body: string }> {
    const url = target.url ?? opts.webhook?.url;
    if (!url) throw new Error('sendWebhook: no url; pass opts.url or start the stand-in with a webhook');
    const user = target.user ?? opts.webhook?.user ?? '';
    const password = target.password ?? opts.webhook?.password ?? '';
    const payload = {
      meta: {
        action,
        entity: 'person',
        version: '2.0',
        // v2 webhooks send every id in meta as a string.
        company_id: String(COMPANY_ID),
        user_id: String(USER_ID),
        id: randomUUID(),
        entity_id: String(person.id),
        webhook_id: String(WEBHOOK_ID),
        webhook_owner_id: String(USER_ID),
        is_bulk_edit: false,
        timestamp: new Date(now()).toISOString(),
        attempt: 1,
        host: 'company.pipedrive.com',
        type: 'general',
        change_source: 'app',
        permitted_user_ids: [String(USER_ID)],
      },
      data: action === 'delete' ? null : person,
      previous: action === 'create' ? null : previous ?? (action === 'delete' ? person : null),
    };
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
        'user-agent': 'Pipedrive Webhooks',
      },
      body: JSON.stringify(payload),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: await res.text() };
  }

  /** Deliveries go one after another so a receiver sees a person's events in the order they happened. */
  function autoFire(action: WebhookAction, person: StoredPerson, previous: StoredPerson | null): void {
    if (!opts.webhook) return;
    webhookChain = webhookChain.then(async () => {
      try {
        const r = await sendWebhook(action, person, previous);
        if (r.status >= 200 && r.status < 300) stats.webhooksSent++;
        else stats.webhooksFailed++;
      } catch {
        stats.webhooksFailed++;
      }
    });
  }

  // ---- listing ----
  function list(q: ListQuery): { items: StoredPerson[]; next: string | null } {
    const byUpdateOrder = q.sortBy === 'update_time';
    let arr: Entry[] = byUpdateOrder ? byUpdate : byId;
    if (q.ids) {
      const seen = new Set<number>();
      arr = [];
      for (const id of q.ids) {
        const e = byIdMap.get(id);
        if (e && !seen.has(id)) { seen.add(id); arr.push(e); }
      }
      arr.sort((a, b) => compareKey(a, { u: b.upd, id: b.person.id }, byUpdateOrder));
    } else if (!byUpdateOrder && (q.since !== null || q.until !== null)) {
      // Few persons changed in the time range: take them by binary search and sort them, rather than scanning every id.
      const from = q.since === null ? 0 : lowerBound(byUpdate, { u: q.since, id: -Infinity }, true);
      const to = q.until === null ? byUpdate.length : lowerBound(byUpdate, { u: q.until, id: -Infinity }, true);
      if (to - from < byId.length / 16) {
        arr = byUpdate.slice(from, to).sort((a, b) => a.person.id - b.person.id);
      }
    }

    let lo = 0;
    let hi = arr.length; // exclusive
    if (byUpdateOrder) {
      if (q.since !== null) lo = lowerBound(arr, { u: q.since, id: -Infinity }, true);
      if (q.until !== null) hi = lowerBound(arr, { u: q.until, id: -Infinity }, true);
    }
    if (q.after) {
      if (q.direction === 'asc') lo = Math.max(lo, upperBound(arr, q.after, byUpdateOrder));
      else hi = Math.min(hi, lowerBound(arr, q.after, byUpdateOrder));
    }

    const matches = (e: Entry): boolean =>
      (q.since === null || e.upd >= q.since) &&
      (q.until === null || e.upd < q.until) &&
      (q.ownerId === null || e.person.owner_id === q.ownerId) &&
      (q.filter === null || q.filter(e.person));

    const found: Entry[] = [];
    const step = q.direction === 'asc' ? 1 : -1;
    for (let i = q.direction === 'asc' ? lo : hi - 1; i >= lo && i < hi && found.length <= q.limit; i += step) {
      const e = arr[i]!;
      if (matches(e)) found.push(e);
    }
    const more = found.length > q.limit;
    if (more) found.pop();
    const last = found.at(-1);
    return {
      items: found.map((e) => e.person),
      next: more && last ? encodeCursor(q.sortBy, q.direction, { u: byUpdateOrder ? last.upd : 0, id: last.person.id }) : null,
    };
  }

  function parseListQuery(query: Record<string, unknown>): ListQuery {
    const sortRaw = single(query, 'sort_by') ?? 'id';
    if (sortRaw !== 'id' && sortRaw !== 'update_time' && sortRaw !== 'add_time') {
      throw new BadRequest(`sort_by: must be one of id, update_time, add_time; got "${sortRaw}"`);
    }
    const dirRaw = single(query, 'sort_direction') ?? 'asc';
    if (dirRaw !== 'asc' && dirRaw !== 'desc') throw new BadRequest(`sort_direction: must be asc or desc; got "${dirRaw}"`);
    const limitRaw = single(query, 'limit');
    let limit = 100;
    if (limitRaw !== undefined) {
      if (!/^\d{1,9}$/.test(limitRaw) || Number(limitRaw) < 1 || Number(limitRaw) > MAX_LIMIT) {
        throw new BadRequest(`limit: must be an integer from 1 to ${MAX_LIMIT}; got "${limitRaw}"`);
      }
      limit = Number(limitRaw);
    }
    const since = single(query, 'updated_since');
    const until = single(query, 'updated_until');
    const cursor = single(query, 'cursor');

    // As Pipedrive documents it, filter_id takes precedence over ids and owner_id.
    let filter: ListQuery['filter'] = null;
    let ids: number[] | null = null;
    let ownerId: number | null = null;
    const filterRaw = single(query, 'filter_id');
    const idsRaw = single(query, 'ids');
    const ownerRaw = single(query, 'owner_id');
    if (filterRaw !== undefined) {
      const f = filterPredicates.get(positiveInt('filter_id', filterRaw));
      if (!f) throw new BadRequest('Filter not found', 404, false);
      filter = f.predicate;
    } else {
      if (idsRaw !== undefined) {
        const parts = idsRaw.split(',').map((s) => s.trim());
        if (parts.length > MAX_IDS) throw new BadRequest(`ids: at most ${MAX_IDS} ids; got ${parts.length}`);
        ids = parts.map((p) => positiveInt('ids', p));
      }
      if (ownerRaw !== undefined) ownerId = positiveInt('owner_id', ownerRaw);
    }
    return {
      sortBy: sortRaw, direction: dirRaw, limit,
      since: since === undefined ? null : rfc3339Param('updated_since', since),
      until: until === undefined ? null : rfc3339Param('updated_until', until),
      after: cursor === undefined || cursor === '' ? null : decodeCursor(cursor, sortRaw, dirRaw),
      ids, ownerId, filter,
    };
  }

  function parseCallLog(body: unknown): StoredCallLog {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new BadRequest('body: must be a JSON object');
    const b = body as Record<string, unknown>;
    for (const k of Object.keys(b)) {
      if (!CALL_LOG_KEYS.has(k)) throw new BadRequest(`${k}: not a call log field; a call log takes ${[...CALL_LOG_KEYS].join(', ')}`);
    }
    const str = (name: string, required: boolean): string | null => {
      const v = b[name];
      if (v === undefined || v === null || v === '') {
        if (required) throw new BadRequest(`${name}: required`);
        return null;
      }
      if (typeof v !== 'string') throw new BadRequest(`${name}: must be a string; got ${JSON.stringify(v)}`);
      return v;
    };
    const int = (name: string): number | null => {
      const v = b[name];
      if (v === undefined || v === null) return null;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new BadRequest(`${name}: must be a positive integer; got ${JSON.stringify(v)}`);
      return v;
    };
    const time = (name: string): string => {
      const v = str(name, true)!;
      const m = CALL_TIME.exec(v);
      const ms = m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) : NaN;
      if (!m || Number.isNaN(ms) || rfc3339(ms).replace('T', ' ').replace('Z', '') !== v) {
        throw new BadRequest(`${name}: must be a UTC time as YYYY-MM-DD HH:MM:SS; got "${v}"`);
      }
      return v;
    };
    const outcome = str('outcome', true)!;
    if (!OUTCOMES.includes(outcome as CallLogOutcome)) throw new BadRequest(`outcome: must be one of ${OUTCOMES.join(', ')}; got "${outcome}"`);
    const toPhone = str('to_phone_number', true)!;
    const start = time('start_time');
    const end = time('end_time');
    if (end < start) throw new BadRequest('end_time: must not be before start_time');
    let duration: string | null = null;
    if (b.duration !== undefined && b.duration !== null) {
      // AddCallLogRequest has duration as a string of seconds.
      if (typeof b.duration !== 'string' || !/^\d+$/.test(b.duration)) {
        throw new BadRequest(`duration: must be a string of whole seconds; got ${JSON.stringify(b.duration)}`);
      }
      duration = String(b.duration);
    }
    return {
      id: randomBytes(12).toString('hex'),
      outcome: outcome as CallLogOutcome,
      to_phone_number: toPhone,
      from_phone_number: str('from_phone_number', false),
      start_time: start,
      end_time: end,
      duration,
      subject: str('subject', false),
      note: str('note', false),
      person_id: int('person_id'),
      org_id: int('org_id'),
      deal_id: int('deal_id'),
      lead_id: str('lead_id', false),
      activity_id: int('activity_id'),
      user_id: int('user_id') ?? USER_ID,
      company_id: COMPANY_ID,
      has_recording: false,
    };
  }

  // ---- HTTP ----
  const app = Fastify({ logger: false });

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    stats.requests++;
    const query = request.query as Record<string, unknown>;
    const given = request.headers['x-api-token'] ?? query.api_token;
    if (given !== apiToken) return reply.code(401).send({ success: false, error: 'unauthorized access', errorCode: 401, error_info: ERROR_INFO });

    const t = now();
    const day = new Date(t).toISOString().slice(0, 10);
    if (day !== dayKey) { dayKey = day; dayTokensUsed = 0; }
    prune(accepted, t);
    prune(arrivals, t);
    arrivals.push(t);
    stats.maxRequestsInAny2Seconds = Math.max(stats.maxRequestsInAny2Seconds, arrivals.length);

    if (failing > 0) {
      failing--;
      rateHeaders(reply, t, 0);
      return overLimit(reply, 'Burst limit reached (forced by failNext); wait x-ratelimit-reset seconds.');
    }
    if (accepted.length >= burstLimit) {
      rateHeaders(reply, t, 0);
      return overLimit(reply, `Over ${burstLimit} requests per 2 seconds; wait x-ratelimit-reset seconds.`);
    }
    const cost = TOKEN_COSTS[`${request.method} ${request.routeOptions.url ?? ''}`] ?? 0;
    if (dayTokensUsed + cost > dailyTokens) {
      rateHeaders(reply, t, burstLimit - accepted.length);
      return overLimit(reply, `Daily token budget of ${dailyTokens} spent; it resets at 00:00 UTC.`);
    }
    accepted.push(t);
    dayTokensUsed += cost;
    stats.tokensUsed += cost;
    rateHeaders(reply, t, burstLimit - accepted.length);
  });

  app.setErrorHandler((err: Error & { statusCode?: number }, request, reply) => {
    const status = err instanceof BadRequest ? err.status : err.statusCode && err.statusCode < 500 ? err.statusCode : 500;
    // Fastify's own 4xx (a body that is not JSON, too large, another content type) are drifts too.
    if (status < 500 && (!(err instanceof BadRequest) || err.drift)) refuse(request, status, err.message);
    reply.code(status).send(errorBody(status, err.message));
  });
  app.setNotFoundHandler((request, reply) => {
    const message = `Unknown method ${request.method} ${request.url.split('?')[0]}`;
    refuse(request, 404, message);
    reply.code(404).send(errorBody(404, message));
  });

  app.get('/api/v2/persons', async (request) => {
    knownQuery(request.query as Record<string, unknown>, PERSONS_QUERY);
    const { items, next } = list(parseListQuery(request.query as Record<string, unknown>));
    return { success: true, data: items, additional_data: { next_cursor: next } };
  });

  /** Every person field: the standard ones, then the custom ones (cursor paging as the other v2 lists). */
  app.get('/api/v2/personFields', async (request) => {
    const query = request.query as Record<string, unknown>;
    knownQuery(query, PERSON_FIELDS_QUERY);
    const limitRaw = single(query, 'limit');
    const limit = limitRaw === undefined ? 100 : positiveInt('limit', limitRaw);
    if (limit > MAX_LIMIT) throw new BadRequest(`limit: must be an integer from 1 to ${MAX_LIMIT}; got "${limitRaw}"`);
    const cursorRaw = single(query, 'cursor');
    const start = cursorRaw ? Number(Buffer.from(cursorRaw, 'base64url').toString('utf8')) : 0;
    if (!Number.isInteger(start) || start < 0) throw new BadRequest(`cursor: '${cursorRaw}' is not a cursor this endpoint returned`);
    const all = [
      ...STANDARD_PERSON_FIELDS.map((f) => ({ field_name: f.name, field_code: f.code, field_type: f.type, options: null, is_custom_field: false })),
      ...customFields().map((f) => ({ field_name: f.name, field_code: f.key, field_type: f.field_type, options: f.options ? f.options.map((o) => ({ id: o.id, label: o.label })) : null, is_custom_field: true })),
    ].map((f) => ({ ...f, subfields: null, is_optional_response_field: false }));
    const page = all.slice(start, start + limit);
    const next = start + limit < all.length ? Buffer.from(String(start + limit)).toString('base64url') : null;
    return { success: true, data: page, additional_data: { next_cursor: next } };
  });

  /** A filter's definition (v1: filters have no v2 endpoint): its name and the object type it selects. */
  app.get('/v1/filters/:id', async (request, reply) => {
    const id = positiveInt('id', (request.params as { id: string }).id);
    const f = filterPredicates.get(id);
    if (!f) return reply.code(404).send(errorBody(404, 'Filter not found'));
    return { success: true, data: { id, name: f.name, active_flag: true, type: f.type, temporary_flag: null, user_id: USER_ID, add_time: '2026-01-01 00:00:00', update_time: '2026-01-01 00:00:00', visible_to: '7', custom_view_id: null } };
  });

  app.get('/api/v2/persons/:id', async (request, reply) => {
    const raw = (request.params as { id: string }).id;
    const e = byIdMap.get(positiveInt('id', raw));
    if (!e) return reply.code(404).send(errorBody(404, 'Person not found'));
    return { success: true, data: e.person };
  });

  app.patch('/api/v2/persons/:id', async (request, reply) => {
    const id = positiveInt('id', (request.params as { id: string }).id);
    if (!byIdMap.has(id)) return reply.code(404).send(errorBody(404, 'Person not found'));
    return { success: true, data: applyUpdate(id, parsePersonPatch(request.body)) };
  });

  // Pipedrive serves v1 both as api.pipedrive.com/v1/… and {company}.pipedrive.com/api/v1/…
  for (const path of ['/v1/callLogs', '/api/v1/callLogs']) {
    app.post(path, async (request) => {
      const log = deepFreeze(parseCallLog(request.body));
      const verdict = callLogFailure?.(log);
      if (verdict) throw new BadRequest(typeof verdict === 'string' ? verdict : 'Call log refused by the failCallLogs predicate of this stand-in', 400, false);
      callLogs.push(log);
      callLogsById.set(log.id, log);
      return { success: true, data: log };
    });

    // Offset paging in creation order; a limit above the documented 50 is served as 50, and the answer says so.
    app.get(path, async (request) => {
      const query = request.query as Record<string, unknown>;
      knownQuery(query, CALL_LOGS_QUERY);
      const start = offsetParam('start', single(query, 'start'), 0);
      const limitRaw = single(query, 'limit');
      const limit = Math.min(limitRaw === undefined || limitRaw === '' ? MAX_CALL_LOG_LIMIT : positiveInt('limit', limitRaw), MAX_CALL_LOG_LIMIT);
      const page = callLogs.slice(start, start + limit);
      const more = start + page.length < callLogs.length;
      return {
        success: true,
        // v1 lists answer null rather than an empty array when a page has nothing.
        data: page.length > 0 ? page : null,
        additional_data: { pagination: { start, limit, more_items_in_collection: more, ...(more ? { next_start: start + page.length } : {}) } },
      };
    });

    app.get(`${path}/:id`, async (request, reply) => {
      const log = callLogsById.get((request.params as { id: string }).id);
      if (!log) return reply.code(404).send(errorBody(404, 'Call log not found'));
      return { success: true, data: log };
    });
  }

  const address = await app.listen({ port: opts.port ?? 0, host: opts.host ?? '127.0.0.1' });

  /** Shared by updatePerson and PATCH: a new frozen person with a later update_time, then the change webhook. */
  function applyUpdate(id: number, patch: Partial<PersonInput>): StoredPerson {
    const old = byIdMap.get(id)!;
    const t = stamp();
    const person = buildPerson(id, patch, old.person, Date.parse(old.person.add_time), t);
    removeEntry(old);
    insertEntry({ person, upd: t });
    autoFire('change', person, old.person);
    return person;
  }

  function entryOf(id: number, what: string): Entry {
    const e = byIdMap.get(id);
    if (!e) throw new Error(`${what}: no person with id ${id}`);
    return e;
  }

  return {
    url: address,
    apiToken,
    createPerson(p) {
      const t = stamp();
      const person = buildPerson(nextId++, p, null, t, t);
      insertEntry({ person, upd: t });
      autoFire('create', person, null);
      return person;
    },
    updatePerson(id, patch) {
      entryOf(id, 'updatePerson');
      return applyUpdate(id, patch);
    },
    deletePerson(id) {
      const old = entryOf(id, 'deletePerson');
      removeEntry(old);
      autoFire('delete', old.person, old.person);
    },
    getPerson: (id) => byIdMap.get(id)?.person,
    persons: () => byId.map((e) => e.person),
    callLogs: () => [...callLogs],
    filters: {
      create(name, predicate, type = 'people') {
        const id = nextFilterId++;
        filterPredicates.set(id, { name, predicate, type });
        return id;
      },
    },
    sendWebhook,
    async flushWebhooks() {
      // A delivery may queue while an earlier one is awaited; wait until the chain stops growing.
      let seen: Promise<void>;
      do {
        seen = webhookChain;
        await seen;
      } while (seen !== webhookChain);
    },
    stats,
    failNext(n) {
      failing += n;
    },
    failCallLogs(predicate) {
      callLogFailure = predicate;
    },
    refusals: () => refusals.list(),
    async close() {
      await app.close();
    },
  };
}

async function main(): Promise<void> {
  const usage = 'usage: ./dev node crm-stand-ins/pipedrive.ts [--port 4200] [--host 127.0.0.1] [--persons 300] [--seed 1] [--token pd-test-token]\n' +
    '  [--burst 20] [--daily-tokens 30000] [--do-not-call-share 0.1] [--webhook-url URL --webhook-user U --webhook-password P]';
  const args = parseStandInArgs(usage, {
    port: { default: '4200' },
    host: { default: '127.0.0.1' },
    persons: { default: '300' },
    seed: { default: '1' },
    token: { default: DEFAULT_TOKEN },
    burst: { default: '20' },
    'daily-tokens': { default: '30000' },
    'do-not-call-share': {},
    'webhook-url': {},
    'webhook-user': { default: '' },
    'webhook-password': { default: '' },
  });
  if (!args) return;
  const num = (name: string, min: number): number => intOption(args, name, min, usage);
  const standIn = await startPipedriveStandIn({
    port: num('port', 0),
    host: args.host,
    persons: num('persons', 0),
    seed: num('seed', 0),
    apiToken: args.token,
    burstPer2Seconds: num('burst', 1),
    dailyTokens: num('daily-tokens', 0),
    doNotCallShare: shareOption(args, 'do-not-call-share', usage),
    webhook: args['webhook-url'] ? { url: args['webhook-url'], user: args['webhook-user'] ?? '', password: args['webhook-password'] ?? '' } : undefined,
  });
  console.log(`Pipedrive stand-in at ${standIn.url} (${standIn.persons().length} persons)`);
  console.log(`API token: ${standIn.apiToken}   e.g. curl -H 'x-api-token: ${standIn.apiToken}' '${standIn.url}/api/v2/persons?limit=2'`);
  stopOnSignals(() => standIn.close());
}

if (import.meta.main) await main();
