// `npm run server -- --port <n> --db <file|:memory:> [--seed demo] [--rate-limit 10/s,burst=50]`: starts the reference server.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { buildServer } from './app.ts';
import { DEFAULT_RATE_LIMIT, parseRateLimit } from './rate-limit.ts';
import { seedDemo } from './seed.ts';
import { Store } from './store/store.ts';

const USAGE = 'usage: npm run server -- [--port 4000] [--host 127.0.0.1] [--db :memory:|FILE] [--seed demo] [--rate-limit 10/s,burst=50|off] [--log]';

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

let args;
try {
  args = parseArgs({
    options: {
      port: { type: 'string', default: process.env.PORT ?? '4000' },
      host: { type: 'string', default: '127.0.0.1' },
      db: { type: 'string', default: ':memory:' },
      seed: { type: 'string' },
      'rate-limit': { type: 'string' },
      log: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  }).values;
} catch (err) {
  fail((err as Error).message);
}
if (args.help) { console.log(USAGE); process.exit(0); }
const port = Number(args.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port must be 0-65535; got ${args.port}`);
if (args.seed !== undefined && args.seed !== 'demo') fail(`--seed takes "demo"; got ${args.seed}`);
const rateLimit = args['rate-limit'] === undefined ? DEFAULT_RATE_LIMIT : parseRateLimit(args['rate-limit']);
if (!rateLimit) fail(`--rate-limit must look like 10/s, 600/min, 10/s,burst=50 or off; got ${args['rate-limit']}`);

const consoleToken = process.env.CONSOLE_TOKEN || `console_${randomBytes(32).toString('base64url')}`;
let store: Store;
try {
  store = new Store(args.db);
} catch (err) {
  fail(`cannot open the database ${args.db}: ${(err as Error).message}`);
}
const app = await buildServer({ store, consoleToken, rateLimit, logger: args.log });
const address = await app.listen({ port, host: args.host });
const base = address.replace('[::1]', 'localhost');

console.log(`Reference server listening on ${base}  (API: ${base}/v1, console: ${base}/console, db: ${args.db})`);
console.log(`Rate limit per key: ${rateLimit.rate}/s, bursts of ${rateLimit.burst}`);
console.log(process.env.CONSOLE_TOKEN ? 'Console token: from CONSOLE_TOKEN' : `Console token (generated; set CONSOLE_TOKEN to choose it): ${consoleToken}`);
if (args.seed === 'demo') {
  const { account, adminToken } = seedDemo(store, new Date());
  console.log(`Demo account: ${account.id}  (${account.name}, ${account.timezone})`);
  console.log(`Campaign Admin API token (shown once): ${adminToken}`);
  console.log(`Try: curl -H "Authorization: Bearer ${adminToken}" '${base}/v1/accounts/${account.id}/campaigns?range=%5B0,4%5D'`);
}

let closing = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (closing) process.exit(1);
    closing = true;
    void app.close().then(() => store.close()).then(() => process.exit(0));
  });
}
