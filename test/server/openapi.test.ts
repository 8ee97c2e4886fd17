// The served OpenAPI document against the server itself: real requests to every operation, success and failure, each answer's
// status documented for its operation, its body valid against the documented schema, its documented headers present; and the
// routes fastify holds under /v1 are exactly the document's operations.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json, OpenApiDocument } from '../../api/openapi.ts';
import type { CampaignNumber } from '../../api/records.ts';
import {
  documentedOperations, jsonSchemaValidator, pathShape, registeredRoutes, type OperationObject, type SchemaValidator,
} from '../support/openapi.ts';
import {
  addNumbers, createAccount, createCampaign, createKey, phoneNumbers, rawRequest, setNumber, startServer, type TestServer,
} from '../support/server.ts';

const LIMITS = { jsonBodyBytes: 4096, numbersPerRequest: 5, idsPerDelete: 5, uploadBytes: 2048 };
const GET_BODY_BYTES = 1024 * 1024;

let s: TestServer;
let doc: OpenApiDocument;
let validator: SchemaValidator;
let byId: Map<string, { method: string; path: string; op: OperationObject }>;
/** Statuses each operation was seen to answer. */
const seen = new Map<string, Set<number>>();

let acc: string;
let admin: string;
let reader: string;
let provider: string;
let foreign: string;
/** Dynamic, Active, with numbers and calls. */
let dynamicId: string;
/** Static, Draft: takes no numbers. */
let staticId: string;
let numbers: CampaignNumber[];
let phone = 0;
const nextPhones = (n: number) => {
  phone += n;
  return phoneNumbers(n, 5000 + phone - n);
};

beforeAll(async () => {
  s = await startServer({ limits: LIMITS, seed: 3, clockStart: '2026-01-05T09:00:00Z' });
  const res = await fetch(`${s.url}/v1/openapi.json`);
  doc = await res.json() as OpenApiDocument;
  validator = jsonSchemaValidator(doc);
  byId = new Map(documentedOperations(doc).map((o) => [o.op.operationId, o]));
  acc = (await createAccount(s)).id;
  admin = await createKey(s, acc, ['CampaignAdmin']);
  reader = await createKey(s, acc, ['CampaignReader']);
  provider = await createKey(s, acc, ['CampaignNumberProvider']);
  const other = (await createAccount(s, 'Other')).id;
  foreign = await createKey(s, other, ['CampaignAdmin']);
  dynamicId = (await createCampaign(s, acc, { name: 'Dynamic', type: 'Dynamic', state: 'Active' })).id;
  staticId = (await createCampaign(s, acc, { name: 'Static', type: 'Static', state: 'Draft' })).id;
  await addNumbers(s, acc, dynamicId, nextPhones(8));
  await s.advance(1800);
  numbers = await (await s.request(`/v1/accounts/${acc}/campaigns/${dynamicId}/numbers?range=[0,99]`, { token: admin })).json() as CampaignNumber[];
});

afterAll(async () => {
  await s?.close();
});

// ---------------------------------------------------------------------------------------------
// One request to one documented operation, its answer checked against the document.

interface Call {
  /** Another server and its account; default: the fixture server and account. */
  on?: { url: string; account: string };
  /** Path placeholders; account_id defaults to the fixture account. */
  params?: Record<string, string>;
  /** Query parameters; non-strings are sent as JSON. */
  query?: Record<string, unknown>;
  token?: string;
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
}

interface Answer {
  status: number;
  body: any;
  headers: Headers | Record<string, string | string[] | undefined>;
}

function url(operationId: string, call: Call): { method: string; url: string } {
  const entry = byId.get(operationId);
  if (!entry) throw new Error(`the document has no operation ${operationId}`);
  const params = { account_id: call.on?.account ?? acc, ...call.params };
  const path = entry.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (!(name in params)) throw new Error(`${operationId}: no value for {${name}}`);
    return encodeURIComponent(params[name as keyof typeof params]!);
  });
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(call.query ?? {})) query.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  return { method: entry.method, url: `${call.on?.url ?? s.url}${path}${query.size ? `?${query}` : ''}` };
}

async function send(operationId: string, call: Call = {}): Promise<Answer> {
  const target = url(operationId, call);
  const headers = new Headers(call.headers);
  if (call.token) headers.set('authorization', `Bearer ${call.token}`);
  let body = call.body;
  if (call.json !== undefined) {
    headers.set('content-type', 'application/json');
    body = JSON.stringify(call.json);
  }
  const res = await fetch(target.url, { method: target.method, headers, body });
  return check(operationId, res.status, (name) => res.headers.get(name), await res.text(), res.headers);
}

/** A GET with a body: fetch refuses to send one, node:http does not. */
async function sendGetBody(operationId: string, call: Call & { contentType: string; text: string }): Promise<Answer> {
  const target = url(operationId, call);
  const res = await rawRequest(target.url, 'GET', {
    'content-type': call.contentType, ...(call.token ? { authorization: `Bearer ${call.token}` } : {}),
  }, call.text);
  const header = (name: string) => {
    const v = res.headers[name.toLowerCase()];
    return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
  };
  return check(operationId, res.status, header, res.text, res.headers);
}

function check(operationId: string, status: number, header: (name: string) => string | null, text: string, headers: Answer['headers']): Answer {
  const { op } = byId.get(operationId)!;
  const where = `${operationId} answered ${status} ${text.slice(0, 300)}`;
  const response = op.responses[String(status)];
  expect(response, `${where}: status not documented`).toBeDefined();
  (seen.get(operationId) ?? seen.set(operationId, new Set()).get(operationId)!).add(status);

  let body: unknown;
  if (response!.content) {
    const type = (header('content-type') ?? '').split(';')[0]!.trim();
    const media = response!.content[type];
    expect(media, `${where}: content type ${type} not documented (${Object.keys(response!.content).join(', ')})`).toBeDefined();
    body = JSON.parse(text);
    const validate = validator.compile(media!.schema as Json);
    expect(validate(body), `${where}: ${JSON.stringify(validate.errors)}`).toBe(true);
  } else {
    expect(text, `${where}: documented without a body`).toBe('');
  }

  for (const [name, ref] of Object.entries(response!.headers ?? {})) {
    const def = (ref.$ref ? (doc.components.headers as Record<string, Json>)[String(ref.$ref).split('/').pop()!] : ref) as Json;
    const value = header(name);
    if (def.required) expect(value, `${where}: header ${name} missing`).not.toBeNull();
    if (value === null) continue;
    const schema = def.schema as Json;
    const typed = schema.type === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value;
    const validate = validator.compile(schema);
    expect(validate(typed), `${where}: header ${name}: ${value}: ${JSON.stringify(validate.errors)}`).toBe(true);
  }
  return { status, body, headers };
}

async function expectStatus(status: number, answer: Promise<Answer>): Promise<Answer> {
  const a = await answer;
  expect(a.status, JSON.stringify(a.body)).toBe(status);
  return a;
}

const campaignsApi = () => `/v1/accounts/${acc}/campaigns`;
const draft = async (name = 'Draft') => (await createCampaign(s, acc, { name })).id;
const csvForm = (csv: string, field = 'file'): FormData => {
  const form = new FormData();
  form.append(field, new Blob([csv], { type: 'text/csv' }), 'numbers.csv');
  return form;
};
/** Numbers of the fixture campaign in a status, made so by hand (what the dialer would do). */
const numberIn = async (status: string): Promise<string> => {
  const [fresh] = (await addNumbers(s, acc, dynamicId, nextPhones(1))).created as CampaignNumber[];
  setNumber(s, fresh!.id, status, status === 'NotContacted' ? 0 : 1);
  return fresh!.id;
};

// ---------------------------------------------------------------------------------------------

describe('the document and the router', () => {
  it('hold the same /v1 operations: every route fastify registered is documented, every documented operation is a route', () => {
    const routes = registeredRoutes(s.app.printRoutes({ commonPrefix: false }));
    // The reading of printRoutes' tree is right: routes outside /v1 are there too, with their full paths.
    expect(routes).toContainEqual({ method: 'POST', path: '/console/accounts/:accountId/apiKeys' });
    expect(routes).toContainEqual({ method: 'GET', path: '/docs' });
    // HEAD routes are fastify's own copies of the GET routes (exposeHeadRoutes).
    const served = routes.filter((r) => r.path.startsWith('/v1/') && r.method !== 'HEAD').map((r) => `${r.method} ${pathShape(r.path)}`);
    const documented = documentedOperations(doc).map((o) => `${o.method} ${pathShape(o.path)}`);
    expect(served.length).toBeGreaterThan(10);
    expect(new Set(served)).toEqual(new Set(documented));
    expect(served).toHaveLength(new Set(served).size);
  });

  it('answers a documented path asked with another method 405, allowing exactly the documented methods', async () => {
    const validate = validator.compile({ $ref: '#/components/schemas/Problem' });
    const templates = documentedOperations(doc).map((o) => ({ ...o, pattern: new RegExp(`^${o.path.replace(/\{\w+\}/g, '[^/]+')}$`) }));
    for (const path of Object.keys(doc.paths)) {
      const concrete = path.replace(/\{\w+\}/g, 'x');
      const res = await fetch(s.url + concrete, { method: 'PATCH', headers: { authorization: `Bearer ${admin}` } });
      expect(res.status, path).toBe(405);
      // Every documented operation whose path matches (…/numbers/upload is also …/numbers/{number_id}).
      const allowed = new Set(templates.filter((t) => t.pattern.test(concrete)).map((t) => t.method));
      expect(new Set(res.headers.get('allow')!.split(', ')), path).toEqual(allowed);
      expect(validate(await res.json())).toBe(true);
    }
  });

  it('is the document api/ generates, served without a key and outside the rate limit', async () => {
    await expectStatus(200, send('getOpenApiDocument'));
    // A bad token does not matter here: the document is public.
    const a = await expectStatus(200, send('getOpenApiDocument', { headers: { authorization: 'Bearer nonsense' } }));
    expect(a.body.paths).toEqual(doc.paths);
    expect(a.body.openapi).toBe('3.1.0');
  });
});

describe('success answers', () => {
  it('listCampaigns: a page with its headers, from the query string or a url-encoded GET body', async () => {
    const a = await expectStatus(200, send('listCampaigns', {
      token: reader, query: { range: [0, 4], sort: ['name', 'DESC'], filter: { state: ['Active', 'Draft'], id: [dynamicId, staticId] } },
    }));
    expect(a.body.map((c: { id: string }) => c.id)).toEqual([staticId, dynamicId]);
    expect((a.headers as Headers).get('content-range')).toBe('campaigns 0-1/2');
    const b = await expectStatus(200, sendGetBody('listCampaigns', {
      token: admin, contentType: 'application/x-www-form-urlencoded',
      text: new URLSearchParams({ filter: JSON.stringify({ ids: [dynamicId] }) }).toString(),
    }));
    expect(b.body).toHaveLength(1);
  });

  it('duplicateCampaign: the copy, with parameters in the query string or a form body', async () => {
    const a = await expectStatus(201, send('duplicateCampaign', {
      token: admin, params: { campaign_id: dynamicId },
      query: { newCampaignName: 'Copy', includeNumbers: 'true', numbersFilter: { status: ['NotContacted', 'Success'] } },
    }));
    expect(a.body).toMatchObject({ name: 'Copy', state: 'Draft', type: 'Dynamic' });
    const b = await expectStatus(201, send('duplicateCampaign', {
      token: admin, params: { campaign_id: staticId },
      body: new URLSearchParams({ newCampaignName: 'Form copy', includeNumbers: 'false' }),
    }));
    expect(b.body).toMatchObject({ name: 'Form copy', numbersCount: 0 });
  });

  it('changeCampaignState: the campaign after the change (a JSON string, or text/plain)', async () => {
    const id = (await createCampaign(s, acc, { name: 'Toggle', type: 'Dynamic', state: 'Active' })).id;
    const a = await expectStatus(200, send('changeCampaignState', { token: admin, params: { campaign_id: id }, json: 'Paused' }));
    expect(a.body.state).toBe('Paused');
    const b = await expectStatus(200, send('changeCampaignState', {
      token: admin, params: { campaign_id: id }, body: 'Canceled', headers: { 'content-type': 'text/plain' },
    }));
    expect(b.body.state).toBe('Canceled');
  });

  it('deleteCampaign and deleteCampaigns: the deleted campaign; nothing for many', async () => {
    const one = await draft('Gone');
    const a = await expectStatus(200, send('deleteCampaign', { token: admin, params: { campaign_id: one } }));
    expect(a.body.id).toBe(one);
    await expectStatus(204, send('deleteCampaigns', { token: admin, json: [await draft(), await draft()] }));
  });

  it('listNumbers, listCallDetails, listNumberDetails: non-empty pages of each record', async () => {
    const campaign = { campaign_id: dynamicId };
    const n = await expectStatus(200, send('listNumbers', { token: admin, params: campaign, query: { sort: ['attempts', 'DESC'], filter: { attempts_gte: 0 } } }));
    expect(n.body.length).toBeGreaterThan(0);
    const c = await expectStatus(200, send('listCallDetails', { token: reader, params: campaign, query: { range: [0, 49], filter: { attempt_gte: 1 } } }));
    expect(c.body.length).toBeGreaterThan(0);
    const d = await expectStatus(200, send('listNumberDetails', { token: reader, params: campaign, query: { filter: { status: ['NotContacted', 'Success', 'Failure', 'RetryPending', 'Contacting', 'Deleted'] } } }));
    expect(d.body.length).toBeGreaterThan(0);
  });

  it('addNumbers: what was added and rejected, for an array or one entry', async () => {
    const [good] = nextPhones(1);
    const a = await expectStatus(201, send('addNumbers', {
      token: provider, params: { campaign_id: dynamicId }, query: { varNames: ['First'] },
      json: [{ number: good, varValues: ['Ann'] }, { number: 'not a number' }, { number: good }],
    }));
    expect(a.body.created).toHaveLength(1);
    expect(a.body.rejected.map((r: { code: string }) => r.code)).toEqual(['invalid_number', 'duplicate']);
    const b = await expectStatus(201, send('addNumbers', { token: admin, params: { campaign_id: dynamicId }, json: { number: nextPhones(1)[0] } }));
    expect(b.body.created).toHaveLength(1);
  });

  it('uploadNumbers: what the file gave', async () => {
    const csv = `phone,first\n${nextPhones(2).map((p, i) => `${p},N${i}`).join('\n')}\nnope,x\n`;
    const a = await expectStatus(201, send('uploadNumbers', {
      token: admin, params: { campaign_id: dynamicId }, query: { firstRowIsHeader: 'true', varCount: '1' }, body: csvForm(csv),
    }));
    expect(a.body).toMatchObject({ rows: 3, createdCount: 2, rejectedCount: 1, varNames: ['first'] });
  });

  it('deleteNumbers and deleteNumber: nothing for many; the deleted number for one', async () => {
    await expectStatus(204, send('deleteNumbers', { token: admin, params: { campaign_id: dynamicId }, json: [await numberIn('NotContacted'), await numberIn('RetryPending')] }));
    const id = await numberIn('NotContacted');
    const a = await expectStatus(200, send('deleteNumber', { token: admin, params: { campaign_id: dynamicId, number_id: id } }));
    expect(a.body).toMatchObject({ id, status: 'NotContacted' });
  });
});

describe('failures particular to an operation', () => {
  const c = () => ({ campaign_id: dynamicId });

  it('400: malformed list parameters, bodies and parameters', async () => {
    await expectStatus(400, send('listCampaigns', { token: admin, query: { range: [5, 1] } }));
    await expectStatus(400, send('listNumbers', { token: admin, params: c(), query: { filter: { nope: 1 } } }));
    await expectStatus(400, send('listCallDetails', { token: admin, params: c(), query: { sort: ['attempts', 'ASC'] } }));
    await expectStatus(400, send('listNumberDetails', { token: admin, params: c(), query: { filter: { status: 'Gone' } } }));
    await expectStatus(400, send('duplicateCampaign', { token: admin, params: c(), query: { numbersFilter: { status: [] } } }));
    await expectStatus(400, send('changeCampaignState', { token: admin, params: c(), json: 'Draft' }));
    await expectStatus(400, send('deleteCampaigns', { token: admin, json: { ids: [] } }));
    await expectStatus(400, send('addNumbers', { token: admin, params: c(), json: [{ number: 5 }] }));
    await expectStatus(400, send('uploadNumbers', { token: admin, params: c(), query: { varCount: '999' }, body: csvForm('+12125550100\n') }));
    await expectStatus(400, send('uploadNumbers', { token: admin, params: c(), body: csvForm('+12125550100\n', 'csv') }));
    await expectStatus(400, send('deleteNumbers', { token: admin, params: c(), json: [] }));
  });

  it('404: unknown campaigns and records', async () => {
    const gone = { campaign_id: 'no-such-campaign' };
    for (const op of ['duplicateCampaign', 'deleteCampaign', 'listNumbers', 'listCallDetails', 'listNumberDetails']) {
      await expectStatus(404, send(op, { token: admin, params: gone }));
    }
    await expectStatus(404, send('changeCampaignState', { token: admin, params: gone, json: 'Active' }));
    await expectStatus(404, send('addNumbers', { token: admin, params: gone, json: [{ number: '+12125550100' }] }));
    await expectStatus(404, send('uploadNumbers', { token: admin, params: gone, body: csvForm('+12125550100\n') }));
    const missing = await expectStatus(404, send('deleteCampaigns', { token: admin, json: [await draft(), 'no-such-campaign'] }));
    expect(missing.body.missingIds).toEqual(['no-such-campaign']);
    await expectStatus(404, send('deleteNumbers', { token: admin, params: c(), json: ['999999'] }));
    await expectStatus(404, send('deleteNumber', { token: admin, params: { ...c(), number_id: '999999' } }));
  });

  it('409: states that forbid the operation', async () => {
    const finished = (await createCampaign(s, acc, { name: 'Done', state: 'Finished' })).id;
    const a = await expectStatus(409, send('changeCampaignState', { token: admin, params: { campaign_id: finished }, json: 'Active' }));
    expect(a.body).toMatchObject({ state: 'Finished', allowedStates: [] });
    await expectStatus(409, send('deleteCampaign', { token: admin, params: c() }));
    const b = await expectStatus(409, send('deleteCampaigns', { token: admin, json: [await draft(), dynamicId] }));
    expect(b.body.blockingIds).toEqual([dynamicId]);
    const d = await expectStatus(409, send('addNumbers', { token: admin, params: { campaign_id: staticId }, json: [{ number: '+12125550100' }] }));
    expect(d.body).toMatchObject({ type: '/problems/conflict', state: 'Draft' });
    await expectStatus(409, send('uploadNumbers', { token: admin, params: { campaign_id: staticId }, body: csvForm('+12125550100\n') }));
    const success = await numberIn('Success');
    await expectStatus(409, send('deleteNumbers', { token: admin, params: c(), json: [success] }));
    await expectStatus(409, send('deleteNumber', { token: admin, params: { ...c(), number_id: success } }));
  });

  it('413: more entries than a request may hold, an upload over its limit', async () => {
    await expectStatus(413, send('addNumbers', { token: admin, params: c(), json: nextPhones(LIMITS.numbersPerRequest + 1).map((number) => ({ number })) }));
    await expectStatus(413, send('deleteCampaigns', { token: admin, json: Array.from({ length: LIMITS.idsPerDelete + 1 }, (_, i) => `c${i}`) }));
    await expectStatus(413, send('deleteNumbers', { token: admin, params: c(), json: Array.from({ length: LIMITS.idsPerDelete + 1 }, (_, i) => String(i + 1)) }));
    const big = Array.from({ length: 200 }, (_, i) => `+1212555${String(i).padStart(4, '0')}`).join('\n');
    await expectStatus(413, send('uploadNumbers', { token: admin, params: c(), body: csvForm(big) }));
  });

  it('415: an upload that is not multipart', async () => {
    await expectStatus(415, send('uploadNumbers', { token: admin, params: c(), json: [{ number: '+12125550100' }] }));
  });

  it('422: nothing could be added', async () => {
    const a = await expectStatus(422, send('addNumbers', { token: admin, params: c(), json: [{ number: '12' }, { number: 'x' }] }));
    expect(a.body.rejected).toHaveLength(2);
    const b = await expectStatus(422, send('uploadNumbers', { token: admin, params: c(), query: { firstRowIsHeader: 'false' }, body: csvForm('12\nabc\n') }));
    expect(b.body).toMatchObject({ createdCount: 0, rejectedCount: 2 });
  });
});

describe('failures every operation shares', () => {
  /** Each keyed operation with path values that exist, so that only the failure under test can answer. */
  const keyed = () => documentedOperations(doc).filter((o) => o.op['x-operation']).map((o) => ({
    id: o.op.operationId, method: o.method,
    params: { campaign_id: dynamicId, number_id: numbers[0]!.id },
  }));

  it('400 for an unknown parameter, 401 without a key, 403 for another account\'s key or a key without the role', async () => {
    for (const { id, params } of keyed()) {
      const body = id === 'uploadNumbers' ? { body: csvForm('+12125550100\n') } : {};
      const a = await expectStatus(400, send(id, { token: admin, params, query: { bogus: '1' }, ...body }));
      expect(a.body.errors[0].name).toBe('bogus');
      const b = await expectStatus(401, send(id, { params }));
      expect(b.body.type).toBe('/problems/unauthorized');
      await expectStatus(403, send(id, { token: foreign, params }));
    }
    await expectStatus(403, send('listCampaigns', { token: provider }));
    await expectStatus(403, send('addNumbers', { token: reader, params: { campaign_id: dynamicId }, json: [{ number: '+12125550100' }] }));
  });

  it('413 for a body over the limit and 415 for a media type not taken, on every operation (GET bodies included)', async () => {
    const big = JSON.stringify('x'.repeat(LIMITS.jsonBodyBytes));
    const hugeForm = `filter=${'x'.repeat(GET_BODY_BYTES + 1)}`;
    for (const { op } of documentedOperations(doc)) {
      const id = op.operationId;
      const params = { campaign_id: dynamicId, number_id: 'n' };
      if (byId.get(id)!.method === 'GET') {
        await expectStatus(413, sendGetBody(id, { token: admin, params, contentType: 'application/x-www-form-urlencoded', text: hugeForm }));
        await expectStatus(415, sendGetBody(id, { token: admin, params, contentType: 'application/json', text: '{"range":[0,1]}' }));
      } else {
        await expectStatus(413, send(id, { token: admin, params, body: big, headers: { 'content-type': 'application/json' } }));
        await expectStatus(415, send(id, { token: admin, params, body: '<x/>', headers: { 'content-type': 'application/xml' } }));
      }
    }
  });

  it('414 for a path parameter over the limit, 431 for a URL over the header limit, on every operation', async () => {
    for (const { op } of documentedOperations(doc)) {
      const id = op.operationId;
      const path = byId.get(id)!.path;
      if (path.includes('{')) {
        const long = 'x'.repeat(101);
        const a = await expectStatus(414, send(id, { token: admin, params: { account_id: long, campaign_id: long, number_id: long } }));
        expect(a.body.type).toBe('/problems/uri-too-long');
      }
      const b = await expectStatus(431, send(id, { token: admin, params: { campaign_id: dynamicId, number_id: 'n' }, query: { pad: 'y'.repeat(20_000) } }));
      expect(b.body.type).toBe('/problems/header-fields-too-large');
    }
  });

  it('429 once a key\'s bucket is empty, on every operation; the document stays available to keyless clients over their limit', async () => {
    const limited = await startServer({ rateLimit: { rate: 0.001, burst: 2 } });
    try {
      const account = (await createAccount(limited)).id;
      const token = await createKey(limited, account, ['CampaignAdmin']);
      const on = { url: limited.url, account };
      for (let i = 0; i < 2; i++) await limited.request(`/v1/accounts/${account}/campaigns`, { token });
      for (const { op } of documentedOperations(doc).filter((o) => o.op['x-operation'])) {
        const a = await expectStatus(429, send(op.operationId, { on, token, params: { campaign_id: 'c', number_id: 'n' } }));
        expect(a.body.type).toBe('/problems/rate-limited');
      }
      // The bucket of keyless requests from this address, emptied too.
      for (let i = 0; i < 3; i++) await limited.request(`/v1/accounts/${account}/campaigns`);
      await expectStatus(429, send('listCampaigns', { on }));
      const document = await expectStatus(200, send('getOpenApiDocument', { on }));
      expect((document.headers as Headers).get('ratelimit')).toBeNull();
      const page = await fetch(`${limited.url}/docs`);
      expect(page.status).toBe(200);
      expect(page.headers.get('ratelimit')).toBeNull();
    } finally {
      await limited.close();
    }
  });
});

describe('coverage', () => {
  it('saw every documented status of every operation, but 500 (no input causes one)', () => {
    const missing: string[] = [];
    for (const { op } of documentedOperations(doc)) {
      for (const status of Object.keys(op.responses).map(Number)) {
        if (status === 500) continue;
        if (!seen.get(op.operationId)?.has(status)) missing.push(`${op.operationId} ${status}`);
      }
    }
    expect(missing).toEqual([]);
    expect(seen.size).toBe(documentedOperations(doc).length);
  });
});
