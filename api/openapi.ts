// Generates the OpenAPI 3.1 document of the v1 API from the contract: API_OPERATIONS, LIST_SPECS, SCHEMAS, PROBLEMS, ROLE_OPERATIONS.
import { ROLE_OPERATIONS, ROLES, type Operation, type Role } from './enums.ts';
import { DEFAULT_RANGE, ID_FILTERS, LIST_SPECS, MAX_PAGE_SIZE, RECOMMENDED_PAGE_SIZE, type FilterKey, type ListSpec } from './list-query.ts';
import {
  API_OPERATIONS, PATH_PARAMETERS, type ApiOperation, type BodySpec, type DocumentLimits, type ParameterSpec, type ProblemAnswer,
} from './operations.ts';
import { PROBLEMS, type ProblemKind } from './problems.ts';
import { SCHEMAS, schemaRef, type Schema } from './schemas.ts';

/** A JSON object of the document. */
export type Json = { [key: string]: unknown };

export interface OpenApiDocument {
  openapi: string;
  info: Json;
  tags: Json[];
  paths: Record<string, Record<string, Json>>;
  components: Json;
  security: Json[];
}

export interface DocumentOptions {
  /** The server's limits; without them the document states none. */
  limits?: DocumentLimits;
  /** The server's rate limit: tokens per second and bucket size. */
  rateLimit?: { rate: number; burst: number };
}

export const OPENAPI_PATH = '/v1/openapi.json';

const PROBLEM_JSON = 'application/problem+json';
const RATE_HEADERS = ['RateLimit', 'RateLimit-Policy'] as const;
const LIST_HEADERS = ['X-Total-Count', 'Content-Range'] as const;

/**
 * Response headers, by name as the server sends them (server/rate-limit.ts, server/http.ts, server/auth.ts). Each is
 * always sent with the responses that name it, hence `required` here (a `$ref` cannot carry it).
 */
const HEADERS: Record<string, Json> = Object.fromEntries(Object.entries({
  'X-Total-Count': { description: 'Records matching the filter across all pages', schema: { type: 'integer', minimum: 0 } },
  'Content-Range': {
    description: '`<resource> <first>-<last>/<total>`; `<resource> 0-0/0` when nothing matches; `<resource> */<total>` for a page past the end',
    schema: { type: 'string', pattern: '^(campaigns|numbers|callDetails|numberDetails) (\\d+-\\d+|\\*)/\\d+$', examples: ['campaigns 0-9/42'] },
  },
  RateLimit: {
    description: 'IETF draft (-10): requests left in the bucket (r) and seconds until it is full (t)',
    schema: { type: 'string', pattern: '^"[^"]+";r=\\d+;t=\\d+$', examples: ['"default";r=49;t=1'] },
  },
  'RateLimit-Policy': {
    description: 'IETF draft (-10): bucket size (q) and seconds to refill it (w)',
    schema: { type: 'string', pattern: '^"[^"]+";q=\\d+;w=\\d+$', examples: ['"default";q=50;w=5'] },
  },
  'Retry-After': { description: 'Seconds until a request will be accepted again', schema: { type: 'integer', minimum: 1 } },
  'WWW-Authenticate': { description: 'The scheme to authenticate with', schema: { type: 'string', pattern: '^Bearer\\b' } },
}).map(([name, header]) => [name, { ...header, required: true }]));

/** Failures every operation can answer (auth, parameters and rate limits: every operation that needs a key). */
function sharedProblems(op: ApiOperation, limits: DocumentLimits | undefined): ProblemAnswer[] {
  const key = op.operation !== null;
  const size = limits ? ` (JSON bodies: ${limits.jsonBodyBytes} bytes; url-encoded GET bodies: ${limits.getBodyBytes} bytes)` : '';
  const depth = limits ? ` more than ${limits.jsonDepth} deep` : ' too deep';
  return [
    ...(key ? [{
      kind: 'invalid-request',
      when: `a parameter is unknown, given twice, malformed or not valid percent-encoded UTF-8, or a JSON body is not valid JSON or nests arrays and objects${depth}`,
    } as const] : []),
    ...(op.list ? [{ kind: 'invalid-request', when: '`range`, `sort` or `filter` is malformed or names a field this list does not have (`errors` names each)' } as const] : []),
    ...(key ? [
      { kind: 'unauthorized', when: 'the Authorization header is missing or not `Bearer <token>`, or the token is malformed, unknown or expired' },
      {
        kind: 'forbidden',
        when: 'the key was deleted, belongs to another account (or the account does not exist), has no role that allows the operation, or is a number role restricted to other campaigns',
      },
    ] as const : []),
    { kind: 'payload-too-large', when: `the body is too large${size}` },
    ...(op.path.includes('{') ? [{ kind: 'uri-too-long', when: `a path parameter is longer than ${limits ? `${limits.pathParameterChars} characters` : 'allowed'}` } as const] : []),
    { kind: 'unsupported-media-type', when: 'the body\'s media type is not accepted here (a GET body must be application/x-www-form-urlencoded)' },
    ...(key ? [{ kind: 'rate-limited', when: 'the rate limit of the key (of the client address, without a valid key) is used up' } as const] : []),
    {
      kind: 'header-fields-too-large',
      when: `the request line and headers are larger than ${limits ? `${limits.headerBytes} bytes` : 'allowed'} (send long list parameters in a GET body); no \`instance\``,
    },
    { kind: 'internal', when: 'the server failed; never caused by input (logged)' },
  ];
}

export function openApiDocument(options: DocumentOptions = {}): OpenApiDocument {
  const paths: Record<string, Record<string, Json>> = {};
  for (const op of API_OPERATIONS) {
    (paths[op.path] ??= {})[op.method.toLowerCase()] = operationObject(op, options);
  }
  const rate = options.rateLimit
    ? ` This server allows ${options.rateLimit.rate} requests per second with bursts of ${options.rateLimit.burst}, per key.` : '';
  return {
    openapi: '3.1.0',
    info: {
      title: 'Campaign Dialing API',
      version: '1',
      summary: 'Campaigns, their numbers and their reports',
      description: [
        'The Campaign Dialing API as this reference server implements it: every endpoint of its specification, with the choices the specification leaves open made (docs/api.md in the repository says which).',
        'Every request but this document\'s needs `Authorization: Bearer <API token>`; a key\'s roles decide what it may do (each operation lists them).',
        'Lists take `range` (`[first,last]`, zero-based, inclusive), `sort` (`[field, "ASC"|"DESC"]`) and `filter` (a JSON object), each url-encoded JSON in the query string or in a url-encoded GET body, and answer a bare array with `X-Total-Count` and `Content-Range`.',
        `Failures are \`${PROBLEM_JSON}\` (RFC 9457) with \`errors\` naming each bad input. A path below asked with a method it does not list answers 405 with \`Allow\`; an unknown path, 404.`,
        `Every response to a request that needs a key carries \`RateLimit\` and \`RateLimit-Policy\`; past the limit the answer is 429 with \`Retry-After\`.${rate}`,
        'This document is generated from the contract in the repository\'s api/ folder (api/operations.ts, api/list-query.ts, api/schemas.ts, api/problems.ts), the same code the server and its clients use.',
      ].join('\n\n'),
    },
    tags: [
      { name: 'Campaigns', description: 'List, duplicate, change the state of and delete campaigns' },
      { name: 'Numbers', description: 'List, add (JSON or CSV) and delete the numbers of a campaign' },
      { name: 'Reports', description: 'Call-details and number-details reports of a campaign' },
      { name: 'Documentation', description: 'This document' },
    ],
    paths,
    components: {
      schemas: SCHEMAS,
      parameters: Object.fromEntries(Object.entries(PATH_PARAMETERS).map(([name, description]) =>
        [name, { name, in: 'path', required: true, description, schema: { type: 'string', minLength: 1 } }])),
      headers: HEADERS,
      securitySchemes: {
        bearerAuth: {
          type: 'http', scheme: 'bearer', bearerFormat: 'cdk_ followed by 43 base64url characters',
          description: 'An API key\'s token, created in the console (shown once). Keys have roles; number roles may be restricted to campaigns.',
        },
      },
    },
    security: [{ bearerAuth: [] }],
  };
}

function operationObject(op: ApiOperation, options: DocumentOptions): Json {
  const limits = options.limits;
  const roles = op.operation ? rolesAllowing(op.operation) : [];
  const parameters: Json[] = [
    ...[...op.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ $ref: `#/components/parameters/${m[1]}` })),
    ...(op.list ? listParameters(LIST_SPECS[op.list.resource]) : []),
    ...(op.query ?? []).map((p) => queryParameter(p, limits)),
  ];
  const description = [
    op.description,
    op.operation ? `Roles: ${roles.join(', ')}.` : 'Public: no API key needed.',
    ...(limits ? limitNotes(op, limits) : []),
  ].join('\n\n');
  const out: Json = {
    operationId: op.operationId,
    summary: op.summary,
    description,
    tags: [op.tag],
    ...(parameters.length ? { parameters } : {}),
    ...(op.body ? { requestBody: requestBody(op.body, limits) } : op.list ? { requestBody: listBody(LIST_SPECS[op.list.resource]) } : {}),
    responses: responses(op, options),
    ...(op.operation ? { 'x-operation': op.operation, 'x-roles': roles } : { security: [] }),
  };
  return out;
}

function limitNotes(op: ApiOperation, limits: DocumentLimits): string[] {
  const notes: string[] = [];
  if (op.body?.itemLimit) notes.push(`At most ${limits[op.body.itemLimit]} entries per request.`);
  if (op.limitNote) notes.push(op.limitNote(limits));
  if ([...(op.query ?? [])].some((p) => p.limit === 'variables')) notes.push(`At most ${limits.variables} variables.`);
  return notes;
}

function rolesAllowing(op: Operation): Role[] {
  return ROLES.filter((r) => ROLE_OPERATIONS[r].includes(op));
}

function limited(p: ParameterSpec, limits: DocumentLimits | undefined): Schema {
  if (!p.limit || !limits) return p.schema;
  return p.schema.type === 'array' ? { ...p.schema, maxItems: limits[p.limit] } : { ...p.schema, maximum: limits[p.limit] };
}

function queryParameter(p: ParameterSpec, limits: DocumentLimits | undefined): Json {
  const schema = limited(p, limits);
  return p.json
    ? { name: p.name, in: 'query', required: false, description: `${p.description} (url-encoded JSON)`, content: { 'application/json': { schema } } }
    : { name: p.name, in: 'query', required: false, description: p.description, schema };
}

// ---------------------------------------------------------------------------------------------
// Lists (§4.1): range, sort and filter as LIST_SPECS reads them.

const RANGE_SCHEMA: Schema = {
  type: 'array', minItems: 2, maxItems: 2, items: { type: 'integer', minimum: 0 },
  default: [...DEFAULT_RANGE], examples: [[0, RECOMMENDED_PAGE_SIZE - 1]],
};

function rangeDescription(): string {
  return `\`[first,last]\`, zero-based, both inclusive, first <= last; default [${DEFAULT_RANGE.join(',')}]. `
    + `At most ${MAX_PAGE_SIZE} records per page (${RECOMMENDED_PAGE_SIZE} recommended); a page past the end is an empty array.`;
}

function sortSchema(spec: ListSpec): Schema {
  const fields = [...spec.sortFields, ...Object.keys(spec.aliases).filter((a) => spec.sortFields.includes(spec.aliases[a]!))];
  return {
    // `items` only satisfies tools that want one on every array: maxItems leaves nothing after the two prefix items.
    type: 'array', minItems: 1, maxItems: 2, items: { type: 'string' },
    prefixItems: [
      { type: 'string', enum: fields, description: 'Field' },
      { type: 'string', pattern: '^([Aa][Ss][Cc]|[Dd][Ee][Ss][Cc])$', default: 'ASC', description: 'ASC or DESC (any case); default ASC' },
    ],
    examples: [[spec.sortFields[0], 'ASC']],
  };
}

function sortDescription(spec: ListSpec): string {
  const aliases = Object.entries(spec.aliases).filter(([, to]) => spec.sortFields.includes(to));
  return `\`[field, direction]\`; fields: ${spec.sortFields.join(', ')}${aliases.map(([a, to]) => ` (${a} is read as ${to})`).join('')}. `
    + 'Ties are broken by record id, so pages stay consistent.';
}

/** The keys a list's filter takes: its own and the id keys every list has. */
export function filterKeys(spec: ListSpec): Record<string, FilterKey> {
  return { ...spec.filters, ...ID_FILTERS };
}

/** `filter` as a JSON object schema: one property per filter key (suffixed keys included), aliases too. */
export function filterSchema(spec: ListSpec): Schema {
  const filters = filterKeys(spec);
  const properties: Record<string, Schema> = {};
  for (const [key, def] of Object.entries(filters)) properties[key] = filterKeySchema(def);
  for (const [alias, to] of Object.entries(spec.aliases)) {
    const def = filters[to];
    if (def) properties[alias] = { ...filterKeySchema(def), description: `Alias of \`${to}\`` };
  }
  return { type: 'object', additionalProperties: false, properties, description: 'Keys AND together' };
}

const OP_TEXT = { eq: 'equals', gte: '>=', gt: '>', lte: '<=', lt: '<' } as const;

function filterKeySchema(def: FilterKey): Schema {
  switch (def.kind) {
    case 'text': {
      const how = { eq: 'equals the value', contains: 'contains the value (partial lookup: the digits given appear in it)', prefix: 'starts with the value' }[def.match];
      return { type: 'string', description: `${def.field} ${how}` };
    }
    case 'enum':
      return {
        description: `${def.field} is the value, or any of the values of an array`,
        oneOf: [{ type: 'string', enum: [...def.values] }, { type: 'array', minItems: 1, items: { type: 'string', enum: [...def.values] } }],
      };
    case 'integer':
      return {
        description: `${def.field} ${OP_TEXT[def.op]} the value (a string of digits is read as the integer)`,
        anyOf: [{ type: 'integer' }, { type: 'string', pattern: '^-?\\d{1,15}$' }],
      };
    case 'timestamp':
      return {
        type: 'string', examples: ['2026-01-05T00:00:00'],
        description: `${def.field} ${OP_TEXT[def.op]} the timestamp \`YYYY-MM-DDTHH:MM:SS\` (also compact \`YYYYMMDDTHHMMSS\`, or a date alone: its midnight). `
          + `Without a zone it is ${def.local ? 'the account\'s local time' : 'UTC'}; with \`Z\` or an offset it names an instant.`,
      };
    case 'boolean':
      return { description: `${def.field} is the value`, anyOf: [{ type: 'boolean' }, { type: 'string', enum: ['true', 'false'] }] };
    case 'ids': {
      // Ids are strings; a client holding numeric ids may send them as numbers.
      const id = { type: ['string', 'integer'] };
      return { description: `${def.field} is the id, or one of the ids of an array`, anyOf: [id, { type: 'array', items: id }] };
    }
    case 'overlaps':
      return { type: 'array', items: { type: 'string' }, description: `${def.field} shares at least one element with the array` };
    case 'callflow':
      return { type: 'string', description: 'The campaign uses this call flow (as human-answer or answering-machine call flow, or in callflowIds)' };
    case 'object':
      return {
        type: 'object', minProperties: 1, additionalProperties: false, description: `${def.field}: nested keys`,
        properties: Object.fromEntries(Object.entries(def.keys).map(([k, sub]) => [k, filterKeySchema(sub)])),
      };
    default: {
      const unknown: never = def;
      throw new Error(`no schema for filter key ${JSON.stringify(unknown)}`);
    }
  }
}

function listParameters(spec: ListSpec): Json[] {
  const json = (name: string, description: string, schema: Schema): Json =>
    ({ name, in: 'query', required: false, description: `${description} (url-encoded JSON)`, content: { 'application/json': { schema } } });
  return [
    json('range', rangeDescription(), RANGE_SCHEMA),
    json('sort', sortDescription(spec), sortSchema(spec)),
    json('filter', `Keys: ${Object.keys(filterKeys(spec)).join(', ')}. Unknown keys are a 400.`, filterSchema(spec)),
  ];
}

/** curl --data-urlencode without --get: the list parameters in a GET body. */
function listBody(spec: ListSpec): Json {
  return {
    required: false,
    description: 'The list parameters may instead come url-encoded in the body of the GET; the query string wins where both give one.',
    content: {
      'application/x-www-form-urlencoded': {
        schema: { type: 'object', additionalProperties: false, properties: { range: RANGE_SCHEMA, sort: sortSchema(spec), filter: filterSchema(spec) } },
        encoding: { range: { contentType: 'application/json' }, sort: { contentType: 'application/json' }, filter: { contentType: 'application/json' } },
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Bodies and responses.

function requestBody(body: BodySpec, limits: DocumentLimits | undefined): Json {
  const content: Record<string, Json> = {};
  for (const [type, media] of Object.entries(body.content)) {
    let schema: Schema = media.schema ?? { type: 'object', additionalProperties: false };
    if (body.itemLimit && limits) schema = capItems(schema, limits[body.itemLimit]);
    if (!media.params) { content[type] = { schema }; continue; }
    const fields = Object.fromEntries(media.params.map((p) => [p.name, { ...limited(p, limits), description: p.description }]));
    const json = media.params.filter((p) => p.json);
    content[type] = {
      schema: { ...schema, properties: { ...(schema.properties as Record<string, Schema> | undefined), ...fields } },
      ...(json.length ? { encoding: Object.fromEntries(json.map((p) => [p.name, { contentType: 'application/json' }])) } : {}),
    };
  }
  return { required: body.required, description: body.description, content };
}

/** maxItems on the array schema (or on the array alternative of a oneOf). */
function capItems(schema: Schema, max: number): Schema {
  if (schema.type === 'array') return { ...schema, maxItems: max };
  if (Array.isArray(schema.oneOf)) return { ...schema, oneOf: (schema.oneOf as Schema[]).map((s) => capItems(s, max)) };
  return schema;
}

function headerRefs(names: readonly string[]): Json {
  return Object.fromEntries(names.map((n) => [n, { $ref: `#/components/headers/${n}` }]));
}

function responses(op: ApiOperation, options: DocumentOptions): Json {
  const rateHeaders = op.operation ? RATE_HEADERS : [];
  const out: Record<string, Json> = {};
  const success = op.success;
  const successHeaders = [...(op.list ? LIST_HEADERS : []), ...rateHeaders];
  const schema = op.list ? { type: 'array', items: schemaRef(op.list.record) } : success.schema;
  out[String(success.status)] = {
    description: success.description,
    ...(successHeaders.length ? { headers: headerRefs(successHeaders) } : {}),
    ...(schema ? { content: { 'application/json': { schema } } } : {}),
  };

  const byStatus = new Map<number, ProblemAnswer[]>();
  for (const p of [...sharedProblems(op, options.limits), ...op.problems]) {
    const status = PROBLEMS[p.kind].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), p]);
  }
  for (const status of [...byStatus.keys()].sort((a, b) => a - b)) {
    const answers = byStatus.get(status)!;
    const kind: ProblemKind = answers[0]!.kind;
    const extensions = Object.assign({}, ...answers.map((a) => a.extensions ?? {})) as Record<string, Schema>;
    // Refused before the request is routed: no key was looked at, no rate-limit token taken.
    const beforeRouting = kind === 'uri-too-long' || kind === 'header-fields-too-large';
    const headers = [...(beforeRouting ? [] : rateHeaders), ...(kind === 'unauthorized' ? ['WWW-Authenticate'] : []), ...(kind === 'rate-limited' ? ['Retry-After'] : [])];
    out[String(status)] = {
      description: `${PROBLEMS[kind].title}: ${answers.map((a) => a.when).join('; or ')}.`,
      ...(headers.length ? { headers: headerRefs(headers) } : {}),
      content: {
        [PROBLEM_JSON]: {
          schema: Object.keys(extensions).length
            ? { allOf: [schemaRef('Problem'), { type: 'object', properties: extensions }] }
            : schemaRef('Problem'),
        },
      },
    };
  }
  return out;
}
