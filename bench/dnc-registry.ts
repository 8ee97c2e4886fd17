// `./dev bench dnc-registry [--area-codes 330 --numbers 250000000 --changes 1000000 --batches 200 --zip --whole --cluster]`:
// the Do Not Call registry at its own size. Writes a registry of `numbers` numbers over `area-codes` area codes with the
// registry stand-in (crm-stand-ins/dnc-registry.ts; a file per area code, or --whole one file, --zip deflated) into a
// temp folder, and prints side by side: the raw speed of reading the files (daemon/dnc/files.ts, no Redis), their load
// into Redis (ListCopies.loadFull), Redis memory (used_memory before and after) against the bitmaps' arithmetic, a
// change list of `changes` lines applied, and lookups of 1,000 numbers spread over every area code (half listed;
// round trips counted at the client, commands by INFO commandstats). Redis is a redis-server of the bench's own on a
// free port, without persistence (--cluster: a Redis Cluster of 3 masters, and how many bitmaps landed on each).
import { once } from 'node:events';
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { freemem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Cluster, Redis } from 'ioredis';
import {
  NUMBERS_PER_AREA_CODE, densityFor, listedNumbers, registryAreaCodes, unlistedNumbers, writeChangeList, writeRegistry,
} from '../crm-stand-ins/dnc-registry.ts';
import { BITMAP_BYTES, ListCopies } from '../daemon/dnc/copies.ts';
import { listSources, readNumbers } from '../daemon/dnc/files.ts';
import { connectRedis, type RedisClient } from '../daemon/state/connection.ts';
import { DncKeys } from '../daemon/state/keys.ts';
import { freePort, startRedisServer } from '../test/support/daemon.ts';
import { startRedisCluster, type RedisClusterUnderTest } from '../test/support/redis-cluster.ts';
import { describeMachine, loadAverage, machine, printFiguresHeading, readFlags, round, stats, tableRow } from './support.ts';

const FLAGS = {
  'area-codes': { def: 330, help: 'area codes of the registry (about 330 are in service in the US; at most 704)' },
  numbers: { def: 250_000_000, help: 'numbers of the registry in all, about (250,000,000: the whole registry)' },
  changes: { def: 1_000_000, help: 'lines of the change list applied on top, about' },
  batches: { def: 200, help: 'lookups of 1,000 numbers (half listed) spread over every area code' },
  seed: { def: 'bench', help: 'the registry\'s seed (the same seed writes the same files)' },
  zip: { def: false, help: 'deflated zips instead of plain text' },
  whole: { def: false, help: 'one file of the whole registry instead of one per area code' },
  cluster: { def: false, help: 'a Redis Cluster of 3 masters instead of one redis-server' },
} as const;
const flags = readFlags(FLAGS, { command: 'dnc-registry', example: 'BENCH_NUMBERS=20000000', width: 10 });
const loadAtStart = loadAverage();

/** Prints why the bench cannot run, and stops it (nothing was started yet). */
function refuse(message: string): never {
  console.error(`dnc-registry: ${message}`);
  process.exit(2);
}
const areaCodeCount = flags['area-codes'];
if (areaCodeCount < 1 || areaCodeCount > 704) refuse(`--area-codes must be 1 to 704; got ${areaCodeCount}`);
const capacity = areaCodeCount * NUMBERS_PER_AREA_CODE;
if (flags.numbers < 1 || flags.numbers > capacity) refuse(`--numbers must be 1 to ${capacity.toLocaleString('en-US')} for ${areaCodeCount} area codes (8,000,000 each); got ${flags.numbers}`);
if (flags.changes > capacity) refuse(`--changes must be at most ${capacity.toLocaleString('en-US')} for ${areaCodeCount} area codes; got ${flags.changes}`);
if (flags.batches < 1) refuse('--batches must be at least 1');

const MB = 1_000_000; // decimal here: a bitmap is 10^7 bits, 1.25 MB
const GB = 1e9;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

// Room for the files (plain: 11 bytes a line; deflated: about a quarter of that, counted as 0.4) and for Redis (every
// bitmap twice: a change list writes each area code's anew while the replaced one lapses a minute later).
const fileBytes = (flags.numbers * 11 + flags.changes * 13) * (flags.zip ? 0.4 : 1);
const base = tmpdir();
const freeDisk = (() => { const s = statfsSync(base); return s.bavail * s.bsize; })();
if (freeDisk < fileBytes * 1.1 + 0.5 * GB) {
  refuse(`${base} has ${round(freeDisk / GB, 1)} GB free; the registry's files need about ${round(fileBytes / GB, 1)} GB (and 0.5 GB to spare): ` +
    'set TMPDIR to a folder with more room, or write fewer numbers (--numbers)');
}
const redisBytes = 2 * areaCodeCount * BITMAP_BYTES;
// A folder in memory (tmpfs, as /dev/shm) holds the files in the memory Redis needs too.
const inMemory = statfsSync(base).type === 0x01021994;
if (freemem() < redisBytes + (inMemory ? fileBytes : 0) + 0.5 * GB) {
  refuse(`this machine has ${round(freemem() / GB, 1)} GB of memory available; Redis needs about ${round(redisBytes / GB, 1)} GB for ${areaCodeCount} area codes ` +
    `(every bitmap twice while a change list replaces them)${inMemory ? `, ${base} is in memory (tmpfs) and the files need ${round(fileBytes / GB, 1)} GB there,` : ''} ` +
    `and 0.5 GB to spare: give fewer area codes (--area-codes)${inMemory ? ', fewer numbers (--numbers) or a TMPDIR on disk' : ''}`);
}

const dir = mkdtempSync(join(base, 'dnc-registry-'));
let cluster: RedisClusterUnderTest | null = null;
let server: import('node:child_process').ChildProcess | null = null;
let redis: RedisClient | null = null;
let cleaned = false;
async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  redis?.disconnect();
  if (server) { const exited = new Promise((r) => server!.once('exit', r)); server.kill('SIGKILL'); await exited; }
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\ndnc-registry: ${signal}: stopping Redis and deleting ${dir}`);
    void cleanup().finally(() => process.exit(130));
  });
}

const seconds = async <T>(f: () => Promise<T>): Promise<[number, T]> => {
  const t = performance.now();
  const r = await f();
  return [(performance.now() - t) / 1000, r];
};

/** A progress line on stderr every tenth of `total`. */
function progress(what: string, total: number): (n: number) => void {
  let next = 0.1;
  return (n) => {
    if (n >= next * total && next < 1) {
      process.stderr.write(`dnc-registry: ${what}: ${Math.round(next * 100)}%\n`);
      while (n >= next * total) next += 0.1;
    }
  };
}

/** The masters (one server, or each master of the cluster), each by its port. */
function masters(r: RedisClient): Redis[] {
  return r instanceof Cluster ? r.nodes('master') : [r];
}
const usedMemory = async (node: Redis) => Number(/used_memory:(\d+)/.exec(await node.info('memory'))![1]);
const totalUsedMemory = async (r: RedisClient) => (await Promise.all(masters(r).map(usedMemory))).reduce((a, b) => a + b, 0);
/** Calls of a command so far, summed over the masters (INFO commandstats). */
async function commandCalls(r: RedisClient, command: string): Promise<number> {
  const counts = await Promise.all(masters(r).map(async (n) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await n.info('commandstats'))?.[1] ?? 0)));
  return counts.reduce((a, b) => a + b, 0);
}

/**
 * The client a lookup is given, counting its round trips: a command sent once a reply has come back since the last
 * round began starts a new round (commands sent together, before any reply, are one).
 */
function countingRoundTrips(r: RedisClient): { client: RedisClient; rounds(): number; reset(): void } {
  let rounds = 0;
  let replied = true;
  const client = new Proxy(r, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!(result instanceof Promise)) return result;
        if (replied) { rounds++; replied = false; }
        return result.finally(() => { replied = true; });
      };
    },
  });
  return { client, rounds: () => rounds, reset: () => { rounds = 0; replied = true; } };
}

try {
  const areaCodes = registryAreaCodes(areaCodeCount);
  const density = densityFor(flags.numbers, areaCodeCount);
  process.stderr.write(`dnc-registry: writing about ${fmt(flags.numbers)} numbers of ${areaCodeCount} area codes (${round(fileBytes / GB, 2)} GB) to ${dir}\n`);
  const [writeSeconds, registry] = await seconds(() => writeRegistry({
    dir, areaCodes, density, seed: flags.seed, files: flags.whole ? 'whole' : 'per-area-code',
    ...(flags.zip ? { zip: 'deflated' as const } : {}), progress: progress('writing the registry', flags.numbers),
  }));
  const [changesWriteSeconds, changes] = await seconds(() => writeChangeList({
    dir, registry: registry.spec, seed: `${flags.seed}-changes`, lines: flags.changes, ...(flags.zip ? { zip: 'deflated' as const } : {}),
  }));

  // The raw speed of reading: the reader alone, its batches thrown away. The first file once unmeasured (the parser
  // compiled); the files were just written, so they are in the page cache for this read and the load alike.
  for (const s of await listSources(registry.files[0]!)) await readNumbers(s, 'full', () => {});
  process.stderr.write('dnc-registry: reading the files (no Redis)\n');
  const [readSeconds, readLines] = await seconds(async () => {
    let n = 0;
    for (const f of registry.files) for (const s of await listSources(f)) n += await readNumbers(s, 'full', () => {});
    return n;
  });
  if (readLines !== registry.lines) throw new Error(`the reader read ${readLines} lines, the stand-in wrote ${registry.lines}`);
  const [readChangesSeconds] = await seconds(async () => {
    for (const s of await listSources(changes.file)) await readNumbers(s, 'changes', () => {});
  });

  if (flags.cluster) {
    process.stderr.write('dnc-registry: starting a Redis Cluster of 3 masters\n');
    cluster = await startRedisCluster({ masters: 3, replicas: 0, persistence: 'none' });
    redis = connectRedis({ cluster: cluster.urls });
    if (redis.status !== 'ready') await once(redis, 'ready'); // its masters known
  } else {
    const port = await freePort();
    server = await startRedisServer(port, dir, 'none');
    redis = connectRedis({ url: `redis://127.0.0.1:${port}` });
  }
  const keys = new DncKeys('bench');
  const copies = new ListCopies(redis, keys, 'registry');
  const today = new Date().toISOString().slice(0, 10);
  const memoryBefore = await totalUsedMemory(redis);
  const perMasterBefore = await Promise.all(masters(redis).map(usedMemory));
  process.stderr.write('dnc-registry: loading the registry into Redis\n');
  const [loadSeconds, record] = await seconds(() => copies.loadFull(registry.files, today));
  if (record.numbers !== registry.lines) throw new Error(`the copy holds ${record.numbers} numbers, the stand-in wrote ${registry.lines}`);
  const memoryLoaded = await totalUsedMemory(redis);
  const perMasterLoaded = await Promise.all(masters(redis).map(usedMemory));
  const oneBitmap = Number(await redis.call('MEMORY', 'USAGE', keys.bitmap('registry', areaCodes[0]!, record.generation)));
  // Which master holds each area code's bitmap (one server: all of them).
  const bitmapsOn = new Map<string, number>();
  if (redis instanceof Cluster) {
    const slots = await redis.cluster('SLOTS') as unknown as [number, number, [string, number]][];
    for (const a of areaCodes) {
      const slot = await redis.cluster('KEYSLOT', keys.bitmap('registry', a, record.generation)) as number;
      const master = slots.find(([lo, hi]) => slot >= lo && slot <= hi)![2];
      bitmapsOn.set(`${master[0]}:${master[1]}`, (bitmapsOn.get(`${master[0]}:${master[1]}`) ?? 0) + 1);
    }
  }

  process.stderr.write('dnc-registry: applying the change list\n');
  const [applySeconds, changed] = await seconds(() => copies.applyChanges(changes.file, today));
  const applied = changed.changes[0]!;
  if (applied.added !== changes.added || applied.deleted !== changes.deleted) {
    throw new Error(`the copy added ${applied.added} and deleted ${applied.deleted}; the change list adds ${changes.added} and deletes ${changes.deleted}`);
  }
  const memoryChanged = await totalUsedMemory(redis);

  // Lookups: each batch 500 listed and 500 unlisted numbers (after the change list), over every area code.
  const half = 500;
  const listed = listedNumbers(registry.spec, half * (flags.batches + 5), { changes: [changes.spec], start: 1 });
  const unlisted = unlistedNumbers(registry.spec, half * (flags.batches + 5), { changes: [changes.spec], start: 1 });
  const batch = (b: number) => Array.from({ length: 2 * half }, (_, k) => (k % 2 ? unlisted : listed)[b * half + (k >> 1)]!);
  const counted = countingRoundTrips(redis);
  const looking = new ListCopies(counted.client, keys, 'registry');
  for (let b = flags.batches; b < flags.batches + 5; b++) await looking.lookup(batch(b)); // warm-up, unmeasured
  const getsBefore = await commandCalls(redis, 'get');
  const bitfieldsBefore = await commandCalls(redis, 'bitfield_ro');
  const samples: number[] = [];
  const rounds = new Set<number>();
  let wrong = 0;
  let areaCodesPerBatch = 0;
  for (let b = 0; b < flags.batches; b++) {
    const phones = batch(b);
    counted.reset();
    const t = performance.now();
    const answers = await looking.lookup(phones);
    samples.push(performance.now() - t);
    rounds.add(counted.rounds());
    answers.forEach((a, k) => { if (a.status !== (k % 2 ? 'not-listed' : 'listed')) wrong++; });
    areaCodesPerBatch += new Set(phones.map((p) => p.slice(2, 5))).size;
  }
  const gets = (await commandCalls(redis, 'get')) - getsBefore;
  const bitfields = (await commandCalls(redis, 'bitfield_ro')) - bitfieldsBefore;
  const lookup = stats(samples);

  const fileMb = registry.bytes / MB;
  const rule = printFiguresHeading(110, [
    `${fmt(registry.lines)} numbers of ${areaCodeCount} area codes${flags.whole ? ', one file' : ', a file each'}${flags.zip ? ', zipped (deflated)' : ''}`,
    flags.cluster ? 'Redis Cluster of 3 masters' : 'one redis-server', describeMachine(machine(loadAtStart)),
  ]);
  const W = 52, C = 14;
  console.log(tableRow('', ['seconds', 'lines/s', 'MB'], W, C));
  const row = (label: string, s: number, n: number, mb: number) => console.log(tableRow(label, [String(round(s, 2)), fmt(n / s), String(round(mb, 1))], W, C));
  row('write the files (the registry stand-in)', writeSeconds, registry.lines, fileMb);
  row('read the full lists (files.ts, no Redis)', readSeconds, registry.lines, fileMb);
  row('load them into Redis (ListCopies.loadFull)', loadSeconds, registry.lines, fileMb);
  row(`write a change list (${fmt(changes.lines)} lines)`, changesWriteSeconds, changes.lines, changes.bytes / MB);
  row('read it (files.ts, no Redis)', readChangesSeconds, changes.lines, changes.bytes / MB);
  row('apply it (ListCopies.applyChanges)', applySeconds, changes.lines, changes.bytes / MB);
  console.log(rule);
  const arithmetic = areaCodeCount * BITMAP_BYTES;
  console.log(`load ${round(loadSeconds / readSeconds, 2)}× the raw read's time; change list: added ${fmt(applied.added!)}, deleted ${fmt(applied.deleted!)}, ` +
    `${round(applySeconds / readChangesSeconds, 1)}× its raw read's time`);
  console.log(`Redis memory (MB = 10^6 bytes): used_memory grew ${round((memoryLoaded - memoryBefore) / MB, 1)} MB for the load; the bitmaps' arithmetic ` +
    `${areaCodeCount} × 1.25 MB = ${round(arithmetic / MB, 1)} MB (${round((memoryLoaded - memoryBefore) / arithmetic, 3)}×); ` +
    `MEMORY USAGE of one bitmap ${round(oneBitmap / MB, 3)} MB`);
  console.log(`  right after the change list: used_memory ${round((memoryChanged - memoryBefore) / MB, 1)} MB above the start ` +
    `(the ${Object.keys(changes.perAreaCode).filter((a) => changes.perAreaCode[a]).length} area codes it touched written anew; the replaced bitmaps lapse a minute later)`);
  console.log(`lookup of 1,000 numbers (half listed) over ${round(areaCodesPerBatch / flags.batches, 0)} area codes, ${lookup.n} batches: ` +
    `p50 ${lookup.p50} ms, p95 ${lookup.p95} ms, p99 ${lookup.p99} ms, max ${lookup.max} ms`);
  console.log(`  round trips a batch (counted at the client): ${[...rounds].sort().join(', ')}; commands a batch (INFO commandstats): ` +
    `${round(gets / flags.batches, 2)} GET + ${round(bitfields / flags.batches, 1)} BITFIELD_RO; answers checked against the stand-in: ` +
    `${fmt(flags.batches * 2 * half)}, ${wrong} wrong`);
  if (flags.cluster) {
    const nodes = masters(redis);
    const perMasterChanged = await Promise.all(nodes.map(usedMemory));
    console.log('bitmaps per master (by the slot of each area code\'s key), and its used_memory growth for the load:');
    nodes.forEach((n, i) => {
      const where = `${n.options.host}:${n.options.port}`;
      console.log(`  ${where.padEnd(18)} ${String(bitmapsOn.get(where) ?? 0).padStart(4)} bitmaps  ${round((perMasterLoaded[i]! - perMasterBefore[i]!) / MB, 1)} MB ` +
        `(${round((perMasterChanged[i]! - perMasterBefore[i]!) / MB, 1)} MB right after the change list)`);
    });
  }
  console.log(rule);
  if (wrong) process.exitCode = 1;
} finally {
  await cleanup();
}
