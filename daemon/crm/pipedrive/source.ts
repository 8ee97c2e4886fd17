// Pipedrive: persons through API v2 (cursor paging, updated_since, filter_id), webhooks v2 with HTTP Basic auth.
import type { RedisClient } from '../../state/connection.ts';
import type { Logger } from 'pino';
import type { DaemonKeys } from '../../state/keys.ts';
import { z } from 'zod/v4';
import type { SyncConfig } from '../../config.ts';
import type { Metrics } from '../../metrics.ts';
import { COST, PipedriveApi } from './client.ts';
import { header, sameBytes } from '../../signing.ts';
import { reword } from '../../errors.ts';
import type { PullOptions, PullPage, Source, SourceContact, WebhookRequest, WebhookVerdict } from '../../sources/source.ts';
import type { PipedriveConfig } from './config.ts';
import { changedFields, ignorableStatusField } from '../../sources/status-field.ts';


const personsAnswer = z.object({
  success: z.boolean().optional(),
  data: z.array(z.object({ id: z.number() }).loose()).nullable(),
  additional_data: z.object({ next_cursor: z.string().nullable().optional() }).loose().nullable().optional(),
});

const webhookBody = z.object({
  meta: z.object({
    action: z.string(),
    entity: z.string(),
    id: z.union([z.string(), z.number()]).optional(),
    entity_id: z.union([z.string(), z.number()]).optional(),
    webhook_id: z.union([z.string(), z.number()]).optional(),
    timestamp: z.string().optional(),
  }).loose(),
  data: z.object({ id: z.number() }).loose().nullable().optional(),
  previous: z.unknown().optional(),
});

/** A person's fields, flat: custom fields (v2 gives `{type, value}` objects or plain values) beside the standard ones. */
function personFields(p: Record<string, unknown>): Record<string, unknown> {
  const fields: Record<string, unknown> = { ...p };
  const custom = p.custom_fields;
  if (custom && typeof custom === 'object') for (const [k, v] of Object.entries(custom)) fields[k] = v;
  return fields;
}

export class PipedriveSource implements Source {
  readonly kind = 'pipedrive';
  readonly pulls = true;
  private readonly config: PipedriveConfig;
  private readonly api: PipedriveApi;
  /** The custom field the mirror writes a number's final status into, when the sync does not read it. */
  private readonly statusField: string | null;

  constructor(sync: SyncConfig, redis: RedisClient, keys: DaemonKeys, log: Logger, metrics: Metrics) {
    this.config = sync.source as PipedriveConfig;
    this.statusField = ignorableStatusField(sync);
    this.api = new PipedriveApi(this.config, redis, keys, log, metrics);
  }

  private async *persons(params: Record<string, string>, options: PullOptions): AsyncGenerator<Record<string, unknown>[]> {
    let cursor = options.full ? options.resume ?? undefined : undefined;
    do {
      const body = personsAnswer.parse(await this.api.request(COST.listPersons, 'GET', '/api/v2/persons', {
        searchParams: { ...params, limit: String(this.config.pageSize), ...(cursor ? { cursor } : {}) },
      }, options.signal).catch((err: unknown) => {
        throw params.filter_id ? reword(err, 404, (d) => `Pipedrive has no filter ${params.filter_id} (source.selection.filterId ${params.filter_id}) that this token can use (${d})`) : err;
      }));
      cursor = body.additional_data?.next_cursor ?? undefined;
      yield body.data ?? [];
      if (options.full && cursor) await options.checkpoint(cursor);
    } while (cursor);
  }

  private contact(p: Record<string, unknown>): SourceContact {
    return { id: String(p.id), fields: personFields(p) };
  }

  async *pull(options: PullOptions): AsyncGenerator<PullPage> {
    const filterId = this.config.selection.filterId;
    const selection: Record<string, string> = filterId ? { filter_id: String(filterId) } : {};
    if (options.full) {
      for await (const page of this.persons({ ...selection, sort_by: 'id', sort_direction: 'asc' }, options)) {
        yield { contacts: page.map((p) => this.contact(p)) };
      }
      return;
    }
    const since = new Date(Math.max(0, (options.since ?? 0) - this.config.overlap)).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const selected = new Set<string>();
    for await (const page of this.persons({ ...selection, updated_since: since, sort_by: 'update_time', sort_direction: 'asc' }, options)) {
      for (const p of page) selected.add(String(p.id));
      yield { contacts: page.map((p) => this.contact(p)) };
    }
    if (!filterId) return;
    // Persons changed so that the filter no longer matches them are missing above: whoever changed and is not
    // in the filtered answer has left the selection.
    for await (const page of this.persons({ updated_since: since, sort_by: 'update_time', sort_direction: 'asc' }, options)) {
      const left = page.map((p) => String(p.id)).filter((id) => !selected.has(id));
      if (left.length) yield { contacts: [], left };
    }
  }

  verifyWebhook(req: WebhookRequest): WebhookVerdict {
    const { webhookUser, webhookPassword } = this.config;
    if (!webhookUser || !webhookPassword) return { ok: false, status: 401, reason: 'this sync has no webhookUser/webhookPassword: Pipedrive webhooks are refused' };
    const given = Buffer.from(header(req, 'authorization') ?? '');
    const expected = Buffer.from(`Basic ${Buffer.from(`${webhookUser}:${webhookPassword}`).toString('base64')}`);
    if (!sameBytes(given, expected)) return { ok: false, status: 401, reason: 'HTTP Basic credentials do not match' };
    let parsed;
    try {
      parsed = webhookBody.safeParse(JSON.parse(req.rawBody.toString('utf8')));
    } catch {
      return { ok: false, status: 400, reason: 'body is not JSON' };
    }
    if (!parsed.success) return { ok: false, status: 400, reason: `not a Pipedrive v2 webhook: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}` };
    const { meta, data, previous } = parsed.data;
    if (meta.entity !== 'person') return { ok: true, eventIds: [], replayKey: null, contacts: [], deleted: [], pull: false };
    const personId = String(meta.entity_id ?? data?.id ?? '');
    const eventId = meta.id !== undefined ? String(meta.id) : `${meta.webhook_id ?? ''}-${personId}-${meta.timestamp ?? ''}-${meta.action}`;
    const deletion = meta.action === 'delete' || meta.action === 'deleted';
    const pull = !deletion && !this.statusOnly(meta.action, data, previous);
    return { ok: true, eventIds: [eventId], replayKey: null, contacts: [], deleted: deletion && personId ? [personId] : [], pull };
  }

  /**
   * A change whose only difference (webhooks v2 carry the person before and after) is the status field, if any: the mirror's
   * own write of a final status, which changes nothing the sync reads, so pulling the person again would be wasted.
   */
  private statusOnly(action: string, data: unknown, previous: unknown): boolean {
    if (!this.statusField || (action !== 'change' && action !== 'updated') || !isRecord(data) || !isRecord(previous)) return false;
    const changed = changedFields(previous, data, 'custom_fields', ['update_time']);
    // Nothing changed at all (the same status written again for a second number of the person) needs no pull either.
    return changed.every((f) => f === `custom.${this.statusField}`);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
