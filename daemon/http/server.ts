// The daemon's HTTP side (fastify): CRM webhooks (verified, deduplicated, acknowledged at once, then queued), the
// company's Do Not Call list's signed endpoint (dnc.ts), /health, Prometheus /metrics and the operations page (/ops,
// in ops.ts). It listens from the start of `start`, before anything waits for Redis: until the daemon is ready,
// /health answers 503 saying what the start waits for.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { currentTraceparent, inSpan } from '../telemetry.ts';
import Fastify, { type FastifyInstance } from 'fastify';
import type { RunningDaemon } from './running-daemon.ts';
import type { SyncKeys } from '../state/keys.ts';
import { verifyStandardWebhook } from '../signing.ts';
import type { InboxItem } from '../sync/run.ts';
import { registerDnc } from './dnc.ts';
import { registerOps } from './ops.ts';
import { STATE_READ_TIMEOUT_MS, withinMs } from './state-metrics.ts';

/** The daemon's listening socket: a starting daemon's answers first, then its routes (serve). */
export interface HttpServer {
  readonly server: Server;
  /** Hands every request from now on to the daemon's routes. */
  serve(d: RunningDaemon): Promise<void>;
  /** Stops listening; requests still running get up to `graceMs`, then their connections are closed. */
  close(graceMs?: number): Promise<void>;
}

/** What a starting daemon says on /health (503): `redis` is "ok" or why it is not reachable. */
export interface Starting { redis: string; waitingFor: string }

/**
 * Listens at once. Until `serve`, /health answers 503 `{ status: "starting", redis, waitingFor }` and every other path
 * 503 (webhook senders retry), so a container's health check and an operator see why the daemon is not ready.
 */
export async function listenHttp(host: string, port: number, starting: () => Starting): Promise<HttpServer> {
  const server = createServer();
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
  let app: FastifyInstance | null = null;
  server.on('request', (req, res) => {
    if (handler) return handler(req, res);
    const now = starting();
    const body = req.url?.split('?')[0] === '/health' ? { status: 'starting', ...now } : { error: `the daemon is starting (waiting for ${now.waitingFor}); retry later` };
    res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '2' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => { server.off('error', reject); resolve(); });
  });
  return {
    server,
    async serve(d) {
      let routes: typeof handler = null;
      app = await buildHttp(d, (h) => { routes = h; return server; });
      await app.ready();
      handler = routes;
    },
    async close(graceMs = 1000) {
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeIdleConnections();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([(async () => { await app?.close(); await closed; })(), new Promise((r) => { timer = setTimeout(r, graceMs); })]);
      clearTimeout(timer);
      server.closeAllConnections();
      await closed;
    },
  };
}

/** How long a delivered event id is remembered (HubSpot retries for about a day). */
const EVENT_TTL_S = 3 * 86_400;
/** A signature seen within the timestamp tolerance is a replay. */
const REPLAY_TTL_MS = 10 * 60_000;
const REPLAYED = 'replayed: this exact signed request was already received';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function buildHttp(d: RunningDaemon, serverFactory: (handler: Handler) => Server): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, bodyLimit: 10 * 1024 * 1024, serverFactory });
  const prefix = d.config.redis.prefix;

  app.setErrorHandler((err: { statusCode?: number; message: string }, req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 503;
    if (status === 503) d.log.error({ err: err.message, url: req.url }, 'request failed');
    // A 503 asks the sender to retry: what failed here is ours (Redis away), never their input.
    void reply.code(status).send({ error: status === 503 ? 'temporarily unavailable; retry later' : err.message });
  });

  /** Whether this signed request was received before (remembered for the timestamp tolerance, and counted so). */
  const replayed = async (keys: SyncKeys, syncId: string, replayKey: string): Promise<boolean> => {
    const key = keys.replay(createHash('sha256').update(replayKey).digest('base64url'));
    if ((await d.redis.set(key, '1', 'PX', REPLAY_TTL_MS, 'NX')) === 'OK') return false;
    d.metrics.webhooks.inc({ sync: syncId, result: 'replayed' });
    return true;
  };

  await app.register(async (hooks) => {
    // Signatures cover the raw bytes: the body is kept as it came, never re-serialised.
    hooks.removeAllContentTypeParsers();
    hooks.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    // From the moment its headers are read until what it delivered is in the inbox (or it is refused, or its connection
    // closes), a delivery is known to be coming: a run holds back part batches for it (sync/arrivals.ts).
    const arrived = new WeakMap<object, () => void>();
    hooks.addHook<{ Params: { syncId: string } }>('onRequest', async (req, reply) => {
      const arrivals = d.runtimes.get(req.params.syncId)?.arrivals;
      if (!arrivals) return;
      arrivals.begin();
      let ended = false;
      const end = () => { if (!ended) { ended = true; arrivals.end(); } };
      arrived.set(req, end);
      reply.raw.once('close', end);
    });

    hooks.post<{ Params: { syncId: string } }>('/webhooks/:syncId', (req, reply) => inSpan(`webhook ${d.runtimes.get(req.params.syncId)?.config.source.type ?? 'unknown'}`,
      () => ({ 'cds.sync': req.params.syncId, 'http.request.method': req.method, 'url.path': req.url.split('?')[0]! }), async (span) => {
      const rt = d.runtimes.get(req.params.syncId);
      if (!rt) return reply.code(404).send({ error: `no sync "${req.params.syncId}" in this daemon's configuration` });
      const syncId = rt.config.id;
      const rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const base = d.config.http.publicUrl ?? `${req.protocol}://${req.headers.host ?? 'localhost'}`;
      const verdict = rt.source.verifyWebhook({ method: req.method, url: `${base}${req.url}`, headers: req.headers, rawBody, now: Date.now() });
      if (!verdict.ok) {
        d.metrics.webhooks.inc({ sync: syncId, result: verdict.status === 401 ? 'refused' : 'invalid' });
        d.log.warn({ sync: syncId, reason: verdict.reason }, 'webhook refused');
        if (verdict.reply) return reply.code(verdict.status).type(verdict.reply.contentType).send(verdict.reply.body);
        return reply.code(verdict.status).send({ error: verdict.reason });
      }
      if (verdict.replayKey && await replayed(rt.state.keys, syncId, verdict.replayKey)) return reply.code(401).send({ error: REPLAYED });
      const eventKeys = verdict.eventIds.map((id) => rt.state.keys.event(createHash('sha256').update(id).digest('base64url').slice(0, 22)));
      const seen = eventKeys.length ? await d.redis.mget(...eventKeys) : [];
      if (eventKeys.length && seen.every((v) => v !== null)) {
        d.metrics.webhooks.inc({ sync: syncId, result: 'duplicate' });
        if (verdict.reply) return reply.code(200).type(verdict.reply.contentType).send(verdict.reply.body);
        return reply.code(200).send({ accepted: 0, duplicate: true });
      }
      // Queued before the event ids are remembered: a crash in between makes the sender retry, and applying twice is harmless.
      const item: InboxItem = {};
      if (verdict.contacts.length) item.c = verdict.contacts;
      if (verdict.deleted.length) item.d = verdict.deleted;
      if (verdict.read?.length) item.r = verdict.read;
      const traceparent = currentTraceparent();
      if (traceparent) item.p = traceparent;
      if (item.c || item.d || item.r) await d.redis.rpush(rt.state.keys.inbox, JSON.stringify(item));
      if (verdict.hold) d.log.debug({ sync: syncId, reason: verdict.hold }, 'webhook queued for the next scheduled run');
      else if (item.c || item.d || item.r || verdict.pull) await d.triggerPull(syncId, 'webhook', false, verdict.pull ? 'pull' : 'inbox');
      // Queued: from now on the run it queued (or the inbox) knows of it.
      arrived.get(req)?.();
      if (eventKeys.length) {
        const m = d.redis.multi();
        for (const k of eventKeys) m.set(k, '1', 'EX', EVENT_TTL_S);
        await m.exec();
      }
      d.metrics.webhooks.inc({ sync: syncId, result: 'accepted' });
      if (verdict.reply) return reply.code(200).type(verdict.reply.contentType).send(verdict.reply.body);
      span?.setAttribute('cds.contacts', verdict.contacts.length);
      d.log.debug({ sync: syncId, contacts: verdict.contacts.length, deleted: verdict.deleted.length, read: verdict.read?.length ?? 0 }, 'webhook accepted');
      return reply.code(200).send({ accepted: verdict.eventIds.length || 1 });
    }, { kind: 'server', headers: req.headers }));
  });

  await app.register(async (events) => {
    events.removeAllContentTypeParsers();
    events.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    // The dialer's own events (the reference server's signed call.finished): the mirror's fast path.
    events.post<{ Params: { syncId: string } }>('/webhooks/:syncId/events', (req, reply) => inSpan('webhook dialer events',
      () => ({ 'cds.sync': req.params.syncId, 'http.request.method': req.method }), async () => {
      // (A routed sync's mirrors share its configuration: the first one verifies and remembers the delivery.)
      const [mirror] = d.mirrorsOf(req.params.syncId);
      const secret = mirror?.config.eventsSecret;
      if (!mirror || !secret) return reply.code(404).send({ error: `sync "${req.params.syncId}" takes no dialer events (set mirror.eventsSecret)` });
      const rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const signed = verifyStandardWebhook(secret, { method: req.method, url: req.url, headers: req.headers, rawBody, now: Date.now() });
      if (!signed.ok) {
        d.metrics.webhooks.inc({ sync: req.params.syncId, result: 'refused' });
        return reply.code(401).send({ error: signed.reason });
      }
      let type: unknown;
      try { type = (JSON.parse(rawBody.toString('utf8')) as { type?: unknown }).type; } catch { return reply.code(400).send({ error: 'body is not JSON' }); }
      if (await replayed(mirror.state.keys, mirror.syncId, signed.replayKey)) return reply.code(401).send({ error: REPLAYED });
      if (type === 'call.finished') await d.triggerMirror(req.params.syncId, 'event');
      d.metrics.webhooks.inc({ sync: req.params.syncId, result: 'accepted' });
      return reply.code(200).send({ accepted: type === 'call.finished' ? 1 : 0 });
    }, { kind: 'server', headers: req.headers }));
  });

  app.get('/health', async (_req, reply) => {
    const checks: Record<string, string> = {};
    // A connection that is down is said at once (with where and why), not after a PING's wait.
    const down = d.redisProblem();
    if (down) checks.redis = down;
    else {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([d.redis.ping(), new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`${d.redisWhere} did not answer a PING within 2 s`)), 2000); })]);
        checks.redis = 'ok';
      } catch (err) {
        checks.redis = (err as Error).message;
      } finally {
        clearTimeout(timer);
      }
    }
    const first = d.runtimes.values().next().value;
    if (first) {
      try {
        // (A routed sync's campaigns are its routes'.)
        await first.push.client.listNumbers((first.routes?.[0] ?? first).config.campaignId, 0, 0);
        checks.dialer = 'ok';
      } catch (err) {
        const e = err as { kind?: string; message: string };
        checks.dialer = e.kind === 'rate-limited' ? 'ok' : e.message;
      }
    }
    const ok = Object.values(checks).every((v) => v === 'ok');
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unhealthy', ...checks });
  });

  app.get('/metrics', async (_req, reply) => {
    // BullMQ's queue gauges read Redis too (beside the state gauges, at the same time): left out while it is unreachable
    // or slow (cds_redis_up says so), so that a scrape always answers within the reading's timeout.
    const queues = !d.metrics.redisAnswers() ? null : withinMs(Promise.all([d.syncQueue, ...[...d.pushQueues.values()].map((q) => q.queue)]
      .map((q) => q.exportPrometheusMetrics({ daemon: prefix }))).catch(() => null), STATE_READ_TIMEOUT_MS);
    const parts = [await d.metrics.registry.metrics(), ...(await queues) ?? []];
    return reply.type(d.metrics.registry.contentType).send(parts.join('\n'));
  });

  await registerDnc(app, d);
  await registerOps(app, d);

  return app;
}
