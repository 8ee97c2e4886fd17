// `./dev bench n8n`: the n8n nodes inside n8n's engine against the reference server: how fast Return All reads
// a large campaign page by page, how fast Add sends many input items in batches, and how fast the trigger drains
// a backlog of call-detail records; with the requests each took and the process's peak RSS.
//
// Runs the built package (./dev build first; this command builds it when dist/ is missing) through
// test/support/n8n.ts (n8n-core's WorkflowExecute and PollTriggerExecutor), with the server in this process on a
// manual clock, rate limit off and SQLite in memory. Results go to bench/results/n8n.json.
import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Campaign } from '../api/records.ts';
import { SimulationClock } from '../server/clock.ts';
import { Store } from '../server/store/store.ts';
import { loadPackage, pollTrigger, runNode } from '../test/support/n8n.ts';
import {
  loadAverage, machine, MB, openAccount, phone, printFiguresHeading, readFlags, round, startServer, tableRow, writeResults,
} from './support.ts';

const FLAGS = {
  numbers: { def: 100_000, help: 'numbers of the campaign that Get Many (Return All) reads' },
  items: { def: 20_000, help: 'input items of the Add operation' },
  batch: { def: 1_000, help: 'Batch Size of the Add operation' },
  calls: { def: 20_000, help: 'about how many call-detail records the trigger drains in one poll' },
  seed: { def: 7, help: 'seed of the dialer' },
};
const opts = readFlags(FLAGS, { command: 'n8n', example: 'BENCH_NUMBERS=20000', width: 10 });

const ROOT = fileURLToPath(new URL('..', import.meta.url));
if (!existsSync(`${ROOT}dist/nodes/CampaignDialing/CampaignDialing.node.js`)) execFileSync('./dev', ['build'], { cwd: ROOT, stdio: 'inherit' });

let peakRss = process.memoryUsage.rss();
const sampler = setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage.rss()); }, 50);
const started = loadAverage();
const store = new Store(':memory:');
const clock = new SimulationClock(Date.parse('2026-01-05T09:00:00Z'));
let apiRequests = 0;
const server = await startServer(store, { clock, clockMode: 'manual', seed: opts.seed }, (app) => {
  app.addHook('onRequest', async (request) => { if (request.url.startsWith('/v1/')) apiRequests++; });
});
const account = await openAccount(server, 'Bench n8n', 'UTC');
const pkg = await loadPackage(ROOT);
const credentials = { campaignDialingApi: { baseUrl: server.base, accountId: account.id, apiToken: account.token } };
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

interface Figure { name: string; records: number; seconds: number; requests: number; perSecond: number }
const figures: Figure[] = [];
async function measure(name: string, run: () => Promise<number>): Promise<void> {
  const before = apiRequests;
  const t0 = performance.now();
  const records = await run();
  const seconds = (performance.now() - t0) / 1000;
  const figure = { name, records, seconds: round(seconds, 2), requests: apiRequests - before, perSecond: Math.round(records / seconds) };
  figures.push(figure);
  console.log(`${name}: ${records.toLocaleString('en-US')} in ${figure.seconds} s (${figure.perSecond.toLocaleString('en-US')}/s), ${figure.requests} requests`);
}

// Get Many, Return All: pages of 200, filter and sort on every page.
const big = await campaign('Read all', { startDate: '2027-01-01T00:00:00Z' });
await load(big, opts.numbers, 0);
await measure('Campaign Number > Get Many (Return All, filter + sort)', async () => {
  const res = await runNode({ pkg, type: 'campaignDialing', credentials, parameters: {
    resource: 'campaignNumber', operation: 'getAll', campaignId: byId(big.id), returnAll: true,
    filters: { status: ['NotContacted'] }, options: { sortBy: 'number', sortDirection: 'DESC' } } });
  if (res.error) throw new Error(res.error.message);
  return res.items.length;
});

// Add: the items of one campaign in batches, phone number and two variables mapped from each item.
const target = await campaign('Add', { startDate: '2027-01-01T00:00:00Z' });
const items = Array.from({ length: opts.items }, (_, i) => ({ json: { phone: phone(5_000_000 + i), first: `F${i}`, company: `C${i % 97}` } }));
await measure(`Campaign Number > Add (${opts.batch} per request)`, async () => {
  const res = await runNode({ pkg, type: 'campaignDialing', credentials, items, parameters: {
    resource: 'campaignNumber', operation: 'add', campaignId: byId(target.id), phoneNumber: '={{ $json.phone }}',
    variables: { variable: [{ name: 'firstName', value: '={{ $json.first }}' }, { name: 'company', value: '={{ $json.company }}' }] },
    addOptions: { batchSize: opts.batch } } });
  if (res.error) throw new Error(res.error.message);
  return res.items.filter((i) => i.json.error === undefined).length;
});

// Trigger: one poll after a backlog of calls built up since the last one.
const dialing = await campaign('Dialing', { dialer: { mode: 'Power', agents: 200, callingHours: ALL_DAY } });
await load(dialing, Math.ceil(opts.calls / 1.7), 8_000_000);
const parameters = { event: 'callFinished', campaignId: byId(dialing.id) };
const first = await pollTrigger({ pkg, type: 'campaignDialingTrigger', mode: 'trigger', credentials, parameters });
let pending = 0;
for (let hours = 0; hours < 240 && pending < opts.calls; hours++) {
  await server.consolePost('/clock/advance', { seconds: 3600 });
  pending = Number((await fetch(`${server.base}/v1/accounts/${account.id}/campaigns/${dialing.id}/reports/callDetails?range=[0,0]`,
    { headers: { authorization: `Bearer ${account.token}` } })).headers.get('x-total-count'));
}
await measure('Trigger poll (New Call Detail Record backlog)', async () => {
  const res = await pollTrigger({ pkg, type: 'campaignDialingTrigger', mode: 'trigger', credentials, parameters, staticData: first.staticData });
  if (res.error) throw new Error(res.error.message);
  return res.items?.length ?? 0;
});

clearInterval(sampler);
const m = machine(started);
const line = printFiguresHeading(100, [`Node ${process.version}`, `${m.cpus} CPUs`, `load average ${m.loadAverageAtStart.join('/')}`]);
console.log(tableRow('operation', ['records', 'seconds', 'records/s', 'requests'], 58, 10));
for (const f of figures) {
  console.log(tableRow(f.name, [f.records.toLocaleString('en-US'), String(f.seconds), f.perSecond.toLocaleString('en-US'), String(f.requests)], 58, 10));
}
console.log(`peak RSS (server, n8n engine and client in one process): ${Math.round(peakRss / MB)} MB`);
console.log(line);
writeResults('n8n', { date: new Date().toISOString(), node: process.version, options: opts, machine: m, figures, peakRssMb: Math.round(peakRss / MB) });
await server.app.close();
await store.close();
