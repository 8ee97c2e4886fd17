// Loading a Do Not Call list from its folder (daemon/dnc/folder.ts) into a real Redis, from downloads written by hand in
// temp folders: the newest full download after the copy, then the change downloads after it in date order (a
// download's files in name order); nothing newer, nothing done; names that do not follow the convention said and left
// aside; a refused file stopping the list with its file and line, and the rest of its download applied once it is
// fixed; a state list whole and of its own age.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { dncListSchema, type DncListConfig } from '../../daemon/dnc/config.ts';
import { copiesOf, loadFolder } from '../../daemon/dnc/folder.ts';
import { DncKeys } from '../../daemon/state/keys.ts';
import { REDIS_URL, testPrefix } from '../support/daemon.ts';

const redis = new Redis(REDIS_URL);
const prefixes: { cleanup(): Promise<void> }[] = [];
const root = mkdtempSync(join(tmpdir(), 'dnc-folder-'));
afterAll(async () => {
  for (const p of prefixes) await p.cleanup();
  redis.disconnect();
  rmSync(root, { recursive: true, force: true });
});

const clock = { now: Date.parse('2026-11-29T12:00:00Z') };
const now = () => clock.now;

function setup(raw: Record<string, unknown>) {
  const p = testPrefix();
  prefixes.push(p);
  const folder = mkdtempSync(join(root, 'list-'));
  const list: DncListConfig = dncListSchema.parse({ folder, ...raw });
  const copies = copiesOf(redis, new DncKeys(p.prefix), list, now);
  const write = (sub: string, name: string, lines: string[]) => {
    mkdirSync(join(folder, sub), { recursive: true });
    writeFileSync(join(folder, sub, name), lines.map((l) => `${l}\n`).join(''));
    return join(folder, sub, name);
  };
  const status = async (phones: string[]) => (await copies.lookup(phones)).map((a) => a.status);
  return { folder, list, copies, write, status, load: () => loadFolder(copies, list, { now }) };
}

describe('loading a list from its folder', () => {
  it('loads the newest full download, then the change downloads after it in date order, and leaves misnamed entries aside with a sentence', async () => {
    const { folder, write, status, load } = setup({ name: 'national', type: 'registry' });
    write('full-2026-11-20', '201.txt', ['2015550100']);
    write('full-2026-11-25', '201.txt', ['2015550123', '2015550124']);
    const z = join(folder, 'full-2026-11-25', '415.zip');
    execFileSync('zip', ['-q', '-j', z, write('scratch', '415.txt', ['4152220000'])]);
    rmSync(join(folder, 'scratch'), { recursive: true });
    // Before the full download loaded: in it already.
    write('changes-2026-11-22', 'c.txt', ['2015550199,A']);
    // Applied in name order: a.txt adds a number, b.txt deletes it again.
    write('changes-2026-11-26', 'a.txt', ['2015550150,A', '2015550124,D']);
    write('changes-2026-11-26', 'b.txt', ['2015550150,D']);
    write('changes-2026-11-27', 'c.txt', ['4152220001,A']);
    writeFileSync(join(folder, 'notes.txt'), 'downloaded by Ann\n');
    write('latest', '201.txt', ['2015550111']);
    write('full-2026-02-30', '201.txt', ['2015550111']);
    write('full-2026-12-30', '201.txt', ['2015550111']);
    write('.incoming', '201.txt', ['not a number']);
    mkdirSync(join(folder, 'changes-2026-11-28'));

    const r = await load();
    expect(r.failed).toBeNull();
    expect(r.loaded).toMatchObject({ kind: 'full', date: '2026-11-25', folder: 'full-2026-11-25' });
    expect(r.loaded!.files.map((f) => f.slice(f.lastIndexOf('/') + 1))).toEqual(['201.txt', '415.zip']);
    expect(r.applied.map((a) => [a.folder, a.files.map((f) => f.slice(f.lastIndexOf('/') + 1))])).toEqual([
      ['changes-2026-11-26', ['a.txt', 'b.txt']], ['changes-2026-11-27', ['c.txt']],
    ]);
    expect(r.skipped).toEqual([
      'changes-2026-11-28: holds no file',
      'full-2026-02-30: 2026-02-30 is not a calendar date',
      'full-2026-12-30: dated 2026-12-30, in the future (a download is named after the day it was downloaded)',
      'latest: not a download (each download goes in a subfolder named full-YYYY-MM-DD or changes-YYYY-MM-DD, the download\'s date)',
      'notes.txt: not a download (each download goes in a subfolder named full-YYYY-MM-DD or changes-YYYY-MM-DD, the download\'s date)',
    ]);
    expect(r.copy).toMatchObject({ date: '2026-11-27', numbers: 3 });
    expect(r.copy!.full.map((f) => f.name)).toEqual(['201.txt', '415.zip:415.txt']);
    expect(r.copy!.changes.map((c) => `${c.date} ${c.name}`)).toEqual(['2026-11-26 a.txt', '2026-11-26 b.txt', '2026-11-27 c.txt']);
    expect(await status(['+12015550123', '+12015550124', '+12015550150', '+12015550199', '+12015550100', '+14152220000', '+14152220001'])).toEqual([
      'listed', 'not-listed', 'not-listed', 'not-listed', 'not-listed', 'listed', 'listed',
    ]);
  });

  it('does nothing when nothing is newer than the copy, and takes only what is newer next time', async () => {
    const { write, status, load, copies } = setup({ name: 'national', type: 'registry' });
    write('full-2026-11-25', '201.txt', ['2015550123']);
    const first = await load();
    expect(first).toMatchObject({ failed: null, applied: [], skipped: [], copy: { date: '2026-11-25' } });

    const again = await load();
    expect(again).toMatchObject({ loaded: null, applied: [], failed: null });
    expect(again.copy!.generation).toBe(first.copy!.generation);
    expect((await copies.copy())!.generation).toBe(first.copy!.generation);

    write('changes-2026-11-28', '201.txt', ['2015550124,A']);
    const changed = await load();
    expect(changed.loaded).toBeNull();
    expect(changed.applied.map((a) => a.folder)).toEqual(['changes-2026-11-28']);
    expect(changed.copy!.date).toBe('2026-11-28');
    expect(await status(['+12015550123', '+12015550124'])).toEqual(['listed', 'listed']);

    // A full download after the copy replaces it (the change list before it is in it).
    write('full-2026-11-29', '201.txt', ['2015550125']);
    const full = await load();
    expect(full.loaded!.folder).toBe('full-2026-11-29');
    expect(full.applied).toEqual([]);
    expect(full.copy).toMatchObject({ date: '2026-11-29', changes: [] });
    expect(await status(['+12015550123', '+12015550124', '+12015550125'])).toEqual(['not-listed', 'not-listed', 'listed']);
  });

  it('stops the list at a refused file, naming file and line, and applies the rest of its download once it is fixed', async () => {
    const { write, status, load } = setup({ name: 'national', type: 'registry' });
    write('full-2026-11-25', '201.txt', ['2015550123']);
    write('changes-2026-11-27', 'a.txt', ['2015550124,A']);
    const bad = write('changes-2026-11-27', 'b.txt', ['2015550125,A', '201555012,A']);
    write('changes-2026-11-28', 'a.txt', ['2015550126,A']);

    const r = await load();
    expect(r.failed).toBe('b.txt, line 2: "201555012" is not a 10-digit number');
    expect(r.loaded!.folder).toBe('full-2026-11-25');
    expect(r.applied.map((a) => [a.folder, a.files.length])).toEqual([['changes-2026-11-27', 1]]);
    expect(r.copy!.date).toBe('2026-11-27');
    // Nothing of the refused file, nothing after it.
    expect(await status(['+12015550124', '+12015550125', '+12015550126'])).toEqual(['listed', 'not-listed', 'not-listed']);

    writeFileSync(bad, '2015550125,A\n2015550127,A\n');
    const fixed = await load();
    expect(fixed.failed).toBeNull();
    expect(fixed.applied.map((a) => [a.folder, a.files.map((f) => f.slice(f.lastIndexOf('/') + 1))])).toEqual([
      ['changes-2026-11-27', ['b.txt']], ['changes-2026-11-28', ['a.txt']],
    ]);
    expect(fixed.copy!.changes.map((c) => `${c.date} ${c.name}`)).toEqual(['2026-11-27 a.txt', '2026-11-27 b.txt', '2026-11-28 a.txt']);
    expect(await status(['+12015550124', '+12015550125', '+12015550126', '+12015550127'])).toEqual(['listed', 'listed', 'listed', 'listed']);
  });

  it('says why it cannot load: no full download for a first copy, a folder that cannot be read, a refused full download', async () => {
    const a = setup({ name: 'national', type: 'registry' });
    a.write('changes-2026-11-27', 'a.txt', ['2015550124,A']);
    expect(await a.load()).toMatchObject({
      loaded: null, applied: [], copy: null,
      failed: `no copy is loaded and ${a.folder} holds no full download (a subfolder full-YYYY-MM-DD with the list's files): a change list follows a copy`,
    });

    const b = setup({ name: 'national', type: 'registry' });
    rmSync(b.folder, { recursive: true });
    expect((await b.load()).failed).toBe(`folder ${b.folder} cannot be read (ENOENT): it is where the list's downloads go (doNotCallLists: folder)`);

    const c = setup({ name: 'national', type: 'registry' });
    c.write('full-2026-11-25', '201.txt', ['2015550123', 'phone']);
    c.write('changes-2026-11-27', 'a.txt', ['2015550124,A']);
    const r = await c.load();
    expect(r).toMatchObject({ loaded: null, applied: [], copy: null, failed: '201.txt, line 2: "phone" is not a 10-digit number (2015550123 or 201,5550123)' });
    expect(await c.status(['+12015550123'])).toEqual(['cannot-vouch']);
  });

  it('loads a state list whole, with its own age limit', async () => {
    const { write, copies, load } = setup({ name: 'texas', type: 'state', states: ['TX'], maxAgeDays: 92 });
    write('full-2026-10-01', 'tx.txt', ['2145550123']);
    expect((await load()).failed).toBeNull();
    expect(copies.maxAgeDays).toBe(92);
    // 59 days old: within its 92. An area code without a number in the file holds none (a whole list).
    expect((await copies.lookup(['+12145550123', '+12145550124', '+17135550123'])).map((a) => a.status)).toEqual(['listed', 'not-listed', 'not-listed']);
  });
});
