// What every sink (one module per CRM, plus the generic ones) does with call activities: write a batch, say per
// activity what happened, and find an activity it may have written before a crash by the key written into it.
import { isolateRefused } from '../isolate.ts';
import { SourceError } from '../errors.ts';
import type { CallDetail, Outcome } from '../outcomes.ts';

/** One call attempt, ready to be written anywhere. */
export interface Activity {
  /** Stable per call (see callKey): written into the activity so it can be found again. */
  key: string;
  /**
   * The attempt's key (campaign, number, attempt) that versions before per-call keys wrote, set when this call may
   * have been written under it and the mirror cannot tell (its state was lost): a look-up matches it only where the
   * CRM's record is this same call (see ActivityIndex).
   */
  legacyKey?: string;
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
  /**
   * Writes; a failure of the whole request throws (retried), a refused activity is a result (parked). A whole write
   * refused for what its records hold throws a refusal (see isRefusal; a BatchRefusal when the CRM named them), and
   * writeIsolating() finds the records it is about.
   */
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

/**
 * Statuses of a write the CRM refused for what it carries, not for who sends it or where (400 bad value, 409 conflict,
 * 413 too large, 422 unprocessable): a record's trouble, parked with its reason. A 401, 403 or 404 is the
 * configuration's (a token, a scope, a URL) and a 429 or 5xx passing trouble: those fail or delay the run instead, and
 * park nothing.
 */
const REFUSALS = new Set([400, 409, 413, 422]);

/** An answer with this status refuses what the request carried. */
export function refusesRecord(status: number): boolean {
  return REFUSALS.has(status);
}

/** The CRM refused this write for what it carries: nothing of it was written. */
export function isRefusal(err: unknown): err is SourceError {
  return err instanceof SourceError && err.final && !err.uncertain && err.status !== null && refusesRecord(err.status);
}

/**
 * A whole write refused for what some of its records hold, the CRM having written none of them, with the records it
 * named (key → its reason; empty when it named none).
 */
export class BatchRefusal extends SourceError {
  readonly refused: Map<string, string>;
  constructor(err: SourceError, refused: Map<string, string>) {
    super(err.message, err.status, err.final, err.uncertain);
    this.refused = refused;
  }
}

/**
 * Writes activities so that a record the CRM refuses costs only itself: each answer is handed to `settle` as it
 * comes (what was written is recorded even if a later request fails), a record refused is settled alone with the
 * CRM's reason, and the rest of its batch is written. A whole batch refused naming its records: those are settled
 * refused and the rest sent again at once (one more request). Naming none: the batch is halved until each refused
 * record is alone, so k bad records among n cost about 2·k·log2(n) more requests, never a request per record. Any
 * other failure (a 429 or 5xx after the client's own retries, a lost answer, bad credentials) is thrown as it is.
 */
export async function writeIsolating(sink: Sink, activities: Activity[], settle: (results: WriteResult[]) => Promise<void>, signal?: AbortSignal): Promise<void> {
  const todo: Activity[][] = activities.length ? [activities] : [];
  while (todo.length) {
    const batch = todo.shift()!;
    let results: WriteResult[];
    try {
      results = await sink.write(batch, signal);
    } catch (err) {
      if (!isRefusal(err)) throw err;
      const reasons = err instanceof BatchRefusal ? err.refused : new Map<string, string>();
      const split = isolateRefused(batch, (a) => reasons.get(a.key), err.message);
      if (split.refused.length) await settle(split.refused.map(([a, reason]) => ({ key: a.key, ok: false, reason })));
      todo.unshift(...split.retry);
      continue;
    }
    await settle(results);
  }
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

/**
 * Finds the activities a look-up asked about by the key a CRM record carries: by each one's own key, and by its
 * `legacyKey` only where the CRM record is the same call (`sameCall`, from the start the record holds). An attempt's
 * key also names the number's earlier calls: a number taken out of the campaign and added again starts its attempts
 * at 1 again, and a match on the key alone would take a call never written for one written long before.
 */
export class ActivityIndex {
  private readonly byKey = new Map<string, Activity>();
  private readonly byLegacyKey = new Map<string, Activity[]>();

  constructor(activities: Activity[]) {
    for (const a of activities) {
      this.byKey.set(a.key, a);
      if (a.legacyKey && a.legacyKey !== a.key) this.byLegacyKey.set(a.legacyKey, [...(this.byLegacyKey.get(a.legacyKey) ?? []), a]);
    }
  }

  /** Every key to ask for (a sink that queries by key). */
  keys(): string[] { return [...this.byKey.keys(), ...this.byLegacyKey.keys()]; }

  /** The activity a CRM record carrying `key` is, if any. */
  find(key: string | undefined, sameCall: (a: Activity) => boolean): Activity | undefined {
    if (key === undefined) return undefined;
    return this.byKey.get(key) ?? this.byLegacyKey.get(key)?.find(sameCall);
  }
}

/** The key in a text an activity carries (its title, subject or body): see keyTag. */
export function keyIn(text: unknown): string | undefined {
  return /\[cds:([A-Za-z0-9_-]+)\]/.exec(String(text ?? ''))?.[1];
}

/** Whether an activity body (describeRecord's text) is of this call: it names the call's start. */
export function describesCall(body: unknown, a: Activity): boolean {
  return String(body ?? '').includes(`started ${a.record.startedAtLocal},`);
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
