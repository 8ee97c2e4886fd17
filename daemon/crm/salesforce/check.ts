// `check` on Salesforce: the sign-in (the token request), the objects the selection reads (describe: each mapped field
// exists on Contact and Lead, with a type the mapping reads), the Campaign of the selection, and for the mirror Task
// (describe: the user may create and update Tasks and every field the mirror writes). Five requests at most.
import { z } from 'zod/v4';
import type { SyncConfig } from '../../config.ts';
import { SourceError } from '../../errors.ts';
import { judgeFields, mappedFields, type CrmField, type MappedField } from '../../check/fields.ts';
import { error, fail, ok, warn, type CheckResult } from '../../check/result.ts';
import type { CrmContext } from '../crm.ts';
import { SalesforceApi, soqlString } from './client.ts';
import type { SalesforceConfig } from './config.ts';

const PATIENCE = { timeoutMs: 10_000, attempts: 2 };

const describeAnswer = z.object({
  name: z.string(), createable: z.boolean().optional(), updateable: z.boolean().optional(), queryable: z.boolean().optional(),
  fields: z.array(z.object({
    name: z.string(), label: z.string().optional(), type: z.string(), createable: z.boolean().optional(), updateable: z.boolean().optional(),
    externalId: z.boolean().optional(), picklistValues: z.array(z.object({ value: z.string(), label: z.string().optional() }).loose()).optional(),
  }).loose()),
}).loose();
type Described = z.output<typeof describeAnswer>;

/** What the mirror writes on each Task (sink.ts), besides the external-ID field. */
const TASK_FIELDS = ['WhoId', 'Subject', 'TaskSubtype', 'CallType', 'Status', 'CallDurationInSeconds', 'CallDisposition', 'ActivityDate', 'CallObject', 'Description'];
const TEXT = new Set(['string', 'phone', 'textarea', 'picklist', 'email', 'url', 'combobox']);

function problem(f: CrmField, m: MappedField): string | null {
  switch (m.use) {
    case 'phone':
      return f.type === 'phone' || f.type === 'string' || f.type === 'textarea' ? null : 'holds no phone number';
    case 'doNotCall':
      if (m.marked && f.type === 'picklist') {
        const values = new Set((f.options ?? []).map((o) => o.value));
        const absent = m.marked.map(String).filter((v) => !values.has(v));
        return absent.length ? `has no picklist value ${absent.join(', ')} (mapping.doNotCall.marked)` : null;
      }
      return f.type === 'boolean' || TEXT.has(f.type) || f.type === 'double' || f.type === 'int' ? null : 'holds no yes/no value';
    case 'status':
      return f.writable === false ? 'may not be updated by the integration user (field-level security)' : TEXT.has(f.type) ? null : 'is not a text field: the mirror writes a status word into it';
    default:
      return null;
  }
}

function catalogOf(d: Described): CrmField[] {
  return d.fields.map((f) => ({ name: f.name, label: f.label, type: f.type, writable: f.updateable, options: (f.picklistValues ?? []).map((p) => ({ value: p.value, label: p.label ?? p.value })) }));
}

export async function checkSalesforce(sync: SyncConfig, ctx: CrmContext): Promise<CheckResult[]> {
  const config = sync.source as SalesforceConfig;
  const api = new SalesforceApi(config, ctx, PATIENCE);
  const id = sync.id;
  const out: CheckResult[] = [];
  const s = config.selection;
  const objects: ('Contact' | 'Lead')[] = s.object ? [s.object] : ['Contact', 'Lead'];

  const describe = async (object: string): Promise<Described | 'hidden'> => {
    try {
      return describeAnswer.parse(await api.request('GET', `/sobjects/${object}/describe`));
    } catch (err) {
      if (err instanceof SourceError && err.status === 404) return 'hidden';
      throw err;
    }
  };
  const loginFix = config.auth.flow === 'client_credentials'
    ? 'check clientId and auth.clientSecret, and the app\'s run-as user (Setup > External Client App Manager > Policies)'
    : 'check clientId, auth.username, auth.privateKey and that the user is pre-authorized for the app';

  let signedIn = false;
  for (const object of objects) {
    let d: Described | 'hidden';
    try {
      d = await describe(object);
      signedIn = true;
    } catch (err) {
      if (err instanceof SourceError && !signedIn && (err.final || err.status === 401)) return [fail(id, 'crm.login', err.message, loginFix)];
      return [...out, error(id, 'crm.login', `Salesforce (${config.loginUrl}): ${(err as Error).message}`)];
    }
    if (d === 'hidden') {
      out.push(fail(id, 'crm.object', `the integration user cannot see ${object} (describe: NOT_FOUND): the selection reads ${objects.join(' and ')}`,
        `give the user read access to ${object} (its profile or a permission set)`));
      continue;
    }
    if (out.length === 0) out.push(ok(id, 'crm.login', `signed in to Salesforce (${config.auth.flow})`));
    out.push(...judgeFields(sync, mappedFields(sync), catalogOf(d),
      { noun: `Salesforce field on ${object}`, where: `Salesforce: Setup > Object Manager > ${object} > Fields & Relationships`, problem }));
  }
  if (!signedIn) return out;

  if (s.campaignId) {
    try {
      let found: Record<string, unknown> | undefined;
      for await (const rows of api.query(`SELECT Id, Name, IsActive FROM Campaign WHERE Id = ${soqlString(s.campaignId)}`)) found ??= rows[0];
      if (!found) {
        out.push(fail(id, 'crm.selection', `Salesforce has no Campaign ${s.campaignId} (source.selection.campaignId) that the integration user can see`, 'set source.selection.campaignId to the Campaign\'s id (701…, in its URL)'));
      } else if (found.IsActive === false) {
        out.push(warn(id, 'crm.selection', `Campaign ${s.campaignId} ("${String(found.Name ?? '')}") is not active: its members are read all the same`, 'activate it if it should be'));
      } else out.push(ok(id, 'crm.selection', `Campaign ${s.campaignId} ("${String(found.Name ?? '')}") exists`));
    } catch (err) {
      if (err instanceof SourceError && err.final) out.push(fail(id, 'crm.selection', err.message, 'give the integration user read access to Campaign and CampaignMember'));
      else out.push(error(id, 'crm.selection', `reading Campaign ${s.campaignId}: ${(err as Error).message}`));
    }
  } else out.push(ok(id, 'crm.selection', `${s.object} records${s.where ? ` where ${s.where}` : ''}`));

  if (sync.mirror?.sink.type === 'source') out.push(await checkTask(api, sync, config));
  return out;
}

/** The mirror writes each call as a Task (upserted on the external-ID field, if any): the user must create and update them. */
async function checkTask(api: SalesforceApi, sync: SyncConfig, config: SalesforceConfig): Promise<CheckResult> {
  const fix = 'give the integration user Create and Edit on Task (Activities) in its profile or a permission set, with edit access to the call fields';
  let d: Described | 'hidden';
  try {
    d = await (async () => {
      try {
        return describeAnswer.parse(await api.request('GET', '/sobjects/Task/describe'));
      } catch (err) {
        if (err instanceof SourceError && err.status === 404) return 'hidden' as const;
        throw err;
      }
    })();
  } catch (err) {
    return error(sync.id, 'crm.mirror', `describing Task: ${(err as Error).message}`);
  }
  if (d === 'hidden') return fail(sync.id, 'crm.mirror', 'the integration user cannot see Task (describe: NOT_FOUND): the mirror writes each call as a Task', fix);
  if (d.createable === false) return fail(sync.id, 'crm.mirror', 'the integration user may not create Tasks (describe: createable false): the mirror writes each call as a Task', fix);
  const ext = config.taskExternalIdField;
  const byName = new Map(d.fields.map((f) => [f.name.toLowerCase(), f]));
  if (ext) {
    const f = byName.get(ext.toLowerCase());
    if (!f || !f.externalId) {
      return fail(sync.id, 'crm.mirror', `Task has no external-ID field ${ext} (source.taskExternalIdField)${f ? `: ${f.name} is not marked External ID` : ''}`,
        `create a text field ${ext} on Task (Activity) marked External ID and Unique, or leave taskExternalIdField out (calls are then found by CallObject)`);
    }
    if (d.updateable === false) return fail(sync.id, 'crm.mirror', `the integration user may not edit Tasks: the mirror upserts them on ${ext}`, fix);
  }
  const closed = [...TASK_FIELDS, ...(ext ? [ext] : [])].filter((n) => byName.get(n.toLowerCase())?.createable === false || !byName.has(n.toLowerCase()));
  if (closed.length) return fail(sync.id, 'crm.mirror', `the integration user may not write the Task field${closed.length > 1 ? 's' : ''} ${closed.join(', ')} that the mirror writes`, fix);
  return ok(sync.id, 'crm.mirror', `the integration user may create${ext ? ' and update' : ''} call Tasks with every field the mirror writes`);
}
