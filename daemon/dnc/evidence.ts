// The records that show the safe harbor: for every number a sync adds, which lists it was checked against, which copy
// of each (its files and date) answered, and which exemption let it in. Kept per campaign: the last one of each number
// (for `campaign-sync dnc why`) and one list per day of every add (for the auditor's CSV export), which expires.
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../state/connection.ts';
import type { SyncKeys } from '../state/keys.ts';
import type { ListAnswer, ListStatus } from './answers.ts';

/** Days a day's audit list is kept in Redis: export it (campaign-sync dnc export) to keep it longer. */
export const AUDIT_KEEP_DAYS = 45;

export interface CheckedList {
  list: string;
  status: ListStatus;
  /** The copy that answered: its date, its file for the number's area code, the change lists applied since. */
  date?: string;
  file?: string;
  changes?: string[];
  /** Why it could not vouch, or who put the number on the company's list. */
  note?: string;
}

export interface Evidence {
  /** When the number was planned into the campaign (ISO). */
  at: string;
  phone: string;
  campaign: string;
  sync: string;
  contact: string;
  lists: CheckedList[];
  /** The exemption that let it in past a list that holds it or cannot vouch for it (consent, purchase, inquiry). */
  exemption?: string;
}

export function checkedLists(answers: readonly ListAnswer[]): CheckedList[] {
  return answers.map((a) => ({
    list: a.list, status: a.status,
    ...(a.copy ? { date: a.copy.date, file: a.copy.file, ...(a.copy.changes.length ? { changes: a.copy.changes } : {}) } : {}),
    // An `outside` answer's reason is its status (a list of +1 numbers asked about another country's): not repeated.
    ...(a.status === 'outside' ? {} : a.reason ? { note: a.reason } : a.entry ? { note: `added ${a.entry.at} by ${a.entry.by}${a.entry.reason ? `: ${a.entry.reason}` : ''}` } : {}),
  }));
}

/*
 * Stored compactly, as the numbers of one plan share nearly everything: a *check* (when, which campaign and sync, and
 * per list the copy's date, its change lists and its file for each area code) is written once, in the campaign's
 * `dnc:checks` hash, and each number's line names it (k) with what is its own: the number (p), the contact (c), one
 * letter per list for its answer (s: n not-listed, l listed, u cannot vouch, o outside), a list's note (r) and its
 * exemption (x). The checks are about 1 in 1,000 numbers added, kept as long as the lines that name them.
 */
interface StoredCheck { at: string; campaign: string; sync: string; lists: { list: string; date?: string; changes?: string[]; files?: Record<string, string> }[] }
interface StoredLine { p: string; c: string; k: string; s: string; x?: string; r?: Record<string, string>; f?: Record<string, string> }

const LETTER: Record<ListStatus, string> = { 'not-listed': 'n', listed: 'l', 'cannot-vouch': 'u', outside: 'o' };
const STATUS: Record<string, ListStatus> = { n: 'not-listed', l: 'listed', u: 'cannot-vouch', o: 'outside' };
const areaCodeOf = (phone: string) => (phone.startsWith('+1') ? phone.slice(2, 5) : '');

function compact(entries: readonly Evidence[]): { checks: Map<string, StoredCheck>; lines: { e: Evidence; line: string }[] } {
  const checks = new Map<string, StoredCheck>();
  const bySignature = new Map<string, string>();
  const lines = entries.map((e) => {
    const signature = `${e.at}\n${e.campaign}\n${e.sync}\n${e.lists.map((l) => `${l.list}\t${l.date ?? ''}\t${l.changes?.join('\t') ?? ''}`).join('\n')}`;
    let k = bySignature.get(signature);
    if (!k) {
      k = randomBytes(6).toString('base64url');
      bySignature.set(signature, k);
      checks.set(k, { at: e.at, campaign: e.campaign, sync: e.sync, lists: e.lists.map((l) => ({ list: l.list, ...(l.date ? { date: l.date } : {}), ...(l.changes ? { changes: l.changes } : {}) })) });
    }
    const check = checks.get(k)!;
    const ac = areaCodeOf(e.phone);
    const line: StoredLine = { p: e.phone, c: e.contact, k, s: e.lists.map((l) => LETTER[l.status]).join('') };
    e.lists.forEach((l, i) => {
      if (l.note) (line.r ??= {})[i] = l.note;
      if (!l.file) return;
      const files = (check.lists[i]!.files ??= {});
      if (files[ac] === undefined && ac) files[ac] = l.file;
      else if (files[ac] !== l.file) (line.f ??= {})[i] = l.file;
    });
    if (e.exemption) line.x = e.exemption;
    return { e, line: JSON.stringify(line) };
  });
  return { checks, lines };
}

function expand(raw: string, checks: Map<string, StoredCheck | null>): Evidence {
  const l = JSON.parse(raw) as StoredLine;
  const check = checks.get(l.k);
  const ac = areaCodeOf(l.p);
  return {
    at: check?.at ?? '?', phone: l.p, campaign: check?.campaign ?? '?', sync: check?.sync ?? '?', contact: l.c,
    lists: [...l.s].map((letter, i): CheckedList => {
      const c = check?.lists[i];
      const file = l.f?.[i] ?? c?.files?.[ac];
      return {
        list: c?.list ?? `#${i + 1}`, status: STATUS[letter] ?? 'cannot-vouch',
        ...(c?.date ? { date: c.date } : {}), ...(file ? { file } : {}), ...(c?.changes ? { changes: c.changes } : {}),
        ...(l.r?.[i] ? { note: l.r[i] } : !check ? { note: 'the check this number was added under cannot be read' } : {}),
      };
    }),
    ...(l.x ? { exemption: l.x } : {}),
  };
}

async function readChecks(redis: RedisClient, keys: SyncKeys, raws: readonly string[]): Promise<Map<string, StoredCheck | null>> {
  const ks = [...new Set(raws.map((r) => (JSON.parse(r) as StoredLine).k))];
  const found = ks.length ? await redis.hmget(keys.dncChecks, ...ks) : [];
  return new Map(ks.map((k, i) => [k, found[i] ? JSON.parse(found[i]!) as StoredCheck : null]));
}

/** Writes the evidence of numbers just planned into a campaign: the last per number, and the day's audit list. */
export async function recordEvidence(redis: RedisClient, keys: SyncKeys, entries: readonly Evidence[], keepDays = AUDIT_KEEP_DAYS): Promise<void> {
  if (!entries.length) return;
  const { checks, lines } = compact(entries);
  const m = redis.multi();
  m.hset(keys.dncChecks, ...[...checks].flatMap(([k, c]) => [k, JSON.stringify(c)]));
  m.hset(keys.dncEvidence, ...lines.flatMap(({ e, line }) => [e.phone, line]));
  const byDay = new Map<string, string[]>();
  for (const { e, line } of lines) {
    const day = e.at.slice(0, 10);
    let list = byDay.get(day);
    if (!list) byDay.set(day, list = []);
    list.push(line);
  }
  for (const [day, list] of byDay) {
    m.rpush(keys.dncAudit(day), ...list);
    // Kept keepDays after the day ends.
    m.pexpireat(keys.dncAudit(day), Date.parse(`${day}T00:00:00Z`) + (keepDays + 1) * 86_400_000);
  }
  const results = await m.exec();
  const failed = results?.find(([err]) => err);
  if (failed) throw failed[0]!;
}

/** The evidence of the last add of a number to the campaign, or null. */
export async function lastEvidence(redis: RedisClient, keys: SyncKeys, phone: string): Promise<Evidence | null> {
  const raw = await redis.hget(keys.dncEvidence, phone);
  return raw ? expand(raw, await readChecks(redis, keys, [raw])) : null;
}

/** A day's audit list (UTC day, YYYY-MM-DD), in pages of `count`, oldest first. */
export async function* auditDay(redis: RedisClient, keys: SyncKeys, day: string, count = 1000): AsyncGenerator<Evidence[]> {
  for (let from = 0; ; from += count) {
    const lines = await redis.lrange(keys.dncAudit(day), from, from + count - 1);
    if (lines.length) {
      const checks = await readChecks(redis, keys, lines);
      yield lines.map((l) => expand(l, checks));
    }
    if (lines.length < count) return;
  }
}

export const AUDIT_CSV_COLUMNS = ['at', 'phone', 'campaign', 'sync', 'contact', 'lists', 'exemption'] as const;

const csvCell = (v: string) => (/[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);

/** One CSV line of an evidence record; `lists` reads "national: not-listed (copy 2026-11-20, 415.txt); company: not-listed". */
export function auditCsvLine(e: Evidence): string {
  const lists = e.lists.map((l) => `${l.list}: ${l.status}${l.date ? ` (copy ${l.date}${l.file ? `, ${l.file}` : ''}${l.changes?.length ? `, changes ${l.changes.join(' ')}` : ''})` : ''}${l.note ? ` [${l.note}]` : ''}`).join('; ');
  return [e.at, e.phone, e.campaign, e.sync, e.contact, lists, e.exemption ?? ''].map(csvCell).join(',');
}
