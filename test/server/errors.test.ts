// Errors, limits and robustness: problem+json everywhere, 400/404/413/415/429, CORS, and no 500 from any input.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { MAX_JSON_DEPTH, tooDeepAt } from '../../server/request-decoding.ts';
import { addNumbers, createAccount, createCampaign, createKey, q, rawRequest, startServer, type TestServer } from '../support/server.ts';

let s: TestServer;
let acc: string;
let token: string;
let cid: string;
const api = (path: string) => `/v1/accounts/${acc}${path}`;

beforeAll(async () => {
  s = await startServer({ limits: { jsonBodyBytes: 4096 } });
  acc = (await createAccount(s)).id;
  token = await createKey(s, acc, ['CampaignAdmin']);
  cid = (await createCampaign(s, acc, { type: 'Dynamic', state: 'Active' })).id;
});
afterAll(() => s.close());

async function expectProblem(res: Response, status: number): Promise<Record<string, any>> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const p = await res.json();
  expect(p).toMatchObject({ status, type: expect.stringMatching(/^\/problems\//), title: expect.any(String), detail: expect.any(String) });
  expect(p.message).toBe(p.detail);
  return p;
}

describe('problem responses', () => {
  it('400 for malformed JSON, naming the body', async () => {
    const res = await s.request(api(`/campaigns/${cid}/numbers`), { method: 'POST', token, body: '[{"number": ', headers: { 'content-type': 'application/json' } });
    const p = await expectProblem(res, 400);
    expect(p.detail).toContain('not valid JSON');
  });

  it('400 for an empty JSON body', async () => {
    await expectProblem(await s.request(api(`/campaigns/${cid}/numbers`), { method: 'POST', token, headers: { 'content-type': 'application/json' } }), 400);
  });

  it('400 for a prototype-poisoning body', async () => {
    const res = await s.request(api(`/campaigns/${cid}/numbers`), { method: 'POST', token, body: '[{"number":"+12125550100","__proto__":{"x":1}}]', headers: { 'content-type': 'application/json' } });
    await expectProblem(res, 400);
  });

  it('415 for an unsupported media type', async () => {
    const res = await s.request(api(`/campaigns/${cid}/numbers`), { method: 'POST', token, body: '<numbers/>', headers: { 'content-type': 'application/xml' } });
    const p = await expectProblem(res, 415);
    expect(p.detail).toContain('application/xml');
  });

  it('415 for a GET body that is not url-encoded parameters', async () => {
    const res = await rawRequest(s.url + api('/campaigns'), 'GET', { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, '{"range":[0,1]}');
    expect(res.status).toBe(415);
    expect(JSON.parse(res.text).detail).toContain('application/x-www-form-urlencoded');
  });

  it('413 for a body over the JSON limit', async () => {
    const body = JSON.stringify(Array.from({ length: 400 }, () => ({ number: '+12125550100' })));
    await expectProblem(await s.request(api(`/campaigns/${cid}/numbers`), { method: 'POST', token, body, headers: { 'content-type': 'application/json' } }), 413);
  });

  it('404 for an unknown route and for unknown ids', async () => {
    expect((await expectProblem(await s.request('/v2/anything', { token }), 404)).detail).toBe('There is no operation at GET /v2/anything');
    await expectProblem(await s.request(api('/campaigns/unknown/numbers'), { token }), 404);
    await expectProblem(await s.request(api('/campaigns/unknown/reports/callDetails'), { token }), 404);
  });

  it('405 with Allow for a known path asked with another method, saying how to read one record', async () => {
    const one = api(`/campaigns/${cid}`);
    const get = await s.request(one, { token });
    const p = await expectProblem(get, 405);
    expect(get.headers.get('allow')).toBe('DELETE');
    expect(p.detail).toBe(`There is no GET operation at /v1/accounts/${acc}/campaigns/${cid}; it allows DELETE; ` +
      `to read one record, GET /v1/accounts/${acc}/campaigns?filter={"id":"${cid}"}`);
    const put = await s.request(one, { method: 'PUT', token, json: { name: 'x' } });
    expect((await expectProblem(put, 405)).detail).toBe(`There is no PUT operation at /v1/accounts/${acc}/campaigns/${cid}; it allows DELETE`);
    const post = await s.request(api('/campaigns'), { method: 'POST', token, json: { name: 'x' } });
    await expectProblem(post, 405);
    expect(post.headers.get('allow')).toBe('GET, DELETE');
    const number = await s.request(api(`/campaigns/${cid}/numbers/1`), { token });
    expect((await expectProblem(number, 405)).detail).toContain(`GET /v1/accounts/${acc}/campaigns/${cid}/numbers?filter={"id":"1"}`);
    // a path that is not a record has no such hint
    const upload = await s.request(api(`/campaigns/${cid}/numbers/upload`), { token });
    expect((await expectProblem(upload, 405)).detail).toBe(`There is no GET operation at /v1/accounts/${acc}/campaigns/${cid}/numbers/upload; it allows POST and DELETE`);
    expect((await s.request(api('/campaigns'), { token })).status).toBe(200);
  });

  it('treats a percent-encoded path like the decoded one: 401 without a key, 200 with one', async () => {
    await expectProblem(await s.request(`/%761/accounts/${acc}/campaigns`), 401);
    const res = await s.request(`/%761/accounts/${acc}/campaigns`, { token });
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit')).not.toBeNull();
  });

  it('gives rate-limit headers to a 404 for an unknown /v1 route too', async () => {
    const res = await s.request('/v1/nowhere', { token });
    await expectProblem(res, 404);
    expect(res.headers.get('ratelimit-policy')).not.toBeNull();
  });

  it('403 for an account id that is not the key\'s', async () => {
    await expectProblem(await s.request('/v1/accounts/someone-else/campaigns', { token }), 403);
  });

  it('400 for a parameter given twice', async () => {
    const p = await expectProblem(await s.request(api('/campaigns') + '?range=[0,1]&range=[2,3]', { token }), 400);
    expect(p.errors[0].name).toBe('range');
  });

  it('lists every bad parameter in errors', async () => {
    const p = await expectProblem(await s.request(api('/campaigns') + q({ range: [2, 1], sort: ['x', 'ASC'], filter: { y: 1 } }), { token }), 400);
    expect(p.errors.map((e: { name: string }) => e.name)).toEqual(['range', 'sort', 'filter.y']);
  });
});

describe('what is refused before a route reads it', () => {
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);

  it('400 for a JSON body nested deeper than the limit, on every operation with one, in /v1 and in the console', async () => {
    // 10 KB of brackets: under the default body limit, over this file's server's
    const s = await startServer();
    const acc = (await createAccount(s)).id;
    const token = await createKey(s, acc, ['CampaignAdmin']);
    const cid = (await createCampaign(s, acc, { type: 'Dynamic', state: 'Active' })).id;
    const api = (path: string) => `/v1/accounts/${acc}${path}`;
    onTestFinished(() => s.close());
    const bodies = [['PUT', `/campaigns/${cid}/state`], ['POST', `/campaigns/${cid}/numbers`], ['DELETE', `/campaigns/${cid}/numbers`], ['DELETE', '/campaigns']] as const;
    for (const [method, path] of bodies) {
      for (const [prefix, t] of [['', token], ['/console', s.consoleToken]] as const) {
        const res = await s.request(prefix + api(path), { method, token: t, body: deep(5_000), headers: { 'content-type': 'application/json' } });
        const p = await expectProblem(res, 400);
        expect(p.detail, `${method} ${prefix}${path}`).toBe(
          `The request body nests arrays and objects more than ${MAX_JSON_DEPTH} deep (at character ${MAX_JSON_DEPTH}); at most ${MAX_JSON_DEPTH} levels are accepted`);
        expect(p.errors).toEqual([{ in: 'body', name: '', detail: p.detail }]);
      }
    }
    // the console's own JSON bodies too
    await expectProblem(await s.request('/console/accounts', { method: 'POST', token: s.consoleToken, body: deep(5_000), headers: { 'content-type': 'application/json' } }), 400);
    // at the limit, the body is read (and refused for what it is, not for its depth)
    const atLimit = await s.request(api('/campaigns'), { method: 'DELETE', token, body: deep(MAX_JSON_DEPTH), headers: { 'content-type': 'application/json' } });
    expect((await expectProblem(atLimit, 400)).detail).toBe(`Entry 0 must be a campaign id (a string); got ${deep(MAX_JSON_DEPTH - 1)}`);
  });

  it('counts only brackets outside strings when measuring the depth', () => {
    expect(tooDeepAt(deep(3), 3)).toBe(-1);
    expect(tooDeepAt(deep(4), 3)).toBe(3);
    // a string with brackets, an escaped backslash before its closing quote, an escaped quote inside
    expect(tooDeepAt(String.raw`["${'['.repeat(50)}", {"a\\": "\"[[[["}]`, 2)).toBe(-1);
    expect(tooDeepAt(String.raw`[{"a\\":[[`, 3)).toBe(9);
  });

  it('400 for a multipart upload the parser cannot read: a boundary that never comes, no boundary, a body cut short', async () => {
    const upload = api(`/campaigns/${cid}/numbers/upload`);
    for (const type of ['multipart/form-data; boundary=zzz', 'multipart/form-data']) {
      const p = await expectProblem(await s.request(upload, { method: 'POST', token, body: 'garbage', headers: { 'content-type': type } }), 400);
      expect(p.detail).toMatch(/^The body is not valid multipart\/form-data: .+; send the CSV file as a part named "file"$/);
    }
    const cut = '--zzz\r\ncontent-disposition: form-data; name="file"; filename="n.csv"\r\ncontent-type: text/csv\r\n\r\n+12125550100\n+1212555';
    const p = await expectProblem(await s.request(upload, { method: 'POST', token, body: cut, headers: { 'content-type': 'multipart/form-data; boundary=zzz' } }), 400);
    expect(p.detail).toContain('not valid multipart/form-data');
  });

  it('414 for a path parameter over 100 characters, as a problem that does not echo it', async () => {
    const long = 'x'.repeat(101);
    const res = await s.request(api(`/campaigns/${long}/numbers`), { token });
    const p = await expectProblem(res, 414);
    expect(p.type).toBe('/problems/uri-too-long');
    expect(p.detail).toBe('A path segment is longer than the 100 characters a path parameter may have; the ids of this API are shorter');
    expect(p.instance).toBe(api(`/campaigns/${'x'.repeat(20)}…/numbers`));
    expect(JSON.stringify(p)).not.toContain(long);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    // 100 characters are still routed (to a 404)
    await expectProblem(await s.request(api(`/campaigns/${'x'.repeat(100)}/numbers`), { token }), 404);
  });

  it('400 for a path that is not UTF-8, as a problem', async () => {
    const p = await expectProblem(await s.request(api('/campaigns/%ED%A0%80/numbers'), { token }), 400);
    expect(p.detail).toBe('The path is not valid percent-encoded UTF-8 (each %XX is one byte of a UTF-8 character)');
  });

  it('431 for a 100 KB query, as a problem that does not echo it', async () => {
    const filter = 'y'.repeat(100_000);
    const res = await s.request(api(`/campaigns?filter=${filter}`), { token });
    const p = await expectProblem(res, 431);
    expect(p).toEqual({
      type: '/problems/header-fields-too-large', title: 'Request header fields too large', status: 431,
      detail: 'The request\'s URL and headers are larger than the 16384 bytes accepted; send long list parameters url-encoded in a GET body instead (up to 1048576 bytes)',
      message: p.detail,
    });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    // the server is still there
    expect((await s.request(api('/campaigns'), { token })).status).toBe(200);
  });

  it('400 for a request that is not HTTP, as a problem', async () => {
    const { connect } = await import('node:net');
    const { port } = new URL(s.url);
    const socket = connect(Number(port), '127.0.0.1');
    let answer = '';
    socket.on('data', (c: Buffer) => { answer += c.toString(); });
    socket.end('HELLO THERE\r\n\r\n');
    await new Promise((resolve) => socket.on('close', resolve));
    const [head, body] = answer.split('\r\n\r\n') as [string, string];
    expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(head).toContain('content-type: application/problem+json; charset=utf-8');
    expect(JSON.parse(body)).toEqual({
      type: '/problems/invalid-request', title: 'Invalid request', status: 400, detail: 'The request is not valid HTTP/1.1', message: 'The request is not valid HTTP/1.1',
    });
  });

  it('400 for __proto__ like any other unknown parameter, in the query and in a url-encoded body', async () => {
    const p = await expectProblem(await s.request(api('/campaigns?__proto__=1'), { token }), 400);
    expect(p.errors).toEqual([{ in: 'query', name: '__proto__', detail: 'Unknown parameter "__proto__"; this operation takes range, sort and filter' }]);
    await expectProblem(await s.request(api(`/campaigns/${cid}/state?__proto__=1`), { method: 'PUT', token, json: 'Active' }), 400);
    const body = await rawRequest(s.url + api('/campaigns'), 'GET', { authorization: `Bearer ${token}`, 'content-type': 'application/x-www-form-urlencoded' }, '__proto__=1');
    expect(body.status).toBe(400);
    expect(JSON.parse(body.text).errors[0].name).toBe('__proto__');
    const form = await s.request(api(`/campaigns/${cid}/duplicate`), { method: 'POST', token, body: '__proto__=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect((await expectProblem(form, 400)).errors[0].name).toBe('__proto__');
  });

  it('400 for a parameter that is not valid percent-encoded UTF-8, and nothing is stored', async () => {
    const before = (await (await s.request(api('/campaigns'), { token })).json()).length;
    const bad = await s.request(api(`/campaigns/${cid}/duplicate?newCampaignName=%ED%A0%80`), { method: 'POST', token });
    expect((await expectProblem(bad, 400)).errors).toEqual([{
      in: 'query', name: 'newCampaignName', detail: 'The newCampaignName parameter is not valid percent-encoded UTF-8 (each %XX is one byte of a UTF-8 character)',
    }]);
    const cut = await s.request(api(`/campaigns/${cid}/duplicate`), {
      method: 'POST', token, body: 'newCampaignName=%E0%A4%A', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect((await expectProblem(cut, 400)).errors[0].name).toBe('newCampaignName');
    expect((await (await s.request(api('/campaigns'), { token })).json()).length).toBe(before);
    // valid UTF-8 and a + for a space are read as before
    const ok = await s.request(api(`/campaigns/${cid}/duplicate?newCampaignName=Caf%C3%A9+%E2%82%AC&includeNumbers=false`), { method: 'POST', token });
    expect(ok.status).toBe(201);
    const copy = await ok.json();
    expect(copy.name).toBe('Café €');
    await s.request(api(`/campaigns/${copy.id}`), { method: 'DELETE', token });
  });
});

describe('CORS', () => {
  it('answers preflight requests and exposes the list headers', async () => {
    const res = await s.request(api('/campaigns'), { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' } });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-headers')).toBe('Authorization, Content-Type, Range');
    const get = await s.request(api('/campaigns'), { token });
    expect(get.headers.get('access-control-expose-headers')).toContain('X-Total-Count');
  });
});

describe('no input crashes or 500s', () => {
  const junk = ['', '%', '%zz', '[', '{"a":', 'null', '[null,null]', '"\u0000"', 'x'.repeat(5000), '[1e309,2]', '{"number":{"$gt":""}}', '[9007199254740993,9007199254740999]'];
  const paths = () => [
    ['GET', '/campaigns'], ['GET', `/campaigns/${cid}/numbers`], ['GET', `/campaigns/${cid}/reports/callDetails`], ['GET', `/campaigns/${cid}/reports/numberDetails`],
    ['POST', `/campaigns/${cid}/duplicate`], ['PUT', `/campaigns/${cid}/state`], ['DELETE', `/campaigns/${cid}`], ['DELETE', '/campaigns'],
    ['POST', `/campaigns/${cid}/numbers`], ['POST', `/campaigns/${cid}/numbers/upload`], ['DELETE', `/campaigns/${cid}/numbers`],
  ] as const;

  it('answers every junk parameter and body on every endpoint with a 4xx problem', async () => {
    let checked = 0;
    for (const [method, path] of paths()) {
      for (const value of junk) {
        const qs = ['range', 'sort', 'filter', 'varNames', 'numbersFilter', 'includeNumbers', 'varCount', 'firstRowIsHeader', 'newCampaignName']
          .map((k) => `${k}=${value.startsWith('%') ? value : encodeURIComponent(value)}`).join('&');
        const res = await s.request(`${api(path)}?${qs}`, {
          method, token, ...(method === 'GET' ? {} : { body: value, headers: { 'content-type': 'application/json' } }),
        });
        expect(res.status, `${method} ${path} with ${JSON.stringify(value).slice(0, 40)}`).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        checked++;
      }
    }
    expect(checked).toBe(paths().length * junk.length);
    // the campaign survived all of it
    expect((await s.request(api('/campaigns') + q({ filter: { ids: [cid] } }), { token }).then((r) => r.json()))[0].state).toBe('Active');
  });
});

describe('rate limit', () => {
  it('answers 429 with Retry-After past the burst, with RateLimit headers on every response', async () => {
    const limited = await startServer({ rateLimit: { rate: 1, burst: 3 } });
    try {
      const a = (await createAccount(limited)).id;
      const t = await createKey(limited, a, ['CampaignReader']);
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 5; i++) {
        last = await limited.request(`/v1/accounts/${a}/campaigns`, { token: t });
        statuses.push(last.status);
        expect(last.headers.get('ratelimit-policy')).toBe('"default";q=3;w=3');
        expect(last.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+$/);
      }
      expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
      expect(statuses[4]).toBe(429);
      const p = await expectProblem(last!, 429);
      expect(Number(last!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(p.detail).toContain('rate limit');
      // unauthenticated requests have their own bucket (by address) and the headers too
      const anon = await limited.request(`/v1/accounts/${a}/campaigns`);
      expect(anon.status).toBe(401);
      expect(anon.headers.get('ratelimit')).not.toBeNull();
      // another key is not limited by the first one's use
      const t2 = await createKey(limited, a, ['CampaignReader']);
      expect((await limited.request(`/v1/accounts/${a}/campaigns`, { token: t2 })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('persistence', () => {
  it('keeps accounts, keys, campaigns and numbers across a restart with the same file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdk-'));
    const db = join(dir, 'server.db');
    try {
      const first = await startServer({ db });
      const a = (await createAccount(first)).id;
      const t = await createKey(first, a, ['CampaignAdmin']);
      const c = await createCampaign(first, a, { name: 'Kept', type: 'Dynamic', state: 'Active' });
      await addNumbers(first, a, c.id, ['+12125550900', '+12125550901']);
      await first.close();

      const second = await startServer({ db });
      try {
        const list = await second.request(`/v1/accounts/${a}/campaigns`, { token: t });
        expect(list.status).toBe(200);
        expect(await list.json()).toEqual([expect.objectContaining({ id: c.id, name: 'Kept', numbersCount: 2 })]);
        const nums = await second.request(`/v1/accounts/${a}/campaigns/${c.id}/numbers` + q({ filter: { status: ['NotContacted'] } }), { token: t });
        expect(nums.headers.get('x-total-count')).toBe('2');
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('console', () => {
  it('needs the console token', async () => {
    await expectProblem(await s.request('/console/accounts', { method: 'POST', json: { name: 'x' } }), 401);
    await expectProblem(await s.request('/console/accounts', { method: 'POST', json: { name: 'x' }, token: 'wrong' }), 401);
  });

  it('validates bodies, naming each bad field', async () => {
    const res = await s.request('/console/accounts', { method: 'POST', token: s.consoleToken, json: { name: '', timezone: 'Mars/Olympus' } });
    const p = await expectProblem(res, 400);
    expect(p.errors.map((e: { name: string }) => e.name).sort()).toEqual(['/name', '/timezone']);
    const bad = await s.request(`/console/accounts/${acc}/apiKeys`, { method: 'POST', token: s.consoleToken, json: { name: 'k', roles: ['Owner'] } });
    expect((await expectProblem(bad, 400)).errors[0].name).toBe('/roles/0');
  });

  it('shows the token only at creation and never stores it', async () => {
    const key = await s.console('POST', `/accounts/${acc}/apiKeys`, { name: 'once', roles: ['CampaignReader'] });
    expect(key.token).toMatch(/^cdk_[A-Za-z0-9_-]{43}$/);
    expect(key.tokenPrefix).toBe(key.token.slice(0, 12));
    const keys = await s.console('GET', `/accounts/${acc}/apiKeys`);
    expect(JSON.stringify(keys)).not.toContain(key.token);
    const stored = s.store.db.all<Record<string, unknown>>('SELECT * FROM api_keys');
    expect(JSON.stringify(stored.map((r) => ({ ...r, token_hash: Buffer.from(r.token_hash as Uint8Array).toString('hex') })))).not.toContain(key.token.slice(4));
  });

  it('404 for deleting an unknown key', async () => {
    await expectProblem(await s.request(`/console/accounts/${acc}/apiKeys/nope`, { method: 'DELETE', token: s.consoleToken }), 404);
  });
});
