// Outbound Messages as Salesforce sends them: a SOAP 1.1 notifications POST, retried with growing intervals until the listener answers <Ack>true</Ack> or 24 hours pass.

export interface OutboundRecord {
  /** 18-character record id. */
  id: string;
  /** Further fields of the message, already as text (Id is always sent). */
  fields: Array<[string, string | null]>;
}

export interface OutboundMessageInput {
  url: string;
  objectType: string;
  records: OutboundRecord[];
  /** Sent as SessionId; Salesforce sends it only when the message is set up to, nil otherwise. */
  sessionId?: string | null;
  /** Default the sender's. */
  orgId?: string;
}

export type DeliveryState = 'pending' | 'acknowledged' | 'expired';

export interface OutboundDelivery {
  /** The ActionId (04k…) of the message. */
  actionId: string;
  url: string;
  /** The Notification ids (04l…) in the order sent. */
  notificationIds: string[];
  recordIds: string[];
  /** The XML body every attempt posts. */
  body: string;
  state: DeliveryState;
  attempts: number;
  /** The HTTP status of each attempt, or the connection error's message. */
  answers: Array<number | string>;
  /** Resolves when the delivery is acknowledged or expires. */
  settled: Promise<DeliveryState>;
}

export interface OutboundSenderOptions {
  orgId: string;
  instanceUrl: string;
  apiVersion: string;
  /** Wait before retry number n (1 = the first retry). Default: 15 s doubling up to 60 minutes, as Salesforce documents. */
  retryDelayMs?: (retry: number) => number;
  /** How long a message is retried; Salesforce gives up after 24 hours. */
  maxAgeMs?: number;
  now: () => number;
  /** Makes ids (04k, 04l) for actions and notifications. */
  newId: (keyPrefix: string) => string;
}

export interface OutboundSender {
  send(input: OutboundMessageInput): OutboundDelivery;
  deliveries(): OutboundDelivery[];
  /** Stops all retries; pending deliveries stay pending. */
  close(): void;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const ACK = /<(?:[\w-]+:)?notificationsResponse\b[^>]*>[\s\S]*?<(?:[\w-]+:)?Ack>\s*true\s*<\/(?:[\w-]+:)?Ack>/;

export function defaultRetryDelayMs(retry: number): number {
  return Math.min(15_000 * 2 ** (retry - 1), 60 * 60 * 1000);
}

function xml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

/** The notifications envelope of the http://soap.sforce.com/2005/09/outbound namespace. */
export function notificationsXml(o: {
  orgId: string; actionId: string; sessionId: string | null; instanceUrl: string; apiVersion: string;
  objectType: string; notifications: Array<{ id: string; record: OutboundRecord }>;
}): string {
  const org15 = o.orgId.slice(0, 15);
  const notes = o.notifications.map(({ id, record }) => {
    const fields = [['Id', record.id] as [string, string | null], ...record.fields.filter(([name]) => name !== 'Id')]
      .map(([name, value]) => (value === null ? `<sf:${name} xsi:nil="true"/>` : `<sf:${name}>${xml(value)}</sf:${name}>`))
      .join('');
    return `<Notification><Id>${id}</Id><sObject xsi:type="sf:${o.objectType}" xmlns:sf="urn:sobject.enterprise.soap.sforce.com">${fields}</sObject></Notification>`;
  });
  return '<?xml version="1.0" encoding="UTF-8"?>' +
    '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">' +
    '<soapenv:Body><notifications xmlns="http://soap.sforce.com/2005/09/outbound">' +
    `<OrganizationId>${org15}</OrganizationId><ActionId>${o.actionId}</ActionId>` +
    (o.sessionId ? `<SessionId>${xml(o.sessionId)}</SessionId>` : '<SessionId xsi:nil="true"/>') +
    `<EnterpriseUrl>${xml(`${o.instanceUrl}/services/Soap/c/${o.apiVersion}/${org15}`)}</EnterpriseUrl>` +
    `<PartnerUrl>${xml(`${o.instanceUrl}/services/Soap/u/${o.apiVersion}/${org15}`)}</PartnerUrl>` +
    notes.join('') +
    '</notifications></soapenv:Body></soapenv:Envelope>';
}

/** True when a listener's answer acknowledges the notifications (a notificationsResponse whose Ack is true). */
export function isAck(status: number, body: string): boolean {
  return status >= 200 && status < 300 && ACK.test(body);
}

export function createOutboundSender(opts: OutboundSenderOptions): OutboundSender {
  const retryDelayMs = opts.retryDelayMs ?? defaultRetryDelayMs;
  const maxAgeMs = opts.maxAgeMs ?? DAY_MS;
  const all: OutboundDelivery[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  async function attempt(d: OutboundDelivery, firstMs: number, settle: (s: DeliveryState) => void): Promise<void> {
    d.attempts++;
    let acked = false;
    try {
      const res = await fetch(d.url, {
        method: 'POST',
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '""' },
        body: d.body,
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      d.answers.push(res.status);
      acked = isAck(res.status, text);
    } catch (err) {
      d.answers.push((err as Error).message);
    }
    if (acked) {
      d.state = 'acknowledged';
      settle(d.state);
      return;
    }
    if (opts.now() - firstMs >= maxAgeMs) {
      d.state = 'expired';
      settle(d.state);
      return;
    }
    if (closed) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      void attempt(d, firstMs, settle);
    }, retryDelayMs(d.attempts));
    timers.add(timer);
  }

  return {
    send(input) {
      const actionId = opts.newId('04k');
      const notifications = input.records.map((record) => ({ id: opts.newId('04l'), record }));
      let settle!: (s: DeliveryState) => void;
      const settled = new Promise<DeliveryState>((resolve) => { settle = resolve; });
      const d: OutboundDelivery = {
        actionId,
        url: input.url,
        notificationIds: notifications.map((n) => n.id),
        recordIds: input.records.map((r) => r.id),
        body: notificationsXml({
          orgId: input.orgId ?? opts.orgId, actionId, sessionId: input.sessionId ?? null, instanceUrl: opts.instanceUrl,
          apiVersion: opts.apiVersion, objectType: input.objectType, notifications,
        }),
        state: 'pending',
        attempts: 0,
        answers: [],
        settled,
      };
      all.push(d);
      void attempt(d, opts.now(), settle);
      return d;
    },
    deliveries: () => [...all],
    close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}
