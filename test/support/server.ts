// Starts a real reference server on a loopback port with its own SQLite store, and talks to it over HTTP.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Role } from '../../api/enums.ts';
import type { Campaign } from '../../api/records.ts';
import { buildServer, type ServerOptions } from '../../server/app.ts';
import { SimulationClock } from '../../server/clock.ts';
import type { RateLimitPolicy } from '../../server/rate-limit.ts';
import { Store } from '../../server/store/store.ts';

export interface TestServer {
  url: string;
  app: FastifyInstance;
  store: Store;
  consoleToken: string;
  /** fetch against the server with an optional bearer token. */
  request(path: string, init?: RequestInit & { token?: string; json?: unknown }): Promise<Response>;
  console<T = any>(method: string, path: string, body?: unknown): Promise<T>;
  /** Moves the manual clock on, returning once every event up to then has been applied. */
  advance(seconds: number): Promise<{ now: string; eventsApplied: number }>;
  close(): Promise<void>;
}

export const NO_LIMIT: RateLimitPolicy = { rate: 1e9, burst: 1e9 };

export async function startServer(options: {
  db?: string; rateLimit?: RateLimitPolicy; limits?: ServerOptions['limits']; now?: () => Date;
  /** Random seed of the dialer and the start of the (manual) simulation clock. */
  seed?: number; clockStart?: string; webhookSender?: ServerOptions['webhookSender']; outcomes?: ServerOptions['outcomes'];
  consoleSessions?: ServerOptions['consoleSessions'];
  clockMode?: ServerOptions['clockMode']; clockSpeed?: number; trustProxy?: string[];
} = {}): Promise<TestServer> {
  const store = new Store(options.db ?? ':memory:');
  const consoleToken = `console_${randomBytes(16).toString('hex')}`;
  const clock = options.clockStart ? new SimulationClock(Date.parse(options.clockStart)) : undefined;
  const app = await buildServer({
    store, consoleToken, rateLimit: options.rateLimit ?? NO_LIMIT, limits: options.limits, now: options.now, clock, seed: options.seed,
    webhookSender: options.webhookSender, outcomes: options.outcomes, consoleSessions: options.consoleSessions,
    clockMode: options.clockMode, clockSpeed: options.clockSpeed, trustProxy: options.trustProxy,
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  const request: TestServer['request'] = (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (init.token) headers.set('authorization', `Bearer ${init.token}`);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    return fetch(url + path, { ...init, headers, body });
  };
  const server: TestServer = {
    url, app, store, consoleToken, request,
    async console(method, path, body) {
      const res = await request(`/console${path}`, { method, token: consoleToken, ...(body === undefined ? {} : { json: body }) });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`console ${method} ${path}: ${res.status} ${text}`);
      return (text ? JSON.parse(text) : undefined) as any;
    },
    advance(seconds) {
      return server.console('POST', '/clock/advance', { seconds });
    },
    async close() {
      await app.close();
      await store.close();
    },
  };
  return server;
}

/** An account with a key of the given roles; returns ids and the token. */
export async function createAccount(s: TestServer, name = 'Acme', timezone = 'Europe/Berlin'): Promise<{ id: string }> {
  return s.console('POST', '/accounts', { name, timezone });
}

export async function createKey(s: TestServer, accountId: string, roles: Role[], campaignIds?: string[]): Promise<string> {
  const key = await s.console('POST', `/accounts/${accountId}/apiKeys`, { name: roles.join('+'), roles, ...(campaignIds ? { campaignIds } : {}) });
  return key.token as string;
}

export async function createCampaign(s: TestServer, accountId: string, fields: Record<string, unknown> = {}): Promise<Campaign> {
  return s.console('POST', `/accounts/${accountId}/campaigns`, { name: 'Campaign', ...fields });
}

export async function addNumbers(s: TestServer, accountId: string, campaignId: string, numbers: (string | { number: string; varValues?: string[] })[]) {
  return s.console('POST', `/accounts/${accountId}/campaigns/${campaignId}/numbers`,
    numbers.map((n) => (typeof n === 'string' ? { number: n } : n)));
}

/** A list request's query string from plain values (JSON-encoded as §4.1 wants). */
export function q(params: { range?: unknown; sort?: unknown; filter?: unknown; [k: string]: unknown }): string {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) sp.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  const s = sp.toString();
  return s ? `?${s}` : '';
}

/** n valid, distinct US phone numbers in E.164. */
export function phoneNumbers(n: number, start = 0): string[] {
  return Array.from({ length: n }, (_, i) => `+1212555${String(start + i).padStart(4, '0')}`);
}

/** A request with node:http, for what fetch refuses to send (a GET with a body). */
export async function rawRequest(url: string, method: string, headers: Record<string, string>, body: string):
  Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const { request } = await import('node:http');
  return new Promise((resolve, reject) => {
    const req = request(new URL(url), { method, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (r) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (text += c));
      r.on('end', () => resolve({ status: r.statusCode!, headers: r.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Fixture: what the dialer would do to a number (status, attempts, a scheduled retry), counters included. */
export function setNumber(s: TestServer, id: string | number, status: string, attempts = 0, nextAttemptAt: number | null = null): void {
  const row = s.store.db.get<import('../../server/store/numbers.ts').NumberRow>('SELECT * FROM numbers WHERE id = ?', Number(id));
  if (!row) throw new Error(`no number ${id}`);
  s.store.numbers.update(row, status as never, attempts, nextAttemptAt);
}
