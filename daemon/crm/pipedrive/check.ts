// `check` on Pipedrive: the API token, the person fields the mapping names (GET /api/v2/personFields: each exists, with
// a type the mapping reads; an option field's ids where the mapping lists marked values), and the filter of the
// selection (GET /v1/filters/{id}: it exists and selects persons). Two requests (12 tokens of the daily budget).
import { z } from 'zod/v4';
import type { SyncConfig } from '../../config.ts';
import { SourceError } from '../../errors.ts';
import { judgeFields, mappedFields, type CrmField, type MappedField } from '../../check/fields.ts';
import { error, fail, ok, skip, type CheckResult } from '../../check/result.ts';
import type { CrmContext } from '../crm.ts';
import { PipedriveApi } from './client.ts';
import type { PipedriveConfig } from './config.ts';

const PATIENCE = { timeoutMs: 10_000, attempts: 2 };
/** Token costs (Pipedrive's published ones): the v2 fields list, a v1 single read. */
const COST = { personFields: 10, filter: 2 };

const fieldsAnswer = z.object({
  data: z.array(z.object({
    field_code: z.string(), field_name: z.string().optional(), field_type: z.string(),
    options: z.array(z.object({ id: z.union([z.number(), z.string()]), label: z.string() }).loose()).nullable().optional(),
  }).loose()).nullable(),
  additional_data: z.object({ next_cursor: z.string().nullable().optional() }).loose().nullable().optional(),
});
const filterAnswer = z.object({ data: z.object({ id: z.number(), name: z.string().optional(), type: z.string().optional(), active_flag: z.boolean().optional() }).loose() });

/** API v2 gives a person's standard list fields under plural names (phones, emails, label_ids): the mapping names those. */
const V2_NAMES: Record<string, string> = { phone: 'phones', email: 'emails', label: 'label_ids' };
const OPTION_TYPES = new Set(['enum', 'set']);
const TEXT_TYPES = new Set(['varchar', 'varchar_auto', 'text', 'double', 'phone']);

function problem(f: CrmField, m: MappedField): string | null {
  switch (m.use) {
    case 'phone':
      return f.type === 'phone' || f.type === 'varchar' || f.type === 'varchar_auto' || f.type === 'text' ? null : 'holds no phone number';
    case 'doNotCall': {
      const options = (f.options ?? []).map((o) => `${o.value} (${o.label})`).join(', ');
      if (m.marked) {
        if (!OPTION_TYPES.has(f.type)) return `is not a single-option field: its values are never the option ids ${m.marked.join(', ')} that mapping.doNotCall.marked lists, so no contact would read as marked`;
        const known = new Set((f.options ?? []).flatMap((o) => [o.value, o.label]));
        const absent = m.marked.map(String).filter((v) => !known.has(v));
        return absent.length ? `has no option ${absent.join(', ')} (mapping.doNotCall.marked): its options are ${options}` : null;
      }
      if (OPTION_TYPES.has(f.type)) return `is an option field: its values are option ids (${options}), which are not yes or no; list the ids that mark a contact in mapping.doNotCall.marked`;
      return TEXT_TYPES.has(f.type) ? null : 'holds no yes/no value';
    }
    case 'status':
      return TEXT_TYPES.has(f.type) ? null : 'is not a text field: the mirror writes a status word into it';
    default:
      return null;
  }
}

export async function checkPipedrive(sync: SyncConfig, ctx: CrmContext): Promise<CheckResult[]> {
  const config = sync.source as PipedriveConfig;
  const api = new PipedriveApi(config, ctx.redis, ctx.keys, ctx.log, ctx.metrics, PATIENCE);
  const id = sync.id;
  const out: CheckResult[] = [];
  const catalog: CrmField[] = [];
  try {
    let cursor: string | undefined;
    do {
      const page = fieldsAnswer.parse(await api.request(COST.personFields, 'GET', '/api/v2/personFields', { searchParams: { limit: '500', ...(cursor ? { cursor } : {}) } }));
      for (const f of page.data ?? []) {
        const field = { name: f.field_code, label: f.field_name, type: f.field_type, options: (f.options ?? []).map((o) => ({ value: String(o.id), label: o.label })) };
        catalog.push(field);
        if (V2_NAMES[f.field_code]) catalog.push({ ...field, name: V2_NAMES[f.field_code]! });
      }
      cursor = page.additional_data?.next_cursor ?? undefined;
    } while (cursor);
  } catch (err) {
    if (err instanceof SourceError && err.status === 401) return [fail(id, 'crm.login', err.message, 'set source.apiToken to your API token (Pipedrive: Personal preferences > API)')];
    if (err instanceof SourceError && err.final) return [fail(id, 'crm.login', err.message, 'use the API token of a user who may see persons and their fields')];
    return [error(id, 'crm.login', `Pipedrive at ${config.baseUrl}: ${(err as Error).message}`)];
  }
  out.push(ok(id, 'crm.login', `the API token reads person fields (${catalog.length})`));
  out.push(...judgeFields(sync, mappedFields(sync), catalog, { noun: 'Pipedrive person field', where: 'Pipedrive: Company settings > Data fields > Person; a custom field is named by its key', problem }));

  const filterId = config.selection.filterId;
  if (filterId) {
    try {
      const { data } = filterAnswer.parse(await api.request(COST.filter, 'GET', `/v1/filters/${filterId}`));
      if (data.type && data.type !== 'people') {
        out.push(fail(id, 'crm.selection', `Pipedrive filter ${filterId} ("${data.name ?? ''}") selects ${data.type}, not persons (people)`, 'set source.selection.filterId to a filter of persons'));
      } else out.push(ok(id, 'crm.selection', `Pipedrive filter ${filterId} ("${data.name ?? ''}") selects persons`));
    } catch (err) {
      if (err instanceof SourceError && err.status === 404) {
        out.push(fail(id, 'crm.selection', `Pipedrive has no filter ${filterId} (source.selection.filterId) that this token can use`, 'set source.selection.filterId to the id in the filter\'s URL (Pipedrive: Contacts > People > filter)'));
      } else out.push(error(id, 'crm.selection', `reading Pipedrive filter ${filterId}: ${(err as Error).message}`));
    }
  } else out.push(ok(id, 'crm.selection', 'no selection: every person of the company'));
  if (sync.mirror?.sink.type === 'source') {
    out.push(skip(id, 'crm.mirror', 'call logs: every Pipedrive user may add their own (the token\'s user is the calls\' owner); not probed, as only a write would tell'));
  }
  return out;
}
