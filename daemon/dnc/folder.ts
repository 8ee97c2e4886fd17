// Loads a Do Not Call list from the folder its configuration names, where the operator puts each download in a
// subfolder of its own: `full-YYYY-MM-DD` (a full download: every file in it, one per area code or one of the whole
// registry, zipped or not) or `changes-YYYY-MM-DD` (a change-list download: its files applied in name order), dated
// by the download. Compared with the list's current copy: the newest full download after the copy is loaded, then
// every change download after it, in date order; nothing newer, nothing done.
import { readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { RedisClient } from '../state/connection.ts';
import type { DncKeys } from '../state/keys.ts';
import type { DncListConfig } from './config.ts';
import { copyInstant, ListCopies, type CopyRecord } from './copies.ts';

/** A download found in the list's folder. */
export interface Download {
  kind: 'full' | 'changes';
  /** The download's date, from the subfolder's name (YYYY-MM-DD). */
  date: string;
  /** The subfolder's name, and the path of each file it holds, in name order. */
  folder: string;
  files: string[];
}

/** What loadFolder did for one list. */
export interface FolderLoad {
  list: string;
  folder: string;
  /** The full download loaded (a new copy), or null. */
  loaded: Download | null;
  /** The change downloads applied on top of the copy, in date order (a download's files in name order). */
  applied: Download[];
  /**
   * Entries of the folder left aside, each with a sentence saying why (a name that does not follow the convention, a
   * date in the future, a download with no file): the rest is loaded without them.
   */
  skipped: string[];
  /** The list's copy after the load (null: none). */
  copy: CopyRecord | null;
  /**
   * Why the load stopped (a refused file, named with its line; a folder that cannot be read; nothing to load a first
   * copy from), or null. What was loaded or applied before it stays.
   */
  failed: string | null;
}

const NAME = /^(full|changes)-(\d{4})-(\d{2})-(\d{2})$/;

/** The ListCopies a list's configuration asks for: its age limit, and a state's list whole (see CopyOptions). */
export function copiesOf(redis: RedisClient, keys: DncKeys, list: DncListConfig, now?: () => number): ListCopies {
  return new ListCopies(redis, keys, list.name, { maxAgeDays: list.maxAgeDays, whole: list.type === 'state', ...(now ? { now } : {}) });
}

const isCalendarDay = (y: string, m: string, d: string) => {
  const at = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)));
  return at.getUTCFullYear() === Number(y) && at.getUTCMonth() === Number(m) - 1 && at.getUTCDate() === Number(d);
};

/**
 * The downloads a list's folder holds, oldest first (a full download before a change download of the same date), and
 * sentences for the entries that are not downloads. Entries whose name starts with a dot are not looked at: fill a
 * download under such a name and rename it when it is complete. Throws when the folder cannot be read.
 */
export async function readFolder(folder: string, now: number): Promise<{ downloads: Download[]; skipped: string[] }> {
  const entries = await readdir(folder, { withFileTypes: true });
  const downloads: Download[] = [];
  const skipped: string[] = [];
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (entry.name.startsWith('.')) continue;
    const m = NAME.exec(entry.name);
    if (!entry.isDirectory() || !m) {
      skipped.push(`${entry.name}: not a download (each download goes in a subfolder named full-YYYY-MM-DD or changes-YYYY-MM-DD, the download's date)`);
      continue;
    }
    const [, kind, y, mo, d] = m as unknown as [string, 'full' | 'changes', string, string, string];
    const date = `${y}-${mo}-${d}`;
    if (!isCalendarDay(y, mo, d)) {
      skipped.push(`${entry.name}: ${date} is not a calendar date`);
      continue;
    }
    if (copyInstant(date, Number.MAX_SAFE_INTEGER) > now) {
      skipped.push(`${entry.name}: dated ${date}, in the future (a download is named after the day it was downloaded)`);
      continue;
    }
    const inside = await readdir(join(folder, entry.name), { withFileTypes: true });
    const files: string[] = [];
    for (const f of inside.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (f.name.startsWith('.')) continue;
      if (f.isFile()) files.push(join(folder, entry.name, f.name));
      else skipped.push(`${entry.name}/${f.name}: not a file (a download's files lie directly in its subfolder)`);
    }
    if (!files.length) {
      skipped.push(`${entry.name}: holds no file`);
      continue;
    }
    downloads.push({ kind, date, folder: entry.name, files });
  }
  downloads.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : a.kind === b.kind ? 0 : a.kind === 'full' ? -1 : 1));
  return { downloads, skipped };
}

/** Whether the copy's record names a change file as applied (a zip's entries are recorded as `archive.zip:entry`). */
function recorded(copy: CopyRecord, date: string, file: string): boolean {
  const name = basename(file);
  return copy.changes.some((c) => c.date === date && (c.name === name || c.name.startsWith(`${name}:`)));
}

/**
 * Brings the list's copy up to date with its folder: loads the newest full download dated after the copy (any, when
 * there is no copy), then applies every change download dated after the copy, in date order. A change download of the
 * copy's own date whose files were not all applied (a refused file stopped it) has the rest applied. A refused file
 * stops the list's load (`failed` says which file and line); what was loaded before it stays.
 */
export async function loadFolder(copies: ListCopies, list: DncListConfig, options: { now?: () => number } = {}): Promise<FolderLoad> {
  const now = (options.now ?? Date.now)();
  const result: FolderLoad = { list: list.name, folder: list.folder, loaded: null, applied: [], skipped: [], copy: null, failed: null };
  let unreadable: string | null = null;
  try {
    result.copy = await copies.copy();
  } catch (err) {
    // An unreadable record is replaced by a full load; without one, nothing can be applied.
    unreadable = (err as Error).message;
  }
  let found: Awaited<ReturnType<typeof readFolder>>;
  try {
    found = await readFolder(list.folder, now);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    result.failed = `folder ${list.folder} cannot be read (${e.code ?? e.message}): it is where the list's downloads go (doNotCallLists: folder)`;
    return result;
  }
  result.skipped = found.skipped;
  const after = (date: string) => !result.copy || copyInstant(date, now) > Date.parse(result.copy.countsFrom);

  const full = found.downloads.filter((d) => d.kind === 'full' && after(d.date)).at(-1);
  if (!full && !result.copy) {
    const none = `${list.folder} holds no full download (a subfolder full-YYYY-MM-DD with the list's files)`;
    result.failed = unreadable ? `${unreadable}; ${none} to load it from` : `no copy is loaded and ${none}: a change list follows a copy`;
    return result;
  }
  let applying: Download | null = null;
  try {
    if (full) {
      result.copy = await copies.loadFull(full.files, full.date);
      result.loaded = full;
    }
    for (const d of found.downloads) {
      if (d.kind !== 'changes') continue;
      const copy = result.copy!;
      const newer = after(d.date);
      // The rest of a change download of the copy's own date that a refused file stopped part way.
      const rest = !newer && copy.date === d.date && copy.changes.some((c) => c.date === d.date)
        ? d.files.filter((f) => !recorded(copy, d.date, f)) : [];
      if (!newer && !rest.length) continue;
      applying = { ...d, files: [] };
      for (const file of newer ? d.files : rest) {
        result.copy = await copies.applyChanges(file, d.date, list.changeLayout);
        applying.files.push(file);
      }
      result.applied.push(applying);
      applying = null;
    }
  } catch (err) {
    // A refused file (DncFileError: file and line), a copy switched meanwhile by another load, a bitmap gone: the
    // list's load stops with its sentence.
    if (applying?.files.length) result.applied.push(applying);
    result.failed = (err as Error).message;
  }
  return result;
}
