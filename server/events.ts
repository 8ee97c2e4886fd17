// Events (an extension: the spec shows none): what the dialer and the API emit for campaigns that name a
// webhook endpoint, and the sender that POSTs them, signed, with retries, off the dialing path.
import { createHmac, randomUUID } from 'node:crypto';
import type { Store } from './store/store.ts';
import type { CampaignRow } from './store/campaigns.ts';
import type { Delivery, DeliveryAttempt } from './store/webhooks.ts';

export type EventType = 'call.finished' | 'number.status_changed' | 'campaign.state_changed';

export interface SenderOptions {
  /** First retry delay; each next one doubles, up to an hour. */
  retryBaseMs: number;
  maxAttempts: number;
  timeoutMs: number;
  concurrency: number;
}

export const DEFAULT_SENDER: SenderOptions = { retryBaseMs: 1000, maxAttempts: 8, timeoutMs: 5000, concurrency: 8 };

export class Events {
  private readonly store: Store;
  private readonly signingKey: string;
  private readonly options: SenderOptions;
  private readonly sending = new Set<number>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  private readonly simNow: () => number;

  constructor(store: Store, signingKey: string, simNow: () => number, options: Partial<SenderOptions> = {}) {
    this.store = store;
    this.signingKey = signingKey;
    this.simNow = simNow;
    this.options = { ...DEFAULT_SENDER, ...options };
  }

  /** The endpoint's signing secret (Standard Webhooks form): derived, never stored. */
  secretFor(endpointId: string): string {
    return `whsec_${this.keyFor(endpointId).toString('base64')}`;
  }

  private keyFor(endpointId: string): Buffer {
    return createHmac('sha256', this.signingKey).update(`webhook-endpoint:${endpointId}`).digest();
  }

  /** Queues an event for the campaign's webhook endpoint, if it names a live one: one insert, no I/O. */
  emit(campaign: CampaignRow, type: EventType, data: Record<string, unknown>): void {
    if (!campaign.webhook_endpoint_id) return;
    const endpoint = this.store.webhooks.byId(campaign.account_pk, campaign.webhook_endpoint_id);
    if (!endpoint) return;
    const id = `evt_${randomUUID()}`;
    const account = this.store.accounts.byPk(campaign.account_pk)!;
    const body = JSON.stringify({
      id, type, time: new Date(this.simNow()).toISOString(), accountId: account.id, campaignId: campaign.id, data,
    });
    this.store.webhooks.enqueue(endpoint.pk, id, body, Date.now());
  }

  start(intervalMs = 100): void {
    this.timer = setInterval(() => this.sendDue(), intervalMs);
    this.timer.unref();
  }

  /**
   * Stops sending and waits for the deliveries in flight, which are cut short: after it the store is never touched
   * (a server closes its store next), and what was in flight stays in the outbox for the next start.
   */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.stopping.abort();
    await Promise.allSettled(this.inFlight);
  }

  private sendDue(): void {
    const room = this.options.concurrency - this.sending.size;
    if (room <= 0) return;
    for (const d of this.store.webhooks.due(Date.now(), room, this.sending)) {
      this.sending.add(d.id);
      const sent = this.send(d).finally(() => {
        this.sending.delete(d.id);
        this.inFlight.delete(sent);
      });
      this.inFlight.add(sent);
    }
  }

  private async send(d: Delivery): Promise<void> {
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = createHmac('sha256', this.keyFor(d.endpoint_id)).update(`${d.event_id}.${timestamp}.${d.body}`).digest('base64');
    let error: string;
    try {
      const res = await fetch(d.url, {
        method: 'POST', body: d.body, redirect: 'manual',
        signal: AbortSignal.any([AbortSignal.timeout(this.options.timeoutMs), this.stopping.signal]),
        headers: {
          'content-type': 'application/json', 'user-agent': 'campaign-dialing-reference/1',
          'webhook-id': d.event_id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}`,
        },
      });
      await res.body?.cancel();
      if (this.stopping.signal.aborted) return;
      if (res.status >= 200 && res.status < 300) {
        this.store.webhooks.delivered(d.id);
        this.logAttempt(d, d.attempts + 1, 'delivered', null);
        return;
      }
      error = `HTTP ${res.status}`;
    } catch (err) {
      error = (err as Error).message;
    }
    if (this.stopping.signal.aborted) return;
    const attempts = d.attempts + 1;
    const retryAt = attempts >= this.options.maxAttempts ? null
      : Date.now() + Math.min(3_600_000, this.options.retryBaseMs * 2 ** (attempts - 1));
    this.store.webhooks.failedAttempt(d.id, attempts, error, retryAt, Date.now());
    this.logAttempt(d, attempts, retryAt === null ? 'failed' : 'retrying', error);
  }

  private logAttempt(d: Delivery, attempt: number, outcome: DeliveryAttempt['outcome'], detail: string | null): void {
    const type = (JSON.parse(d.body) as { type: string }).type;
    this.store.webhooks.logAttempt(d.endpoint_pk, { eventId: d.event_id, type, attempt, at: new Date().toISOString(), outcome, detail });
  }
}
