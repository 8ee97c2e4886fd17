// Reads the files inside a .zip archive as streams, with Node's own zlib (no npm library): the central directory (ZIP64
// too), then each entry's bytes inflated as they are read, its CRC-32 and size checked at its end. Only what the
// registry's downloads use: stored or deflated entries, no encryption, no multi-disk archives.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { crc32, createInflateRaw } from 'node:zlib';

export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  crc: number;
  headerOffset: number;
}

/** A .zip that cannot be read: the message says which archive and what is wrong. */
export class ZipError extends Error {
  /** What is wrong, without the archive's path. */
  readonly reason: string;
  constructor(path: string, reason: string) {
    super(`${path}: ${reason}`);
    this.reason = reason;
  }
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const MAX32 = 0xffffffff;

async function readAt(fd: import('node:fs/promises').FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  const { bytesRead } = await fd.read(buf, 0, length, position);
  return buf.subarray(0, bytesRead);
}

/** The archive's file entries (directories left out), in the central directory's order. */
export async function zipEntries(path: string): Promise<ZipEntry[]> {
  const fd = await open(path, 'r');
  try {
    const size = (await fd.stat()).size;
    const tailLength = Math.min(size, 22 + 0xffff);
    const tail = await readAt(fd, size - tailLength, tailLength);
    let at = -1;
    for (let i = tail.length - 22; i >= 0; i--) if (tail.readUInt32LE(i) === EOCD) { at = i; break; }
    if (at < 0) throw new ZipError(path, `not a zip archive (no end of central directory)`);
    let count = tail.readUInt16LE(at + 10);
    let cdSize = tail.readUInt32LE(at + 12);
    let cdOffset = tail.readUInt32LE(at + 16);
    if (tail.readUInt16LE(at + 4) !== 0 || tail.readUInt16LE(at + 6) !== 0) throw new ZipError(path, `multi-disk zip archives are not read`);
    if (count === 0xffff || cdSize === MAX32 || cdOffset === MAX32) {
      const locatorAt = at - 20;
      if (locatorAt < 0 || tail.readUInt32LE(locatorAt) !== ZIP64_LOCATOR) throw new ZipError(path, `ZIP64 archive without its locator`);
      const z = await readAt(fd, Number(tail.readBigUInt64LE(locatorAt + 8)), 56);
      if (z.length < 56 || z.readUInt32LE(0) !== ZIP64_EOCD) throw new ZipError(path, `ZIP64 end of central directory not found`);
      count = Number(z.readBigUInt64LE(32));
      cdSize = Number(z.readBigUInt64LE(40));
      cdOffset = Number(z.readBigUInt64LE(48));
    }
    const cd = await readAt(fd, cdOffset, cdSize);
    const entries: ZipEntry[] = [];
    let p = 0;
    for (let i = 0; i < count; i++) {
      if (p + 46 > cd.length || cd.readUInt32LE(p) !== CENTRAL) throw new ZipError(path, `central directory damaged at entry ${i + 1}`);
      const flags = cd.readUInt16LE(p + 8);
      const method = cd.readUInt16LE(p + 10);
      const crc = cd.readUInt32LE(p + 16);
      let compressedSize = cd.readUInt32LE(p + 20);
      let entrySize = cd.readUInt32LE(p + 24);
      const nameLength = cd.readUInt16LE(p + 28);
      const extraLength = cd.readUInt16LE(p + 30);
      const commentLength = cd.readUInt16LE(p + 32);
      let headerOffset = cd.readUInt32LE(p + 42);
      const name = cd.toString(flags & 0x800 ? 'utf8' : 'latin1', p + 46, p + 46 + nameLength);
      // ZIP64 extra field: the 64-bit values, in this order, of those whose 32-bit field is all ones.
      let e = p + 46 + nameLength;
      const extraEnd = e + extraLength;
      while (e + 4 <= extraEnd) {
        const id = cd.readUInt16LE(e);
        const length = cd.readUInt16LE(e + 2);
        if (id === 1) {
          let q = e + 4;
          if (entrySize === MAX32) { entrySize = Number(cd.readBigUInt64LE(q)); q += 8; }
          if (compressedSize === MAX32) { compressedSize = Number(cd.readBigUInt64LE(q)); q += 8; }
          if (headerOffset === MAX32) headerOffset = Number(cd.readBigUInt64LE(q));
        }
        e += 4 + length;
      }
      p = extraEnd + commentLength;
      if (name.endsWith('/')) continue;
      if (flags & 1) throw new ZipError(path, `${name} is encrypted`);
      if (method !== 0 && method !== 8) throw new ZipError(path, `${name} uses compression method ${method} (only stored and deflated entries are read)`);
      entries.push({ name, method, compressedSize, size: entrySize, crc, headerOffset });
    }
    // Each entry's data starts after its local header, whose name and extra field lengths may differ from the directory's.
    for (const entry of entries) {
      const local = await readAt(fd, entry.headerOffset, 30);
      if (local.length < 30 || local.readUInt32LE(0) !== LOCAL) throw new ZipError(path, `${entry.name}'s local header is damaged`);
      entry.headerOffset += 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
    }
    return entries;
  } finally {
    await fd.close();
  }
}

/** One entry's bytes, inflated as read; the stream fails at its end if the CRC-32 or the size is not the directory's. */
export function zipEntryStream(path: string, entry: ZipEntry): AsyncIterable<Buffer> {
  return {
    async *[Symbol.asyncIterator]() {
      const raw = entry.compressedSize === 0
        ? []
        : createReadStream(path, { start: entry.headerOffset, end: entry.headerOffset + entry.compressedSize - 1, highWaterMark: 256 * 1024 });
      const source: AsyncIterable<Buffer> = entry.method === 8 && entry.compressedSize > 0 ? (raw as Readable).pipe(createInflateRaw()) : raw as AsyncIterable<Buffer>;
      let crc = 0;
      let size = 0;
      try {
        for await (const chunk of source) {
          crc = crc32(chunk, crc);
          size += chunk.length;
          yield chunk;
        }
      } catch (err) {
        throw new ZipError(`${path}:${entry.name}`, `cannot be inflated (${(err as Error).message})`);
      } finally {
        if (!Array.isArray(raw)) (raw as Readable).destroy();
      }
      if (crc !== entry.crc || size !== entry.size) throw new ZipError(`${path}:${entry.name}`, `damaged (its CRC-32 or size is not the archive's)`);
    },
  };
}
