// Builds the reference server: fastify with the /v1 API, the /console API, auth, rate limits and problem+json errors.
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { createHash } from 'node:crypto';
import { maxHeaderSize, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { AllowedMethods } from './allowed-methods.ts';
import { docsRoutes } from './api-docs.ts';
import { authenticate, authorize } from './auth.ts';
import { ConsoleAccess, type SessionOptions } from './console-access.ts';
import { ApiError, invalid, notFound } from './errors.ts';
import { redactSecrets, redactUrl } from './log-redaction.ts';
import { bodyParams, problem, sendProblem } from './http.ts';
import { decodeForm, malformedParams, MAX_JSON_DEPTH, parseQuery, tooDeepAt } from './request-decoding.ts';
import { SimulationClock } from './clock.ts';
import { Dialer } from './dialer/dialer.ts';
import type { OutcomeModel } from './dialer/model.ts';
import { Events, type SenderOptions } from './events.ts';
import { Random } from './random.ts';
import { PhoneValidator } from './phone-validator.ts';
import { CsvThread } from './csv-thread.ts';
import { DEFAULT_RATE_LIMIT, RateLimiter, type RateLimitPolicy } from './rate-limit.ts';
import type { Account, KeyRecord } from './store/accounts.ts';
import type { Store } from './store/store.ts';
import { DEFAULT_LIMITS, type Deps, type Limits } from './deps.ts';
import { campaignRoutes } from './routes/campaigns.ts';
import { consoleRoutes } from './routes/console.ts';
import { consolePageRoutes } from './routes/console-page.ts';
import { numberRoutes } from './routes/numbers.ts';
import { reportRoutes } from './routes/reports.ts';

export interface ServerOptions {
  store: Store;
  consoleToken: string;
  rateLimit?: RateLimitPolicy;
  limits?: Partial<Limits>;
  /** The simulation clock; without one, a manual clock starting at the real time (nothing moves it). */
  clock?: SimulationClock;
  clockMode?: 'manual' | 'realtime';
  /** Seeds every random draw of the dialer. */
  seed?: number;
  /** Key the webhook endpoints' signing secrets are derived from (WEBHOOK_SIGNING_KEY); else from the console token. */
  webhookSigningKey?: string;
  webhookSender?: Partial<SenderOptions>;
  /** The distributions call outcomes are drawn from (default: dialer/model.ts). */
  outcomes?: OutcomeModel;
  /** Overrides the clock for request-time stamps (tests of expiry). */
  now?: () => Date;
  /** The web console's sessions: their lifetime, and the real-time clock they expire by (tests move it). */
  consoleSessions?: Partial<SessionOptions>;
  /** Simulated seconds per real second of a real-time clock (--speed), which the console shows. */
  clockSpeed?: number;
  /**
   * The reverse proxies (addresses or CIDR ranges, --trust-proxy) whose X-Forwarded-Proto and X-Forwarded-For are
   * believed: the client's address and whether it came over HTTPS (the console's cookie is then Secure).
   */
  trustProxy?: string[];
  /** A PEM certificate and its key: the server listens over HTTPS (--tls-cert, --tls-key). */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** What goes to stdout as JSON lines: every request, or only failures (a 500 with its stack); nothing without. */
  log?: 'requests' | 'errors';
}

const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'X-Total-Count, Content-Range, RateLimit, RateLimit-Policy, Retry-After',
};
/** Largest url-encoded GET body (list parameters). */
const GET_BODY_BYTES = 1024 * 1024;
/** Longest path parameter (fastify's default): ids are far shorter, and a longer one is refused before routing. */
const MAX_PARAM_LENGTH = 100;

export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const clock = options.clock ?? new SimulationClock(Date.now());
  const now = options.now ?? (() => new Date(clock.now()));
  const limiter = new RateLimiter(options.rateLimit ?? DEFAULT_RATE_LIMIT);
  const store = options.store;
  const authResults = new WeakMap<FastifyRequest, KeyRecord | ApiError>();

  const app = Fastify({
    // A token pasted into a URL (`?token=cdk_…`) must not reach the log: every logged URL is redacted, and so are
    // an error's message and stack.
    logger: options.log ? {
      level: options.log === 'requests' ? 'info' : 'error',
      serializers: {
        req: (req: { method: string; url: string; host?: string; ip?: string; socket?: { remotePort?: number } }) => ({
          method: req.method, url: redactUrl(req.url, options.consoleToken), host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort,
        }),
        err: (err: Error & { code?: unknown }) => ({
          type: err.constructor?.name ?? 'Error', message: redactSecrets(String(err.message), options.consoleToken),
          stack: redactSecrets(String(err.stack), options.consoleToken), ...(err.code === undefined ? {} : { code: err.code }),
        }),
      },
    } : false,
    bodyLimit: limits.jsonBodyBytes,
    trustProxy: options.trustProxy?.length ? options.trustProxy : false,
    https: options.tls ?? null,
    // The problem+json error handler answers every error; fastify's own 4xx become problems there.
    return503OnClosing: true,
    routerOptions: {
      maxParamLength: MAX_PARAM_LENGTH,
      querystringParser: parseQuery,
    },
    // What fastify refuses before routing (a path parameter too long, a path that is not UTF-8): problems as well.
    frameworkErrors: (err, request, reply) => {
      reply.headers(CORS_HEADERS);
      if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
        return sendProblem(reply, new ApiError('uri-too-long',
          `A path segment is longer than the ${MAX_PARAM_LENGTH} characters a path parameter may have; the ids of this API are shorter`),
        shortenedPath(request.url));
      }
      if (err.code === 'FST_ERR_BAD_URL') {
        return sendProblem(reply, invalid([{ in: 'path', name: '', detail: 'The path is not valid percent-encoded UTF-8 (each %XX is one byte of a UTF-8 character)' }]),
          shortenedPath(request.url));
      }
      request.log.error({ err, req: request }, 'unhandled error');
      return sendProblem(reply, new ApiError('internal', INTERNAL), shortenedPath(request.url));
    },
    // Node refuses a request whose head it cannot read (larger than maxHeaderSize, not HTTP, too slow) before any
    // request exists: answer it with a problem too, written to the socket.
    clientErrorHandler: answerClientError,
  });

  // A request carrying a W3C traceparent (the sync daemon sends one while it traces) logs under the caller's trace and
  // span, so a server log line leads to the trace of the change that made the request.
  app.setChildLoggerFactory((logger, bindings, opts, rawReq) => {
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(String(rawReq.headers.traceparent ?? ''));
    return logger.child(m ? { ...bindings, trace_id: m[1], span_id: m[2] } : bindings, opts);
  });

  const allowedMethods = new AllowedMethods();
  app.addHook('onRoute', (route) => allowedMethods.add(route.method, route.url));

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    let parsed: URLSearchParams;
    try {
      parsed = formParams(body as string);
    } catch (err) {
      return done(err as ApiError, undefined);
    }
    done(null, parsed);
  });
  // fastify's JSON parser (which refuses __proto__ and constructor keys), behind a limit on nesting.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const at = tooDeepAt(body as string, MAX_JSON_DEPTH);
    if (at < 0) return parseJson(request, body as string, done);
    const detail = `The request body nests arrays and objects more than ${MAX_JSON_DEPTH} deep (at character ${at}); at most ${MAX_JSON_DEPTH} levels are accepted`;
    done(invalid([{ in: 'body', name: '', detail }]), undefined);
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.headers(CORS_HEADERS);
    // Decide by the matched route, not the raw URL: the router decodes %-escapes (/%761/ is /v1/).
    // The OpenAPI document and /docs are public: no key, and no token from the bucket of keyless requests.
    if (request.method === 'OPTIONS' || request.routeOptions.url?.startsWith('/console') || request.routeOptions.config?.public) return;
    let bucket = `ip:${request.ip}`;
    try {
      const key = authenticate(store, request.headers.authorization, now());
      authResults.set(request, key);
      bucket = `key:${key.id}`;
    } catch (err) {
      authResults.set(request, err as ApiError);
    }
    const decision = limiter.take(bucket);
    for (const [k, v] of Object.entries(decision.headers)) reply.header(k, v);
    if (!decision.allowed) {
      throw new ApiError('rate-limited',
        `The rate limit of ${limiter.policy.rate} requests per second (bursts of ${limiter.policy.burst}) was exceeded; retry in ${decision.retryAfterSeconds} s`,
        { headers: { 'retry-after': String(decision.retryAfterSeconds) } });
    }
  });

  // GET bodies are not parsed by fastify; list parameters may arrive there url-encoded.
  app.addHook('preValidation', async (request) => {
    if (request.method !== 'GET' || !hasBody(request)) return;
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const text = await readRaw(request, GET_BODY_BYTES);
    if (text.trim() === '') return;
    if (type !== 'application/x-www-form-urlencoded' && type !== '') {
      throw new ApiError('unsupported-media-type',
        `A GET body may only carry URL-encoded parameters (application/x-www-form-urlencoded); got ${JSON.stringify(type)}`);
    }
    bodyParams.set(request, formParams(text));
  });

  app.options('*', async (_request, reply) => {
    return reply
      .code(204)
      .header('access-control-allow-methods', 'GET, POST, PUT, DELETE, OPTIONS')
      // Range: react-admin's list requests send `Range: <resource>=<first>-<last>`, which is not a safelisted header.
      .header('access-control-allow-headers', 'Authorization, Content-Type, Range')
      .header('access-control-max-age', '600')
      .send();
  });

  app.setErrorHandler((err, request, reply) => {
    if (err instanceof ApiError) return sendProblem(reply, err);
    const e = err as { statusCode?: number; code?: string; message: string };
    const status = e.statusCode ?? 500;
    if (status >= 500) {
      request.log.error({ err, req: request }, 'unhandled error');
      return sendProblem(reply, new ApiError('internal', INTERNAL));
    }
    return sendProblem(reply, fromFastifyError(e, request));
  });

  app.setNotFoundHandler((request, reply) => {
    sendProblem(reply, allowedMethods.problem(request.method, request.url));
  });

  const access = new ConsoleAccess(options.consoleToken, options.consoleSessions);

  const validator = new PhoneValidator();
  clock.runChunksWith((run) => store.db.transaction(run), (err) => app.log.error({ err }, 'a simulation event failed; skipped'));
  const signingKey = options.webhookSigningKey ?? createHash('sha256').update(`webhook-signing:${options.consoleToken}`).digest('hex');
  const events = new Events(store, signingKey, () => clock.now(), options.webhookSender);
  events.start();
  app.addHook('onClose', async () => events.stop());
  const dialer = new Dialer(store, clock, new Random(options.seed ?? Math.floor(Math.random() * 2 ** 32)), events, options.outcomes);
  dialer.start();
  app.addHook('onClose', async () => validator.close());
  const csv = new CsvThread();
  app.addHook('onClose', async () => csv.close());
  const deps: Deps = {
    store, limits, now, validator, csv, clock, clockMode: options.clockMode ?? 'manual', clockSpeed: options.clockSpeed ?? 1, dialer, events,
    guard(request, op) {
      const auth = authResults.get(request);
      if (!auth) throw new Error('guard used outside /v1');
      if (auth instanceof ApiError) throw auth;
      const account = store.accounts.byId((request.params as { accountId: string }).accountId);
      authorize(auth, account?.pk, op);
      return { account: account!, key: auth };
    },
  };

  await app.register(multipart, {
    limits: { fileSize: limits.uploadBytes, files: 1, fields: 10, fieldSize: 1024, parts: 12 },
  });
  await app.register(async (v1) => {
    campaignRoutes(v1, deps);
    numberRoutes(v1, deps);
    reportRoutes(v1, deps);
  }, { prefix: '/v1/accounts/:accountId' });
  await app.register(async (d) => docsRoutes(d, {
    limits: { ...limits, getBodyBytes: GET_BODY_BYTES, jsonDepth: MAX_JSON_DEPTH, pathParameterChars: MAX_PARAM_LENGTH, headerBytes: maxHeaderSize },
    rateLimit: limiter.policy,
  }));
  // The console acts as a Campaign Admin of every account: the v1 operations under /console/v1, with their own rules and messages.
  const consoleDeps: Deps = {
    ...deps,
    guard(request) {
      const id = (request.params as { accountId: string }).accountId;
      const account = store.accounts.byId(id);
      if (!account) throw notFound('Account', id, 'on this server');
      return { account, key: consoleKey(account) };
    },
  };
  await app.register(async (c) => {
    // Before anything is read: a refused request's body is never parsed.
    c.addHook('onRequest', async (request) => access.guard(request));
    consoleRoutes(c, deps);
    await c.register(async (v1) => {
      campaignRoutes(v1, consoleDeps);
      numberRoutes(v1, consoleDeps);
      reportRoutes(v1, consoleDeps);
    }, { prefix: '/v1/accounts/:accountId' });
  }, { prefix: '/console' });
  await app.register(async (p) => consolePageRoutes(p, access));
  return app;
}

const INTERNAL = 'The server failed to handle this request; the error has been logged';

/** A url-encoded body's parameters; 400 naming those that are not valid percent-encoded UTF-8. */
function formParams(text: string): URLSearchParams {
  const { pairs, malformed } = decodeForm(text);
  if (malformed.length) throw invalid(malformedParams(malformed));
  return new URLSearchParams(pairs);
}

/** The path of a URL fastify refused, with every segment too long for a parameter cut short: a problem never echoes it whole. */
function shortenedPath(url: string): string {
  return url.split('?')[0]!.split('/').map((s) => (s.length > MAX_PARAM_LENGTH ? `${s.slice(0, 20)}…` : s)).join('/');
}

/** A request Node could not read (see clientErrorHandler above), answered with a problem and closed. */
function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  // A connection reset has nobody to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const e = err.code === 'HPE_HEADER_OVERFLOW'
    ? new ApiError('header-fields-too-large', `The request's URL and headers are larger than the ${maxHeaderSize} bytes accepted; ` +
      `send long list parameters url-encoded in a GET body instead (up to ${GET_BODY_BYTES} bytes)`)
    : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new ApiError('request-timeout', 'The request was not received in time')
      : new ApiError('invalid-request', 'The request is not valid HTTP/1.1');
  if (socket.writable) {
    const body = JSON.stringify(problem(e.kind, e.message, undefined));
    const head = [`HTTP/1.1 ${e.status} ${STATUS_CODES[e.status]}`, 'content-type: application/problem+json; charset=utf-8',
      `content-length: ${Buffer.byteLength(body)}`, ...Object.entries(CORS_HEADERS).map(([k, v]) => `${k}: ${v}`), 'connection: close'];
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  }
  // Closed at once, the socket could reset before the client read the answer (the rest of its request is unread).
  socket.resume();
  socket.setTimeout(5_000, () => socket.destroy());
}

/** The key the console acts with: a Campaign Admin of the account, restricted to nothing. */
function consoleKey(account: Account): KeyRecord {
  return {
    pk: 0, accountPk: account.pk, id: 'console', name: 'console', roles: ['CampaignAdmin'], campaignIds: null, tokenPrefix: '',
    createdAt: account.createdAt, expiresAt: null, deletedAt: null,
  };
}

function hasBody(request: FastifyRequest): boolean {
  const len = request.headers['content-length'];
  return (len !== undefined && len !== '0') || request.headers['transfer-encoding'] !== undefined;
}

async function readRaw(request: FastifyRequest, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request.raw) {
    size += (chunk as Buffer).length;
    if (size > max) throw new ApiError('payload-too-large', `A GET body may hold at most ${max} bytes of parameters`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** fastify's own client errors (bad JSON, wrong media type, too large) as problems that say what to fix. */
function fromFastifyError(e: { statusCode?: number; code?: string; message: string }, request: FastifyRequest): ApiError {
  const type = request.headers['content-type'];
  switch (e.statusCode) {
    case 413:
      return new ApiError('payload-too-large', `The request body is larger than the limit of ${request.routeOptions.bodyLimit} bytes`);
    case 415:
      return new ApiError('unsupported-media-type',
        `Content type ${JSON.stringify(type ?? '(none)')} is not accepted here; send application/json (multipart/form-data for uploads)`);
    default:
      if (e.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return new ApiError('invalid-request', 'The request body is empty; send JSON');
      if (e.code?.startsWith('FST_ERR_CTP') || e instanceof SyntaxError || e.statusCode === 400) {
        return new ApiError('invalid-request', `The request body is not valid JSON: ${e.message}`,
          { errors: [{ in: 'body', name: '', detail: e.message }] });
      }
      return new ApiError('invalid-request', e.message);
  }
}
