// The list query of §4.1 (range, sort, filter) for every list endpoint: what each accepts, decoded and encoded.
import {
  ANSWER_TYPES, CAMPAIGN_STATES, CAMPAIGN_TYPES, DIALER_MODES, END_TYPES, NUMBER_DETAIL_STATUSES, NUMBER_STATUSES,
  OUTCOMES, RING_RESULTS,
} from './enums.ts';
import type { ListResource } from './content-range.ts';
import { listing, type FieldError } from './problems.ts';
import { parseTimestamp, type ParsedTimestamp } from './timestamps.ts';

export const DEFAULT_RANGE: readonly [number, number] = [0, 9];
/** Largest page the server returns; a larger range is a 400 rather than a silently short page. */
export const MAX_PAGE_SIZE = 10_000;
/** Page size the spec advises for reading everything ("up to a few hundred"). */
export const RECOMMENDED_PAGE_SIZE = 200;

export type CompareOp = 'gte' | 'gt' | 'lte' | 'lt';
export const COMPARE_OPS: readonly CompareOp[] = ['gte', 'gt', 'lte', 'lt'];

/** How one filter key is read. `field` is the record field it constrains. */
export type FilterKey =
  | { field: string; kind: 'text'; match: 'eq' | 'contains' | 'prefix' }
  | { field: string; kind: 'enum'; values: readonly string[] }
  | { field: string; kind: 'integer'; op: 'eq' | CompareOp }
  | { field: string; kind: 'timestamp'; op: CompareOp; local: boolean }
  | { field: string; kind: 'boolean' }
  | { field: string; kind: 'ids' }
  | { field: string; kind: 'overlaps' }
  | { field: string; kind: 'callflow' }
  | { field: string; kind: 'object'; keys: Record<string, FilterKey> };

export type Condition =
  | { field: string; op: 'eq'; value: string | number | boolean }
  | { field: string; op: 'in' | 'overlaps'; value: string[] }
  | { field: string; op: 'contains' | 'prefix' | 'callflow'; value: string }
  | { field: string; op: CompareOp; value: number }
  | { field: string; op: CompareOp; value: ParsedTimestamp; local: boolean };

export interface ListSpec {
  resource: ListResource;
  /** The endpoint's own filter keys; every list also takes ID_FILTERS. */
  filters: Record<string, FilterKey>;
  sortFields: readonly string[];
  /** Accepted other names: `status` for `state` (the open point of §4.2). */
  aliases: Record<string, string>;
}

/** The records a list holds, as problem details name them. */
const RECORDS: Record<ListResource, string> = {
  campaigns: 'campaigns', numbers: 'numbers', callDetails: 'call-detail records', numberDetails: 'number-detail records',
};

/** Selects records by id: one id or an array of them. */
const BY_ID: FilterKey = { field: 'id', kind: 'ids' };

/**
 * Filter keys of every list: every record has an id, and react-admin's getMany sends `{"id": [...]}` to any resource.
 * A spec's `filters` hold what its endpoint adds; campaigns list `ids` there too, the key the spec names for them.
 */
export const ID_FILTERS: Readonly<Record<'id' | 'ids', FilterKey>> = { id: BY_ID, ids: BY_ID };

function compared(field: string, kind: 'integer' | 'timestamp', local = false): Record<string, FilterKey> {
  const out: Record<string, FilterKey> = {};
  for (const op of COMPARE_OPS) {
    out[`${field}_${op}`] = kind === 'integer' ? { field, kind, op } : { field, kind, op, local };
  }
  return out;
}

const text = (field: string, match: 'eq' | 'contains' | 'prefix' = 'eq'): FilterKey => ({ field, kind: 'text', match });
const oneOf = (field: string, values: readonly string[]): FilterKey => ({ field, kind: 'enum', values });

const dialerMode = oneOf('dialer.mode', DIALER_MODES);
const humanCallflow = text('callBehavior.humanAnswerCallflowId');
const machineCallflow = text('callBehavior.answeringMachineCallflowId');

export const LIST_SPECS = {
  campaigns: {
    resource: 'campaigns',
    filters: {
      ids: BY_ID,
      name: text('name'),
      phoneSystemId: text('phoneSystemId'),
      extensionId: text('extensionId'),
      dialer: { field: 'dialer', kind: 'object', keys: { mode: dialerMode } },
      'dialer.mode': dialerMode,
      tagIds_ovl: { field: 'tagIds', kind: 'overlaps' },
      state: oneOf('state', CAMPAIGN_STATES),
      type: oneOf('type', CAMPAIGN_TYPES),
      ...compared('startDate', 'timestamp'),
      ...compared('endDate', 'timestamp'),
      ...compared('startedAt', 'timestamp'),
      ...compared('endedAt', 'timestamp'),
      callflowIds_ctn: { field: 'callflowIds', kind: 'callflow' },
      callBehavior: {
        field: 'callBehavior', kind: 'object',
        keys: { humanAnswerCallflowId: humanCallflow, answeringMachineCallflowId: machineCallflow },
      },
      'callBehavior.humanAnswerCallflowId': humanCallflow,
      'callBehavior.answeringMachineCallflowId': machineCallflow,
      webhookEndpointId: text('webhookEndpointId'),
      isArchived: { field: 'isArchived', kind: 'boolean' },
    },
    sortFields: ['name', 'state', 'type', 'startDate', 'endDate', 'numbersCount', 'startedAt', 'endedAt'],
    aliases: { status: 'state' },
  },
  numbers: {
    resource: 'numbers',
    filters: {
      number: text('number', 'contains'),
      status: oneOf('status', NUMBER_STATUSES),
      ...compared('attempts', 'integer'),
    },
    sortFields: ['number', 'attempts'],
    aliases: {},
  },
  callDetails: {
    resource: 'callDetails',
    filters: {
      number: text('number'),
      numberPrefix: text('number', 'prefix'),
      attempt: { field: 'attempt', kind: 'integer', op: 'eq' },
      ...compared('attempt', 'integer'),
      ...compared('startedAtLocal', 'timestamp', true),
      ...compared('answeredAtLocal', 'timestamp', true),
      ...compared('endedAtLocal', 'timestamp', true),
      ringResult: oneOf('ringResult', RING_RESULTS),
      answerType: oneOf('answerType', ANSWER_TYPES),
      sipResponseCode: { field: 'sipResponseCode', kind: 'integer', op: 'eq' },
      endType: oneOf('endType', END_TYPES),
      queueId: text('queueId'),
      outcome: oneOf('outcome', OUTCOMES),
    },
    sortFields: [
      'number', 'attempt', 'startedAtLocal', 'answeredAtLocal', 'endedAtLocal', 'ringResult', 'answerType',
      'sipResponseCode', 'endType', 'outcome',
    ],
    aliases: {},
  },
  numberDetails: {
    resource: 'numberDetails',
    filters: {
      number: text('number'),
      ...compared('attempts', 'integer'),
      status: oneOf('status', NUMBER_DETAIL_STATUSES),
    },
    sortFields: ['number', 'attempts'],
    aliases: {},
  },
} as const satisfies Record<ListResource, ListSpec>;

export type SortDirection = 'ASC' | 'DESC';

export interface ListQuery {
  range: [number, number];
  sort: { field: string; direction: SortDirection } | null;
  conditions: Condition[];
}

export type Decoded<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

const MAX_TEXT = 256;
const MAX_LIST = 1000;

/** Reads `range`, `sort` and `filter` from already url-decoded parameters. */
export function decodeListQuery(spec: ListSpec, params: Record<string, string | undefined>): Decoded<ListQuery> {
  const errors: FieldError[] = [];
  const range = decodeRange(params.range, errors);
  const sort = decodeSort(spec, params.sort, errors);
  const conditions = decodeFilter(spec, params.filter, errors);
  if (errors.length) return { ok: false, errors };
  return { ok: true, value: { range: range!, sort, conditions } };
}

function parseJson(name: string, raw: string, errors: FieldError[]): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch {
    errors.push({ in: 'query', name, detail: `The ${name} parameter must be URL-encoded JSON; got ${quote(raw)}` });
    return { ok: false };
  }
}

function decodeRange(raw: string | undefined, errors: FieldError[]): [number, number] | null {
  if (raw === undefined) return [DEFAULT_RANGE[0], DEFAULT_RANGE[1]];
  const parsed = parseJson('range', raw, errors);
  if (!parsed.ok) return null;
  const v = parsed.value;
  const bad = (detail: string) => (errors.push({ in: 'query', name: 'range', detail }), null);
  if (!Array.isArray(v) || v.length !== 2) {
    return bad(`The range parameter must be a JSON array of exactly two integers [first, last]; got ${quote(raw)}`);
  }
  const [first, last] = v as unknown[];
  if (!isNonNegativeInt(first) || !isNonNegativeInt(last)) return bad(`The range parameter must hold two non-negative integers; got ${quote(raw)}`);
  if (first > last) return bad(`The range's first index (${first}) must not be greater than its last (${last})`);
  if (last - first + 1 > MAX_PAGE_SIZE) return bad(`The range asks for ${last - first + 1} records; a page holds at most ${MAX_PAGE_SIZE}`);
  return [first, last];
}

function decodeSort(spec: ListSpec, raw: string | undefined, errors: FieldError[]): ListQuery['sort'] {
  if (raw === undefined) return null;
  const parsed = parseJson('sort', raw, errors);
  if (!parsed.ok) return null;
  const v = parsed.value;
  if (!Array.isArray(v) || v.length < 1 || v.length > 2 || typeof v[0] !== 'string') {
    errors.push({ in: 'query', name: 'sort', detail: `The sort parameter must be a JSON array [field, "ASC" or "DESC"]; got ${quote(raw)}` });
    return null;
  }
  const field = spec.aliases[v[0]] ?? v[0];
  if (!spec.sortFields.includes(field)) {
    errors.push({
      in: 'query', name: 'sort',
      detail: `${capitalized(RECORDS[spec.resource])} cannot be sorted by ${quote(v[0])}; the sort fields are ${listing(spec.sortFields, 'and')}`,
    });
    return null;
  }
  const dir = v.length === 2 ? v[1] : 'ASC';
  if (typeof dir !== 'string' || !['ASC', 'DESC'].includes(dir.toUpperCase())) {
    errors.push({ in: 'query', name: 'sort', detail: `The sort direction must be "ASC" or "DESC"; got ${shown(dir)}` });
    return null;
  }
  return { field, direction: dir.toUpperCase() as SortDirection };
}

function decodeFilter(spec: ListSpec, raw: string | undefined, errors: FieldError[]): Condition[] {
  if (raw === undefined) return [];
  const parsed = parseJson('filter', raw, errors);
  if (!parsed.ok) return [];
  const v = parsed.value;
  if (!isPlainObject(v)) {
    errors.push({ in: 'query', name: 'filter', detail: `The filter parameter must be a JSON object; got ${quote(raw)}` });
    return [];
  }
  const filters: Record<string, FilterKey> = { ...spec.filters, ...ID_FILTERS };
  const out: Condition[] = [];
  for (const [rawKey, value] of Object.entries(v)) {
    const def = filters[aliasKey(spec, rawKey)];
    if (!def) {
      errors.push({
        in: 'query', name: `filter.${rawKey}`,
        detail: `Unknown filter key ${quote(rawKey)} for ${RECORDS[spec.resource]}; the keys are ${listing(Object.keys(filters), 'and', Infinity)}`,
      });
      continue;
    }
    decodeKey(def, rawKey, value, out, errors);
  }
  return out;
}

/** `status` → `state`, `status_x` stays unknown: aliases rename whole keys only. */
function aliasKey(spec: ListSpec, key: string): string {
  return spec.aliases[key] ?? key;
}

/** Decodes the filter key `key` (a dotted path inside nested objects: `dialer.mode`). */
function decodeKey(def: FilterKey, key: string, value: unknown, out: Condition[], errors: FieldError[]): void {
  const bad = (problem: string) => { errors.push({ in: 'query', name: `filter.${key}`, detail: `Filter ${quote(key)} ${problem}` }); };
  const got = `; got ${shown(value)}`;
  switch (def.kind) {
    case 'text':
      if (typeof value !== 'string' || value.length > MAX_TEXT) return bad(`must be a string of at most ${MAX_TEXT} characters${got}`);
      out.push(def.match === 'eq' ? { field: def.field, op: 'eq', value } : { field: def.field, op: def.match, value });
      return;
    case 'callflow':
      if (typeof value !== 'string' || value.length > MAX_TEXT) return bad(`must be one call flow id (a string)${got}`);
      out.push({ field: def.field, op: 'callflow', value });
      return;
    case 'enum': {
      const list = Array.isArray(value) ? value : [value];
      const wrong = list.filter((x) => typeof x !== 'string' || !def.values.includes(x));
      if (list.length === 0 || wrong.length) return bad(`must be ${listing(def.values, 'or')} (or an array of them)${got}`);
      out.push(Array.isArray(value)
        ? { field: def.field, op: 'in', value: [...new Set(list as string[])] }
        : { field: def.field, op: 'eq', value: value as string });
      return;
    }
    case 'integer': {
      const n = typeof value === 'string' && /^-?\d{1,15}$/.test(value) ? Number(value) : value;
      if (typeof n !== 'number' || !Number.isSafeInteger(n)) return bad(`must be an integer${got}`);
      out.push(def.op === 'eq' ? { field: def.field, op: 'eq', value: n } : { field: def.field, op: def.op, value: n });
      return;
    }
    case 'timestamp': {
      const t = typeof value === 'string' ? parseTimestamp(value) : null;
      if (!t) return bad(`must be a timestamp YYYY-MM-DDTHH:MM:SS${got}`);
      out.push({ field: def.field, op: def.op, value: t, local: def.local });
      return;
    }
    case 'boolean': {
      const b = value === 'true' ? true : value === 'false' ? false : value;
      if (typeof b !== 'boolean') return bad(`must be true or false${got}`);
      out.push({ field: def.field, op: 'eq', value: b });
      return;
    }
    case 'ids': {
      // One id or an array; ids are strings, but a client holding numeric ids may send them as numbers.
      const list = Array.isArray(value) ? value : [value];
      const isId = (x: unknown) => (typeof x === 'string' && x.length <= MAX_TEXT) || (typeof x === 'number' && Number.isSafeInteger(x));
      if (list.length > MAX_LIST || !list.every(isId)) return bad(`must be one id or an array of at most ${MAX_LIST} ids${got}`);
      out.push({ field: def.field, op: 'in', value: [...new Set(list.map(String))] });
      return;
    }
    case 'overlaps': {
      if (!Array.isArray(value) || value.length > MAX_LIST || value.some((x) => typeof x !== 'string' || x.length > MAX_TEXT)) {
        return bad(`must be an array of at most ${MAX_LIST} strings${got}`);
      }
      out.push({ field: def.field, op: 'overlaps', value: value as string[] });
      return;
    }
    case 'object': {
      const keys = Object.keys(def.keys);
      if (!isPlainObject(value) || Object.keys(value).length === 0) return bad(`must be an object with ${listing(keys, 'or')}${got}`);
      for (const [k, sub] of Object.entries(value)) {
        const subDef = def.keys[k];
        if (!subDef) { bad(`takes only ${listing(keys, 'or')}; got the key ${quote(k)}`); continue; }
        decodeKey(subDef, `${key}.${k}`, sub, out, errors);
      }
      return;
    }
  }
}

export interface ListRequest {
  range?: [number, number];
  sort?: [string, SortDirection];
  filter?: Record<string, unknown>;
}

/** The query string parameters of a list request, as clients (nodes, daemon) send them. */
export function encodeListQuery(request: ListRequest): URLSearchParams {
  const params = new URLSearchParams();
  if (request.range) params.set('range', JSON.stringify(request.range));
  if (request.sort) params.set('sort', JSON.stringify(request.sort));
  if (request.filter && Object.keys(request.filter).length) params.set('filter', JSON.stringify(request.filter));
  return params;
}

function isNonNegativeInt(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}

export function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function quote(s: string): string {
  return JSON.stringify(s.length > 80 ? s.slice(0, 80) + '…' : s);
}

/** A JSON value as a detail shows it: at most 80 characters. */
function shown(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 80 ? `${json.slice(0, 80)}…` : json;
}

function capitalized(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
