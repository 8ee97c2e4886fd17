// `./dev bench n8n`: the n8n nodes inside n8n's engine against the reference server under its default rate limit
// (10 requests/s per key, bursts of 50): Return All over a large campaign through the node, side by side with a plain
// client paging the same list, at several page sizes; Add of many input items in batches; and the trigger's polls over
// a large call-details report (the activation poll and one draining the whole backlog); with the requests each took,
// the 429s it was answered, and the heap each item of the output holds. Then where a Return All's time goes, node and
// plain client side by side: server, transfer, JSON parsing, credentials, the node's code, n8n's engine, GC pauses.
//
// Runs the built package (./dev build first; this command builds it when n8n/dist/ is missing) through
// test/support/n8n.ts (n8n-core's WorkflowExecute and PollTriggerExecutor), with the server in this process on a
// manual clock and SQLite in memory. Each measurement gets an API key of its own, so each starts with a full bucket,
// as a workflow run with a key nobody else uses. Results go to bench/results/n8n.json.
import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { encodeListQuery, MAX_PAGE_SIZE } from '../api/list-query.ts';
import type { Campaign } from '../api/records.ts';
import { SimulationClock } from '../server/clock.ts';
import { DEFAULT_RATE_LIMIT } from '../server/rate-limit.ts';
import { Store } from '../server/store/store.ts';
import type { IExecuteFunctions, INodeType } from 'n8n-workflow';
import { loadPackage, pollTrigger, runNode } from '../test/support/n8n.ts';
import {
  loadAverage, machine, MB, openAccount, phone, printFiguresHeading, readFlags, round, startServer, tableRow, writeResults,
} from './support.ts';

const FLAGS = {
  numbers: { def: 100_000, help: 'numbers of the campaign that Get Many (Return All) reads' },
  sizes: { def: '1000,2000,5000,10000', help: 'page sizes at which the node and the plain client read it (comma list)' },
  items: { def: 20_000, help: 'input items of the Add operation' },
  batch: { def: 1_000, help: 'Batch Size of the Add operation' },
  calls: { def: 100_000, help: 'about how many call-detail records the trigger\'s polls read' },
  seed: { def: 7, help: 'seed of the dialer' },
  runs: { def: 5, help: 'runs of the timed breakdown of Return All at the default page size (median)' },
};
const opts = readFlags(FLAGS, { command: 'n8n', example: 'BENCH_NUMBERS=20000', width: 10 });
const sizes = opts.sizes.split(',').map((v) => Number(v.trim()));
if (!sizes.every((n) => Number.isInteger(n) && n >= 1 && n <= MAX_PAGE_SIZE)) throw new Error(`--sizes must be page sizes from 1 to ${MAX_PAGE_SIZE}; got ${opts.sizes}`);

const ROOT = fileURLToPath(new URL('..', import.meta.url));
if (!existsSync(`${ROOT}n8n/dist/n8n/nodes/CampaignDialing/CampaignDialing.node.js`)) execFileSync('./dev', ['build'], { cwd: ROOT, stdio: 'inherit' });

// A full collection before and after a run tells the heap its output holds.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapUsed = () => { gc(); return process.memoryUsage().heapUsed; };

let peakRss = process.memoryUsage.rss();
const sampler = setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage.rss()); }, 50);
const started = loadAverage();
const store = new Store(':memory:');
const clock = new SimulationClock(Date.parse('2026-01-05T09:00:00Z'));
let apiRequests = 0;
let tooMany = 0;
/** Milliseconds the server spent on API requests, from the request's arrival to the response's end (rate limiter included). */
let serverMs = 0;
const arrived = new WeakMap<object, number>();
const server = await startServer(store, { clock, clockMode: 'manual', seed: opts.seed, rateLimit: DEFAULT_RATE_LIMIT }, (app) => {
  app.addHook('onRequest', async (request) => { if (request.url.startsWith('/v1/')) { apiRequests++; arrived.set(request, performance.now()); } });
  app.addHook('onResponse', async (request, reply) => {
    if (!request.url.startsWith('/v1/')) return;
    if (reply.statusCode === 429) tooMany++;
    serverMs += performance.now() - (arrived.get(request) ?? performance.now());
  });
});
const account = await openAccount(server, 'Bench n8n', 'UTC');
const pkg = await loadPackage(`${ROOT}n8n`);
let keys = 0;
/** A fresh API key of the account: a full bucket of the rate limit. */
async function freshToken(): Promise<string> {
  const { token } = await server.consolePost<{ token: string }>(`/accounts/${account.id}/apiKeys`, { name: `bench ${++keys}`, roles: ['CampaignAdmin'] });
  return token;
}
const credentialsOf = (apiToken: string) => ({ campaignDialingApi: { baseUrl: server.base, accountId: account.id, apiToken } });
const byId = (id: string) => ({ __rl: true, mode: 'id', value: id });
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };

async function campaign(name: string, fields: Record<string, unknown>): Promise<Campaign> {
  return server.consolePost<Campaign>(`/accounts/${account.id}/campaigns`, { name, type: 'Dynamic', state: 'Active', ...fields });
}
async function load(c: Campaign, count: number, offset: number): Promise<void> {
  for (let i = 0; i < count; i += 10_000) {
    const batch = Array.from({ length: Math.min(10_000, count - i) }, (_, k) => ({ number: phone(offset + i + k) }));
    await server.consolePost(`/accounts/${account.id}/campaigns/${c.id}/numbers`, batch);
  }
}

/** GET of a list page as a plain script makes it, waiting out a 429's Retry-After. */
async function getPage(path: string, token: string): Promise<{ records: unknown[]; total: number | undefined }> {
  for (;;) {
    const res = await fetch(`${server.base}/v1/accounts/${account.id}${path}`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
    if (res.status === 429) {
      await res.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, Number(res.headers.get('retry-after') ?? 1) * 1000));
      continue;
    }
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
    const count = res.headers.get('x-total-count');
    // Read as text, then parsed: the same as res.json(), with the parse on the JSON.parse the breakdown times.
    return { records: JSON.parse(await res.text()) as unknown[], total: count === null ? undefined : Number(count) };
  }
}

interface Figure {
  name: string; records: number; seconds: number; requests: number; tooMany: number; perSecond: number;
  firstMs?: number; bytesPerItem?: number;
}
const figures: Figure[] = [];
/** Runs `run` once; it answers how many records it got and, when it knows, the ms to its first record and the output it holds. */
async function measure(name: string, run: () => Promise<{ records: number; firstMs?: number; output?: unknown }>): Promise<Figure> {
  const [requestsBefore, tooManyBefore, heapBefore] = [apiRequests, tooMany, heapUsed()];
  const t0 = performance.now();
  const result = await run();
  const seconds = (performance.now() - t0) / 1000;
  const held = result.output === undefined ? undefined : heapUsed() - heapBefore;
  const figure: Figure = {
    name, records: result.records, seconds: round(seconds, 2), requests: apiRequests - requestsBefore, tooMany: tooMany - tooManyBefore,
    perSecond: Math.round(result.records / seconds),
    ...(result.firstMs === undefined ? {} : { firstMs: Math.round(result.firstMs) }),
    ...(held === undefined || !result.records ? {} : { bytesPerItem: Math.round(held / result.records) }),
  };
  figures.push(figure);
  console.log(`${name}: ${figure.records.toLocaleString('en-US')} in ${figure.seconds} s (${figure.perSecond.toLocaleString('en-US')}/s), `
    + `${figure.requests} requests, ${figure.tooMany} answered 429${figure.firstMs === undefined ? '' : `, first record after ${figure.firstMs} ms`}`
    + `${figure.bytesPerItem === undefined ? '' : `, ${figure.bytesPerItem} B of heap per item`}`);
  return figure;
}

// Get Many, Return All, filter and sort on every page: the node at each page size (and at its default) beside a
// plain client paging the same list.
const big = await campaign('Read all', { startDate: '2027-01-01T00:00:00Z' });
await load(big, opts.numbers, 0);
const filter = { status: ['NotContacted'] };
const sort: [string, 'ASC' | 'DESC'] = ['number', 'DESC'];
async function plainClient(size: number) {
  const token = await freshToken();
  const t0 = performance.now();
  const out: unknown[] = [];
  let firstMs: number | undefined;
  for (let first = 0; ;) {
    const { records, total } = await getPage(`/campaigns/${big.id}/numbers?${encodeListQuery({ filter, sort, range: [first, first + size - 1] })}`, token);
    firstMs ??= performance.now() - t0;
    for (const r of records) out.push(r);
    first += records.length;
    if (records.length < size || (total !== undefined && first >= total)) break;
  }
  return { records: out.length, firstMs, output: out };
}
async function throughNode(pageSize: number | undefined) {
  const res = await runNode({ pkg, type: 'campaignDialing', credentials: credentialsOf(await freshToken()), parameters: {
    resource: 'campaignNumber', operation: 'getAll', campaignId: byId(big.id), returnAll: true,
    filters: { status: ['NotContacted'] }, options: { sortBy: 'number', sortDirection: 'DESC', ...(pageSize ? { pageSize } : {}) } } });
  if (res.error) throw new Error(res.error.message);
  return { records: res.items.length, output: res };
}
const plainAt = new Map<number, Figure>();
for (const size of sizes) {
  plainAt.set(size, await measure(`Plain client, pages of ${size.toLocaleString('en-US')}`, () => plainClient(size)));
  await measure(`Get Many (Return All), Page Size ${size.toLocaleString('en-US')}`, () => throughNode(size));
}
const plainLargest = plainAt.get(MAX_PAGE_SIZE) ?? await measure(`Plain client, pages of ${MAX_PAGE_SIZE.toLocaleString('en-US')}`, () => plainClient(MAX_PAGE_SIZE));
const nodeDefault = await measure('Get Many (Return All), default Page Size', () => throughNode(undefined));

// Where the time of a Return All goes, at the default page size, node and plain client alike: each run timed in parts
// (median of --runs runs). The node's execute() is wrapped, and within it n8n's request helper and getCredentials;
// JSON.parse is wrapped for the run (n8n's HTTP client parses with it); the server's share is arrival to response sent.
interface Parts { total: number; server: number; http: number; parse: number; credentials: number; execute: number; gc: number }
const zeroParts = (): Parts => ({ total: 0, server: 0, http: 0, parse: 0, credentials: 0, execute: 0, gc: 0 });
/** Milliseconds of garbage-collection pauses so far (they fall inside the other parts). */
let gcMs = 0;
new PerformanceObserver((list) => { for (const entry of list.getEntries()) gcMs += entry.duration; }).observe({ entryTypes: ['gc'] });
async function timedParts(run: (parts: Parts) => Promise<void>): Promise<Parts> {
  const parts = zeroParts();
  const realParse = JSON.parse;
  JSON.parse = function timedParse(this: unknown, ...args: Parameters<typeof JSON.parse>) {
    const t0 = performance.now();
    try { return realParse.apply(this, args) as unknown; } finally { parts.parse += performance.now() - t0; }
  } as typeof JSON.parse;
  const [serverBefore, gcBefore, t0] = [serverMs, gcMs, performance.now()];
  try { await run(parts); } finally { JSON.parse = realParse; }
  parts.total = performance.now() - t0;
  parts.server = serverMs - serverBefore;
  // The observer is told of a pause after it ends: a tick lets the last ones in.
  await new Promise((resolve) => setImmediate(resolve));
  parts.gc = gcMs - gcBefore;
  return parts;
}
const nodeType = pkg.nodeTypes.getByName(`${pkg.packageName}.campaignDialing`) as INodeType;
const realExecute = nodeType.execute!;
let timing: Parts | undefined;
nodeType.execute = async function timedExecute(this: IExecuteFunctions) {
  const parts = timing;
  if (!parts) return await realExecute.call(this);
  const helpers = this.helpers as { httpRequestWithAuthentication: (...args: unknown[]) => Promise<unknown> };
  const [request, getCredentials] = [helpers.httpRequestWithAuthentication, this.getCredentials];
  const timed = <A extends unknown[], R>(fn: (...args: A) => Promise<R>, add: (ms: number) => void) => async function (this: unknown, ...args: A) {
    const t0 = performance.now();
    try { return await fn.apply(this, args); } finally { add(performance.now() - t0); }
  };
  helpers.httpRequestWithAuthentication = timed(request, (ms) => { parts.http += ms; });
  this.getCredentials = timed(getCredentials, (ms) => { parts.credentials += ms; }) as typeof getCredentials;
  const t0 = performance.now();
  try { return await realExecute.call(this); } finally { parts.execute += performance.now() - t0; }
};
const nodeRuns: Parts[] = [];
const plainRuns: Parts[] = [];
for (let n = 0; n < opts.runs; n++) {
  plainRuns.push(await timedParts(async () => { await plainClient(MAX_PAGE_SIZE); }));
  nodeRuns.push(await timedParts(async (parts) => {
    timing = parts;
    try { await throughNode(undefined); } finally { timing = undefined; }
  }));
}
const median = (runs: Parts[], key: keyof Parts) => {
  const sorted = runs.map((r) => r[key]).sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};
// The plain client's requests: fetch until its body is read as text, then JSON.parse (its getPage); the node's: n8n's
// helper (credentials, authentication, HTTP client, parsing) inside execute().
const breakdown = (() => {
  const plain = { total: median(plainRuns, 'total'), server: median(plainRuns, 'server'), parse: median(plainRuns, 'parse'), gc: median(plainRuns, 'gc') };
  const node = Object.fromEntries((Object.keys(zeroParts()) as Array<keyof Parts>).map((k) => [k, median(nodeRuns, k)])) as unknown as Parts;
  const rows: Array<[string, number, number]> = [
    ['server (arrival to response sent; rate limiter, SQL, JSON text)', plain.server, node.server],
    ['transfer and HTTP client (fetch / n8n\'s request helper)', plain.total - plain.server - plain.parse,
      node.http - node.server - node.parse - node.credentials],
    ['JSON parsing of the pages', plain.parse, node.parse],
    ['credentials (getCredentials, per request and the node\'s own)', 0, node.credentials],
    ['the node\'s own code (paging, records to items)', 0, node.execute - node.http],
    ['n8n\'s engine around execute() (items in, paired items, run data)', 0, node.total - node.execute],
    ['waiting out 429s (none: 10 requests fit the burst of 50)', 0, 0],
  ];
  return { plain, node, rows };
})();

// Add: the items of one campaign in batches, phone number and two variables mapped from each item.
const target = await campaign('Add', { startDate: '2027-01-01T00:00:00Z' });
const items = Array.from({ length: opts.items }, (_, i) => ({ json: { phone: phone(5_000_000 + i), first: `F${i}`, company: `C${i % 97}` } }));
await measure(`Campaign Number > Add (${opts.batch} per request)`, async () => {
  const res = await runNode({ pkg, type: 'campaignDialing', credentials: credentialsOf(await freshToken()), items, parameters: {
    resource: 'campaignNumber', operation: 'add', campaignId: byId(target.id), phoneNumber: '={{ $json.phone }}',
    variables: { variable: [{ name: 'firstName', value: '={{ $json.first }}' }, { name: 'company', value: '={{ $json.company }}' }] },
    addOptions: { batchSize: opts.batch } } });
  if (res.error) throw new Error(res.error.message);
  return { records: res.items.filter((i) => i.json.error === undefined).length };
});

// Trigger: activated on an empty report, then one poll after a backlog of calls built up since; and the first poll
// of a trigger activated on that whole report.
const dialing = await campaign('Dialing', { dialer: { mode: 'Power', agents: 500, callingHours: ALL_DAY } });
await load(dialing, Math.ceil(opts.calls / 1.7), 8_000_000);
const parameters = { event: 'callFinished', campaignId: byId(dialing.id) };
const activated = await pollTrigger({ pkg, type: 'campaignDialingTrigger', mode: 'trigger', credentials: credentialsOf(await freshToken()), parameters });
const counter = await freshToken();
let pending = 0;
for (let hours = 0; hours < 480 && pending < opts.calls; hours++) {
  await server.consolePost('/clock/advance', { seconds: 3600 });
  pending = (await getPage(`/campaigns/${dialing.id}/reports/callDetails?range=[0,0]`, counter)).total ?? 0;
}
await measure(`Trigger poll draining a backlog of ${pending.toLocaleString('en-US')} records`, async () => {
  const res = await pollTrigger({ pkg, type: 'campaignDialingTrigger', mode: 'trigger', credentials: credentialsOf(await freshToken()), parameters,
    staticData: activated.staticData });
  if (res.error) throw new Error(res.error.message);
  return { records: res.items?.length ?? 0, output: res };
});
await measure(`Trigger activation poll over ${pending.toLocaleString('en-US')} records`, async () => {
  const res = await pollTrigger({ pkg, type: 'campaignDialingTrigger', mode: 'trigger', credentials: credentialsOf(await freshToken()), parameters });
  if (res.error) throw new Error(res.error.message);
  const cursor = (res.staticData['node:Campaign Dialing Trigger'] as { cursor?: { seen?: Record<string, string[]> } } | undefined)?.cursor;
  return { records: Object.values(cursor?.seen ?? {}).flat().length };
});

clearInterval(sampler);
const m = machine(started);
const line = printFiguresHeading(128, [`Node ${process.version}`, `${m.cpus} CPUs`, `load average ${m.loadAverageAtStart.join('/')}`,
  `rate limit ${DEFAULT_RATE_LIMIT.rate}/s, bursts of ${DEFAULT_RATE_LIMIT.burst}`]);
console.log(tableRow('measurement', ['records', 'seconds', 'records/s', 'requests', '429s', 'first ms', 'B/item'], 58, 10));
for (const f of figures) {
  console.log(tableRow(f.name, [f.records.toLocaleString('en-US'), String(f.seconds), f.perSecond.toLocaleString('en-US'), String(f.requests),
    String(f.tooMany), f.firstMs === undefined ? '' : String(f.firstMs), f.bytesPerItem === undefined ? '' : String(f.bytesPerItem)], 58, 10));
}
const ratio = round(plainLargest.seconds / nodeDefault.seconds, 2);
console.log(`Return All through the node at its default page size vs the plain client at ${MAX_PAGE_SIZE.toLocaleString('en-US')}: `
  + `${ratio} of its speed (target >= 0.9)`);
console.log(`\nWhere a Return All of ${opts.numbers.toLocaleString('en-US')} numbers at pages of ${MAX_PAGE_SIZE.toLocaleString('en-US')} spends its time (median of ${opts.runs} runs, ms):`);
console.log(tableRow('part', ['plain', 'node'], 66, 10));
for (const [label, plain, node] of breakdown.rows) console.log(tableRow(label, [String(Math.round(plain)), String(Math.round(node))], 66, 10));
console.log(tableRow('total', [String(Math.round(breakdown.plain.total)), String(Math.round(breakdown.node.total))], 66, 10));
console.log(tableRow('of which garbage collection (in the parts above)', [String(Math.round(breakdown.plain.gc)), String(Math.round(breakdown.node.gc))], 66, 10));
console.log(`peak RSS (server, n8n engine and clients in one process): ${Math.round(peakRss / MB)} MB`);
console.log(line);
writeResults('n8n', { date: new Date().toISOString(), node: process.version, options: opts, machine: m, rateLimit: DEFAULT_RATE_LIMIT,
  figures, nodeVsPlainClient: ratio, breakdownMs: Object.fromEntries([...breakdown.rows, ['total', breakdown.plain.total, breakdown.node.total] as const,
    ['of which garbage collection', breakdown.plain.gc, breakdown.node.gc] as const].map(([label, plain, node]) => [label, { plain: round(plain), node: round(node) }])),
  peakRssMb: Math.round(peakRss / MB) });
await server.app.close();
await store.close();
