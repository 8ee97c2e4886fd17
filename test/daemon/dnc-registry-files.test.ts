// The registry stand-in's files (crm-stand-ins/dnc-registry.ts) loaded by the daemon's own reader into a real Redis
// (daemon/dnc/copies.ts): per area code, plain and zipped, both line shapes, one file of the whole registry, one archive
// of the area codes' files, ZIP64 records, a change list; every number the copy answers for is the one the generator
// says it listed. Also: the same seed writes the same bytes, bad options are refused by name, memory stays bounded.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import {
  isListed, listedNumbers, registryAreaCodes, unlistedNumbers, writeChangeList, writeRegistry,
  type ChangeListSpec, type RegistrySpec,
} from '../../crm-stand-ins/dnc-registry.ts';
import { ListCopies } from '../../daemon/dnc/copies.ts';
import { DncKeys } from '../../daemon/state/keys.ts';
import { REDIS_URL, testPrefix } from '../support/daemon.ts';

const redis = new Redis(REDIS_URL);
const prefixes: { cleanup(): Promise<void> }[] = [];
const dir = mkdtempSync(join(tmpdir(), 'dnc-registry-files-'));
afterAll(async () => {
  for (const p of prefixes) await p.cleanup();
  redis.disconnect();
  rmSync(dir, { recursive: true, force: true });
});

const today = new Date().toISOString().slice(0, 10);

function freshCopies(): ListCopies {
  const p = testPrefix();
  prefixes.push(p);
  return new ListCopies(redis, new DncKeys(p.prefix), 'national');
}

/** `count` consecutive numbers of an area code from `first` (7 digits), as E.164. */
const run = (areaCode: string, first: number, count: number) => Array.from({ length: count }, (_, i) => `+1${areaCode}${first + i}`);

/**
 * The copy's answers agree with the generator: its listed and unlisted samples, and every number of a run of
 * consecutive numbers in each area code (where listed and unlisted ones interleave).
 */
async function expectCopyOf(copies: ListCopies, spec: RegistrySpec, changes: ChangeListSpec[] = []): Promise<void> {
  const listed = listedNumbers(spec, 60, { changes, start: 7 });
  const unlisted = unlistedNumbers(spec, 60, { changes, start: 7 });
  expect(new Set(listed.map((p) => p.slice(2, 5))).size).toBe(spec.areaCodes.length);
  expect((await copies.lookup(listed)).map((a) => a.status)).toEqual(listed.map(() => 'listed'));
  expect((await copies.lookup(unlisted)).map((a) => a.status)).toEqual(unlisted.map(() => 'not-listed'));
  const phones = spec.areaCodes.flatMap((a) => run(a, 5_550_000, 1000));
  const want = phones.map((p) => (isListed(spec, p, changes) ? 'listed' : 'not-listed'));
  expect(want.filter((s) => s === 'listed').length).toBeGreaterThan(10);
  expect((await copies.lookup(phones)).map((a) => a.status)).toEqual(want);
}

describe('full lists', () => {
  it('one plain file per area code, 2015550123 a line: the copy holds exactly the numbers the generator listed', async () => {
    const written = await writeRegistry({ dir: join(dir, 'plain'), areaCodes: ['201', '415', '917'], density: 0.02, seed: 'plain' });
    expect(written.files.map((f) => f.slice(dir.length))).toEqual(['/plain/201.txt', '/plain/415.txt', '/plain/917.txt']);
    expect(readFileSync(written.files[0]!, 'latin1')).toMatch(/^201[2-9]\d{6}\n201[2-9]\d{6}\n/);
    // 2% of 8,000,000 numbers an area code, give or take a few standard deviations (about 400).
    for (const n of Object.values(written.perAreaCode)) expect(Math.abs(n - 160_000)).toBeLessThan(2000);
    const copies = freshCopies();
    const record = await copies.loadFull(written.files, today);
    expect(record.numbers).toBe(written.lines);
    expect(Object.fromEntries(Object.entries(record.areaCodes).map(([a, c]) => [a, c.numbers]))).toEqual(written.perAreaCode);
    await expectCopyOf(copies, written.spec);
    // An area code the registry has no file for: the copy cannot vouch, and the generator lists nothing there.
    expect((await copies.lookup(['+12125550123']))[0]!.status).toBe('cannot-vouch');
    expect(isListed(written.spec, '+12125550123')).toBe(false);
  });

  it('201,5550123 lines with CRLF, one deflated zip per area code', async () => {
    const written = await writeRegistry({ dir: join(dir, 'zipped'), areaCodes: 4, density: 0.01, seed: 'zipped', shape: 'comma', crlf: true, zip: 'deflated' });
    expect(written.files.map((f) => f.slice(dir.length))).toEqual(registryAreaCodes(4).map((a) => `/zipped/${a}.zip`));
    // Deflated: far smaller than its 80,000 lines of 13 bytes.
    expect(written.bytes / written.lines).toBeLessThan(6);
    const copies = freshCopies();
    const record = await copies.loadFull(written.files, today);
    expect(record.full.map((f) => f.name)).toEqual(registryAreaCodes(4).map((a) => `${a}.zip:${a}.txt`));
    expect(record.numbers).toBe(written.lines);
    await expectCopyOf(copies, written.spec);
  });

  it('one file of the whole registry, plain and as a stored zip with ZIP64 records', async () => {
    const areaCodes = ['203', '305', '512', '702', '818'];
    const plain = await writeRegistry({ dir: join(dir, 'whole'), areaCodes, numbers: 200_000, seed: 'whole', files: 'whole' });
    expect(plain.files.map((f) => f.slice(dir.length))).toEqual(['/whole/registry.txt']);
    const zipped = await writeRegistry({ dir: join(dir, 'whole'), areaCodes, numbers: 200_000, seed: 'whole', files: 'whole', zip: 'stored', zip64: true });
    expect(zipped.files.map((f) => f.slice(dir.length))).toEqual(['/whole/registry.zip']);
    expect(zipped.lines).toBe(plain.lines);
    expect(Math.abs(plain.lines - 200_000)).toBeLessThan(3000);
    // Stored: the text itself inside, the archive's headers around it.
    expect(zipped.bytes - plain.bytes).toBeGreaterThan(0);
    expect(zipped.bytes - plain.bytes).toBeLessThan(300);
    expect(readFileSync(zipped.files[0]!).includes(readFileSync(plain.files[0]!))).toBe(true);

    const fromPlain = freshCopies();
    expect((await fromPlain.loadFull(plain.files, today)).numbers).toBe(plain.lines);
    const fromZip = freshCopies();
    const record = await fromZip.loadFull(zipped.files, today);
    expect(record.full).toMatchObject([{ name: 'registry.zip:registry.txt', lines: plain.lines }]);
    expect(Object.keys(record.areaCodes)).toEqual(areaCodes);
    await expectCopyOf(fromZip, zipped.spec);
  });

  it('one archive holding each area code\'s file', async () => {
    const written = await writeRegistry({ dir: join(dir, 'archive'), areaCodes: 3, density: 0.01, seed: 'archive', zip: 'deflated', files: 'archive', name: 'national' });
    expect(written.files.map((f) => f.slice(dir.length))).toEqual(['/archive/national.zip']);
    const copies = freshCopies();
    const record = await copies.loadFull(written.files, today);
    expect(record.full.map((f) => f.name)).toEqual(registryAreaCodes(3).map((a) => `national.zip:${a}.txt`));
    expect(record.full.map((f) => f.lines)).toEqual(registryAreaCodes(3).map((a) => written.perAreaCode[a]));
    await expectCopyOf(copies, written.spec);
  });
});

describe('change lists', () => {
  it('adds and deletes the numbers the generator says, in the default layout, after the copy and after another change list', async () => {
    const registry = await writeRegistry({ dir: join(dir, 'changes'), areaCodes: ['201', '415'], density: 0.05, seed: 'registry' });
    const copies = freshCopies();
    await copies.loadFull(registry.files, today);
    const first = await writeChangeList({ dir: join(dir, 'changes'), registry: registry.spec, seed: 'monday', lines: 20_000 });
    const text = readFileSync(first.file, 'latin1');
    expect(text).toMatch(/^201[2-9]\d{6},[AD]\n/);
    // Each line flips the number's listing: D for a number the registry listed, A for one it did not.
    const lines = text.trimEnd().split('\n');
    expect(lines.length).toBe(first.lines);
    for (const line of lines.slice(0, 200)) expect(line.endsWith(',D')).toBe(isListed(registry.spec, line.slice(0, 10)));
    // About 5% of the changed numbers were listed (deleted), the rest added.
    expect(first.deleted / first.lines).toBeGreaterThan(0.04);
    expect(first.deleted / first.lines).toBeLessThan(0.06);

    const after = await copies.applyChanges(first.file, today);
    expect(after.changes[0]).toMatchObject({ name: 'changes.txt', lines: first.lines, added: first.added, deleted: first.deleted, unchanged: 0 });
    expect(after.numbers).toBe(registry.lines + first.added - first.deleted);
    const deleted = lines.filter((l) => l.endsWith(',D')).slice(0, 50).map((l) => `+1${l.slice(0, 10)}`);
    const added = lines.filter((l) => l.endsWith(',A')).slice(0, 50).map((l) => `+1${l.slice(0, 10)}`);
    expect((await copies.lookup(deleted)).map((a) => a.status)).toEqual(deleted.map(() => 'not-listed'));
    expect((await copies.lookup(added)).map((a) => a.status)).toEqual(added.map(() => 'listed'));
    await expectCopyOf(copies, registry.spec, [first.spec]);

    // A second change list, zipped, follows the first: its D lines are numbers listed after the first.
    const second = await writeChangeList({ dir: join(dir, 'changes'), registry: registry.spec, follows: [first.spec], seed: 'tuesday', density: 0.01, zip: 'deflated', name: 'tuesday' });
    const again = await copies.applyChanges(second.file, today);
    expect(again.changes[1]).toMatchObject({ name: 'tuesday.zip:tuesday.txt', added: second.added, deleted: second.deleted, unchanged: 0 });
    await expectCopyOf(copies, registry.spec, [first.spec, second.spec]);
  });

  it('changes numbers of an area code the copy has no file for: those lines are counted as skipped', async () => {
    const registry = await writeRegistry({ dir: join(dir, 'skipped'), areaCodes: ['303'], density: 0.01, seed: 'one' });
    const copies = freshCopies();
    await copies.loadFull(registry.files, today);
    const changes = await writeChangeList({ dir: join(dir, 'skipped'), registry: registry.spec, areaCodes: ['303', '720'], seed: 'two', density: 0.0005 });
    const after = await copies.applyChanges(changes.file, today);
    // 720's lines are all adds (the registry lists nothing there); the copy skips them and applies 303's.
    const of720 = changes.perAreaCode['720']!;
    expect(of720).toBeGreaterThan(0);
    expect(after.changes[0]).toMatchObject({ skipped: { 720: of720 }, added: changes.added - of720, deleted: changes.deleted });
    expect(changes.deleted).toBeGreaterThan(0);
  });
});

describe('the generator', () => {
  it('writes the same bytes for the same seed, other numbers for another', async () => {
    const hash = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
    const options = { areaCodes: ['212'], density: 0.01, seed: 42, zip: 'deflated' } as const;
    const a = await writeRegistry({ ...options, dir: join(dir, 'same-a') });
    const b = await writeRegistry({ ...options, dir: join(dir, 'same-b') });
    const c = await writeRegistry({ ...options, seed: 43, dir: join(dir, 'same-c') });
    expect(hash(a.files[0]!)).toBe(hash(b.files[0]!));
    expect(hash(a.files[0]!)).not.toBe(hash(c.files[0]!));
    const phones = run('212', 5_550_000, 5000);
    const listedA = phones.filter((p) => isListed(a.spec, p));
    const listedC = phones.filter((p) => isListed(c.spec, p));
    expect(listedA.length).toBeGreaterThan(20);
    expect(listedA.filter((p) => listedC.includes(p)).length).toBeLessThan(listedA.length / 4);
  });

  it('refuses bad options and numbers, naming what is wrong', async () => {
    const refusal = async (f: () => unknown) => {
      try {
        await f();
        return 'no error';
      } catch (e) {
        return (e as Error).message;
      }
    };
    const d = join(dir, 'refused');
    expect(await refusal(() => writeRegistry({ dir: d, areaCodes: ['201', '911'], density: 0.1, seed: 1 }))).toBe('areaCodes: 911 is a service code (N11), not an area code');
    expect(await refusal(() => writeRegistry({ dir: d, areaCodes: ['2O1'], density: 0.1, seed: 1 }))).toBe('areaCodes: "2O1" is not an area code (3 digits, the first 2-9)');
    expect(await refusal(() => writeRegistry({ dir: d, areaCodes: ['201', '201'], density: 0.1, seed: 1 }))).toBe('areaCodes: 201 is given twice');
    expect(await refusal(() => writeRegistry({ dir: d, areaCodes: 2, density: 1.5, seed: 1 }))).toBe('density must be a share between 0 and 1; got 1.5');
    expect(await refusal(() => writeRegistry({ dir: d, areaCodes: 2, density: 0.1, numbers: 5, seed: 1 }))).toBe('give either density (a share of each area code\'s numbers) or numbers (about how many in all), not both');
    expect(await refusal(() => writeRegistry({ dir: d, areaCodes: 2, numbers: 20_000_000, seed: 1 }))).toBe('20000000 numbers over 2 area codes: give 0 to 16,000,000 (8,000,000 an area code)');
    expect(await refusal(() => writeRegistry({ dir: d, areaCodes: 705, density: 0.1, seed: 1 }))).toBe('a registry of 705 area codes: give 1 to 704');
    expect(await refusal(() => writeRegistry({ dir: d, areaCodes: 1, density: 0.1, seed: '' }))).toBe('the registry\'s seed must be a non-empty string or a finite number; got ""');
    expect(await refusal(() => writeRegistry({ dir: d, areaCodes: 1, density: 0.1, seed: 1, files: 'archive' }))).toBe('files: \'archive\' is a .zip of the area codes\' files: give zip (\'stored\' or \'deflated\') too');
    expect(await refusal(() => writeRegistry({ dir: d, areaCodes: 1, density: 0.1, seed: 1, name: '../x' }))).toBe('name must be a file name of letters, digits, \'.\', \'-\' or \'_\' (no folder); got "../x"');
    const spec: RegistrySpec = { seed: 1, density: 0.1, areaCodes: ['201'] };
    expect(await refusal(() => isListed(spec, '+1201555012'))).toBe('"+1201555012" is not a NANP phone number (+12015550123 or 2015550123)');
    expect(await refusal(() => listedNumbers({ ...spec, density: 0 }, 1))).toBe('the registry has only 0 listed numbers; 1 were asked');
    // Nothing was written for any of them.
    expect(readdirSync(dir)).not.toContain('refused');
  });

  it('writes a large registry in bounded memory', () => {
    // In a process of its own with gc() at hand: what stays live after a collection is what the writer holds.
    const script = `
      import { writeRegistry } from ${JSON.stringify(join(import.meta.dirname, '../../crm-stand-ins/dnc-registry.ts'))};
      const live = () => { gc(); const m = process.memoryUsage(); return m.heapUsed + m.arrayBuffers; };
      const base = live();
      let calls = 0, peak = 0;
      const written = await writeRegistry({ dir: ${JSON.stringify(join(dir, 'large'))}, areaCodes: 2, density: 0.4, seed: 'large', zip: 'deflated', level: 1,
        files: 'whole', progress: () => { if (++calls % 8 === 0) peak = Math.max(peak, live() - base); } });
      console.log(JSON.stringify({ lines: written.lines, calls, peak }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' })) as { lines: number; calls: number; peak: number };
    expect(Math.abs(out.lines - 6_400_000)).toBeLessThan(10_000);
    expect(out.calls).toBeGreaterThan(60);
    // 70 MB of text written 1 MB at a time through deflate: the writer holds a chunk or two and zlib's window.
    expect(out.peak).toBeLessThan(12 * 1024 * 1024);
  });
});
