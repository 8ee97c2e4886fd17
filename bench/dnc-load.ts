// `./dev bench dnc-load [--numbers 1000000 --changes 1000000 --batches 200]`: what a Do Not Call list copy costs
// (daemon/dnc/): one area code's full list of `numbers` distinct numbers (written to a temp dir, plain and zipped by
// Info-ZIP's zip), side by side: the raw speed of reading the file (no Redis), its load into Redis, the same from the
// zip; Redis memory of the area code's bitmap (MEMORY USAGE, and used_memory before and after); a change list of
// `changes` lines (half added, half deleted) applied on top; and the cost of a lookup of 1,000 numbers (half listed),
// `batches` times. Redis at REDIS_URL (127.0.0.1:6379), under a prefix of its own, removed at the end.
import { execFileSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { ListCopies } from '../daemon/dnc/copies.ts';
import { listSources, readNumbers } from '../daemon/dnc/files.ts';
import { DncKeys } from '../daemon/state/keys.ts';
import { REDIS_URL, testPrefix } from '../test/support/daemon.ts';
import { MB, describeMachine, loadAverage, machine, printFiguresHeading, readFlags, round, stats, tableRow } from './support.ts';

const FLAGS = {
  numbers: { def: 1_000_000, help: 'numbers of the area code\'s full list (at most 8,000,000: exchanges 200-999)' },
  changes: { def: 1_000_000, help: 'lines of the change list applied on top (half added, half deleted)' },
  batches: { def: 200, help: 'lookups of 1,000 numbers' },
} as const;
const flags = readFlags(FLAGS, { command: 'dnc-load', example: 'BENCH_NUMBERS=200000', width: 8 });
if (flags.numbers < 1000 || flags.numbers > 8_000_000) throw new Error(`--numbers must be 1,000 to 8,000,000; got ${flags.numbers}`);
const loadAtStart = loadAverage();
const AREA = '201';

/** A permutation step: numbers spread over the area code's 8,000,000 valid offsets, each once (odd step, coprime to 2^k·10^6). */
const offset = (i: number) => 2_000_000 + ((i * 2_654_435_761) % 8_000_000);

async function writeLines(path: string, count: number, line: (i: number) => string): Promise<void> {
  const out = createWriteStream(path);
  for (let start = 0; start < count; start += 50_000) {
    let text = '';
    for (let i = start; i < Math.min(count, start + 50_000); i++) text += `${line(i)}\n`;
    if (!out.write(text)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

const dir = mkdtempSync(join(tmpdir(), 'dnc-load-'));
const redis = new Redis(REDIS_URL);
const prefix = testPrefix();
try {
  const full = join(dir, `${AREA}.txt`);
  await writeLines(full, flags.numbers, (i) => `${AREA}${offset(i)}`);
  const zipped = join(dir, `${AREA}.zip`);
  execFileSync('zip', ['-q', '-j', zipped, full]);
  // The change list: deletes of listed numbers and adds of numbers past the full list's, alternating.
  const changes = join(dir, 'changes.txt');
  await writeLines(changes, flags.changes, (i) => (i % 2 ? `${AREA}${offset(flags.numbers + i)},A` : `${AREA}${offset(i % flags.numbers)},D`));

  const seconds = async (f: () => Promise<unknown>) => {
    const t = performance.now();
    await f();
    return (performance.now() - t) / 1000;
  };
  // A first read unmeasured: the parser compiled, the file in the page cache, for every row below alike.
  for (const s of await listSources(full)) await readNumbers(s, 'full', () => {});
  const rawRead = await seconds(async () => {
    for (const s of await listSources(full)) await readNumbers(s, 'full', () => {});
  });
  const rawReadZip = await seconds(async () => {
    for (const s of await listSources(zipped)) await readNumbers(s, 'full', () => {});
  });
  const memBefore = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);
  const keys = new DncKeys(prefix.prefix);
  const copies = new ListCopies(redis, keys, 'bench');
  const today = new Date().toISOString().slice(0, 10);
  const load = await seconds(() => copies.loadFull([full], today));
  const record = (await copies.copy())!;
  const bitmapBytes = Number(await redis.call('MEMORY', 'USAGE', keys.bitmap('bench', AREA, record.areaCodes[AREA]!.generation)));
  const memAfter = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);
  const other = new ListCopies(redis, keys, 'bench-zip');
  const loadZip = await seconds(() => other.loadFull([zipped], today));
  const applied = await seconds(() => copies.applyChanges(changes, today));
  const after = (await copies.copy())!;

  // Lookups: 1,000 numbers, half of them listed (the full list's, not deleted by the change list's odd lines).
  const samples: number[] = [];
  for (let b = 0; b < flags.batches; b++) {
    const phones = Array.from({ length: 1000 }, (_, k) => {
      const i = (b * 1000 + k) * 7;
      return `+1${AREA}${k % 2 ? offset(flags.numbers + 2 * (i % (flags.changes / 2)) + 1) : offset(i % flags.numbers)}`;
    });
    const t = performance.now();
    await copies.lookup(phones);
    samples.push(performance.now() - t);
  }
  const lookup = stats(samples);

  const lines = flags.numbers;
  const fileMb = statSync(full).size / MB;
  const zipMb = statSync(zipped).size / MB;
  const rule = printFiguresHeading(100, [`${lines.toLocaleString('en-US')} numbers of area code ${AREA}`, describeMachine(machine(loadAtStart))]);
  const W = 46, C = 14;
  console.log(tableRow('', ['seconds', 'lines/s', 'MB'], W, C));
  const row = (label: string, s: number, n: number, mb: number) => console.log(tableRow(label, [String(round(s, 2)), Math.round(n / s).toLocaleString('en-US'), String(round(mb, 1))], W, C));
  row('read the full list (no Redis)', rawRead, lines, fileMb);
  row('load it into Redis', load, lines, fileMb);
  row('read the zipped full list (no Redis)', rawReadZip, lines, zipMb);
  row('load the zip into Redis', loadZip, lines, zipMb);
  row(`apply a change list (${flags.changes.toLocaleString('en-US')} lines)`, applied, flags.changes, statSync(changes).size / MB);
  console.log(rule);
  console.log(`Redis memory of the area code's bitmap: ${round(bitmapBytes / MB, 2)} MB (MEMORY USAGE; 10^7 bits = 1.19 MiB; MB here are MiB); used_memory grew ${round((memAfter - memBefore) / MB, 2)} MB for the load`);
  console.log(`the copy: ${record.numbers.toLocaleString('en-US')} numbers; after the change list ${after.numbers.toLocaleString('en-US')} (added ${after.changes[0]!.added}, deleted ${after.changes[0]!.deleted}, unchanged ${after.changes[0]!.unchanged})`);
  console.log(`lookup of 1,000 numbers (2 round trips: the record, one BITFIELD_RO), ${lookup.n} batches: p50 ${lookup.p50} ms, p90 ${lookup.p90} ms, p99 ${lookup.p99} ms, max ${lookup.max} ms`);
  console.log(`whole registry by the same arithmetic: ${round(bitmapBytes * 330 / 1024 / MB, 2)} GB for 330 area codes`);
  console.log(rule);
} finally {
  await prefix.cleanup();
  redis.disconnect();
  rmSync(dir, { recursive: true, force: true });
}
