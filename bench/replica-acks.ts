// `./dev bench replica-acks [--batches 2000] [--size 100]`: what making a batch's intent marks reach a replica costs.
// Writes mirror-sized batches of pending marks (HSET × size) the way the daemon did before (one MULTI) and the way it
// does now (ReplicaAcks: a pipeline ending in WAIT 1 when the master has a replica), on the local Redis (no replica:
// no WAIT) and on a six-node Redis Cluster of its own (three masters with a replica each), and prints ms per batch.
import { parseArgs } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { pino } from 'pino';
import { ReplicaAcks } from '../daemon/state/replication.ts';
import type { RedisClient } from '../daemon/state/connection.ts';
import { startRedisCluster } from '../test/support/redis-cluster.ts';

const { values: opts } = parseArgs({ options: { batches: { type: 'string', default: '2000' }, size: { type: 'string', default: '100' } } });
const batches = Number(opts.batches);
const size = Number(opts.size);
const value = JSON.stringify({ key: 'x'.repeat(20), record: { number: '+12125550100', attempt: 1, endedAtLocal: '2026-11-02T13:00:00' }, pendingAt: 0 });

async function measure(redis: RedisClient, how: 'multi' | 'acks', key: string): Promise<number> {
  const acks = new ReplicaAcks(redis, pino({ level: 'silent' }));
  const started = performance.now();
  for (let b = 0; b < batches; b++) {
    if (how === 'multi') {
      const m = redis.multi();
      for (let i = 0; i < size; i++) m.hset(key, `${b}:${i}`, value);
      await m.exec();
    } else {
      await acks.write(key, (p) => { for (let i = 0; i < size; i++) p.hset(key, `${b}:${i}`, value); });
    }
  }
  const ms = (performance.now() - started) / batches;
  await redis.del(key);
  return ms;
}

async function compare(label: string, redis: RedisClient, key: string): Promise<void> {
  // Alternated, twice each, so a machine's drift does not favour one.
  const multi: number[] = [];
  const acks: number[] = [];
  for (let round = 0; round < 2; round++) {
    multi.push(await measure(redis, 'multi', key));
    acks.push(await measure(redis, 'acks', key));
  }
  const best = (xs: number[]) => Math.min(...xs);
  console.log(`${label.padEnd(34)} before (MULTI) ${best(multi).toFixed(3)} ms/batch   now (marks + WAIT where a replica is) ${best(acks).toFixed(3)} ms/batch   ` +
    `+${(best(acks) - best(multi)).toFixed(3)} ms a batch of ${size}`);
}

console.log(`${batches} batches of ${size} pending marks each`);
const single = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
await compare('one Redis (no replica: no WAIT)', single, `{bench-acks-${process.pid}}:pending`);
single.disconnect();
const cluster = await startRedisCluster();
const client = new Cluster(cluster.urls.map((u) => ({ host: '127.0.0.1', port: Number(new URL(u).port) })));
try {
  await client.ping();
  await compare('Redis Cluster (WAIT 1 on a replica)', client, `{bench-acks-${process.pid}}:pending`);
} finally {
  client.disconnect();
  await cluster.stop();
}
