// What every sink (one module per CRM, plus the generic ones) does with call activities: write a batch, say per
// activity what happened, and find an activity it may have written before a crash by the key written into it.
import type { CallDetail, Outcome } from '../outcomes.ts';

/** One call attempt, ready to be written anywhere. */
export interface Activity {
  /** Stable per (campaign, number, attempt): written into the activity so it can be found again. */
  key: string;
  record: CallDetail;
  outcome: Outcome;
  /** The CRM record the number came from (null when no contact holds it any more). */
  contactId: string | null;
  startedAt: number;
  answeredAt: number | null;
  endedAt: number;
  /** Talk time: from the answer to the end (0 when unanswered). */
  durationMs: number;
  campaignId: string;
}

export type WriteResult = { key: string; ok: true; id: string } | { key: string; ok: false; reason: string };

export interface Sink {
  readonly kind: string;
  /** Activities per write (HubSpot's batch create takes 100). */
  readonly maxBatch: number;
  /** Whether an activity needs a contact to attach to (a CRM does; a webhook or file does not). */
  readonly needsContact: boolean;
  /** Writes; a failure of the whole request throws (retried), a refused activity is a result (parked). */
  write(activities: Activity[], signal?: AbortSignal): Promise<WriteResult[]>;
  /** The id of an activity written earlier with this key, or null. */
  find(activity: Activity, signal?: AbortSignal): Promise<string | null>;
  /** Writes the number's final status to the contact (optional). */
  writeStatus?(contactId: string, status: string, signal?: AbortSignal): Promise<void>;
}

/** The line every activity carries, by which it is found again (`[cds:<key>]`). */
export function keyTag(key: string): string {
  return `[cds:${key}]`;
}

/** An activity's one-line name (HubSpot title, Pipedrive subject): what it was, and the key to find it by. */
export function activityTitle(a: Activity): string {
  return `Outbound call to ${a.record.number} (attempt ${a.record.attempt}) ${keyTag(a.key)}`;
}

/** The raw call-detail fields as text, for an activity's body. */
export function describeRecord(a: Activity): string {
  const r = a.record;
  return [
    `Campaign ${a.campaignId}, attempt ${r.attempt} to ${r.number}`,
    `ringResult ${r.ringResult}, answerType ${r.answerType ?? '-'}, sipResponseCode ${r.sipResponseCode ?? '-'}, endType ${r.endType ?? '-'}, outcome ${r.outcome}`,
    `started ${r.startedAtLocal}, answered ${r.answeredAtLocal ?? '-'}, ended ${r.endedAtLocal} (account time), queue ${r.queueId ?? '-'}`,
    keyTag(a.key),
  ].join('\n');
}
