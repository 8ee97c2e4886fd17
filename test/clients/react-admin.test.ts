// react-admin's own REST data provider (ra-data-simple-rest) against the reference server: what it can do, and what it
// gets where the API has no operation for its call.
import simpleRestProvider from 'ra-data-simple-rest';
import { fetchUtils, HttpError, type DataProvider } from 'ra-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallDetail, Campaign, CampaignNumber, NumberDetail } from '../../api/records.ts';
import { addNumbers, createAccount, createCampaign, createKey, phoneNumbers, q, setNumber, startServer, type TestServer } from '../support/server.ts';

let s: TestServer;
let acc: string;
let token: string;
let dp: DataProvider;
let campaigns: Campaign[];
/** A Static campaign that has been dialing, so its reports have records. */
let dialed: Campaign;
/** A Dynamic, Active campaign with numbers. */
let dynamic: Campaign;
/** Every request the data provider sent: what a browser would have to let through across origins. */
const sent: { method: string; url: string; headers: Headers }[] = [];

const resource = () => `accounts/${acc}/campaigns`;
const numbersOf = (c: Campaign) => `accounts/${acc}/campaigns/${c.id}/numbers`;
const reportOf = (c: Campaign, report: 'callDetails' | 'numberDetails') => `accounts/${acc}/campaigns/${c.id}/reports/${report}`;

/** Straight from the API (not through the provider): the reference the provider's answers are checked against. */
async function all<T>(path: string): Promise<T[]> {
  return (await s.request(`/v1/accounts/${acc}/campaigns${path}${q({ range: [0, 9999] })}`, { token })).json() as Promise<T[]>;
}

/** The provider's call must fail with the server's problem: status, and its detail as the HttpError's message. */
async function rejection(call: Promise<unknown>): Promise<HttpError & { body: Record<string, unknown> }> {
  const err = await call.then(() => { throw new Error('the call succeeded'); }, (e: unknown) => e);
  expect(err).toBeInstanceOf(HttpError);
  const e = err as HttpError & { body: Record<string, unknown> };
  expect(e.message).toBe(e.body.detail);
  expect(e.body.message).toBe(e.body.detail);
  return e;
}

beforeAll(async () => {
  s = await startServer({ seed: 11, clockStart: '2026-01-05T09:00:00Z' });
  acc = (await createAccount(s, 'React Admin', 'Europe/Berlin')).id;
  token = await createKey(s, acc, ['CampaignAdmin']);
  // The httpClient react-admin's docs show for a bearer token: fetchJson with an Authorization header.
  const httpClient = (url: string, options: fetchUtils.Options = {}) => {
    const headers = new Headers(options.headers ?? { Accept: 'application/json' });
    headers.set('Authorization', `Bearer ${token}`);
    sent.push({ method: options.method ?? 'GET', url, headers });
    return fetchUtils.fetchJson(url, { ...options, headers });
  };
  dp = simpleRestProvider(`${s.url}/v1`, httpClient);

  campaigns = [];
  for (let i = 0; i < 12; i++) {
    campaigns.push(await createCampaign(s, acc, {
      name: `Spring ${String(i).padStart(2, '0')}`, type: i % 3 ? 'Static' : 'Dynamic', state: i % 4 === 1 ? 'Active' : 'Draft',
    }));
  }
  dynamic = await createCampaign(s, acc, { name: 'Inbound leads', type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
  await addNumbers(s, acc, dynamic.id, phoneNumbers(40).map((n, i) => ({ number: n, varValues: [`Lead ${i}`] })));
  dialed = await createCampaign(s, acc, { name: 'Dialed', type: 'Static', state: 'Draft', dialer: { mode: 'Power', agents: 4 } });
  await addNumbers(s, acc, dialed.id, Array.from({ length: 30 }, (_, i) => `+1646${2_000_000 + i * 37}`));
  expect((await s.request(`/v1/accounts/${acc}/campaigns/${dialed.id}/state`, { method: 'PUT', token, json: 'Active' })).status).toBe(200);
  await s.advance(2 * 24 * 3600);
});
afterAll(() => s.close());

describe('getList', () => {
  it('pages, sorts and filters campaigns, reading the total from Content-Range', async () => {
    const statics = [...campaigns, dynamic, dialed].filter((c) => c.type === 'Static').sort((a, b) => b.name.localeCompare(a.name));
    const page = await dp.getList<Campaign>(resource(), {
      pagination: { page: 2, perPage: 3 }, sort: { field: 'name', order: 'DESC' }, filter: { type: 'Static' },
    });
    expect(page.total).toBe(statics.length);
    expect(page.data.map((c) => c.name)).toEqual(statics.slice(3, 6).map((c) => c.name));
    const active = await dp.getList<Campaign>(resource(), {
      pagination: { page: 1, perPage: 25 }, sort: { field: 'numbersCount', order: 'DESC' }, filter: { state: 'Active', type: 'Dynamic' },
    });
    expect(active.data.map((c) => c.name)).toEqual(['Inbound leads', 'Spring 09']);
    expect(active.total).toBe(2);
  });

  it('pages, sorts and filters the numbers of a campaign', async () => {
    const expected = (await all<CampaignNumber>(`/${dynamic.id}/numbers`)).filter((n) => n.number.includes('555003'))
      .sort((a, b) => b.number.localeCompare(a.number));
    const page = await dp.getList<CampaignNumber>(numbersOf(dynamic), {
      pagination: { page: 2, perPage: 4 }, sort: { field: 'number', order: 'DESC' }, filter: { number: '555003', status: ['NotContacted'] },
    });
    expect(expected).toHaveLength(10);
    expect(page.total).toBe(10);
    expect(page.data).toEqual(expected.slice(4, 8));
  });

  it('pages, sorts and filters the call-details report of a dialing campaign', async () => {
    const calls = await all<CallDetail>(`/${dialed.id}/reports/callDetails`);
    const retried = calls.filter((c) => c.outcome === 'FailureWithRetryPending')
      .sort((a, b) => b.startedAtLocal.localeCompare(a.startedAtLocal) || Number(b.id) - Number(a.id));
    expect(retried.length).toBeGreaterThan(10);
    const page = await dp.getList<CallDetail>(reportOf(dialed, 'callDetails'), {
      pagination: { page: 2, perPage: 5 }, sort: { field: 'startedAtLocal', order: 'DESC' }, filter: { outcome: 'FailureWithRetryPending' },
    });
    expect(page.total).toBe(retried.length);
    expect(page.data).toEqual(retried.slice(5, 10));
  });

  it('pages, sorts and filters the number-details report', async () => {
    const details = await all<NumberDetail>(`/${dialed.id}/reports/numberDetails`);
    const retried = details.filter((d) => d.attempts >= 2).sort((a, b) => b.attempts - a.attempts || b.number.localeCompare(a.number));
    expect(retried.length).toBeGreaterThan(3);
    const page = await dp.getList<NumberDetail>(reportOf(dialed, 'numberDetails'), {
      pagination: { page: 1, perPage: 3 }, sort: { field: 'attempts', order: 'DESC' }, filter: { attempts_gte: 2 },
    });
    expect(page.total).toBe(retried.length);
    expect(page.data.map((d) => d.attempts)).toEqual(retried.slice(0, 3).map((d) => d.attempts));
    expect(page.data.every((d) => retried.some((r) => r.id === d.id))).toBe(true);
  });

  it('gets the server\'s 400 when a List keeps react-admin\'s default sort (id), which is no sort field', async () => {
    const e = await rejection(dp.getList(resource(), { pagination: { page: 1, perPage: 10 }, sort: { field: 'id', order: 'ASC' }, filter: {} }));
    expect(e.status).toBe(400);
    expect(e.message).toBe('Campaigns cannot be sorted by "id"; the sort fields are name, state, type, startDate, endDate, numbersCount, startedAt and endedAt');
  });
});

describe('getMany', () => {
  it('reads campaigns by id (filter {"id": [...]}); past 10 ids, the spec\'s default page of 10 (getMany sends no range)', async () => {
    const some = await dp.getMany<Campaign>(resource(), { ids: [campaigns[4]!.id, campaigns[1]!.id] });
    expect(some.data.map((c) => c.id)).toEqual([campaigns[1]!.id, campaigns[4]!.id]);
    const many = await dp.getMany<Campaign>(resource(), { ids: [...campaigns.map((c) => c.id), dynamic.id] });
    expect(many.data.map((c) => c.name)).toEqual(campaigns.slice(0, 10).map((c) => c.name));
  });

  it('reads numbers and report records by id', async () => {
    const numbers = await all<CampaignNumber>(`/${dynamic.id}/numbers`);
    const picked = [numbers[30]!, numbers[2]!];
    expect((await dp.getMany<CampaignNumber>(numbersOf(dynamic), { ids: picked.map((n) => n.id) })).data).toEqual([numbers[2], numbers[30]]);
    const calls = await all<CallDetail>(`/${dialed.id}/reports/callDetails`);
    expect((await dp.getMany<CallDetail>(reportOf(dialed, 'callDetails'), { ids: [calls[7]!.id, calls[0]!.id] })).data).toEqual([calls[0], calls[7]]);
  });
});

describe('getOne, create, update', () => {
  it('getOne gets a 405 that says how to read one record (there is no GET of one campaign or number)', async () => {
    const id = campaigns[0]!.id;
    const e = await rejection(dp.getOne(resource(), { id }));
    expect(e.status).toBe(405);
    expect(e.message).toBe(`There is no GET operation at /v1/accounts/${acc}/campaigns/${id}; it allows DELETE; ` +
      `to read one record, GET /v1/accounts/${acc}/campaigns?filter={"id":"${id}"}`);
    expect((await rejection(dp.getOne(numbersOf(dynamic), { id: '1' }))).status).toBe(405);
  });

  it('create and update get a 405 naming the methods the path allows (the spec has neither)', async () => {
    const created = await rejection(dp.create(resource(), { data: { name: 'New' } }));
    expect(created.status).toBe(405);
    expect(created.message).toBe(`There is no POST operation at /v1/accounts/${acc}/campaigns; it allows GET and DELETE`);
    const updated = await rejection(dp.update(resource(), { id: campaigns[0]!.id, data: { name: 'Renamed' }, previousData: campaigns[0]! }));
    expect(updated.status).toBe(405);
    expect(updated.message).toBe(`There is no PUT operation at /v1/accounts/${acc}/campaigns/${campaigns[0]!.id}; it allows DELETE`);
  });

  it('getManyReference gets a 400 naming the filter keys when the target is not one', async () => {
    const e = await rejection(dp.getManyReference(reportOf(dialed, 'callDetails'), {
      target: 'numberId', id: '1', pagination: { page: 1, perPage: 10 }, sort: { field: 'number', order: 'ASC' }, filter: {},
    }));
    expect(e.status).toBe(400);
    expect(e.message).toMatch(/^Unknown filter key "numberId" for call-detail records; the keys are number, numberPrefix, .* and ids$/);
  });
});

describe('delete and deleteMany', () => {
  it('delete answers the campaign as it was; deleteMany deletes each and answers their ids', async () => {
    const [one, two, three] = [campaigns[0]!, campaigns[2]!, campaigns[3]!];
    const deleted = await dp.delete<Campaign>(resource(), { id: one.id, previousData: one });
    expect(deleted.data).toEqual(one);
    const many = await dp.deleteMany(resource(), { ids: [two.id, three.id] });
    expect(many.data).toEqual([two.id, three.id]);
    expect((await dp.getMany(resource(), { ids: [one.id, two.id, three.id] })).data).toEqual([]);
  });

  it('deleteMany is one DELETE per id, not all or nothing: the deletable ones go, the first refusal is the error', async () => {
    const draft = campaigns[4]!;
    // Dynamic: it stays Active without numbers (a Static one would have finished).
    const active = campaigns[9]!;
    const e = await rejection(dp.deleteMany(resource(), { ids: [draft.id, active.id] }));
    expect(e.status).toBe(409);
    expect(e.message).toBe(`Campaign "${active.name}" is Active and cannot be deleted; only Draft, Finished or Canceled campaigns can be (cancel it first)`);
    expect((await dp.getMany<Campaign>(resource(), { ids: [draft.id, active.id] })).data.map((c) => c.id)).toEqual([active.id]);
  });

  it('deletes numbers one by one through DELETE …/numbers/{id}', async () => {
    const numbers = await all<CampaignNumber>(`/${dynamic.id}/numbers`);
    const [a, b, c, busy] = [numbers[0]!, numbers[1]!, numbers[2]!, numbers[3]!];
    expect((await dp.delete<CampaignNumber>(numbersOf(dynamic), { id: a.id, previousData: a })).data).toEqual(a);
    expect((await dp.deleteMany(numbersOf(dynamic), { ids: [b.id, c.id] })).data).toEqual([b.id, c.id]);
    setNumber(s, busy.id, 'Contacting', 1);
    const e = await rejection(dp.delete(numbersOf(dynamic), { id: busy.id, previousData: busy }));
    expect(e.status).toBe(409);
    expect(e.message).toBe(`Number "${busy.id}" (${busy.number}) is Contacting and cannot be deleted; only NotContacted or RetryPending numbers can be; nothing was deleted`);
    const left = (await dp.getMany<CampaignNumber>(numbersOf(dynamic), { ids: [a.id, b.id, c.id, busy.id] })).data;
    expect(left.map((n) => n.id)).toEqual([busy.id]);
    const gone = (await dp.getMany<NumberDetail>(reportOf(dynamic, 'numberDetails'), { ids: [a.id, b.id, c.id] })).data;
    expect(gone.map((n) => n.status)).toEqual(['Deleted', 'Deleted', 'Deleted']);
  });
});

describe('across origins', () => {
  // What a browser lets through without asking (the Fetch standard's CORS-safelisted request headers, as sent here).
  const safelisted = (name: string, value: string) => name === 'accept' ||
    (name === 'content-type' && /^(text\/plain|application\/x-www-form-urlencoded|multipart\/form-data)\b/.test(value)) ||
    (name === 'range' && /^bytes=\d+-\d*$/.test(value));

  it('every request the provider sent passes a browser\'s preflight, and the total headers are readable', async () => {
    expect(sent.length).toBeGreaterThan(20);
    for (const { method, url, headers } of sent) {
      const asked = [...headers.entries()].filter(([name, value]) => !safelisted(name, value)).map(([name]) => name);
      const pre = await fetch(url, {
        method: 'OPTIONS',
        headers: { origin: 'https://admin.example', 'access-control-request-method': method, 'access-control-request-headers': asked.join(',') },
      });
      expect(pre.status, `${method} ${url}`).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe('*');
      expect(pre.headers.get('access-control-allow-methods')!.split(/,\s*/)).toContain(method);
      const allowed = pre.headers.get('access-control-allow-headers')!.toLowerCase().split(/,\s*/);
      for (const name of asked) expect(allowed, `${method} ${url} sends ${name}`).toContain(name);
    }
    // getList reads the total from Content-Range: a cross-origin page sees it only when it is exposed.
    const list = sent.find((r) => r.headers.has('range'))!;
    const res = await fetch(list.url, { headers: list.headers });
    expect(res.headers.get('content-range')).toMatch(/^\w+ (\d+-\d+|\*)\/\d+$/);
    expect(res.headers.get('access-control-expose-headers')!.split(/,\s*/)).toEqual(expect.arrayContaining(['Content-Range', 'X-Total-Count']));
  });
});
