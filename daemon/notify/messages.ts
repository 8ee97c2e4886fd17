// The two forms of a notification: Slack's incoming-webhook JSON (a plain text an operator can act on) and a plain
// JSON body for any other receiver, signed as Standard Webhooks.
import { standardWebhookSignature } from '../signing.ts';
import type { AlertKind, AlertRecord } from '../state/notify-state.ts';

/** The event of each kind of alert, as the JSON form names it. */
export const EVENTS: Record<AlertKind, string> = { refused: 'sync.refused', held: 'campaign.held', runs: 'runs.failing' };

/** The plain JSON form (what a webhook receiver gets). */
export interface NotificationBody {
  event: string;
  status: 'firing' | 'resolved';
  sync: string;
  campaign?: string;
  reason: string;
  fix?: string;
  /** When the state began, and when this message was decided (ISO). */
  since: string;
  at: string;
  /** The docs' section that explains it. */
  docs: string;
}

/** A message as it is queued: its body, whether it repeats a firing one, and its id (the same for every retry). */
export interface Notification { id: string; body: NotificationBody; repeat: boolean }

/** The message an alert's record holds to send (`record.send` set). */
export function notificationOf(record: AlertRecord, id: string): Notification {
  const send = record.send!;
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    id, repeat: send.repeat,
    body: {
      event: EVENTS[record.kind], status: send.status, sync: record.sync, ...(record.campaign ? { campaign: record.campaign } : {}),
      reason: record.reason, ...(record.fix ? { fix: record.fix } : {}), since: iso(record.since ?? record.first), at: iso(send.at), docs: record.docs,
    },
  };
}

/** What happened, in one line: the kind, the sync and the campaign, firing or resolved. */
function headline(b: NotificationBody): string {
  const sync = `sync "${b.sync}"`;
  const firing = b.status === 'firing';
  switch (b.event) {
    case EVENTS.refused: return firing ? `Sync "${b.sync}" is refused: it adds no numbers until this is fixed` : `Sync "${b.sync}" is no longer refused: it adds numbers again`;
    case EVENTS.held: return firing ? `Campaign ${b.campaign} of ${sync} is held Paused by the daemon: it makes no calls` : `Campaign ${b.campaign} of ${sync} is no longer held: its calling window sets it again`;
    default: return firing ? `Sync "${b.sync}": its runs keep failing` : `Sync "${b.sync}": a run succeeded again`;
  }
}

/** A duration in the largest units that say it (`2 h 5 min`, `40 s`). */
function lasted(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
}

/** `2026-03-11 18:00 UTC` */
const when = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

/** Slack's mrkdwn control characters, escaped as Slack asks. */
const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Slack's incoming-webhook JSON: one plain text with what, which sync and campaign, why, the fix and the docs' link. */
export function slackMessage(n: Notification): { text: string } {
  const b = n.body;
  const firing = b.status === 'firing';
  const mark = firing ? (n.repeat ? ':red_circle: Still: ' : ':red_circle: ') : ':large_green_circle: Resolved: ';
  const span = lasted(Date.parse(b.at) - Date.parse(b.since));
  const lines = [
    `${mark}*${escape(headline(b))}*`,
    `*${firing ? 'Why' : 'It was'}:* ${escape(b.reason)}`,
    ...(firing && b.fix ? [`*Fix:* ${escape(b.fix)}`] : []),
    `${firing ? 'Since' : 'It lasted'} ${firing ? `${when(b.since)} (${span})` : `${span} (since ${when(b.since)})`} · <${b.docs}|What this means>`,
  ];
  return { text: lines.join('\n') };
}

/** The JSON body and its Standard Webhooks headers (signed now: each retry carries a fresh timestamp, the same id). */
export function signedWebhook(n: Notification, secret: string, nowMs = Date.now()): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify(n.body);
  const timestamp = String(Math.floor(nowMs / 1000));
  return {
    body,
    headers: {
      'content-type': 'application/json', 'webhook-id': n.id, 'webhook-timestamp': timestamp,
      'webhook-signature': `v1,${standardWebhookSignature(secret, n.id, timestamp, body)}`,
    },
  };
}
