// HubSpot's API as the daemon uses it: the date-versioned object paths, the bearer token, and the account's two
// budgets (search requests per second; other requests per 10 s), paced in Redis for every process and sync.
import { createHash } from 'node:crypto';
import type { RedisClient } from '../../state/connection.ts';
import type { Logger } from 'pino';
import type { DaemonKeys } from '../../state/keys.ts';
import type { Metrics } from '../../metrics.ts';
import { reword } from '../../errors.ts';
import { burstFor, CrmHttp, RateGate, spacing, type CrmRequest, type HttpPatience } from '../http.ts';

/** The search API answers at most 10,000 results per query; paging past them is a 400. */
export const SEARCH_CAP = 10_000;

export interface HubSpotAccount {
  baseUrl: string;
  accessToken: string;
  apiVersion: string;
  searchPerSecond: number;
  requestsPer10Seconds: number;
}

export class HubSpotApi {
  private readonly account: HubSpotAccount;
  private readonly http: CrmHttp;
  private readonly searchGate: RateGate;
  private readonly gate: RateGate;
  private readonly headers: Record<string, string>;

  /** `http`: `check`'s short timeout and few attempts (a sync's requests use the defaults). */
  constructor(account: HubSpotAccount, redis: RedisClient, keys: DaemonKeys, log: Logger, metrics: Metrics, http: HttpPatience = {}) {
    this.account = account;
    // Limits are per HubSpot account: one gate per token, shared by every sync, sink and process using it.
    const id = createHash('sha256').update(`${account.baseUrl}\n${account.accessToken}`).digest('hex').slice(0, 12);
    this.searchGate = new RateGate(redis, keys.gate('hubspot-search', id), spacing(account.searchPerSecond, 1000));
    this.gate = new RateGate(redis, keys.gate('hubspot', id), spacing(account.requestsPer10Seconds, 10_000), burstFor(account.requestsPer10Seconds, 10_000));
    this.http = new CrmHttp('hubspot', log, metrics, (res) => {
      const s = Number(res.headers['retry-after']);
      return Number.isFinite(s) ? s * 1000 : 10_000;
    }, http.timeoutMs, http.attempts);
    this.headers = { authorization: `Bearer ${account.accessToken}` };
  }

  /** `/crm/objects/2026-09/<type>` (or the legacy `/crm/v3/objects/<type>`). */
  objects(type: string): string {
    const v = this.account.apiVersion;
    return v === 'v3' ? `${this.account.baseUrl}/crm/v3/objects/${type}` : `${this.account.baseUrl}/crm/objects/${v}/${type}`;
  }

  /** `/crm/lists/2026-09/<path>` (or the legacy `/crm/v3/lists/<path>`: v3 comes before "lists" there, as for objects). */
  lists(path: string): string {
    const v = this.account.apiVersion;
    return v === 'v3' ? `${this.account.baseUrl}/crm/v3/lists${path}` : `${this.account.baseUrl}/crm/lists/${v}${path}`;
  }

  /** The search API has its own budget (and is exempt from the 10-second one). */
  search<T = any>(type: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return this.http.send<T>(this.searchGate, { method: 'POST', url: `${this.objects(type)}/search`, headers: this.headers, json: body }, signal).catch(refused);
  }

  request<T = any>(method: 'GET' | 'POST' | 'PATCH', url: string, options: Pick<CrmRequest, 'json' | 'searchParams' | 'creates' | 'onAnswer'> = {}, signal?: AbortSignal): Promise<T> {
    return this.http.send<T>(this.gate, { method, url, headers: this.headers, ...options }, signal).catch(refused);
  }
}

/** A refused token or scope, in words that name the setting to fix. */
function refused(err: unknown): never {
  throw reword(reword(err, 401, (d) => `HubSpot refused the access token (source.accessToken): it is revoked, expired, mistyped or another account's (${d})`),
    403, (d) => `HubSpot refused this request (source.accessToken): the token's private app lacks a scope it needs (${d})`);
}
