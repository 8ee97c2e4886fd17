// The operations page under /ops, behind the admin token: each sync's state, runs, parked records (with a retry) and
// mirror lag, and the BullMQ queues through bull-board (read-only unless http.queuesWritable).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RunningDaemon } from './running-daemon.ts';
import { countryCode, toE164 } from '../phone.ts';
import { campaignsOf } from '../sync/run.ts';
import { numberStatusOf, syncStatus } from '../sync/status.ts';
import { chartLibrary, syncHistory, VIEWS } from './ops-history.ts';
import { opsPage } from './ops-page.ts';
import { SignInLimit } from './sign-in-limit.ts';

export const OPS_REALM = 'campaign-sync';
/** The longest phone number the lookup reads, as typed (spaces, dashes, an extension). */
const MAX_TYPED_PHONE = 40;
/** The header the page's own requests carry; a cross-site page cannot send it (see `sameOrigin`). */
export const OPS_CSRF_HEADER = 'x-requested-with';
export const OPS_CSRF_VALUE = 'campaign-sync';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** The password of an `Authorization: Basic` header (the user name is ignored), or null. */
function basicPassword(header: string | undefined): string | null {
  const m = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header ?? '');
  if (!m) return null;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? null : decoded.slice(colon + 1);
}

/**
 * CSRF guard for state-changing requests. Browsers attach cached Basic credentials to cross-site requests, so an
 * authenticated operator visiting a hostile page could be made to send them. Sec-Fetch-Site is set by the browser
 * itself (a page cannot forge it) and survives proxies that rewrite Host; older browsers send Origin instead. A
 * request with neither does not come from a browser page (curl, scripts) and carries no ambient credentials.
 */
function sameOrigin(req: FastifyRequest): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none';
  const origin = req.headers.origin;
  if (typeof origin !== 'string') return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

/** Registers /ops: the page, its JSON API and bull-board, or, without http.adminToken, a 404 that says how to turn it on. */
export async function registerOps(app: FastifyInstance, d: RunningDaemon): Promise<void> {
  const token = d.config.http.adminToken;
  if (!token) {
    const off = async (_req: FastifyRequest, reply: FastifyReply) => reply.code(404).send({
      error: 'the operations page is off: set http.adminToken in the daemon configuration (e.g. adminToken: ${CDS_ADMIN_TOKEN}, ' +
        'a long random secret from the environment) and restart; then open /ops with any user name and the token as password',
    });
    app.all('/ops', off);
    app.all('/ops/*', off);
    return;
  }
  const expected = sha256(token);
  const signIns = new SignInLimit();
  const readOnlyMode = d.config.http.queuesWritable !== true;
  const charts = await chartLibrary();

  await app.register(async (ops) => {
    ops.addHook('onRequest', async (req, reply) => {
      // Nothing here may be framed (the retry button) or cached (sync state, contact ids).
      void reply.header('x-frame-options', 'DENY').header('cache-control', 'no-store').header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer');
      const password = basicPassword(req.headers.authorization);
      // A client that guessed too often is not even checked (the right token too): guessing costs time, not just requests.
      const wait = password === null ? 0 : signIns.wait(req.ip);
      if (wait > 0) {
        return reply.code(429).header('retry-after', String(wait))
          .send({ error: `too many wrong admin tokens from this address; try again in ${wait} s` });
      }
      // Digests have one length whatever was sent, so the comparison takes the same time for every wrong password.
      if (password === null || !timingSafeEqual(sha256(password), expected)) {
        const unlogged = password === null ? null : signIns.wrong(req.ip);
        if (unlogged !== null) d.log.warn({ ip: req.ip, url: req.url, wrong: unlogged }, 'operations page: wrong admin token (logged once a minute per address, with the count)');
        return reply.code(401).header('www-authenticate', `Basic realm="${OPS_REALM}"`)
          .send({ error: 'the operations page needs the admin token: HTTP Basic auth, any user name, the token (http.adminToken) as password' });
      }
      if (!SAFE_METHODS.has(req.method) && !sameOrigin(req)) {
        return reply.code(403).send({ error: 'cross-site request refused: open the operations page on this daemon and act from there' });
      }
    });

    ops.get('/', async (_req, reply) => {
      const nonce = randomBytes(16).toString('base64');
      return reply.type('text/html; charset=utf-8')
        .header('content-security-policy', `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; ` +
          "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        .send(opsPage(nonce, charts.css));
    });

    // The charting library, from node_modules: the page's CSP allows no other origin and no inline script without its nonce.
    ops.get('/assets/uplot.js', async (_req, reply) => reply.type('text/javascript; charset=utf-8').send(charts.js));

    ops.get<{ Params: { id: string }; Querystring: { view?: string } }>('/api/syncs/:id/history', async (req, reply) => {
      const rt = d.runtimes.get(req.params.id);
      if (!rt) return reply.code(404).send({ error: `no sync "${req.params.id}" in this daemon's configuration` });
      const view = req.query.view ?? 'hour';
      if (!(VIEWS as readonly string[]).includes(view)) {
        return reply.code(400).send({ error: `view must be one of ${VIEWS.join(', ')}; got ${JSON.stringify(view).slice(0, 40)}` });
      }
      return syncHistory(d, rt, view as (typeof VIEWS)[number]);
    });

    // Where one number's callee is and whether it may be called now: the zone evidence recorded when it was admitted.
    ops.get<{ Params: { id: string; phone: string } }>('/api/syncs/:id/window/:phone', async (req, reply) => {
      const rt = d.runtimes.get(req.params.id);
      if (!rt) return reply.code(404).send({ error: `no sync "${req.params.id}" in this daemon's configuration` });
      const windows = campaignsOf(rt).filter((c) => c.window);
      if (!windows.length) return reply.code(404).send({ error: `sync "${req.params.id}" has no calling window (the rules are off: ${rt.config.rules.off})` });
      if (!/^\+\d{6,15}$/.test(req.params.phone)) return reply.code(400).send({ error: 'the phone number must be in E.164 (+ and 6 to 15 digits)' });
      // A routed sync: the route that admitted it says where it is (and which campaign holds it).
      for (const c of windows) {
        const found = await c.window!.numberWindow(req.params.phone);
        if (found) return rt.routes ? { ...found, campaignId: c.config.campaignId } : found;
      }
      return reply.code(404).send({ error: 'this sync has not admitted that number' });
    });

    // The trace that added (or parked) one number: its id, and a link when telemetry.viewerUrl is set.
    ops.get<{ Params: { id: string; phone: string } }>('/api/syncs/:id/numbers/:phone/trace', async (req, reply) => {
      const rt = d.runtimes.get(req.params.id);
      if (!rt) return reply.code(404).send({ error: `no sync "${req.params.id}" in this daemon's configuration` });
      if (!/^\+\d{6,15}$/.test(req.params.phone)) return reply.code(400).send({ error: 'the phone number must be in E.164 (+ and 6 to 15 digits)' });
      const n = await numberStatusOf(rt, req.params.phone, d.config.telemetry?.viewerUrl);
      if (n.state !== 'held' && n.state !== 'parked') return reply.code(404).send({ error: 'the campaign holds no such number of this sync, and none is parked' });
      return { state: n.state, traceId: n.traceId, traceparent: n.traceparent, url: n.traceUrl,
        ...(n.traceId ? {} : { note: 'no trace was recorded for it (tracing was off when it was added)' }) };
    });

    // What the daemon knows of one phone number, typed in any common format (normalised as the sync normalises a CRM's
    // numbers: with the sync's mapping.defaultCountry, or ?country=): in every sync, or in ?sync= alone.
    // A wildcard, not a parameter: the router would answer a parameter over its 100 characters with a bare 404.
    ops.get<{ Params: { '*': string }; Querystring: { sync?: string; country?: string } }>('/api/numbers/*', async (req, reply) => {
      const typed = req.params['*'];
      if (typed.length > MAX_TYPED_PHONE) return reply.code(400).send({ error: `a phone number is at most ${MAX_TYPED_PHONE} characters; got ${typed.length}` });
      const country = req.query.country ? countryCode(req.query.country) : null;
      if (req.query.country && !country) {
        return reply.code(400).send({ error: `country must be a two-letter country code such as US or GB; got ${JSON.stringify(req.query.country).slice(0, 20)}` });
      }
      const rts = req.query.sync === undefined ? [...d.runtimes.values()] : [d.runtimes.get(req.query.sync)].filter((rt) => rt !== undefined);
      if (!rts.length) return reply.code(404).send({ error: `no sync ${JSON.stringify(req.query.sync).slice(0, 60)} in this daemon's configuration` });
      const syncs = [];
      const refused: { sync: string; reason: string }[] = [];
      for (const rt of rts) {
        const e164 = toE164(typed, country ?? rt.config.mapping.defaultCountry as Parameters<typeof toE164>[1]);
        if (e164.ok) syncs.push(await numberStatusOf(rt, e164.e164, d.config.telemetry?.viewerUrl));
        else refused.push({ sync: rt.config.id, reason: e164.reason });
      }
      if (!syncs.length) {
        return reply.code(400).send({ error: `${JSON.stringify(typed).slice(0, MAX_TYPED_PHONE + 2)} is not a phone number (${[...new Set(refused.map((r) => r.reason))].join('; ')}): ` +
          'give it with its country code (+1 212 555 0199) or choose a country' });
      }
      return { typed, syncs, refused };
    });

    ops.get('/api/syncs', async () => ({
      generatedAt: new Date().toISOString(),
      queuesWritable: !readOnlyMode,
      /** A trace viewer's URL template ({traceId}), when configured: the page links run and parked-record traces. */
      traceViewer: d.config.telemetry?.viewerUrl ?? null,
      syncs: await Promise.all([...d.runtimes.values()].map((rt) => syncStatus(rt))),
    }));

    // CRMs' daily API allowances as their answers last reported them (Salesforce's Sforce-Limit-Info), by org.
    ops.get('/api/crm-usage', async () => {
      const allowed = new Map((await d.metrics.crmApiAllowance.get()).values.map((v) => [`${v.labels.crm}/${v.labels.account}`, v.value]));
      return {
        usage: (await d.metrics.crmApiUsed.get()).values.map((v) => ({
          crm: String(v.labels.crm), account: String(v.labels.account), used: v.value, allowed: allowed.get(`${v.labels.crm}/${v.labels.account}`) ?? null,
        })),
      };
    });

    ops.post<{ Params: { id: string } }>('/api/syncs/:id/retry', async (req, reply) => {
      // CSRF: besides the same-origin check above, the page's fetch sends a custom header; a cross-site page can only
      // send one after a CORS preflight, which this daemon never grants. A plain form post or <img> cannot send it.
      if (req.headers[OPS_CSRF_HEADER] !== OPS_CSRF_VALUE) {
        return reply.code(403).send({ error: `missing header ${OPS_CSRF_HEADER}: ${OPS_CSRF_VALUE} (the operations page sends it)` });
      }
      const rt = d.runtimes.get(req.params.id);
      if (!rt) return reply.code(404).send({ error: `no sync "${req.params.id}" in this daemon's configuration` });
      // Parked records stay parked until a push succeeds; marking them dirty makes the next plan push them again.
      const phones: string[] = [];
      for (const { state: { keys: k } } of campaignsOf(rt)) {
        const parked = await d.redis.hkeys(k.parked);
        for (let i = 0; i < parked.length; i += 1000) await d.redis.sadd(k.dirty, ...parked.slice(i, i + 1000));
        phones.push(...parked);
      }
      await d.triggerPull(rt.config.id, 'operator retry');
      // The mirror's parked activities are tried again by each of its runs: one now, rather than at the next.
      let activities = 0;
      for (const m of d.mirrorsOf(rt.config.id)) activities += await d.redis.hlen(m.state.keys.mirror.parked);
      if (activities) await d.triggerMirror(rt.config.id, 'operator retry');
      d.log.info({ sync: rt.config.id, requeued: phones.length, activities }, 'parked records re-queued from the operations page');
      return { requeued: phones.length, activities };
    });

    // bull-board's UI and API, served from node_modules (works offline), behind the same auth hook.
    const board = new FastifyAdapter();
    board.setBasePath('/ops/queues');
    const usedBy = (q: unknown) => [...d.runtimes.values()].filter((rt) => rt.push === q).map((rt) => rt.config.id).join(', ');
    createBullBoard({
      queues: [
        new BullMQAdapter(d.syncQueue, { readOnlyMode, description: 'sync runs: pulls, plans and schedule ticks' }),
        ...[...d.pushQueues.values()].map((q) => new BullMQAdapter(q.queue, { readOnlyMode, description: `dialer API calls (one job = one request) of ${usedBy(q)}` })),
      ],
      serverAdapter: board,
      options: { uiConfig: { boardTitle: 'Campaign sync queues' } },
    });
    await ops.register(async (queues) => {
      queues.addHook('onSend', async (_req, reply, payload) => {
        if (!String(reply.getHeader('content-type') ?? '').startsWith('text/html') || typeof payload !== 'string') return payload;
        // The UI's template links Google Fonts; the daemon may have no Internet and should not tell Google who looks.
        void reply.header('content-security-policy', "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " +
          "font-src 'self' data:; connect-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'");
        return payload.replace(/<link[^>]+fonts\.googleapis\.com[^>]*>/g, '');
      });
      await queues.register(board.registerPlugin());
    }, { prefix: '/queues' });
  }, { prefix: '/ops' });
}
