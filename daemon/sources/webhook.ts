// Generic webhook source: contacts POSTed as JSON ({contacts: [...]} or one contact), signed as Standard Webhooks.
import { z } from 'zod/v4';
import type { SourceConfig, SyncConfig } from '../config.ts';
import type { SourceContact } from '../sync/contacts.ts';
import { FIVE_MINUTES, header, hmacSha256, sameBytes, type PullPage, type Source, type WebhookRequest, type WebhookVerdict } from './source.ts';

type WebhookConfig = Extract<SourceConfig, { type: 'webhook' }>;

const contact = z.record(z.string(), z.unknown());
const list = z.object({ contacts: z.array(contact).min(1).max(10_000) }).strict();

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

export class WebhookSource implements Source {
  readonly kind = 'webhook';
  readonly pulls = false;
  private readonly config: WebhookConfig;
  private readonly idField: string;

  constructor(sync: SyncConfig) {
    this.config = sync.source as WebhookConfig;
    this.idField = sync.mapping.id;
  }

  // Webhook contacts arrive through the inbox; there is nothing to read.
  async *pull(): AsyncGenerator<PullPage> {}

  verifyWebhook(req: WebhookRequest): WebhookVerdict {
    const signed = verifyStandardWebhook(this.config.secret, req);
    if (!signed.ok) return signed;
    let json: unknown;
    try {
      json = JSON.parse(req.rawBody.toString('utf8'));
    } catch {
      return { ok: false, status: 400, reason: 'body is not JSON' };
    }
    // The shape is chosen by the `contacts` key, so a bad list is reported as a bad list, not taken for one contact.
    const isList = !!json && typeof json === 'object' && !Array.isArray(json) && 'contacts' in json;
    const parsed = isList ? list.safeParse(json) : contact.safeParse(json);
    if (!parsed.success) return { ok: false, status: 400, reason: 'body must be {"contacts": [contact, ...]} (1 to 10,000 objects, no other key) or one contact object' };
    const items = (isList ? (parsed.data as { contacts: Record<string, unknown>[] }).contacts : [parsed.data]) as Record<string, unknown>[];
    const contacts: SourceContact[] = [];
    const deleted: string[] = [];
    for (const [i, c] of items.entries()) {
      const cid = c[this.idField];
      if ((typeof cid !== 'string' && typeof cid !== 'number') || String(cid) === '' || /[\n,]/.test(String(cid))) {
        return { ok: false, status: 400, reason: `contacts[${i}]: "${this.idField}" (the mapping's id field) must be a non-empty string or number without commas or newlines` };
      }
      if (c.deleted === true) deleted.push(String(cid));
      else contacts.push({ id: String(cid), fields: c });
    }
    return { ok: true, eventIds: [signed.id], replayKey: signed.replayKey, contacts, deleted, pull: false };
  }
}
