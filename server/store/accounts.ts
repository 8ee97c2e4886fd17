// Accounts and their API keys. Tokens are random, shown once, stored only as a SHA-256 hash.
import { hash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Role } from '../../api/enums.ts';
import type { ApiKey } from '../../api/records.ts';
import type { Database } from './db.ts';

export interface Account {
  pk: number;
  id: string;
  name: string;
  timezone: string;
  createdAt: string;
}

export interface KeyRecord extends ApiKey {
  pk: number;
  accountPk: number;
}

/** `cdk_` and 43 base64url characters: 256 random bits behind a recognisable prefix. */
export const TOKEN_PATTERN = /^cdk_[A-Za-z0-9_-]{43}$/;
const PREFIX_SHOWN = 12;

function hashToken(token: string): Buffer {
  // The one-shot hash: createHash().update().digest() cost ~15 µs a request under load, most of it building the Hash object.
  return hash('sha256', token, 'buffer');
}

/**
 * How long a token's key is remembered after it was read, so a stream of requests does not look up, hash-compare
 * and parse the same key row every time (~50 µs of the event loop's ~330 µs a page under load). Deleting a key through
 * Accounts forgets every remembered key at once, so a deleted key is refused from its next request on (§5.8); the
 * time limit bounds only a change made to the database by something else (an operator's SQL).
 */
const KEY_MEMORY_MS = 1_000;
/** Most tokens remembered; past it the memory starts again (only valid tokens are remembered, never unknown ones). */
const KEY_MEMORY_MAX = 10_000;

interface RememberedKey { hash: Buffer; key: KeyRecord; until: number }

interface AccountRow { pk: number; id: string; name: string; timezone: string; created_at: string }
interface KeyRow {
  pk: number; id: string; account_pk: number; name: string; roles: string; campaign_ids: string | null;
  token_hash: Uint8Array; token_prefix: string; created_at: string; expires_at: string | null; deleted_at: string | null;
}

export class Accounts {
  private readonly db: Database;
  /** Keys by the base64 of their token's hash (see KEY_MEMORY_MS). */
  private readonly keyMemory = new Map<string, RememberedKey>();
  /** Accounts by id: an account never changes once created (there is no update or delete), so no limit in time. */
  private readonly accountMemory = new Map<string, Account>();
  constructor(db: Database) { this.db = db; }

  create(name: string, timezone: string, now: Date): Account {
    const id = randomUUID();
    const createdAt = now.toISOString();
    const { lastInsertRowid } = this.db.run(
      'INSERT INTO accounts(id, name, timezone, created_at) VALUES (?, ?, ?, ?)', id, name, timezone, createdAt);
    return { pk: lastInsertRowid, id, name, timezone, createdAt };
  }

  /** The account of an id, read once: the guard of every /v1 request asks (an unknown id is asked of the database each time). */
  byId(id: string): Account | undefined {
    const known = this.accountMemory.get(id);
    if (known) return known;
    const row = this.db.get<AccountRow>('SELECT * FROM accounts WHERE id = ?', id);
    if (!row) return undefined;
    const account = Object.freeze({ pk: row.pk, id: row.id, name: row.name, timezone: row.timezone, createdAt: row.created_at });
    if (this.accountMemory.size >= KEY_MEMORY_MAX) this.accountMemory.clear();
    this.accountMemory.set(id, account);
    return account;
  }

  /** Every account, oldest first (the console lists them). */
  list(): Account[] {
    return this.db.all<AccountRow>('SELECT * FROM accounts ORDER BY pk')
      .map((row) => ({ pk: row.pk, id: row.id, name: row.name, timezone: row.timezone, createdAt: row.created_at }));
  }

  byPk(pk: number): Account | undefined {
    const row = this.db.get<AccountRow>('SELECT * FROM accounts WHERE pk = ?', pk);
    return row && { pk: row.pk, id: row.id, name: row.name, timezone: row.timezone, createdAt: row.created_at };
  }

  createKey(account: Account, input: { name: string; roles: Role[]; campaignIds: string[] | null; expiresAt: string | null }, now: Date):
    { key: KeyRecord; token: string } {
    const token = `cdk_${randomBytes(32).toString('base64url')}`;
    const id = randomUUID();
    const createdAt = now.toISOString();
    const { lastInsertRowid } = this.db.run(
      `INSERT INTO api_keys(id, account_pk, name, roles, campaign_ids, token_hash, token_prefix, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      id, account.pk, input.name, JSON.stringify(input.roles), input.campaignIds && JSON.stringify(input.campaignIds),
      hashToken(token), token.slice(0, PREFIX_SHOWN), createdAt, input.expiresAt);
    return { key: this.keyByPk(lastInsertRowid)!, token };
  }

  /** The key a token belongs to, deleted or not; undefined when no key has this token. The record is shared: read only. */
  keyForToken(token: string): KeyRecord | undefined {
    const digest = hashToken(token);
    const id = digest.toString('base64');
    const now = performance.now();
    const known = this.keyMemory.get(id);
    if (known && known.until > now && timingSafeEqual(known.hash, digest)) return known.key;
    const row = this.db.get<KeyRow>('SELECT * FROM api_keys WHERE token_hash = ?', digest);
    if (!row || !timingSafeEqual(Buffer.from(row.token_hash), digest)) {
      this.keyMemory.delete(id);
      return undefined;
    }
    const key = toKey(row);
    if (this.keyMemory.size >= KEY_MEMORY_MAX) this.keyMemory.clear();
    this.keyMemory.set(id, { hash: digest, key, until: now + KEY_MEMORY_MS });
    return key;
  }

  keyByPk(pk: number): KeyRecord | undefined {
    const row = this.db.get<KeyRow>('SELECT * FROM api_keys WHERE pk = ?', pk);
    return row && toKey(row);
  }

  keys(account: Account): KeyRecord[] {
    return this.db.all<KeyRow>('SELECT * FROM api_keys WHERE account_pk = ? ORDER BY pk', account.pk).map(toKey);
  }

  /** Marks the key deleted (kept, so its token answers 403 rather than 401). False when unknown. */
  deleteKey(account: Account, id: string, now: Date): boolean {
    const deleted = this.db.run('UPDATE api_keys SET deleted_at = coalesce(deleted_at, ?) WHERE id = ? AND account_pk = ?',
      now.toISOString(), id, account.pk).changes > 0;
    // Before the next request is read: its token's key is read again, deleted (§5.8: refused at once).
    this.keyMemory.clear();
    return deleted;
  }
}

/** A key record, frozen: a remembered one is shared by the requests that present its token. */
function toKey(row: KeyRow): KeyRecord {
  return Object.freeze({
    pk: row.pk, accountPk: row.account_pk, id: row.id, name: row.name, roles: Object.freeze(JSON.parse(row.roles) as Role[]) as Role[],
    campaignIds: row.campaign_ids === null ? null : (Object.freeze(JSON.parse(row.campaign_ids) as string[]) as string[]),
    tokenPrefix: row.token_prefix, createdAt: row.created_at, expiresAt: row.expires_at, deletedAt: row.deleted_at,
  });
}

/** The public view of a key: no hash, no internal keys. */
export function publicKey(k: KeyRecord): ApiKey {
  const { pk: _pk, accountPk: _a, ...rest } = k;
  return rest;
}
