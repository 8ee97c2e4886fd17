// `./dev bench daemon --scenario burst [--burst-contacts 10000] [--sources generic,hubspot,pipedrive,salesforce]`: a
// burst of webhooks (issue 29). For each source, `--burst-contacts` contacts arrive as signed webhooks of 10 (a
// Pipedrive webhook names one person and only queues a pull: one is sent per 10 persons created; a Salesforce Outbound
// Message carries 10 notifications), `--parallel` at once, at a daemon (its own process, `daemon/cli.ts start`) that
// feeds an Active Dynamic campaign of the reference server (in this process, its default rate limit: 10 requests/s,
// bursts of 50 per key; the daemon's dialer settings are the defaults: 10/s, 1,000 numbers a request, so the key's
// ceiling is 10,000 numbers/s). The CRM stand-ins run in this process with their default limits.
// Figures per source: acknowledgement rate and p50/p99; dialer add requests and numbers per request; the drain rate
// (numbers made dialable per second between the first add's answer and the last's) against the key's ceiling (it is
// the arrival rate when webhooks bring fewer numbers a second than the key takes); the time from sending the last
// webhook until every number is dialable (the server has answered the add that carried it); CRM requests
// per 1,000 contacts; and, from the campaign read back, numbers missing and duplicated. The issue's figure is
// `--burst-contacts 100000` (10,000 webhooks); the default is 10,000 to fit a shared 2-core machine.
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHubSpotStandIn, type HubSpotStandIn } from '../crm-stand-ins/hubspot.ts';
import { startPipedriveStandIn, type PipedriveStandIn } from '../crm-stand-ins/pipedrive.ts';
import { startSalesforceStandIn, type SalesforceStandIn } from '../crm-stand-ins/salesforce.ts';
import { VALID_PHONE_COUNT, validPhone } from '../crm-stand-ins/contacts.ts';
import { Redis } from 'ioredis';
import { DaemonKeys, campaignKey } from '../daemon/state/keys.ts';
import { DEFAULT_RATE_LIMIT } from '../server/rate-limit.ts';
import { Store } from '../server/store/store.ts';
import { REDIS_URL, spawnDaemon, testPrefix, type DaemonProcess } from '../test/support/daemon.ts';
import { salesforceSync } from '../test/support/salesforce.ts';
import { describeMachine, loadAverage, machine, printFiguresHeading, readFlags, round, startServer, stats, tableRow, writeResults, type BenchServer, type Stats } from './support.ts';

const FLAGS = {
  scenario: { def: 'burst', help: 'burst (this command; the other scenarios are bench/daemon.ts)' },
  'burst-contacts': { def: 10_000, help: 'contacts per source, arriving as webhooks of 10 (the issue: 100000, 10,000 webhooks)' },
  sources: { def: 'generic,hubspot,pipedrive,salesforce', help: 'sources measured, comma-separated' },
  parallel: { def: 32, help: 'webhooks sent at once' },
  per: { def: 10, help: 'contacts a webhook carries (names; Pipedrive: persons made per webhook); 100 brings numbers faster than the key takes them' },
  'drain-seconds': { def: 600, help: 'give up waiting for a burst to reach the campaign after this many seconds' },
} as const;
const SOURCES = ['generic', 'hubspot', 'pipedrive', 'salesforce'] as const;
type SourceName = typeof SOURCES[number];
/** Contacts per webhook (--per). */
let PER = 10;
const MAX_NUMBERS = 1000;
const CEILING = DEFAULT_RATE_LIMIT.rate * MAX_NUMBERS;
const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const PD_HOOK = { user: 'bench-hooks', password: 'bench-webhook-password-0123' };

interface SourceResult {
  source: SourceName; contacts: number; webhooks: number; seconds: number;
  ack: { perSecond: number; ms: Stats; refused: number };
  dialer: { adds: number; numbersPerRequest: number; rateLimited429: number };
  drain: {
    numbersPerSecond: number; percentOfCeiling: number; lastWebhookToDialableSeconds: number; backlogAtLastAck: number;
    /** The backlog at the last acknowledgement, over the time it took to become dialable. */
    backlogPerSecond: number; backlogPercentOfCeiling: number;
  };
  crm: { requests: number; perThousandContacts: number };
  campaign: { missing: number; duplicated: number };
}

/** Calls `send(i)` for i = 0..count-1, `parallel` at once; each call's duration in ms. */
async function inParallel(count: number, parallel: number, send: (i: number) => Promise<boolean>): Promise<{ ms: number[]; refused: number; lastSent: number }> {
  let next = 0;
  const ms: number[] = [];
  let refused = 0;
  let lastSent = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < count) {
      const i = next++;
      const t = performance.now();
      if (i === count - 1) lastSent = t;
      if (!(await send(i))) refused++;
      ms.push(performance.now() - t);
    }
  }));
  return { ms, refused, lastSent };
}

function signed(body: string): Record<string, string> {
  const id = `msg_${randomBytes(8).toString('hex')}`;
  const ts = String(Math.floor(Date.now() / 1000));
  const key = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
  return { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64')}` };
}

/** What one source needs: the sync's configuration, how to make its contacts and send its webhooks, its request count. */
interface Burst {
  sync: Record<string, unknown>;
  env: Record<string, string>;
  /** Makes the webhook's contacts in the CRM (a list import, a bulk edit), then sends the webhooks the CRM sends for them. */
  send(webhook: number, url: string): Promise<boolean>;
  crmRequests(): number;
  close(): Promise<void>;
}

async function burstOf(source: SourceName, n: number, campaignId: string, first: number): Promise<Burst> {
  const phone = (i: number) => validPhone(first + i);
  const range = (w: number) => Array.from({ length: Math.min(PER, n - w * PER) }, (_, k) => w * PER + k);
  if (source === 'generic') {
    return {
      sync: { id: 'burst', campaignId, source: { type: 'webhook', secret: '${BENCH_WEBHOOK_SECRET}' }, mapping: { id: 'id', phone: 'phone', variables: { FirstName: 'first' } } },
      env: { BENCH_WEBHOOK_SECRET: SECRET },
      async send(w, url) {
        const body = JSON.stringify({ contacts: range(w).map((i) => ({ id: `c${i}`, phone: phone(i), first: `F${i}` })) });
        const res = await fetch(url, { method: 'POST', headers: signed(body), body });
        await res.arrayBuffer();
        return res.status === 200;
      },
      crmRequests: () => 0,
      close: async () => {},
    };
  }
  if (source === 'hubspot') {
    const hs: HubSpotStandIn = await startHubSpotStandIn({ contacts: 0 });
    let eventId = 1;
    return {
      sync: {
        id: 'burst', campaignId, mapping: { phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'firstname' } },
        source: { type: 'hubspot', baseUrl: hs.url, accessToken: '${BENCH_HUBSPOT_TOKEN}', clientSecret: '${BENCH_HUBSPOT_SECRET}' },
      },
      env: { BENCH_HUBSPOT_TOKEN: hs.token, BENCH_HUBSPOT_SECRET: 'hs-client-secret' },
      async send(w, url) {
        const events = range(w).map((i) => ({
          eventId: eventId++, subscriptionId: 4001, portalId: 62515, appId: 1160452, occurredAt: Date.now(),
          subscriptionType: 'contact.creation', attemptNumber: 0, objectId: Number(hs.createContact({ firstname: `F${i}`, phone: phone(i) }).id), changeSource: 'CRM_UI',
        }));
        return (await hs.sendWebhook(events, { url })).status === 200;
      },
      crmRequests: () => hs.stats.requests,
      close: () => hs.close(),
    };
  }
  if (source === 'pipedrive') {
    const pd: PipedriveStandIn = await startPipedriveStandIn({ persons: 0 });
    return {
      sync: {
        id: 'burst', campaignId, mapping: { phone: 'phones', defaultCountry: 'US', variables: { Name: 'name' } },
        source: { type: 'pipedrive', baseUrl: pd.url, apiToken: '${BENCH_PIPEDRIVE_TOKEN}', webhookUser: PD_HOOK.user, webhookPassword: '${BENCH_PIPEDRIVE_HOOK}' },
      },
      env: { BENCH_PIPEDRIVE_TOKEN: pd.apiToken, BENCH_PIPEDRIVE_HOOK: PD_HOOK.password },
      // A Pipedrive webhook names one person and queues a pull: one per PER persons created.
      async send(w, url) {
        const [person] = range(w).map((i) => pd.createPerson({ name: `P${i}`, phones: [{ value: phone(i) }] }));
        return (await pd.sendWebhook('create', person!, null, { url, ...PD_HOOK })).status === 200;
      },
      crmRequests: () => pd.stats.requests,
      close: () => pd.close(),
    };
  }
  const sf: SalesforceStandIn = await startSalesforceStandIn({ contacts: 0, leads: 0, dailyApiRequests: 10_000_000 });
  const sync = salesforceSync(sf, campaignId, { object: 'Contact' });
  return {
    sync: { ...sync, id: 'burst', source: { ...sync.source, auth: { flow: 'client_credentials', clientSecret: '${BENCH_SF_SECRET}' } } },
    env: { BENCH_SF_SECRET: 'sf-client-secret' },
    async send(w, url) {
      const ids = range(w).map((i) => sf.createRecord('Contact', { LastName: `S${i}`, Phone: phone(i) }).values.Id as string);
      return (await sf.sendOutboundMessage({ url, ids }).settled) === 'acknowledged';
    },
    crmRequests: () => sf.stats.requests,
    close: async () => sf.close(),
  };
}

async function runSource(server: BenchServer, redis: Redis, source: SourceName, n: number, first: number, parallel: number, drainSeconds: number, dir: string): Promise<SourceResult> {
  const account = await server.consolePost<{ id: string }>('/accounts', { name: `Burst ${source}`, timezone: 'America/New_York' });
  const campaign = await server.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, { name: `Burst ${source}`, type: 'Dynamic', state: 'Active' });
  const key = async (roles: string[]) => (await server.consolePost<{ token: string }>(`/accounts/${account.id}/apiKeys`, { name: roles.join('+'), roles })).token;
  const [daemonToken, readerToken] = [await key(['CampaignNumberAdmin']), await key(['CampaignReader'])];
  watched.set(`Bearer ${daemonToken}`, counts = { adds: 0, numbers: 0, firstAddNumbers: 0, rateLimited: 0, firstAdd: 0, lastAdd: 0, dialableAt: 0, expected: n });
  const burst = await burstOf(source, n, campaign.id, first);
  const prefix = testPrefix(REDIS_URL);
  let daemon: DaemonProcess | null = null;
  try {
    daemon = await spawnDaemon({
      redis: { url: REDIS_URL, prefix: prefix.prefix }, http: { host: '127.0.0.1', port: 0 },
      dialer: { baseUrl: server.base, accountId: account.id, apiToken: '${BENCH_DIALER_TOKEN}' },
      log: { level: 'info' }, syncs: [{ ...burst.sync, schedule: { every: '24h' } }],
    }, dir, { ...burst.env, BENCH_DIALER_TOKEN: daemonToken });
    const url = `${await daemon.address}/webhooks/burst`;
    // The first run (a full import of an empty selection) is over before the burst: its requests are not the burst's.
    const keys = new DaemonKeys(prefix.prefix).sync('burst', campaignKey(server.base, account.id, campaign.id));
    for (;;) {
      const [id] = await redis.lrange(keys.runs, 0, 0);
      if (id && (await redis.hget(keys.run(id), 'status')) === 'done') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // Each webhook's contacts are made in the CRM as it is sent, after that import: only the burst brings them.
    const webhooks = Math.ceil(n / PER);
    const crmBefore = burst.crmRequests();
    console.log(`${source}: ${n} contacts, ${webhooks} webhooks of ${PER}, ${parallel} at once`);
    const t0 = performance.now();
    const sent = await inParallel(webhooks, parallel, (w) => burst.send(w, url));
    const lastAck = performance.now();
    const backlog = n - counts.numbers;
    while (!counts.dialableAt) {
      if (performance.now() - lastAck > drainSeconds * 1000) throw new Error(`${source}: ${counts.numbers} of ${n} numbers dialable ${drainSeconds} s after the last webhook`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const crmRequests = burst.crmRequests() - crmBefore;
    // The campaign read back: every number once.
    const listed: string[] = [];
    for (let from = 0; ; from += 10_000) {
      const res = await fetch(`${server.base}/v1/accounts/${account.id}/campaigns/${campaign.id}/numbers?range=[${from},${from + 9999}]`, { headers: { authorization: `Bearer ${readerToken}` } });
      if (res.status === 429) { await new Promise((r) => setTimeout(r, 200)); from -= 10_000; continue; }
      const page = (await res.json()) as { number: string }[];
      listed.push(...page.map((p) => p.number));
      if (page.length < 10_000) break;
    }
    const distinct = new Set(listed);
    let missing = 0;
    for (let i = 0; i < n; i++) if (!distinct.has(validPhone(first + i))) missing++;
    // Between the first add's answer and the last one's: the numbers of every add but the first.
    const drainSeconds_ = (counts.lastAdd - counts.firstAdd) / 1000;
    const drained = counts.numbers - counts.firstAddNumbers;
    return {
      source, contacts: n, webhooks, seconds: round((counts.dialableAt - t0) / 1000, 2),
      ack: { perSecond: Math.round(webhooks / ((lastAck - t0) / 1000)), ms: stats(sent.ms), refused: sent.refused },
      dialer: { adds: counts.adds, numbersPerRequest: Math.round(counts.numbers / Math.max(1, counts.adds)), rateLimited429: counts.rateLimited },
      drain: {
        numbersPerSecond: drainSeconds_ ? Math.round(drained / drainSeconds_) : 0,
        percentOfCeiling: drainSeconds_ ? round((100 * drained) / drainSeconds_ / CEILING, 1) : 0,
        lastWebhookToDialableSeconds: round((counts.dialableAt - sent.lastSent) / 1000, 2), backlogAtLastAck: backlog,
        backlogPerSecond: Math.round(backlog / ((counts.dialableAt - lastAck) / 1000)),
        backlogPercentOfCeiling: round((100 * backlog) / ((counts.dialableAt - lastAck) / 1000) / CEILING, 1),
      },
      crm: { requests: crmRequests, perThousandContacts: round((crmRequests * 1000) / n, 1) },
      campaign: { missing, duplicated: listed.length - distinct.size },
    };
  } finally {
    await daemon?.stop();
    await burst.close();
    await prefix.cleanup();
  }
}

interface Counts { adds: number; numbers: number; firstAddNumbers: number; rateLimited: number; firstAdd: number; lastAdd: number; dialableAt: number; expected: number }
/** The measured source's daemon key → what it asked of the server. */
const watched = new Map<string, Counts>();
let counts: Counts;

export async function main(): Promise<void> {
  const opts = readFlags(FLAGS, { command: 'daemon --scenario burst', example: 'BENCH_BURST_CONTACTS=100000', width: 15 });
  PER = Math.max(1, opts.per);
  const sources = opts.sources.split(',').map((s) => s.trim()) as SourceName[];
  for (const s of sources) if (!SOURCES.includes(s)) throw new Error(`--sources: ${s} is not one of ${SOURCES.join(', ')}`);
  if (opts['burst-contacts'] < 1 || opts['burst-contacts'] * sources.length > VALID_PHONE_COUNT) throw new Error(`--burst-contacts × sources must be 1..${VALID_PHONE_COUNT}`);
  const loadAtStart = loadAverage();
  const dir = mkdtempSync(join(tmpdir(), 'bench-burst-'));
  const store = new Store(':memory:');
  const server = await startServer(store, { rateLimit: DEFAULT_RATE_LIMIT }, (app) => {
    app.addHook('onResponse', async (request, reply) => {
      const c = watched.get(request.headers.authorization ?? '');
      if (!c) return;
      if (reply.statusCode === 429) c.rateLimited++;
      if (request.method !== 'POST' || !Array.isArray(request.body) || reply.statusCode >= 300) return;
      const t = performance.now();
      c.adds++;
      c.numbers += request.body.length;
      if (!c.firstAdd) { c.firstAdd = t; c.firstAddNumbers = request.body.length; }
      c.lastAdd = t;
      if (c.numbers >= c.expected && !c.dialableAt) c.dialableAt = t;
    });
  });
  const results: SourceResult[] = [];
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    for (const [i, source] of sources.entries()) {
      results.push(await runSource(server, redis, source, opts['burst-contacts'], i * opts['burst-contacts'], opts.parallel, opts['drain-seconds'], dir));
    }
  } finally {
    redis.disconnect();
    await server.app.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const m = machine(loadAtStart);
  const line = printFiguresHeading(110, [`burst scenario, ${opts['burst-contacts']} contacts per source in webhooks of ${PER}, ${opts.parallel} at once`, describeMachine(m)]);
  const row = (label: string, f: (r: SourceResult) => string) => console.log(tableRow(label, results.map(f), 52, 14));
  row('', (r) => r.source);
  row('webhooks acknowledged per second', (r) => String(r.ack.perSecond));
  row('acknowledgement p50 / p99 ms', (r) => `${Math.round(r.ack.ms.p50)} / ${Math.round(r.ack.ms.p99)}`);
  row('dialer add requests', (r) => String(r.dialer.adds));
  row('numbers per request', (r) => String(r.dialer.numbersPerRequest));
  row('drain: numbers/s between the first add and the last', (r) => String(r.drain.numbersPerSecond));
  row(`  of the key's ceiling (${CEILING}/s)`, (r) => `${r.drain.percentOfCeiling}%`);
  row('numbers not yet dialable at the last acknowledgement', (r) => String(r.drain.backlogAtLastAck));
  row('  made dialable per second after it', (r) => String(r.drain.backlogPerSecond));
  row(`  of the key's ceiling`, (r) => `${r.drain.backlogPercentOfCeiling}%`);
  row('last webhook sent → every number dialable, s', (r) => String(r.drain.lastWebhookToDialableSeconds));
  row('CRM requests per 1,000 contacts', (r) => String(r.crm.perThousandContacts));
  row('missing / duplicated numbers', (r) => `${r.campaign.missing} / ${r.campaign.duplicated}`);
  row('dialer 429s', (r) => String(r.dialer.rateLimited429));
  console.log(line);
  writeResults(`daemon-burst-${new Date().toISOString().replace(/[:.]/g, '-')}`, { machine: m, options: opts, results });
  if (results.some((r) => r.campaign.missing || r.campaign.duplicated || r.ack.refused)) process.exitCode = 1;
}
