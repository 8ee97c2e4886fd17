// Generic webhook source: contacts POSTed as JSON ({contacts: [...]} or one contact), signed as Standard Webhooks.
import { z } from 'zod/v4';
import type { SourceConfig, SyncConfig } from '../config.ts';
import type { SourceContact } from './source.ts';
import { verifyStandardWebhook } from '../signing.ts';
import type { PullPage, Source, WebhookRequest, WebhookVerdict } from './source.ts';

type WebhookConfig = Extract<SourceConfig, { type: 'webhook' }>;

const contact = z.record(z.string(), z.unknown());
const list = z.object({ contacts: z.array(contact).min(1).max(10_000) }).strict();

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
