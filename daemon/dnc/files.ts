// Reads the Do Not Call registry's downloaded files, as a stream of numbers: full lists (`2015550123` or `201,5550123`
// a line) and change lists (comma-delimited, columns as a ChangeLayout says), plain or zipped (every file inside a .zip
// is read, in the archive's order). A line that is not a 10-digit NANP number refuses the file, naming file and line.
// Memory stays bounded whatever the file's size: chunks are parsed as they come, into a fixed batch of numbers.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename } from 'node:path';
import { ZipError, zipEntries, zipEntryStream } from './zip.ts';

/** A file (or a line of it) refused: nothing of the file is stored. */
export class DncFileError extends Error {
  readonly file: string;
  readonly line?: number;
  constructor(file: string, line: number | undefined, reason: string) {
    super(line === undefined ? `${file}: ${reason}` : `${file}, line ${line}: ${reason}`);
    this.file = file;
    this.line = line;
  }
}

/**
 * Where each item of a change list's line is (0 = the first column). The registry's exact layout could not be read
 * (docs/do-not-call.md), so the default is the plainest: `2015550123,A` (the number, then A for added or D for
 * deleted); `areaCode` set reads the number as two columns (`201,5550123,A` is `{ areaCode: 0, number: 1, action: 2 }`).
 */
export interface ChangeLayout {
  number: number;
  areaCode?: number;
  action: number;
  /** Values of the action column meaning added (compared without case or surrounding spaces). */
  added: string[];
  /** Values of the action column meaning deleted. */
  deleted: string[];
}

export const DEFAULT_CHANGE_LAYOUT: ChangeLayout = { number: 0, action: 1, added: ['A'], deleted: ['D'] };

/**
 * A batch of numbers read: area code (3 digits as a number) and offset (the last 7 digits as a number) of each, and for
 * change lists whether it was added (1) or deleted (0). The arrays are reused: read them before the next batch.
 */
export interface NumberBatch {
  length: number;
  areaCodes: Uint16Array;
  offsets: Uint32Array;
  adds: Uint8Array;
}

/** One file to read: its name in messages (`archive.zip:entry.txt` inside a zip) and its bytes. */
export interface ListSource { name: string; chunks: AsyncIterable<Buffer> }

const MAX_LINE = 1024;
const BATCH = 16_384;

/** The files a path holds: itself, or each file inside it when it is a .zip (told by its first bytes, not its name). */
export async function listSources(path: string): Promise<ListSource[]> {
  const fd = await open(path, 'r').catch((err: NodeJS.ErrnoException) => {
    throw new DncFileError(path, undefined, `cannot be opened (${err.code ?? err.message})`);
  });
  let magic: Buffer;
  try {
    const buf = Buffer.alloc(4);
    const { bytesRead } = await fd.read(buf, 0, 4, 0);
    magic = buf.subarray(0, bytesRead);
  } finally {
    await fd.close();
  }
  if ((magic.length === 4 && magic.readUInt32LE(0) === 0x04034b50) || /\.zip$/i.test(path)) {
    const entries = await zipEntries(path).catch((err: Error) => {
      throw new DncFileError(basename(path), undefined, err instanceof ZipError ? err.reason : `cannot be read (${err.message})`);
    });
    if (!entries.length) throw new DncFileError(basename(path), undefined, 'the zip archive holds no file');
    return entries.map((e) => ({ name: `${basename(path)}:${e.name}`, chunks: zipEntryStream(path, e) }));
  }
  return [{ name: basename(path), chunks: createReadStream(path, { highWaterMark: 256 * 1024 }) }];
}

const isDigits = (b: Buffer, from: number, to: number) => {
  for (let i = from; i < to; i++) if (b[i]! < 48 || b[i]! > 57) return false;
  return true;
};
const digitsValue = (b: Buffer, from: number, to: number) => {
  let v = 0;
  for (let i = from; i < to; i++) v = v * 10 + b[i]! - 48;
  return v;
};

/** Why a 3-digit area code and 7-digit number are not a NANP number, or null (NPA and exchange start 2-9; no N11 NPA). */
function nanpProblem(areaCode: number, offset: number): string | null {
  if (areaCode < 200) return `area code ${String(areaCode).padStart(3, '0')} does not start with 2-9`;
  if (areaCode % 100 === 11) return `${areaCode} is a service code (N11), not an area code`;
  if (offset < 2_000_000) return `exchange ${String(Math.floor(offset / 10_000)).padStart(3, '0')} does not start with 2-9`;
  return null;
}

const shown = (b: Buffer, from: number, to: number) => {
  const text = b.toString('latin1', from, Math.min(to, from + 40));
  return JSON.stringify(to - from > 40 ? `${text}…` : text);
};

/**
 * Reads one source's lines as numbers, `kind` saying which shape; calls `take` with each batch (awaited: the next is
 * not read before). Returns the number of lines. Throws DncFileError at the first line that is not a number.
 */
export async function readNumbers(
  source: ListSource, kind: 'full' | 'changes', take: (batch: NumberBatch) => Promise<void> | void,
  layout: ChangeLayout = DEFAULT_CHANGE_LAYOUT,
): Promise<number> {
  const batch: NumberBatch = { length: 0, areaCodes: new Uint16Array(BATCH), offsets: new Uint32Array(BATCH), adds: new Uint8Array(BATCH) };
  const added = new Set(layout.added.map((v) => v.trim().toUpperCase()));
  const deleted = new Set(layout.deleted.map((v) => v.trim().toUpperCase()));
  let line = 0;
  let rest: Buffer | null = null;
  let taking = false; // an error of `take` (Redis) is its own, not the file's
  const give = async () => {
    taking = true;
    await take(batch);
    taking = false;
    batch.length = 0;
  };
  const refuse = (reason: string): never => { throw new DncFileError(source.name, line, reason); };

  const parseLine = (b: Buffer, s: number, e: number) => {
    line++;
    if (e > s && b[e - 1] === 13) e--; // CRLF
    let areaCode: number;
    let offset: number;
    let add = 1;
    if (kind === 'full') {
      if (e - s === 10 && isDigits(b, s, e)) {
        areaCode = digitsValue(b, s, s + 3);
        offset = digitsValue(b, s + 3, e);
      } else if (e - s === 11 && b[s + 3] === 44 && isDigits(b, s, s + 3) && isDigits(b, s + 4, e)) {
        areaCode = digitsValue(b, s, s + 3);
        offset = digitsValue(b, s + 4, e);
      } else {
        return refuse(e === s ? 'an empty line, where a number is expected' : `${shown(b, s, e)} is not a 10-digit number (2015550123 or 201,5550123)`);
      }
    } else {
      const columns = b.toString('latin1', s, e).split(',').map((c) => c.trim());
      const need = Math.max(layout.number, layout.action, layout.areaCode ?? 0) + 1;
      if (columns.length < need) refuse(`${shown(b, s, e)} has ${columns.length} column${columns.length === 1 ? '' : 's'}, the change list's layout reads ${need}`);
      const digits = layout.areaCode === undefined ? columns[layout.number]! : `${columns[layout.areaCode]}${columns[layout.number]}`;
      if (!/^\d{10}$/.test(digits)) refuse(`${JSON.stringify(digits)} is not a 10-digit number`);
      areaCode = Number(digits.slice(0, 3));
      offset = Number(digits.slice(3));
      const action = columns[layout.action]!.toUpperCase();
      if (added.has(action)) add = 1;
      else if (deleted.has(action)) add = 0;
      else refuse(`${JSON.stringify(columns[layout.action])} is neither added (${layout.added.join(', ')}) nor deleted (${layout.deleted.join(', ')})`);
    }
    const problem = nanpProblem(areaCode, offset);
    if (problem) refuse(`${shown(b, s, e)} is not a NANP number: ${problem}`);
    const i = batch.length++;
    batch.areaCodes[i] = areaCode;
    batch.offsets[i] = offset;
    batch.adds[i] = add;
  };

  try {
    for await (const chunk of source.chunks) {
      let b = chunk;
      if (rest) { b = Buffer.concat([rest, chunk]); rest = null; }
      let s = 0;
      for (;;) {
        const nl = b.indexOf(10, s);
        if (nl < 0) break;
        if (nl - s > MAX_LINE) { line++; refuse(`a line longer than ${MAX_LINE} characters`); }
        parseLine(b, s, nl);
        s = nl + 1;
        if (batch.length === BATCH) await give();
      }
      if (b.length - s > MAX_LINE) { line++; refuse(`a line longer than ${MAX_LINE} characters`); }
      if (s < b.length) rest = Buffer.from(b.subarray(s));
    }
  } catch (err) {
    if (err instanceof DncFileError || taking) throw err;
    if (err instanceof ZipError) throw new DncFileError(source.name, undefined, err.reason);
    throw new DncFileError(source.name, undefined, `cannot be read (${(err as Error).message})`);
  }
  if (rest && rest.length) parseLine(rest, 0, rest.length); // a last line without its newline
  if (batch.length) await give();
  return line;
}
