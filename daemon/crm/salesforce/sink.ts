// Salesforce sink: each call attempt becomes a completed call Task on its Lead or Contact, written with sObject
// Collections (200 a request, allOrNone false, each record's error its own result). With an external-ID field on Task
// the write is an upsert on the attempt key, so sending it again updates instead of duplicating; without one it is an
// insert, and what an answer left in doubt is found again by CallObject, one query for many keys.
import { z } from 'zod/v4';
import type { Outcome } from '../../outcomes.ts';
import { activityTitle, ActivityIndex, describeRecord, describesCall, type Activity, type ContactStatus, type Found, type Sink, type StatusRefusal, type WriteResult } from '../../sinks/sink.ts';
import { soqlString, type SalesforceApi } from './client.ts';

/** CallDisposition per outcome (a free-text field: admins may give their own labels in mirror.dispositions). */
export const SALESFORCE_DISPOSITIONS: Record<Outcome, string | null> = {
  connected: 'Connected', left_voicemail: 'Left voicemail', busy: 'Busy', no_answer: 'No answer', wrong_number: 'Wrong number', failed: 'Failed',
};

/** Keys per look-up query (keys are short; the URL stays far below Salesforce's limit). */
const KEYS_PER_QUERY = 200;

const saveResults = z.array(z.object({
  id: z.string().nullish(),
  success: z.boolean(),
  errors: z.array(z.object({ statusCode: z.string().optional(), message: z.string().optional(), fields: z.array(z.string()).optional() }).loose()).default([]),
}).loose());

/** A record's first error, as Salesforce gave it. */
function reasonOf(errors: z.infer<typeof saveResults>[number]['errors']): string {
  const e = errors[0];
  return e ? `${e.statusCode ?? 'ERROR'}: ${e.message ?? 'refused'}${e.fields?.length ? ` (${e.fields.join(', ')})` : ''}` : 'refused without a reason';
}

export class SalesforceSink implements Sink {
  readonly kind = 'salesforce';
  readonly maxBatch = 200;
  /** A query sees a record as soon as its write is answered. */
  readonly indexLagMs = 0;
  readonly needsContact = true;
  private readonly api: SalesforceApi;
  private readonly dispositions: Record<Outcome, string | null>;
  private readonly statusField: string | null;
  /** The Task field holding the attempt key that writes and look-ups go by. */
  private readonly keyField: string;

  constructor(api: SalesforceApi, dispositions: Partial<Record<Outcome, string | null>> = {}, statusField: string | null = null) {
    this.api = api;
    this.dispositions = { ...SALESFORCE_DISPOSITIONS, ...dispositions };
    this.statusField = statusField;
    this.keyField = api.config.taskExternalIdField ?? 'CallObject';
  }

  private task(a: Activity): Record<string, unknown> {
    const disposition = this.dispositions[a.outcome];
    const ext = this.api.config.taskExternalIdField;
    return {
      attributes: { type: 'Task' },
      ...(ext ? { [ext]: a.key } : {}),
      WhoId: a.contactId,
      Subject: activityTitle(a).slice(0, 255),
      TaskSubtype: 'Call',
      CallType: 'Outbound',
      Status: 'Completed',
      CallDurationInSeconds: Math.round(a.durationMs / 1000),
      ...(disposition ? { CallDisposition: disposition } : {}),
      // The account's own calendar day of the call (the report's local time).
      ActivityDate: a.record.startedAtLocal.slice(0, 10),
      CallObject: a.key,
      Description: describeRecord(a),
    };
  }

  async write(activities: Activity[], signal?: AbortSignal): Promise<WriteResult[]> {
    const ext = this.api.config.taskExternalIdField;
    const json = { allOrNone: false, records: activities.map((a) => this.task(a)) };
    const body = saveResults.parse(ext
      ? await this.api.request('PATCH', `/composite/sobjects/Task/${ext}`, { json, creates: true }, signal)
      : await this.api.request('POST', '/composite/sobjects', { json, creates: true }, signal));
    // Collections answer one result per record, in the order sent.
    return body.slice(0, activities.length).map((r, i): WriteResult => {
      const key = activities[i]!.key;
      if (r.success && r.id) return { key, ok: true, id: r.id };
      return { key, ok: false, reason: reasonOf(r.errors) };
    });
  }

  /** The Tasks holding these keys, one query per 200 keys (never one per activity). */
  async findWritten(activities: Activity[], _cursor: string | null, signal?: AbortSignal): Promise<Found> {
    const ids = new Map<string, string>();
    const index = new ActivityIndex(activities);
    const keys = index.keys();
    for (let i = 0; i < keys.length; i += KEYS_PER_QUERY) {
      const list = keys.slice(i, i + KEYS_PER_QUERY).map(soqlString).join(', ');
      for await (const rows of this.api.query(`SELECT Id, ${this.keyField}, Description FROM Task WHERE ${this.keyField} IN (${list})`, { signal })) {
        for (const r of rows) {
          // (A Task found by an attempt's key is this call only if its description names this call's start.)
          const a = typeof r[this.keyField] === 'string' ? index.find(r[this.keyField] as string, (x) => describesCall(r.Description, x)) : undefined;
          if (a) ids.set(a.key, String(r.Id));
        }
      }
    }
    return { ids, cursor: null };
  }

  /** The Leads' and Contacts' status field, 200 records a request (sObject Collections update, allOrNone false). */
  async writeStatuses(statuses: ContactStatus[], signal?: AbortSignal): Promise<StatusRefusal[]> {
    const field = this.statusField;
    if (!field) return [];
    const refused: StatusRefusal[] = [];
    for (let i = 0; i < statuses.length; i += this.maxBatch) {
      const chunk = statuses.slice(i, i + this.maxBatch);
      const records = chunk.map((s) => ({ attributes: { type: s.contactId.startsWith('00Q') ? 'Lead' : 'Contact' }, id: s.contactId, [field]: s.status }));
      const body = saveResults.parse(await this.api.request('PATCH', '/composite/sobjects', { json: { allOrNone: false, records } }, signal));
      chunk.forEach((s, j) => {
        const r = body[j];
        if (!r?.success) refused.push({ contactId: s.contactId, reason: r ? reasonOf(r.errors) : 'no result for this record' });
      });
    }
    return refused;
  }
}
