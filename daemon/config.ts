// The daemon's configuration: one YAML or JSON file, secrets from ${ENV} references, validated with zod at the door.
import { readFileSync } from 'node:fs';
import { getCountries, type CountryCode } from 'libphonenumber-js';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod/v4';
import { duration, id, secret, url } from './config-fields.ts';
import { clockOf } from './compliance/clocks.ts';
import { complianceSchema, type Compliance } from './compliance/config.ts';
import { rulesInForce } from './compliance/in-force.ts';
import { STATE_RULE_BY_STATE } from '../api/calling-window/rules.ts';
import { CRM_DO_NOT_CALL, CRM_TYPES, crmSchemas } from './crm/schemas.ts';
import type { DoNotCallField } from './sync/do-not-call.ts';
import { isTimeZone } from './local-time.ts';
import { OUTCOMES, ruleSchema } from './outcomes.ts';
import { telemetrySchema } from './telemetry.ts';
import { yamlErrorText } from './yaml-error.ts';
import { dncChoiceSchema, dncInForce, dncListsSchema, unknownLists, type DncChoice } from './dnc/config.ts';
import { MAX_VARIABLES } from '../api/limits.ts';
import { notifySchema, notifySecretPath } from './notify/config.ts';

const COUNTRIES = new Set<string>(getCountries());

const rateLimit = z.strictObject({
  perSecond: z.number().positive().default(10),
  burst: z.number().int().positive().default(50),
});

const dialer = z.strictObject({
  baseUrl: url,
  accountId: z.string().min(1),
  apiToken: secret,
  /** The reference server's default: 10 requests/s, bursts of 50. */
  rateLimit: rateLimit.default({ perSecond: 10, burst: 50 }),
  maxNumbersPerRequest: z.number().int().min(1).max(10_000).default(1000),
  /** Page size when the daemon reads a campaign's numbers back (reconciliation). */
  pageSize: z.number().int().min(10).max(10_000).default(1000),
  /** Push requests in flight at once per API key (the rate limit still applies). */
  concurrency: z.number().int().min(1).max(32).default(4),
  timeout: duration.default(30_000),
  /** Attempts of a push job on 5xx or network errors before its records are parked. */
  attempts: z.number().int().min(1).max(50).default(8),
  /** The account's time zone (IANA): report times are its wall clock, without an offset. */
  timeZone: z.string().refine(isTimeZone, 'an IANA time zone such as America/New_York').default('UTC'),
});

const webhookSource = z.strictObject({
  type: z.literal('webhook'),
  /** Standard Webhooks secret (`whsec_` + base64), as the reference server's endpoints have. */
  secret: secret,
});

const csvSource = z.strictObject({
  type: z.literal('csv'),
  path: z.string().min(1),
  delimiter: z.string().length(1).default(','),
});

const SOURCE_TYPES = [...CRM_TYPES, 'webhook', 'csv'].join(', ');
const source = z.discriminatedUnion('type', [...crmSchemas, webhookSource, csvSource], {
  error: (issue) => issue.code === 'invalid_union' ? `type must be one of ${SOURCE_TYPES}` : undefined,
});

const mapping = z.strictObject({
  /** The field holding the contact's id (generic webhook and CSV sources; HubSpot and Pipedrive use their own ids). */
  id: z.string().min(1).default('id'),
  /** The field(s) holding phone numbers: each non-empty value (or each entry of a list of phones) becomes a number. */
  phone: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).transform((v) => (Array.isArray(v) ? v : [v])),
  /** varName → field, in the order the campaign's variables take. */
  variables: z.record(z.string().regex(/^[A-Za-z0-9_]{1,64}$/, 'a variable name (letters, digits, "_")'), z.string().min(1)).default({})
    .refine((v) => Object.keys(v).length <= MAX_VARIABLES, `at most ${MAX_VARIABLES} variables: a number carries no more`),
  /**
   * The field marking a contact Do Not Call (a HubSpot property, a Pipedrive custom field key, a webhook field, a CSV
   * column): its numbers leave the campaign and are never added while it is marked. Values are read as yes/no
   * (sync/do-not-call.ts); `{field, marked: [...]}` lists the values that mark instead (a Pipedrive option field's ids).
   */
  doNotCall: z.preprocess((v) => (typeof v === 'string' ? { field: v } : v), z.strictObject({
    field: z.string().min(1, 'a field name'),
    marked: z.array(z.union([z.string().min(1), z.number()]), { error: 'a list of the values (option ids or text) that mark a contact Do Not Call' })
      .min(1, 'at least one value that marks a contact Do Not Call').optional(),
  }, { error: 'a field name, or {field, marked: [values]}' })).optional(),
  /** Country for numbers written without a country code (ISO 3166 alpha-2, e.g. US). */
  defaultCountry: z.string().refine((c) => COUNTRIES.has(c), 'an ISO 3166-1 alpha-2 country code libphonenumber knows, e.g. US, GB, DE')
    .transform((c) => c as CountryCode).optional(),
  /** Where the callee is, for the calling window (compliance): fields holding an IANA time zone, a state or province, a postal code, a country. */
  timeZone: z.string().min(1).optional(),
  region: z.string().min(1).optional(),
  postalCode: z.string().min(1).optional(),
  country: z.string().min(1).optional(),
  /**
   * Exemptions from the Do Not Call registry and state lists (never from the company's own list): fields holding the
   * date of the contact's written consent (exempt until the field is emptied), of its last purchase, delivery or
   * payment (18 months after), and of its last inquiry or application (3 months after). See dnc/exemptions.ts.
   */
  consent: z.string().min(1).optional(),
  lastPurchase: z.string().min(1).optional(),
  lastInquiry: z.string().min(1).optional(),
});

// {every: 15m} or {cron: '0 0 * * * *', tz?}: one object, so an error points at the key that is wrong.
const schedule = z.strictObject({ every: duration.optional(), cron: z.string().min(9, 'a cron pattern such as "0 */15 * * * *"').optional(), tz: z.string().optional() })
  .refine((s) => (s.every === undefined) !== (s.cron === undefined), 'give either every (a duration) or cron (a pattern), not both')
  .refine((s) => s.tz === undefined || s.cron !== undefined, 'tz applies to cron schedules only')
  .transform((s) => (s.every !== undefined ? { every: s.every } : { cron: s.cron!, tz: s.tz }));

const mirror = z.strictObject({
  /**
   * Where activities go: `source` (the sync's own CRM), a signed webhook, a JSON-lines file, or `none` (the records
   * are read for the per-number caps only, no activity written).
   */
  sink: z.discriminatedUnion('type', [
    z.strictObject({ type: z.literal('source') }),
    z.strictObject({ type: z.literal('webhook'), url, secret }),
    z.strictObject({ type: z.literal('file'), path: z.string().min(1) }),
    z.strictObject({ type: z.literal('none') }),
  ], { error: (issue) => issue.code === 'invalid_union' ? 'sink type must be one of source, webhook, file, none' : undefined }).default({ type: 'source' }),
  /** The poll: the safety net beside the dialer's call.finished events. */
  every: duration.default(60_000),
  /** Records can appear this long after records that ended later: each read starts this far back. */
  late: duration.default(600_000),
  /** Outcome rules, first match wins (default: connected, left_voicemail, busy, no_answer, wrong_number, failed). */
  rules: z.array(ruleSchema).min(1).optional(),
  /** HubSpot disposition GUIDs per outcome (default: HubSpot's standard ones). */
  dispositions: z.partialRecord(z.enum(OUTCOMES), z.string().nullable()).optional(),
  /** A contact property (HubSpot), custom field key (Pipedrive) or text field on both Lead and Contact (Salesforce) that gets the number's final status. */
  statusProperty: z.string().min(1).optional(),
  /** How long the daemon remembers which attempts it mirrored (a backfill older than this asks the CRM instead). */
  keepDays: z.number().int().min(1).max(3650).default(400),
  /** Verifies the dialer's signed call.finished events at /webhooks/<sync id>/events (the fast path). */
  eventsSecret: secret.optional(),
});

/**
 * The mirror of a sync under calling rules that has none of its own: the state rows' per-number caps (Florida: 3
 * calls in 24 hours) count call starts from the campaign's call-detail records, which only a mirror reads. It writes
 * no activity, and remembers what it read for two days (a cap's window is at most 24 hours).
 */
export const COUNTING_MIRROR = mirror.parse({ sink: { type: 'none' }, keepDays: 2 });

/** One campaign of a routed sync: it takes the numbers whose callee's zones are all among its zones. */
const route = z.strictObject({
  campaignId: z.string().min(1),
  /** The clocks whose callees the route takes (any IANA zone that keeps one of these clocks counts as it). */
  zones: z.array(z.string().refine(isTimeZone, 'an IANA time zone such as America/New_York')).min(1, 'at least one IANA time zone').optional(),
  /**
   * Only callees under these states' rows (USPS codes, e.g. RI): a campaign of their own, so that their stricter rows
   * do not narrow the others' windows. Tried before the routes without states.
   */
  states: z.array(z.string().refine((s) => STATE_RULE_BY_STATE.has(s),
    { message: `a state with a row (${[...STATE_RULE_BY_STATE.keys()].join(', ')}); a state without one has the federal window: route its callees by zones` }))
    .min(1, 'at least one state with a row, such as RI').optional(),
}).refine((r) => r.zones || r.states, { message: 'give the route zones, states or both', path: ['zones'] });

const sync = z.strictObject({
  id,
  source,
  /** The campaign the sync feeds; a routed sync gives `routes` instead (and its campaignId is then ''). */
  campaignId: z.string().min(1).optional(),
  /**
   * One read of the selection, routed into one campaign per window group: each number goes to the route whose zones
   * hold all of its callee's zones (compliance on; a zone is in one route at most, so a number goes to one campaign).
   */
  routes: z.array(route).min(1, 'at least one route').optional(),
  /** Another dialer key (or account) for this sync; what it leaves out comes from the top-level dialer. */
  dialer: z.strictObject({ baseUrl: url.optional(), accountId: z.string().min(1).optional(), apiToken: secret.optional(), rateLimit: rateLimit.optional() }).optional(),
  mapping,
  schedule: schedule.default({ every: 900_000 }),
  /** What happens to a number whose contact left the selection or was deleted in the CRM. */
  onLeave: z.enum(['delete', 'keep']).default('delete'),
  /**
   * The sync owns its campaign alone: numbers no sync of the daemon added (in the campaign before its first run, or
   * added by another key, the console, an upload or n8n) are taken as its own, replaced and deleted like those it
   * added. Off by default: they are the operator's, kept as they are (still held to the calling window).
   */
  ownsCampaign: z.boolean().default(false),
  /** Call-detail records of the campaign, mirrored back as call activities. */
  mirror: mirror.optional(),
  /** This sync's calling-window rules, or `{ off: "<reason>" }` (default: the daemon's `compliance`, else the rules on). */
  compliance: complianceSchema.optional(),
  /** Which Do Not Call lists hold this sync's numbers (default: the top-level doNotCall, else every list), or `{ off: "<reason>" }`. */
  doNotCall: dncChoiceSchema.optional(),
}).refine((s) => !(s.mirror?.sink.type === 'source' && (s.source.type === 'webhook' || s.source.type === 'csv')),
  { message: 'a webhook or CSV source has no CRM to write activities to: give mirror.sink a type of webhook or file', path: ['mirror', 'sink'] })
  .superRefine((s, ctx) => {
    if ((s.campaignId === undefined) === (s.routes === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['campaignId'], input: s.campaignId,
        message: `give either campaignId (one campaign) or routes (one campaign per window group)${s.routes ? ', not both' : ''}` });
    }
    if (s.routes) routeProblems(s.routes, s).forEach((p) => ctx.addIssue({ code: 'custom', ...p, input: undefined }));
  })
  // Every Do Not Call field the sync honours: the CRM's own (Salesforce's DoNotCall, always) and the mapping's.
  .transform((s) => ({ ...s, campaignId: s.campaignId ?? '', mapping: { ...s.mapping, doNotCall: doNotCallFields(s.source.type, s.mapping.doNotCall) } }));

/**
 * What is wrong with a sync's routes: a clock in two routes (or a state in two routes with states) would put one
 * number in two campaigns, a campaign in two routes would be fed by two states; `compliance.zones` does not go with
 * routes. Routes with states and routes without are matched apart (states first), so they may share clocks.
 */
function routeProblems(routes: z.output<typeof route>[], s: { compliance?: unknown }): { path: PropertyKey[]; message: string }[] {
  const problems: { path: PropertyKey[]; message: string }[] = [];
  const clockOwner = new Map<string, { route: number; zone: string }>();
  const stateOwner = new Map<string, { route: number; clocks: string[] | undefined }[]>();
  const campaignOwner = new Map<string, number>();
  routes.forEach((r, i) => {
    const other = campaignOwner.get(r.campaignId);
    if (other !== undefined) problems.push({ path: ['routes', i, 'campaignId'], message: `campaign "${r.campaignId}" is already routes.${other}'s: give it one route with both routes' zones` });
    else campaignOwner.set(r.campaignId, i);
    // A state may be in two routes whose clocks differ (Florida's Eastern and Central callees apart).
    const clocks = r.zones?.filter(isTimeZone).map(clockOf);
    r.states?.forEach((state, j) => {
      const owner = (stateOwner.get(state) ?? []).find((o) => !o.clocks || !clocks || o.clocks.some((c) => clocks.includes(c)));
      if (owner) problems.push({ path: ['routes', i, 'states', j], message: `${state} is already in routes.${owner.route} (campaign "${routes[owner.route]!.campaignId}") for ${owner.clocks ? 'one of these clocks' : 'every clock'}: a state belongs to one route per clock` });
      else stateOwner.set(state, [...stateOwner.get(state) ?? [], { route: i, clocks }]);
    });
    if (r.states) return;
    r.zones?.forEach((zone, j) => {
      if (!isTimeZone(zone)) return;
      const owner = clockOwner.get(clockOf(zone));
      if (owner !== undefined && owner.route !== i) {
        const same = owner.zone === zone ? zone : `${zone} keeps the same clock as ${owner.zone}, which`;
        problems.push({ path: ['routes', i, 'zones', j], message: `${same} is already in routes.${owner.route} (campaign "${routes[owner.route]!.campaignId}"): a clock belongs to one route, so that each number goes to one campaign` });
      } else if (!owner) clockOwner.set(clockOf(zone), { route: i, zone });
    });
  });
  if ((s.compliance as { zones?: unknown } | undefined)?.zones) problems.push({ path: ['compliance', 'zones'], message: 'a routed sync takes the zones of its routes: leave compliance.zones out' });
  return problems;
}

function doNotCallFields(sourceType: string, configured: DoNotCallField | undefined): DoNotCallField[] {
  const own = CRM_DO_NOT_CALL[sourceType];
  const fields: DoNotCallField[] = own ? [{ field: own }] : [];
  if (configured && configured.field !== own) fields.push(configured);
  return fields;
}

export const configSchema = z.strictObject({
  redis: z.strictObject({
    url: z.string().regex(/^rediss?:\/\//, 'a redis:// or rediss:// URL').default('redis://127.0.0.1:6379'),
    /** A Redis Cluster's seed nodes instead of one server (`url` is then not used). */
    cluster: z.array(z.string().regex(/^rediss?:\/\/[^/]+:\d+\/?$/, 'a redis://host:port URL')).min(1).optional(),
    /** A cluster behind NAT: the address a node announces ("10.0.0.5:6379") → the one to connect to. */
    natMap: z.record(z.string().regex(/^[^:]+:\d+$/, 'host:port as the node announces it'),
      z.strictObject({ host: z.string().min(1), port: z.number().int().min(1).max(65_535) })).optional(),
    username: z.string().min(1).optional(),
    password: secret.optional(),
    /** TLS to every node (managed services' "in-transit encryption"); rediss:// URLs turn it on too. */
    tls: z.boolean().optional(),
    prefix: z.string().regex(/^[A-Za-z0-9_.-]{1,32}$/, 'letters, digits, "_", "." or "-"').default('cds'),
  }).default({ url: 'redis://127.0.0.1:6379', prefix: 'cds' }),
  http: z.strictObject({
    host: z.string().default('127.0.0.1'),
    port: z.number().int().min(0).max(65_535).default(4300),
    /** The address CRMs call (scheme, host, port, path prefix): HubSpot signs the full URL it requested. */
    publicUrl: url.optional(),
    /**
     * Password of the operations page (/ops, HTTP Basic auth, any user name); without it the page is off. Long: the
     * page can re-queue records and, with queuesWritable, change the queues.
     */
    adminToken: z.string().min(16, 'a secret of at least 16 characters (use ${ENV_NAME})').optional(),
    /** Lets bull-board (/ops/queues) retry, clean, pause and remove jobs; read-only when absent or false. */
    queuesWritable: z.boolean().optional(),
  }).default({ host: '127.0.0.1', port: 4300 }),
  dialer,
  syncs: z.array(sync).min(1, 'at least one sync').superRefine((syncs, ctx) => {
    const seen = new Set<string>();
    syncs.forEach((s, i) => {
      if (seen.has(s.id)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate sync id "${s.id}"`, input: s.id });
      seen.add(s.id);
    });
  }),
  /** How long a job of a process that died stays locked before another process takes it over (BullMQ's lockDuration). */
  takeoverAfter: duration.default(15_000),
  /** How often a process compares BullMQ's job schedulers with the configuration and sets what went missing. */
  scheduleCheckEvery: duration.refine((ms) => ms >= 1000, 'at least 1s').default(30_000),
  /** Graceful shutdown deadline after SIGTERM. */
  shutdownTimeout: duration.default(20_000),
  /**
   * The rule set of every sync that names none (calling windows, state rows, the operator's window), or
   * `{ off: "<reason>" }`; absent: the default rules (federal window, state rows, evidence all) for every sync.
   */
  compliance: complianceSchema.optional(),
  /**
   * Demo and tests only: judge calling windows by the dialer's own clock (the reference server's GET /console/clock,
   * with its console token) rather than the real one. Absent (every real deployment): the real clock.
   */
  dialerClock: z.strictObject({ url, token: secret, every: duration.refine((ms) => ms >= 1000, 'at least 1s').default(5000) }).optional(),
  log: z.strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info') }).default({ level: 'info' }),
  /** OpenTelemetry traces (off unless an endpoint is set here or in OTEL_EXPORTER_OTLP_ENDPOINT); see telemetry.ts. */
  telemetry: telemetrySchema.optional(),
  /** The Do Not Call lists the daemon keeps copies of (the national registry, state lists); see dnc/config.ts. */
  doNotCallLists: dncListsSchema.default([]),
  /** Which of them hold every sync without a doNotCall of its own (default: every one), or `{ off: "<reason>" }`. */
  doNotCall: dncChoiceSchema.optional(),
  /**
   * POST /dnc/company: numbers added to the company's own Do Not Call list by a web form, an IVR's opt-out or a
   * workflow, signed as Standard Webhooks are (`whsec_` + base64). Off without it.
   */
  doNotCallEndpoint: z.strictObject({ secret }).optional(),
  /**
   * How often the daemon loads what is new in each Do Not Call list's folder (the downloads an operator or a script
   * puts there); 0 turns it off (then run \`campaign-sync dnc load\` after each download).
   */
  doNotCallLoadEvery: z.union([z.literal(0), duration.refine((ms) => ms >= 60_000, 'at least 1m, or 0 (off)')]).default(3_600_000),
  /** Days each day's Do Not Call evidence stays in Redis for `campaign-sync dnc export` (export daily to keep it longer). */
  doNotCallAuditDays: z.number().int().min(1).max(800).default(45),
  /** Notifications without Prometheus: alerts sent to Slack or a signed webhook (notify/config.ts). */
  notify: notifySchema.optional(),
}).superRefine((c, ctx) => {
  // A sync (or the top level) may name only lists of the catalog.
  const unknown = (choice: DncChoice | undefined, path: PropertyKey[]) => {
    for (const name of unknownLists(choice, c.doNotCallLists)) {
      ctx.addIssue({ code: 'custom', path, input: name, message: `no Do Not Call list "${name}" in doNotCallLists${c.doNotCallLists.length ? ` (it has ${c.doNotCallLists.map((l) => l.name).join(', ')})` : ' (none is configured)'}` });
    }
  };
  unknown(c.doNotCall, ['doNotCall', 'lists']);
  c.syncs.forEach((s, i) => unknown(s.doNotCall, ['syncs', i, 'doNotCall', 'lists']));
  // ownsCampaign takes the numbers no sync added: with two syncs feeding the campaign, one would take the other's.
  const campaignsOf = (s: (typeof c.syncs)[number]) => (s.routes ? s.routes.map((r) => r.campaignId) : [s.campaignId!])
    .map((id) => ({ id, key: `${s.dialer?.baseUrl ?? c.dialer.baseUrl}\n${s.dialer?.accountId ?? c.dialer.accountId}\n${id}` }));
  const feeding = new Map<string, number>();
  for (const s of c.syncs) for (const { key } of campaignsOf(s)) feeding.set(key, (feeding.get(key) ?? 0) + 1);
  c.syncs.forEach((s, i) => {
    const shared = s.ownsCampaign ? campaignsOf(s).find(({ key }) => feeding.get(key)! > 1) : undefined;
    if (shared) ctx.addIssue({ code: 'custom', path: ['syncs', i, 'ownsCampaign'], input: true, message: `campaign "${shared.id}" is fed by another sync too: a sync owns a campaign only alone (leave ownsCampaign out, and the numbers no sync added are kept)` });
  });
  // Routes follow the callees' zones: with the rules off there is nothing to place a number by.
  c.syncs.forEach((s, i) => {
    const rules = rulesInForce(s.compliance, c.compliance);
    if (s.routes && rules.off !== undefined) ctx.addIssue({ code: 'custom', path: ['syncs', i, 'routes'], message: `routes need the calling-window rules (they are off: ${rules.off}): a number is routed by its callee's zones`, input: undefined });
    (s.routes ?? []).forEach((r, j) => {
      if (r.states && rules.compliance?.ruleSet.stateRules === false) ctx.addIssue({ code: 'custom', path: ['syncs', i, 'routes', j, 'states'], message: 'routes by state need the state rows (compliance.stateRules): without them no callee is under a state', input: undefined });
    });
  });
})
  // Each sync's rules as they hold: its own block, else the top-level one, else the default rules (on).
  .transform((c) => ({ ...c, syncs: c.syncs.map((s) => ({ ...s, rules: rulesInForce(s.compliance, c.compliance), dnc: dncInForce(s.doNotCall, c.doNotCall, c.doNotCallLists) })) }))
  // A sync under the state rows without a mirror gets one that only counts (see COUNTING_MIRROR): a cap never goes uncounted.
  .transform((c) => ({ ...c, syncs: c.syncs.map((s) => (s.mirror || !s.rules.compliance?.ruleSet.stateRules ? s : { ...s, mirror: COUNTING_MIRROR })) }));

export type Config = z.output<typeof configSchema>;

/** The dialer a sync talks to: the top-level one with the sync's own overrides. */
export function dialerOf(config: Config, sync: Config['syncs'][number]): Config['dialer'] {
  return { ...config.dialer, ...Object.fromEntries(Object.entries(sync.dialer ?? {}).filter(([, v]) => v !== undefined)) };
}
export type SyncConfig = Config['syncs'][number];
export type MirrorConfig = NonNullable<SyncConfig['mirror']>;

/** The calling-window rules a sync's numbers are held to (the default rules without any block), or undefined when they are off. */
export function complianceOf(config: Config, sync: SyncConfig): Compliance | undefined {
  return rulesInForce(sync.compliance, config.compliance).compliance;
}
export type SourceConfig = SyncConfig['source'];
export type DialerConfig = Config['dialer'];
export type Mapping = SyncConfig['mapping'];

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(file: string, problems: string[]) {
    super(`configuration ${file} is not valid:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

/** Replaces `${NAME}` with the environment's value; a missing variable is an error naming it and where it is used. */
function substituteEnv(value: unknown, env: NodeJS.ProcessEnv, path: string[], problems: string[]): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const v = env[name];
      if (v === undefined || v === '') problems.push(`${path.join('.') || '(root)'}: environment variable ${name} is not set`);
      return v ?? '';
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, env, [...path, String(i)], problems));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substituteEnv(v, env, [...path, k], problems)]));
  }
  return value;
}

/** Keys whose values are secrets: never echoed in an error. */
const SECRET_KEYS = /token|secret|password|apikey/i;

function describeValue(path: PropertyKey[], input: unknown): string {
  if (path.some((p) => SECRET_KEYS.test(String(p))) || notifySecretPath(path)) return '(secret, not shown)';
  if (input === undefined) return 'missing';
  if (Array.isArray(input)) return `a list of ${input.length}`;
  if (input && typeof input === 'object') return `an object with keys ${Object.keys(input).join(', ')}`;
  const text = JSON.stringify(input);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** The keys an object in the schema allows, found by walking the schema along `path` (picking union members by the input). */
function allowedKeys(path: PropertyKey[], root: unknown): string[] {
  let schema: any = configSchema;
  let input: any = root;
  const unwrap = () => {
    for (;;) {
      const def = schema?._zod?.def;
      if (!def) return;
      if (def.type === 'default' || def.type === 'optional' || def.type === 'nullable') schema = def.innerType;
      // A pipe from a transform (z.preprocess) takes its keys from the schema after it.
      else if (def.type === 'pipe') schema = def.in?._zod?.def?.type === 'transform' ? def.out : def.in;
      else if (def.type === 'union') {
        schema = def.options.find((o: any) => {
          const d = o._zod.def;
          const disc = d.shape?.type?._zod?.def;
          return d.type === 'object' && (!disc || disc.type !== 'literal' || disc.values?.includes(input?.type));
        }) ?? def.options[0];
      } else return;
    }
  };
  unwrap();
  for (const p of path) {
    const def = schema?._zod?.def;
    if (def?.type === 'object') schema = def.shape[p as string];
    else if (def?.type === 'array') schema = def.element;
    else if (def?.type === 'record') schema = def.valueType;
    else return [];
    input = input?.[p as string];
    unwrap();
  }
  const def = schema?._zod?.def;
  return def?.type === 'object' ? Object.keys(def.shape) : [];
}

function valueAt(root: unknown, path: PropertyKey[]): unknown {
  let v: any = root;
  for (const p of path) v = v == null ? undefined : v[p as string];
  return v;
}

/** Parses and validates a configuration object; throws ConfigError listing every problem. */
export function parseConfig(raw: unknown, file = 'config', env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const substituted = substituteEnv(raw, env, [], problems);
  if (problems.length) throw new ConfigError(file, problems);
  const result = configSchema.safeParse(substituted);
  if (result.success) {
    // Syncs sharing a key share its budget: they must agree on what it is.
    const limits = new Map<string, { perSecond: number; burst: number; sync: string }>();
    result.data.syncs.forEach((s, i) => {
      const d = dialerOf(result.data, s);
      const key = `${d.baseUrl}\n${d.accountId}\n${d.apiToken}`;
      const known = limits.get(key);
      if (known && (known.perSecond !== d.rateLimit.perSecond || known.burst !== d.rateLimit.burst)) {
        problems.push(`syncs.${i}.dialer.rateLimit: sync "${s.id}" uses the same API key as sync "${known.sync}" with another rate limit; a key has one limit`);
      } else if (!known) limits.set(key, { ...d.rateLimit, sync: s.id });
    });
    if (problems.length) throw new ConfigError(file, problems);
    return result.data;
  }
  for (const issue of result.error.issues) {
    if (issue.code === 'unrecognized_keys') {
      // Never the value: an unknown key may be a misspelt secret, and its parent may hold one.
      const allowed = allowedKeys(issue.path, substituted);
      for (const key of issue.keys) {
        problems.push(`${[...issue.path, key].join('.')}: unknown key${allowed.length ? `; allowed here: ${allowed.join(', ')}` : ''}`);
      }
      continue;
    }
    const where = issue.path.length ? issue.path.join('.') : '(root)';
    const given = describeValue(issue.path, valueAt(substituted, issue.path));
    problems.push(`${where}: ${issue.message} (got ${given})`);
  }
  throw new ConfigError(file, problems);
}

/** Reads a YAML (or JSON: YAML is a superset) configuration file. */
export function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(file, [`cannot read the file: ${(err as Error).message}`]);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text, { prettyErrors: false });
  } catch (err) {
    throw new ConfigError(file, [`not valid YAML/JSON: ${yamlErrorText(text, err)}`]);
  }
  return parseConfig(raw, file, env);
}
