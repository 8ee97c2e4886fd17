// An account's black list: phone numbers (E.164) the dialer never calls.
import type { Database } from './db.ts';

export class Blacklist {
  private readonly db: Database;
  constructor(db: Database) { this.db = db; }

  add(accountPk: number, numbers: string[], now: Date): void {
    this.db.transaction(() => {
      for (const n of numbers) {
        this.db.run('INSERT INTO blacklist(account_pk, number, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING', accountPk, n, now.toISOString());
      }
    });
  }

  remove(accountPk: number, numbers: string[]): void {
    this.db.transaction(() => {
      for (const n of numbers) this.db.run('DELETE FROM blacklist WHERE account_pk = ? AND number = ?', accountPk, n);
    });
  }

  has(accountPk: number, number: string): boolean {
    return this.db.get('SELECT 1 AS x FROM blacklist WHERE account_pk = ? AND number = ?', accountPk, number) !== undefined;
  }

  list(accountPk: number): { number: string; createdAt: string }[] {
    return this.db.all<{ number: string; created_at: string }>(
      'SELECT number, created_at FROM blacklist WHERE account_pk = ? ORDER BY number', accountPk)
      .map((r) => ({ number: r.number, createdAt: r.created_at }));
  }
}
