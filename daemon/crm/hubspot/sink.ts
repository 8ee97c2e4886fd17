// HubSpot sink: each call attempt becomes a call engagement (batch create, its 207 multi-status handled record by
// record), associated with the contact, found again by the key in its title.
import { z } from 'zod/v4';
import { SEARCH_CAP, type HubSpotApi } from './client.ts';
import { SourceError } from '../../errors.ts';
import type { Outcome } from '../../outcomes.ts';
import { activityTitle, ActivityIndex, BatchRefusal, describeRecord, isRefusal, keyIn, type Activity, type ContactStatus, type Found, type Sink, type StatusRefusal, type WriteResult } from '../../sinks/sink.ts';

/** Contacts per batch update (HubSpot's cap). */
const STATUS_BATCH = 100;

/** HubSpot's default call dispositions (internal GUIDs of its standard outcomes). */
export const HUBSPOT_DISPOSITIONS: Record<Outcome, string | null> = {
  connected: 'f240bbac-87c9-4f6e-bf70-924b57d47db7',
  left_voicemail: 'b2cf5968-551e-4856-9783-52b3da59a7d0',
  busy: '9d9162e7-6cf3-4944-bf63-4dff82258764',
  no_answer: '73a0d17f-1163-4015-bdd5-ec830791da20',
  wrong_number: '17b47fee-58de-441e-a44c-c6300d46f273',
  failed: null,
};

const STATUS: Record<Outcome, string> = {
  connected: 'COMPLETED', left_voicemail: 'COMPLETED', busy: 'BUSY', no_answer: 'NO_ANSWER', wrong_number: 'FAILED', failed: 'FAILED',
};

/** Call → contact (HubSpot-defined association type 194). */
const CALL_TO_CONTACT = 194;

const batchAnswer = z.object({
  results: z.array(z.object({ id: z.string(), properties: z.record(z.string(), z.unknown()).default({}) })).default([]),
  errors: z.array(z.object({
    message: z.string().default('rejected'),
    category: z.string().optional(),
    context: z.record(z.string(), z.array(z.string())).optional(),
  }).loose()).default([]),
});
/** HubSpot's error answer (its Error schema): the inputs it is about, when it says, in context.objectWriteTraceId. */
const refusalAnswer = z.object({
  message: z.string().default('refused'),
  category: z.string().optional(),
  context: z.object({ objectWriteTraceId: z.array(z.string()).optional() }).loose().optional(),
}).loose();
const spanAnswer = z.object({
  total: z.number().optional(),
  results: z.array(z.object({ id: z.string(), properties: z.record(z.string(), z.unknown()).default({}) })),
  paging: z.object({ next: z.object({ after: z.string() }).optional() }).optional(),
});

/** Activities further apart than this are looked up in separate time spans. */
const SPAN_GAP_MS = 3_600_000;


export class HubSpotSink implements Sink {
  readonly kind = 'hubspot';
  readonly maxBatch = 100;
  /** HubSpot's search shows a record a few seconds after it is created. */
  readonly indexLagMs = 5_000;
  readonly needsContact = true;
  private readonly api: HubSpotApi;
  private readonly dispositions: Record<Outcome, string | null>;
  private readonly statusProperty: string | null;

  constructor(api: HubSpotApi, dispositions: Partial<Record<Outcome, string | null>> = {}, statusProperty: string | null = null) {
    this.api = api;
    this.dispositions = { ...HUBSPOT_DISPOSITIONS, ...dispositions };
    this.statusProperty = statusProperty;
  }

  private input(a: Activity) {
    const disposition = this.dispositions[a.outcome];
    return {
      objectWriteTraceId: a.key,
      properties: {
        hs_timestamp: new Date(a.startedAt).toISOString(),
        hs_call_title: activityTitle(a),
        hs_call_body: describeRecord(a),
        hs_call_direction: 'OUTBOUND',
        hs_call_status: STATUS[a.outcome],
        hs_call_duration: String(a.durationMs),
        hs_call_to_number: a.record.number,
        ...(disposition ? { hs_call_disposition: disposition } : {}),
      },
      associations: a.contactId ? [{ to: { id: a.contactId }, types: [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: CALL_TO_CONTACT }] }] : [],
    };
  }

  /**
   * One batch create. HubSpot answers a refused input either as an entry of a 207's errors (the rest created) or, as
   * its date-versioned reference documents only 201 and an error, with an error for the whole batch (nothing
   * created): a BatchRefusal naming the inputs whose objectWriteTraceId its context gives, none when it gives none.
   */
  async write(activities: Activity[], signal?: AbortSignal): Promise<WriteResult[]> {
    let refusal: z.infer<typeof refusalAnswer> | null = null;
    const answer = await this.api.request('POST', `${this.api.objects('calls')}/batch/create`, {
      creates: true,
      json: { inputs: activities.map((a) => this.input(a)) },
      onAnswer: (res) => {
        if (res.statusCode < 400 || res.statusCode >= 500) return;
        try { refusal = refusalAnswer.parse(JSON.parse(res.body)); } catch { refusal = null; }
      },
    }, signal).catch((err: unknown) => {
      if (!isRefusal(err)) throw err;
      const r = refusal as z.infer<typeof refusalAnswer> | null;
      // Worded as a 207's errors are, so a parked call reads the same whichever way HubSpot refused it.
      const reason = r ? `${r.category ?? 'ERROR'}: ${r.message}` : err.message;
      throw new BatchRefusal(new SourceError(reason, err.status), new Map((r?.context?.objectWriteTraceId ?? []).map((key) => [key, reason])));
    });
    const body = batchAnswer.parse(answer);
    const results: WriteResult[] = [];
    const byTitle = new Map(activities.map((a) => [activityTitle(a), a.key]));
    const done = new Set<string>();
    for (const r of body.results) {
      // Results are matched by the key in their title: HubSpot does not promise input order.
      const key = byTitle.get(String(r.properties.hs_call_title ?? ''));
      if (key && !done.has(key)) { results.push({ key, ok: true, id: r.id }); done.add(key); }
    }
    for (const e of body.errors) {
      for (const key of e.context?.objectWriteTraceId ?? []) {
        if (!done.has(key)) { results.push({ key, ok: false, reason: `${e.category ?? 'error'}: ${e.message}` }); done.add(key); }
      }
    }
    // Anything the answer did not mention stays unknown: the caller looks it up before writing it again.
    return results;
  }

  /**
   * The calls HubSpot holds in the activities' time span, 200 a search, matched by the key in their titles: a look-up
   * costs a search per 200 calls of the span, not one per activity. Activities more than an hour apart are looked up
   * in separate spans, so a stray old one does not make the search read every call in between.
   */
  async findWritten(activities: Activity[], _cursor: string | null, signal?: AbortSignal): Promise<Found> {
    const index = new ActivityIndex(activities);
    const ids = new Map<string, string>();
    const times = activities.map((a) => a.startedAt).sort((x, y) => x - y);
    let lo = times[0]!;
    for (let i = 1; i <= times.length; i++) {
      if (i === times.length || times[i]! - times[i - 1]! > SPAN_GAP_MS) {
        await this.searchSpan(lo, times[i - 1]!, index, ids, signal);
        if (i < times.length) lo = times[i]!;
      }
    }
    return { ids, cursor: null };
  }

  private async searchSpan(lo: number, hi: number, index: ActivityIndex, ids: Map<string, string>, signal?: AbortSignal): Promise<void> {
    let after: string | undefined;
    for (;;) {
      const body = spanAnswer.parse(await this.api.search('calls', {
        filterGroups: [{ filters: [{ propertyName: 'hs_timestamp', operator: 'BETWEEN', value: String(lo), highValue: String(hi) }] }],
        sorts: [{ propertyName: 'hs_timestamp', direction: 'ASCENDING' }],
        properties: ['hs_call_title', 'hs_timestamp'], limit: 200, ...(after ? { after } : {}),
      }, signal));
      if (after === undefined && (body.total ?? 0) > SEARCH_CAP && hi > lo) {
        // Past the search's 10,000-result cap: each half on its own.
        const mid = Math.floor((lo + hi) / 2);
        await this.searchSpan(lo, mid, index, ids, signal);
        await this.searchSpan(mid + 1, hi, index, ids, signal);
        return;
      }
      for (const r of body.results) {
        // (A call found by an attempt's key is this call only if it started when this one did.)
        const at = String(r.properties.hs_timestamp ?? '');
        const a = index.find(keyIn(r.properties.hs_call_title), (x) => (/^\d+$/.test(at) ? Number(at) : Date.parse(at)) === x.startedAt);
        if (a) ids.set(a.key, r.id);
      }
      after = body.paging?.next?.after;
      if (!after) return;
    }
  }

  /** The contacts' status property, 100 a request (batch update); contacts HubSpot could not find come back refused. */
  async writeStatuses(statuses: ContactStatus[], signal?: AbortSignal): Promise<StatusRefusal[]> {
    const property = this.statusProperty;
    if (!property) return [];
    const refused: StatusRefusal[] = [];
    for (let i = 0; i < statuses.length; i += STATUS_BATCH) {
      const inputs = statuses.slice(i, i + STATUS_BATCH).map((s) => ({ id: s.contactId, properties: { [property]: s.status } }));
      const body = batchAnswer.parse(await this.api.request('POST', `${this.api.objects('contacts')}/batch/update`, { json: { inputs } }, signal));
      // A 207's errors name what it could not update (context.ids); the rest is written.
      for (const e of body.errors) for (const id of e.context?.ids ?? []) refused.push({ contactId: id, reason: `${e.category ?? 'ERROR'}: ${e.message}` });
    }
    return refused;
  }
}
