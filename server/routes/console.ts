// The console API (/console): what the spec's web console does — accounts, campaigns, their numbers, API keys.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod/v4';
import { CAMPAIGN_STATES, CAMPAIGN_TYPES, DIALER_MODES, ROLES } from '../../api/enums.ts';
import { WEEKDAYS, type DialerSettings } from '../../api/records.ts';
import { DEFAULT_SETTINGS } from '../dialer/model.ts';
import { checkPhoneNumber } from '../phone-numbers.ts';
import type { FieldError } from '../../api/problems.ts';
import { formatUtc, parseTimestamp, timestampToUtcMillis } from '../../api/timestamps.ts';
import type { Deps } from '../deps.ts';
import { ApiError, invalid, notFound } from '../errors.ts';
import { admit, rejectedEntry } from '../numbers-intake.ts';
import { publicKey, type Account } from '../store/accounts.ts';
import { campaignRecord, type CampaignRow } from '../store/campaigns.ts';
import { numberRecord } from '../store/numbers.ts';
import { callDetailRecord } from '../store/call-details.ts';
import { isTimeZone } from '../time-zones.ts';
import { MAX_VAR_VALUE, MAX_VARIABLES } from '../numbers-intake.ts';
import { varNamesParam } from './numbers.ts';
import { jsonParam, listQuery, onlyParams, params, sendList } from '../http.ts';
import { LIST_SPECS } from '../../api/list-query.ts';
import { uploadCsv } from '../csv-upload.ts';

const id = z.string().min(1).max(200);
const timestamp = z.string().refine((s) => parseTimestamp(s) !== null, 'must be a timestamp YYYY-MM-DDTHH:MM:SS (optionally with Z or an offset)')
  .transform((s) => formatUtc(timestampToUtcMillis(parseTimestamp(s)!)));

const AccountBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  timezone: z.string().refine(isTimeZone, 'must be an IANA time zone such as Europe/Berlin').default('UTC'),
});

const HHMM = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be HH:MM (24-hour)');
const seconds = (max: number) => z.number().min(0).max(max);

const DialerBody = z.strictObject({
  mode: z.enum(DIALER_MODES).default('Power'),
  agents: z.number().int().min(1).max(10_000).optional(),
  linesPerAgent: z.number().min(0.1).max(10).optional(),
  talkSeconds: z.number().min(1).max(36_000).optional(),
  wrapUpSeconds: seconds(3600).optional(),
  maxAttempts: z.number().int().min(1).max(20).optional(),
  retryDelaySeconds: z.strictObject({
    NoAnswer: seconds(30 * 86_400).optional(), Busy: seconds(30 * 86_400).optional(), CallError: seconds(30 * 86_400).optional(),
    Machine: seconds(30 * 86_400).optional(), Abandoned: seconds(30 * 86_400).optional(),
  }).optional(),
  abandonRateTarget: z.number().min(0).max(1).optional(),
  callingHours: z.strictObject({ from: HHMM, to: HHMM, days: z.array(z.enum(WEEKDAYS)).min(1) })
    .refine((h) => h.from < h.to, 'from must be before to').optional(),
}).default({ mode: 'Power' });

/** The given settings over the defaults. */
function settingsFrom(d: z.output<typeof DialerBody>): DialerSettings {
  const defined = Object.fromEntries(Object.entries(d).filter(([k, v]) => v !== undefined && k !== 'mode'));
  return {
    ...DEFAULT_SETTINGS, ...defined,
    retryDelaySeconds: { ...DEFAULT_SETTINGS.retryDelaySeconds, ...Object.fromEntries(Object.entries(d.retryDelaySeconds ?? {}).filter(([, v]) => v !== undefined)) },
  } as DialerSettings;
}

const PhoneList = z.array(z.string().max(64)).min(1).max(100_000);

const EndpointBody = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).max(2000),
});

const CampaignBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  state: z.enum(CAMPAIGN_STATES).default('Draft'),
  type: z.enum(CAMPAIGN_TYPES).default('Static'),
  phoneSystemId: id.nullable().default(null),
  extensionId: id.nullable().default(null),
  dialer: DialerBody,
  tagIds: z.array(id).max(100).default([]),
  startDate: timestamp.nullable().default(null),
  endDate: timestamp.nullable().default(null),
  startedAt: timestamp.nullable().default(null),
  endedAt: timestamp.nullable().default(null),
  callflowIds: z.array(id).max(100).default([]),
  callBehavior: z.strictObject({
    humanAnswerCallflowId: id.nullable().default(null),
    answeringMachineCallflowId: id.nullable().default(null),
  }).default({ humanAnswerCallflowId: null, answeringMachineCallflowId: null }),
  webhookEndpointId: id.nullable().default(null),
  isArchived: z.boolean().default(false),
});

const NumbersBody = z.array(z.strictObject({
  number: z.string(),
  varValues: z.array(z.string().max(MAX_VAR_VALUE)).max(MAX_VARIABLES).default([]),
})).min(1).max(100_000);

const KeyBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  roles: z.array(z.enum(ROLES)).min(1).transform((r) => [...new Set(r)]),
  campaignIds: z.array(id).min(1).max(10_000).nullable().default(null),
  expiresAt: timestamp.nullable().default(null),
});

/** zod's verdict as the API's 400: one FieldError per issue, named by JSON pointer. */
function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  throw invalid(r.error.issues.map((i): FieldError => ({
    in: 'body', name: '/' + i.path.map(String).join('/'),
    detail: `${i.path.length ? `Field ${i.path.join('.')}` : 'The body'}: ${i.message}`,
  })));
}

/** Records in the console's call log, and delivery attempts shown per webhook endpoint. */
const CALL_LOG_SIZE = 50;
const DELIVERIES_SHOWN = 20;

const AdvanceBody = z.strictObject({ seconds: z.number().positive().max(366 * 24 * 3600) });

export function consoleRoutes(app: FastifyInstance, deps: Deps): void {
  const { store } = deps;

  app.get('/clock', async () => clockRecord(deps));

  // Manual mode: returns once every event up to the new time has been applied.
  app.post('/clock/advance', async (request) => {
    const b = parseBody(AdvanceBody, request.body);
    if (deps.clockMode !== 'manual') {
      throw new ApiError('conflict', 'The clock runs in real time (--clock realtime); start the server with --clock manual to advance it');
    }
    const applied = deps.clock.advanceTo(deps.clock.now() + Math.round(b.seconds * 1000));
    return { ...clockRecord(deps), eventsApplied: applied };
  });
  const account = (request: FastifyRequest): Account => {
    const aid = (request.params as { accountId: string }).accountId;
    const a = store.accounts.byId(aid);
    if (!a) throw notFound('Account', aid, 'on this server');
    return a;
  };

  const campaign = (request: FastifyRequest): CampaignRow => {
    const cid = (request.params as { campaignId: string }).campaignId;
    const row = store.campaigns.byId(account(request).pk, cid);
    if (!row) throw notFound('Campaign', cid);
    return row;
  };

  app.get('/accounts', async () => store.accounts.list().map(accountRecord));

  app.post('/accounts', async (request, reply) => {
    const b = parseBody(AccountBody, request.body);
    return reply.code(201).send(accountRecord(store.accounts.create(b.name, b.timezone, deps.now())));
  });

  app.get('/accounts/:accountId', async (request) => accountRecord(account(request)));

  // The v1 list (same range, sort and filter) with each campaign's live counters: numbers by status, calls, answer rate.
  app.get('/accounts/:accountId/campaigns', async (request, reply) => {
    const a = account(request);
    const query = listQuery(request, LIST_SPECS.campaigns);
    const { rows, total } = store.campaigns.list(a.pk, query, a.timezone);
    return sendList(reply, 'campaigns', query.range, rows.map((row) => {
      const { calls, answered } = store.callDetails.tally(row);
      const { Deleted: _deleted, ...numbers } = store.numbers.counts(row.pk);
      return { ...campaignRecord(row), counters: { numbers, calls, answered, answerRate: calls ? answered / calls : null } };
    }), total);
  });

  app.post('/accounts/:accountId/campaigns', async (request, reply) => {
    const a = account(request);
    const b = parseBody(CampaignBody, request.body);
    const row = store.campaigns.create(a.pk, {
      ...b, dialerMode: b.dialer.mode, dialerSettings: settingsFrom(b.dialer), humanAnswerCallflowId: b.callBehavior.humanAnswerCallflowId,
      answeringMachineCallflowId: b.callBehavior.answeringMachineCallflowId,
    }, deps.now());
    if (row.state === 'Active') deps.dialer.wake(row.pk);
    return reply.code(201).send(campaignRecord(row));
  });

  // Any type and state: this is how Static campaigns get their lists.
  app.post('/accounts/:accountId/campaigns/:campaignId/numbers', async (request, reply) => {
    const row = campaign(request);
    const p = params(request);
    onlyParams(p, ['varNames']);
    const entries = parseBody(NumbersBody, request.body);
    const width = Math.max(0, ...entries.map((e) => e.varValues.length));
    const varNames = varNamesParam(jsonParam('varNames', p.varNames)) ?? Array.from({ length: width }, (_, i) => `var${i + 1}`);
    const { admitted, rejected } = admit(store, row.pk, varNames,
      entries.map((e, i) => ({ position: i, raw: e.number, varValues: e.varValues })));
    if (admitted.length) deps.dialer.wake(row.pk);
    return reply.code(201).send({
      created: store.numbers.byIds(row.pk, admitted.map((x) => x.id)).map(numberRecord),
      rejected: rejected.map(rejectedEntry),
    });
  });

  // The console's live call log: the newest 50 records and the campaign's call count from its tally. Polled every few
  // seconds, so it is read off the index backwards; the v1 report would count every record of the campaign each time.
  app.get('/accounts/:accountId/campaigns/:campaignId/callLog', async (request) => {
    const row = campaign(request);
    onlyParams(params(request), []);
    return { calls: store.callDetails.tally(row).calls, records: store.callDetails.newest(row.pk, CALL_LOG_SIZE).map(callDetailRecord) };
  });

  // The v1 upload, but for any type and state, like the JSON add above.
  app.post('/accounts/:accountId/campaigns/:campaignId/numbers/upload', async (request, reply) => {
    const row = campaign(request);
    const result = await uploadCsv(deps, request, row, true);
    deps.dialer.wake(row.pk);
    return reply.code(201).send(result);
  });

  app.post('/accounts/:accountId/apiKeys', async (request, reply) => {
    const a = account(request);
    const b = parseBody(KeyBody, request.body);
    const { key, token } = store.accounts.createKey(a, b, deps.now());
    return reply.code(201).send({ ...publicKey(key), token });
  });

  // The account's black list: numbers that are never dialed (they show Blacklisted when their turn comes).
  app.post('/accounts/:accountId/blacklist', async (request, reply) => {
    const a = account(request);
    const numbers = phoneList(parseBody(PhoneList, request.body));
    store.blacklist.add(a.pk, numbers, deps.now());
    return reply.code(201).send({ added: numbers });
  });

  app.get('/accounts/:accountId/blacklist', async (request) => store.blacklist.list(account(request).pk));

  app.delete('/accounts/:accountId/blacklist', async (request, reply) => {
    const a = account(request);
    store.blacklist.remove(a.pk, phoneList(parseBody(PhoneList, request.body)));
    return reply.code(204).send();
  });

  // Webhook endpoints: the secret is shown here once (derived from the server's signing key, never stored).
  app.post('/accounts/:accountId/webhookEndpoints', async (request, reply) => {
    const a = account(request);
    const e = store.webhooks.create(a.pk, parseBody(EndpointBody, request.body).url, deps.now());
    return reply.code(201).send({ id: e.id, url: e.url, createdAt: e.createdAt, secret: deps.events.secretFor(e.id) });
  });

  app.get('/accounts/:accountId/webhookEndpoints', async (request) =>
    store.webhooks.list(account(request).pk).map((e) => ({ id: e.id, url: e.url, createdAt: e.createdAt })));

  app.delete('/accounts/:accountId/webhookEndpoints/:endpointId', async (request, reply) => {
    const a = account(request);
    const eid = (request.params as { endpointId: string }).endpointId;
    if (!store.webhooks.delete(a.pk, eid, deps.now())) throw notFound('Webhook endpoint', eid);
    return reply.code(204).send();
  });

  app.get('/accounts/:accountId/webhookEndpoints/:endpointId/deliveries', async (request) => {
    const a = account(request);
    const eid = (request.params as { endpointId: string }).endpointId;
    const e = store.webhooks.byId(a.pk, eid);
    if (!e) throw notFound('Webhook endpoint', eid);
    return store.webhooks.recentAttempts(e.pk, DELIVERIES_SHOWN);
  });

  app.get('/accounts/:accountId/apiKeys', async (request) => store.accounts.keys(account(request)).map(publicKey));

  app.delete('/accounts/:accountId/apiKeys/:keyId', async (request, reply) => {
    const a = account(request);
    const kid = (request.params as { keyId: string }).keyId;
    if (!store.accounts.deleteKey(a, kid, deps.now())) throw notFound('API key', kid);
    return reply.code(204).send();
  });
}

/** E.164 forms of the given phone numbers; 400 naming each one that is not a phone number. */
function phoneList(raw: string[]): string[] {
  const errors: FieldError[] = [];
  const out = raw.flatMap((r, i) => {
    const c = checkPhoneNumber(r);
    if (c.ok) return [c.e164];
    errors.push({ in: 'body', name: `/${i}`, detail: `Entry ${i} (${JSON.stringify(r)}) was rejected: ${c.reason}` });
    return [];
  });
  if (errors.length) throw invalid(errors);
  return [...new Set(out)];
}

/** The clock as the console shows it: `speed` is simulated seconds per real second (null on a manual clock). */
function clockRecord(deps: Deps) {
  return {
    now: new Date(deps.clock.now()).toISOString(), mode: deps.clockMode, speed: deps.clockMode === 'manual' ? null : deps.clockSpeed,
    pendingEvents: deps.clock.pending,
  };
}

function accountRecord(a: Account) {
  return { id: a.id, name: a.name, timezone: a.timezone, createdAt: a.createdAt };
}
