// Requests to a CRM (every CRM's client sends through here): paced by a gate in Redis that every daemon process
// shares (a CRM's limit is per account, not per process), 429s waited out without spending an attempt, 5xx and network errors retried with backoff, except for
// requests that create records: those are never sent twice on a doubt (see SourceError.uncertain).
import { channel } from 'node:diagnostics_channel';
import got, { type Got, type Method, type Response } from 'got';
import type { RedisClient } from '../state/connection.ts';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.ts';
import { SourceError } from '../errors.ts';
import { withScripts } from '../state/scripts.ts';
import { budgetOfGate, countRequest } from '../history/history.ts';
import { inSpan, injectTraceHeaders, spanAttribute, spanEvent } from '../telemetry.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Every slot a gate hands out, `{ key, slotMs }` on Redis's clock: what the pacing decided, before the jitter a loaded
 * machine or a network adds on the way to the CRM. Published only while someone subscribes (a test, a diagnostic).
 */
export const gateSlots = channel('campaign-sync:crm-gate-slot');

/** One request every `intervalMs`, across every process using the same key (state/commands/gateTake-1.lua). */
export class RateGate {
  private readonly redis: RedisClient;
  readonly key: string;
  readonly intervalMs: number;
  readonly burst: number;
  constructor(redis: RedisClient, key: string, intervalMs: number, burst = 0) {
    this.redis = withScripts(redis); this.key = key; this.intervalMs = intervalMs; this.burst = burst;
  }

  async take(): Promise<void> {
    const [wait, slotMs] = (await this.redis.cdsGateTake(this.key, this.intervalMs, this.burst)).map(Number) as [number, number];
    if (gateSlots.hasSubscribers) gateSlots.publish({ key: this.key, slotMs });
    if (wait > 0) {
      spanEvent('rate-limit wait', { 'cds.gate': this.key, 'cds.wait_ms': wait });
      await sleep(wait);
    }
  }

  /** Nobody passes for `ms` (a 429 told us to wait). */
  async hold(ms: number): Promise<void> {
    await this.redis.cdsGateHold(this.key, Math.ceil(ms));
  }
}

/** Pacing a little under the stated limit: requests leave on time but arrive with jitter, and the CRM counts arrivals. */
export function spacing(requests: number, perMs: number): number {
  return Math.ceil((perMs / requests) * 1.05);
}

/**
 * The burst a gate may allow and still stay under `requests` per `perMs` in any window: a GCRA with burst b lets
 * at most b + 1 + window / interval through, so b is what the 5% margin leaves, less one for safety.
 */
export function burstFor(requests: number, perMs: number): number {
  return Math.max(0, Math.floor(requests - perMs / spacing(requests, perMs)) - 2);
}

export interface CrmRequest {
  method: Method;
  url: string;
  headers?: Record<string, string>;
  json?: unknown;
  /** An application/x-www-form-urlencoded body (OAuth token requests). */
  form?: Record<string, string>;
  searchParams?: Record<string, string>;
  /** It creates records: after an answer that does not say whether it did, it is not sent again (SourceError.uncertain). */
  creates?: boolean;
  /** Sees every answer, whatever its status (a CRM's usage headers, its error codes). */
  onAnswer?: (res: Response<string>) => void;
}

/**
 * A URL's path with its ids (segments holding a digit) as {id}, API versions (v3, v62.0, 2026-09) kept: a span name
 * that does not grow with the records.
 */
export function pathTemplate(url: string): string {
  return new URL(url).pathname.split('/').map((seg) => (/\d/.test(seg) && !/^(v\d+(\.\d+)?|\d{4}-\d{2})$/.test(seg) ? '{id}' : seg)).join('/');
}

/** How long a CRM's client waits for an answer and how often it tries (`check` waits less than a sync's run). */
export interface HttpPatience { timeoutMs?: number; attempts?: number }

/** Connection failures that happen before a request leaves: nothing reached the CRM, so sending again is safe. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export class CrmHttp {
  private readonly http: Got;
  private readonly service: string;
  private readonly log: Logger;
  private readonly metrics: Metrics;
  /** How long a 429 says to wait, in ms (HubSpot: Retry-After; Pipedrive: x-ratelimit-reset). */
  /** A 429's wait in ms, or why it will not pass today (a string). */
  private readonly waitOf: (res: Response<string>) => number | string;
  private readonly attempts: number;
  constructor(service: string, log: Logger, metrics: Metrics, waitOf: (res: Response<string>) => number | string, timeoutMs = 30_000, attempts = 6) {
    this.service = service; this.log = log; this.metrics = metrics; this.waitOf = waitOf; this.attempts = attempts;
    this.http = got.extend({ timeout: { request: timeoutMs }, retry: { limit: 0 }, throwHttpErrors: false });
  }

  /**
   * Sends through the gate; returns the parsed JSON body of a 2xx answer, throws SourceError for any other. One client
   * span `crm <METHOD> <path template>` when tracing, its waits (the gate, 429s, retries) as events.
   */
  send<T = any>(gate: RateGate, req: CrmRequest, signal?: AbortSignal): Promise<T> {
    return inSpan(`crm ${req.method} ${pathTemplate(req.url)}`, () => ({ 'http.request.method': req.method, 'url.path': new URL(req.url).pathname, 'cds.crm': this.service }),
      (span) => this.sendPaced<T>(gate, span ? { ...req, headers: injectTraceHeaders({ ...req.headers }) } : req, signal), { kind: 'client' });
  }

  private async sendPaced<T>(gate: RateGate, req: CrmRequest, signal?: AbortSignal): Promise<T> {
    let failures = 0;
    for (;;) {
      if (signal?.aborted) throw new SourceError(`${this.service}: stopped`);
      await gate.take();
      let res: Response<string>;
      try {
        res = await this.http(req.url, { method: req.method, headers: req.headers, json: req.json, form: req.form, searchParams: req.searchParams, signal });
      } catch (err) {
        if (signal?.aborted) throw new SourceError(`${this.service}: stopped`, null, false, req.creates === true);
        if (req.creates && !NOT_SENT.has((err as { code?: string }).code ?? '')) {
          throw new SourceError(`${this.service}: ${req.method} ${new URL(req.url).pathname}: ${(err as Error).message} (it may have been done; not sent again)`, null, false, true);
        }
        if (++failures >= this.attempts) throw new SourceError(`${this.service}: ${req.method} ${new URL(req.url).pathname}: ${(err as Error).message}`);
        spanEvent('retry wait', { 'cds.wait_ms': Math.min(30_000, 500 * 2 ** failures), 'cds.failures': failures });
        await sleep(Math.min(30_000, 500 * 2 ** failures));
        continue;
      }
      countRequest(budgetOfGate(gate.key));
      spanAttribute('http.response.status_code', res.statusCode);
      req.onAnswer?.(res);
      if (res.statusCode === 429) {
        // Not a failure: the CRM's budget says wait. Everyone sharing the gate waits too.
        const wait = this.waitOf(res);
        this.metrics.rateLimited.inc({ service: this.service });
        if (typeof wait === 'string') throw new SourceError(`${this.service}: ${wait}`, 429, true);
        this.log.info({ service: this.service, waitMs: wait }, 'CRM answered 429: waiting');
        spanEvent('crm 429', { 'cds.wait_ms': wait });
        await gate.hold(wait);
        continue;
      }
      if (res.statusCode >= 500) {
        if (req.creates) {
          throw new SourceError(`${this.service}: ${req.method} ${new URL(req.url).pathname}: ${res.statusCode} (it may have been done; not sent again)`, res.statusCode, false, true);
        }
        if (++failures >= this.attempts) throw new SourceError(`${this.service}: ${req.method} ${new URL(req.url).pathname}: ${res.statusCode}`, res.statusCode);
        spanEvent('retry wait', { 'cds.wait_ms': Math.min(30_000, 500 * 2 ** failures), 'cds.failures': failures });
        await sleep(Math.min(30_000, 500 * 2 ** failures));
        continue;
      }
      let body: any;
      try { body = res.body ? JSON.parse(res.body) : undefined; } catch { body = res.body; }
      if (res.statusCode >= 300) {
        const detail = typeof body === 'object' && body ? body.message ?? body.error ?? JSON.stringify(body) : String(body);
        throw new SourceError(`${this.service}: ${req.method} ${new URL(req.url).pathname}: ${res.statusCode} ${detail}`, res.statusCode);
      }
      return body as T;
    }
  }
}
