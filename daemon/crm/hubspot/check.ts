// `check` on HubSpot: the private app token and its scopes (reads; the mirror's writes), the contact properties the
// mapping names (the properties API: each exists, with a type the mapping reads), and the selection (the list, or the
// properties filterGroups name). Three requests at most, none of them a write.
import { z } from 'zod/v4';
import type { SyncConfig } from '../../config.ts';
import { SourceError } from '../../errors.ts';
import { DO_NOT_CALL_VALUES } from '../../sync/do-not-call.ts';
import { closeNames, judgeFields, mappedFields, type CrmField, type MappedField } from '../../check/fields.ts';
import { error, fail, ok, warn, type CheckResult } from '../../check/result.ts';
import type { CrmContext } from '../crm.ts';
import { HubSpotApi } from './client.ts';
import type { HubSpotConfig } from './config.ts';

/** A check waits less than a run: two tries of 10 s. */
const PATIENCE = { timeoutMs: 10_000, attempts: 2 };

const propertiesAnswer = z.object({
  results: z.array(z.object({
    name: z.string(), label: z.string().optional(), type: z.string(), fieldType: z.string().optional(),
    options: z.array(z.object({ label: z.string(), value: z.string() }).loose()).optional(),
    modificationMetadata: z.object({ readOnlyValue: z.boolean().optional() }).loose().optional(),
  }).loose()),
});
const tokenInfoAnswer = z.object({ hubId: z.number().optional(), scopes: z.array(z.string()) }).loose();
const listAnswer = z.object({ list: z.object({ listId: z.union([z.string(), z.number()]), name: z.string().optional(), objectTypeId: z.string().optional() }).loose() });

const YES_NO = new Set([...DO_NOT_CALL_VALUES.marked, ...DO_NOT_CALL_VALUES.clear]);

/** Whether a HubSpot property's values serve a use (HubSpot types: string, number, date, datetime, enumeration, bool, phone_number). */
function problem(f: CrmField, m: MappedField): string | null {
  const dateLike = f.type === 'date' || f.type === 'datetime';
  switch (m.use) {
    case 'phone':
      return ['string', 'phone_number', 'number'].includes(f.type) ? null : 'holds no phone number';
    case 'doNotCall': {
      if (m.marked) {
        const values = new Set((f.options ?? []).map((o) => o.value));
        const absent = m.marked.map(String).filter((v) => f.type === 'enumeration' && !values.has(v));
        return absent.length ? `has no option ${absent.join(', ')} (mapping.doNotCall.marked): its options are ${[...values].join(', ')}` : null;
      }
      if (f.type === 'bool' || f.type === 'string' || f.type === 'number') return null;
      if (f.type === 'enumeration') {
        const other = (f.options ?? []).map((o) => o.value).filter((v) => !YES_NO.has(v.trim().toLowerCase()));
        return other.length ? `is an option field whose values ${other.join(', ')} are neither yes nor no: contacts with them are held, never read as marked or not` : null;
      }
      return dateLike ? 'is a date: it marks no one' : null;
    }
    case 'status':
      return f.writable === false ? 'is computed by HubSpot: the mirror cannot write it' : null;
    default:
      return null;
  }
}

export async function checkHubSpot(sync: SyncConfig, ctx: CrmContext): Promise<CheckResult[]> {
  const config = sync.source as HubSpotConfig;
  const api = new HubSpotApi(config, ctx.redis, ctx.keys, ctx.log, ctx.metrics, PATIENCE);
  const id = sync.id;
  const out: CheckResult[] = [];
  const writes = sync.mirror?.sink.type === 'source';

  // The token: HubSpot tells a private app's token its scopes; any other token (OAuth) is judged by the reads below.
  try {
    const info = tokenInfoAnswer.parse(await api.request('POST', `${config.baseUrl}/oauth/v2/private-apps/get/access-token-info`, { json: { tokenKey: config.accessToken } }));
    const needed = ['crm.objects.contacts.read', ...(config.selection.listId ? ['crm.lists.read'] : []), ...(writes || sync.mirror?.statusProperty ? ['crm.objects.contacts.write'] : [])];
    const lacking = needed.filter((s) => !info.scopes.includes(s));
    if (lacking.length) {
      out.push(fail(id, 'crm.scopes', `the private app's token lacks the scope${lacking.length > 1 ? 's' : ''} ${lacking.join(', ')}${lacking.includes('crm.objects.contacts.write') ? ' (the mirror writes calls and statuses with it)' : ''}`,
        `add ${lacking.join(', ')} to the private app (HubSpot: Settings > Integrations > Private Apps > Scopes), then put its new token in source.accessToken`));
    } else out.push(ok(id, 'crm.scopes', `the token (portal ${info.hubId ?? '?'}) has the scopes the sync needs: ${needed.join(', ')}`));
  } catch (err) {
    if (err instanceof SourceError && err.status === 401) {
      return [fail(id, 'crm.login', err.message, 'set source.accessToken to the private app\'s current access token (HubSpot: Settings > Integrations > Private Apps)')];
    }
    if (err instanceof SourceError && err.status !== null && err.status < 500) {
      out.push(warn(id, 'crm.scopes', `HubSpot did not tell this token's scopes (not a private app's token?): ${err.message}`, 'make sure the app has crm.objects.contacts.read (and .write for the mirror, crm.lists.read for a list)'));
    } else return [error(id, 'crm.login', `HubSpot at ${config.baseUrl}: ${(err as Error).message}`)];
  }

  let catalog: CrmField[];
  try {
    const answer = propertiesAnswer.parse(await api.request('GET', `${config.baseUrl}/crm/v3/properties/contacts`));
    catalog = answer.results.map((p) => ({
      name: p.name, label: p.label, type: p.type, options: (p.options ?? []).map((o) => ({ value: o.value, label: o.label })), writable: !p.modificationMetadata?.readOnlyValue,
    }));
  } catch (err) {
    if (err instanceof SourceError && err.final) return [...out, fail(id, 'crm.login', err.message, 'give the private app the crm.objects.contacts.read scope (its token reads the contact properties with it)')];
    return [...out, error(id, 'crm.fields', `reading HubSpot's contact properties: ${(err as Error).message}`)];
  }
  out.push(...judgeFields(sync, mappedFields(sync), catalog, { noun: 'HubSpot contact property', where: 'HubSpot: Settings > Properties > Contact properties', problem }));

  // The selection: a list, or filterGroups whose properties exist (HubSpot answers a filter on a missing property with nothing).
  const names = new Set(catalog.map((f) => f.name));
  for (const [i, g] of (config.selection.filterGroups ?? []).entries()) {
    for (const f of g.filters) {
      if (names.has(f.propertyName)) continue;
      const close = closeNames(f.propertyName, names);
      out.push(fail(id, 'crm.selection', `source.selection.filterGroups.${i}: the HubSpot contact property "${f.propertyName}" does not exist${close.length ? `; close ones that exist: ${close.join(', ')}` : ''}`,
        'filter on an existing contact property'));
    }
  }
  const listId = config.selection.listId;
  if (listId) {
    try {
      const { list } = listAnswer.parse(await api.request('GET', api.lists(`/${listId}`)));
      if (list.objectTypeId && list.objectTypeId !== '0-1') {
        out.push(fail(id, 'crm.selection', `HubSpot list ${listId} ("${list.name ?? ''}") holds objects of type ${list.objectTypeId}, not contacts (0-1)`, 'set source.selection.listId to a contact list'));
      } else out.push(ok(id, 'crm.selection', `HubSpot list ${listId} ("${list.name ?? ''}") is a contact list`));
    } catch (err) {
      if (err instanceof SourceError && err.status === 404) {
        out.push(fail(id, 'crm.selection', `HubSpot has no list ${listId} (source.selection.listId) that this token can read`, 'set source.selection.listId to the id in the list\'s URL (HubSpot: Contacts > Lists)'));
      } else if (err instanceof SourceError && err.final) out.push(fail(id, 'crm.selection', err.message, 'give the private app the crm.lists.read scope'));
      else out.push(error(id, 'crm.selection', `reading HubSpot list ${listId}: ${(err as Error).message}`));
    }
  } else if (!config.selection.filterGroups?.length) out.push(ok(id, 'crm.selection', 'no selection: every contact of the portal'));
  else if (!out.some((r) => r.check === 'crm.selection')) out.push(ok(id, 'crm.selection', 'the properties source.selection.filterGroups names exist'));
  return out;
}
