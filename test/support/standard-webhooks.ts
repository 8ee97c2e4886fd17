// Standard Webhooks headers for a request body, signed here with node:crypto (not with the daemon's own helper, so a
// shared mistake cannot hide): webhook-id (a fresh one unless given), webhook-timestamp (now unless given) and
// webhook-signature v1 keyed with the whsec_ secret's bytes.
import { createHmac, randomBytes } from 'node:crypto';

let seq = 0;

export function signedHeaders(body: string, secret: string, o: { id?: string; timestamp?: number } = {}): Record<string, string> {
  const id = o.id ?? `msg_${++seq}_${randomBytes(4).toString('hex')}`;
  const ts = String(o.timestamp ?? Math.floor(Date.now() / 1000));
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const sig = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${sig}` };
}
