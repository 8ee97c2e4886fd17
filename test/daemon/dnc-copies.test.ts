// Copies of Do Not Call lists in a real Redis (daemon/dnc/copies.ts), from real files in a temp dir: a full load and
// its record, a refused file storing nothing, change lists adding and deleting, the 31-day age and a missing area code
// failing closed, a bitmap gone, a lookup across lists (with the company's own), and a reload switching atomically
// under readers.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { lookupAll } from '../../daemon/dnc/answers.ts';
import { ListCopies } from '../../daemon/dnc/copies.ts';
import { DncFileError } from '../../daemon/dnc/files.ts';
import { OwnList } from '../../daemon/dnc/own-list.ts';
import { DncKeys } from '../../daemon/state/keys.ts';
import { REDIS_URL, testPrefix } from '../support/daemon.ts';

const redis = new Redis(REDIS_URL);
const prefixes: { cleanup(): Promise<void> }[] = [];
const dir = mkdtempSync(join(tmpdir(), 'dnc-copies-'));
afterAll(async () => {
  for (const p of prefixes) await p.cleanup();
  redis.disconnect();
  rmSync(dir, { recursive: true, force: true });
});

const DAY = 86_400_000;
const clock = { now: Date.parse('2026-11-29T12:00:00Z') };

function fresh(list = 'national'): { copies: ListCopies; keys: DncKeys; prefix: string } {
  const p = testPrefix();
  prefixes.push(p);
  const keys = new DncKeys(p.prefix);
  return { copies: new ListCopies(redis, keys, list, { now: () => clock.now }), keys, prefix: p.prefix };
}
function file(name: string, lines: string[]): string {
  writeFileSync(join(dir, name), lines.map((l) => `${l}\n`).join(''));
  return join(dir, name);
}
async function keysUnder(prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    out.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return out.sort();
}
const statuses = async (copies: ListCopies, phones: string[]) => (await copies.lookup(phones)).map((a) => a.status);

describe('a full copy', () => {
  it('loads area-code files, plain and zipped, records them and answers with the copy that holds each number', async () => {
    const { copies } = fresh();
    const a201 = file('201.txt', ['2015550123', '201,5550124', '2015550124']);
    const z415 = join(dir, '415.zip');
    execFileSync('zip', ['-q', '-j', z415, file('415.txt', ['4152220000'])]);
    const record = await copies.loadFull([a201, z415], '2026-11-28');
    expect(record).toMatchObject({
      list: 'national', date: '2026-11-28', countsFrom: '2026-11-27T10:00:00.000Z', numbers: 3, changes: [],
      full: [{ name: '201.txt', kind: 'full', lines: 3 }, { name: '415.zip:415.txt', kind: 'full', lines: 1 }],
    });
    expect(Object.keys(record.areaCodes)).toEqual(['201', '415']);
    expect(record.areaCodes['201']).toMatchObject({ files: ['201.txt'], numbers: 2 });
    expect(await copies.copy()).toEqual(record);

    const answers = await copies.lookup(['+12015550123', '+12015550125', '+14152220000', '+12125550123', '+442071234567', '+1201555012']);
    expect(answers[0]).toEqual({ list: 'national', status: 'listed', copy: { file: '201.txt', changes: [], date: '2026-11-28' } });
    expect(answers[1]).toEqual({ list: 'national', status: 'not-listed', copy: { file: '201.txt', changes: [], date: '2026-11-28' } });
    expect(answers[2]).toMatchObject({ status: 'listed', copy: { file: '415.zip:415.txt' } });
    // No file for 212: the copy cannot say the number is not on the registry.
    expect(answers[3]).toEqual({ list: 'national', status: 'cannot-vouch', reason: 'its copy of 2026-11-28 has no file for area code 212: add that area code\'s full list' });
    expect(answers[4]).toMatchObject({ status: 'outside' });
    expect(answers[5]).toMatchObject({ status: 'cannot-vouch', reason: '+1201555012 is not a 10-digit NANP number' });
  });

  it('answers cannot vouch before any copy is loaded', async () => {
    const { copies } = fresh();
    expect(await copies.lookup(['+12015550123'])).toEqual([{ list: 'national', status: 'cannot-vouch', reason: 'no copy is loaded: load the list\'s full files' }]);
  });

  it('refuses a load whose file has a line that is not a number: naming file and line, storing nothing of it', async () => {
    const { copies, prefix } = fresh();
    const first = await copies.loadFull([file('ok-201.txt', ['2015550123'])], '2026-11-20');
    const keysBefore = await keysUnder(prefix);
    const err = await copies.loadFull([file('new-201.txt', ['2015550199']), file('new-415.txt', ['4152220000', '4152220001', '415222000'])], '2026-11-28')
      .then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(DncFileError);
    expect((err as Error).message).toBe('new-415.txt, line 3: "415222000" is not a 10-digit number (2015550123 or 201,5550123)');
    expect(await copies.copy()).toEqual(first);
    expect(await keysUnder(prefix)).toEqual(keysBefore); // the new copy's bitmaps (201 written already) are gone
    expect(await statuses(copies, ['+12015550123', '+12015550199', '+14152220000'])).toEqual(['listed', 'not-listed', 'cannot-vouch']);
  });

  it('refuses a date it cannot read or in the future, and files with no number', async () => {
    const { copies } = fresh();
    const f = file('one.txt', ['2015550123']);
    await expect(copies.loadFull([f], '11/28/2026')).rejects.toThrow('copy date "11/28/2026": use the download\'s date, 2026-11-29, or a time with its offset');
    await expect(copies.loadFull([f], '2026-11-28T08:00:00')).rejects.toThrow('use the download\'s date');
    await expect(copies.loadFull([f], '2026-12-01')).rejects.toThrow('copy date "2026-12-01" is in the future');
    await expect(copies.loadFull([file('empty.txt', [])], '2026-11-28')).rejects.toThrow('empty.txt: no number in the files');
    expect(await copies.copy()).toBeNull();
  });
});

describe('change lists', () => {
  it('adds and deletes numbers on top of the copy they follow, as a new copy with their date', async () => {
    const { copies, keys } = fresh();
    const full = await copies.loadFull([file('full.txt', ['2015550123', '2015550124', '4152220000'])], '2026-11-01');
    const changes = file('changes-1.txt', ['2015550125,A', '2015550123,D', '2015550124,A', '3125550100,A', '2015550126,A', '2015550126,D']);
    const record = await copies.applyChanges(changes, '2026-11-28');
    expect(record.changes).toEqual([{
      name: 'changes-1.txt', kind: 'changes', date: '2026-11-28', lines: 6, loadedAt: record.loadedAt,
      added: 2, deleted: 2, unchanged: 1, skipped: { 312: 1 },
    }]);
    expect(record).toMatchObject({ date: '2026-11-28', numbers: 3, full: full.full });
    // 415 untouched keeps its bitmap; 201 has a new one, and the one it replaced lapses.
    expect(record.areaCodes['415']).toEqual(full.areaCodes['415']);
    expect(record.areaCodes['201']).toMatchObject({ generation: record.generation, numbers: 2, files: ['full.txt'] });
    expect(await redis.pttl(keys.bitmap('national', '201', record.generation))).toBe(-1);
    expect(await redis.pttl(keys.bitmap('national', '201', full.generation))).toBeGreaterThan(0);

    const answers = await copies.lookup(['+12015550123', '+12015550124', '+12015550125', '+12015550126', '+13125550100']);
    expect(answers.map((a) => a.status)).toEqual(['not-listed', 'listed', 'listed', 'not-listed', 'cannot-vouch']);
    expect(answers[2]!.copy).toEqual({ file: 'full.txt', changes: ['changes-1.txt'], date: '2026-11-28' });
  });

  it('loads and changes more area codes than it holds in memory, from files not sorted by area code', async () => {
    const { copies } = fresh();
    // 20 area codes (more than the 16 bitmaps a load holds), each line the next one's, over 40,000 lines (3 batches of
    // the reader): every bitmap is written out and needed again (OR-ed in by the full load, read back by the change list).
    const areaCodes = Array.from({ length: 20 }, (_, i) => String(230 + i));
    const number = (i: number) => `${areaCodes[i % 20]}${5_550_000 + Math.floor(i / 20)}`;
    const full = await copies.loadFull([file('mixed.txt', Array.from({ length: 40_000 }, (_, i) => number(i)))], '2026-11-27');
    expect(Object.keys(full.areaCodes)).toEqual(areaCodes);
    expect(full.numbers).toBe(40_000);
    // Delete the first 20,000 numbers, add 20,000 new ones, interleaved.
    const lines = Array.from({ length: 40_000 }, (_, i) => (i % 2 ? `${number(40_000 + i)},A` : `${number(i / 2)},D`));
    const changed = await copies.applyChanges(file('mixed-changes.txt', lines), '2026-11-28');
    expect(changed.changes[0]).toMatchObject({ added: 20_000, deleted: 20_000, unchanged: 0 });
    expect(changed.numbers).toBe(40_000);
    const phones = [0, 19_999, 20_000, 39_999, 40_001, 79_999, 79_998].map((i) => `+1${number(i)}`);
    expect(await statuses(copies, phones)).toEqual(['not-listed', 'not-listed', 'listed', 'listed', 'listed', 'listed', 'not-listed']);
  });

  it('refuses a change list with a bad line (nothing changes), one older than the copy, and one with no copy', async () => {
    const { copies, prefix } = fresh();
    await expect(copies.applyChanges(file('c0.txt', ['2015550123,A']), '2026-11-28')).rejects.toThrow('c0.txt: a change list follows a copy, and list national has none yet: load its full list first');
    const full = await copies.loadFull([file('f.txt', ['2015550123'])], '2026-11-20');
    const keysBefore = await keysUnder(prefix);
    await expect(copies.applyChanges(file('c1.txt', ['2015550124,A', '2015550123,D', '2015550125,Q']), '2026-11-28'))
      .rejects.toThrow('c1.txt, line 3: "Q" is neither added (A) nor deleted (D)');
    await expect(copies.applyChanges(file('c2.txt', ['2015550124,A']), '2026-11-19')).rejects.toThrow('c2.txt: dated 2026-11-19, before the copy it would change (2026-11-20)');
    expect(await copies.copy()).toEqual(full);
    expect(await keysUnder(prefix)).toEqual(keysBefore);
    expect(await statuses(copies, ['+12015550123', '+12015550124'])).toEqual(['listed', 'not-listed']);
  });

  it('refuses the second of two change lists applied at once on the same copy, keeping nothing of it', async () => {
    const { copies, prefix } = fresh();
    const full = await copies.loadFull([file('race.txt', ['2015550123'])], '2026-11-20');
    // Both read the same copy before either switches it (their first request is that read, sent together).
    const results = await Promise.allSettled([
      copies.applyChanges(file('race-1.txt', ['2015550124,A']), '2026-11-21'),
      copies.applyChanges(file('race-2.txt', ['2015550125,A']), '2026-11-21'),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(String(lost[0]!.reason)).toContain('another load switched the copy while this one was loading; nothing of this one was kept: load it again');
    const now = (await copies.copy())!;
    expect(now.changes).toHaveLength(1);
    // Only the first copy's bitmap (lapsing) and the winner's are left.
    const generations = (await keysUnder(prefix)).filter((k) => k.includes(':dnc:national:201:')).map((k) => k.split(':').pop());
    expect(generations.sort()).toEqual([full.generation, now.generation].sort());
  });

  it('reads a configured layout', async () => {
    const { copies } = fresh();
    await copies.loadFull([file('f2.txt', ['2015550123'])], '2026-11-20');
    await copies.applyChanges(file('c3.txt', ['x,201,5550123,DELETE', 'x,201,5550124,ADD']), '2026-11-21', { areaCode: 1, number: 2, action: 3, added: ['ADD'], deleted: ['DELETE'] });
    expect(await statuses(copies, ['+12015550123', '+12015550124'])).toEqual(['not-listed', 'listed']);
  });
});

describe('failing closed', () => {
  it('answers cannot vouch once the copy is more than 31 days old, and again after a change list', async () => {
    const { copies } = fresh();
    const f = file('aged.txt', ['2015550123']);
    clock.now = Date.parse('2026-10-01T12:00:00Z');
    await copies.loadFull([f], '2026-10-01'); // counts from 2026-09-30T10:00Z
    try {
      clock.now = Date.parse('2026-10-31T09:59:00Z'); // 30 days 23:59 after
      expect(await statuses(copies, ['+12015550123', '+12015550124'])).toEqual(['listed', 'not-listed']);
      clock.now = Date.parse('2026-10-31T10:01:00Z');
      expect(await copies.lookup(['+12015550124'])).toEqual([{ list: 'national', status: 'cannot-vouch', reason: 'its copy of 2026-10-01 is 31 days old (31 at most): load a newer copy or change list' }]);
      clock.now = Date.parse('2026-11-10T12:00:00Z');
      await copies.applyChanges(file('aged-changes.txt', ['2015550125,A']), '2026-11-10');
      expect(await statuses(copies, ['+12015550124', '+12015550125'])).toEqual(['not-listed', 'listed']);
      clock.now += 32 * DAY;
      expect(await statuses(copies, ['+12015550124'])).toEqual(['cannot-vouch']);
    } finally {
      clock.now = Date.parse('2026-11-29T12:00:00Z');
    }
  });

  it('answers cannot vouch while the copy record cannot be read; a change list is refused, a full load replaces it', async () => {
    const { copies, keys } = fresh();
    await redis.set(keys.copy('national'), '{"generation": 1');
    expect(await copies.lookup(['+12015550123'])).toEqual([{ list: 'national', status: 'cannot-vouch', reason: 'its copy record in Redis cannot be read: load the list again' }]);
    await expect(copies.applyChanges(file('unreadable-changes.txt', ['2015550123,A']), '2026-11-28'))
      .rejects.toThrow("unreadable-changes.txt: list national's copy record in Redis cannot be read: load the list again");
    await copies.loadFull([file('repair.txt', ['2015550123'])], '2026-11-28');
    expect(await statuses(copies, ['+12015550123', '+12015550124'])).toEqual(['listed', 'not-listed']);
  });

  it('answers cannot vouch for an area code whose bitmap is gone from Redis', async () => {
    const { copies, keys } = fresh();
    const r = await copies.loadFull([file('gone.txt', ['2015550123', '4152220000'])], '2026-11-28');
    await redis.del(keys.bitmap('national', '415', r.generation));
    const answers = await copies.lookup(['+12015550124', '+14152220001']);
    expect(answers[0]!.status).toBe('not-listed');
    expect(answers[1]).toEqual({ list: 'national', status: 'cannot-vouch', reason: 'the bitmap of area code 415 is gone from Redis (evicted, or a load died): load the list again' });
    await expect(copies.applyChanges(file('gone-changes.txt', ['4152220002,A']), '2026-11-28')).rejects.toThrow('the bitmap of area code 415 is gone from Redis');
  });
});

describe('lookups', () => {
  it('answers across lists: the registry, a state list and the company\'s own', async () => {
    const { copies, keys } = fresh();
    const state = new ListCopies(redis, keys, 'texas', { now: () => clock.now });
    const own = new OwnList(redis, keys, 'company', { now: () => clock.now });
    await copies.loadFull([file('n.txt', ['2145550100', '2145550101'])], '2026-11-28');
    await state.loadFull([file('tx.txt', ['2145550101', '2145550102'])], '2026-11-15');
    await own.add(['+12145550103'], { by: 'ivr-opt-out', reason: 'pressed 9' });
    const rows = await lookupAll(['+12145550100', '+12145550102', '+12145550103', '+12145550104'], [copies, state, own]);
    const table = rows.map((r) => [r.phone, ...r.answers.map((a) => `${a.list}:${a.status}`)]);
    expect(table).toEqual([
      ['+12145550100', 'national:listed', 'texas:not-listed', 'company:not-listed'],
      ['+12145550102', 'national:not-listed', 'texas:listed', 'company:not-listed'],
      ['+12145550103', 'national:not-listed', 'texas:not-listed', 'company:listed'],
      ['+12145550104', 'national:not-listed', 'texas:not-listed', 'company:not-listed'],
    ]);
    expect(rows[1]!.answers[1]!.copy).toEqual({ file: 'tx.txt', changes: [], date: '2026-11-15' });
    expect(rows[2]!.answers[2]!.entry).toEqual({ at: new Date(clock.now).toISOString(), by: 'ivr-opt-out', reason: 'pressed 9' });
  });

  it('sees a reload whole or not at all: readers during a switch see the old copy or the new, never a mix', async () => {
    const { copies, keys } = fresh();
    // Copy A lists the even numbers of three area codes, copy B the odd ones: any mix would show in one batch.
    const areaCodes = ['201', '415', '646'];
    const numbers = areaCodes.flatMap((a) => Array.from({ length: 200 }, (_, i) => `${a}${5_550_000 + i}`));
    const a = await copies.loadFull([file('copy-a.txt', numbers.filter((_, i) => i % 2 === 0))], '2026-11-27');
    const phones = numbers.map((n) => `+1${n}`);
    const seen = { a: 0, b: 0 };
    let loading = true;
    const readers = Array.from({ length: 4 }, async () => {
      while (loading) {
        const s = (await copies.lookup(phones)).map((x) => x.status === 'listed' ? 1 : 0).join('');
        const asA = phones.map((_, i) => (i % 2 === 0 ? 1 : 0)).join('');
        const asB = phones.map((_, i) => (i % 2 === 1 ? 1 : 0)).join('');
        expect([asA, asB]).toContain(s);
        seen[s === asA ? 'a' : 'b']++;
      }
    });
    const b = await copies.loadFull([file('copy-b.txt', numbers.filter((_, i) => i % 2 === 1))], '2026-11-28');
    // Readers keep reading a little after the switch (each lookup is a round trip or two; no sleep needed).
    const after = seen.b;
    while (seen.b < after + 8) await copies.lookup(phones.slice(0, 1)).then(() => new Promise((r) => setImmediate(r)));
    loading = false;
    await Promise.all(readers);
    expect(seen.a).toBeGreaterThan(0);
    expect(seen.b).toBeGreaterThan(0);
    expect((await copies.copy())!.generation).toBe(b.generation);
    // The replaced bitmaps lapse within a minute; the new ones stay.
    for (const ac of areaCodes) {
      expect(await redis.pttl(keys.bitmap('national', ac, a.generation))).toBeGreaterThan(0);
      expect(await redis.pttl(keys.bitmap('national', ac, b.generation))).toBe(-1);
    }
  });
});
