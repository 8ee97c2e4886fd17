#!/usr/bin/env node
// `campaign-dialing-server --port <n> --db <file|:memory:> [--seed demo] [--rate-limit 10/s,burst=50]` (`./dev server …`
// in a checkout): starts the reference server.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { createSecureContext } from 'node:tls';
import { parseArgs } from 'node:util';
import { commandName } from '../api/command-name.ts';
import { telemetrySettings } from '../api/telemetry-settings.ts';
import { buildServer } from './app.ts';
import { RealTimeDriver, SimulationClock } from './clock.ts';
import { readOutcomes } from './dialer/outcomes-file.ts';
import { DEFAULT_RATE_LIMIT, parseRateLimit } from './rate-limit.ts';
import { seedDemo } from './seed.ts';
import { Store } from './store/store.ts';
import { startTelemetry, stopTelemetry } from './telemetry.ts';

const USAGE = `usage: ${commandName('campaign-dialing-server', './dev server', process.env)} [--port 4000] [--host 127.0.0.1] [--db :memory:|FILE] [--seed demo] [--seed N]\n` +
  '  [--clock realtime|manual] [--speed 1] [--start 2026-01-05T09:00:00Z] [--outcomes FILE.json] [--rate-limit 10/s,burst=50|off] [--log]\n' +
  '  [--trust-proxy ADDRESS[,ADDRESS|CIDR…]] [--tls-cert FILE.pem --tls-key FILE.pem] [--version]\n' +
  '  (PORT, HOST, DB and TRUST_PROXY in the environment set the defaults of --port, --host, --db and --trust-proxy)';

/** Where a manual clock starts unless told: fixed, so that one seed and one set of requests repeat exactly. */
const MANUAL_START = '2026-01-05T09:00:00Z';

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

let args;
try {
  args = parseArgs({
    options: {
      port: { type: 'string', default: process.env.PORT ?? '4000' },
      // From the environment too, as PORT: an image sets them, so that flags given to `podman run` add to them.
      host: { type: 'string', default: process.env.HOST ?? '127.0.0.1' },
      db: { type: 'string', default: process.env.DB ?? ':memory:' },
      seed: { type: 'string', multiple: true, default: [] },
      clock: { type: 'string', default: 'realtime' },
      speed: { type: 'string', default: '1' },
      start: { type: 'string' },
      outcomes: { type: 'string' },
      'rate-limit': { type: 'string' },
      'trust-proxy': { type: 'string', default: process.env.TRUST_PROXY ?? '' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      log: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
      version: { type: 'boolean', default: false },
    },
  }).values;
} catch (err) {
  fail((err as Error).message);
}
if (args.help) { console.log(USAGE); process.exit(0); }
// The package.json above this folder: the repository's (the one version of every part) or the installed package's.
if (args.version) { console.log((JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version); process.exit(0); }
const port = Number(args.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port must be 0-65535; got ${args.port}`);
const seeds = args.seed;
const bad = seeds.filter((x) => x !== 'demo' && !/^\d{1,10}$/.test(x));
if (bad.length) fail(`--seed takes "demo" (demo data) or a number (the random seed); got ${bad.join(', ')}`);
const demo = seeds.includes('demo');
const randomSeed = Number(seeds.find((x) => x !== 'demo') ?? randomBytes(4).readUInt32LE());
if (args.clock !== 'realtime' && args.clock !== 'manual') fail(`--clock takes realtime or manual; got ${args.clock}`);
const speed = Number(args.speed);
if (!(speed > 0 && speed <= 100_000)) fail(`--speed must be a number above 0 (simulated seconds per real second); got ${args.speed}`);
const start = args.start ? Date.parse(args.start) : args.clock === 'manual' ? Date.parse(MANUAL_START) : Date.now();
if (Number.isNaN(start)) fail(`--start must be an ISO timestamp such as ${MANUAL_START}; got ${args.start}`);
const rateLimit = args['rate-limit'] === undefined ? DEFAULT_RATE_LIMIT : parseRateLimit(args['rate-limit']);
if (!rateLimit) fail(`--rate-limit must look like 10/s, 600/min, 10/s,burst=50 or off; got ${args['rate-limit']}`);
const trustProxy = args['trust-proxy'].split(',').map((x) => x.trim()).filter((x) => x !== '');
const notProxies = trustProxy.filter((x) => !isProxyAddress(x));
if (notProxies.length) {
  fail(`--trust-proxy (or TRUST_PROXY) takes the proxies' IP addresses or CIDR ranges, comma-separated (or loopback); not ${notProxies.join(', ')}`);
}
if ((args['tls-cert'] === undefined) !== (args['tls-key'] === undefined)) fail('--tls-cert and --tls-key go together: the certificate and its private key');
let tls;
if (args['tls-cert'] !== undefined) {
  try {
    tls = { cert: readFileSync(args['tls-cert']), key: readFileSync(args['tls-key']!) };
    createSecureContext(tls);
  } catch (err) {
    fail(`--tls-cert/--tls-key: ${(err as Error).message}`);
  }
}

// Before the app is built: @fastify/otel wires itself into the fastify instance as it is created.
let tracing;
try {
  tracing = telemetrySettings(undefined, process.env, 'campaign-dialing-server');
} catch (err) {
  fail((err as Error).message);
}
await startTelemetry(tracing);

const consoleToken = process.env.CONSOLE_TOKEN || `console_${randomBytes(32).toString('base64url')}`;
let store: Store;
try {
  store = new Store(args.db);
} catch (err) {
  fail(`cannot open the database ${args.db}: ${(err as Error).message}`);
}
let outcomes;
try {
  outcomes = args.outcomes ? readOutcomes(args.outcomes) : undefined;
} catch (err) {
  fail(`--outcomes: ${(err as Error).message}`);
}
const clock = new SimulationClock(start);
// Seeded before the server is built, so the dialer finds the demo's Active campaigns when it starts.
const seeded = demo ? seedDemo(store, new Date(clock.now())) : null;
const app = await buildServer({ store, consoleToken, rateLimit, log: args.log ? 'requests' : 'errors', clock, clockMode: args.clock as 'manual' | 'realtime', clockSpeed: speed,
  seed: randomSeed, webhookSigningKey: process.env.WEBHOOK_SIGNING_KEY || undefined, outcomes, trustProxy, tls });
const driver = args.clock === 'realtime' ? new RealTimeDriver(clock, speed) : null;
driver?.start();
// For container health checks and load balancers: public (no key, no rate-limit token), like /docs.
app.get('/health', { config: { public: true } }, async () => ({ status: 'ok' }));
const address = await app.listen({ port, host: args.host });
const base = address.replace('[::1]', 'localhost');

console.log(`Reference server listening on ${base}  (API: ${base}/v1, console API: ${base}/console/…, db: ${args.db})`);
console.log(`Web console: ${base}/console  (sign in with the console token)`);
console.log(`API reference: ${base}/docs  (OpenAPI 3.1 document: ${base}/v1/openapi.json)`);
console.log(`Rate limit per key: ${rateLimit.rate}/s, bursts of ${rateLimit.burst}`);
console.log(`Clock: ${args.clock}${driver ? ` at ${speed}x` : ' (POST /console/clock/advance {"seconds": N})'}, now ${new Date(clock.now()).toISOString()}; random seed ${randomSeed}`);
if (tracing) console.log(`Traces: ${tracing.tracesUrl} as ${tracing.serviceName} (OTLP/HTTP JSON, sampler ${tracing.sampler})`);
if (trustProxy.length) console.log(`Trusted proxies (X-Forwarded-Proto, X-Forwarded-For): ${trustProxy.join(', ')}`);
console.log(process.env.CONSOLE_TOKEN ? 'Console token: from CONSOLE_TOKEN' : `Console token (generated; set CONSOLE_TOKEN to choose it): ${consoleToken}`);
if (seeded) {
  const { account, adminToken } = seeded;
  console.log(`Demo account: ${account.id}  (${account.name}, ${account.timezone})`);
  console.log(`Campaign Admin API token (shown once): ${adminToken}`);
  console.log(`Try: curl -H "Authorization: Bearer ${adminToken}" '${base}/v1/accounts/${account.id}/campaigns?range=%5B0,4%5D'`);
  // The campaign a first sync feeds: a sync adds numbers to a Dynamic campaign, and they are called while it is Active.
  const dynamic = store.db.get<{ id: string; name: string }>("SELECT id, name FROM campaigns WHERE account_pk = ? AND type = 'Dynamic' AND state = 'Active' ORDER BY pk LIMIT 1", account.pk);
  if (dynamic) console.log(`Dynamic Active campaign (for campaign-sync): ${dynamic.id}  (${dynamic.name})`);
}

let closing = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (closing) process.exit(1);
    closing = true;
    driver?.stop();
    void app.close().then(() => store.close()).then(stopTelemetry).then(() => process.exit(0));
  });
}

/** An IP address, a CIDR range (`10.0.0.0/8`) or one of the names fastify's proxy check knows. */
function isProxyAddress(text: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(text)) return true;
  const [ip, bits, ...rest] = text.split('/');
  const family = isIP(ip!);
  if (family === 0 || rest.length) return false;
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
}
