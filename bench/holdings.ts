// The holdings scenario of `./dev bench daemon` (issue 36 §1, §2): what the calling window's check costs against a
// campaign the daemon filled with N numbers, when nothing changed (a count), when another key added numbers (a pause
// and a read of the callable numbers) and when Redis lost the judgement (likewise). Prints the requests the reference
// server answered (counted by its own hook) and milliseconds per check, over loopback.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { Daemon } from '../daemon/app.ts';
import { parseConfig } from '../daemon/config.ts';
import { SimulationClock } from '../server/clock.ts';
import { Store } from '../server/store/store.ts';
import { REDIS_URL, testPrefix } from '../test/support/daemon.ts';
import { openAccount, printFiguresHeading, round, startServer, tableRow } from './support.ts';

const TZ = 'America/New_York';
/** Wednesday 1 July 2026, 12:00 in New York: the window is open. */
const START = '2026-07-01T16:00:00Z';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };

/** Requests the reference server answered: number-list reads and state changes (the window's only requests). */
const counted = { list: 0, state: 0 };
const countRequests = (app: FastifyInstance) => app.addHook('onRequest', async (req) => {
  const path = req.url.split('?')[0]!;
  if (req.method === 'GET' && path.endsWith('/numbers')) counted.list++;
  else if (req.method === 'PUT' && path.endsWith('/state')) counted.state++;
});

interface Figure { label: string; list: number; state: number; ms: number }

async function measure(label: string, check: () => Promise<unknown>, times = 1): Promise<Figure> {
  counted.list = 0; counted.state = 0;
  const t0 = performance.now();
  for (let i = 0; i < times; i++) await check();
  return { label, list: counted.list / times, state: counted.state / times, ms: (performance.now() - t0) / times };
}

async function once(n: number, foreign: number): Promise<Figure[]> {
  const dir = mkdtempSync(join(tmpdir(), 'cds-holdings-bench-'));
  const store = new Store(':memory:');
  const server = await startServer(store, { clock: new SimulationClock(Date.parse(START)), seed: 36 }, countRequests);
  const { prefix, cleanup } = testPrefix();
  const account = await openAccount(server, 'Holdings', TZ);
  const campaign = await server.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, {
    name: 'Governed', type: 'Dynamic', state: 'Active', dialer: { mode: 'Power', agents: 1, maxAttempts: 3, callingHours: ALL_DAY },
  });
  const csv = join(dir, 'numbers.csv');
  writeFileSync(csv, `id,phone\n${Array.from({ length: n }, (_, i) => `c${i},+1212${String(2_000_000 + i)}`).join('\n')}\n`);
  const config = parseConfig({
    redis: { url: REDIS_URL, prefix }, http: { host: '127.0.0.1', port: 0 },
    dialer: { baseUrl: server.base, accountId: account.id, apiToken: account.token, rateLimit: { perSecond: 1000, burst: 2000 }, timeZone: TZ },
    syncs: [{ id: 'governed', campaignId: campaign.id, source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, schedule: { every: '1d' }, compliance: {} }],
    log: { level: 'error' },
  }, 'bench', {});
  const now = Date.parse(START);
  const d = await Daemon.start(config, { log: pino({ level: 'silent' }), now: () => now });
  try {
    const rt = d.runtimes.get('governed')!;
    while ((await d.redis.hlen(rt.state.keys.have)) < n) await new Promise((r) => setTimeout(r, 100));
    const check = () => d.enforceWindow(rt, 'bench', true);
    const figures = [await measure('nothing changed (a count)', check, 50)];
    const res = await fetch(`${server.base}/v1/accounts/${account.id}/campaigns/${campaign.id}/numbers`, {
      method: 'POST', headers: { authorization: `Bearer ${account.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(Array.from({ length: foreign }, (_, i) => ({ number: `+447912${String(100_000 + i)}` }))),
    });
    if (res.status >= 300) throw new Error(`add by hand: ${res.status} ${await res.text()}`);
    figures.push(await measure(`${foreign} added by another key`, check));
    figures.push(await measure('the next check', check));
    await d.redis.del(rt.state.keys.window.meta, rt.state.keys.window.held, rt.state.keys.window.foreign);
    figures.push(await measure('Redis lost the judgement', check));
    return figures;
  } finally {
    await d.close(2000);
    await server.app.close();
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runHoldings(o: { numbers: number[]; foreign: number }): Promise<void> {
  const rows: string[] = [];
  for (const n of o.numbers) {
    for (const f of await once(n, o.foreign)) {
      rows.push(tableRow(`${n.toLocaleString('en-US')} numbers: ${f.label}`, [String(round(f.list, 2)), String(round(f.state, 2)), String(round(f.ms, 1))], 52, 14));
    }
  }
  printFiguresHeading(96, [`Calling window checks: dialer requests and time per check, by what changed (the dialer's default pageSize, ${parseConfig({ dialer: { baseUrl: 'http://x', accountId: 'a', apiToken: 't' }, syncs: [{ id: 'x', campaignId: 'c', source: { type: 'csv', path: 'x.csv' }, mapping: { phone: 'p' } }] }, 'x', {}).dialer.pageSize})`]);
  console.log(tableRow('', ['list requests', 'state changes', 'ms / check'], 52, 14));
  for (const r of rows) console.log(r);
}
