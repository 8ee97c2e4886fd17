// What every sink (one module per CRM, plus the generic ones) does with call activities: write a batch, say per
// activity what happened, and find an activity it may have written before a crash by the key written into it.
import { SourceError } from '../errors.ts';
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
  /** When its write began (ms), while it is pending. */
  pendingAt?: number;
}

/** What a look-up found: CRM ids by activity key, and where the next look-up may start (null: anywhere). */
export interface Found { ids: Map<string, string>; cursor: string | null }

export type WriteResult = { key: string; ok: true; id: string } | { key: string; ok: false; reason: string };

export interface Sink {
  readonly kind: string;
  /** Activities per write (HubSpot's batch create takes 100). */
  readonly maxBatch: number;
  /** How long after a write a look-up can be trusted to see it (a search index's lag); 0 when at once. */
  readonly indexLagMs: number;
  /** Whether an activity needs a contact to attach to (a CRM does; a webhook or file does not). */
  readonly needsContact: boolean;
  /** Writes; a failure of the whole request throws (retried), a refused activity is a result (parked). */
  write(activities: Activity[], signal?: AbortSignal): Promise<WriteResult[]>;
  /**
   * Which of these activities the sink already holds (written by an attempt whose answer or mark was lost), by key, in
   * as few requests as the sink allows: a look-up costs what is uncertain, never one request per activity. `cursor`
   * is what the last look-up returned (where a sink that can only list may start reading again), null at first.
   */
  findWritten(activities: Activity[], cursor: string | null, signal?: AbortSignal): Promise<Found>;
  /**
   * Writes numbers' final statuses to their contacts (optional), in as few requests as the CRM allows (Salesforce: 200
   * a request). A failure of a whole request throws; what the CRM refused one by one comes back as reasons.
   */
  writeStatuses?(statuses: ContactStatus[], signal?: AbortSignal): Promise<StatusRefusal[]>;
}

/** A number's final status, for its contact. */
export interface ContactStatus { contactId: string; status: string }
export interface StatusRefusal { contactId: string; reason: string }

/**
 * Statuses for a CRM without a batch update of contacts: a request each. A contact the CRM refuses is a refusal and
 * the rest go on; a CRM that fails (after its own retries) ends the batch, thrown.
 */
export async function statusesOneByOne(statuses: ContactStatus[], write: (s: ContactStatus) => Promise<unknown>): Promise<StatusRefusal[]> {
  const refused: StatusRefusal[] = [];
  for (const s of statuses) {
    try {
      await write(s);
    } catch (err) {
      if (!(err instanceof SourceError && err.final)) throw err;
      refused.push({ contactId: s.contactId, reason: err.message });
    }
  }
  return refused;
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
