// Who may use the console: the console token (as a bearer token, or once at sign-in), then a session cookie with a CSRF token.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './errors.ts';
import { RateLimiter, type RateLimitPolicy } from './rate-limit.ts';

/** The session cookie: HttpOnly (no script reads it), SameSite=Strict (no other site sends it), only under /console. */
export const SESSION_COOKIE = 'cd_console_session';
/** The header the page's script sends its CSRF token in (a form sends the field `csrf`). */
export const CSRF_HEADER = 'x-csrf-token';
export const CSRF_FIELD = 'csrf';

export interface SessionOptions {
  /** How long a session lasts after sign-in (default 8 hours). */
  ttlMs: number;
  /** Real time for session expiry and the attempts' refill (tests move it); not the simulation clock. */
  now: () => number;
  /**
   * Wrong console tokens per client address, however presented (sign-in form or bearer token): 20 at once, then one
   * every 6 s by default, so guessing a chosen CONSOLE_TOKEN stays slow.
   */
  signInLimit: RateLimitPolicy;
}

const DEFAULT_SESSION: SessionOptions = { ttlMs: 8 * 3600_000, now: Date.now, signInLimit: { rate: 1 / 6, burst: 20 } };
/** Most live sessions kept; the oldest goes first beyond it (a flood of sign-ins cannot grow memory without bound). */
const MAX_SESSIONS = 1000;

/** The CSRF token is kept in clear: the page shows it in its markup on every load, and alone it grants nothing. */
interface Session { csrf: string; expiresAt: number }

/**
 * A presentation of the console token: right, wrong (it cost an attempt), or refused unheard because the client has no
 * attempts left (even the right token, so that a guess past the limit learns nothing).
 */
export type TokenCheck = { verdict: 'right' } | { verdict: 'wrong' } | { verdict: 'limited'; retryAfterSeconds: number };

/** A session just made: the cookie's value (shown to no one else, kept only hashed) and its CSRF token. */
export interface NewSession { id: string; csrf: string; expiresAt: number }

/** A signed-in browser: its CSRF token is needed on every change it asks for. */
export interface SignedIn { csrf: string; expiresAt: number }

/** Why a request carries no valid session: absent, or one the server does not know (signed out, forged, restarted) or that expired. */
export type SessionState = { ok: true; session: SignedIn } | { ok: false; reason: 'none' | 'unknown' | 'expired' };

const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest();

export const SESSION_REFUSALS: Record<'none' | 'unknown' | 'expired', string> = {
  none: 'Not signed in: open /console and sign in with the console token, or send "Authorization: Bearer <console token>" (CONSOLE_TOKEN)',
  unknown: 'The console session is not valid (signed out, forged, or from before a server restart); sign in again at /console',
  expired: 'The console session expired; sign in again at /console',
};

export class ConsoleAccess {
  private readonly tokenHash: Buffer;
  private readonly options: SessionOptions;
  /** Sessions by the SHA-256 of their id: the cookie's value is never kept. */
  private readonly sessions = new Map<string, Session>();

  /** The one limit on guessing the console token, shared by the sign-in form and bearer tokens; only failures cost. */
  private readonly attempts: RateLimiter;

  constructor(consoleToken: string, options: Partial<SessionOptions> = {}) {
    this.tokenHash = sha256(consoleToken);
    this.options = { ...DEFAULT_SESSION, ...options };
    this.attempts = new RateLimiter(this.options.signInLimit, this.options.now);
  }

  /**
   * Checks a console token presented by the client at `address`. A right one costs nothing (a script using the token
   * is not throttled), a wrong one costs an attempt, and with none left every presentation is refused until one is due.
   */
  private checkToken(address: string, given: string): TokenCheck {
    const who = `sign-in:${address}`;
    const wait = this.attempts.wait(who);
    if (wait > 0) return { verdict: 'limited', retryAfterSeconds: wait };
    if (this.isConsoleToken(given)) return { verdict: 'right' };
    this.attempts.take(who);
    return { verdict: 'wrong' };
  }

  /** Whether `given` is the console token; constant time (both sides are hashed to one length first). */
  private isConsoleToken(given: string): boolean {
    return timingSafeEqual(sha256(given), this.tokenHash);
  }

  /** A new session (its cookie value and CSRF token) for the right token, within the client's attempts. */
  signIn(address: string, token: string): Exclude<TokenCheck, { verdict: 'right' }> | { verdict: 'right'; session: NewSession } {
    const check = this.checkToken(address, token);
    if (check.verdict !== 'right') return check;
    const now = this.options.now();
    this.prune(now);
    const id = randomBytes(32).toString('base64url');
    const csrf = randomBytes(32).toString('base64url');
    const expiresAt = now + this.options.ttlMs;
    this.sessions.set(sha256(id).toString('hex'), { csrf, expiresAt });
    return { verdict: 'right', session: { id, csrf, expiresAt } };
  }

  signOut(request: FastifyRequest): void {
    const id = cookieValue(request.headers.cookie, SESSION_COOKIE);
    if (id === undefined) return;
    this.sessions.delete(sha256(id).toString('hex'));
  }

  session(request: FastifyRequest): SessionState {
    const id = cookieValue(request.headers.cookie, SESSION_COOKIE);
    if (id === undefined || id === '') return { ok: false, reason: 'none' };
    const key = sha256(id).toString('hex');
    const s = this.sessions.get(key);
    if (!s) return { ok: false, reason: 'unknown' };
    if (s.expiresAt <= this.options.now()) {
      this.sessions.delete(key);
      return { ok: false, reason: 'expired' };
    }
    return { ok: true, session: { csrf: s.csrf, expiresAt: s.expiresAt } };
  }

  /** Whether the request carries the session's CSRF token (header, or form field for a plain form); constant time. */
  csrfMatches(request: FastifyRequest, session: SignedIn): boolean {
    const header = request.headers[CSRF_HEADER];
    const given = typeof header === 'string' ? header
      : request.body instanceof URLSearchParams ? request.body.get(CSRF_FIELD) ?? undefined : undefined;
    if (given === undefined || given === '') return false;
    return timingSafeEqual(sha256(given), sha256(session.csrf));
  }

  /**
   * The guard of the console API: the console token as a bearer token, or a signed-in session whose every change
   * (any method but GET/HEAD) carries its CSRF token. 401 or 403 with what to do; nothing runs before it passes.
   */
  guard(request: FastifyRequest): void {
    const auth = request.headers.authorization;
    if (auth !== undefined) {
      // A malformed header is a wrong token too: it costs an attempt like any other guess.
      const check = this.checkToken(request.ip, /^Bearer[ ]+(\S+)\s*$/i.exec(auth)?.[1] ?? '');
      if (check.verdict === 'right') return;
      if (check.verdict === 'limited') throw tooManyAttempts(check.retryAfterSeconds);
      throw new ApiError('unauthorized', 'The console needs "Authorization: Bearer <console token>" (CONSOLE_TOKEN); this is not it');
    }
    const state = this.session(request);
    if (!state.ok) throw new ApiError('unauthorized', SESSION_REFUSALS[state.reason]);
    if (request.method === 'GET' || request.method === 'HEAD') return;
    if (!this.csrfMatches(request, state.session)) {
      throw new ApiError('forbidden',
        `The request has no valid CSRF token (the ${CSRF_HEADER} header the console page sends); nothing was changed. Reload /console and try again`);
    }
  }

  /** Sets the session cookie; Secure when the request came over HTTPS. */
  setCookie(reply: FastifyReply, id: string, expiresAt: number): void {
    const maxAge = Math.max(0, Math.floor((expiresAt - this.options.now()) / 1000));
    reply.header('set-cookie', `${SESSION_COOKIE}=${id}; Path=/console; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure(reply.request)}`);
  }

  clearCookie(reply: FastifyReply): void {
    reply.header('set-cookie', `${SESSION_COOKIE}=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict${secure(reply.request)}`);
  }

  private prune(now: number): void {
    for (const [key, s] of this.sessions) {
      if (s.expiresAt <= now || this.sessions.size >= MAX_SESSIONS) this.sessions.delete(key);
      else break;
    }
  }
}

/** The 429 of a client out of attempts at the console token, however it presented it. */
function tooManyAttempts(retryAfterSeconds: number): ApiError {
  return new ApiError('rate-limited',
    `Too many wrong console tokens from this address; try again in ${retryAfterSeconds} s`,
    { headers: { 'retry-after': String(retryAfterSeconds) } });
}

function secure(request: FastifyRequest): string {
  return request.protocol === 'https' ? '; Secure' : '';
}

/** One cookie's value from a Cookie header; undefined when absent. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
