// `./dev bench first-start [--numbers 20000 --contacts 20000 --shared 2000]`: a new sync's first start on a campaign
// that already holds numbers no sync added (issue 43). The campaign gets `numbers` numbers by hand, `shared` of them
// numbers that contacts of the sync's CSV file also hold (with other variables); the file has `contacts` contacts.
// Prints the dry run's counts and time, then the start's: the time until the campaign holds what the dry run said,
// the dialer requests it took by kind (counted by the reference server's own hook), and what changed in the campaign
// (read from the campaign itself): numbers added, deleted and replaced. The start must delete and replace none of the
// hand-added numbers, and do exactly what the dry run said.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { Daemon } from '../daemon/app.ts';
import { parseConfig } from '../daemon/config.ts';
import { dryRun } from '../daemon/sync/dry-run.ts';
import { SimulationClock } from '../server/clock.ts';
import { Store } from '../server/store/store.ts';
import { REDIS_URL, testPrefix } from '../test/support/daemon.ts';
import { openAccount, phone, printFiguresHeading, readFlags, round, startServer, tableRow } from './support.ts';

const FLAGS = {
  numbers: { def: 20_000, help: 'numbers added to the campaign by hand before the sync exists' },
  contacts: { def: 20_000, help: 'contacts of the sync\'s CSV file' },
  shared: { def: 2_000, help: 'of the hand-added numbers, how many contacts of the file hold too (with other variables)' },
} as const;
const opts = readFlags(FLAGS, { command: 'first-start', example: 'BENCH_NUMBERS=50000', width: 9 });
if (opts.shared > Math.min(opts.numbers, opts.contacts)) throw new Error('--shared must be at most --numbers and --contacts');

const TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
const counted = { list: 0, add: 0, del: 0 };
const countRequests = (app: FastifyInstance) => app.addHook('onRequest', async (req) => {
  const path = req.url.split('?')[0]!;
  if (!path.endsWith('/numbers')) return;
  if (req.method === 'GET') counted.list++;
  else if (req.method === 'POST') counted.add++;
  else if (req.method === 'DELETE') counted.del++;
});

const dir = mkdtempSync(join(tmpdir(), 'cds-first-start-bench-'));
const store = new Store(':memory:');
const server = await startServer(store, { clock: new SimulationClock(Date.parse('2026-07-01T16:00:00Z')), seed: 43 }, countRequests);
const { prefix, cleanup } = testPrefix();
try {
  const account = await openAccount(server, 'First start', TZ);
  // The simulated clock is never advanced: nothing is dialed, so every number stays deletable and the counts are the plan's alone.
  const campaign = await server.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, {
    name: 'Filled by hand', type: 'Dynamic', state: 'Active', dialer: { mode: 'Power', agents: 1, maxAttempts: 1, callingHours: ALL_DAY },
  });
  const api = `${server.base}/v1/accounts/${account.id}/campaigns/${campaign.id}/numbers`;
  const headers = { authorization: `Bearer ${account.token}`, 'content-type': 'application/json' };
  for (let i = 0; i < opts.numbers; i += 5000) {
    const body = Array.from({ length: Math.min(5000, opts.numbers - i) }, (_, j) => ({ number: phone(i + j), varValues: ['by hand'] }));
    const res = await fetch(api, { method: 'POST', headers, body: JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`add by hand: ${res.status} ${await res.text()}`);
  }
  // The file's contacts: the first `shared` hold hand-added numbers, the others numbers of their own.
  const csv = join(dir, 'contacts.csv');
  writeFileSync(csv, `id,phone,name\n${Array.from({ length: opts.contacts }, (_, i) => `c${i},${i < opts.shared ? phone(i) : phone(opts.numbers + i)},Person ${i}`).join('\n')}\n`);
  const config = parseConfig({
    redis: { url: REDIS_URL, prefix }, http: { host: '127.0.0.1', port: 0 },
    dialer: { baseUrl: server.base, accountId: account.id, apiToken: account.token, rateLimit: { perSecond: 1000, burst: 2000 }, timeZone: TZ },
    syncs: [{ id: 'first', campaignId: campaign.id, source: { type: 'csv', path: csv }, mapping: { phone: 'phone', variables: { Name: 'name' } }, schedule: { every: '1d' } }],
    compliance: { off: 'bench: ownership, not calling windows' },
    log: { level: 'error' },
  }, 'bench', {});
  const campaignNow = async () => {
    const out = new Map<string, string>();
    for (let first = 0; ; first += 5000) {
      const res = await fetch(`${api}?range=${encodeURIComponent(JSON.stringify([first, first + 4999]))}&sort=${encodeURIComponent('["number","ASC"]')}`, { headers });
      const page = await res.json() as { id: string; number: string }[];
      for (const n of page) out.set(n.number, String(n.id));
      if (page.length < 5000) return out;
    }
  };
  const before = await campaignNow();
  const log = pino({ level: 'silent' });

  counted.list = 0;
  let t0 = performance.now();
  const dry = await Daemon.start(config, { log, workers: false, http: false, schedules: false });
  const plan = await dryRun(dry.runtimes.get('first')!, () => {});
  await dry.close();
  const dryMs = performance.now() - t0;
  const dryLists = counted.list;

  counted.list = 0; counted.add = 0; counted.del = 0;
  t0 = performance.now();
  const d = await Daemon.start(config, { log });
  const want = opts.numbers + plan.add - plan.remove;
  let after = await campaignNow();
  while (after.size !== want) { await new Promise((r) => setTimeout(r, 200)); after = await campaignNow(); }
  const startMs = performance.now() - t0;
  const status = { ...counted };
  await d.close(2000);
  const changes = {
    add: [...after.keys()].filter((n) => !before.has(n)).length,
    remove: [...before.keys()].filter((n) => !after.has(n)).length,
    replace: [...after].filter(([n, id]) => before.has(n) && before.get(n) !== id).length,
  };
  const same = changes.add === plan.add && changes.remove === plan.remove && changes.replace === plan.replace;

  printFiguresHeading(120, [`First start of a CSV sync of ${opts.contacts.toLocaleString('en-US')} contacts on a campaign holding ${opts.numbers.toLocaleString('en-US')} numbers added by hand (${opts.shared.toLocaleString('en-US')} of them held by contacts too)`]);
  console.log(tableRow('', ['add', 'replace', 'delete', 'not the sync\'s', 'ms', 'GET/POST/DELETE'], 24, 16));
  console.log(tableRow('dry run', [String(plan.add), String(plan.replace), String(plan.remove), String(plan.others), String(round(dryMs, 0)), `${dryLists} / 0 / 0`], 24, 16));
  console.log(tableRow('start (the campaign)', [String(changes.add), String(changes.replace), String(changes.remove), '', String(round(startMs, 0)), `${status.list} / ${status.add} / ${status.del}`], 24, 16));
  console.log(`the start did what the dry run said: ${same ? 'yes' : 'NO'}; hand-added numbers deleted or replaced: ${changes.remove + changes.replace}`);
  if (!same || changes.remove + changes.replace) process.exitCode = 1;
} finally {
  await server.app.close();
  await cleanup();
  rmSync(dir, { recursive: true, force: true });
}
