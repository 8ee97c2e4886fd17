// The company's own Do Not Call list in Redis: a record per phone number (who added it, when, why) and a log of every
// add and remove asked, and the same lookup shape as a registry copy. Nothing leaves it by itself: only `remove`, with who.
import type { RedisClient } from '../state/connection.ts';
import { DncKeys } from '../state/keys.ts';
import { checkListName, type ListAnswer, type OwnEntry } from './answers.ts';

export interface OwnChange { by: string; reason?: string }
export interface OwnLogEntry { op: 'add' | 'remove'; number: string; by: string; at: string; reason?: string }

function checkPhone(phone: string): string {
  if (!/^\+[1-9]\d{6,14}$/.test(phone)) throw new Error(`${JSON.stringify(phone)} is not a phone number in E.164 (+ and 7 to 15 digits, e.g. +12015550123)`);
  return phone;
}

function checkChange(change: OwnChange): OwnChange {
  if (typeof change.by !== 'string' || !change.by.trim()) throw new Error('a change of the company\'s Do Not Call list names who makes it (by)');
  if (change.reason !== undefined && typeof change.reason !== 'string') throw new Error('reason: a text, when given');
  return { by: change.by.trim(), ...(change.reason?.trim() ? { reason: change.reason.trim() } : {}) };
}

function decodeEntry(raw: string): OwnEntry | null {
  try {
    const e = JSON.parse(raw) as OwnEntry;
    return typeof e.at === 'string' && typeof e.by === 'string' ? e : null;
  } catch {
    return null;
  }
}

export class OwnList {
  readonly list: string;
  private readonly redis: RedisClient;
  private readonly keys: DncKeys;
  private readonly now: () => number;
  constructor(redis: RedisClient, keys: DncKeys, list = 'company', options: { now?: () => number } = {}) {
    this.redis = redis;
    this.keys = keys;
    this.list = checkListName(list);
    this.now = options.now ?? Date.now;
  }

  /**
   * Adds numbers (E.164); one already on the list keeps its first record. Every number asked is logged with who asked,
   * in the same transaction (a record without its log line, or the reverse, cannot be left). Returns how many were new.
   */
  async add(phones: readonly string[], change: OwnChange): Promise<number> {
    return this.change('add', phones, change);
  }

  /** Removes numbers, logging who asked and why in the same transaction. Returns how many were on the list. */
  async remove(phones: readonly string[], change: OwnChange): Promise<number> {
    return this.change('remove', phones, change);
  }

  private async change(op: 'add' | 'remove', phones: readonly string[], change: OwnChange): Promise<number> {
    const c = checkChange(change);
    phones.forEach(checkPhone);
    if (!phones.length) return 0;
    const entry: OwnEntry = { at: new Date(this.now()).toISOString(), ...c };
    const numbers = this.keys.ownNumbers(this.list);
    const m = this.redis.multi();
    for (const p of phones) {
      if (op === 'add') m.hsetnx(numbers, p, JSON.stringify(entry));
      else m.hdel(numbers, p);
    }
    m.rpush(this.keys.ownLog(this.list), ...phones.map((number) => JSON.stringify({ op, number, ...entry })));
    const results = await m.exec();
    if (!results) throw new Error(`the company's Do Not Call list ${this.list}: the change was not made (Redis aborted the transaction)`);
    const failed = results.find(([err]) => err);
    if (failed) throw failed[0]!;
    return results.slice(0, phones.length).filter(([, n]) => n === 1).length;
  }

  /** A page of the list (HSCAN order), from `cursor` ('0' first); the next cursor is '0' at the end. */
  async page(cursor = '0', count = 1000): Promise<{ cursor: string; entries: Array<{ number: string } & OwnEntry> }> {
    const [next, flat] = await this.redis.hscan(this.keys.ownNumbers(this.list), cursor, 'COUNT', count);
    const entries: Array<{ number: string } & OwnEntry> = [];
    for (let i = 0; i < flat.length; i += 2) {
      const e = decodeEntry(flat[i + 1]!);
      entries.push({ number: flat[i]!, ...(e ?? { at: '?', by: '?', reason: 'its record cannot be read' }) });
    }
    return { cursor: next, entries };
  }

  async size(): Promise<number> { return this.redis.hlen(this.keys.ownNumbers(this.list)); }

  /** The log of adds and removes asked, oldest first (`from` and `to` as LRANGE's). */
  async log(from = 0, to = -1): Promise<OwnLogEntry[]> {
    return (await this.redis.lrange(this.keys.ownLog(this.list), from, to)).map((l) => JSON.parse(l) as OwnLogEntry);
  }

  /** For each phone number, whether the company's list holds it (one HMGET). A record that cannot be read counts as listed. */
  async lookup(phones: readonly string[]): Promise<ListAnswer[]> {
    if (!phones.length) return [];
    const raw = await this.redis.hmget(this.keys.ownNumbers(this.list), ...phones);
    return raw.map((r): ListAnswer => {
      if (r === null) return { list: this.list, status: 'not-listed' };
      const entry = decodeEntry(r);
      return entry ? { list: this.list, status: 'listed', entry } : { list: this.list, status: 'listed', reason: 'its record cannot be read (kept as listed)' };
    });
  }
}
