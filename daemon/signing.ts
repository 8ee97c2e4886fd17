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

/**
 * Whether a signature as sent is, byte for byte, the expected one in its canonical encoding (standard base64 with
 * its padding), compared in constant time. Decoding first would let one signature travel in many spellings
 * (base64url characters, padding dropped, bytes after it), each a "new" request to the replay check.
 */
export function sameSignature(given: string, expected: string): boolean {
  return sameBytes(Buffer.from(given, 'utf8'), Buffer.from(expected, 'utf8'));
}

/**
 * Checks the Standard Webhooks headers of a request (id, timestamp within 5 minutes, a matching v1 signature).
 * The header may list several space-delimited signatures (the spec's key rotation); one canonical match is enough.
 * The replay key is the signed content (id, timestamp, the expected signature), never the header's text, so adding,
 * dropping or reordering entries does not make a seen request new.
 */
export function verifyStandardWebhook(secret: string, req: WebhookRequest): { ok: true; id: string; replayKey: string } | { ok: false; status: 401; reason: string } {
  const id = header(req, 'webhook-id');
  const timestamp = header(req, 'webhook-timestamp');
  const signatures = header(req, 'webhook-signature');
  if (!id || !timestamp || !signatures) return { ok: false, status: 401, reason: 'missing webhook-id, webhook-timestamp or webhook-signature' };
  const ts = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || Math.abs(req.now - ts * 1000) > FIVE_MINUTES) return { ok: false, status: 401, reason: 'webhook-timestamp is more than 5 minutes away from now' };
  const expected = standardWebhookSignature(secret, id, timestamp, req.rawBody);
  let match = false;
  // Every entry is compared (no early exit): how many entries precede the match tells an attacker nothing.
  for (const entry of signatures.split(' ')) {
    const comma = entry.indexOf(',');
    if (comma > 0 && entry.slice(0, comma) === 'v1' && sameSignature(entry.slice(comma + 1), expected)) match = true;
  }
  if (!match) return { ok: false, status: 401, reason: 'no webhook-signature matches (v1,<standard base64 with padding> of the HMAC expected)' };
  return { ok: true, id, replayKey: `${id}.${timestamp}.${expected}` };
}
