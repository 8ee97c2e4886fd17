// `./dev start`: the whole loop on one machine — the reference server, the HubSpot stand-in and the sync daemon, each
// started by its own entry point and wired by URL — with a live progress view; Ctrl-C stops it all and cleans up.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { DO_NOT_CALL_PROPERTY } from '../crm-stand-ins/hubspot.ts';
import { setUpDialer, TIME_ZONE, type DialerSetup } from './dialer-setup.ts';
import { describeExit, freePort, portFree, startChild, type Child } from './processes.ts';
import { merge, plainLine, readCounts, settled, TerminalView, viewLines, type Counts, type ProgressSources } from './progress.ts';

const ROOT = join(import.meta.dirname, '..');
const SYNC_ID = 'demo';
const HUBSPOT_API_VERSION = '2026-09';
const DAEMON = 'sync daemon';
const RECEIVER = 'trace receiver';
/** The fields the daemon's mapping reads phone numbers from: the progress view reads a changed contact's from them too. */
const PHONE_FIELDS = { hubspot: ['phone'], salesforce: ['Phone', 'MobilePhone', 'Secondary_Phone__c'] } as const;

// The rules in the demo (docs/demo.md: What the demo shows). The contacts' phones spread over the zones: every US zone
// (Eastern, Central, Mountain, Arizona, Pacific, Alaska, Hawaii), Indiana's split 219, Florida (its 8 p.m. close and
// call cap), Rhode Island (no Sunday, no holiday, 6 p.m.), Puerto Rico and Canada (Toronto, Vancouver, Halifax).
const AREA_CODES = [212, 617, 404, 305, 312, 214, 219, 303, 602, 213, 206, 907, 808, 787, 416, 604, 902, 401];
/** The share of contacts the CRM marks Do Not Call. */
const DO_NOT_CALL_SHARE = 0.1;
/**
 * The demo's stand-in for the National Do Not Call Registry: a full list per area code of the demo, holding every
 * number whose last four digits end in 1 (about a tenth of the contacts' +1 AAA 555 XXXX numbers; +1 212 555 0001 is one).
 */
const REGISTRY_EXAMPLE = '+12125550001';
function writeRegistry(folder: string, day: string): void {
  const full = join(folder, `full-${day}`);
  mkdirSync(full, { recursive: true });
  for (const ac of AREA_CODES) {
    const lines: string[] = [];
    for (let line = 1; line < 10_000; line += 10) lines.push(`${ac}555${String(line).padStart(4, '0')}`);
    writeFileSync(join(full, `${ac}.txt`), `${lines.join('\n')}\n`);
  }
}
/**
 * When the window those zones share opens: Tuesday 1 December 2026, 08:00 in Honolulu (it closes at 18:00 in Rhode
 * Island, 23:00 UTC). The dialer's clock starts OPENS_AFTER_S real seconds before it, whatever the speed, so the
 * demo shows the numbers held by the window, then the opening.
 */
const WINDOW_OPENS = Date.parse('2026-12-01T18:00:00Z');
const OPENS_AFTER_S = 15;

const USAGE = `usage: ./dev start [--crm hubspot|salesforce] [--contacts 300] [--speed 60] [--agents 10] [--port-base 4000] [--interval SECONDS]
                   [--traces [--traces-file traces.jsonl]]

Runs the whole loop: the reference server with a demo account and a Dynamic campaign, the HubSpot stand-in with
generated contacts, and the sync daemon that feeds the campaign from it and writes every call back as a call
activity. Prints the addresses, then a live progress view. Ctrl-C stops everything and removes what it created.
Needs Redis on 127.0.0.1:6379 (REDIS_URL to use another).

  --crm NAME       the CRM stand-in: hubspot (default) or salesforce (a Campaign's Leads and Contacts in, Tasks back,
                   Outbound Messages on every change)
  --contacts N     contacts in the HubSpot stand-in (default 300); with salesforce, its Contacts and Leads together
  --speed N        simulated seconds per real second of the dialer's clock (default 60: a minute per second)
  --agents N       agents of the campaign (default 10)
  --port-base N    server on N, HubSpot stand-in on N+100, daemon on N+300 (default 4000); a port already taken
                   is replaced by a free one; 0 takes free ports for all three
  --interval S     seconds between progress refreshes (default 1 on a terminal, 5 otherwise)
  --traces         the server and the daemon send their traces (OTLP/HTTP JSON) to a local receiver that writes them
                   to a file as JSON lines; ./dev daemon trace <phone number> prints a number's path from it
  --traces-file F  that file (default traces.jsonl here; emptied at start, kept on exit); implies --traces

The reference server alone: ./dev server [--port 4000 --seed demo ...]; a real deployment of the daemon:
./dev daemon start --config FILE.`;

function fail(message: string): never {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(2);
}

let values;
try {
  ({ values } = parseArgs({
    options: {
      crm: { type: 'string', default: 'hubspot' },
      contacts: { type: 'string', default: '300' },
      speed: { type: 'string', default: '60' },
      agents: { type: 'string', default: '10' },
      'port-base': { type: 'string', default: '4000' },
      interval: { type: 'string' },
      traces: { type: 'boolean', default: false },
      'traces-file': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (err) {
  fail((err as Error).message);
}
if (values.help) { console.log(USAGE); process.exit(0); }
const crmKind = values.crm;
if (crmKind !== 'hubspot' && crmKind !== 'salesforce') fail(`--crm must be hubspot or salesforce; got ${values.crm}`);
const contacts = Number(values.contacts);
if (!Number.isInteger(contacts) || contacts < 1 || contacts > 100_000) fail(`--contacts must be a whole number from 1 to 100000; got ${values.contacts}`);
const speed = Number(values.speed);
if (!(speed > 0 && speed <= 100_000)) fail(`--speed must be a number above 0, at most 100000 (simulated seconds per real second); got ${values.speed}`);
const agents = Number(values.agents);
if (!Number.isInteger(agents) || agents < 1 || agents > 10_000) fail(`--agents must be a whole number from 1 to 10000; got ${values.agents}`);
const portBase = Number(values['port-base']);
if (!Number.isInteger(portBase) || !(portBase === 0 || (portBase >= 1024 && portBase + 300 <= 65_535))) {
  fail(`--port-base must be 0 (free ports) or from 1024 to 65235; got ${values['port-base']}`);
}
// --traces-file alone means --traces too.
const tracesFile = values.traces || values['traces-file'] !== undefined ? resolve(values['traces-file'] ?? 'traces.jsonl') : null;
const tty = process.stdout.isTTY === true;
const intervalS = values.interval === undefined ? (tty ? 1 : 5) : Number(values.interval);
if (!(intervalS >= 0.2 && intervalS <= 3600)) fail(`--interval must be a number of seconds from 0.2 to 3600; got ${values.interval}`);

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const dim = (s: string) => (tty ? `\x1b[2m${s}\x1b[22m` : s);
const bold = (s: string) => (tty ? `\x1b[1m${s}\x1b[22m` : s);
const secret = (prefix: string) => `${prefix}${randomBytes(24).toString('base64url')}`;

// --- Redis first: without it the daemon cannot run, and saying so beats three processes failing.
async function checkRedis(): Promise<void> {
  const r = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2000, enableOfflineQueue: false });
  r.on('error', () => {});
  try {
    await r.connect();
    await r.ping();
  } catch (err) {
    console.error(`Redis is not reachable at ${REDIS_URL} (${(err as Error).message}).\n` +
      'The sync daemon keeps its state and queues there. Start it (e.g. `redis-server --daemonize yes`, or ' +
      '`sudo systemctl start redis-server`), or point REDIS_URL at one, and run ./dev start again.');
    process.exit(1);
  } finally {
    r.disconnect();
  }
}

/** Deletes every key of this run (the daemon's state and its BullMQ queues all live under the prefix). */
async function deletePrefix(prefix: string): Promise<number> {
  const r = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, retryStrategy: () => null, connectTimeout: 2000 });
  r.on('error', () => {});
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) deleted += await r.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
  return deleted;
}

/**
 * The first contact not marked Do Not Call (the stand-in seeds every contact with its do_not_call "true" or "false"),
 * for the "Try" line: a new phone of a marked contact is rightly held out, and the demo would seem not to work.
 */
async function callableContactId(hubspotUrl: string, token: string): Promise<string | null> {
  const res = await fetch(`${hubspotUrl}/crm/objects/${HUBSPOT_API_VERSION}/contacts/search`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      limit: 1, sorts: [{ propertyName: 'hs_object_id', direction: 'ASCENDING' }],
      filterGroups: [{ filters: [{ propertyName: DO_NOT_CALL_PROPERTY, operator: 'EQ', value: 'false' }] }],
    }), signal: AbortSignal.timeout(10_000),
  });
  if (res.status !== 200) throw new Error(`the HubSpot stand-in's contact search answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { results: { id: string }[] }).results[0]?.id ?? null;
}

/**
 * What the demo needs of the Salesforce stand-in, asked as any client would: a session (client credentials), the org
 * id from its identity URL, the first Campaign (the selection) and its first Contact not marked Do Not Call (for the
 * "Try" line).
 */
async function salesforceSetup(url: string, clientSecret: string) {
  const clientId = '3MVG9StandIn.ConsumerKey';
  const res = await fetch(`${url}/services/oauth2/token`, {
    method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }), signal: AbortSignal.timeout(10_000),
  });
  if (res.status !== 200) throw new Error(`the Salesforce stand-in's token endpoint answered ${res.status}: ${await res.text()}`);
  const session = (await res.json()) as { access_token: string; id: string };
  const firstOf = async (soql: string, field = 'Id'): Promise<string | null> => {
    const answer = await fetch(`${url}/services/data/v62.0/query?q=${encodeURIComponent(soql)}`, { headers: { authorization: `Bearer ${session.access_token}` }, signal: AbortSignal.timeout(10_000) });
    if (answer.status !== 200) throw new Error(`the Salesforce stand-in answered ${answer.status} to ${soql}: ${await answer.text()}`);
    return ((await answer.json()) as { records: Record<string, string>[] }).records[0]?.[field] ?? null;
  };
  const orgId = /\/id\/(00D\w+)\//.exec(session.id)?.[1];
  if (!orgId) throw new Error(`the Salesforce stand-in's identity URL names no org: ${session.id}`);
  const campaignId = await firstOf('SELECT Id FROM Campaign ORDER BY Id LIMIT 1');
  if (!campaignId) throw new Error('the Salesforce stand-in holds no Campaign');
  return {
    clientId, orgId, campaignId,
    // A Contact in the Campaign, not Do Not Call: its new phone is one the campaign takes.
    tryContact: await firstOf(`SELECT ContactId FROM CampaignMember WHERE CampaignId = '${campaignId}' AND Contact.DoNotCall = false ORDER BY Id LIMIT 1`, 'ContactId'),
    /** The progress view's session (its queries every refresh keep it from idling out). */
    token: async () => session.access_token,
  };
}

/** The wanted port, or a free one when it is taken (said in `notes`). */
async function choosePort(wanted: number, what: string, notes: string[]): Promise<number> {
  if (portBase === 0) return freePort();
  if (await portFree(wanted)) return wanted;
  const port = await freePort();
  notes.push(`port ${wanted} (${what}) is taken: using ${port}`);
  return port;
}

/** The CRM part of the daemon's configuration: its source block (secrets as ${ENV} references) and mapping. */
type CrmSetup =
  | { kind: 'hubspot'; url: string }
  | { kind: 'salesforce'; url: string; clientId: string; orgId: string; campaignId: string };

function sourceYaml(crm: CrmSetup): string {
  if (crm.kind === 'salesforce') {
    return `    source:
      type: salesforce
      loginUrl: ${crm.url}
      clientId: ${crm.clientId}
      auth:
        flow: client_credentials
        clientSecret: \${SF_CLIENT_SECRET}
      orgId: ${crm.orgId}
      selection: { campaignId: ${crm.campaignId} }
      taskExternalIdField: Dialer_Call_Id__c
    mapping:
      phone: [${PHONE_FIELDS.salesforce.join(', ')}]
      variables: { firstName: FirstName, lastName: LastName }
      defaultCountry: US`;
  }
  return `    source:
      type: hubspot
      baseUrl: ${crm.url}
      accessToken: \${HUBSPOT_TOKEN}
      clientSecret: \${HUBSPOT_CLIENT_SECRET}
    mapping:
      phone: [${PHONE_FIELDS.hubspot.join(', ')}]
      variables: { firstName: firstname, company: company }
      doNotCall: ${DO_NOT_CALL_PROPERTY}
      defaultCountry: US`;
}

function daemonConfig(o: { prefix: string; daemonUrl: string; daemonPort: number; serverUrl: string; speed: number; crm: CrmSetup; dialer: DialerSetup; registry: string }): string {
  // Secrets are ${ENV} references, as in a real deployment: the values go to the daemon's environment only.
  return `# Written by ./dev start for this run; removed when it stops. A real deployment looks the same (docs/daemon-configuration.md).
redis:
  url: ${REDIS_URL}
  prefix: ${o.prefix}
http:
  host: 127.0.0.1
  port: ${o.daemonPort}
  publicUrl: ${o.daemonUrl}
  adminToken: \${CDS_ADMIN_TOKEN}
dialer:
  baseUrl: ${o.serverUrl}
  accountId: ${o.dialer.accountId}
  apiToken: \${DIALER_API_TOKEN}
  timeZone: ${TIME_ZONE}
shutdownTimeout: 5s
# Calling windows in the callees' local time (federal 08:00-21:00 and the state rows) hold every sync without this
# block too: it is on by default (compliance: { off: "<reason>" } turns it off). Here it only tunes the checks to the
# sped-up clock: every second, and paused a margin before a close that covers what the clock runs between two checks.
compliance:
  checkEvery: 1s
  margin: ${Math.max(120, Math.ceil(2 * o.speed))}s
# Demo only: the reference server's clock runs ${o.speed}x, so the windows are judged by it (a real deployment leaves
# this out: the real clock).
dialerClock:
  url: ${o.serverUrl}/console/clock
  token: \${CONSOLE_TOKEN}
# The national Do Not Call registry: a small stand-in, each download in its own dated folder (\`dnc load\` loads
# what is new). Every number is checked against it and the company's own list before it reaches the dialer.
doNotCallLists:
  - name: national
    type: registry
    folder: ${o.registry}
syncs:
  - id: ${SYNC_ID}
    campaignId: ${o.dialer.campaignId}
${sourceYaml(o.crm)}
    schedule: { every: 1m }
    mirror:
      sink: { type: source }
      every: 5s
      eventsSecret: \${DIALER_EVENTS_SECRET}
`;
}

// --- The run.
await checkRedis();
const started = Date.now();
const runId = randomBytes(5).toString('hex');
const prefix = `demo-${runId}`;
const dir = mkdtempSync(join(tmpdir(), 'cds-demo-'));
const children: Child[] = [];
let stopping = false;
let progressTimer: NodeJS.Timeout | null = null;
let view: TerminalView | null = null;

// Whatever happens, no component outlives the demo (short of a kill -9 of the demo itself).
process.on('exit', () => { for (const c of children) c.kill(); });

async function shutdown(code: number, why?: string): Promise<never> {
  if (stopping) return new Promise<never>(() => {});
  stopping = true;
  if (progressTimer) clearInterval(progressTimer);
  view?.release();
  if (why) console.log(why);
  console.log(dim(`stopping: daemon, then ${crmKind === 'salesforce' ? 'Salesforce' : 'HubSpot'} stand-in and server...`));
  const daemon = children.find((c) => c.name === DAEMON);
  const receiver = children.find((c) => c.name === RECEIVER);
  // The daemon first: it finishes its jobs against a server and a CRM that are still there.
  if (daemon) await daemon.stop(10_000);
  await Promise.all(children.filter((c) => c !== daemon && c !== receiver).map((c) => c.stop(5000)));
  // The trace receiver last: the others export their last spans as they stop.
  if (receiver) await receiver.stop(5000);
  let deleted = 0;
  try {
    deleted = await deletePrefix(prefix);
  } catch (err) {
    console.error(`could not delete the Redis keys ${prefix}:* (${(err as Error).message}); delete them by hand`);
    code = code || 1;
  }
  rmSync(dir, { recursive: true, force: true });
  console.log(dim(`stopped; removed ${deleted} Redis keys ${prefix}:* and ${dir}${tracesFile ? `; the traces stay in ${tracesFile}` : ''}`));
  process.exit(code);
}

let signals = 0;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    // A second Ctrl-C does not wait for graceful stops.
    if (++signals > 1) { for (const c of children) c.kill(); return; }
    if (tty) process.stdout.write('\n');
    void shutdown(0);
  });
}

/**
 * What to show of a component that died: its plain lines (start-up messages, stack traces) and its JSON log lines at
 * warn or above, with only the last few info lines (the daemon logs one per mirror run, which would bury the cause).
 */
function lastWords(child: Child): string[] {
  const lines = child.lastLines(200);
  const tail = lines.length - 3;
  return lines.filter((line, i) => {
    if (i >= tail) return true;
    try {
      const level = (JSON.parse(line) as { level?: unknown }).level;
      return typeof level !== 'number' || level >= 40;
    } catch {
      return line.trim() !== '';
    }
  }).slice(-25);
}

function watch(child: Child): Child {
  children.push(child);
  void child.exited.then((exit) => {
    if (stopping) return;
    view?.release();
    const lines = lastWords(child);
    void shutdown(1, `\n${child.name} stopped unexpectedly (${describeExit(exit)}); its last output (${child.logFile}):\n` +
      lines.map((l) => `  | ${l}`).join('\n'));
  });
  return child;
}

try {
  const notes: string[] = [];
  const serverPort = await choosePort(portBase, 'reference server', notes);
  const crmName = crmKind === 'salesforce' ? 'Salesforce stand-in' : 'HubSpot stand-in';
  const crmPort = await choosePort(portBase + 100, crmName, notes);
  const daemonPort = await choosePort(portBase + 300, 'sync daemon', notes);
  for (const note of notes) console.log(dim(note));
  const daemonUrl = `http://127.0.0.1:${daemonPort}`;

  const consoleToken = secret('console_');
  const hubspotToken = secret('pat-demo-');
  const hubspotClientSecret = secret('');
  const sfClientSecret = secret('');
  const adminToken = secret('');

  // Tracing: a receiver first, so the first spans have somewhere to go; each process configured by the standard
  // OTEL_* environment, as it would be against Jaeger, Tempo or Honeycomb.
  let traces: { url: string; file: string } | null = null;
  if (tracesFile) {
    const file = tracesFile;
    writeFileSync(file, '');
    const receiver = watch(startChild(RECEIVER, 'daemon/traces/receiver.ts', ['--port', '0', '--file', file], {}, join(dir, 'receiver.log'), ROOT));
    traces = { url: (await receiver.waitFor(/listening on (http:\/\/\S+)/, 30_000))[1]!, file };
  }
  const otel = (service: string): Record<string, string> => (traces ? {
    OTEL_EXPORTER_OTLP_ENDPOINT: traces.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: service,
    // Metrics stay on /metrics (Prometheus) and logs in the log files: the receiver keeps traces only.
    OTEL_METRICS_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none',
  } : {});

  console.log(dim(`starting the reference server, the ${crmName} (${contacts} contacts) and the sync daemon; logs in ${dir}`));
  const server = watch(startChild('reference server', 'server/cli.ts', ['--port', String(serverPort), '--speed', String(speed),
    '--start', new Date(WINDOW_OPENS - OPENS_AFTER_S * speed * 1000).toISOString()],
    { CONSOLE_TOKEN: consoleToken, WEBHOOK_SIGNING_KEY: secret(''), ...otel('campaign-dialing-server') }, join(dir, 'server.log'), ROOT));
  const crmChild = crmKind === 'salesforce'
    ? watch(startChild(crmName, 'crm-stand-ins/salesforce.ts', [
      // Two thirds Contacts, a third Leads; an Outbound Message to the daemon on every change of either.
      `--port=${crmPort}`, `--contacts=${Math.ceil((contacts * 2) / 3)}`, `--leads=${Math.floor(contacts / 3)}`,
      `--outbound-url=${daemonUrl}/webhooks/${SYNC_ID}`, `--area-codes=${AREA_CODES.join(',')}`,
    ], { SF_CLIENT_SECRET: sfClientSecret }, join(dir, 'salesforce.log'), ROOT))
    : watch(startChild(crmName, 'crm-stand-ins/hubspot.ts', [
    // `--name=value`: a random secret may begin with "-", which would read as the next option.
    `--port=${crmPort}`, `--contacts=${contacts}`, `--token=${hubspotToken}`, `--client-secret=${hubspotClientSecret}`,
    `--webhook-url=${daemonUrl}/webhooks/${SYNC_ID}`, `--area-codes=${AREA_CODES.join(',')}`, `--do-not-call-share=${DO_NOT_CALL_SHARE}`,
    // HubSpot allows 5 searches a second; the daemon keeps to that, and the progress view's two a refresh get room of their own.
    '--search-per-second', '10',
  ], {}, join(dir, 'hubspot.log'), ROOT));
  const serverUrl = (await server.waitFor(/listening on (http:\/\/\S+)/, 30_000))[1]!;
  const crmUrl = (await crmChild.waitFor(crmKind === 'salesforce' ? /stand-in at (http:\/\/\S+)/ : /listening on (http:\/\/\S+)/, 30_000))[1]!;
  const sf = crmKind === 'salesforce' ? await salesforceSetup(crmUrl, sfClientSecret) : null;
  const crm: CrmSetup = sf ? { kind: 'salesforce', url: crmUrl, clientId: sf.clientId, orgId: sf.orgId, campaignId: sf.campaignId } : { kind: 'hubspot', url: crmUrl };
  const tryContact = sf ? sf.tryContact : await callableContactId(crmUrl, hubspotToken);
  const campaignName = sf ? 'Salesforce Campaign members' : 'HubSpot leads';
  const dialer = await setUpDialer({ baseUrl: serverUrl, consoleToken, eventsUrl: `${daemonUrl}/webhooks/${SYNC_ID}/events`, agents, campaignName });
  const configFile = join(dir, 'sync.yaml');
  const registry = join(dir, 'dnc', 'national');
  writeRegistry(registry, new Date().toISOString().slice(0, 10));
  writeFileSync(configFile, daemonConfig({ prefix, daemonUrl, daemonPort, serverUrl, speed, crm, dialer, registry }));
  const daemonEnv = {
    DIALER_API_TOKEN: dialer.daemonToken,
    ...(sf ? { SF_CLIENT_SECRET: sfClientSecret } : { HUBSPOT_TOKEN: hubspotToken, HUBSPOT_CLIENT_SECRET: hubspotClientSecret }),
    DIALER_EVENTS_SECRET: dialer.eventsSecret, CDS_ADMIN_TOKEN: adminToken, CONSOLE_TOKEN: consoleToken,
  };
  // For the person who wants to run `./dev daemon status` against this run (the file goes with the run).
  const envFile = join(dir, 'secrets.env');
  writeFileSync(envFile, Object.entries(daemonEnv).map(([k, v]) => `${k}=${v}\n`).join(''), { mode: 0o600 });
  // The registry's download loaded as an operator loads it (the daemon checks numbers against it from its first run).
  const load = startChild('dnc load', 'daemon/cli.ts', ['dnc', 'load', '--config', configFile], daemonEnv, join(dir, 'dnc-load.log'), ROOT);
  const loaded = await load.exited;
  if (loaded.code !== 0) throw new Error(`dnc load failed (${describeExit(loaded)}): ${load.lastLines(20).join('\n')}`);
  const daemon = watch(startChild(DAEMON, 'daemon/cli.ts', ['start', '--config', configFile], { ...daemonEnv, ...otel('campaign-sync') }, join(dir, 'daemon.log'), ROOT));
  await daemon.waitFor(/"msg":"daemon listening"/, 60_000);

  const api = `${serverUrl}/v1/accounts/${dialer.accountId}`;
  const ops = `${daemonUrl}/ops`;
  const opsWithLogin = `http://demo:${encodeURIComponent(adminToken)}@127.0.0.1:${daemonPort}/ops`;
  console.log([
    '',
    bold(sf ? 'Campaign Dialing demo: Salesforce Campaign members → sync daemon → dialer → call Tasks back in Salesforce'
      : 'Campaign Dialing demo: HubSpot → sync daemon → dialer → call activities back in HubSpot'),
    '',
    `  ${bold('Reference server')}   ${serverUrl}   API ${serverUrl}/v1   API reference ${serverUrl}/docs`,
    `                     web console ${serverUrl}/console (sign in with the console token below)`,
    `                     account ${dialer.accountId} (Demo Company, ${TIME_ZONE})`,
    `                     campaign ${dialer.campaignId} "${campaignName}": Dynamic, Active, ${agents} agents, clock at ${speed}x`,
    `                     calling windows of the callees (on by default; area codes ${AREA_CODES.join(', ')}), judged by this clock;` +
      ` its time starts ${OPENS_AFTER_S} s before they open (${new Date(WINDOW_OPENS).toISOString()}); Do Not Call: ${sf ? 'the DoNotCall checkbox' : `${Math.round(DO_NOT_CALL_SHARE * 100)}% of the contacts`}, and a registry stand-in holding a tenth of the numbers`,
    `                     Campaign Admin API token ${dialer.adminToken}`,
    `                     console token ${consoleToken}`,
    sf ? `  ${bold('Salesforce stand-in')} ${crmUrl}   ${contacts} Contacts and Leads; Campaign ${sf.campaignId}; org ${sf.orgId}; consumer key ${sf.clientId}, secret ${sfClientSecret}`
      : `  ${bold('HubSpot stand-in')}   ${crmUrl}   ${contacts} contacts; access token ${hubspotToken}`,
    `  ${bold('Sync daemon')}        ${ops}   operations page (runs, parked records, charts of the last hour and day): any user name, password ${adminToken}`,
    `                     (or open ${opsWithLogin})`,
    `                     ${daemonUrl}/health   ${daemonUrl}/metrics`,
    `  ${bold('Daemon config')}      ${configFile}   (secrets in ${envFile})`,
    `  ${bold('Logs')}               ${dir}/{server,${crmKind},daemon${traces ? ',receiver' : ''}}.log`,
    ...(traces ? [`  ${bold('Traces')}             ${traces.url}/v1/traces (OTLP/HTTP JSON) → ${traces.file} (kept on exit)`] : []),
    `  ${bold('Redis')}              ${REDIS_URL}, keys ${prefix}:*`,
    `  ${dim('(the config, logs and Redis keys are removed on exit)')}`,
    '',
    bold('Try'),
    `  curl -s -H 'Authorization: Bearer ${dialer.adminToken}' '${api}/campaigns/${dialer.campaignId}/reports/callDetails?range=%5B0,4%5D&sort=%5B%22endedAtLocal%22,%22DESC%22%5D'`,
    `  curl -s -u demo:${adminToken} ${ops}/api/syncs`,
    ...(tryContact === null ? [`  (every ${sf ? 'Contact of the Campaign' : 'contact'} is marked Do Not Call: a changed phone would be held out; more --contacts give some that are not)`] : [
      `  change a contact's phone in the CRM; its ${sf ? 'Outbound Message' : 'webhook'} makes the daemon add the new number at once:`,
      sf ? `  curl -s -X PATCH -H "Authorization: Bearer $(curl -s -d grant_type=client_credentials -d client_id=${sf.clientId} -d client_secret=${sfClientSecret} ${crmUrl}/services/oauth2/token | sed 's/.*"access_token":"\\([^"]*\\)".*/\\1/')" -H 'Content-Type: application/json' ${crmUrl}/services/data/v62.0/sobjects/Contact/${tryContact} -d '{"Phone":"+1 212 555 0199"}'`
        : `  curl -s -X PATCH -H 'Authorization: Bearer ${hubspotToken}' -H 'Content-Type: application/json' ${crmUrl}/crm/objects/${HUBSPOT_API_VERSION}/contacts/${tryContact} -d '{"properties":{"phone":"+1 212 555 0199"}}'`]),
    `  set -a; . ${envFile}; set +a; ./dev daemon status --config ${configFile}`,
    `  why a number on the demo's Do Not Call registry is not called, and the day's evidence of every number added (after the line above):`,
    `  ./dev daemon dnc why ${REGISTRY_EXAMPLE} --config ${configFile}`,
    `  ./dev daemon dnc export --sync ${SYNC_ID} --day $(date -u +%F) --config ${configFile} | head`,
    ...(traces ? [`  the path of that number, from the webhook to the call and back: ./dev daemon trace +12125550199${
      traces.file === join(ROOT, 'traces.jsonl') ? '' : ` --file ${traces.file}`}`] : []),
    '',
  ].join('\n'));

  const sources: ProgressSources = {
    crm: sf ? { kind: 'salesforce', url: crmUrl, token: sf.token, campaignId: sf.campaignId, phones: PHONE_FIELDS.salesforce }
      : { kind: 'hubspot', url: crmUrl, token: hubspotToken, apiVersion: HUBSPOT_API_VERSION, phones: PHONE_FIELDS.hubspot },
    serverUrl, accountId: dialer.accountId, campaignId: dialer.campaignId,
    viewToken: dialer.viewToken, daemonUrl, adminToken, syncId: SYNC_ID, consoleToken, changesSince: started,
  };
  view = tty ? new TerminalView(process.stdout) : null;
  let counts: Counts | null = null;
  let reading = false;
  let firstActivityAt: number | null = null;
  let printedSettled = false;
  const refresh = async () => {
    if (reading || stopping) return;
    reading = true;
    try {
      counts = merge(counts, await readCounts(sources));
      if (stopping) return;
      if (firstActivityAt === null && (counts.activities ?? 0) > 0) {
        firstActivityAt = Date.now();
        if (!tty) console.log(`first activity in the CRM ${((firstActivityAt - started) / 1000).toFixed(1)} s after start`);
      }
      if (view) view.draw(viewLines(counts, Date.now() - started, firstActivityAt === null ? null : firstActivityAt - started));
      else console.log(plainLine(counts, Date.now() - started));
      if (settled(counts) && !tty && !printedSettled) {
        printedSettled = true;
        console.log('every number is settled and every call is in the CRM; Ctrl-C (SIGINT) stops the demo');
      }
    } finally {
      reading = false;
    }
  };
  await refresh();
  progressTimer = setInterval(() => void refresh(), intervalS * 1000);
} catch (err) {
  const dead = children.filter((c) => !c.running());
  await shutdown(1, `the demo could not start: ${(err as Error).message}` +
    dead.map((c) => `\n${c.name}'s last output (${c.logFile}):\n${lastWords(c).map((l) => `  | ${l}`).join('\n')}`).join(''));
}
