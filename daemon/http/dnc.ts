// POST /dnc/company: numbers put on the company's own Do Not Call list by a web form, an IVR's opt-out or a workflow,
// signed as Standard Webhooks are with `doNotCallEndpoint.secret` (404 without it). A signed request seen before is
// refused, a webhook-id handled before changes nothing again; a number that cannot be read is refused alone.
import { replanHeld } from '../dnc/replan.ts';
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod/v4';
import { COMPANY_LIST } from '../dnc/config.ts';
import { OwnList } from '../dnc/own-list.ts';
import { countryCode, toE164 } from '../phone.ts';
import { verifyStandardWebhook } from '../signing.ts';
import { DncKeys } from '../state/keys.ts';
import { inSpan } from '../telemetry.ts';
import type { RunningDaemon } from './running-daemon.ts';

/** The largest body taken (1 MiB): 10,000 numbers with room to spare. */
export const DNC_BODY_LIMIT = 1024 * 1024;
/** Numbers a request may carry. */
export const DNC_MAX_NUMBERS = 10_000;
/** A signed request seen within the timestamp tolerance (5 minutes either way) is a replay. */
const REPLAY_TTL_MS = 10 * 60_000;
/** How long a handled webhook-id is remembered: a sender's retries of it within this change nothing again. */
const EVENT_TTL_S = 3 * 86_400;

const body = z.strictObject({
  numbers: z.array(z.unknown(), { error: 'numbers: a list of phone numbers (texts)' })
    .min(1, 'numbers: the list is empty')
    .max(DNC_MAX_NUMBERS, `numbers: at most ${DNC_MAX_NUMBERS.toLocaleString('en-US')} a request`).optional(),
  number: z.unknown().optional(),
  reason: z.string({ error: 'reason: a text, when given' }).max(500, 'reason: at most 500 characters').optional(),
  by: z.string({ error: 'by: a text, when given (who or what asked: "web form", "ivr")' }).trim()
    .min(1, 'by: empty (leave it out, or say who or what asked)').max(100, 'by: at most 100 characters').optional(),
  country: z.string({ error: 'country: a two-letter country code, when given' }).optional(),
}, { error: 'the body is a JSON object: {"numbers": ["+12015550123", ...]} or {"number": "..."}, with reason, by and country if wanted' });

const SHAPE = 'send {"numbers": ["+12015550123", ...]} or {"number": "+12015550123"}, with "reason", "by" and "country" (of numbers without their country code; default US) if wanted';

/** What a refused body says: each problem with the key it is about. */
function problems(error: z.ZodError): string {
  return error.issues.map((i) => (i.code === 'unrecognized_keys' ? `unknown key${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => JSON.stringify(k)).join(', ')}` : i.message)).join('; ');
}

const shown = (v: unknown) => {
  const text = typeof v === 'string' ? v : JSON.stringify(v) ?? String(v);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
};

export async function registerDnc(app: FastifyInstance, d: RunningDaemon): Promise<void> {
  const keys = new DncKeys(d.config.redis.prefix);
  const own = new OwnList(d.redis, keys, COMPANY_LIST);
  const hash = (text: string) => createHash('sha256').update(text).digest('base64url').slice(0, 22);

  await app.register(async (dnc) => {
    // The signature covers the raw bytes: the body is kept as it came, whatever its content type.
    dnc.removeAllContentTypeParsers();
    dnc.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: DNC_BODY_LIMIT }, (_req, raw, done) => done(null, raw));
    dnc.setErrorHandler((err: { statusCode?: number; code?: string; message: string }, req, reply) => {
      if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        return reply.code(413).send({ error: `the body is larger than ${DNC_BODY_LIMIT.toLocaleString('en-US')} bytes (1 MiB): send at most ${DNC_MAX_NUMBERS.toLocaleString('en-US')} numbers a request` });
      }
      const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 503;
      if (status === 503) d.log.error({ err: err.message, url: req.url }, 'request failed');
      // A 503 asks the sender to retry: what failed here is ours (Redis away), never their input.
      return reply.code(status).send({ error: status === 503 ? 'temporarily unavailable; retry later' : err.message });
    });

    dnc.post('/dnc/company', {
      bodyLimit: DNC_BODY_LIMIT,
      // Off: said before the body is read.
      onRequest: async (_req, reply) => {
        if (!d.config.doNotCallEndpoint) {
          return reply.code(404).send({ error: 'POST /dnc/company is off: set doNotCallEndpoint.secret in the daemon\'s configuration to take numbers for the company\'s Do Not Call list' });
        }
      },
    }, (req, reply) => inSpan('dnc company', () => ({ 'http.request.method': req.method, 'url.path': '/dnc/company' }), async (span) => {
      const secret = d.config.doNotCallEndpoint!.secret;
      const rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const signed = verifyStandardWebhook(secret, { method: req.method, url: req.url, headers: req.headers, rawBody, now: Date.now() });
      if (!signed.ok) {
        d.log.warn({ reason: signed.reason }, 'POST /dnc/company refused');
        return reply.code(401).send({ error: signed.reason });
      }
      let json: unknown;
      try {
        json = JSON.parse(rawBody.toString('utf8'));
      } catch {
        return reply.code(400).send({ error: `the body is not JSON: ${SHAPE}` });
      }
      const parsed = body.safeParse(json);
      if (!parsed.success) return reply.code(400).send({ error: `${problems(parsed.error)}: ${SHAPE}` });
      const b = parsed.data;
      if (b.numbers && b.number !== undefined) return reply.code(400).send({ error: `both "numbers" and "number": ${SHAPE}` });
      const given = b.numbers ?? (b.number !== undefined ? [b.number] : []);
      if (!given.length) return reply.code(400).send({ error: `the body names no number: ${SHAPE}` });
      const country = countryCode(b.country ?? 'US');
      if (!country) return reply.code(400).send({ error: `country: ${JSON.stringify(shown(b.country))} is not a two-letter country code (such as US)` });

      // Within the timestamp tolerance the same signed request is a replay; after it, its timestamp is refused.
      const replayKey = keys.endpointReplay(hash(signed.replayKey));
      if ((await d.redis.set(replayKey, '1', 'PX', REPLAY_TTL_MS, 'NX')) !== 'OK') {
        d.log.warn({ webhookId: shown(signed.id) }, 'POST /dnc/company refused: replayed');
        return reply.code(401).send({ error: 'replayed: this exact signed request was already received' });
      }
      // A sender's retry of a webhook-id already handled (signed anew): it was done, nothing is done again.
      const eventKey = keys.endpointEvent(hash(signed.id));
      if (await d.redis.get(eventKey)) return reply.code(200).send({ added: 0, already: 0, refused: [], duplicate: true });

      const phones = new Set<string>();
      const refused: Array<{ number: string; reason: string }> = [];
      for (const n of given) {
        if (typeof n !== 'string') {
          refused.push({ number: shown(n), reason: 'not a text: give the number as a string' });
          continue;
        }
        const r = toE164(n, country);
        if (r.ok) phones.add(r.e164);
        else refused.push({ number: shown(n), reason: r.reason });
      }
      const by = `endpoint${b.by ? `:${b.by}` : ''}`;
      let added = 0;
      try {
        added = phones.size ? await own.add([...phones], { by, reason: b.reason }) : 0;
      } catch (err) {
        // Not done: the sender's retry of this very request is not a replay.
        await d.redis.unlink(replayKey).catch(() => 0);
        throw err;
      }
      await d.redis.set(eventKey, '1', 'EX', EVENT_TTL_S);
      // A number a campaign holds leaves it now: the syncs holding it plan it again at once.
      for (const id of await replanHeld(d.redis, d.runtimes.values(), [...phones])) await d.triggerPull(id, 'company Do Not Call list', false, 'inbox');
      span?.setAttribute('cds.numbers', given.length);
      d.log.info({ added, already: phones.size - added, refused: refused.length, by }, 'company Do Not Call list: numbers added through POST /dnc/company');
      return reply.code(200).send({ added, already: phones.size - added, refused });
    }, { kind: 'server', headers: req.headers }));
  });
}
