// Pipedrive's API as the daemon uses it: the API token, the 2-second burst paced in Redis for every process, and
// the company's daily token budget counted client-side (no header reports what is left of it).
import { createHash } from 'node:crypto';
import type { RedisClient } from '../../state/connection.ts';
import type { Logger } from 'pino';
import type { DaemonKeys } from '../../state/keys.ts';
import type { Metrics } from '../../metrics.ts';
import { SourceError, reword } from '../../errors.ts';
import { CrmHttp, RateGate, spacing, type HttpPatience } from '../http.ts';

export interface PipedriveAccount {
  baseUrl: string;
  apiToken: string;
  burstPer2Seconds: number;
  dailyTokens: number;
}

/** Token costs of what the daemon calls (Pipedrive's published costs; v2 reads cost half of v1's). */
export const COST = { listPersons: 10, listCallLogs: 20, addCallLog: 10, updatePerson: 5 } as const;

export class PipedriveApi {
  private readonly account: PipedriveAccount;
  private readonly http: CrmHttp;
  private readonly gate: RateGate;
  private readonly redis: RedisClient;
  private readonly budgetKey: string;

  /** `http`: `check`'s short timeout and few attempts (a sync's requests use the defaults). */
  constructor(account: PipedriveAccount, redis: RedisClient, keys: DaemonKeys, log: Logger, metrics: Metrics, http: HttpPatience = {}) {
    this.account = account;
    this.redis = redis;
    const id = createHash('sha256').update(`${account.baseUrl}\n${account.apiToken}`).digest('hex').slice(0, 12);
    this.gate = new RateGate(redis, keys.gate('pipedrive', id), spacing(account.burstPer2Seconds, 2000));
    this.budgetKey = keys.budget('pipedrive', id);
    // Pipedrive's 429 has no Retry-After: x-ratelimit-reset says when the 2-second window frees up.
    this.http = new CrmHttp('pipedrive', log, metrics, (res) => {
      // A spent daily budget is not a burst: waiting seconds will not help, and holding a job until midnight would block it.
      if (res.headers['x-daily-requests-left'] === '0') return 'the company\'s daily token budget is spent (429, x-daily-requests-left: 0); reading resumes after Pipedrive\'s midnight';
      const s = Number(res.headers['x-ratelimit-reset']);
      return Number.isFinite(s) && s > 0 ? s * 1000 : 2000;
    }, http.timeoutMs, http.attempts);
  }

  /** Counts the day's tokens (UTC day; Pipedrive resets at its own midnight) and stops before the budget is spent. */
  private async spend(cost: number): Promise<void> {
    const key = `${this.budgetKey}:${new Date().toISOString().slice(0, 10)}`;
    const used = await this.redis.multi().incrby(key, cost).expire(key, 2 * 86_400).exec();
    if (Number(used?.[0]?.[1] ?? 0) > this.account.dailyTokens) {
      throw new SourceError(`pipedrive: the daily token budget (${this.account.dailyTokens}) is spent; resumes tomorrow`, null, true);
    }
  }

  async request<T = any>(cost: number, method: 'GET' | 'POST' | 'PATCH', path: string, options: { json?: unknown; searchParams?: Record<string, string>; creates?: boolean } = {}, signal?: AbortSignal): Promise<T> {
    await this.spend(cost);
    return this.http.send<T>(this.gate, { method, url: `${this.account.baseUrl}${path}`, headers: { 'x-api-token': this.account.apiToken }, ...options }, signal)
      .catch((err: unknown) => {
        throw reword(reword(err, 401, (d) => `Pipedrive refused the API token (source.apiToken): it is revoked, mistyped or another company's (${d})`),
          403, (d) => `Pipedrive refused this request (source.apiToken): the token's user lacks the permission (${d})`);
      });
  }
}
