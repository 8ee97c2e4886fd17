// `node bench/phone.ts [--numbers 20000 --rounds 7]`: µs per phone number, libphonenumber-js alone (old) vs compiled matchers first (new).
//
// Sets: valid NANP numbers as the server benchmark uploads them; valid numbers of every calling code (drawn
// from the metadata's patterns, as test/server/phone-fast.test.ts does); and a realistic CSV mix (mostly NANP
// in assorted formats, some international, ~5% rejected). Figures are this thread's CPU time
// (process.threadCpuUsage), which other processes on a shared machine disturb far less than wall time: the best
// of --rounds passes, with the median beside it. Last, PhoneValidator on 5,000-number batches, as a CSV upload
// sends them: the event loop's CPU time and the wall time per number.
import { checkPhoneNumber, checkPhoneNumberSlowly, type PhoneCheck } from '../server/phone-numbers.ts';
import { PhoneValidator } from '../server/phone-validator.ts';
import { mulberry32 as seeded } from '../crm-stand-ins/contacts.ts';
import { phoneSamples } from '../test/support/phone-samples.ts';
import { loadAverage, phone, readFlags, round } from './support.ts';

const FLAGS = {
  numbers: { def: 20_000, help: 'numbers per set' },
  rounds: { def: 7, help: 'timed passes per set and path (the best and the median are printed)' },
} as const;
const { numbers, rounds } = readFlags(FLAGS, { command: 'phone', example: 'BENCH_NUMBERS=50000', width: 10 });

const ok = (c: PhoneCheck) => c.ok;

function sets() {
  const random = seeded(11);
  const usValid = Array.from({ length: numbers }, (_, i) => phone(i));
  // Oversample: about two thirds of the generated inputs are valid.
  const generated = phoneSamples(Math.ceil(numbers * 1.7), 7);
  const verdicts = generated.map(checkPhoneNumberSlowly);
  const everyCodeValid = generated.filter((_, i) => ok(verdicts[i]!)).slice(0, numbers);
  const everyCodeRejected = generated.filter((_, i) => !ok(verdicts[i]!));
  const formats = [
    (d: string) => `+${d}`,
    (d: string) => d,
    (d: string) => `+1 (${d.slice(1, 4)}) ${d.slice(4, 7)}-${d.slice(7)}`,
    (d: string) => `${d.slice(1, 4)}-${d.slice(4, 7)}-${d.slice(7)}`.replace(/^/, '1-'),
    (d: string) => `001${d.slice(1)}`,
  ];
  const mix = Array.from({ length: numbers }, (_, i) => {
    const r = random();
    if (r < 0.8) return formats[Math.floor(random() * formats.length)]!(phone(numbers + i).slice(1));
    if (r < 0.95) return everyCodeValid[i % everyCodeValid.length]!;
    return everyCodeRejected[i % everyCodeRejected.length]!;
  });
  return { 'valid NANP (bench numbers)': usValid, 'valid, every calling code': everyCodeValid, 'realistic mix (~5% rejected)': mix };
}

function time(check: (raw: string) => PhoneCheck, raws: string[]): { best: number; median: number } {
  for (let i = 0; i < Math.min(raws.length, 2_000); i++) check(raws[i]!); // warm up
  const passes: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t = process.threadCpuUsage();
    for (let i = 0; i < raws.length; i++) check(raws[i]!);
    const used = process.threadCpuUsage(t);
    passes.push((used.user + used.system) / raws.length);
  }
  passes.sort((a, b) => a - b);
  return { best: passes[0]!, median: passes[Math.floor(passes.length / 2)]! };
}

/** The worker pool on 5,000-number batches, all sent at once: wall time and this thread's CPU time per number. */
async function pool(raws: string[]): Promise<{ wall: number; cpu: number }> {
  const validator = new PhoneValidator();
  const batch = 5_000;
  const batches: string[][] = [];
  for (let i = 0; i < raws.length; i += batch) batches.push(raws.slice(i, i + batch));
  await Promise.all(batches.map((b) => validator.check(b))); // start the workers, warm up
  let wall = Infinity;
  let cpu = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t = performance.now();
    const c = process.threadCpuUsage();
    await Promise.all(batches.map((b) => validator.check(b)));
    const used = process.threadCpuUsage(c);
    wall = Math.min(wall, ((performance.now() - t) * 1000) / raws.length);
    cpu = Math.min(cpu, (used.user + used.system) / raws.length);
  }
  await validator.close();
  return { wall, cpu };
}

const load = loadAverage();
console.log(`phone number checks: ${numbers} numbers per set, CPU µs per number, best (median) of ${rounds} passes; load average ${load.join(' ')}`);
console.log(`${'set'.padEnd(32)} ${'old'.padStart(16)} ${'new'.padStart(16)} ${'speed-up'.padStart(9)}`);
const all = sets();
for (const [name, raws] of Object.entries(all)) {
  // The fast path must change no answer: a benchmark of a wrong validator is worthless.
  const differing = raws.filter((raw) => JSON.stringify(checkPhoneNumber(raw)) !== JSON.stringify(checkPhoneNumberSlowly(raw)));
  if (differing.length) throw new Error(`the fast path answers differently for ${differing.slice(0, 5).join(', ')}`);
  const old = time(checkPhoneNumberSlowly, raws);
  const now = time(checkPhoneNumber, raws);
  const cell = (t: { best: number; median: number }) => `${round(t.best, 2).toFixed(2)} (${round(t.median, 2).toFixed(2)})`;
  console.log(`${name.padEnd(32)} ${cell(old).padStart(16)} ${cell(now).padStart(16)} ${`${round(old.best / now.best, 1)}x`.padStart(9)}`);
}
const pooled = await pool(all['realistic mix (~5% rejected)']);
console.log(`PhoneValidator (fast path inline, the rest on workers), 5,000-number batches of the mix: ${round(pooled.cpu, 2).toFixed(2)} µs`
  + ` CPU of this thread, ${round(pooled.wall, 2).toFixed(2)} µs wall per number (best of ${rounds})`);
console.log(`load average at the end ${loadAverage().join(' ')}`);
