// Writes Do Not Call registry files as the registry's download gives them (a stand-in for the FTC's site): full lists
// (a file per area code, or one of the whole registry; `2015550123` or `201,5550123` a line) and change lists
// (`2015550123,A` / `2015550123,D`), plain or zipped (stored or deflated, ZIP64 when large). Which numbers are listed
// is a pure function of a seed and the number, so whoever wrote the files can say of any number whether they list it
// without reading them back; files are written as a stream, in memory that does not grow with their size.
import { once } from 'node:events';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32, createDeflateRaw } from 'node:zlib';

/** A number of an area code is its 7 digits; exchanges 200-999 are numbers (0xx and 1xx are not). */
const FIRST = 2_000_000;
/** Numbers an area code can hold. */
export const NUMBERS_PER_AREA_CODE = 8_000_000;

// ------------------------------------------------------------------------------ which numbers are listed

/** What a registry's full lists hold: the numbers of `areaCodes` whose draw under `seed` falls below `density`. */
export interface RegistrySpec {
  seed: string | number;
  /** Share of each area code's 8,000,000 numbers listed, 0 to 1. */
  density: number;
  areaCodes: readonly string[];
}

/**
 * What a change list changes: each number of `areaCodes` whose draw under `seed` (independent of the registry's) falls
 * below `density` changes its listing — deleted when listed before it, added when not.
 */
export type ChangeListSpec = RegistrySpec;

/** A 32-bit finalizer (MurmurHash3's): every input bit reaches every output bit, and it is a bijection. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A seed as 32 bits: FNV-1a of its text, mixed. */
function seedBits(seed: string | number): number {
  const text = String(seed);
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return mix(h);
}

/** Change lists draw under another salt, so a change list with the registry's own seed is not its mirror image. */
const CHANGE_SALT = 0x5bd1e995;

/** The key of an area code's draws under a seed. */
const areaKey = (seedKey: number, areaCode: number) => mix(seedKey ^ Math.imul(areaCode, 0x9e3779b1));
/** A number's draw, uniform over 32 bits; distinct numbers of one area code draw distinct values. */
const draw = (key: number, offset: number) => mix(key ^ Math.imul(offset, 0x27d4eb2f));
/** Draws below this are listed (density 1: every draw). */
const threshold = (density: number) => Math.floor(density * 2 ** 32);

function checkSeed(seed: unknown): string | number {
  if ((typeof seed === 'string' && seed !== '') || (typeof seed === 'number' && Number.isFinite(seed))) return seed;
  throw new TypeError(`the registry's seed must be a non-empty string or a finite number; got ${JSON.stringify(seed)}`);
}

function checkDensity(density: unknown, what = 'density'): number {
  if (typeof density !== 'number' || !(density >= 0 && density <= 1)) throw new RangeError(`${what} must be a share between 0 and 1; got ${JSON.stringify(density)}`);
  return density;
}

/** Why a text is not an area code of a NANP number, or null (2-9 then two digits; N11 is a service code). */
function areaCodeProblem(areaCode: string): string | null {
  if (!/^[2-9]\d\d$/.test(areaCode)) return `${JSON.stringify(areaCode)} is not an area code (3 digits, the first 2-9)`;
  if (areaCode.endsWith('11')) return `${areaCode} is a service code (N11), not an area code`;
  return null;
}

function checkAreaCodes(areaCodes: unknown): string[] {
  if (!Array.isArray(areaCodes) || !areaCodes.length) throw new TypeError(`areaCodes must be a non-empty list of area codes (e.g. ['201', '415']) or a count; got ${JSON.stringify(areaCodes)}`);
  const seen = new Set<string>();
  for (const a of areaCodes) {
    const problem = typeof a === 'string' ? areaCodeProblem(a) : `${JSON.stringify(a)} is not an area code (give it as a 3-digit string)`;
    if (problem) throw new RangeError(`areaCodes: ${problem}`);
    if (seen.has(a)) throw new RangeError(`areaCodes: ${a} is given twice`);
    seen.add(a);
  }
  return areaCodes as string[];
}

/**
 * The area codes a registry is made of here: 2-9, then 0-8, then 0-9, as geographic area codes are, without the N11
 * service codes and the N00 non-geographic ones (800 toll-free...): 704.
 */
const ALL_AREA_CODES: readonly string[] = (() => {
  const out: string[] = [];
  for (let a = 200; a < 1000; a++) if (Math.floor(a / 10) % 10 !== 9 && a % 100 !== 11 && a % 100 !== 0) out.push(String(a));
  return out;
})();

/**
 * `count` area codes, spread evenly over the 704 (330 of them are 201, 203, 205...), so that a few already cover the
 * first digits 2-9. At most 704.
 */
export function registryAreaCodes(count: number): string[] {
  if (!Number.isInteger(count) || count < 1 || count > ALL_AREA_CODES.length) {
    throw new RangeError(`a registry of ${count} area codes: give 1 to ${ALL_AREA_CODES.length}`);
  }
  const step = ALL_AREA_CODES.length / count;
  return Array.from({ length: count }, (_, i) => ALL_AREA_CODES[Math.floor(i * step)]!);
}

/** The density that lists about `numbers` numbers over `areaCodes` area codes. */
export function densityFor(numbers: number, areaCodes: number): number {
  const capacity = areaCodes * NUMBERS_PER_AREA_CODE;
  if (!Number.isInteger(numbers) || numbers < 0 || numbers > capacity) {
    throw new RangeError(`${numbers} numbers over ${areaCodes} area codes: give 0 to ${capacity.toLocaleString('en-US')} (8,000,000 an area code)`);
  }
  return numbers / capacity;
}

/** A phone number (E.164 `+12015550123`, 10 digits, or their number) as area code and 7-digit offset; throws when it is not one. */
function splitPhone(phone: string | number): { areaCode: number; offset: number } {
  const m = /^(?:\+1)?(\d{3})(\d{7})$/.exec(String(phone));
  if (!m) throw new RangeError(`${JSON.stringify(phone)} is not a NANP phone number (+12015550123 or 2015550123)`);
  return { areaCode: Number(m[1]), offset: Number(m[2]) };
}

/**
 * A reader of the listing `spec` and `changes` give: whether a number (area code and 7-digit offset) is listed. The
 * keys of each area code are worked out once.
 */
function listing(spec: RegistrySpec, changes: readonly ChangeListSpec[]): (areaCode: number, offset: number) => boolean {
  const keysOf = (s: RegistrySpec, salt: number) => {
    const seedKey = seedBits(s.seed) ^ salt;
    return { below: threshold(s.density), keys: new Map(s.areaCodes.map((a) => [Number(a), areaKey(seedKey, Number(a))])) };
  };
  const full = keysOf(spec, 0);
  const changed = changes.map((c) => keysOf(c, CHANGE_SALT));
  const drawn = (k: { below: number; keys: Map<number, number> }, areaCode: number, offset: number) => {
    const key = k.keys.get(areaCode);
    return key !== undefined && draw(key, offset) < k.below;
  };
  return (areaCode, offset) => {
    if (offset < FIRST) return false;
    let listed = drawn(full, areaCode, offset);
    for (const c of changed) if (drawn(c, areaCode, offset)) listed = !listed;
    return listed;
  };
}

/**
 * Whether the registry `spec` lists `phone`, after the change lists `changes` (in the order they were applied). A number
 * of an area code the registry has no file for is not listed (a copy of it cannot vouch for the number either).
 */
export function isListed(spec: RegistrySpec, phone: string | number, changes: readonly ChangeListSpec[] = []): boolean {
  const { areaCode, offset } = splitPhone(phone);
  return listing(spec, changes)(areaCode, offset);
}

/**
 * `count` distinct phone numbers (E.164) of the registry's area codes whose listing is `listed` (after `changes`): the
 * area codes in turn, walking each from a point of its own (`start` moves every walk, for another sample).
 */
function sample(spec: RegistrySpec, count: number, listed: boolean, changes: readonly ChangeListSpec[], start: number): string[] {
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`a sample of ${count} numbers: give a non-negative integer`);
  if (!Number.isInteger(start) || start < 0) throw new RangeError(`start must be a non-negative integer; got ${start}`);
  const isIn = listing(spec, changes);
  const out: string[] = [];
  const seedKey = seedBits(spec.seed);
  const walks = spec.areaCodes.map((a, i) => ({
    areaCode: Number(a), at: FIRST + (mix(seedKey ^ Math.imul(i + 1, 0x632be5ab) ^ mix(start)) % NUMBERS_PER_AREA_CODE), walked: 0, done: false,
  }));
  let exhausted = 0;
  for (let i = 0; out.length < count; i++) {
    const w = walks[i % walks.length]!;
    if (w.done) continue;
    let found = false;
    while (w.walked < NUMBERS_PER_AREA_CODE && !found) {
      if (isIn(w.areaCode, w.at) === listed) { out.push(`+1${w.areaCode}${w.at}`); found = true; }
      w.at = w.at + 1 === FIRST + NUMBERS_PER_AREA_CODE ? FIRST : w.at + 1;
      w.walked++;
    }
    if (!found) {
      w.done = true;
      if (++exhausted === walks.length) throw new RangeError(`the registry has only ${out.length} ${listed ? 'listed' : 'unlisted'} numbers; ${count} were asked`);
    }
  }
  return out;
}

/** `count` distinct numbers (E.164) the registry lists (after `changes`), spread over its area codes. */
export function listedNumbers(spec: RegistrySpec, count: number, options: { changes?: readonly ChangeListSpec[]; start?: number } = {}): string[] {
  return sample(spec, count, true, options.changes ?? [], options.start ?? 0);
}

/** `count` distinct numbers (E.164) of the registry's area codes it does not list (after `changes`), spread over them. */
export function unlistedNumbers(spec: RegistrySpec, count: number, options: { changes?: readonly ChangeListSpec[]; start?: number } = {}): string[] {
  return sample(spec, count, false, options.changes ?? [], options.start ?? 0);
}

// ------------------------------------------------------------------------------ where the bytes go

/** A file being written: the bytes of its lines, in order. */
interface LineSink {
  write(chunk: Buffer): Promise<void>;
}

/** A file written at explicit positions (a zip's headers are filled in once their entry is written). */
class Output {
  private readonly fh: FileHandle;
  position = 0;
  private constructor(fh: FileHandle) { this.fh = fh; }
  static async create(path: string): Promise<Output> { return new Output(await open(path, 'w')); }
  async append(chunk: Buffer): Promise<void> {
    let done = 0;
    while (done < chunk.length) {
      const { bytesWritten } = await this.fh.write(chunk, done, chunk.length - done, this.position);
      done += bytesWritten;
      this.position += bytesWritten;
    }
  }
  async writeAt(position: number, chunk: Buffer): Promise<void> { await this.fh.write(chunk, 0, chunk.length, position); }
  async close(): Promise<void> { await this.fh.close(); }
}

const MAX32 = 0xffffffff;
/** 1980-01-01 00:00, the DOS epoch: the same seed writes the same bytes whenever it runs. */
const DOS_TIME = 0;
const DOS_DATE = (1 << 5) | 1;

interface WrittenEntry {
  name: Buffer;
  method: number;
  crc: number;
  compressedSize: number;
  size: number;
  headerOffset: number;
}

/**
 * A .zip archive written as a stream (the structure daemon/dnc/zip.ts reads, and Info-ZIP's unzip): each entry's
 * local header, its bytes (stored, or deflated as they come), then its CRC-32 and sizes written back into the header;
 * at the end the central directory, with ZIP64 records where a size, an offset or the count needs them (or always,
 * with `zip64`).
 */
class ZipArchive {
  private readonly out: Output;
  private readonly entries: WrittenEntry[] = [];
  private readonly method: number;
  private readonly level: number;
  private readonly zip64: boolean;
  private constructor(out: Output, method: number, level: number, zip64: boolean) {
    this.out = out;
    this.method = method;
    this.level = level;
    this.zip64 = zip64;
  }

  static async create(path: string, options: { deflate: boolean; level: number; zip64: boolean }): Promise<ZipArchive> {
    return new ZipArchive(await Output.create(path), options.deflate ? 8 : 0, options.level, options.zip64);
  }

  /**
   * Writes one entry: `fill` writes its bytes to the sink it is given. `mayExceed4GB` reserves the local header's
   * ZIP64 field (its sizes are not known before the bytes are written).
   */
  async entry(name: string, mayExceed4GB: boolean, fill: (sink: LineSink) => Promise<void>): Promise<void> {
    const nameBytes = Buffer.from(name, 'utf8');
    const local64 = mayExceed4GB || this.zip64;
    const header = Buffer.alloc(30 + nameBytes.length + (local64 ? 20 : 0));
    header.writeUInt32LE(0x04034b50, 0);
    header.writeUInt16LE(local64 ? 45 : 20, 4);
    header.writeUInt16LE(0x0800, 6); // names in UTF-8
    header.writeUInt16LE(this.method, 8);
    header.writeUInt16LE(DOS_TIME, 10);
    header.writeUInt16LE(DOS_DATE, 12);
    header.writeUInt16LE(nameBytes.length, 26);
    header.writeUInt16LE(local64 ? 20 : 0, 28);
    nameBytes.copy(header, 30);
    if (local64) {
      header.writeUInt16LE(1, 30 + nameBytes.length);
      header.writeUInt16LE(16, 32 + nameBytes.length);
    }
    const headerOffset = this.out.position;
    await this.out.append(header);

    let crc = 0;
    let size = 0;
    const dataStart = this.out.position;
    if (this.method === 0) {
      await fill({
        write: async (chunk) => {
          crc = crc32(chunk, crc);
          size += chunk.length;
          await this.out.append(chunk);
        },
      });
    } else {
      const deflate = createDeflateRaw({ level: this.level });
      const drained = (async () => { for await (const c of deflate) await this.out.append(c as Buffer); })();
      drained.catch(() => {}); // awaited below; a failure meanwhile also ends the waits for 'drain'
      await fill({
        write: async (chunk) => {
          crc = crc32(chunk, crc);
          size += chunk.length;
          if (!deflate.write(chunk)) await Promise.race([once(deflate, 'drain'), drained]);
        },
      });
      deflate.end();
      await drained;
    }
    const compressedSize = this.out.position - dataStart;
    if (!local64 && (size >= MAX32 || compressedSize >= MAX32)) {
      throw new Error(`zip entry ${name} grew past 4 GB without a ZIP64 header: this is a bug of the generator`);
    }
    const sizes = Buffer.alloc(12);
    sizes.writeUInt32LE(crc, 0);
    sizes.writeUInt32LE(local64 ? MAX32 : compressedSize, 4);
    sizes.writeUInt32LE(local64 ? MAX32 : size, 8);
    await this.out.writeAt(headerOffset + 14, sizes);
    if (local64) {
      const sizes64 = Buffer.alloc(16);
      sizes64.writeBigUInt64LE(BigInt(size), 0);
      sizes64.writeBigUInt64LE(BigInt(compressedSize), 8);
      await this.out.writeAt(headerOffset + 34 + nameBytes.length, sizes64);
    }
    this.entries.push({ name: nameBytes, method: this.method, crc, compressedSize, size, headerOffset });
  }

  /** Writes the central directory and closes the file; returns the archive's size. */
  async close(): Promise<number> {
    const cdOffset = this.out.position;
    for (const e of this.entries) {
      // Values that do not fit 32 bits (or all, with zip64) go to the ZIP64 extra field, in this order.
      const big = [e.size, e.compressedSize, e.headerOffset].map((v) => this.zip64 || v >= MAX32);
      const extra64 = [e.size, e.compressedSize, e.headerOffset].filter((_, i) => big[i]);
      const extraLength = extra64.length ? 4 + 8 * extra64.length : 0;
      const h = Buffer.alloc(46 + e.name.length + extraLength);
      h.writeUInt32LE(0x02014b50, 0);
      h.writeUInt16LE((3 << 8) | 45, 4); // made on Unix, by a ZIP64-aware writer
      h.writeUInt16LE(extra64.length ? 45 : 20, 6);
      h.writeUInt16LE(0x0800, 8);
      h.writeUInt16LE(e.method, 10);
      h.writeUInt16LE(DOS_TIME, 12);
      h.writeUInt16LE(DOS_DATE, 14);
      h.writeUInt32LE(e.crc, 16);
      h.writeUInt32LE(big[1] ? MAX32 : e.compressedSize, 20);
      h.writeUInt32LE(big[0] ? MAX32 : e.size, 24);
      h.writeUInt16LE(e.name.length, 28);
      h.writeUInt16LE(extraLength, 30);
      h.writeUInt16LE(1, 36); // a text file
      h.writeUInt32LE((0o100644 << 16) >>> 0, 38);
      h.writeUInt32LE(big[2] ? MAX32 : e.headerOffset, 42);
      e.name.copy(h, 46);
      if (extra64.length) {
        let p = 46 + e.name.length;
        h.writeUInt16LE(1, p);
        h.writeUInt16LE(8 * extra64.length, p + 2);
        p += 4;
        for (const v of extra64) { h.writeBigUInt64LE(BigInt(v), p); p += 8; }
      }
      await this.out.append(h);
    }
    const cdSize = this.out.position - cdOffset;
    const need64 = this.zip64 || this.entries.length >= 0xffff || cdOffset >= MAX32 || cdSize >= MAX32;
    if (need64) {
      const at = this.out.position;
      const z = Buffer.alloc(56 + 20);
      z.writeUInt32LE(0x06064b50, 0);
      z.writeBigUInt64LE(44n, 4);
      z.writeUInt16LE((3 << 8) | 45, 12);
      z.writeUInt16LE(45, 14);
      z.writeBigUInt64LE(BigInt(this.entries.length), 24);
      z.writeBigUInt64LE(BigInt(this.entries.length), 32);
      z.writeBigUInt64LE(BigInt(cdSize), 40);
      z.writeBigUInt64LE(BigInt(cdOffset), 48);
      z.writeUInt32LE(0x07064b50, 56);
      z.writeBigUInt64LE(BigInt(at), 64);
      z.writeUInt32LE(1, 72);
      await this.out.append(z);
    }
    const end = Buffer.alloc(22);
    end.writeUInt32LE(0x06054b50, 0);
    end.writeUInt16LE(need64 ? 0xffff : this.entries.length, 8);
    end.writeUInt16LE(need64 ? 0xffff : this.entries.length, 10);
    end.writeUInt32LE(need64 ? MAX32 : cdSize, 12);
    end.writeUInt32LE(need64 ? MAX32 : cdOffset, 16);
    await this.out.append(end);
    await this.out.close();
    return this.out.position;
  }

  async abandon(): Promise<void> { await this.out.close().catch(() => {}); }
}

// ------------------------------------------------------------------------------ lines

const CHUNK = 1 << 20;
/** The 4 last digits of every number, as text: a line is its area code, its exchange and 4 bytes from here. */
const LAST_FOUR = Buffer.from(Array.from({ length: 10_000 }, (_, i) => String(i).padStart(4, '0')).join(''), 'latin1');

interface LineFormat {
  /** `201,5550123` rather than `2015550123`. */
  comma: boolean;
  eol: Buffer;
}

/**
 * Writes the lines of one area code: every number whose draw under `key` falls below `below`, in ascending order; a
 * change list's lines end with `,A` or `,D` as `action` says. Returns the number of lines.
 */
async function writeAreaCode(
  sink: LineSink, areaCode: string, key: number, below: number, format: LineFormat,
  action: ((offset: number) => 'A' | 'D') | null, progress: (lines: number) => void,
): Promise<{ lines: number; added: number }> {
  const prefix = Buffer.from(format.comma ? `${areaCode},` : areaCode, 'latin1');
  const lineLength = prefix.length + 7 + (action ? 2 : 0) + format.eol.length;
  let buf = Buffer.allocUnsafe(CHUNK);
  let at = 0;
  let lines = 0;
  let added = 0;
  for (let exchange = 200; exchange < 1000; exchange++) {
    const e0 = 48 + Math.floor(exchange / 100), e1 = 48 + (Math.floor(exchange / 10) % 10), e2 = 48 + (exchange % 10);
    const base = exchange * 10_000;
    for (let last = 0; last < 10_000; last++) {
      if (draw(key, base + last) >= below) continue;
      if (at + lineLength > CHUNK) {
        // A fresh buffer each time: a deflating sink holds the one given until it is compressed.
        await sink.write(buf.subarray(0, at));
        progress(lines);
        buf = Buffer.allocUnsafe(CHUNK);
        at = 0;
      }
      prefix.copy(buf, at);
      at += prefix.length;
      buf[at++] = e0;
      buf[at++] = e1;
      buf[at++] = e2;
      const f = last * 4;
      buf[at++] = LAST_FOUR[f]!;
      buf[at++] = LAST_FOUR[f + 1]!;
      buf[at++] = LAST_FOUR[f + 2]!;
      buf[at++] = LAST_FOUR[f + 3]!;
      if (action) {
        const a = action(base + last);
        if (a === 'A') added++;
        buf[at++] = 44;
        buf[at++] = a === 'A' ? 65 : 68;
      }
      format.eol.copy(buf, at);
      at += format.eol.length;
      lines++;
    }
  }
  if (at) await sink.write(buf.subarray(0, at));
  progress(lines);
  return { lines, added };
}

// ------------------------------------------------------------------------------ files

export interface FileOptions {
  /** The folder the files go to (made when missing; files of the same names are replaced). */
  dir: string;
  /** Plain text (absent), or a .zip with the text inside, its entries stored or deflated. */
  zip?: 'stored' | 'deflated';
  /** Deflate's level, 1 (fastest) to 9 (smallest); 6 by default. */
  level?: number;
  /** ZIP64 records even where the sizes do not need them (as a zip written from a pipe has). */
  zip64?: boolean;
  /** CRLF line ends instead of LF. */
  crlf?: boolean;
  /** Called as lines are written, with the count so far: for a progress display. */
  progress?: (lines: number) => void;
}

export interface RegistryOptions extends FileOptions {
  seed: string | number;
  /** The area codes (3-digit strings), or how many (registryAreaCodes). */
  areaCodes: readonly string[] | number;
  /** Share of each area code's numbers listed, 0 to 1; or give `numbers`. */
  density?: number;
  /** About how many numbers in all (the density that lists them; the count written varies around it). */
  numbers?: number;
  /** Line shape: `2015550123` (digits, the default) or `201,5550123` (comma). */
  shape?: 'digits' | 'comma';
  /**
   * Files: one per area code (`201.txt`, or `201.zip` holding it; the default), one file of the whole registry
   * (`whole`: `registry.txt`, or `registry.zip` holding it), or one archive holding each area code's file (`archive`:
   * `registry.zip`, needs `zip`).
   */
  files?: 'per-area-code' | 'whole' | 'archive';
  /** The name of a whole registry's file or archive, without extension: `registry` by default. */
  name?: string;
}

export interface WrittenRegistry {
  /** What the files list, for isListed, listedNumbers and unlistedNumbers. */
  spec: RegistrySpec;
  /** The paths written, in the order to load them. */
  files: string[];
  /** Lines (numbers) written, in all and per area code. */
  lines: number;
  perAreaCode: Record<string, number>;
  /** Bytes of the files. */
  bytes: number;
}

function checkFileOptions(o: FileOptions): void {
  if (typeof o.dir !== 'string' || !o.dir) throw new TypeError(`dir must be the path of a folder; got ${JSON.stringify(o.dir)}`);
  if (o.zip !== undefined && o.zip !== 'stored' && o.zip !== 'deflated') throw new RangeError(`zip must be 'stored' or 'deflated' (or absent for plain text); got ${JSON.stringify(o.zip)}`);
  if (o.level !== undefined && (!Number.isInteger(o.level) || o.level < 1 || o.level > 9)) throw new RangeError(`level must be an integer from 1 to 9; got ${JSON.stringify(o.level)}`);
  if ((o.zip64 || o.level !== undefined) && !o.zip) throw new RangeError(`${o.zip64 ? 'zip64' : 'level'} applies to zipped files: give zip too`);
}

function checkName(name: unknown, what: string): string {
  if (typeof name !== 'string' || !/^[\w.-]+$/.test(name) || name.startsWith('.')) throw new RangeError(`${what} must be a file name of letters, digits, '.', '-' or '_' (no folder); got ${JSON.stringify(name)}`);
  return name;
}

/** The files a registry or change list is written to, plain or zipped: their paths in order and their bytes in all. */
class Files {
  private readonly o: FileOptions;
  readonly written: string[] = [];
  bytes = 0;
  constructor(o: FileOptions) { this.o = o; }

  /** Writes `base`.txt from its one entry, or `base`.zip holding each entry as `<name>`.txt. */
  async file(base: string, entries: Array<{ name: string; maxBytes: number; fill: (sink: LineSink) => Promise<void> }>): Promise<void> {
    const { dir, zip } = this.o;
    if (!zip) {
      if (entries.length !== 1) throw new Error('a plain file holds one list');
      const path = join(dir, `${base}.txt`);
      const out = await Output.create(path);
      try {
        await entries[0]!.fill({ write: (chunk) => out.append(chunk) });
      } finally {
        await out.close();
      }
      this.written.push(path);
      this.bytes += out.position;
      return;
    }
    const path = join(dir, `${base}.zip`);
    const archive = await ZipArchive.create(path, { deflate: zip === 'deflated', level: this.o.level ?? 6, zip64: this.o.zip64 ?? false });
    let size: number;
    try {
      for (const e of entries) await archive.entry(`${e.name}.txt`, e.maxBytes >= MAX32, e.fill);
      size = await archive.close();
    } catch (err) {
      await archive.abandon();
      throw err;
    }
    this.written.push(path);
    this.bytes += size;
  }
}

/**
 * Writes a registry's full lists: the numbers of each area code whose draw under the seed falls below the density, in
 * ascending order. Memory stays bounded whatever the size (a chunk of 1 MB at a time).
 */
export async function writeRegistry(options: RegistryOptions): Promise<WrittenRegistry> {
  checkFileOptions(options);
  const seed = checkSeed(options.seed);
  const areaCodes = typeof options.areaCodes === 'number' ? registryAreaCodes(options.areaCodes) : checkAreaCodes(options.areaCodes);
  if ((options.density === undefined) === (options.numbers === undefined)) throw new TypeError('give either density (a share of each area code\'s numbers) or numbers (about how many in all), not both');
  const density = options.density !== undefined ? checkDensity(options.density) : densityFor(options.numbers!, areaCodes.length);
  const shape = options.shape ?? 'digits';
  if (shape !== 'digits' && shape !== 'comma') throw new RangeError(`shape must be 'digits' (2015550123) or 'comma' (201,5550123); got ${JSON.stringify(shape)}`);
  const layout = options.files ?? 'per-area-code';
  if (!['per-area-code', 'whole', 'archive'].includes(layout)) throw new RangeError(`files must be 'per-area-code', 'whole' or 'archive'; got ${JSON.stringify(layout)}`);
  if (layout === 'archive' && !options.zip) throw new RangeError(`files: 'archive' is a .zip of the area codes' files: give zip ('stored' or 'deflated') too`);
  const name = checkName(options.name ?? 'registry', 'name');
  await mkdir(options.dir, { recursive: true });

  const spec: RegistrySpec = { seed, density, areaCodes };
  const format: LineFormat = { comma: shape === 'comma', eol: Buffer.from(options.crlf ? '\r\n' : '\n') };
  const seedKey = seedBits(seed);
  const below = threshold(density);
  const perAreaCode: Record<string, number> = {};
  let total = 0;
  const progress = options.progress ?? (() => {});
  const lineBytes = (format.comma ? 11 : 10) + format.eol.length;
  const fillOf = (a: string) => async (sink: LineSink) => {
    const { lines } = await writeAreaCode(sink, a, areaKey(seedKey, Number(a)), below, format, null, (n) => progress(total + n));
    perAreaCode[a] = lines;
    total += lines;
  };
  const files = new Files(options);
  if (layout === 'per-area-code') {
    for (const a of areaCodes) await files.file(a, [{ name: a, maxBytes: NUMBERS_PER_AREA_CODE * lineBytes, fill: fillOf(a) }]);
  } else if (layout === 'archive') {
    await files.file(name, areaCodes.map((a) => ({ name: a, maxBytes: NUMBERS_PER_AREA_CODE * lineBytes, fill: fillOf(a) })));
  } else {
    await files.file(name, [{
      name, maxBytes: areaCodes.length * NUMBERS_PER_AREA_CODE * lineBytes,
      fill: async (sink) => { for (const a of areaCodes) await fillOf(a)(sink); },
    }]);
  }
  return { spec, files: files.written, lines: total, perAreaCode, bytes: files.bytes };
}

export interface ChangeListOptions extends FileOptions {
  /** The registry the change list follows, and the change lists applied to it before this one, in order. */
  registry: RegistrySpec;
  follows?: readonly ChangeListSpec[];
  /** The change list's own seed (its numbers are drawn independently of the registry's). */
  seed: string | number;
  /** The area codes it changes numbers of: the registry's by default (others are lines a copy skips). */
  areaCodes?: readonly string[];
  /** About how many lines; or `density`, the share of the area codes' numbers that change. */
  lines?: number;
  density?: number;
  /** The file's name without extension: `changes` by default (`changes.txt`, or `changes.zip` holding it). */
  name?: string;
}

export interface WrittenChangeList {
  /** Give it (after the registry's and earlier change lists') to isListed: the listing after this change list. */
  spec: ChangeListSpec;
  file: string;
  lines: number;
  /** Lines `,A` (numbers not listed before) and `,D` (numbers listed before). */
  added: number;
  deleted: number;
  perAreaCode: Record<string, number>;
  bytes: number;
}

/**
 * Writes a change list in the default layout (`2015550123,A` added, `2015550123,D` deleted), sorted by area code and
 * number: each number drawn under its seed changes its listing after the registry and the change lists it follows.
 */
export async function writeChangeList(options: ChangeListOptions): Promise<WrittenChangeList> {
  checkFileOptions(options);
  const seed = checkSeed(options.seed);
  const registry = options.registry;
  if (!registry || typeof registry !== 'object') throw new TypeError('registry must be the spec writeRegistry returned (what the change list follows)');
  checkSeed(registry.seed);
  checkDensity(registry.density, 'the registry\'s density');
  checkAreaCodes(registry.areaCodes);
  const follows = options.follows ?? [];
  const areaCodes = checkAreaCodes(options.areaCodes ?? registry.areaCodes);
  if ((options.density === undefined) === (options.lines === undefined)) throw new TypeError('give either lines (about how many) or density (the share of the area codes\' numbers that change), not both');
  const density = options.density !== undefined ? checkDensity(options.density) : densityFor(options.lines!, areaCodes.length);
  const name = checkName(options.name ?? 'changes', 'name');
  await mkdir(options.dir, { recursive: true });

  const spec: ChangeListSpec = { seed, density, areaCodes };
  const format: LineFormat = { comma: false, eol: Buffer.from(options.crlf ? '\r\n' : '\n') };
  const changeKey = seedBits(seed) ^ CHANGE_SALT;
  const below = threshold(density);
  const before = listing(registry, follows);
  const perAreaCode: Record<string, number> = {};
  let lines = 0, added = 0;
  const progress = options.progress ?? (() => {});
  const files = new Files(options);
  await files.file(name, [{
    name, maxBytes: areaCodes.length * NUMBERS_PER_AREA_CODE * (12 + format.eol.length),
    fill: async (sink) => {
      for (const a of areaCodes) {
        const r = await writeAreaCode(sink, a, areaKey(changeKey, Number(a)), below, format, (offset) => (before(Number(a), offset) ? 'D' : 'A'), (n) => progress(lines + n));
        perAreaCode[a] = r.lines;
        lines += r.lines;
        added += r.added;
      }
    },
  }]);
  return { spec, file: files.written[0]!, lines, added, deleted: lines - added, perAreaCode, bytes: files.bytes };
}
