// Generic webhook sink: each call attempt is POSTed as JSON, signed with the Standard Webhooks headers, its
// webhook-id the attempt's key, so a receiver that drops ids it has seen gets each attempt once. One activity a
// request: a receiver's 4xx for what a body holds is about that one activity.
import { randomUUID } from 'node:crypto';
import got from 'got';
import { standardWebhookSignature } from '../signing.ts';
import { SourceError } from '../errors.ts';
import { refusesRecord, type Activity, type Found, type Sink, type WriteResult } from './sink.ts';

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
  readonly indexLagMs = 0;
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
      // A receiver refusing what the activity holds (400, 409, 413, 422: see isRefusal) refuses that activity alone: it
      // is parked with the receiver's words, and the rest go on. Anything else but 2xx (a 401 for a wrong secret, a 404
      // for a wrong URL, a 429, a 5xx) is the receiver's trouble, not the record's: the write is tried again later.
      if (res.statusCode >= 300) {
        const said = res.body.replace(/\s+/g, ' ').trim().slice(0, 300);
        const message = `webhook sink ${new URL(this.url).host}: ${res.statusCode}${said ? ` ${said}` : ''}`;
        if (!refusesRecord(res.statusCode)) throw new SourceError(message, res.statusCode);
        results.push({ key: a.key, ok: false, reason: message });
        continue;
      }
      results.push({ key: a.key, ok: true, id: a.key });
    }
    return results;
  }

  /** The receiver deduplicates by webhook-id: sending again is how an unknown outcome is settled. */
  async findWritten(): Promise<Found> {
    return { ids: new Map(), cursor: null };
  }
}
