// The generated OpenAPI document on its own: valid OpenAPI 3.1, strict JSON Schema, and a faithful image of the contract in api/.
import { compileErrors, validate } from '@readme/openapi-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { OPERATIONS, ROLE_OPERATIONS, ROLES } from '../../api/enums.ts';
import { ID_FILTERS, LIST_SPECS, type ListSpec } from '../../api/list-query.ts';
import { openApiDocument, type Json } from '../../api/openapi.ts';
import { API_OPERATIONS } from '../../api/operations.ts';
import { PROBLEMS } from '../../api/problems.ts';
import { jsonSchemaValidator } from '../support/openapi.ts';

const LIMITS = {
  jsonBodyBytes: 4096, uploadBytes: 8192, numbersPerRequest: 5, idsPerDelete: 6, variables: 50, uploadRejectionsShown: 1000, getBodyBytes: 1024,
  jsonDepth: 7, pathParameterChars: 99, headerBytes: 2048,
};
const doc = openApiDocument({ limits: LIMITS, rateLimit: { rate: 10, burst: 50 } });

type Op = Json & { parameters?: Json[]; responses: Record<string, Json>; requestBody?: Json };
const operations = (): { path: string; method: string; op: Op }[] =>
  Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op: op as Op })));
const queryParameter = (op: Op, name: string): Json => op.parameters!.find((p) => p.name === name && p.in === 'query')!;
const jsonSchemaOf = (p: Json): Json => ((p.content as Json)['application/json'] as Json).schema as Json;

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1 (@readme/openapi-parser)', async () => {
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect(result.warnings).toEqual([]);
    expect(doc.openapi).toBe('3.1.0');
  });

  it('is strict JSON Schema 2020-12: every schema and every response compiles with ajv in strict mode', () => {
    const validator = jsonSchemaValidator(doc);
    let compiled = 0;
    for (const { op } of operations()) {
      for (const response of Object.values(op.responses)) {
        for (const media of Object.values((response.content ?? {}) as Record<string, Json>)) {
          validator.compile(media.schema as Json);
          compiled++;
        }
      }
    }
    expect(compiled).toBeGreaterThan(API_OPERATIONS.length * 5);
    // Request schemas too: a client may validate what it sends with them.
    // strictTuples off: sort is `[field]` or `[field, direction]`, a tuple whose last item is optional on purpose.
    const ajv = new Ajv2020({ strict: true, strictTuples: false, allowUnionTypes: true });
    let requests = 0;
    for (const { op } of operations()) {
      for (const p of op.parameters ?? []) if (p.in === 'query') ajv.compile((p.schema ?? jsonSchemaOf(p)) as Json);
      for (const media of Object.values((op.requestBody?.content ?? {}) as Record<string, Json>)) {
        ajv.compile(media.schema as Json);
        requests++;
      }
    }
    expect(requests).toBeGreaterThan(8);
  });

  it('holds every operation of the role table, once, with its roles and the bearer scheme', () => {
    expect(new Set(API_OPERATIONS.map((o) => o.operationId)).size).toBe(API_OPERATIONS.length);
    const named = new Set(API_OPERATIONS.map((o) => o.operation).filter((o) => o !== null));
    expect([...named].sort()).toEqual([...OPERATIONS].sort());
    for (const { op } of operations()) {
      const name = op['x-operation'] as string | undefined;
      if (!name) {
        expect(op.security).toEqual([]);
        continue;
      }
      expect(op['x-roles']).toEqual(ROLES.filter((r) => ROLE_OPERATIONS[r].includes(name as never)));
      expect(op.security).toBeUndefined();
    }
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    expect((doc.components.securitySchemes as Json).bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('describes each list\'s filter keys (suffixes and aliases included) as the filter object\'s properties, and its sort fields as an enum', () => {
    for (const o of API_OPERATIONS.filter((x) => x.list)) {
      const spec: ListSpec = LIST_SPECS[o.list!.resource];
      const op = doc.paths[o.path]![o.method.toLowerCase()] as Op;
      const filter = jsonSchemaOf(queryParameter(op, 'filter'));
      const keys = { ...spec.filters, ...ID_FILTERS };
      const aliases = Object.keys(spec.aliases).filter((a) => spec.aliases[a]! in keys);
      expect(Object.keys(filter.properties as Json).sort()).toEqual([...Object.keys(keys), ...aliases].sort());
      expect(filter.properties).toHaveProperty('id');
      expect(filter.additionalProperties).toBe(false);
      const sort = jsonSchemaOf(queryParameter(op, 'sort'));
      const fields = ((sort.prefixItems as Json[])[0]!.enum as string[]);
      expect(fields.filter((f) => !(f in spec.aliases)).sort()).toEqual([...spec.sortFields].sort());
      expect(jsonSchemaOf(queryParameter(op, 'range'))).toMatchObject({ type: 'array', minItems: 2, maxItems: 2 });
      // The same parameters url-encoded in a GET body, each field JSON.
      const form = (op.requestBody!.content as Json)['application/x-www-form-urlencoded'] as Json;
      expect(Object.keys(form.encoding as Json).sort()).toEqual(['filter', 'range', 'sort']);
      expect(((form.schema as Json).properties as Json).filter).toEqual(filter);
    }
    // Suffixed keys are there one by one, with their kind's shape.
    const campaigns = doc.paths['/v1/accounts/{account_id}/campaigns']!.get as Op;
    const props = jsonSchemaOf(queryParameter(campaigns, 'filter')).properties as Record<string, Json>;
    expect(props.startDate_gte).toMatchObject({ type: 'string' });
    expect(props.endedAt_lt!.description).toContain('<');
    expect(props.tagIds_ovl).toMatchObject({ type: 'array' });
    expect(props.state!.oneOf).toHaveLength(2);
  });

  it('documents every problem status an operation can answer as problem+json, with the shared failures on every keyed operation', () => {
    for (const { op } of operations()) {
      const statuses = Object.keys(op.responses).map(Number);
      for (const status of statuses.filter((s) => s >= 400)) {
        const content = op.responses[String(status)]!.content as Json;
        expect(Object.keys(content), `${String(op.operationId)} ${status}`).toEqual(['application/problem+json']);
        expect(Object.values(PROBLEMS).map((p) => p.status)).toContain(status);
      }
      const keyed = op['x-operation'] !== undefined;
      expect(statuses).toEqual(expect.arrayContaining(keyed ? [400, 401, 403, 413, 414, 415, 429, 431, 500] : [413, 415, 431, 500]));
      // answered before routing, so without rate-limit headers; 414 wherever there is a path parameter
      for (const status of ['414', '431']) expect(op.responses[status]?.headers).toBeUndefined();
      if (keyed) expect(op.responses['429']!.headers).toHaveProperty('Retry-After');
    }
    // Headers are named by reference; the definitions say they are always sent.
    const headers = doc.components.headers as Record<string, Json>;
    expect(Object.keys(headers).sort()).toEqual(['Content-Range', 'RateLimit', 'RateLimit-Policy', 'Retry-After', 'WWW-Authenticate', 'X-Total-Count']);
    for (const header of Object.values(headers)) expect(header.required).toBe(true);
  });

  it('states the server\'s limits where they apply', () => {
    const add = doc.paths['/v1/accounts/{account_id}/campaigns/{campaign_id}/numbers']!.post as Op;
    const body = ((add.requestBody!.content as Json)['application/json'] as Json).schema as Json;
    expect((body.oneOf as Json[])[0]).toMatchObject({ type: 'array', maxItems: LIMITS.numbersPerRequest });
    expect(jsonSchemaOf(queryParameter(add, 'varNames'))).toMatchObject({ maxItems: LIMITS.variables });
    const upload = doc.paths['/v1/accounts/{account_id}/campaigns/{campaign_id}/numbers/upload']!.post as Op;
    expect(upload.description).toContain(String(LIMITS.uploadBytes));
    expect(add.responses['400']!.description).toContain(`nests arrays and objects more than ${LIMITS.jsonDepth} deep`);
    expect(add.responses['414']!.description).toBe(`URI too long: a path parameter is longer than ${LIMITS.pathParameterChars} characters.`);
    expect(add.responses['431']!.description).toContain(`larger than ${LIMITS.headerBytes} bytes`);
    const multipart = ((upload.requestBody!.content as Json)['multipart/form-data'] as Json).schema as Json;
    expect(Object.keys(multipart.properties as Json)).toEqual(['file', 'firstRowIsHeader', 'varCount']);
  });
});
