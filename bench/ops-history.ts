// `./dev bench ops-history [--syncs 10] [--batches-per-minute 60]`: what the operations page's history costs in Redis.
// For `--syncs` syncs, the last 26 hours of work are written as the workers write them (every series, in
// `--batches-per-minute` batches a minute, each flushed in one pipeline every 5 simulated seconds) against the real
// Redis (REDIS_URL) under a fresh prefix. Figures: keys and bytes (MEMORY USAGE) per sync once a day is written
// (expired blocks gone: what stays is what the charts show), time per flush, and time to read a chart's view.
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { History, type Budget, type Counter } from '../daemon/history/history.ts';
import { DaemonKeys } from '../daemon/state/keys.ts';
import { REDIS_URL, testPrefix } from '../test/support/daemon.ts';

const { values } = parseArgs({ options: { syncs: { type: 'string', default: '10' }, 'batches-per-minute': { type: 'string', default: '60' } } });
const syncs = Number(values.syncs);
const perMinute = Number(values['batches-per-minute']);
if (!(syncs >= 1 && syncs <= 1000) || !(perMinute >= 1 && perMinute <= 10_000)) {
  console.error('usage: ./dev bench ops-history [--syncs 1..1000] [--batches-per-minute 1..10000]');
  process.exit(2);
}

const redis = new Redis(REDIS_URL);
const { prefix, cleanup } = testPrefix();
const history = new History(redis, new DaemonKeys(prefix), pino({ level: 'silent' }));
const budgets: Budget[] = ['dialer', 'hubspot', 'hubspot-search'];

try {
  const now = Date.now();
  const start = now - 26 * 3_600_000;
  const flushTimes: number[] = [];
  let batches = 0;
  for (let t = start; t < now; t += 5000) {
    for (let s = 0; s < syncs; s++) {
      const sync = `sync-${s}`;
      for (let b = 0; b < perMinute / 12; b++) {
        const counters: Partial<Record<Counter, number>> = { added: 100, deleted: 3, rejected: 1, activities: 40 };
        for (const budget of budgets) counters[`req:${budget}`] = 1;
        history.add(sync, counters, { parked: batches % 50 }, t);
        batches++;
      }
      history.add(sync, { lagMs: 12_000, lagRuns: 1 }, { mirrorParked: 2 }, t);
    }
    const began = performance.now();
    await history.flush();
    flushTimes.push(performance.now() - began);
  }
  let keys = 0, bytes = 0;
  const encodings = new Map<string, number>();
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    for (const k of found) {
      keys++;
      bytes += Number(await redis.memory('USAGE', k));
      const e = String(await redis.object('ENCODING', k));
      encodings.set(e, (encodings.get(e) ?? 0) + 1);
    }
  } while (cursor !== '0');
  const readTimes: number[] = [];
  for (const view of ['hour', 'day'] as const) {
    for (let i = 0; i < 20; i++) {
      const began = performance.now();
      await history.read('sync-0', view);
      readTimes.push(performance.now() - began);
    }
  }
  flushTimes.sort((a, b) => a - b);
  readTimes.sort((a, b) => a - b);
  const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))]!.toFixed(2);
  console.log(`ops history: ${syncs} syncs, ${batches} batches over 26 h (${perMinute}/min/sync), every series`);
  console.log(`  Redis after a day: ${keys} keys, ${bytes} bytes MEMORY USAGE (${(keys / syncs).toFixed(1)} keys, ${Math.round(bytes / syncs)} bytes per sync); encodings: ${[...encodings].map(([e, n]) => `${e} ${n}`).join(', ')}`);
  console.log(`  flush (one pipeline, all syncs, every 5 s): p50 ${pct(flushTimes, 0.5)} ms, p99 ${pct(flushTimes, 0.99)} ms`);
  console.log(`  read one sync's view (hour or day): p50 ${pct(readTimes, 0.5)} ms, p99 ${pct(readTimes, 0.99)} ms`);
} finally {
  await history.close();
  await cleanup();
  redis.disconnect();
}
