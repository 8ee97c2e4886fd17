// Pipedrive sink: each call attempt becomes a call log on the person (`/v1/callLogs`: no v2 replacement exists),
// found again by the key in its subject.
import { z } from 'zod/v4';
import { COST, type PipedriveApi } from './client.ts';
import type { Outcome } from '../../outcomes.ts';
import { activityTitle, ActivityIndex, describeRecord, keyIn, statusesOneByOne, type Activity, type ContactStatus, type Found, type Sink, type StatusRefusal, type WriteResult } from '../../sinks/sink.ts';

/** Pipedrive's call-log outcomes (it has no "failed": an attempt that never rang counts as not answered). */
const OUTCOME: Record<Outcome, string> = {
  connected: 'connected', left_voicemail: 'left_voicemail', busy: 'busy', no_answer: 'no_answer', wrong_number: 'wrong_number', failed: 'no_answer',
};

const created = z.object({ data: z.object({ id: z.union([z.string(), z.number()]) }).loose() });
const page = z.object({
  data: z.array(z.object({ id: z.union([z.string(), z.number()]), subject: z.string().nullable().optional(), start_time: z.string().nullable().optional() }).loose()).nullable(),
  additional_data: z.object({ pagination: z.object({ more_items_in_collection: z.boolean().optional(), next_start: z.number().optional() }).loose().optional() }).loose().nullable().optional(),
});

/** Call logs deleted by users shift the list's offsets down: a look-up starts this many before where the last ended. */
const DELETED_MARGIN = 500;

/** `YYYY-MM-DD HH:MM:SS` in UTC, as call logs take times. */
function utc(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

export class PipedriveSink implements Sink {
  readonly kind = 'pipedrive';
  readonly maxBatch = 1;
  readonly indexLagMs = 0;
  readonly needsContact = true;
  private readonly api: PipedriveApi;
  private readonly statusField: string | null;

  constructor(api: PipedriveApi, statusField: string | null = null) {
    this.api = api;
    this.statusField = statusField;
  }

  async write(activities: Activity[], signal?: AbortSignal): Promise<WriteResult[]> {
    const results: WriteResult[] = [];
    for (const a of activities) {
      const body = created.parse(await this.api.request(COST.addCallLog, 'POST', '/v1/callLogs', {
        creates: true,
        json: {
          subject: activityTitle(a), outcome: OUTCOME[a.outcome], to_phone_number: a.record.number,
          start_time: utc(a.startedAt), end_time: utc(a.endedAt), duration: String(Math.round(a.durationMs / 1000)),
          ...(a.contactId ? { person_id: Number(a.contactId) } : {}), note: describeRecord(a).replace(/\n/g, '<br>'),
        },
      }, signal));
      results.push({ key: a.key, ok: true, id: String(body.data.id) });
    }
    return results;
  }

  /**
   * Call logs can be neither searched nor filtered by time, and are listed oldest first: one pass reads from where the
   * last look-up ended (less a margin for logs deleted since) to the end, for every activity in doubt at once. So a
   * look-up reads what was written since the last one; only the first reads the company's history.
   */
  async findWritten(activities: Activity[], cursor: string | null, signal?: AbortSignal): Promise<Found> {
    const index = new ActivityIndex(activities);
    const ids = new Map<string, string>();
    let start = Math.max(0, Number(cursor ?? 0) - DELETED_MARGIN) || 0;
    for (;;) {
      const body = page.parse(await this.api.request(COST.listCallLogs, 'GET', '/v1/callLogs', { searchParams: { start: String(start), limit: '500' } }, signal));
      for (const c of body.data ?? []) {
        // (A log found by an attempt's key is this call only if it started when this one did.)
        const a = index.find(keyIn(c.subject), (x) => c.start_time === utc(x.startedAt));
        if (a) ids.set(a.key, String(c.id));
      }
      const read = start + (body.data?.length ?? 0);
      const p = body.additional_data?.pagination;
      if (!p?.more_items_in_collection || p.next_start === undefined) return { ids, cursor: String(read) };
      start = p.next_start;
    }
  }

  /** Pipedrive updates one person a request (it has no batch update). */
  async writeStatuses(statuses: ContactStatus[], signal?: AbortSignal): Promise<StatusRefusal[]> {
    const field = this.statusField;
    if (!field) return [];
    return statusesOneByOne(statuses, (s) => this.api.request(COST.updatePerson, 'PATCH', `/api/v2/persons/${encodeURIComponent(s.contactId)}`, { json: { custom_fields: { [field]: s.status } } }, signal));
  }
}
