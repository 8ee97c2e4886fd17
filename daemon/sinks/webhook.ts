// Generic webhook sink: each call attempt is POSTed as JSON, signed with the Standard Webhooks headers, its
// webhook-id the attempt's key, so a receiver that drops ids it has seen gets each attempt once.
import { randomUUID } from 'node:crypto';
import got from 'got';
import { standardWebhookSignature } from '../signing.ts';
import type { Activity, Sink, WriteResult } from './sink.ts';

export function activityJson(a: Activity) {
  return {
    type: 'call.attempt', key: a.key, campaignId: a.campaignId, contactId: a.contactId, outcome: a.outcome,
    startedAt: new Date(a.startedAt).toISOString(), answeredAt: a.answeredAt === null ? null : new Date(a.answeredAt).toISOString(),
    endedAt: new Date(a.endedAt).toISOString(), durationMs: a.durationMs, record: a.record,
  };
}

export class WebhookSink implements Sink {
  readonly kind = 'webhook';
  readonly maxBatch = 1;
  readonly needsContact = false;
  private readonly url: string;
  private readonly secret: string;

  constructor(url: string, secret: string) {
    this.url = url;
    this.secret = secret;
  }

  async write(activities: Activity[], signal?: AbortSignal): Promise<WriteResult[]> {
    const results: WriteResult[] = [];
    for (const a of activities) {
      const body = JSON.stringify({ ...activityJson(a), deliveryId: randomUUID() });
      const timestamp = String(Math.floor(Date.now() / 1000));
      const res = await got.post(this.url, {
        body, signal, throwHttpErrors: false, retry: { limit: 0 }, timeout: { request: 10_000 },
        headers: { 'content-type': 'application/json', 'webhook-id': a.key, 'webhook-timestamp': timestamp,
          'webhook-signature': `v1,${standardWebhookSignature(this.secret, a.key, timestamp, body)}` },
      });
      // Anything but 2xx is the receiver's trouble, not the record's: the whole write is tried again later.
      if (res.statusCode >= 300) throw new Error(`webhook sink ${new URL(this.url).host}: ${res.statusCode}`);
      results.push({ key: a.key, ok: true, id: a.key });
    }
    return results;
  }

  /** The receiver deduplicates by webhook-id: sending again is how an unknown outcome is settled. */
  async find(): Promise<string | null> {
    return null;
  }
}
