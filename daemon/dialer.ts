// The dialer API client (got): add, list and delete a campaign's numbers, set its state, with failures sorted by what to do next.
import got, { type Got } from 'got';
import type { DialerConfig } from './config.ts';
import { countRequest } from './history/history.ts';
import { inSpan, injectTraceHeaders } from './telemetry.ts';

/** What a failed call means for its caller: wait and resend, retry later, or give up on these records. */
export class DialerError extends Error {
  readonly kind: 'rate-limited' | 'transient' | 'permanent';
  readonly status: number | null;
  readonly retryAfterMs: number;
  readonly body: any;
  constructor(kind: DialerError['kind'], message: string, status: number | null, body?: unknown, retryAfterMs = 0) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.body = body;
    this.retryAfterMs = retryAfterMs;
  }
}

export interface CampaignNumber { id: string; number: string; status: string; attempts: number; varValues?: string[] }
export interface AddResult {
  created: CampaignNumber[];
  rejected: { index: number; number: string; reason: string; code?: string }[];
}

/** `Retry-After` in seconds or as an HTTP date, in milliseconds; a 429 without one waits a second. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return 1000;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? 1000 : Math.max(0, at - now);
}

export class DialerClient {
  private readonly http: Got;
  private readonly base: string;
  readonly config: DialerConfig;
  /** Aborted when the daemon stops: a request still waiting for its answer is given up (as at a crash). */
  private readonly stopping?: AbortSignal;

  constructor(config: DialerConfig, stopping?: AbortSignal) {
    this.config = config;
    this.stopping = stopping;
    this.base = `${config.baseUrl}/v1/accounts/${encodeURIComponent(config.accountId)}`;
    this.http = got.extend({
      headers: { authorization: `Bearer ${config.apiToken}`, 'user-agent': 'campaign-dialing-sync-daemon/0.1' },
      timeout: { request: config.timeout },
      // Retries are the queue's business: one place decides about 429s and backoff.
      retry: { limit: 0 },
      throwHttpErrors: false,
    });
  }

  /** One request, a client span `dialer <METHOD> <path template>` when tracing (its headers carry the trace on). */
  private call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, options: { json?: unknown; searchParams?: Record<string, string>; phones?: string[] } = {}) {
    return inSpan(`dialer ${method} ${path.replace(/^\/campaigns\/[^/]+/, '/campaigns/{campaignId}')}`, () => ({
      'http.request.method': method, 'url.full': `${this.base}${path}`, 'cds.campaign': /^\/campaigns\/([^/]+)/.exec(path)?.[1] ?? '',
      ...(options.phones ? { 'cds.phones': options.phones } : {}),
    }), async (span) => {
      try {
        const answer = await this.send(method, path, options, span ? injectTraceHeaders({}) : undefined);
        span?.setAttribute('http.response.status_code', answer.status);
        return answer;
      } catch (err) {
        if (span && err instanceof DialerError && err.status) span.setAttribute('http.response.status_code', err.status);
        // The queue waits this out (the key's whole queue pauses): the wait is an event of the request that met it.
        if (span && err instanceof DialerError && err.kind === 'rate-limited') span.addEvent('rate limited', { 'cds.wait_ms': err.retryAfterMs });
        throw err;
      }
    }, { kind: 'client' });
  }

  private async send(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, options: { json?: unknown; searchParams?: Record<string, string> }, headers?: Record<string, string>) {
    let res;
    try {
      res = await this.http(`${this.base}${path}`, { method, json: options.json, searchParams: options.searchParams, headers, signal: this.stopping });
    } catch (err) {
      if (this.stopping?.aborted) throw new DialerError('transient', `${method} ${path}: given up unanswered: the daemon is stopping`, null);
      throw new DialerError('transient', `${method} ${path}: ${(err as Error).message}`, null);
    }
    countRequest('dialer');
    let body: any = undefined;
    if (res.body) {
      try { body = JSON.parse(res.body); } catch { body = res.body; }
    }
    const status = res.statusCode;
    if (status < 300) return { status, body, headers: res.headers };
    const detail = typeof body === 'object' && body ? body.detail ?? body.message ?? body.title : String(body ?? '');
    const message = `${method} ${path}: ${status} ${detail ?? ''}`.trim();
    if (status === 429) throw new DialerError('rate-limited', message, status, body, retryAfterMs(res.headers['retry-after']));
    if (status >= 500 || status === 408) throw new DialerError('transient', message, status, body);
    // 422 on an add is a whole batch of rejected entries: a result, not a failure.
    if (status === 422 && method === 'POST' && body && Array.isArray(body.rejected)) return { status, body, headers: res.headers };
    throw new DialerError('permanent', message, status, body);
  }

  async addNumbers(campaignId: string, entries: { number: string; varValues: string[] }[], varNames: string[]): Promise<AddResult> {
    const searchParams = varNames.length ? { varNames: JSON.stringify(varNames) } : undefined;
    const body = entries.map((e) => (varNames.length ? { number: e.number, varValues: e.varValues } : { number: e.number }));
    const { body: result } = await this.call('POST', `/campaigns/${encodeURIComponent(campaignId)}/numbers`, { json: body, searchParams, phones: entries.map((e) => e.number) });
    return { created: result?.created ?? [], rejected: result?.rejected ?? [] };
  }

  async listNumbers(campaignId: string, first: number, last: number, filter?: Record<string, unknown>):
    Promise<{ items: CampaignNumber[]; total: number | null }> {
    const searchParams: Record<string, string> = { range: JSON.stringify([first, last]), sort: JSON.stringify(['number', 'ASC']) };
    if (filter) searchParams.filter = JSON.stringify(filter);
    const { body, headers } = await this.call('GET', `/campaigns/${encodeURIComponent(campaignId)}/numbers`, { searchParams });
    const total = Number(headers['x-total-count']);
    return { items: Array.isArray(body) ? body : [], total: Number.isFinite(total) ? total : null };
  }

  /** A page of the call-details report in end order (ties by the server's own order); DESC: the latest first. */
  async listCallDetails(campaignId: string, first: number, last: number, filter: Record<string, unknown>, direction: 'ASC' | 'DESC' = 'ASC'): Promise<Record<string, unknown>[]> {
    const searchParams = { range: JSON.stringify([first, last]), sort: JSON.stringify(['endedAtLocal', direction]), filter: JSON.stringify(filter) };
    const { body } = await this.call('GET', `/campaigns/${encodeURIComponent(campaignId)}/reports/callDetails`, { searchParams });
    return Array.isArray(body) ? body : [];
  }

  /** Sets the campaign Active or Paused (§4.4: the body is the state as a JSON string). */
  async setCampaignState(campaignId: string, state: 'Active' | 'Paused'): Promise<void> {
    await this.call('PUT', `/campaigns/${encodeURIComponent(campaignId)}/state`, { json: state });
  }

  async deleteNumbers(campaignId: string, ids: string[]): Promise<void> {
    await this.call('DELETE', `/campaigns/${encodeURIComponent(campaignId)}/numbers`, { json: ids });
  }

  /** The account's campaigns with these ids (§4.2, filter `ids`), for what each is: its type and state. */
  async campaigns(ids: string[]): Promise<{ id: string; name?: string; state?: string; type?: string; startedAt?: string | null }[]> {
    const searchParams = { filter: JSON.stringify({ ids }), range: JSON.stringify([0, Math.max(ids.length, 1) - 1]) };
    const { body } = await this.call('GET', '/campaigns', { searchParams });
    return Array.isArray(body) ? body : [];
  }

  /**
   * The status a request answers that changes nothing whatever the key may do (`check`'s probes of a role: an empty
   * list of numbers to add, a state no request may set). 2xx to 4xx are answers, not failures; 429, 5xx and network
   * failures throw as for any call.
   */
  async answerTo(method: 'POST' | 'PUT', path: string, body: string): Promise<{ status: number; detail: string }> {
    let res;
    try {
      res = await this.http(`${this.base}${path}`, { method, body, headers: { 'content-type': 'application/json' } });
    } catch (err) {
      throw new DialerError('transient', `${method} ${path}: ${(err as Error).message}`, null);
    }
    countRequest('dialer');
    let detail = '';
    try {
      const parsed = JSON.parse(res.body) as { detail?: string; title?: string };
      detail = parsed.detail ?? parsed.title ?? '';
    } catch { detail = res.body.slice(0, 200); }
    if (res.statusCode === 429) throw new DialerError('rate-limited', `${method} ${path}: 429 ${detail}`, 429, undefined, retryAfterMs(res.headers['retry-after']));
    if (res.statusCode >= 500) throw new DialerError('transient', `${method} ${path}: ${res.statusCode} ${detail}`, res.statusCode);
    return { status: res.statusCode, detail };
  }

  /** The campaign's number records (`X-Total-Count` of a one-record page; null when the dialer does not say). */
  async countNumbers(campaignId: string, onRateLimit: (ms: number) => Promise<void>): Promise<number | null> {
    return (await this.readWaiting(() => this.listNumbers(campaignId, 0, 0), onRateLimit)).total;
  }

  /** Every live number of the campaign (or those the list filter selects, §4.6), page by page, in phone-number order. */
  async *scanNumbers(campaignId: string, onRateLimit: (ms: number) => Promise<void>, filter?: Record<string, unknown>): AsyncGenerator<CampaignNumber[]> {
    const size = this.config.pageSize;
    for (let first = 0; ; first += size) {
      const page = await this.readWaiting(() => this.listNumbers(campaignId, first, first + size - 1, filter), onRateLimit);
      if (page.items.length) yield page.items;
      if (page.items.length < size || (page.total !== null && first + size >= page.total)) return;
    }
  }

  /** A read is safe to repeat: a 429 is waited out here (as `onRateLimit` says) rather than losing the work done so far. */
  private async readWaiting<T>(read: () => Promise<T>, onRateLimit: (ms: number) => Promise<void>): Promise<T> {
    for (;;) {
      try {
        return await read();
      } catch (err) {
        if (err instanceof DialerError && err.kind === 'rate-limited') await onRateLimit(err.retryAfterMs);
        else throw err;
      }
    }
  }
}
