// What one check of `check` (and of `start`, which runs the same checks) found: one line each, with what is wrong and
// how to fix it. Shared by the checks of every kind (Redis, the dialer, each CRM, webhooks, calling windows).

/**
 * ok: as the sync needs it; warn: works, but not as it should (said, exit code 0); fail: wrong, the fix says how;
 * error: could not tell (no answer, a 5xx, a timeout: it may heal by itself); skip: not checked, and why.
 */
export type CheckStatus = 'ok' | 'warn' | 'fail' | 'error' | 'skip';

export interface CheckResult {
  /** The sync it is about, or null for what every sync shares (Redis, the HTTP side). */
  sync: string | null;
  /** A stable name for scripts: redis.persistence, dialer.campaign, crm.field, webhooks.publicUrl, ... */
  check: string;
  status: CheckStatus;
  /** What was found, in a sentence. */
  message: string;
  /** How to fix it (fail, warn). */
  fix?: string;
  /**
   * A failure that would make a rule fail open (a Do Not Call field the CRM does not have, a windowed sync whose key
   * cannot pause its campaign, a cap with no way to count calls): `start` refuses the sync (it adds no numbers).
   */
  refuses?: boolean;
}

export const ok = (sync: string | null, check: string, message: string): CheckResult => ({ sync, check, status: 'ok', message });
export const warn = (sync: string | null, check: string, message: string, fix?: string): CheckResult => ({ sync, check, status: 'warn', message, ...(fix ? { fix } : {}) });
export const skip = (sync: string | null, check: string, message: string): CheckResult => ({ sync, check, status: 'skip', message });
export const fail = (sync: string | null, check: string, message: string, fix: string, refuses = false): CheckResult =>
  ({ sync, check, status: 'fail', message, fix, ...(refuses ? { refuses: true } : {}) });
export const error = (sync: string | null, check: string, message: string): CheckResult => ({ sync, check, status: 'error', message,
  fix: 'it may heal by itself (no answer, a 5xx, a timeout): run check again; if it persists, check the address and the service' });

/** Whether a result makes `check` exit non-zero. */
export const failed = (r: CheckResult): boolean => r.status === 'fail' || r.status === 'error';
