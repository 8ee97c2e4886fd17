// Accounts and their API keys. Tokens are random, shown once, stored only as a SHA-256 hash.
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
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
  return createHash('sha256').update(token).digest();
}

interface AccountRow { pk: number; id: string; name: string; timezone: string; created_at: string }
interface KeyRow {
  pk: number; id: string; account_pk: number; name: string; roles: string; campaign_ids: string | null;
  token_hash: Uint8Array; token_prefix: string; created_at: string; expires_at: string | null; deleted_at: string | null;
}

export class Accounts {
  private readonly db: Database;
  constructor(db: Database) { this.db = db; }

  create(name: string, timezone: string, now: Date): Account {
    const id = randomUUID();
    const createdAt = now.toISOString();
    const { lastInsertRowid } = this.db.run(
      'INSERT INTO accounts(id, name, timezone, created_at) VALUES (?, ?, ?, ?)', id, name, timezone, createdAt);
    return { pk: lastInsertRowid, id, name, timezone, createdAt };
  }

  byId(id: string): Account | undefined {
    const row = this.db.get<AccountRow>('SELECT * FROM accounts WHERE id = ?', id);
    return row && { pk: row.pk, id: row.id, name: row.name, timezone: row.timezone, createdAt: row.created_at };
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

  /** The key a token belongs to, deleted or not; undefined when no key has this token. */
  keyForToken(token: string): KeyRecord | undefined {
    const hash = hashToken(token);
    const row = this.db.get<KeyRow>('SELECT * FROM api_keys WHERE token_hash = ?', hash);
    if (!row || !timingSafeEqual(Buffer.from(row.token_hash), hash)) return undefined;
    return toKey(row);
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
    return this.db.run('UPDATE api_keys SET deleted_at = coalesce(deleted_at, ?) WHERE id = ? AND account_pk = ?',
      now.toISOString(), id, account.pk).changes > 0;
  }
}

function toKey(row: KeyRow): KeyRecord {
  return {
    pk: row.pk, accountPk: row.account_pk, id: row.id, name: row.name, roles: JSON.parse(row.roles) as Role[],
    campaignIds: row.campaign_ids === null ? null : (JSON.parse(row.campaign_ids) as string[]),
    tokenPrefix: row.token_prefix, createdAt: row.created_at, expiresAt: row.expires_at, deletedAt: row.deleted_at,
  };
}

/** The public view of a key: no hash, no internal keys. */
export function publicKey(k: KeyRecord): ApiKey {
  const { pk: _pk, accountPk: _a, ...rest } = k;
  return rest;
}
