// Stand-in for Salesforce's REST API (OAuth client credentials and JWT bearer, SOQL query/queryAll with cursors, getDeleted, sObject rows, describe and collections, the user's object permissions, API limits, Outbound Messages) seeded with generated leads and contacts.
import { createHash, createHmac, randomBytes, timingSafeEqual, verify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { areaCodesOption, intOption, parseStandInArgs, stopOnSignals } from './command-line.ts';
import { areaCodePhone, generatePeople, mulberry32, VALID_PHONE_COUNT, validPhone } from './contacts.ts';
import { createOutboundSender, type OutboundDelivery } from './salesforce-outbound.ts';
import {
  defineSchema, isDate, jsonValue, makeId, parseDateTime, recordUrl, sfDateTime, toId18,
  type FieldDef, type FieldValue, type SfRecord, type SObjectDef, type SObjectName,
} from './salesforce-records.ts';
import { compileSoql, SoqlError } from './salesforce-soql.ts';

export type { SfRecord, SObjectName, FieldValue } from './salesforce-records.ts';
export type { OutboundDelivery } from './salesforce-outbound.ts';

export interface SalesforceStandInOptions {
  /** Default 0 (any free port). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** The connected app's consumer key; default '3MVG9StandIn.ConsumerKey'. */
  clientId?: string;
  /** The connected app's consumer secret; default 'sf-client-secret'. Kept only as a hash. */
  clientSecret?: string;
  /** The integration user the JWT `sub` must name; default 'integration@example.com'. */
  username?: string;
  /** The certificate's public key (PEM or KeyObject) that JWT bearer assertions are checked against; without it that flow is refused. */
  jwtPublicKey?: string | KeyObject;
  /** Accepted JWT `aud` values; default the stand-in's own URL, https://login.salesforce.com and https://test.salesforce.com. */
  audiences?: string[];
  /** Generated contacts and leads to seed (contacts first, from the same people generator); default 0 each. */
  contacts?: number;
  leads?: number;
  /** The area codes of the seeded people's phones (NANP; default: 100 US area codes). */
  areaCodes?: readonly number[];
  /** Campaigns to seed; the seeded people are spread over them, some in several. Default 2. */
  campaigns?: number;
  seed?: number;
  /** The custom phone field on Contact and Lead; default 'Secondary_Phone__c'. */
  customPhoneField?: string;
  /** The custom text field on Contact and Lead that the dialer's final status goes to (mirror.statusProperty); default 'Dialer_Status__c'. Empty on seeded people. */
  statusField?: string;
  /** Task's external-ID field that collections upsert on; default 'Dialer_Call_Id__c'. */
  taskExternalIdField?: string;
  /** The API version used in urls the stand-in makes (outbound messages); any vNN.0 from 31.0 is served. Default '62.0'. */
  apiVersion?: string;
  /** API requests allowed in a rolling 24 hours (Sforce-Limit-Info's M); default 100,000. */
  dailyApiRequests?: number;
  /** A session unused this long expires (Salesforce's default timeout is 2 hours). */
  sessionTimeoutMs?: number;
  /** Outbound Messages sent on every create or change of a record of objectType after start (like a workflow rule), with the given fields. */
  outboundRules?: Array<{ url: string; objectType: SObjectName; fields?: string[] }>;
  /** Wait before outbound-message retry n; default 15 s doubling up to an hour, as Salesforce does. */
  outboundRetryDelayMs?: (retry: number) => number;
  /** Clock in ms; default Date.now. Drives SystemModstamp, the deleted window, sessions and the API allowance. */
  now?: () => number;
  /**
   * The integration user's permission on each object (its profile and permission sets): `edit` (the default) reads and
   * writes; `read` reads, its writes are refused INSUFFICIENT_ACCESS_OR_READONLY and describe says createable false;
   * `none` hides the object (describe answers NOT_FOUND, a query INVALID_TYPE).
   */
  objectAccess?: Partial<Record<SObjectName, 'none' | 'read' | 'edit'>>;
}

export interface SalesforceStandInStats {
  /** Requests received on any path. */
  requests: number;
  /** Requests counted against the API allowance. */
  apiRequests: number;
  /** Answered 403 REQUEST_LIMIT_EXCEEDED. */
  limitRefused: number;
  /** Answered 401 INVALID_SESSION_ID. */
  sessionRefused: number;
  tokensIssued: number;
  queries: number;
  /** Faults injected by injectFault that fired. */
  faults: number;
  /** sObject Collections update requests (PATCH /composite/sobjects), and the records they carried. */
  collectionUpdates: number;
  recordsUpdatedByCollections: number;
}

/** A fault injectFault arms: `before` answers the status without doing anything, `after` does the write then answers the status, `lost` does it and drops the connection unanswered. */
export interface FaultSpec {
  status?: 500 | 503;
  mode?: 'before' | 'after' | 'lost';
  /** Which requests it hits: writes (insert, upsert, update), reads, or any. Default 'write'. */
  on?: 'write' | 'read' | 'any';
  /** How many requests it hits; default 1. */
  times?: number;
  /** Only requests whose path matches, e.g. /composite\/sobjects\/Task/ for call upserts. */
  path?: RegExp;
}

export interface OutboundMessageRequest {
  url: string;
  /** Records of one type (by 15- or 18-character id); Id is always sent. */
  ids: string[];
  /** More fields to send with each record. */
  fields?: string[];
  sessionId?: string | null;
  /** The OrganizationId sent; default the stand-in's own. */
  orgId?: string;
}

export interface SalesforceStandIn {
  /** Base URL, also the instance_url tokens carry. */
  url: string;
  orgId: string;
  userId: string;
  clientId: string;
  username: string;
  apiVersion: string;
  customPhoneField: string;
  statusField: string;
  taskExternalIdField: string;
  /** A copy of a record (deleted ones too), by 15- or 18-character id. */
  get(id: string): SfRecord | undefined;
  /** Copies of the records of a type in creation order; deleted ones only when asked. */
  records(type: SObjectName, opts?: { includeDeleted?: boolean }): SfRecord[];
  createRecord(type: SObjectName, values: Record<string, FieldValue>): SfRecord;
  /** Changes fields (a phone, DoNotCall, …) and moves SystemModstamp and LastModifiedDate. */
  updateRecord(id: string, values: Record<string, FieldValue>): SfRecord;
  /** Moves a record to the recycle bin: IsDeleted, a new SystemModstamp, an entry in the delete log; a person's campaign members go with it. */
  deleteRecord(id: string): void;
  addToCampaign(campaignId: string, personId: string, status?: string): SfRecord;
  removeFromCampaign(campaignId: string, personId: string): void;
  /** Expires one session (by access token) or all of them: the next request with it answers 401 INVALID_SESSION_ID. */
  expireSessions(accessToken?: string): void;
  /** The rolling-24-hour API usage, and a way to set it (e.g. close to the allowance). */
  apiUsage(): { used: number; max: number };
  setApiUsage(used: number): void;
  injectFault(spec?: FaultSpec): void;
  /** POSTs an Outbound Message about the records and retries until acknowledged. */
  sendOutboundMessage(msg: OutboundMessageRequest): OutboundDelivery;
  outboundDeliveries(): OutboundDelivery[];
  stats: SalesforceStandInStats;
  close(): Promise<void>;
}

const DEFAULTS = {
  clientId: '3MVG9StandIn.ConsumerKey',
  clientSecret: 'sf-client-secret',
  username: 'integration@example.com',
};
const SEED_BASE_MS = Date.parse('2026-01-01T00:00:00Z');
const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;
/** getDeleted answers for no more than 15 days back. */
const DELETED_WINDOW_MS = 15 * DAY_MS;
/** A query cursor left alone this long is gone (Salesforce: 15 minutes of inactivity). */
const CURSOR_IDLE_MS = 15 * MINUTE_MS;
const DEFAULT_BATCH = 2000;
const MIN_BATCH = 200;
const MAX_BATCH = 2000;
const MAX_COLLECTION = 200;
/** Ids a POST read may name (GET takes as many as the URL holds, 800 by Salesforce's count; we cap both at this). */
const MAX_READ_IDS = 2000;
const JWT_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const VERSION = /^v(\d{2,3})\.0$/;
const FIRST_VERSION = 31;
const LAST_VERSION = 66;

/** An error answered in Salesforce's shape: `[{"message": …, "errorCode": …}]`. */
class SfError extends Error {
  readonly status: number;
  readonly errorCode: string;
  constructor(status: number, errorCode: string, message: string) {
    super(message);
    this.status = status;
    this.errorCode = errorCode;
  }
}

/** An OAuth error answered as `{"error": …, "error_description": …}` (always 400 at Salesforce's token endpoint). */
class OAuthError extends Error {
  readonly error: string;
  constructor(error: string, description: string) {
    super(description);
    this.error = error;
  }
}

interface RecordError { statusCode: string; message: string; fields: string[] }

const notFound = (): SfError => new SfError(404, 'NOT_FOUND', 'The requested resource does not exist');
const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();
const floorMinute = (ms: number): number => Math.floor(ms / MINUTE_MS) * MINUTE_MS;

function sameSecret(given: string, expectedHash: Buffer): boolean {
  return timingSafeEqual(sha256(given), expectedHash);
}

/** "(212) 555-0123" and friends: how people type a second number. */
function typed(e164: string, style: number): string {
  const a = e164.slice(2, 5);
  const x = e164.slice(5, 8);
  const l = e164.slice(8);
  return style === 0 ? `(${a}) ${x}-${l}` : style === 1 ? `${a}-${x}-${l}` : e164;
}

function copy(r: SfRecord): SfRecord {
  return { type: r.type, values: { ...r.values } };
}

export async function startSalesforceStandIn(opts: SalesforceStandInOptions = {}): Promise<SalesforceStandIn> {
  const now = opts.now ?? Date.now;
  const clientId = opts.clientId ?? DEFAULTS.clientId;
  const clientSecretHash = sha256(opts.clientSecret ?? DEFAULTS.clientSecret);
  // The token response's signature is an HMAC keyed with the consumer secret itself (so clients can check it); it stays in memory only.
  const signingKey = opts.clientSecret ?? DEFAULTS.clientSecret;
  const username = opts.username ?? DEFAULTS.username;
  const apiVersion = opts.apiVersion ?? '62.0';
  const customPhoneField = opts.customPhoneField ?? 'Secondary_Phone__c';
  const statusField = opts.statusField ?? 'Dialer_Status__c';
  const taskExternalIdField = opts.taskExternalIdField ?? 'Dialer_Call_Id__c';
  const maxApi = opts.dailyApiRequests ?? 100_000;
  const sessionTimeoutMs = opts.sessionTimeoutMs ?? 2 * 60 * MINUTE_MS;
  const schema = defineSchema({ customPhoneField, statusField }, taskExternalIdField);
  const defOf = (type: string): SObjectDef | undefined => schema.get(type.toLowerCase());
  const access = (type: SObjectName): 'none' | 'read' | 'edit' => opts.objectAccess?.[type] ?? 'edit';
  /** The objects the user may see, as SOQL resolves names: a hidden one is not supported. */
  const visibleSchema = new Map([...schema].filter(([, d]) => access(d.name) !== 'none'));

  // ---- store ----
  const serials = new Map<string, number>();
  const newId = (keyPrefix: string): string => {
    const n = (serials.get(keyPrefix) ?? 0) + 1;
    serials.set(keyPrefix, n);
    return makeId(keyPrefix, n);
  };
  const orgId = makeId('00D', 1);
  const userId = makeId('005', 1);
  const byId = new Map<string, SfRecord>();
  const byType = new Map<SObjectName, SfRecord[]>([...schema.values()].map((d) => [d.name, []]));
  const deleteLog = new Map<SObjectName, Array<{ id: string; ms: number }>>([...schema.values()].map((d) => [d.name, []]));
  /** Live tasks by external-ID value. */
  const taskByExternalId = new Map<string, SfRecord>();
  /** Live campaign members by campaign id + person id. */
  const memberOf = new Map<string, SfRecord>();
  const stamp = (): number => Math.floor(now() / 1000) * 1000;

  function lookup(id: string): SfRecord | undefined {
    const id18 = toId18(id);
    return id18 ? byId.get(id18) : undefined;
  }

  /** Set once the server listens, so that seeding sends no outbound messages. */
  let notifyChange: (r: SfRecord) => void = () => {};

  function insert(type: SObjectName, values: Record<string, FieldValue>, at = stamp()): SfRecord {
    const def = defOf(type)!;
    const r: SfRecord = { type, values: {} };
    for (const f of def.fields.values()) if (!f.computed) r.values[f.name] = null;
    Object.assign(r.values, type === 'Lead' ? { IsConverted: false } : {}, values, {
      Id: newId(def.keyPrefix), OwnerId: userId, CreatedDate: at, LastModifiedDate: at, SystemModstamp: at, IsDeleted: false,
    });
    byId.set(r.values.Id as string, r);
    byType.get(type)!.push(r);
    if (type === 'Task' && typeof r.values[taskExternalIdField] === 'string') taskByExternalId.set(r.values[taskExternalIdField] as string, r);
    if (type === 'CampaignMember') memberOf.set(`${r.values.CampaignId}/${r.values.LeadOrContactId}`, r);
    notifyChange(r);
    return r;
  }

  function touch(r: SfRecord): void {
    const t = stamp();
    r.values.LastModifiedDate = t;
    r.values.SystemModstamp = t;
  }

  function change(r: SfRecord, values: Record<string, FieldValue>): void {
    if (r.type === 'Task') {
      const oldExt = r.values[taskExternalIdField];
      if (typeof oldExt === 'string' && taskExternalIdField in values && values[taskExternalIdField] !== oldExt) taskByExternalId.delete(oldExt);
      if (typeof values[taskExternalIdField] === 'string') taskByExternalId.set(values[taskExternalIdField] as string, r);
    }
    Object.assign(r.values, values);
    touch(r);
    notifyChange(r);
  }

  function remove(r: SfRecord): void {
    if (r.values.IsDeleted) return;
    r.values.IsDeleted = true;
    touch(r);
    deleteLog.get(r.type)!.push({ id: r.values.Id as string, ms: r.values.SystemModstamp as number });
    if (r.type === 'Task' && typeof r.values[taskExternalIdField] === 'string') taskByExternalId.delete(r.values[taskExternalIdField] as string);
    if (r.type === 'CampaignMember') memberOf.delete(`${r.values.CampaignId}/${r.values.LeadOrContactId}`);
    if (r.type === 'Contact' || r.type === 'Lead' || r.type === 'Campaign') {
      const key = r.type === 'Campaign' ? 'CampaignId' : 'LeadOrContactId';
      for (const m of byType.get('CampaignMember')!) if (!m.values.IsDeleted && m.values[key] === r.values.Id) remove(m);
    }
  }

  function addMember(campaign: SfRecord, person: SfRecord, status: string, at?: number): SfRecord {
    const existing = memberOf.get(`${campaign.values.Id}/${person.values.Id}`);
    if (existing) return existing;
    return insert('CampaignMember', {
      CampaignId: campaign.values.Id!, ContactId: person.type === 'Contact' ? person.values.Id! : null,
      LeadId: person.type === 'Lead' ? person.values.Id! : null, LeadOrContactId: person.values.Id!, Status: status, HasResponded: false,
    }, at);
  }

  // Seed: contacts, then leads, one second apart from 2026-01-01; every person in campaign 1 or 2 or both, some in none.
  const seed = opts.seed ?? 1;
  const contactCount = opts.contacts ?? 0;
  const leadCount = opts.leads ?? 0;
  const people = contactCount + leadCount;
  // Main, mobile and custom phones come from three disjoint ranges of distinct valid numbers.
  const areaCodes = opts.areaCodes;
  const phoneCount = areaCodes ? areaCodes.length * 10_000 : VALID_PHONE_COUNT;
  const phone = (i: number) => (areaCodes ? areaCodePhone(i, areaCodes) : validPhone(i));
  if (people * 3 > phoneCount) throw new RangeError(`contacts + leads: at most ${Math.floor(phoneCount / 3)}; got ${people}`);
  const campaigns: SfRecord[] = [];
  for (let i = 0; i < (opts.campaigns ?? 2); i++) {
    campaigns.push(insert('Campaign', { Name: `Dialer Campaign ${i + 1}`, Type: 'Telemarketing', Status: 'In Progress', IsActive: true }, SEED_BASE_MS));
  }
  for (const p of generatePeople(people, seed, 0, areaCodes)) {
    const rand = mulberry32((seed * 7919 + p.index * 104_729) >>> 0);
    const at = SEED_BASE_MS + (p.index + 1) * 1000;
    const type: SObjectName = p.index < contactCount ? 'Contact' : 'Lead';
    const noMainPhone = rand() < 0.08;
    const person = insert(type, {
      FirstName: p.firstName, LastName: p.lastName, Email: p.email,
      Phone: noMainPhone ? null : p.phone,
      MobilePhone: noMainPhone || rand() < 0.3 ? typed(phone(people + p.index), Math.floor(rand() * 3)) : null,
      [customPhoneField]: rand() < 0.15 ? phone(2 * people + p.index) : null,
      DoNotCall: rand() < 0.12,
      ...(type === 'Contact' ? { Title: null } : { Company: p.company, Status: 'Open - Not Contacted' }),
    }, at);
    campaigns.forEach((c, i) => {
      if (rand() < (i === 0 ? 0.6 : 0.35)) addMember(c, person, 'Sent', at);
    });
  }

  // ---- sessions ----
  interface Session { lastUsed: number; expired: boolean }
  const sessions = new Map<string, Session>();
  function issueToken(): { token: string; issuedAt: number } {
    const token = `${orgId.slice(0, 15)}!AQ${randomBytes(36).toString('base64url')}`;
    const issuedAt = now();
    sessions.set(sha256(token).toString('hex'), { lastUsed: issuedAt, expired: false });
    stats.tokensIssued++;
    return { token, issuedAt };
  }

  // ---- API allowance: a rolling 24 hours counted in minutes ----
  const usage: Array<{ minute: number; count: number }> = [];
  let used = 0;
  function pruneUsage(t: number): void {
    while (usage.length && usage[0]!.minute <= floorMinute(t) - DAY_MS) used -= usage.shift()!.count;
  }
  function countRequest(t: number, n = 1): void {
    const minute = floorMinute(t);
    const last = usage.at(-1);
    if (last && last.minute === minute) last.count += n;
    else usage.push({ minute, count: n });
    used += n;
  }

  // ---- faults ----
  const faults: Array<Required<Omit<FaultSpec, 'path'>> & { path: RegExp | null }> = [];
  function takeFault(isWrite: boolean, request: FastifyRequest): (typeof faults)[number] | undefined {
    const path = request.url.split('?')[0]!;
    const i = faults.findIndex((f) => (f.on === 'any' || (f.on === 'write') === isWrite) && (f.path === null || f.path.test(path)));
    if (i < 0) return undefined;
    const f = faults[i]!;
    if (--f.times <= 0) faults.splice(i, 1);
    stats.faults++;
    return f;
  }
  function faultError(f: { status: number }): SfError {
    return f.status === 503
      ? new SfError(503, 'SERVER_UNAVAILABLE', 'Server temporarily unavailable (injected by the stand-in); try again later')
      : new SfError(500, 'UNKNOWN_EXCEPTION', `An unexpected error occurred. Please include this ErrorId if you contact support: ${randomBytes(4).toString('hex')}-${stats.faults} (injected by the stand-in)`);
  }
  /** Runs a write under any armed write fault. Returns undefined when the answer is to be lost. */
  function guardedWrite<T>(request: FastifyRequest, reply: FastifyReply, act: () => T): T | undefined {
    const f = takeFault(true, request);
    if (f?.mode === 'before') throw faultError(f);
    const result = act();
    if (f?.mode === 'after') throw faultError(f);
    if (f?.mode === 'lost') {
      reply.hijack();
      request.raw.socket.destroy();
      return undefined;
    }
    return result;
  }
  function guardedRead(request: FastifyRequest, reply: FastifyReply): boolean {
    const f = takeFault(false, request);
    if (!f) return true;
    if (f.mode !== 'lost') throw faultError(f);
    reply.hijack();
    request.raw.socket.destroy();
    return false;
  }

  const stats: SalesforceStandInStats = { requests: 0, apiRequests: 0, limitRefused: 0, sessionRefused: 0, tokensIssued: 0, queries: 0, faults: 0, collectionUpdates: 0, recordsUpdatedByCollections: 0 };

  // ---- query cursors ----
  interface Cursor { records: Array<Record<string, unknown>>; batch: number; lastUsed: number }
  const cursors = new Map<string, Cursor>();

  function page(kind: 'query' | 'queryAll', version: string, locator: string, c: Cursor, offset: number) {
    const end = Math.min(offset + c.batch, c.records.length);
    const done = end >= c.records.length;
    if (done) cursors.delete(locator);
    else c.lastUsed = now();
    return {
      totalSize: c.records.length,
      done,
      ...(done ? {} : { nextRecordsUrl: `/services/data/${version}/${kind}/${locator}-${end}` }),
      records: c.records.slice(offset, end),
    };
  }

  function batchSize(request: FastifyRequest): number | null {
    const header = request.headers['sforce-query-options'];
    if (header === undefined) return null;
    const m = /(?:^|[,;\s])batchSize\s*=\s*([^,;\s]*)/i.exec(String(header));
    if (!m) return null;
    if (!/^\d{1,9}$/.test(m[1]!)) throw new SfError(400, 'INVALID_HEADER_TYPE', `Sforce-Query-Options: batchSize must be a whole number (${MIN_BATCH} to ${MAX_BATCH}); got "${m[1]}"`);
    // Salesforce does not promise the asked size; it keeps to its documented range.
    return Math.min(MAX_BATCH, Math.max(MIN_BATCH, Number(m[1])));
  }

  // ---- HTTP ----
  const app = Fastify({ logger: false, routerOptions: { ignoreTrailingSlash: true }, bodyLimit: 10 * 1024 * 1024 });

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  app.addHook('onRequest', async (request, reply) => {
    stats.requests++;
    const path = request.url.split('?')[0]!;
    if (!path.startsWith('/services/data/') || path === '/services/data/') return;
    const t = now();
    pruneUsage(t);
    const auth = request.headers.authorization ?? '';
    const m = /^(?:Bearer|OAuth)\s+(\S+)$/i.exec(auth);
    const session = m ? sessions.get(sha256(m[1]!).toString('hex')) : undefined;
    if (session && !session.expired && t - session.lastUsed >= sessionTimeoutMs) session.expired = true;
    if (!session || session.expired) {
      stats.sessionRefused++;
      return reply.code(401).header('www-authenticate', 'Token').send([{ message: 'Session expired or invalid', errorCode: 'INVALID_SESSION_ID' }]);
    }
    session.lastUsed = t;
    if (used >= maxApi) {
      stats.limitRefused++;
      return reply.code(403).header('sforce-limit-info', `api-usage=${used}/${maxApi}`)
        .send([{ message: 'TotalRequests Limit exceeded.', errorCode: 'REQUEST_LIMIT_EXCEEDED' }]);
    }
    countRequest(t);
    stats.apiRequests++;
    reply.header('sforce-limit-info', `api-usage=${used}/${maxApi}`);
  });

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, _request, reply) => {
    if (err instanceof OAuthError) return reply.code(400).send({ error: err.error, error_description: err.message });
    if (err instanceof SfError) return reply.code(err.status).send([{ message: err.message, errorCode: err.errorCode }]);
    if (err instanceof SoqlError) return reply.code(400).send([{ message: err.message, errorCode: err.errorCode }]);
    if (err.statusCode && err.statusCode < 500) {
      const code = err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'UNSUPPORTED_MEDIA_TYPE' : 'JSON_PARSER_ERROR';
      return reply.code(err.statusCode === 415 ? 415 : 400).send([{ message: err.message, errorCode: code }]);
    }
    return reply.code(500).send([{ message: `An unexpected error occurred: ${err.message}`, errorCode: 'UNKNOWN_EXCEPTION' }]);
  });
  app.setNotFoundHandler((_request, reply) => {
    reply.code(404).send([{ message: 'The requested resource does not exist', errorCode: 'NOT_FOUND' }]);
  });

  const versionOf = (request: FastifyRequest): string => {
    const v = (request.params as { v: string }).v;
    const m = VERSION.exec(v);
    if (!m || Number(m[1]) < FIRST_VERSION || Number(m[1]) > LAST_VERSION) throw notFound();
    return v;
  };
  const typeOf = (raw: string): SObjectDef => {
    const def = defOf(raw);
    if (!def) throw notFound();
    return def;
  };
  const single = (request: FastifyRequest, name: string): string | undefined => {
    const v = (request.query as Record<string, unknown>)[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw new SfError(400, 'INVALID_QUERY_PARAMETER', `${name}: given more than once; give it once`);
    return v;
  };

  // -- OAuth 2.0 token endpoint --
  app.post('/services/oauth2/token', async (request) => {
    const params: Record<string, unknown> = { ...(request.query as object), ...(request.body && typeof request.body === 'object' ? request.body : {}) };
    const str = (name: string): string => (typeof params[name] === 'string' ? (params[name] as string) : '');
    const grant = str('grant_type');
    if (grant === 'client_credentials') {
      if (str('client_id') !== clientId) throw new OAuthError('invalid_client_id', 'client identifier invalid');
      if (!sameSecret(str('client_secret'), clientSecretHash)) throw new OAuthError('invalid_client', 'invalid client credentials');
    } else if (grant === JWT_GRANT) {
      checkAssertion(str('assertion'));
    } else {
      throw new OAuthError('unsupported_grant_type', 'grant type not supported');
    }
    const { token, issuedAt } = issueToken();
    const id = `${address}/id/${orgId}/${userId}`;
    return {
      access_token: token,
      // Base64 HMAC-SHA256 of id + issued_at, keyed by the consumer secret, so a client can tell the id URL was not altered.
      signature: createHmac('sha256', signingKey).update(`${id}${issuedAt}`).digest('base64'),
      scope: 'api',
      instance_url: address,
      id,
      token_type: 'Bearer',
      issued_at: String(issuedAt),
    };
  });

  function checkAssertion(assertion: string): void {
    const parts = assertion.split('.');
    const invalid = (): OAuthError => new OAuthError('invalid_grant', 'invalid assertion');
    if (parts.length !== 3 || !opts.jwtPublicKey) throw invalid();
    let header: { alg?: unknown };
    let claims: { iss?: unknown; sub?: unknown; aud?: unknown; exp?: unknown };
    try {
      header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8'));
      claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
    } catch {
      throw invalid();
    }
    if (!header || header.alg !== 'RS256' || !claims || typeof claims !== 'object') throw invalid();
    const signed = verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), opts.jwtPublicKey, Buffer.from(parts[2]!, 'base64url'));
    if (!signed) throw invalid();
    if (claims.iss !== clientId) throw new OAuthError('invalid_client_id', 'client identifier invalid');
    const audiences = opts.audiences ?? [address, 'https://login.salesforce.com', 'https://test.salesforce.com'];
    const aud = ([] as unknown[]).concat(claims.aud);
    if (!aud.some((a) => typeof a === 'string' && audiences.includes(a.replace(/\/$/, '')))) throw new OAuthError('invalid_grant', 'audience is invalid');
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= now()) throw new OAuthError('invalid_grant', 'expired authorization code');
    if (claims.sub !== username) throw new OAuthError('invalid_grant', "user hasn't approved this consumer");
  }

  // -- versions and limits --
  // Salesforce lists its versions without a session; the hook above only guards /services/data/… below it.
  app.get('/services/data', async () => {
    const seasons = ['Spring', 'Summer', 'Winter'];
    return Array.from({ length: LAST_VERSION - FIRST_VERSION + 1 }, (_, i) => {
      const v = FIRST_VERSION + i;
      const n = v - 60; // v60.0 was Spring '24
      const season = seasons[((n % 3) + 3) % 3]!;
      const year = 24 + Math.floor(n / 3) + (season === 'Winter' ? 1 : 0);
      return { label: `${season} '${year}`, url: `/services/data/v${v}.0`, version: `${v}.0` };
    });
  });

  app.get('/services/data/:v/limits', async (request) => {
    versionOf(request);
    return { DailyApiRequests: { Max: maxApi, Remaining: Math.max(0, maxApi - used) } };
  });

  // -- query / queryAll --
  for (const kind of ['query', 'queryAll'] as const) {
    app.get(`/services/data/:v/${kind}`, async (request, reply) => {
      const version = versionOf(request);
      const q = single(request, 'q');
      if (!q) throw new SfError(400, 'MALFORMED_QUERY', `${kind}: the SOQL goes in the q parameter, e.g. ?q=SELECT+Id+FROM+Contact`);
      const batch = batchSize(request) ?? DEFAULT_BATCH;
      const compiled = compileSoql(q, visibleSchema, (id) => byId.get(id));
      if (!guardedRead(request, reply)) return undefined;
      stats.queries++;
      const records = compiled.run(byType.get(compiled.def.name)!, kind === 'queryAll').map((r) => compiled.project(r, version.slice(1)));
      for (const [key, old] of cursors) if (now() - old.lastUsed > CURSOR_IDLE_MS) cursors.delete(key);
      const locator = newId('01g');
      const c: Cursor = { records, batch, lastUsed: now() };
      cursors.set(locator, c);
      return page(kind, version, locator, c, 0);
    });

    app.get(`/services/data/:v/${kind}/:locator`, async (request, reply) => {
      const version = versionOf(request);
      const raw = (request.params as { locator: string }).locator;
      const dash = raw.lastIndexOf('-');
      const locator = raw.slice(0, dash);
      const offsetText = raw.slice(dash + 1);
      const c = dash > 0 && /^\d{1,9}$/.test(offsetText) ? cursors.get(locator) : undefined;
      if (c && now() - c.lastUsed > CURSOR_IDLE_MS) cursors.delete(locator);
      if (!c || !cursors.has(locator) || Number(offsetText) > c.records.length) {
        throw new SfError(400, 'INVALID_QUERY_LOCATOR', 'invalid query locator');
      }
      if (!guardedRead(request, reply)) return undefined;
      const asked = batchSize(request);
      if (asked !== null) c.batch = asked;
      return page(kind, version, locator, c, Number(offsetText));
    });
  }

  // -- getDeleted --
  app.get('/services/data/:v/sobjects/:type/deleted', async (request, reply) => {
    versionOf(request);
    const def = typeOf((request.params as { type: string }).type);
    const startText = single(request, 'start');
    const endText = single(request, 'end');
    if (!startText || !endText) throw new SfError(400, 'MISSING_ARGUMENT', 'start and end are required, as ISO 8601 datetimes such as 2026-01-01T00:00:00+00:00');
    const start = parseDateTime(startText);
    const end = parseDateTime(endText);
    for (const [name, text, ms] of [['start', startText, start], ['end', endText, end]] as const) {
      if (Number.isNaN(ms)) throw new SfError(400, 'INVALID_REPLICATION_DATE', `${name}: not an ISO 8601 datetime with a zone, such as 2026-01-01T00:00:00+00:00; got "${text}"`);
    }
    const t = now();
    const earliest = floorMinute(t - DELETED_WINDOW_MS);
    // Salesforce works in whole minutes here: seconds are dropped from both ends.
    const from = floorMinute(start);
    const to = floorMinute(end);
    if (to - from < MINUTE_MS) throw new SfError(400, 'INVALID_REPLICATION_DATE', 'startDate must chronologically precede endDate by more than one minute');
    if (from < earliest) throw new SfError(400, 'INVALID_REPLICATION_DATE', `startDate cannot be more than 15 days ago; earliestDateAvailable is ${sfDateTime(earliest)}`);
    if (!guardedRead(request, reply)) return undefined;
    const latest = Math.min(to, floorMinute(t));
    return {
      deletedRecords: deleteLog.get(def.name)!.filter((d) => d.ms >= from && d.ms < latest).map((d) => ({ id: d.id, deletedDate: sfDateTime(d.ms) })),
      earliestDateAvailable: sfDateTime(earliest),
      latestDateCovered: sfDateTime(latest),
    };
  });

  // -- sObject rows --
  function liveRecord(def: SObjectDef, rawId: string): SfRecord {
    const r = lookup(rawId);
    if (!r || r.type !== def.name) throw notFound();
    if (r.values.IsDeleted) throw new SfError(404, 'ENTITY_IS_DELETED', 'entity is deleted');
    return r;
  }

  function fieldList(def: SObjectDef, raw: string | undefined): FieldDef[] {
    if (raw === undefined) return [...def.fields.values()];
    return raw.split(',').map((n) => n.trim()).filter(Boolean).map((n) => {
      const f = def.fields.get(n.toLowerCase());
      if (!f) throw new SfError(400, 'INVALID_FIELD', `No such column '${n}' on entity '${def.name}'. If you are attempting to use a custom field, be sure to append the '__c' after the custom field name. Please reference your WSDL or the describe call for the appropriate names.`);
      return f;
    });
  }

  function shown(r: SfRecord, fields: FieldDef[], version: string): Record<string, unknown> {
    const out: Record<string, unknown> = { attributes: { type: r.type, url: recordUrl(version, r) } };
    for (const f of fields) out[f.name] = jsonValue(f, r);
    return out;
  }

  /** The field type describe gives: phone and email fields are text to SOQL, but typed so in the org's metadata. */
  function describedType(f: FieldDef): string {
    if (f.type !== 'string') return f.type === 'int' ? 'int' : f.type;
    if (f.name === 'Phone' || f.name === 'MobilePhone' || f.name === customPhoneField) return 'phone';
    if (f.name === 'Email') return 'email';
    return f.name === 'Description' ? 'textarea' : 'string';
  }

  // An object's metadata as the user sees it: its fields, and what the user's permissions let it do with them.
  app.get('/services/data/:v/sobjects/:type/describe', async (request, reply) => {
    versionOf(request);
    const def = typeOf((request.params as { type: string }).type);
    if (access(def.name) === 'none') throw notFound();
    if (!guardedRead(request, reply)) return undefined;
    const edit = access(def.name) === 'edit';
    return {
      name: def.name, label: def.name, keyPrefix: def.keyPrefix, custom: false,
      createable: edit && def.name !== 'CampaignMember', updateable: edit, deletable: edit, queryable: true, retrieveable: true, searchable: true,
      fields: [...def.fields.values()].map((f) => ({
        name: f.name, label: f.name, type: describedType(f), length: f.length ?? (f.type === 'string' ? 255 : 0),
        createable: edit && f.createable && !f.computed, updateable: edit && f.updateable && !f.computed, nillable: !['Id', 'LastName'].includes(f.name),
        externalId: f.externalId === true, idLookup: f.name === 'Id' || f.externalId === true, calculated: f.computed !== undefined,
        referenceTo: f.relationship ? [...f.relationship.to] : [], relationshipName: f.relationship?.name ?? null,
        picklistValues: (f.values ?? []).map((v) => ({ value: v, label: v, active: true, defaultValue: false })),
        filterable: true, sortable: true,
      })),
    };
  });

  app.get('/services/data/:v/sobjects/:type/:id', async (request, reply) => {
    const version = versionOf(request).slice(1);
    const params = request.params as { type: string; id: string };
    const def = typeOf(params.type);
    const r = liveRecord(def, params.id);
    const fields = fieldList(def, single(request, 'fields'));
    if (!guardedRead(request, reply)) return undefined;
    return shown(r, fields, version);
  });

  app.patch('/services/data/:v/sobjects/:type/:id', async (request, reply) => {
    versionOf(request);
    const params = request.params as { type: string; id: string };
    const def = typeOf(params.type);
    const r = liveRecord(def, params.id);
    const values = coerceAll(def, request.body);
    const problem = checkValues(def, values, 'update', r);
    if (problem) throw new SfError(400, problem.statusCode, problem.message);
    const done = guardedWrite(request, reply, () => { change(r, values); return true; });
    if (!done) return undefined;
    return reply.code(204).send();
  });

  // -- sObject Collections --
  function collectionBody(body: unknown): { allOrNone: boolean; records: Array<Record<string, unknown>> } {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new SfError(400, 'JSON_PARSER_ERROR', 'The body must be a JSON object: {"allOrNone": false, "records": [...]}');
    const b = body as { allOrNone?: unknown; records?: unknown };
    if (b.allOrNone !== undefined && typeof b.allOrNone !== 'boolean') throw new SfError(400, 'JSON_PARSER_ERROR', `allOrNone must be true or false; got ${JSON.stringify(b.allOrNone)}`);
    if (!Array.isArray(b.records) || b.records.some((r) => !r || typeof r !== 'object' || Array.isArray(r))) {
      throw new SfError(400, 'JSON_PARSER_ERROR', 'records must be an array of record objects, each with "attributes": {"type": …}');
    }
    if (b.records.length > MAX_COLLECTION) throw new SfError(400, 'EXCEEDED_ID_LIMIT', `record limit reached. cannot submit more than ${MAX_COLLECTION} records into this call`);
    return { allOrNone: b.allOrNone === true, records: b.records as Array<Record<string, unknown>> };
  }

  /** One record of a collection, checked: how to apply it, or why it fails. */
  type Prepared = { ok: true; apply: () => Record<string, unknown> } | { ok: false; errors: RecordError[] };

  /** A collection record's type and values, or why it has none; unknown fields and wrong JSON types fail the whole request. */
  type Parsed = { def: SObjectDef; values: Record<string, FieldValue> } | { error: RecordError };

  function parseRecord(input: Record<string, unknown>, urlType: SObjectDef | null): Parsed {
    const fail = (statusCode: string, message: string): Parsed => ({ error: { statusCode, message, fields: [] } });
    const attributes = input.attributes as { type?: unknown } | undefined;
    const type = attributes && typeof attributes === 'object' && typeof attributes.type === 'string' ? attributes.type : null;
    if (!type) return fail('INVALID_TYPE', 'Must send a concrete entity type.');
    const def = defOf(type);
    if (!def || (urlType && def !== urlType)) return fail('INVALID_TYPE', urlType ? `The records must be of type ${urlType.name}, as the URL says; got ${type}` : `sObject type '${type}' is not supported.`);
    if (def.name === 'CampaignMember') return fail('INVALID_TYPE', "CampaignMember is written through the stand-in's test hooks, not collections");
    return { def, values: coerceAll(def, input) };
  }

  function prepare(parsed: Parsed, mode: 'insert' | 'upsert' | 'update', extField: FieldDef | null): Prepared {
    const fail = (statusCode: string, message: string, fields: string[] = []): Prepared => ({ ok: false, errors: [{ statusCode, message, fields }] });
    if ('error' in parsed) return { ok: false, errors: [parsed.error] };
    const { def } = parsed;
    const values = { ...parsed.values };
    if (mode === 'update') {
      // Update by id: each record names its own (any type per record, as Salesforce allows).
      const { Id: rawId, ...changes } = values;
      if (typeof rawId !== 'string' || rawId === '') return fail('MISSING_ARGUMENT', 'Id not specified in an update call', ['Id']);
      const id = toId18(rawId);
      const current = id ? byId.get(id) : undefined;
      if (!id || !current || current.type !== def.name) return fail('INVALID_CROSS_REFERENCE_KEY', `invalid cross reference id: ${rawId}`, ['Id']);
      if (current.values.IsDeleted) return fail('ENTITY_IS_DELETED', 'entity is deleted', ['Id']);
      const problem = checkValues(def, changes, 'update', current);
      if (problem) return { ok: false, errors: [problem] };
      return { ok: true, apply: () => { change(current, changes); return { id: current.values.Id, success: true, errors: [] }; } };
    }
    if (mode === 'insert') {
      if ('Id' in values) return fail('INVALID_FIELD_FOR_INSERT_UPDATE', 'cannot specify Id in an insert call', ['Id']);
      const problem = checkValues(def, values, 'create', null);
      if (problem) return { ok: false, errors: [problem] };
      return { ok: true, apply: () => ({ id: insert(def.name, withDefaults(def, values)).values.Id, success: true, errors: [] }) };
    }
    const ext = values[extField!.name];
    if (typeof ext !== 'string' || ext === '') return fail('MISSING_ARGUMENT', `${extField!.name} not specified`, [extField!.name]);
    const existing = taskByExternalId.get(ext);
    if (existing) {
      const problem = checkValues(def, values, 'update', existing);
      if (problem) return { ok: false, errors: [problem] };
      return { ok: true, apply: () => { change(existing, values); return { id: existing.values.Id, success: true, errors: [], created: false }; } };
    }
    const problem = checkValues(def, values, 'create', null);
    if (problem) return { ok: false, errors: [problem] };
    return {
      ok: true,
      apply: () => {
        // An earlier record of the same allOrNone request may have created this external id meanwhile.
        const current = taskByExternalId.get(ext);
        if (current) {
          change(current, values);
          return { id: current.values.Id, success: true, errors: [], created: false };
        }
        return { id: insert(def.name, withDefaults(def, values)).values.Id, success: true, errors: [], created: true };
      },
    };
  }

  function runCollection(body: unknown, urlType: SObjectDef | null, mode: 'insert' | 'upsert' | 'update', extField: FieldDef | null): Array<Record<string, unknown>> {
    const { allOrNone, records } = collectionBody(body);
    // Parsing all first means a request the parser refuses writes nothing.
    const parsed = records.map((input) => parseRecord(input, urlType));
    if (!allOrNone) {
      // One at a time, so a later record sees what an earlier one wrote (two upserts of one external id).
      return parsed.map((one) => {
        const p = prepare(one, mode, extField);
        return p.ok ? p.apply() : { success: false, errors: p.errors };
      });
    }
    const prepared = parsed.map((one) => prepare(one, mode, extField));
    if (prepared.every((p) => p.ok)) return prepared.map((p) => (p as { apply: () => Record<string, unknown> }).apply());
    return prepared.map((p) => (p.ok
      ? { success: false, errors: [{ statusCode: 'ALL_OR_NONE_OPERATION_ROLLED_BACK', message: 'Record rolled back because not all records were valid and the request was using AllOrNone header', fields: [] }] }
      : { success: false, errors: p.errors }));
  }

  app.post('/services/data/:v/composite/sobjects', async (request, reply) => {
    versionOf(request);
    return guardedWrite(request, reply, () => runCollection(request.body, null, 'insert', null));
  });

  app.patch('/services/data/:v/composite/sobjects', async (request, reply) => {
    versionOf(request);
    stats.collectionUpdates++;
    const results = guardedWrite(request, reply, () => runCollection(request.body, null, 'update', null));
    if (Array.isArray(results)) stats.recordsUpdatedByCollections += results.filter((r) => r.success === true).length;
    return results;
  });

  app.patch('/services/data/:v/composite/sobjects/:type/:field', async (request, reply) => {
    versionOf(request);
    const params = request.params as { type: string; field: string };
    const def = typeOf(params.type);
    const extField = def.fields.get(params.field.toLowerCase());
    if (!extField?.externalId) throw new SfError(404, 'NOT_FOUND', `Provided external ID field does not exist or is not accessible: ${params.field}`);
    return guardedWrite(request, reply, () => runCollection(request.body, def, 'upsert', extField));
  });

  function readByIds(request: FastifyRequest, reply: FastifyReply, idsRaw: unknown, fieldsRaw: unknown) {
    const version = versionOf(request).slice(1);
    const def = typeOf((request.params as { type: string }).type);
    const ids = Array.isArray(idsRaw) ? idsRaw : typeof idsRaw === 'string' ? idsRaw.split(',') : null;
    const fieldNames = Array.isArray(fieldsRaw) ? fieldsRaw.join(',') : fieldsRaw;
    if (!ids || ids.length === 0 || typeof fieldNames !== 'string' || fieldNames === '') {
      throw new SfError(400, 'MISSING_ARGUMENT', 'ids and fields are both required, e.g. ?ids=003…,003…&fields=Id,Phone');
    }
    if (ids.length > MAX_READ_IDS) throw new SfError(400, 'EXCEEDED_ID_LIMIT', `record limit reached. cannot submit more than ${MAX_READ_IDS} records into this call`);
    const fields = fieldList(def, fieldNames);
    const out = ids.map((raw) => {
      const id = typeof raw === 'string' ? toId18(raw.trim()) : null;
      if (!id) throw new SfError(400, 'MALFORMED_ID', `malformed id ${String(raw)}`);
      const r = byId.get(id);
      return r && r.type === def.name && !r.values.IsDeleted ? shown(r, fields, version) : null;
    });
    if (!guardedRead(request, reply)) return undefined;
    return out;
  }

  app.get('/services/data/:v/composite/sobjects/:type', async (request, reply) =>
    readByIds(request, reply, single(request, 'ids'), single(request, 'fields')));
  app.post('/services/data/:v/composite/sobjects/:type', async (request, reply) => {
    const b = (request.body ?? {}) as { ids?: unknown; fields?: unknown };
    return readByIds(request, reply, b.ids, b.fields);
  });

  // ---- field values ----
  /** JSON body fields as stored values; an unknown field or a value of the wrong JSON type fails the whole request as Salesforce's parser does. */
  function coerceAll(def: SObjectDef, body: unknown): Record<string, FieldValue> {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new SfError(400, 'JSON_PARSER_ERROR', 'The body must be a JSON object of field names and values');
    const values: Record<string, FieldValue> = {};
    for (const [name, raw] of Object.entries(body as Record<string, unknown>)) {
      if (name === 'attributes') continue;
      const f = def.fields.get(name.toLowerCase());
      if (!f) throw new SfError(400, 'INVALID_FIELD', `No such column '${name}' on sobject of type ${def.name}`);
      values[f.name] = coerce(f, raw);
    }
    return values;
  }

  function coerce(f: FieldDef, raw: unknown): FieldValue {
    const bad = (want: string): SfError => new SfError(400, 'JSON_PARSER_ERROR', `Cannot deserialize instance of ${want} from ${JSON.stringify(raw)} for field ${f.name}`);
    if (raw === null) return null;
    switch (f.type) {
      case 'boolean':
        if (typeof raw === 'boolean') return raw;
        if (raw === 'true' || raw === 'false') return raw === 'true';
        throw bad('boolean');
      case 'int':
        if (typeof raw === 'number' && Number.isInteger(raw)) return raw;
        if (typeof raw === 'string' && /^-?\d{1,9}$/.test(raw)) return Number(raw);
        throw bad('integer');
      case 'datetime': {
        const ms = typeof raw === 'string' ? parseDateTime(raw) : Number.NaN;
        if (Number.isNaN(ms)) throw bad('dateTime (e.g. 2026-01-01T00:00:00.000+0000)');
        return ms;
      }
      case 'date':
        if (typeof raw === 'string' && isDate(raw)) return raw;
        throw bad('date (YYYY-MM-DD)');
      case 'id':
      case 'reference':
        if (typeof raw === 'string') return raw === '' ? null : raw;
        throw bad('id');
      default:
        if (typeof raw === 'string') return raw;
        if (typeof raw === 'number' || typeof raw === 'boolean') return String(raw);
        throw bad('string');
    }
  }

  /** The checks Salesforce makes per record: writable fields, restricted picklists, references, required fields. */
  function checkValues(def: SObjectDef, values: Record<string, FieldValue>, mode: 'create' | 'update', current: SfRecord | null): RecordError | null {
    if (access(def.name) !== 'edit') return { statusCode: 'INSUFFICIENT_ACCESS_OR_READONLY', message: `insufficient access rights on object ${def.name}: the user may not ${mode} it`, fields: [] };
    for (const [name, v] of Object.entries(values)) {
      const f = def.fields.get(name.toLowerCase())!;
      const writable = mode === 'create' ? f.createable : f.updateable;
      // An upsert that repeats a create-only value unchanged is not a change to it.
      if (!writable && !(current && current.values[f.name] === v && f.createable)) {
        return { statusCode: 'INVALID_FIELD_FOR_INSERT_UPDATE', message: `Unable to create/update fields: ${f.name}. Please check the security settings of this field and verify that it is read/write for your profile or permission set.`, fields: [f.name] };
      }
      if (f.length !== undefined && typeof v === 'string' && v.length > f.length) {
        return { statusCode: 'STRING_TOO_LONG', message: `${f.name}: data value too large: ${v.slice(0, 40)}... (max length=${f.length})`, fields: [f.name] };
      }
      if (f.values && v !== null && !f.values.includes(String(v))) {
        return { statusCode: 'INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST', message: `${f.name}: bad value for restricted picklist field: ${String(v)}`, fields: [f.name] };
      }
      if (f.type === 'reference' && v !== null && f.relationship) {
        const id = toId18(String(v));
        const target = id ? byId.get(id) : undefined;
        const prefixOk = id !== null && f.relationship.to.some((t) => defOf(t)!.keyPrefix === id.slice(0, 3));
        if (!prefixOk) return { statusCode: 'FIELD_INTEGRITY_EXCEPTION', message: `${f.name}: id value of incorrect type: ${String(v)}`, fields: [f.name] };
        if (!target) return { statusCode: 'INVALID_CROSS_REFERENCE_KEY', message: 'invalid cross reference id', fields: [f.name] };
        if (target.values.IsDeleted) return { statusCode: 'ENTITY_IS_DELETED', message: 'entity is deleted', fields: [f.name] };
        values[name] = id;
      }
    }
    const required = REQUIRED[def.name] ?? [];
    const after = (n: string): FieldValue => (n in values ? values[n]! : current ? current.values[n]! : null);
    const missing = required.filter((n) => after(n) === null || after(n) === '');
    if (missing.length) return { statusCode: 'REQUIRED_FIELD_MISSING', message: `Required fields are missing: [${missing.join(', ')}]`, fields: missing };
    return null;
  }

  const address = await app.listen({ port: opts.port ?? 0, host: opts.host ?? '127.0.0.1' });

  const outbound = createOutboundSender({
    orgId, instanceUrl: address, apiVersion, now, newId, retryDelayMs: opts.outboundRetryDelayMs,
  });

  function outboundFields(type: SObjectName, names: string[], what: string): FieldDef[] {
    const def = defOf(type)!;
    return names.map((n) => {
      const f = def.fields.get(n.toLowerCase());
      if (!f) throw new Error(`${what}: ${type} has no field ${n}`);
      return f;
    });
  }

  function sendAbout(records: SfRecord[], fields: FieldDef[], msg: { url: string; sessionId?: string | null; orgId?: string }): OutboundDelivery {
    return outbound.send({
      url: msg.url,
      orgId: msg.orgId,
      objectType: records[0]!.type,
      sessionId: msg.sessionId ?? null,
      records: records.map((r) => ({
        id: r.values.Id as string,
        fields: fields.map((f) => {
          const v = f.computed ? f.computed(r) : r.values[f.name];
          return [f.name, v === null || v === undefined ? null : f.type === 'datetime' ? new Date(v as number).toISOString() : String(v)];
        }),
      })),
    });
  }

  // Workflow-style rules: every later create or change of a record of the rule's type sends a message about it.
  const rules = (opts.outboundRules ?? []).map((rule) => ({ ...rule, fieldDefs: outboundFields(rule.objectType, rule.fields ?? [], 'outboundRules') }));
  notifyChange = (r) => {
    for (const rule of rules) if (rule.objectType === r.type) sendAbout([r], rule.fieldDefs, rule);
  };

  /** A hook's field names in their canonical spelling; an unknown one is the test's mistake. */
  function canonical(def: SObjectDef, values: Record<string, FieldValue>, what: string): Record<string, FieldValue> {
    return Object.fromEntries(Object.entries(values).map(([name, v]) => {
      const f = def.fields.get(name.toLowerCase());
      if (!f || f.computed) throw new Error(`${what}: ${def.name} has no writable field ${name}`);
      return [f.name, v];
    }));
  }

  function recordFor(what: string, id: string): SfRecord {
    const r = lookup(id);
    if (!r) throw new Error(`${what}: no record with id ${id}`);
    return r;
  }

  return {
    url: address,
    orgId,
    userId,
    clientId,
    username,
    apiVersion,
    customPhoneField,
    statusField,
    taskExternalIdField,
    get: (id) => {
      const r = lookup(id);
      return r ? copy(r) : undefined;
    },
    records: (type, o) => byType.get(type)!.filter((r) => o?.includeDeleted || !r.values.IsDeleted).map(copy),
    createRecord(type, given) {
      const def = defOf(type)!;
      const values = canonical(def, given, 'createRecord');
      const problem = checkValues(def, { ...values }, 'create', null);
      if (problem) throw new Error(`createRecord(${type}): ${problem.statusCode} ${problem.message}`);
      return copy(insert(type, withDefaults(def, values)));
    },
    updateRecord(id, values) {
      const r = recordFor('updateRecord', id);
      change(r, canonical(defOf(r.type)!, values, 'updateRecord'));
      return copy(r);
    },
    deleteRecord(id) {
      remove(recordFor('deleteRecord', id));
    },
    addToCampaign(campaignId, personId, status = 'Sent') {
      return copy(addMember(recordFor('addToCampaign', campaignId), recordFor('addToCampaign', personId), status));
    },
    removeFromCampaign(campaignId, personId) {
      const m = memberOf.get(`${toId18(campaignId)}/${toId18(personId)}`);
      if (!m) throw new Error(`removeFromCampaign: ${personId} is not a member of ${campaignId}`);
      remove(m);
    },
    expireSessions(accessToken) {
      if (accessToken === undefined) for (const s of sessions.values()) s.expired = true;
      else {
        const s = sessions.get(sha256(accessToken).toString('hex'));
        if (s) s.expired = true;
      }
    },
    apiUsage() {
      pruneUsage(now());
      return { used, max: maxApi };
    },
    setApiUsage(n) {
      usage.length = 0;
      used = 0;
      if (n > 0) countRequest(now(), n);
    },
    injectFault(spec = {}) {
      faults.push({ status: spec.status ?? 500, mode: spec.mode ?? 'before', on: spec.on ?? 'write', times: spec.times ?? 1, path: spec.path ?? null });
    },
    sendOutboundMessage(msg) {
      const records = msg.ids.map((id) => recordFor('sendOutboundMessage', id));
      const type = records[0]?.type;
      if (!type || records.some((r) => r.type !== type)) throw new Error('sendOutboundMessage: give one or more ids of records of one type');
      return sendAbout(records, outboundFields(type, msg.fields ?? [], 'sendOutboundMessage'), msg);
    },
    outboundDeliveries: () => outbound.deliveries(),
    stats,
    async close() {
      outbound.close();
      await app.close();
    },
  };
}

/** Fields an insert must set, per object (Task's WhoId is this org's validation rule: a call is always about someone). */
const REQUIRED: Partial<Record<SObjectName, string[]>> = {
  Contact: ['LastName'],
  Lead: ['LastName', 'Company'],
  Campaign: ['Name'],
  Task: ['WhoId'],
};

/** Salesforce's defaults for fields an insert leaves out. */
function withDefaults(def: SObjectDef, values: Record<string, FieldValue>): Record<string, FieldValue> {
  if (def.name === 'Task') return { Status: 'Not Started', Priority: 'Normal', TaskSubtype: 'Task', ...stripNulls(values) };
  if (def.name === 'Contact' || def.name === 'Lead') return { DoNotCall: false, ...stripNulls(values) };
  return values;
}

function stripNulls(values: Record<string, FieldValue>): Record<string, FieldValue> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== null));
}

async function main(): Promise<void> {
  const usage = 'usage: ./dev node crm-stand-ins/salesforce.ts [--port 4300] [--host 127.0.0.1] [--contacts 200] [--leads 100] [--campaigns 2] [--seed 1]\n' +
    '  [--client-id ID] [--username USER] [--jwt-public-key FILE.pem] [--daily-api-requests 100000] [--outbound-url URL] [--area-codes 212,808,907]\n' +
    '  --outbound-url sends an Outbound Message (Id, Phone, MobilePhone, DoNotCall) there on every contact or lead change.\n' +
    '  The consumer secret is read from SF_CLIENT_SECRET (default sf-client-secret).';
  const args = parseStandInArgs(usage, {
    port: { default: '4300' },
    host: { default: '127.0.0.1' },
    contacts: { default: '200' },
    leads: { default: '100' },
    campaigns: { default: '2' },
    seed: { default: '1' },
    'client-id': { default: DEFAULTS.clientId },
    username: { default: DEFAULTS.username },
    'jwt-public-key': {},
    'daily-api-requests': { default: '100000' },
    'outbound-url': {},
    'area-codes': {},
  });
  if (!args) return;
  const num = (name: string, min: number): number => intOption(args, name, min, usage);
  let jwtPublicKey: string | undefined;
  const keyFile = args['jwt-public-key'];
  if (keyFile) {
    try {
      jwtPublicKey = readFileSync(keyFile, 'utf8');
    } catch (err) {
      console.error(`--jwt-public-key: cannot read ${keyFile}: ${(err as Error).message}`);
      process.exit(2);
    }
  }
  const standIn = await startSalesforceStandIn({
    port: num('port', 0),
    host: args.host,
    contacts: num('contacts', 0),
    leads: num('leads', 0),
    areaCodes: areaCodesOption(args, 'area-codes', usage),
    campaigns: num('campaigns', 0),
    seed: num('seed', 0),
    clientId: args['client-id'],
    clientSecret: process.env.SF_CLIENT_SECRET || DEFAULTS.clientSecret,
    username: args.username,
    jwtPublicKey,
    dailyApiRequests: num('daily-api-requests', 1),
    outboundRules: args['outbound-url']
      ? (['Contact', 'Lead'] as const).map((objectType) => ({ url: args['outbound-url']!, objectType, fields: ['Phone', 'MobilePhone', 'DoNotCall'] }))
      : [],
  });
  console.log(`Salesforce stand-in at ${standIn.url} (${standIn.records('Contact').length} contacts, ${standIn.records('Lead').length} leads, ${standIn.records('Campaign').length} campaigns)`);
  console.log(`Token: curl -d grant_type=client_credentials -d client_id=${standIn.clientId} -d client_secret=… ${standIn.url}/services/oauth2/token`);
  stopOnSignals(() => standIn.close());
}

if (import.meta.main) await main();
