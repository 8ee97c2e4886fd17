// Routes of §4.2–§4.5: list, duplicate, change state, delete one and delete many campaigns.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DELETABLE_CAMPAIGN_STATES, NUMBER_STATUSES, SETTABLE_STATES, type NumberStatus, type Operation, type SettableState } from '../../api/enums.ts';
import { LIST_SPECS, isPlainObject } from '../../api/list-query.ts';
import type { Deps } from '../deps.ts';
import { authorizeCampaign } from '../auth.ts';
import { canMove, isNoOp, setCampaignState, TRANSITIONS } from '../campaign-states.ts';
import { listing } from '../../api/problems.ts';
import { ApiError, invalid, notFound } from '../errors.ts';
import { booleanParam, jsonParam, listQuery, onlyParams, params, sendList } from '../http.ts';
import { campaignRecord, type CampaignRow } from '../store/campaigns.ts';

type CampaignParams = { accountId: string; campaignId: string };

/** The campaign a request names, after the role and campaign-restriction checks; 404 when unknown. */
export function campaignFor(deps: Deps, request: FastifyRequest, op: Operation): { row: CampaignRow; timeZone: string } {
  const { account, key } = deps.guard(request, op);
  const id = (request.params as CampaignParams).campaignId;
  authorizeCampaign(key, op, id);
  const row = deps.store.campaigns.byId(account.pk, id);
  if (!row) throw notFound('Campaign', id);
  return { row, timeZone: account.timezone };
}

const MAX_NAME = 200;
/** How a 409 says which campaigns may be deleted. */
const ONLY_DELETABLE = `only ${listing(DELETABLE_CAMPAIGN_STATES, 'or')} campaigns`;

export function campaignRoutes(app: FastifyInstance, deps: Deps): void {
  const { store } = deps;

  app.get('/campaigns', async (request, reply) => {
    const { account } = deps.guard(request, 'campaigns.list');
    const query = listQuery(request, LIST_SPECS.campaigns);
    const { rows, total } = store.campaigns.list(account.pk, query, account.timezone);
    return sendList(reply, 'campaigns', query.range, rows.map(campaignRecord), total);
  });

  app.post('/campaigns/:campaignId/duplicate', async (request, reply) => {
    const { row } = campaignFor(deps, request, 'campaigns.duplicate');
    const p = params(request);
    onlyParams(p, ['newCampaignName', 'includeNumbers', 'numbersFilter']);
    const name = p.newCampaignName?.trim();
    if (name !== undefined && (name.length === 0 || name.length > MAX_NAME)) {
      throw invalid([{ in: 'query', name: 'newCampaignName', detail: `The newCampaignName parameter must be 1 to ${MAX_NAME} characters long` }]);
    }
    const includeNumbers = booleanParam('includeNumbers', p.includeNumbers) ?? true;
    const statuses = numbersFilter(jsonParam('numbersFilter', p.numbersFilter));
    const copy = store.campaigns.duplicate(
      row, name ?? nextCopyName(deps, row), includeNumbers ? statuses ?? [...NUMBER_STATUSES] : null, deps.now());
    return reply.code(201).send(campaignRecord(copy));
  });

  app.put('/campaigns/:campaignId/state', async (request, reply) => {
    const { row } = campaignFor(deps, request, 'campaigns.changeState');
    onlyParams(params(request), []);
    const target = settableState(request.body);
    if (!isNoOp(row.state, target)) {
      if (!canMove(row.state, target)) {
        const allowed = TRANSITIONS[row.state];
        throw new ApiError('conflict',
          `Campaign ${JSON.stringify(row.name)} is ${row.state} and cannot become ${target}; ` +
          (allowed.length ? `it can become ${listing(allowed, 'or')}` : `${row.state} is a final state`),
          { extensions: { state: row.state, allowedStates: allowed } });
      }
      setCampaignState(store, deps.events, row, target, deps.clock.now());
      if (target === 'Active') deps.dialer.wake(row.pk);
    }
    return reply.code(200).send(campaignRecord(store.campaigns.byPk(row.pk)!));
  });

  app.delete('/campaigns/:campaignId', async (request, reply) => {
    const { row } = campaignFor(deps, request, 'campaigns.delete');
    onlyParams(params(request), []);
    if (!DELETABLE_CAMPAIGN_STATES.includes(row.state)) {
      throw new ApiError('conflict',
        `Campaign ${JSON.stringify(row.name)} is ${row.state} and cannot be deleted; ${ONLY_DELETABLE} can be (cancel it first)`,
        { extensions: { state: row.state } });
    }
    // The record as it was: react-admin's delete reads the deleted record (its id) from the answer.
    const deleted = campaignRecord(row);
    store.campaigns.delete([row.pk]);
    return reply.code(200).send(deleted);
  });

  app.delete('/campaigns', async (request, reply) => {
    const { account } = deps.guard(request, 'campaigns.deleteMany');
    onlyParams(params(request), []);
    const ids = idList(request.body, 'campaign', deps.limits.idsPerDelete);
    const rows = ids.map((id) => ({ id, row: store.campaigns.byId(account.pk, id) }));
    const missing = rows.filter((r) => !r.row).map((r) => r.id);
    if (missing.length) {
      const named = listing(missing.map((id) => JSON.stringify(id)), 'and');
      throw new ApiError('not-found',
        `${missing.length === 1 ? `Campaign ${named} does` : `Campaigns ${named} do`} not exist in this account; nothing was deleted`,
        { extensions: { missingIds: missing } });
    }
    const blocking = rows.map((r) => r.row!).filter((r) => !DELETABLE_CAMPAIGN_STATES.includes(r.state));
    if (blocking.length) {
      const [first] = blocking as [CampaignRow];
      const detail = blocking.length === 1
        ? `Campaign ${JSON.stringify(first.name)} (${first.id}) is ${first.state} and cannot be deleted; ${ONLY_DELETABLE} can be (cancel it first)`
        : `Campaigns ${listing(blocking.map((b) => `${JSON.stringify(b.name)} (${b.id}, ${b.state})`), 'and')} cannot be deleted; ` +
          `${ONLY_DELETABLE} can be (cancel them first)`;
      throw new ApiError('conflict', `${detail}; nothing was deleted`,
        { extensions: { blockingIds: blocking.map((b) => b.id), blocking: blocking.map((b) => ({ id: b.id, state: b.state })) } });
    }
    store.campaigns.delete(rows.map((r) => r.row!.pk));
    // No body: all or nothing, so success means exactly the ids sent (and a body of 10,000 campaigns would say no more).
    return reply.code(204).send();
  });
}

function settableState(body: unknown): SettableState {
  // PUT .../state carries a JSON string; text/plain bodies arrive as text, with or without the quotes.
  let value = body;
  if (typeof value === 'string' && /^\s*".*"\s*$/.test(value)) value = JSON.parse(value) as unknown;
  if (typeof value === 'string') value = value.trim();
  if (typeof value === 'string' && (SETTABLE_STATES as readonly string[]).includes(value)) return value as SettableState;
  const got = value === undefined ? 'no body' : JSON.stringify(value)?.slice(0, 80);
  throw invalid([{
    in: 'body', name: '',
    detail: `The body must be one JSON string: "Active", "Paused" or "Canceled" (other states are not settable); got ${got}`,
  }]);
}

function numbersFilter(value: unknown): NumberStatus[] | null {
  if (value === undefined) return null;
  const bad = (detail: string) => invalid([{ in: 'query', name: 'numbersFilter', detail }]);
  if (!isPlainObject(value)) throw bad('The numbersFilter parameter must be a JSON object {"status": [...]}');
  const unknown = Object.keys(value).filter((k) => k !== 'status');
  if (unknown.length) {
    throw bad(`The numbersFilter parameter takes only "status"; got ${listing(unknown.map((k) => JSON.stringify(k)), 'and')}`);
  }
  const s = value.status;
  const list = Array.isArray(s) ? s : s === undefined ? [] : [s];
  if (!list.length || list.some((x) => !(NUMBER_STATUSES as readonly unknown[]).includes(x))) {
    throw bad(`The status of numbersFilter must be a non-empty array of ${listing(NUMBER_STATUSES, 'or')} values; got ${JSON.stringify(s)}`);
  }
  return [...new Set(list as NumberStatus[])];
}

/** `Name (n)` with n one more than the highest copy number in the account. */
function nextCopyName(deps: Deps, row: CampaignRow): string {
  const base = row.name.replace(/ \(\d+\)$/, '');
  let max = 0;
  for (const name of deps.store.campaigns.namesLike(row.account_pk, base)) {
    const m = /^ \((\d+)\)$/.exec(name.slice(base.length));
    if (m) max = Math.max(max, Number(m[1]));
  }
  return `${base} (${max + 1})`;
}

/** A JSON array of distinct id strings, 1..max long. */
export function idList(body: unknown, what: string, max: number): string[] {
  if (!Array.isArray(body)) throw invalid([{ in: 'body', name: '', detail: `The body must be a JSON array of ${what} ids (strings)` }]);
  if (body.length === 0) throw invalid([{ in: 'body', name: '', detail: `The body lists no ${what} ids; give at least one` }]);
  if (body.length > max) {
    throw new ApiError('payload-too-large', `The body lists ${body.length} ${what} ids; at most ${max} per request are accepted`);
  }
  const errors = body.flatMap((x, i) =>
    typeof x === 'string' || (typeof x === 'number' && Number.isSafeInteger(x))
      ? [] : [{ in: 'body' as const, name: `/${i}`, detail: `Entry ${i} must be a ${what} id (a string); got ${JSON.stringify(x)}` }]);
  if (errors.length) throw invalid(errors);
  return [...new Set(body.map(String))];
}
