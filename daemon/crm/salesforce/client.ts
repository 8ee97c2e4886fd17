// Salesforce's REST API as the daemon uses it: a session from the OAuth client credentials or JWT bearer flow (the
// instance URL from the token answer, renewed once on INVALID_SESSION_ID), requests paced in Redis for every process,
// the daily API allowance read from Sforce-Limit-Info on every answer (reading stops at the configured reserve), and
// SOQL queries followed through nextRecordsUrl.
import { createHash, sign } from 'node:crypto';
import type { Response } from 'got';
import { z } from 'zod/v4';
import { SourceError } from '../../errors.ts';
import type { CrmContext } from '../crm.ts';
import { CrmHttp, RateGate, spacing, type CrmRequest, type HttpPatience } from '../http.ts';
import type { SalesforceConfig } from './config.ts';

const JWT_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** A JWT assertion is valid this long (Salesforce accepts up to 3 minutes). */
const ASSERTION_TTL_S = 180;
/**
 * A usage figure older than this does not refuse a request: a run's requests follow each other closely, so a run stops
 * at the reserve, while a later run (the next schedule) spends one request to learn whether the allowance came back.
 */
const USAGE_FRESH_MS = 5_000;

const tokenAnswer = z.object({ access_token: z.string().min(1), instance_url: z.url(), id: z.string().optional() });
const queryAnswer = z.object({
  totalSize: z.number().optional(),
  done: z.boolean(),
  nextRecordsUrl: z.string().optional(),
  records: z.array(z.record(z.string(), z.unknown())),
});
const errorAnswer = z.array(z.object({ errorCode: z.string(), message: z.string().optional() }).loose());

export type SfRow = Record<string, unknown>;

/** What a Salesforce error answer says: its first errorCode (INVALID_SESSION_ID, REQUEST_LIMIT_EXCEEDED, …). */
export function errorCodeOf(body: string): string | null {
  try {
    const parsed = errorAnswer.safeParse(JSON.parse(body));
    return parsed.success ? parsed.data[0]?.errorCode ?? null : null;
  } catch {
    return null;
  }
}

/** `api-usage=N/M` of a Sforce-Limit-Info header. */
export function parseLimitInfo(header: string | string[] | undefined): { used: number; max: number } | null {
  const text = Array.isArray(header) ? header.join(',') : header ?? '';
  for (const part of text.split(',')) {
    const [name, value] = part.trim().split('=');
    if (name !== 'api-usage' || !value) continue;
    const [used, max] = value.split('/').map(Number);
    if (Number.isInteger(used) && Number.isInteger(max) && max! > 0) return { used: used!, max: max! };
  }
  return null;
}

const ID_SUFFIX = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ012345';

/** A record id in its 18-character, case-safe form (Salesforce's checksum of the 15-character one's capitals). */
export function id18(id: string): string {
  if (id.length !== 15) return id;
  let suffix = '';
  for (let block = 0; block < 3; block++) {
    let bits = 0;
    for (let i = 0; i < 5; i++) {
      const c = id[block * 5 + i]!;
      if (c >= 'A' && c <= 'Z') bits |= 1 << i;
    }
    suffix += ID_SUFFIX[bits];
  }
  return id + suffix;
}

/** A SOQL string literal. */
export function soqlString(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** A SOQL dateTime literal (whole seconds, UTC). */
export function soqlDateTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** A Salesforce error answer, with its errorCode. */
export class SalesforceError extends SourceError {
  readonly code: string;
  constructor(err: SourceError, code: string) {
    super(`${err.message} (${code})`, err.status, err.final, err.uncertain);
    this.code = code;
  }
}

interface Session { token: string; instanceUrl: string; org: string }

/** Sessions and usage by org account, shared by a process's sources and sinks (one token per app and user). */
const sessions = new Map<string, Promise<Session>>();
const usages = new Map<string, { used: number; max: number; at: number }>();
/**
 * Accounts whose allowance (or reserve) was met, with the reason: until an answer shows room again, nothing but the
 * next scheduled run may send (webhooks queue what they name for it). The usage figure alone goes stale in seconds.
 */
const exhausted = new Map<string, string>();

export class SalesforceApi {
  readonly config: SalesforceConfig;
  private readonly ctx: CrmContext;
  private readonly http: CrmHttp;
  private readonly gate: RateGate;
  /** Who the sessions and the usage belong to: the login URL, the app and the user. */
  private readonly account: string;

  /** `http`: `check`'s short timeout and few attempts (a sync's requests use the defaults). */
  constructor(config: SalesforceConfig, ctx: CrmContext, http: HttpPatience = {}) {
    this.config = config;
    this.ctx = ctx;
    const user = config.auth.flow === 'jwt_bearer' ? config.auth.username : 'client_credentials';
    this.account = createHash('sha256').update(`${config.loginUrl}\n${config.clientId}\n${user}`).digest('hex').slice(0, 12);
    // Salesforce counts requests a day, not a second: the rate is politeness, so slots lost to a pause of the daemon's
    // own (a report page read between two Task writes) may be made up, a tenth of a second's worth at once.
    this.gate = new RateGate(ctx.redis, ctx.keys.gate('salesforce', this.account), spacing(config.requestsPerSecond, 1000), Math.floor(config.requestsPerSecond / 10));
    // Salesforce answers no 429 (a spent allowance is a 403 REQUEST_LIMIT_EXCEEDED); a proxy's would be waited out.
    this.http = new CrmHttp('salesforce', ctx.log, ctx.metrics, (res) => {
      const s = Number(res.headers['retry-after']);
      return Number.isFinite(s) ? s * 1000 : 5_000;
    }, http.timeoutMs, http.attempts);
  }

  /** The org's API usage as last reported (null before any answer). */
  usage(): { used: number; max: number } | null {
    const u = usages.get(this.account);
    return u ? { used: u.used, max: u.max } : null;
  }

  private noteUsage(res: Response<string>, org: string): void {
    const u = parseLimitInfo(res.headers['sforce-limit-info']);
    if (!u) return;
    usages.set(this.account, { ...u, at: Date.now() });
    if (u.max - u.used > this.config.reserveShare * u.max) exhausted.delete(this.account);
    this.ctx.metrics.crmApiUsed.set({ crm: 'salesforce', account: org }, u.used);
    this.ctx.metrics.crmApiAllowance.set({ crm: 'salesforce', account: org }, u.max);
  }

  private spent(u: { used: number; max: number }, how: string): SourceError {
    const reason = `salesforce: ${how}: the org has used ${u.used} of its ${u.max} daily API requests; `
      + `the daemon keeps ${Math.round(this.config.reserveShare * 100)}% (reserveShare) for other integrations and stops reading until the next scheduled run`;
    exhausted.set(this.account, reason);
    return new SourceError(reason, 429, true);
  }

  /** Why nothing may be sent before the next scheduled run (the allowance or its reserve met), or null. */
  exhaustedReason(): string | null {
    return exhausted.get(this.account) ?? null;
  }

  /** Refuses to spend what the reserve keeps, while the last usage figure is fresh. */
  private checkReserve(): void {
    const u = usages.get(this.account);
    if (u && Date.now() - u.at < USAGE_FRESH_MS && u.max - u.used <= this.config.reserveShare * u.max) throw this.spent(u, 'reserve reached');
  }

  private session(renew: Session | null): Promise<Session> {
    const current = sessions.get(this.account);
    // Only the first caller to see a session refused renews it; the others take the new one.
    if (current && !renew) return current;
    if (current && renew) {
      const same = current.then((s) => s.token === renew.token, () => true);
      const next = same.then((isSame) => (isSame ? this.signIn() : current));
      sessions.set(this.account, next);
      next.catch(() => { if (sessions.get(this.account) === next) sessions.delete(this.account); });
      return next;
    }
    const fresh = this.signIn();
    sessions.set(this.account, fresh);
    fresh.catch(() => { if (sessions.get(this.account) === fresh) sessions.delete(this.account); });
    return fresh;
  }

  private assertion(): string {
    const c = this.config;
    if (c.auth.flow !== 'jwt_bearer') throw new Error('not a JWT bearer configuration');
    const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const body = `${part({ alg: 'RS256' })}.${part({ iss: c.clientId, sub: c.auth.username, aud: c.auth.audience ?? c.loginUrl, exp: Math.floor(Date.now() / 1000) + ASSERTION_TTL_S })}`;
    let signature: Buffer;
    try {
      signature = sign('RSA-SHA256', Buffer.from(body), c.auth.privateKey);
    } catch (err) {
      throw new SourceError(`salesforce: auth.privateKey cannot sign (RS256): ${(err as Error).message}`, null, true);
    }
    return `${body}.${signature.toString('base64url')}`;
  }

  private async signIn(): Promise<Session> {
    const c = this.config;
    const form: Record<string, string> = c.auth.flow === 'client_credentials'
      ? { grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.auth.clientSecret }
      : { grant_type: JWT_GRANT, assertion: this.assertion() };
    let refusal = '';
    try {
      const body = tokenAnswer.safeParse(await this.http.send(this.gate, {
        method: 'POST', url: `${c.loginUrl}/services/oauth2/token`, form,
        onAnswer: (res) => {
          if (res.statusCode < 400) return;
          try {
            const e = JSON.parse(res.body) as { error?: string; error_description?: string };
            refusal = `${e.error ?? res.statusCode}: ${e.error_description ?? ''}`;
          } catch { refusal = String(res.statusCode); }
        },
      }));
      if (!body.success) throw new SourceError('salesforce: the token answer has no access_token or instance_url', null, true);
      const org = /\/id\/(00D[A-Za-z0-9]{12,15})\//.exec(body.data.id ?? '')?.[1] ?? new URL(body.data.instance_url).host;
      this.ctx.log.info({ service: 'salesforce', flow: c.auth.flow, instance: body.data.instance_url }, 'signed in to Salesforce');
      return { token: body.data.access_token, instanceUrl: body.data.instance_url.replace(/\/+$/, ''), org };
    } catch (err) {
      if (err instanceof SourceError && refusal) {
        throw new SourceError(`salesforce: sign-in (${c.auth.flow}) refused: ${refusal.trim()}; check clientId and the ${c.auth.flow === 'client_credentials' ? 'client secret and the app\'s run-as user' : 'username, certificate and pre-authorization'}`, err.status, true);
      }
      throw err;
    }
  }

  /** `path` is below /services/data/vNN.0 (e.g. `/query`), or a full `/services/data/…` path as nextRecordsUrl gives. */
  async request<T = any>(method: CrmRequest['method'], path: string, options: Pick<CrmRequest, 'json' | 'searchParams' | 'creates' | 'headers'> = {}, signal?: AbortSignal): Promise<T> {
    let session = await this.session(null);
    for (let renewed = false; ; renewed = true) {
      this.checkReserve();
      let code: string | null = null;
      const s = session;
      const full = path.startsWith('/services/') ? path : `/services/data/v${this.config.apiVersion}${path}`;
      try {
        return await this.http.send<T>(this.gate, {
          method, url: `${s.instanceUrl}${full}`, ...options,
          headers: { authorization: `Bearer ${s.token}`, ...options.headers },
          onAnswer: (res) => {
            this.noteUsage(res, s.org);
            if (res.statusCode >= 400) code = errorCodeOf(res.body);
          },
        }, signal);
      } catch (err) {
        if (!(err instanceof SourceError)) throw err;
        // A 401 is answered before anything is done: sending again with a new session is safe, even for creates.
        if (err.status === 401 && code === 'INVALID_SESSION_ID' && !renewed) {
          this.ctx.log.info({ service: 'salesforce' }, 'session expired or revoked: signing in again');
          session = await this.session(s);
          continue;
        }
        if (code === 'REQUEST_LIMIT_EXCEEDED') throw this.spent(this.usage() ?? { used: 0, max: 0 }, 'REQUEST_LIMIT_EXCEEDED');
        if (code) throw new SalesforceError(err, code);
        throw err;
      }
    }
  }

  /** Every row of a SOQL query (`queryAll` includes deleted records), page by page through nextRecordsUrl. */
  async *query(soql: string, options: { all?: boolean; signal?: AbortSignal } = {}): AsyncGenerator<SfRow[]> {
    const headers = { 'sforce-query-options': `batchSize=${this.config.batchSize}` };
    let body = queryAnswer.parse(await this.request('GET', options.all ? '/queryAll' : '/query', { searchParams: { q: soql }, headers }, options.signal));
    for (;;) {
      if (body.records.length) yield body.records;
      if (body.done || !body.nextRecordsUrl) return;
      body = queryAnswer.parse(await this.request('GET', body.nextRecordsUrl, { headers }, options.signal));
    }
  }
}
