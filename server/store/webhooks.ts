// Webhook endpoints of an account and the outbox of events waiting to be delivered to them.
import { randomUUID } from 'node:crypto';
import type { Database } from './db.ts';

export interface Endpoint { pk: number; id: string; accountPk: number; url: string; createdAt: string }
export interface Delivery { id: number; endpoint_pk: number; event_id: string; body: string; attempts: number; url: string; endpoint_id: string }

/** One attempt to deliver an event, as the console lists them. */
export interface DeliveryAttempt {
  eventId: string; type: string; attempt: number; at: string;
  /** delivered (2xx), retrying (failed, another attempt is scheduled) or failed (no attempts left). */
  outcome: 'delivered' | 'retrying' | 'failed';
  /** What went wrong: `HTTP 500`, a network error. */
  detail: string | null;
}

/** Attempts kept per endpoint. */
const ATTEMPTS_KEPT = 100;

interface EndpointRow { pk: number; id: string; account_pk: number; url: string; created_at: string }

export class Webhooks {
  private readonly db: Database;
  constructor(db: Database) { this.db = db; }

  create(accountPk: number, url: string, now: Date): Endpoint {
    const id = `we_${randomUUID()}`;
    const { lastInsertRowid } = this.db.run(
      'INSERT INTO webhook_endpoints(id, account_pk, url, created_at) VALUES (?, ?, ?, ?)', id, accountPk, url, now.toISOString());
    return { pk: lastInsertRowid, id, accountPk, url, createdAt: now.toISOString() };
  }

  /** A live endpoint of the account, by its public id. */
  byId(accountPk: number, id: string): Endpoint | undefined {
    const r = this.db.get<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = ? AND account_pk = ? AND deleted_at IS NULL', id, accountPk);
    return r && { pk: r.pk, id: r.id, accountPk: r.account_pk, url: r.url, createdAt: r.created_at };
  }

  list(accountPk: number): Endpoint[] {
    return this.db.all<EndpointRow>('SELECT * FROM webhook_endpoints WHERE account_pk = ? AND deleted_at IS NULL ORDER BY pk', accountPk)
      .map((r) => ({ pk: r.pk, id: r.id, accountPk: r.account_pk, url: r.url, createdAt: r.created_at }));
  }

  delete(accountPk: number, id: string, now: Date): boolean {
    const e = this.byId(accountPk, id);
    if (!e) return false;
    this.db.transaction(() => {
      this.db.run('UPDATE webhook_endpoints SET deleted_at = ? WHERE pk = ?', now.toISOString(), e.pk);
      this.db.run('DELETE FROM webhook_deliveries WHERE endpoint_pk = ?', e.pk);
      this.db.run('DELETE FROM webhook_attempts WHERE endpoint_pk = ?', e.pk);
    });
    return true;
  }

  enqueue(endpointPk: number, eventId: string, body: string, dueAt: number): void {
    this.db.run('INSERT INTO webhook_deliveries(endpoint_pk, event_id, body, next_attempt_at) VALUES (?, ?, ?, ?)', endpointPk, eventId, body, dueAt);
  }

  due(now: number, limit: number, skip: ReadonlySet<number>): Delivery[] {
    return this.db.all<Delivery>(
      `SELECT d.*, e.url AS url, e.id AS endpoint_id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.pk = d.endpoint_pk
       WHERE d.failed_at IS NULL AND d.next_attempt_at <= ? ORDER BY d.next_attempt_at, d.id LIMIT ?`, now, limit + skip.size)
      .filter((d) => !skip.has(d.id)).slice(0, limit);
  }

  delivered(id: number): void {
    this.db.run('DELETE FROM webhook_deliveries WHERE id = ?', id);
  }

  /** Logs an attempt's result, keeping the endpoint's last ATTEMPTS_KEPT. */
  logAttempt(endpointPk: number, a: DeliveryAttempt): void {
    this.db.transaction(() => {
      const { lastInsertRowid } = this.db.run(
        'INSERT INTO webhook_attempts(endpoint_pk, event_id, event_type, attempt, at, outcome, detail) VALUES (?, ?, ?, ?, ?, ?, ?)',
        endpointPk, a.eventId, a.type, a.attempt, a.at, a.outcome, a.detail?.slice(0, 500) ?? null);
      this.db.run('DELETE FROM webhook_attempts WHERE endpoint_pk = ? AND id <= ?', endpointPk, lastInsertRowid - ATTEMPTS_KEPT);
    });
  }

  /** The endpoint's most recent attempts, newest first, and how many events wait in its outbox. */
  recentAttempts(endpointPk: number, limit: number): { attempts: DeliveryAttempt[]; waiting: number } {
    const attempts = this.db.all<{ event_id: string; event_type: string; attempt: number; at: string; outcome: DeliveryAttempt['outcome']; detail: string | null }>(
      'SELECT * FROM webhook_attempts WHERE endpoint_pk = ? ORDER BY id DESC LIMIT ?', endpointPk, limit)
      .map((r) => ({ eventId: r.event_id, type: r.event_type, attempt: r.attempt, at: r.at, outcome: r.outcome, detail: r.detail }));
    const waiting = this.db.get<{ n: number }>(
      'SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_pk = ? AND failed_at IS NULL', endpointPk)!.n;
    return { attempts, waiting };
  }

  failedAttempt(id: number, attempts: number, error: string, retryAt: number | null, now: number): void {
    this.db.run('UPDATE webhook_deliveries SET attempts = ?, last_error = ?, next_attempt_at = coalesce(?, next_attempt_at), failed_at = ? WHERE id = ?',
      attempts, error.slice(0, 500), retryAt, retryAt === null ? now : null, id);
  }
}
