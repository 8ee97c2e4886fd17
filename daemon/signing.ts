// Request signing and its checks, shared by every webhook the daemon receives or sends: Standard Webhooks (the
// dialer's events, generic webhook sources, webhook sinks), HMAC helpers for CRM signatures, constant-time compares.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { WebhookRequest } from './sources/source.ts';

export const FIVE_MINUTES = 5 * 60_000;

export function header(req: WebhookRequest, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

/** Constant-time equality of two byte strings (a length difference is an answer, not an exception). */
export function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function hmacSha256(key: Buffer | string, text: Buffer | string): Buffer {
  return createHmac('sha256', key).update(text).digest();
}

/** The signing key of a `whsec_<base64>` secret (a secret without the prefix is used as its bytes). */
export function signingKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret);
}

export function standardWebhookSignature(secret: string, id: string, timestamp: string, payload: Buffer | string): string {
  return hmacSha256(signingKey(secret), Buffer.concat([Buffer.from(`${id}.${timestamp}.`), Buffer.isBuffer(payload) ? payload : Buffer.from(payload)])).toString('base64');
}

/** Checks the Standard Webhooks headers of a request (id, timestamp within 5 minutes, a matching v1 signature). */
export function verifyStandardWebhook(secret: string, req: WebhookRequest): { ok: true; id: string; replayKey: string } | { ok: false; status: 401; reason: string } {
  const id = header(req, 'webhook-id');
  const timestamp = header(req, 'webhook-timestamp');
  const signatures = header(req, 'webhook-signature');
  if (!id || !timestamp || !signatures) return { ok: false, status: 401, reason: 'missing webhook-id, webhook-timestamp or webhook-signature' };
  const ts = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || Math.abs(req.now - ts * 1000) > FIVE_MINUTES) return { ok: false, status: 401, reason: 'webhook-timestamp is more than 5 minutes away from now' };
  const expected = Buffer.from(standardWebhookSignature(secret, id, timestamp, req.rawBody), 'base64');
  const match = signatures.split(' ').some((s) => {
    const [version, value] = s.split(',', 2);
    return version === 'v1' && value !== undefined && sameBytes(Buffer.from(value, 'base64'), expected);
  });
  if (!match) return { ok: false, status: 401, reason: 'no webhook-signature matches' };
  return { ok: true, id, replayKey: `${id}.${timestamp}.${signatures}` };
}
