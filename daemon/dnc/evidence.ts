// The records that show the safe harbor: for every number a sync adds, which lists it was checked against, which copy
// of each (its files and date) answered, and which exemption let it in. Kept per campaign: the last one of each number
// (for `campaign-sync dnc why`) and one list per day of every add (for the auditor's CSV export), which expires.
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
    ...(a.reason ? { note: a.reason } : a.entry ? { note: `added ${a.entry.at} by ${a.entry.by}${a.entry.reason ? `: ${a.entry.reason}` : ''}` } : {}),
  }));
}

/** Writes the evidence of numbers just planned into a campaign: the last per number, and the day's audit list. */
export async function recordEvidence(redis: RedisClient, keys: SyncKeys, entries: readonly Evidence[], keepDays = AUDIT_KEEP_DAYS): Promise<void> {
  if (!entries.length) return;
  const m = redis.multi();
  const byDay = new Map<string, string[]>();
  for (const e of entries) {
    const line = JSON.stringify(e);
    m.hset(keys.dncEvidence, e.phone, line);
    const day = e.at.slice(0, 10);
    let lines = byDay.get(day);
    if (!lines) byDay.set(day, lines = []);
    lines.push(line);
  }
  for (const [day, lines] of byDay) {
    m.rpush(keys.dncAudit(day), ...lines);
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
  return raw ? JSON.parse(raw) as Evidence : null;
}

/** A day's audit list (UTC day, YYYY-MM-DD), in pages of `count`, oldest first. */
export async function* auditDay(redis: RedisClient, keys: SyncKeys, day: string, count = 1000): AsyncGenerator<Evidence[]> {
  for (let from = 0; ; from += count) {
    const lines = await redis.lrange(keys.dncAudit(day), from, from + count - 1);
    if (lines.length) yield lines.map((l) => JSON.parse(l) as Evidence);
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
