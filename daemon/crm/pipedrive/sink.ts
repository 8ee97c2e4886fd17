// Pipedrive sink: each call attempt becomes a call log on the person (`/v1/callLogs`: no v2 replacement exists),
// found again by the key in its subject.
import { z } from 'zod/v4';
import { COST, type PipedriveApi } from './client.ts';
import type { Outcome } from '../../outcomes.ts';
import { activityTitle, describeRecord, type Activity, type Sink, type WriteResult } from '../../sinks/sink.ts';

/** Pipedrive's call-log outcomes (it has no "failed": an attempt that never rang counts as not answered). */
const OUTCOME: Record<Outcome, string> = {
  connected: 'connected', left_voicemail: 'left_voicemail', busy: 'busy', no_answer: 'no_answer', wrong_number: 'wrong_number', failed: 'no_answer',
};

const created = z.object({ data: z.object({ id: z.union([z.string(), z.number()]) }).loose() });
const page = z.object({
  data: z.array(z.object({ id: z.union([z.string(), z.number()]), subject: z.string().nullable().optional() }).loose()).nullable(),
  additional_data: z.object({ pagination: z.object({ more_items_in_collection: z.boolean().optional(), next_start: z.number().optional() }).loose().optional() }).loose().nullable().optional(),
});

/** `YYYY-MM-DD HH:MM:SS` in UTC, as call logs take times. */
function utc(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

export class PipedriveSink implements Sink {
  readonly kind = 'pipedrive';
  readonly maxBatch = 1;
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

  /** Call logs cannot be searched: the newest pages are read until the key turns up (only after a crash). */
  async find(a: Activity, signal?: AbortSignal): Promise<string | null> {
    const subject = activityTitle(a);
    let start = 0;
    for (;;) {
      const body = page.parse(await this.api.request(COST.listCallLogs, 'GET', '/v1/callLogs', { searchParams: { start: String(start), limit: '500' } }, signal));
      const hit = (body.data ?? []).find((c) => c.subject === subject);
      if (hit) return String(hit.id);
      const p = body.additional_data?.pagination;
      if (!p?.more_items_in_collection || p.next_start === undefined) return null;
      start = p.next_start;
    }
  }

  async writeStatus(contactId: string, status: string, signal?: AbortSignal): Promise<void> {
    if (!this.statusField) return;
    await this.api.request(COST.updatePerson, 'PATCH', `/api/v2/persons/${encodeURIComponent(contactId)}`, { json: { custom_fields: { [this.statusField]: status } } }, signal);
  }
}
