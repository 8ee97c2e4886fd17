// Reading the Do Not Call registry's files (daemon/dnc/files.ts, zip.ts) from real files in a temp dir: each line
// shape, plain and zipped (archives made by Info-ZIP's `zip`, deflated, stored and ZIP64), change lists in the default
// and a configured layout, every refused line named by file and line, and memory that does not grow with the file.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DncFileError, listSources, readNumbers, type ChangeLayout } from '../../daemon/dnc/files.ts';

const dir = mkdtempSync(join(tmpdir(), 'dnc-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
}
function zip(name: string, files: string[], ...options: string[]): string {
  execFileSync('zip', ['-q', '-j', ...options, join(dir, name), ...files]);
  return join(dir, name);
}

/** Every number of every file a path holds, as `<source>: <10 digits> <+|->`. */
async function read(path: string, kind: 'full' | 'changes' = 'full', layout?: ChangeLayout): Promise<string[]> {
  const out: string[] = [];
  for (const source of await listSources(path)) {
    await readNumbers(source, kind, (b) => {
      for (let i = 0; i < b.length; i++) out.push(`${source.name}: ${b.areaCodes[i]}${String(b.offsets[i]).padStart(7, '0')}${kind === 'changes' ? (b.adds[i] ? ' +' : ' -') : ''}`);
    }, layout);
  }
  return out;
}

async function refusal(path: string, kind: 'full' | 'changes' = 'full', layout?: ChangeLayout): Promise<DncFileError> {
  const err = await read(path, kind, layout).then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(DncFileError);
  return err as DncFileError;
}

describe('full lists', () => {
  it('reads both line shapes, CRLF and a last line without its newline', async () => {
    const p = file('201.txt', '2015550123\n201,5550124\r\n2019999999');
    expect(await read(p)).toEqual(['201.txt: 2015550123', '201.txt: 2015550124', '201.txt: 2019999999']);
  });

  it('reads every file inside a zip, deflated or stored, and a ZIP64 archive', async () => {
    const a = file('201.txt', '2015550123\n2015550124\n');
    const b = file('415.txt', '415,2220000\n');
    expect(await read(zip('deflated.zip', [a, b]))).toEqual(['deflated.zip:201.txt: 2015550123', 'deflated.zip:201.txt: 2015550124', 'deflated.zip:415.txt: 4152220000']);
    expect(await read(zip('stored.zip', [a], '-0'))).toEqual(['stored.zip:201.txt: 2015550123', 'stored.zip:201.txt: 2015550124']);
    // From a pipe, zip cannot know the size and writes a ZIP64 entry with a data descriptor.
    execFileSync('sh', ['-c', `cat ${a} | zip -q ${join(dir, 'z64.zip')} -`]);
    expect(await read(join(dir, 'z64.zip'))).toEqual(['z64.zip:-: 2015550123', 'z64.zip:-: 2015550124']);
  });

  it('refuses a damaged zip entry by its CRC, and a file that is not a zip despite its name', async () => {
    const big = file('big.txt', Array.from({ length: 5000 }, (_, i) => `20155${String(50000 + i).padStart(5, '0')}`).join('\n'));
    const z = zip('damaged.zip', [big]);
    const bytes = readFileSync(z);
    bytes[200] = bytes[200]! ^ 0xff; // inside the deflated data
    writeFileSync(z, bytes);
    expect((await refusal(z)).message).toMatch(/^damaged\.zip:big\.txt: (damaged \(its CRC-32 or size is not the archive's\)|cannot be inflated \(.+\))$/);
    expect((await refusal(file('fake.zip', '2015550123\n'))).message).toBe('fake.zip: not a zip archive (no end of central directory)');
  });

  it.each([
    ['a 9-digit number', '201555012', '"201555012" is not a 10-digit number (2015550123 or 201,5550123)'],
    ['a number with a dash', '201-5550123', '"201-5550123" is not a 10-digit number'],
    ['an empty line', '', 'an empty line, where a number is expected'],
    ['a header', 'phone', '"phone" is not a 10-digit number'],
    ['an area code starting with 1', '1015550123', 'is not a NANP number: area code 101 does not start with 2-9'],
    ['an N11 code', '9115550123', '911 is a service code (N11), not an area code'],
    ['an exchange starting with 0', '2010550123', 'exchange 055 does not start with 2-9'],
    ['a +1 number', '+12015550123', 'is not a 10-digit number'],
  ])('refuses %s, naming file and line', async (_, bad, why) => {
    const err = await refusal(file('bad.txt', `2015550123\n2015550124\n${bad}\n2015550125\n`));
    expect(err.file).toBe('bad.txt');
    expect(err.line).toBe(3);
    expect(err.message).toContain('bad.txt, line 3: ');
    expect(err.message).toContain(why);
  });

  it('refuses a line inside a zip by the entry and line', async () => {
    const z = zip('one-bad.zip', [file('ok.txt', '2015550123\n'), file('bad-inside.txt', '2015550123\n20155501234\n')]);
    expect((await refusal(z)).message).toBe('one-bad.zip:bad-inside.txt, line 2: "20155501234" is not a 10-digit number (2015550123 or 201,5550123)');
  });

  it('refuses a line too long to be a number without holding it', async () => {
    expect((await refusal(file('long.txt', `2015550123\n${'9'.repeat(5000)}`))).message).toBe('long.txt, line 2: a line longer than 1024 characters');
  });

  it('reads a large file in bounded memory', () => {
    const lines = 3_000_000;
    const p = join(dir, 'large.txt');
    const chunk: string[] = [];
    for (let i = 0; i < lines; i++) chunk.push(`${201 + (i % 3)}${2_000_000 + i}`);
    writeFileSync(p, chunk.join('\n'));
    // In a process of its own with gc() at hand: what stays live after a collection is what the reader holds.
    const script = `
      import { listSources, readNumbers } from ${JSON.stringify(join(import.meta.dirname, '../../daemon/dnc/files.ts'))};
      const live = () => { gc(); const m = process.memoryUsage(); return m.heapUsed + m.arrayBuffers; };
      const base = live();
      let count = 0, batches = 0, peak = 0;
      const [source] = await listSources(${JSON.stringify(p)});
      await readNumbers(source, 'full', (b) => { count += b.length; if (++batches % 20 === 0) peak = Math.max(peak, live() - base); });
      console.log(JSON.stringify({ count, peak }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' })) as { count: number; peak: number };
    expect(out.count).toBe(lines);
    // The file is 33 MB; the reader holds its batch (16,384 numbers) and a few chunks of 256 KB (1-7 MB seen, the same
    // for 0.5 and 6 million lines).
    expect(out.peak).toBeLessThan(12 * 1024 * 1024);
  });
});

describe('change lists', () => {
  it('reads the default layout: number, then A (added) or D (deleted), any case, more columns ignored', async () => {
    const p = file('changes.txt', '2015550123,A\n2015550124,d,2026-11-28\r\n4152220000, A \n');
    expect(await read(p, 'changes')).toEqual(['changes.txt: 2015550123 +', 'changes.txt: 2015550124 -', 'changes.txt: 4152220000 +']);
  });

  it('reads a configured layout: action first, area code and number apart, its own words', async () => {
    const layout: ChangeLayout = { action: 0, areaCode: 1, number: 2, added: ['ADD'], deleted: ['DEL', 'REMOVE'] };
    const p = file('layout.txt', 'ADD,201,5550123,x\nremove,415,2220000,y\n');
    expect(await read(p, 'changes', layout)).toEqual(['layout.txt: 2015550123 +', 'layout.txt: 4152220000 -']);
  });

  it.each([
    ['an action that is neither', '2015550124,X', '"X" is neither added (A) nor deleted (D)'],
    ['too few columns', '2015550124', 'has 1 column, the change list\'s layout reads 2'],
    ['a number that is not 10 digits', '201555012,A', '"201555012" is not a 10-digit number'],
    ['a number that is not NANP', '2011550124,A', 'exchange 155 does not start with 2-9'],
  ])('refuses %s, naming file and line', async (_, bad, why) => {
    const err = await refusal(file('bad-changes.txt', `2015550123,A\n${bad}\n`), 'changes');
    expect(err.message).toContain('bad-changes.txt, line 2: ');
    expect(err.message).toContain(why);
  });
});
