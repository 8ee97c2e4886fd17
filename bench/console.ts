// `./dev bench console [--campaigns 200 --calls 500000]`: what the web console's 2-second refresh costs the server.
//
// Starts the server in this process (SQLite in memory, manual clock), creates an account with `--campaigns`
// campaigns, gives one of them `--numbers` numbers (console add) and `--calls` call-detail records (written straight
// into the store, as the dialer writes them), then times over HTTP (one keep-alive connection, `--requests` each)
// what the page asks for on each refresh: the campaigns with their counters (first request: the call tallies are
// counted from scratch; then warm; then after `--more` new calls), the call log's newest 50 (and, to compare, the v1
// report's 50 newest, which counts the campaign's records for its total) and a page of 50 numbers.
// Also the page itself and its two files. Results go to bench/results/console.json.
import { NUMBER_STATUSES } from '../api/enums.ts';
import { SimulationClock } from '../server/clock.ts';
import { Store } from '../server/store/store.ts';
import {
  describeMachine, loadAverage, machine, phone, printFiguresHeading, readFlags, round, startServer, stats, tableRow, writeResults,
} from './support.ts';

const FLAGS = {
  campaigns: { def: 200, help: 'campaigns in the account (the account page lists them all with counters)' },
  calls: { def: 500_000, help: 'call-detail records of the busiest campaign' },
  more: { def: 10_000, help: 'calls added before the "after new calls" refresh' },
  numbers: { def: 10_000, help: 'numbers of the busiest campaign' },
  requests: { def: 200, help: 'requests timed per figure' },
};
const flags = readFlags(FLAGS, { command: 'console', example: 'BENCH_CALLS=100000', width: 10 });
const startLoad = loadAverage();

const store = new Store(':memory:');
const clock = new SimulationClock(Date.parse('2026-01-05T09:00:00Z'));
const server = await startServer(store, { clock, clockMode: 'manual' });
const auth = { authorization: `Bearer ${server.consoleToken}` };

const account = await server.consolePost<{ id: string }>('/accounts', { name: 'Bench', timezone: 'UTC' });
let busy = { id: '' };
for (let i = 0; i < flags.campaigns; i++) {
  const c = await server.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, { name: `Campaign ${i}`, type: 'Dynamic' });
  if (i === 0) busy = c;
}
for (let i = 0; i < flags.numbers; i += 10_000) {
  const batch = Array.from({ length: Math.min(10_000, flags.numbers - i) }, (_, j) => ({ number: phone(i + j) }));
  await server.consolePost(`/accounts/${account.id}/campaigns/${busy.id}/numbers`, batch);
}
const busyPk = store.campaigns.byId(store.accounts.byId(account.id)!.pk, busy.id)!.pk;
const writeCalls = (from: number, n: number) => {
  for (let done = 0; done < n; done += 10_000) {
    store.db.transaction(() => {
      for (let i = done; i < Math.min(n, done + 10_000); i++) {
        const k = from + i;
        const answered = k % 3 === 0;
        const at = `2026-01-05T${String(9 + Math.floor(k / 3_600_000) % 11).padStart(2, '0')}:${String(Math.floor(k / 60_000) % 60).padStart(2, '0')}:${String(Math.floor(k / 1000) % 60).padStart(2, '0')}`;
        store.callDetails.insert(busyPk, {
          numberId: 1 + (k % Math.max(1, flags.numbers)), number: phone(k % Math.max(1, flags.numbers)), attempt: 1, startedAtLocal: at,
          answeredAtLocal: answered ? at : null, endedAtLocal: at, ringResult: answered ? 'Answer' : 'NoAnswer', answerType: answered ? 'Human' : null,
          sipResponseCode: answered ? 200 : 480, endType: answered ? 'HangUp' : null, queueId: null,
          outcome: answered ? 'Success' : 'FailureWithRetryPending',
        });
      }
    });
  }
};
const seeding = performance.now();
writeCalls(0, flags.calls);
console.log(`seeded ${flags.campaigns} campaigns, ${flags.numbers} numbers and ${flags.calls} calls in ${round((performance.now() - seeding) / 1000)} s`);

const q = (range: number[], extra: Record<string, unknown> = {}) =>
  new URLSearchParams({ range: JSON.stringify(range), ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, JSON.stringify(v)])) }).toString();
const urls = {
  campaigns: `${server.base}/console/accounts/${account.id}/campaigns?${q([0, 999])}`,
  callLog: `${server.base}/console/accounts/${account.id}/campaigns/${busy.id}/callLog`,
  callReport: `${server.base}/console/v1/accounts/${account.id}/campaigns/${busy.id}/reports/callDetails?${q([0, 49], { sort: ['startedAtLocal', 'DESC'] })}`,
  numbers: `${server.base}/console/v1/accounts/${account.id}/campaigns/${busy.id}/numbers?${q([0, 49], { filter: { status: NUMBER_STATUSES[0] } })}`,
};
/** One timed GET, read in full; throws on anything but 200. */
const timed = async (url: string, headers: Record<string, string> = auth): Promise<{ ms: number; bytes: number; body: string }> => {
  const t = performance.now();
  const res = await fetch(url, { headers });
  const body = await res.text();
  const ms = performance.now() - t;
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${body.slice(0, 500)}`);
  return { ms, bytes: Buffer.byteLength(body), body };
};
const series = async (url: string) => {
  const ms: number[] = [];
  for (let i = 0; i < flags.requests; i++) ms.push((await timed(url)).ms);
  return stats(ms);
};

const cold = await timed(urls.campaigns);
const counters = (JSON.parse(cold.body) as { id: string; counters: { calls: number; answerRate: number } }[]).find((c) => c.id === busy.id)!.counters;
if (counters.calls !== flags.calls) throw new Error(`the counters say ${counters.calls} calls, not ${flags.calls}`);
const warm = await series(urls.campaigns);
writeCalls(flags.calls, flags.more);
const afterMore = await timed(urls.campaigns);
const callLog = await series(urls.callLog);
const callReport = await series(urls.callReport);
const numbers = await series(urls.numbers);
const page = await timed(`${server.base}/console`, {});
const js = await timed(`${server.base}/console/assets/console.js`, {});
const css = await timed(`${server.base}/console/assets/console.css`, {});
await server.app.close();
await store.close();

const m = machine(startLoad);
const line = printFiguresHeading(78, [describeMachine(m), `${flags.campaigns} campaigns`, `${flags.calls} calls`, `${flags.requests} requests a figure`]);
const W = 46;
const ms = (x: number) => `${round(x, 2)} ms`;
console.log(tableRow('', ['p50', 'p99', 'max'], W, 10));
console.log(tableRow(`campaigns + counters, ${flags.campaigns} rows (warm)`, [ms(warm.p50), ms(warm.p99), ms(warm.max)], W, 10));
console.log(tableRow('call log, newest 50', [ms(callLog.p50), ms(callLog.p99), ms(callLog.max)], W, 10));
console.log(tableRow('(v1 report, same 50 by start time, counted)', [ms(callReport.p50), ms(callReport.p99), ms(callReport.max)], W, 10));
console.log(tableRow('numbers page of 50, status filter', [ms(numbers.p50), ms(numbers.p99), ms(numbers.max)], W, 10));
console.log(`campaigns + counters, first request (tallies ${flags.calls} calls): ${ms(cold.ms)}; after ${flags.more} new calls: ${ms(afterMore.ms)}`);
console.log(`answer rate read back: ${round(counters.answerRate * 100)}%; campaigns answer ${round(cold.bytes / 1024)} KB`);
console.log(`page: HTML ${page.bytes} B, console.js ${js.bytes} B, console.css ${css.bytes} B (no other request)`);
console.log(line);
writeResults('console', {
  machine: m, flags,
  campaignsColdMs: round(cold.ms, 2), campaignsAfterMoreMs: round(afterMore.ms, 2), campaignsWarm: warm, callLog, callReport, numbers,
  bytes: { html: page.bytes, js: js.bytes, css: css.bytes, campaigns: cold.bytes },
});
