// Routes of §4.6–§4.9: list, add (JSON), upload (CSV) and delete the numbers of a campaign.
import type { FastifyInstance } from 'fastify';
import { DELETABLE_NUMBER_STATUSES } from '../../api/enums.ts';
import { LIST_SPECS, isPlainObject } from '../../api/list-query.ts';
import type { FieldError } from '../../api/problems.ts';
import type { AddNumbersResult } from '../../api/records.ts';
import type { Deps } from '../app.ts';
import { uploadCsv } from '../csv-upload.ts';
import { ApiError, invalid } from '../errors.ts';
import { jsonParam, listQuery, onlyParams, params, sendList } from '../http.ts';
import { admit, type Candidate } from '../numbers-intake.ts';
import type { CampaignRow } from '../store/campaigns.ts';
import { numberRecord } from '../store/numbers.ts';
import { campaignFor, idList } from './campaigns.ts';

export const MAX_VARIABLES = 50;
export const MAX_VAR_VALUE = 1000;

export function numberRoutes(app: FastifyInstance, deps: Deps): void {
  const { store } = deps;

  app.get('/campaigns/:campaignId/numbers', async (request, reply) => {
    const { row, timeZone } = campaignFor(deps, request, 'numbers.list');
    const query = listQuery(request, LIST_SPECS.numbers);
    const { rows, total } = store.numbers.list(row.pk, query, timeZone, false);
    return sendList(reply, 'numbers', query.range, rows.map(numberRecord), total);
  });

  app.post('/campaigns/:campaignId/numbers', async (request, reply) => {
    const { row } = campaignFor(deps, request, 'numbers.add');
    const p = params(request);
    onlyParams(p, ['varNames']);
    const givenNames = varNamesParam(jsonParam('varNames', p.varNames));
    const entries = addBody(request.body, deps.limits.numbersPerRequest, givenNames?.length ?? MAX_VARIABLES);
    assertAcceptsNumbers(row);
    const width = Math.max(0, ...entries.map((e) => e.varValues.length));
    const varNames = givenNames ?? Array.from({ length: width }, (_, i) => `var${i + 1}`);
    const checks = await deps.validator.check(entries.map((e) => e.raw));
    // The campaign may have changed while the numbers were validated.
    const current = store.campaigns.byPk(row.pk);
    if (!current) throw new ApiError('not-found', 'the campaign was deleted while the numbers were validated; nothing was added');
    assertAcceptsNumbers(current);
    const { admitted, rejected } = admit(store, row.pk, varNames, entries, checks);
    if (admitted.length) deps.dialer.wake(row.pk);
    const result: AddNumbersResult = {
      created: store.numbers.byIds(row.pk, admitted.map((a) => a.id)).map(numberRecord),
      rejected: rejected.map((r) => ({ index: r.position, number: r.value, reason: r.reason, code: r.code })),
    };
    if (!admitted.length) {
      throw new ApiError('unprocessable', `none of the ${entries.length} numbers was added: ${rejected[0]!.reason}` +
        (rejected.length > 1 ? ` (and ${rejected.length - 1} more)` : ''), {
        errors: rejected.map((r) => ({ in: 'body', name: `/${r.position}/number`, detail: r.reason })),
        extensions: { created: [], rejected: result.rejected },
      });
    }
    return reply.code(201).send(result);
  });

  app.post('/campaigns/:campaignId/numbers/upload', async (request, reply) => {
    const { row } = campaignFor(deps, request, 'numbers.upload');
    const result = await uploadCsv(deps, request, row);
    deps.dialer.wake(row.pk);
    return reply.code(201).send(result);
  });

  app.delete('/campaigns/:campaignId/numbers', async (request, reply) => {
    const { row } = campaignFor(deps, request, 'numbers.delete');
    onlyParams(params(request), []);
    const ids = idList(request.body, 'number record', deps.limits.idsPerDelete);
    const numeric = ids.filter((id) => /^\d{1,15}$/.test(id)).map(Number);
    const found = new Map(store.numbers.byIds(row.pk, numeric).map((r) => [String(r.id), r]));
    const missing = ids.filter((id) => !found.has(id));
    if (missing.length) {
      throw new ApiError('not-found',
        `${missing.length} number record id(s) are not live numbers of this campaign: ${missing.slice(0, 20).join(', ')}` +
        `${missing.length > 20 ? ', …' : ''}; nothing was deleted (ids come from the numbers list, not phone numbers)`,
        { extensions: { missingIds: missing } });
    }
    const blocking = [...found.values()].filter((r) => !DELETABLE_NUMBER_STATUSES.includes(r.status as never));
    if (blocking.length) {
      throw new ApiError('conflict',
        `${blocking.length} number(s) cannot be deleted in their status: ` +
        `${blocking.slice(0, 20).map((b) => `${b.id} (${b.status})`).join(', ')}; only ${DELETABLE_NUMBER_STATUSES.join(' and ')} numbers can be; nothing was deleted`,
        { extensions: { blockingIds: blocking.map((b) => String(b.id)), blocking: blocking.map((b) => ({ id: String(b.id), status: b.status })) } });
    }
    store.numbers.markDeleted(row.pk, [...found.values()]);
    for (const n of found.values()) {
      deps.events.emit(row, 'number.status_changed', { numberId: String(n.id), number: n.number, from: n.status, to: 'Deleted', attempts: n.attempts });
    }
    return reply.code(204).send();
  });
}

/** 409 unless numbers may be added now (§1, §4.7, §4.8). */
export function assertAcceptsNumbers(row: CampaignRow): void {
  if (row.type !== 'Dynamic' || row.state !== 'Active') {
    throw new ApiError('conflict',
      `numbers can be added only to a Dynamic campaign that is Active; this one is ${row.type} and ${row.state}`,
      { extensions: { type: row.type, state: row.state } });
  }
}

export function varNamesParam(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const ok = Array.isArray(value) && value.length <= MAX_VARIABLES &&
    value.every((v) => typeof v === 'string' && v.length > 0 && v.length <= 100) && new Set(value).size === value.length;
  if (!ok) {
    throw invalid([{ in: 'query', name: 'varNames', detail: `varNames must be a JSON array of at most ${MAX_VARIABLES} distinct non-empty strings` }]);
  }
  return value as string[];
}

function addBody(body: unknown, max: number, maxValues: number): Candidate[] {
  if (!Array.isArray(body)) {
    throw invalid([{ in: 'body', name: '', detail: 'the body must be a JSON array of {"number": "+…", "varValues": [...]} objects' }]);
  }
  if (!body.length) throw invalid([{ in: 'body', name: '', detail: 'the body lists no numbers; give at least one' }]);
  if (body.length > max) throw new ApiError('payload-too-large', `the body lists ${body.length} numbers; at most ${max} per request (send the rest in further requests)`);
  const errors: FieldError[] = [];
  const out: Candidate[] = [];
  body.forEach((entry, i) => {
    const at = (f: string, detail: string) => errors.push({ in: 'body', name: `/${i}${f}`, detail: `entry ${i}: ${detail}` });
    if (!isPlainObject(entry)) return at('', 'must be an object {"number": "+…", "varValues": [...]}');
    const unknown = Object.keys(entry).filter((k) => k !== 'number' && k !== 'varValues');
    if (unknown.length) at(`/${unknown[0]}`, `unknown field(s) ${unknown.join(', ')}; an entry has number and varValues`);
    if (typeof entry.number !== 'string') return at('/number', `number must be a string; got ${JSON.stringify(entry.number)}`);
    const vv = entry.varValues ?? [];
    if (!Array.isArray(vv) || vv.some((v) => typeof v !== 'string' || v.length > MAX_VAR_VALUE)) {
      return at('/varValues', `varValues must be an array of strings of at most ${MAX_VAR_VALUE} characters`);
    }
    if (vv.length > maxValues) return at('/varValues', `has ${vv.length} values; varNames names ${maxValues}`);
    out.push({ position: i, raw: entry.number, varValues: vv as string[] });
  });
  if (errors.length) throw invalid(errors);
  return out;
}
