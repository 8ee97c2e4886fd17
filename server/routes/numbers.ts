// Routes of §4.6–§4.9: list, add (JSON), upload (CSV) and delete the numbers of a campaign (many, or one by its id).
import type { FastifyInstance } from 'fastify';
import { DELETABLE_NUMBER_STATUSES } from '../../api/enums.ts';
import { LIST_SPECS, isPlainObject } from '../../api/list-query.ts';
import { counted, listing, type FieldError } from '../../api/problems.ts';
import type { AddNumbersResult } from '../../api/records.ts';
import type { Deps } from '../deps.ts';
import { uploadCsv } from '../csv-upload.ts';
import { ApiError, invalid } from '../errors.ts';
import { jsonParam, listQuery, onlyParams, params, sendListJson } from '../http.ts';
import { admit, assertAcceptsNumbers, MAX_VAR_VALUE, MAX_VARIABLES, rejectedEntry, type Candidate, type Rejection } from '../numbers-intake.ts';
import type { CampaignRow } from '../store/campaigns.ts';
import { inRequestSpan } from '../telemetry.ts';
import { numberRecord, type NumberRow } from '../store/numbers.ts';
import { campaignFor, idList } from './campaigns.ts';


export function numberRoutes(app: FastifyInstance, deps: Deps): void {
  const { store } = deps;

  app.get('/campaigns/:campaignId/numbers', async (request, reply) => {
    const { row, timeZone } = campaignFor(deps, request, 'numbers.list');
    const query = listQuery(request, LIST_SPECS.numbers);
    return sendListJson(reply, 'numbers', query.range, await store.pages.numbers({ campaignPk: row.pk, query, timeZone, includeDeleted: false }));
  });

  app.post('/campaigns/:campaignId/numbers', async (request, reply) => {
    const { row } = campaignFor(deps, request, 'numbers.add');
    const p = params(request);
    onlyParams(p, ['varNames']);
    const givenNames = varNamesParam(jsonParam('varNames', p.varNames));
    const { entries, pointer } = addBody(request.body, deps.limits.numbersPerRequest, givenNames);
    assertAcceptsNumbers(row);
    const width = Math.max(0, ...entries.map((e) => e.varValues.length));
    const varNames = givenNames ?? Array.from({ length: width }, (_, i) => `var${i + 1}`);
    const checks = await deps.validator.check(entries.map((e) => e.raw));
    await store.db.walRoom(entries.length); // a stream of adds waits here, not on the event loop, when it outruns the checkpointer
    // The campaign may have changed while the numbers were validated (or the log was copied out).
    const current = store.campaigns.byPk(row.pk);
    if (!current) {
      throw new ApiError('not-found', `Campaign ${JSON.stringify(row.name)} was deleted while the numbers were validated; nothing was added`);
    }
    assertAcceptsNumbers(current);
    const { admitted, rejected } = inRequestSpan(request, 'store add numbers', () => ({ 'db.system.name': 'sqlite', 'cds.numbers': entries.length }),
      () => admit(store, row.pk, varNames, entries, checks));
    if (admitted.length) deps.dialer.wake(row.pk);
    // The records as inserted, built from what was inserted rather than read back (1,000 rows cost ~1.5 ms to read).
    const values = new Map(entries.map((e) => [e.position, e.varValues as string[]]));
    const result: AddNumbersResult = {
      created: admitted.map((a) => ({
        id: String(a.id), number: a.number, status: 'NotContacted', attempts: 0, varNames, varValues: values.get(a.position)!,
      })),
      rejected: rejected.map(rejectedEntry),
    };
    if (!admitted.length) {
      const [first] = rejected as [Rejection];
      throw new ApiError('unprocessable', entries.length === 1
        ? `The number was not added: ${first.reason}`
        : `None of the ${entries.length} numbers was added; entry ${first.position} was rejected: ${first.reason} (see rejected for the others)`, {
        errors: rejected.map((r) => ({ in: 'body', name: pointer(r.position, '/number'), detail: r.reason })),
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

  // All or nothing; no body, since success means exactly the ids sent (the single delete below answers its record).
  app.delete('/campaigns/:campaignId/numbers', async (request, reply) => {
    const { row } = campaignFor(deps, request, 'numbers.delete');
    onlyParams(params(request), []);
    deleteNumbers(deps, row, idList(request.body, 'number record', deps.limits.idsPerDelete));
    return reply.code(204).send();
  });

  // What react-admin's delete sends; it reads the deleted record from the answer.
  app.delete('/campaigns/:campaignId/numbers/:numberId', async (request, reply) => {
    const { row } = campaignFor(deps, request, 'numbers.delete');
    onlyParams(params(request), []);
    const [deleted] = deleteNumbers(deps, row, [(request.params as { numberId: string }).numberId]);
    return reply.code(200).send(numberRecord(deleted!));
  });
}

/**
 * Deletes live numbers of a campaign by record id, all or nothing: 404 naming the ids that are not live numbers of it,
 * 409 naming the numbers whose status forbids it. Returns the rows as they were before.
 */
function deleteNumbers(deps: Deps, row: CampaignRow, ids: string[]): NumberRow[] {
  const numeric = ids.filter((id) => /^\d{1,15}$/.test(id)).map(Number);
  const found = new Map(deps.store.numbers.byIds(row.pk, numeric).map((r) => [String(r.id), r]));
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length) {
    const named = listing(missing.map((id) => JSON.stringify(id)), 'and');
    throw new ApiError('not-found',
      `Campaign ${JSON.stringify(row.name)} has no live ${missing.length === 1 ? `number with id ${named}` : `numbers with ids ${named}`}; ` +
      'nothing was deleted (ids come from the numbers list, not phone numbers)',
      { extensions: { missingIds: missing } });
  }
  const rows = ids.map((id) => found.get(id)!);
  const blocking = rows.filter((r) => !DELETABLE_NUMBER_STATUSES.includes(r.status as never));
  if (blocking.length) {
    const only = `only ${listing(DELETABLE_NUMBER_STATUSES, 'or')} numbers can be`;
    const [first] = blocking as [NumberRow];
    throw new ApiError('conflict', blocking.length === 1
      ? `Number "${first.id}" (${first.number}) is ${first.status} and cannot be deleted; ${only}; nothing was deleted`
      : `Numbers ${listing(blocking.map((b) => `"${b.id}" (${b.number}, ${b.status})`), 'and')} cannot be deleted in their status; ${only}; nothing was deleted`,
    { extensions: { blockingIds: blocking.map((b) => String(b.id)), blocking: blocking.map((b) => ({ id: String(b.id), status: b.status })) } });
  }
  deps.store.numbers.markDeleted(row.pk, rows);
  for (const n of rows) {
    deps.events.emit(row, 'number.status_changed', { numberId: String(n.id), number: n.number, from: n.status, to: 'Deleted', attempts: n.attempts });
  }
  return rows;
}

/** 409 unless numbers may be added now (§1, §4.7, §4.8). */
export function varNamesParam(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const ok = Array.isArray(value) && value.length <= MAX_VARIABLES &&
    value.every((v) => typeof v === 'string' && v.length > 0 && v.length <= 100) && new Set(value).size === value.length;
  if (!ok) {
    throw invalid([{
      in: 'query', name: 'varNames',
      detail: `The varNames parameter must be a JSON array of at most ${MAX_VARIABLES} distinct, non-empty strings of at most 100 characters`,
    }]);
  }
  return value as string[];
}

const ENTRY = '{"number": "+…", "varValues": [...]}';

/**
 * The entries of an add: a JSON array of them, or one entry alone (as the vendor's documentation sends it), which
 * reads as an array of one. `pointer` names a field of an entry in the body as sent.
 */
function addBody(body: unknown, max: number, varNames: string[] | undefined): {
  entries: Candidate[]; pointer: (index: number, field: string) => string;
} {
  const single = isPlainObject(body);
  const pointer = (index: number, field: string) => (single ? field : `/${index}${field}`);
  if (!single && !Array.isArray(body)) {
    throw invalid([{ in: 'body', name: '', detail: `The body must be an entry ${ENTRY} or a JSON array of them` }]);
  }
  const list: unknown[] = single ? [body] : body as unknown[];
  if (!list.length) throw invalid([{ in: 'body', name: '', detail: 'The body lists no numbers; give at least one' }]);
  if (list.length > max) {
    throw new ApiError('payload-too-large',
      `The body lists ${list.length} numbers; at most ${max} per request are accepted (send the rest in further requests)`);
  }
  const maxValues = varNames?.length ?? MAX_VARIABLES;
  const errors: FieldError[] = [];
  const entries: Candidate[] = [];
  list.forEach((entry, i) => {
    const subject = single ? 'The entry' : `Entry ${i}`;
    const at = (field: string, detail: string) => errors.push({ in: 'body', name: pointer(i, field), detail: `${subject} ${detail}` });
    if (!isPlainObject(entry)) return at('', `must be an object ${ENTRY}; got ${JSON.stringify(entry)?.slice(0, 80)}`);
    const unknown = Object.keys(entry).filter((k) => k !== 'number' && k !== 'varValues');
    if (unknown.length) {
      at(`/${unknown[0]}`, `has ${unknown.length === 1 ? 'an unknown field' : 'unknown fields'} ${listing(unknown.map((k) => JSON.stringify(k)), 'and')}; ` +
        'an entry has only number and varValues');
    }
    if (typeof entry.number !== 'string') return at('/number', `needs a number that is a string; got ${JSON.stringify(entry.number) ?? 'none'}`);
    const vv = entry.varValues ?? [];
    if (!Array.isArray(vv) || vv.some((v) => typeof v !== 'string' || v.length > MAX_VAR_VALUE)) {
      return at('/varValues', `has varValues that are not an array of strings of at most ${MAX_VAR_VALUE} characters`);
    }
    if (vv.length > maxValues) {
      return at('/varValues', `has ${counted(vv.length, 'variable value')}; ` +
        (varNames ? `varNames names only ${maxValues}` : `at most ${MAX_VARIABLES} are allowed`));
    }
    entries.push({ position: i, raw: entry.number, varValues: vv as string[] });
  });
  if (errors.length) throw invalid(errors);
  return { entries, pointer };
}
