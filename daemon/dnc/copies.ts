// Copies of a Do Not Call list (the national registry, or a list of its shape) in Redis: one bitmap per area code, a
// copy record naming its files and date, loaded atomically (the new copy is written under new keys, then one write of
// the record switches every reader to it), change lists applied on top of the copy they follow, and the lookup that
// answers for a batch of phone numbers — "cannot vouch" when the copy is older than 31 days or has no file for the
// number's area code (fail closed), never "not listed".
import { randomBytes } from 'node:crypto';
import { basename } from 'node:path';
import { Cluster } from 'ioredis';
import type { RedisClient } from '../state/connection.ts';
import { DncKeys } from '../state/keys.ts';
import { checkListName, type ListAnswer } from './answers.ts';
import { DEFAULT_CHANGE_LAYOUT, DncFileError, listSources, readNumbers, type ChangeLayout, type NumberBatch } from './files.ts';

/** The safe harbor's age: a copy obtained more than 31 days before a call does not vouch for it (docs/do-not-call.md). */
export const MAX_AGE_DAYS = 31;
const DAY_MS = 86_400_000;
/** 10^7 bits: every 7-digit number of an area code. */
export const BITMAP_BYTES = 1_250_000;
/** A bitmap being loaded lapses unless its load finishes (a process dying mid-load leaves nothing behind for long). */
const STAGING_MS = 6 * 3_600_000;
/** Bitmaps of the copy a switch replaced stay this long for readers that read the old record just before it. */
const REPLACED_MS = 60_000;
/** Bitmaps a load holds in memory at once (1.25 MB each); a file of more area codes has the least recent written out. */
const BITMAPS_IN_MEMORY = 16;

export interface FileRecord {
  /** The file's name (`archive.zip:entry.txt` inside a zip). */
  name: string;
  kind: 'full' | 'changes';
  /** The date of the download it belongs to, as given. */
  date: string;
  lines: number;
  loadedAt: string;
  /** A change list's lines that changed the copy, that changed nothing (already so), and per area code those the copy has no file for. */
  added?: number;
  deleted?: number;
  unchanged?: number;
  skipped?: Record<string, number>;
}

export interface AreaCodeCopy {
  /** The generation whose bitmap holds this area code's numbers now. */
  generation: string;
  /** The full-list files that held the area code's numbers. */
  files: string[];
  numbers: number;
}

/** The record of a list's current copy (the JSON in DncKeys.copy). */
export interface CopyRecord {
  list: string;
  generation: string;
  /** The copy's date: its last file's (a change list's date once one is applied), as given. */
  date: string;
  /** The instant the date counts from for its age (a date without a time: its first moment anywhere, 00:00 at UTC+14). */
  countsFrom: string;
  loadedAt: string;
  full: FileRecord[];
  changes: FileRecord[];
  areaCodes: Record<string, AreaCodeCopy>;
  numbers: number;
}

/**
 * The instant a copy's date counts from. A date alone counts from the earliest moment it is that date anywhere, so a
 * copy is never taken for younger than it is; a time needs its offset. A date in the future is refused.
 */
export function copyInstant(date: string, now: number): number {
  let at = NaN;
  if (/^\d{4}-\d{2}-\d{2}$/.test(date)) at = Date.parse(`${date}T00:00:00+14:00`);
  else if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(date)) at = Date.parse(date);
  if (Number.isNaN(at)) throw new Error(`copy date ${JSON.stringify(date)}: use the download's date, 2026-11-29, or a time with its offset, 2026-11-29T08:00:00-05:00`);
  if (at > now) throw new Error(`copy date ${JSON.stringify(date)} is in the future`);
  return at;
}

/** A record read back from Redis, or why it cannot be read (then the list cannot vouch). */
function decodeRecord(raw: string): CopyRecord | string {
  try {
    const r = JSON.parse(raw) as CopyRecord;
    if (typeof r.generation === 'string' && typeof r.countsFrom === 'string' && r.areaCodes && typeof r.areaCodes === 'object') return r;
  } catch { /* the reason below */ }
  return 'its copy record in Redis cannot be read: load the list again';
}

const newGeneration = () => `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
const pad3 = (n: number) => String(n).padStart(3, '0');

/**
 * The bitmaps of a copy being loaded, by area code, at most BITMAPS_IN_MEMORY in memory: the least recently used is
 * written out to the new generation's key (with the staging expiry) and read back when needed again. `start` gives an
 * area code's first bitmap (empty, or the copy's before a change list).
 */
class StagedBitmaps {
  private readonly held = new Map<string, { buf: Buffer | null; written: boolean }>();
  private inMemory = 0;
  private readonly redis: RedisClient;
  private readonly key: (areaCode: string) => string;
  private readonly start: (areaCode: string) => Promise<Buffer>;
  constructor(redis: RedisClient, key: (a: string) => string, start: (a: string) => Promise<Buffer>) {
    this.redis = redis;
    this.key = key;
    this.start = start;
  }

  get areaCodes(): string[] { return [...this.held.keys()]; }

  async get(areaCode: string): Promise<Buffer> {
    const h = this.held.get(areaCode);
    if (h?.buf) return h.buf;
    if (this.inMemory >= BITMAPS_IN_MEMORY) {
      const [oldest] = [...this.held].find(([, x]) => x.buf)!;
      await this.writeOut(oldest);
    }
    let buf: Buffer;
    if (h?.written) {
      const back = await this.redis.getBuffer(this.key(areaCode));
      if (!back) throw new Error(`the bitmap of area code ${areaCode} being loaded is gone from Redis`);
      buf = back;
    } else {
      buf = await this.start(areaCode);
    }
    // Least recently used first: a file sorted by area code writes each one out once.
    this.held.delete(areaCode);
    this.held.set(areaCode, { buf, written: h?.written ?? false });
    this.inMemory++;
    return buf;
  }

  private async writeOut(areaCode: string): Promise<void> {
    const h = this.held.get(areaCode)!;
    await this.redis.set(this.key(areaCode), h.buf!, 'PX', STAGING_MS);
    h.buf = null;
    h.written = true;
    this.inMemory--;
  }

  async writeAll(): Promise<void> {
    for (const [a, h] of this.held) if (h.buf) await this.writeOut(a);
  }

  /** Every key a failed load may have written. */
  keys(): string[] { return this.areaCodes.map((a) => this.key(a)); }
}

/**
 * The batch's indices grouped by area code, in file order within each (a stable counting sort): each area code's bitmap
 * is fetched once a batch, so a file whose lines jump between more area codes than fit in memory costs a write-out per
 * area code and batch, not per line; a change list's lines of one number keep their order.
 */
const counts = new Uint32Array(1000);
function byAreaCode(batch: NumberBatch): Uint32Array {
  counts.fill(0);
  for (let i = 0; i < batch.length; i++) counts[batch.areaCodes[i]!]!++;
  for (let a = 0, sum = 0; a < 1000; a++) { const c = counts[a]!; counts[a] = sum; sum += c; }
  const order = new Uint32Array(batch.length);
  for (let i = 0; i < batch.length; i++) order[counts[batch.areaCodes[i]!]!++] = i;
  return order;
}

/** An area code's bitmap with no number, bit 0 set: exchange 000 is never a number, the bit says the bitmap exists. */
function emptyBitmap(): Buffer {
  const buf = Buffer.alloc(BITMAP_BYTES);
  buf[0] = 0x80;
  return buf;
}

export interface CopyOptions {
  now?: () => number;
  /** Days a copy vouches for (MAX_AGE_DAYS, the registry's, by default). */
  maxAgeDays?: number;
  /**
   * The list's files hold every number it has (a state's list), not one file per subscribed area code (the registry):
   * an area code the copy has no file for holds none of its numbers, instead of being unvouched.
   */
  whole?: boolean;
}

/** One list's copies: load, apply change lists, look up. */
export class ListCopies {
  readonly list: string;
  private readonly redis: RedisClient;
  private readonly keys: DncKeys;
  private readonly now: () => number;
  readonly maxAgeDays: number;
  private readonly whole: boolean;
  constructor(redis: RedisClient, keys: DncKeys, list: string, options: CopyOptions = {}) {
    this.redis = redis;
    this.keys = keys;
    this.list = checkListName(list);
    this.now = options.now ?? Date.now;
    this.maxAgeDays = options.maxAgeDays ?? MAX_AGE_DAYS;
    this.whole = options.whole ?? false;
  }

  /** The current copy's record, or null when none was loaded. Throws when the record cannot be read. */
  async copy(): Promise<CopyRecord | null> {
    const { record, unreadable } = await this.current();
    if (unreadable) throw new Error(`Do Not Call list ${this.list}: ${unreadable}`);
    return record;
  }

  /** The record as stored (what a switch expects to find unchanged) and decoded, or why it cannot be read. */
  private async current(): Promise<{ raw: string | null; record: CopyRecord | null; unreadable?: string }> {
    const raw = await this.redis.get(this.keys.copy(this.list));
    if (raw === null) return { raw, record: null };
    const r = decodeRecord(raw);
    return typeof r === 'string' ? { raw, record: null, unreadable: r } : { raw, record: r };
  }

  /**
   * Loads a new copy from full-list files (each a file of numbers or a .zip of them), all of one download dated `date`.
   * All or nothing: a line that is not a number refuses the load (DncFileError names file and line), and the copy
   * readers see stays the one before. The new copy covers the area codes its files hold numbers of.
   */
  async loadFull(paths: string[], date: string): Promise<CopyRecord> {
    const now = this.now();
    const countsFrom = copyInstant(date, now);
    if (!paths.length) throw new Error(`Do Not Call list ${this.list}: a full copy needs at least one file`);
    // A record that cannot be read is replaced (its bitmaps, unknown, lapse with no reader or stay): the fix it asks for.
    const { raw, record: before } = await this.current();
    const generation = newGeneration();
    const staged = new StagedBitmaps(this.redis, (a) => this.keys.bitmap(this.list, a, generation), async () => emptyBitmap());
    const filesOf = new Map<string, Set<string>>();
    const files: Array<Omit<FileRecord, 'loadedAt'>> = [];
    return this.publish(staged, raw, before, async () => {
      for (const path of paths) {
        for (const source of await listSources(path)) {
          const lines = await readNumbers(source, 'full', async (batch: NumberBatch) => {
            let current = -1;
            let buf: Buffer | null = null;
            for (const i of byAreaCode(batch)) {
              const a = batch.areaCodes[i]!;
              if (a !== current) {
                const areaCode = pad3(a);
                buf = await staged.get(areaCode);
                current = a;
                let f = filesOf.get(areaCode);
                if (!f) filesOf.set(areaCode, f = new Set());
                f.add(source.name);
              }
              const off = batch.offsets[i]!;
              buf![off >>> 3]! |= 0x80 >>> (off & 7);
            }
          });
          files.push({ name: source.name, kind: 'full', date, lines });
        }
      }
      if (!filesOf.size) throw new DncFileError(paths.map((p) => basename(p)).join(', '), undefined, 'no number in the files: a copy needs the numbers of at least one area code');
      await staged.writeAll();
      const areaCodes: Record<string, AreaCodeCopy> = {};
      for (const a of [...filesOf.keys()].sort()) {
        const bits = await this.redis.bitcount(this.keys.bitmap(this.list, a, generation));
        areaCodes[a] = { generation, files: [...filesOf.get(a)!], numbers: bits - 1 };
      }
      const loadedAt = new Date(this.now()).toISOString();
      const record: CopyRecord = {
        list: this.list, generation, date, countsFrom: new Date(countsFrom).toISOString(), loadedAt,
        full: files.map((f) => ({ ...f, loadedAt })), changes: [], areaCodes,
        numbers: Object.values(areaCodes).reduce((n, a) => n + a.numbers, 0),
      };
      return record;
    });
  }

  /**
   * Applies a change list (numbers added to and deleted from the list since the copy's download) on top of the current
   * copy, as a new copy dated `date`: the touched area codes' bitmaps are read, changed in memory and written under new
   * keys, then the record switches. Lines of area codes the copy has no file for are counted as skipped (those numbers still
   * cannot be vouched for); a whole list (a state's) takes them, its area code starting empty. A refused line, or a copy switched meanwhile by another process, stores nothing.
   */
  async applyChanges(path: string, date: string, layout: ChangeLayout = DEFAULT_CHANGE_LAYOUT): Promise<CopyRecord> {
    const now = this.now();
    const countsFrom = copyInstant(date, now);
    const { raw, record: before, unreadable } = await this.current();
    const name = basename(path);
    if (unreadable) throw new DncFileError(name, undefined, `list ${this.list}'s ${unreadable.replace(/^its /, '')}`);
    if (!before) throw new DncFileError(name, undefined, `a change list follows a copy, and list ${this.list} has none yet: load its full list first`);
    if (countsFrom < Date.parse(before.countsFrom)) {
      throw new DncFileError(name, undefined, `dated ${date}, before the copy it would change (${before.date}): change lists are applied in the order of their downloads`);
    }
    const generation = newGeneration();
    const staged = new StagedBitmaps(
      this.redis, (a) => this.keys.bitmap(this.list, a, generation),
      async (a) => {
        // A whole list's area code without numbers yet starts empty (a change list may add its first).
        if (!before.areaCodes[a]) return emptyBitmap();
        const buf = await this.redis.getBuffer(this.keys.bitmap(this.list, a, before.areaCodes[a]!.generation));
        if (!buf || buf.length !== BITMAP_BYTES || !(buf[0]! & 0x80)) {
          throw new Error(`Do Not Call list ${this.list}: the bitmap of area code ${a} is gone from Redis (evicted?): load the full list again`);
        }
        return buf;
      },
    );
    const changes: FileRecord[] = [];
    return this.publish(staged, raw, before, async () => {
      for (const source of await listSources(path)) {
        const skipped: Record<string, number> = {};
        let added = 0, deleted = 0, unchanged = 0;
        const lines = await readNumbers(source, 'changes', async (batch) => {
          let current = -1;
          let buf: Buffer | null = null;
          for (const i of byAreaCode(batch)) {
            const n = batch.areaCodes[i]!;
            if (n !== current) {
              const a = pad3(n);
              current = n;
              buf = before.areaCodes[a] || this.whole ? await staged.get(a) : null;
            }
            if (!buf) {
              const a = pad3(n);
              skipped[a] = (skipped[a] ?? 0) + 1;
              continue;
            }
            const off = batch.offsets[i]!;
            const at = off >>> 3, mask = 0x80 >>> (off & 7);
            const was = (buf[at]! & mask) !== 0;
            if (batch.adds[i]) {
              if (was) unchanged++;
              else { buf[at]! |= mask; added++; }
            } else if (!was) {
              unchanged++;
            } else {
              buf[at]! &= ~mask;
              deleted++;
            }
          }
        }, layout);
        changes.push({ name: source.name, kind: 'changes', date, lines, loadedAt: '', added, deleted, unchanged, ...(Object.keys(skipped).length ? { skipped } : {}) });
      }
      await staged.writeAll();
      const loadedAt = new Date(this.now()).toISOString();
      const areaCodes = { ...before.areaCodes };
      for (const a of staged.areaCodes) {
        const bits = await this.redis.bitcount(this.keys.bitmap(this.list, a, generation));
        areaCodes[a] = { files: [], ...before.areaCodes[a], generation, numbers: bits - 1 };
      }
      const record: CopyRecord = {
        ...before, generation, date, countsFrom: new Date(countsFrom).toISOString(), loadedAt,
        changes: [...before.changes, ...changes.map((c) => ({ ...c, loadedAt }))],
        areaCodes, numbers: Object.values(areaCodes).reduce((n, a) => n + a.numbers, 0),
      };
      return record;
    });
  }

  /**
   * Stages a new copy's bitmaps and record (`build`), switches readers to it unless another process switched first,
   * then lets the replaced copy's keys lapse; on any failure the staged bitmaps are discarded and readers keep the copy
   * before.
   */
  private async publish(staged: StagedBitmaps, raw: string | null, before: CopyRecord | null, build: () => Promise<CopyRecord>): Promise<CopyRecord> {
    let record: CopyRecord;
    try {
      record = await build();
      await this.switchTo(record, raw);
    } catch (err) {
      await this.discard(staged.keys());
      throw err;
    }
    await this.settle(record, before);
    return record;
  }

  /**
   * Makes `record` the copy, if the stored record is still `raw` (another process's load meanwhile refuses this one: its
   * bitmaps were made from what it replaced).
   */
  private async switchTo(record: CopyRecord, raw: string | null): Promise<void> {
    const key = this.keys.copy(this.list);
    // Its own connection: WATCH holds for a connection, and the shared one carries other callers' commands.
    const c: RedisClient = this.redis instanceof Cluster ? this.redis.duplicate() : this.redis.duplicate();
    try {
      await c.watch(key);
      const changed = () => new Error(`Do Not Call list ${this.list}: another load switched the copy while this one was loading; nothing of this one was kept: load it again`);
      if (await c.get(key) !== raw) {
        await c.unwatch();
        throw changed();
      }
      const done = await c.multi().set(key, JSON.stringify(record)).exec();
      if (!done) throw changed();
    } finally {
      c.disconnect();
    }
  }

  /**
   * After a switch: the new bitmaps lose their staging expiry and the replaced ones get REPLACED_MS. A crash before
   * leaves the new bitmaps to lapse: lookups then say the bitmap is gone (failing closed) until the next load.
   */
  private async settle(record: CopyRecord, before: CopyRecord | null): Promise<void> {
    const fresh = Object.entries(record.areaCodes).filter(([, a]) => a.generation === record.generation);
    await Promise.all(fresh.map(([a]) => this.redis.persist(this.keys.bitmap(this.list, a, record.generation))));
    if (before) {
      const replaced = Object.entries(before.areaCodes).filter(([a, x]) => record.areaCodes[a]?.generation !== x.generation);
      await Promise.all(replaced.map(([a, x]) => this.redis.pexpire(this.keys.bitmap(this.list, a, x.generation), REPLACED_MS)));
    }
  }

  private async discard(keys: string[]): Promise<void> {
    await Promise.all(keys.map((k) => this.redis.unlink(k).catch(() => 0))); // they lapse anyway (STAGING_MS)
  }

  /** The record the last lookup read: the next one asks for its bits at once, beside the record (see lookup). */
  private lastRecord: CopyRecord | null = null;
  private lastRaw: string | null = null;

  /**
   * For each phone number (E.164), whether this list holds it and which copy answered. One round trip in the steady
   * state: the record and one BITFIELD_RO per area code of the batch are sent at once, the bits read under the copy the
   * last lookup saw; when the record read shows another copy (a load or change list switched it, once a day at most),
   * the bits are asked again under it, a second round trip.
   */
  async lookup(phones: readonly string[]): Promise<ListAnswer[]> {
    const now = this.now();
    // The record and its text as the last lookup left them, taken together (lookups run concurrently).
    const guess = this.lastRecord;
    const guessRaw = this.lastRaw;
    const early = guess ? this.judge(phones, guess, now) : null;
    const earlyBits = early ? this.bits(guess!, early.byAreaCode, phones) : null;
    // A guess that turns out wrong is dropped; its errors (a bitmap gone since) must not go unhandled.
    earlyBits?.catch(() => {});
    const raw = await this.redis.get(this.keys.copy(this.list));
    // The record's text unchanged since the last lookup: its decoding too (every batch would parse it again).
    const decoded = raw === null ? `no copy is loaded: load the list's full files` : raw === guessRaw && guess ? guess : decodeRecord(raw);
    const record = typeof decoded === 'string' ? null : decoded;
    this.lastRecord = record;
    this.lastRaw = record ? raw : null;
    if (!record) {
      return phones.map((phone) => this.outsideOrBad(phone) ?? { list: this.list, status: 'cannot-vouch', reason: decoded as string });
    }
    const same = guess !== null && guess.generation === record.generation && early !== null;
    const judged = same ? early! : this.judge(phones, record, now);
    const bits = same ? await earlyBits! : await this.bits(record, judged.byAreaCode, phones);
    const { answers } = judged;
    const changes = record.changes.map((c) => c.name);
    for (const [areaCode, indices] of judged.byAreaCode) {
      const entry = record.areaCodes[areaCode]!;
      const got = bits.get(areaCode)!;
      const copy = { file: entry.files.join(', '), changes, date: record.date };
      indices.forEach((i, k) => {
        answers[i] = got[0] !== 1
          ? { list: this.list, status: 'cannot-vouch', reason: `the bitmap of area code ${areaCode} is gone from Redis (evicted, or a load died): load the list again` }
          : { list: this.list, status: got[k + 1] === 1 ? 'listed' : 'not-listed', copy };
      });
    }
    return answers;
  }

  /** A number the list does not cover, or cannot be a NANP number: its answer; null for a 10-digit +1 number. */
  private outsideOrBad(phone: string): ListAnswer | null {
    if (/^\+1\d{10}$/.test(phone)) return null;
    return /^\+1/.test(phone)
      ? { list: this.list, status: 'cannot-vouch', reason: `${phone} is not a 10-digit NANP number` }
      : { list: this.list, status: 'outside', reason: 'the list holds NANP (+1) numbers only' };
  }

  /** The answers a record gives without its bits (not a NANP number, a copy too old, no file for the area code), and the numbers to read bits for, by area code. */
  private judge(phones: readonly string[], record: CopyRecord, now: number): { answers: ListAnswer[]; byAreaCode: Map<string, number[]> } {
    const list = this.list;
    const answers: ListAnswer[] = new Array(phones.length);
    const ageDays = (now - Date.parse(record.countsFrom)) / DAY_MS;
    const stale = ageDays > this.maxAgeDays ? `its copy of ${record.date} is ${Math.floor(ageDays)} days old (${this.maxAgeDays} at most): load a newer copy or change list` : null;
    const byAreaCode = new Map<string, number[]>();
    phones.forEach((phone, i) => {
      const other = this.outsideOrBad(phone);
      if (other) { answers[i] = other; return; }
      const areaCode = phone.slice(2, 5);
      if (stale) { answers[i] = { list, status: 'cannot-vouch', reason: stale }; return; }
      if (!record.areaCodes[areaCode]) {
        answers[i] = this.whole
          ? { list, status: 'not-listed', copy: { file: '(no number of the area code)', changes: record.changes.map((c) => c.name), date: record.date } }
          : { list, status: 'cannot-vouch', reason: `its copy of ${record.date} has no file for area code ${areaCode}: add that area code's full list` };
        return;
      }
      if (Number(phone.slice(5)) < 2_000_000) {
        answers[i] = { list, status: 'cannot-vouch', reason: `${phone} is not a NANP number (its exchange starts with 0 or 1)` };
        return;
      }
      let at = byAreaCode.get(areaCode);
      if (!at) byAreaCode.set(areaCode, at = []);
      at.push(i);
    });
    return { answers, byAreaCode };
  }

  /** Bit 0 (the bitmap exists) and each number's bit, per area code, under the record's generations: sent at once. */
  private async bits(record: CopyRecord, byAreaCode: Map<string, number[]>, phones: readonly string[]): Promise<Map<string, number[]>> {
    const out = new Map<string, number[]>();
    await Promise.all([...byAreaCode].map(async ([areaCode, indices]) => {
      const args: (string | number)[] = ['GET', 'u1', 0];
      // The offset as the number's own 7 digits (no leading zero: an exchange starts with 2-9), not converted twice.
      for (const i of indices) args.push('GET', 'u1', phones[i]!.slice(5));
      out.set(areaCode, await this.redis.call('BITFIELD_RO', this.keys.bitmap(this.list, areaCode, record.areaCodes[areaCode]!.generation), ...args) as number[]);
    }));
    return out;
  }
}
