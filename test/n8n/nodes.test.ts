// The Campaign Dialing action node inside n8n's execution engine, against a running reference server: every
// operation, paging, batching, binary CSV upload, the error paths and Continue On Fail.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { INodeExecutionData } from 'n8n-workflow';
import { LIST_SPECS } from '../../api/list-query.ts';
import type { CallDetail, Campaign, CampaignNumber } from '../../api/records.ts';
import { loadPackage, runNode, type N8nPackage } from '../support/n8n.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { addNumbers, createAccount, createCampaign, createKey, phoneNumbers, q, startServer, type TestServer } from '../support/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const NODE = 'campaignDialing';

let pkg: N8nPackage;
let s: TestServer;
let proxy: Proxy;
let acc: string;
let admin: string;
let reader: string;

const credentials = (token = admin, over: Record<string, string> = {}) =>
  ({ campaignDialingApi: { baseUrl: proxy.url, accountId: acc, apiToken: token, ...over } });
const byId = (id: string) => ({ __rl: true, mode: 'id', value: id });
const json = (items: INodeExecutionData[]) => items.map((i) => i.json);
const api = async <T>(path: string, init: RequestInit & { json?: unknown } = {}): Promise<T> => {
  const res = await s.request(`/v1/accounts/${acc}${path}`, { token: admin, ...init });
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
};
const requestsTo = (method: string, pattern: RegExp) => proxy.exchanges.filter((e) => e.method === method && pattern.test(e.path));

function run(parameters: Record<string, unknown>, options: { items?: INodeExecutionData[]; token?: string; continueOnFail?: boolean } = {}) {
  return runNode({ pkg, type: NODE, parameters, credentials: credentials(options.token), items: options.items, continueOnFail: options.continueOnFail });
}

beforeAll(async () => {
  pkg = await loadPackage(ROOT);
  s = await startServer({ seed: 11, clockStart: '2026-01-05T09:00:00Z' });
  proxy = await startProxy(s.url);
  acc = (await createAccount(s, 'n8n', 'Europe/Berlin')).id;
  admin = await createKey(s, acc, ['CampaignAdmin']);
  reader = await createKey(s, acc, ['CampaignReader']);
});
afterAll(async () => {
  await proxy?.close();
  await s?.close();
});

describe('the package', () => {
  it('loads both nodes and the credential through n8n\'s package loader, usable as an AI tool', () => {
    expect(pkg.nodeTypes.getByNameAndVersion(`${pkg.packageName}.${NODE}`).description.usableAsTool).toBe(true);
    expect(pkg.nodeTypes.getByNameAndVersion(`${pkg.packageName}.campaignDialingTrigger`).description.polling).toBe(true);
    expect(pkg.credentialTypes.getByName('campaignDialingApi').properties.map((p) => p.name)).toEqual(['baseUrl', 'accountId', 'apiToken']);
  });

  it('has a field for every filter key and an option for every sort field of each list endpoint', () => {
    const { properties } = pkg.nodeTypes.getByNameAndVersion(`${pkg.packageName}.${NODE}`).description;
    const forOperation = (resource: string, operation: string, name: string) => properties.find((p) => p.name === name
      && p.displayOptions?.show?.resource?.includes(resource) && p.displayOptions.show.operation?.includes(operation));
    const cases = [
      ['campaign', 'getAll', 'campaigns'], ['campaignNumber', 'getAll', 'numbers'],
      ['report', 'callDetails', 'callDetails'], ['report', 'numberDetails', 'numberDetails'],
    ] as const;
    const nested: Record<string, string[]> = {
      dialer: ['dialerMode'], callBehavior: ['humanAnswerCallflowId', 'answeringMachineCallflowId'],
    };
    for (const [resource, operation, list] of cases) {
      const filterNames = (forOperation(resource, operation, 'filters')!.options as Array<{ name: string }>).map((o) => o.name);
      const spec = LIST_SPECS[list];
      for (const key of Object.keys(spec.filters)) {
        if (key.includes('.')) continue; // dotted spellings of the nested objects
        // the spec names attempts_gt / attempts_lt for numbers; the others are the server's extension
        if (list === 'numbers' && (key === 'attempts_gte' || key === 'attempts_lte')) continue;
        if (list === 'callDetails' && /^attempt_/.test(key)) continue;
        for (const name of nested[key] ?? [key]) expect(filterNames, `${list} filter ${key}`).toContain(name);
      }
      const sortBy = (forOperation(resource, operation, 'options')!.options as Array<{ name: string; options: Array<{ value: string }> }>)
        .find((o) => o.name === 'sortBy')!;
      expect(sortBy.options.map((o) => o.value).sort()).toEqual([...spec.sortFields].sort());
    }
  });
});

describe('Campaign', () => {
  it('Get Many filters, sorts and limits; Return All reads every page', async () => {
    for (let i = 0; i < 7; i++) await createCampaign(s, acc, { name: `List ${i}`, type: i % 2 ? 'Static' : 'Dynamic' });
    const limited = await run({ resource: 'campaign', operation: 'getAll', limit: 2, filters: { type: 'Dynamic' }, options: { sortBy: 'name', sortDirection: 'DESC' } });
    expect(limited.error).toBeUndefined();
    expect(json(limited.items).map((c) => c.name)).toEqual(['List 6', 'List 4']);
    const all = await run({ resource: 'campaign', operation: 'getAll', returnAll: true, filters: { type: 'Static' }, options: { sortBy: 'name' } });
    expect(json(all.items).map((c) => c.name)).toEqual(['List 1', 'List 3', 'List 5']);
    expect(all.items.every((i) => (i.pairedItem as { item: number }).item === 0)).toBe(true);
  });

  it('Duplicate copies a campaign under a new name, with or without its numbers', async () => {
    const c = await createCampaign(s, acc, { name: 'Original', type: 'Dynamic', state: 'Active' });
    await addNumbers(s, acc, c.id, phoneNumbers(3, 100));
    const res = await run({ resource: 'campaign', operation: 'duplicate', campaignId: byId(c.id), duplicateOptions: { newCampaignName: 'Copy', includeNumbers: false } });
    expect(res.error).toBeUndefined();
    expect(res.items[0]!.json).toMatchObject({ name: 'Copy', state: 'Draft', numbersCount: 0 });
    const full = await run({ resource: 'campaign', operation: 'duplicate', campaignId: byId(c.id), duplicateOptions: { numberStatuses: ['NotContacted'] } });
    expect(full.items[0]!.json).toMatchObject({ name: 'Original (1)', numbersCount: 3 });
  });

  it('Change State takes the campaign IDs from the input items and pairs each answer with its item', async () => {
    const a = await createCampaign(s, acc, { name: 'State A', type: 'Dynamic' });
    const b = await createCampaign(s, acc, { name: 'State B', type: 'Dynamic' });
    const res = await run(
      { resource: 'campaign', operation: 'changeState', campaignId: { __rl: true, mode: 'id', value: '={{ $json.id }}' }, state: 'Active' },
      { items: [{ json: { id: a.id } }, { json: { id: b.id } }] },
    );
    expect(res.error).toBeUndefined();
    expect(res.items.map((i) => [i.json.id, i.json.state, i.pairedItem])).toEqual([[a.id, 'Active', { item: 0 }], [b.id, 'Active', { item: 1 }]]);
  });

  it('Delete removes a Draft campaign; an Active one is a 409 with the server\'s reason, or an error item with Continue On Fail', async () => {
    const draft = await createCampaign(s, acc, { name: 'To delete' });
    const active = await createCampaign(s, acc, { name: 'Busy', type: 'Dynamic', state: 'Active' });
    const ok = await run({ resource: 'campaign', operation: 'delete', campaignId: { __rl: true, mode: 'url', value: `${s.url}/v1/accounts/${acc}/campaigns/${draft.id}` } });
    expect(ok.error).toBeUndefined();
    expect(ok.items[0]!.json).toEqual({ id: draft.id, deleted: true });
    expect(await api<Campaign[]>(`/campaigns${q({ filter: { ids: [draft.id] } })}`)).toEqual([]);

    const refused = await run({ resource: 'campaign', operation: 'delete', campaignId: byId(active.id) });
    expect(refused.error?.message).toMatch(/Active/);
    expect((refused.error as { httpCode?: string }).httpCode).toBe('409');

    const kept = await run({ resource: 'campaign', operation: 'delete', campaignId: byId(active.id) }, { continueOnFail: true });
    expect(kept.error).toBeUndefined();
    expect(kept.items[0]!.json.error).toMatch(/Active/);
    expect(kept.items[0]!.json.httpCode).toBe('409');
    expect(kept.items[0]!.pairedItem).toEqual({ item: 0 });
  });

  it('Delete Many deletes the IDs of all items in one request', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await createCampaign(s, acc, { name: `Bulk ${i}` })).id);
    const before = requestsTo('DELETE', /\/campaigns(\?|$)/).length;
    const res = await run({ resource: 'campaign', operation: 'deleteMany', campaignIds: '={{ $json.ids }}' },
      { items: [{ json: { ids: [ids[0], ids[1]] } }, { json: { ids: ids[2] } }] });
    expect(res.error).toBeUndefined();
    expect(requestsTo('DELETE', /\/campaigns(\?|$)/).length - before).toBe(1);
    expect(res.items.map((i) => [i.json.id, i.pairedItem])).toEqual([[ids[0], { item: 0 }], [ids[1], { item: 0 }], [ids[2], { item: 1 }]]);
    expect(await api<Campaign[]>(`/campaigns${q({ filter: { ids } })}`)).toEqual([]);
  });
});

describe('Campaign Number', () => {
  let dynamic: Campaign;
  beforeAll(async () => {
    dynamic = await createCampaign(s, acc, { name: 'Numbers', type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
  });

  it('Add sends many items in the fewest requests, maps the phone number and variables, sets varNames', async () => {
    const items = phoneNumbers(25, 2000).map((phone, i) => ({ json: { phone, first: `F${i}`, ...(i % 2 ? { company: `C${i}` } : {}) } }));
    const before = requestsTo('POST', /\/numbers(\?|$)/).length;
    const res = await run({
      resource: 'campaignNumber', operation: 'add', campaignId: byId(dynamic.id), phoneNumber: '={{ $json.phone }}',
      variables: { variable: [{ name: 'firstName', value: '={{ $json.first }}' }, { name: 'company', value: '={{ $json.company ?? "" }}' }] },
      addOptions: { batchSize: 10 },
    }, { items });
    expect(res.error).toBeUndefined();
    expect(requestsTo('POST', /\/numbers(\?|$)/).length - before).toBe(3);
    expect(res.items).toHaveLength(25);
    res.items.forEach((item, i) => {
      expect(item.pairedItem).toEqual({ item: i });
      expect(item.json).toMatchObject({ number: items[i]!.json.phone, status: 'NotContacted', varNames: ['firstName', 'company'], varValues: [`F${i}`, i % 2 ? `C${i}` : ''] });
    });
  });

  it('Add reports a rejected phone number as an error item with Continue On Fail, and fails without it', async () => {
    const items = [{ json: { phone: '+12125559001' } }, { json: { phone: 'not a number' } }, { json: { phone: '+12125559002' } }];
    const params = { resource: 'campaignNumber', operation: 'add', campaignId: byId(dynamic.id), phoneNumber: '={{ $json.phone }}' };
    const kept = await run(params, { items, continueOnFail: true });
    expect(kept.items.map((i) => [i.pairedItem, i.json.number, i.json.error !== undefined])).toEqual([
      [{ item: 0 }, '+12125559001', false], [{ item: 1 }, 'not a number', true], [{ item: 2 }, '+12125559002', false],
    ]);
    expect(kept.items[1]!.json).toMatchObject({ code: 'invalid_number' });
    const failed = await run(params, { items: [{ json: { phone: '+12125559001' } }] });
    expect(failed.error?.message).toMatch(/\+12125559001.*rejected/);
  });

  it('Upload CSV sends an input binary property as the file part', async () => {
    const csv = 'phone,firstName\n+4930111111,Ann\n+4930222222,Bob\nnonsense,Eve\n';
    const res = await run({ resource: 'campaignNumber', operation: 'upload', campaignId: byId(dynamic.id), binaryPropertyName: 'file', uploadOptions: { firstRowIsHeader: true } }, {
      items: [{ json: {}, binary: { file: { data: Buffer.from(csv).toString('base64'), mimeType: 'text/csv', fileName: 'leads.csv' } } }],
    });
    expect(res.error).toBeUndefined();
    expect(res.items[0]!.json).toMatchObject({ rows: 3, createdCount: 2, rejectedCount: 1, varNames: ['firstName'], firstRowIsHeader: true });
    const missing = await run({ resource: 'campaignNumber', operation: 'upload', campaignId: byId(dynamic.id), binaryPropertyName: 'nope' });
    expect(missing.error?.message).toMatch(/nope/);
  });

  it('Get Many reads more than 1,000 numbers page by page with filter and sort kept, none missing or repeated', async () => {
    const c = await createCampaign(s, acc, { name: 'Paging', type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
    const berlin = Array.from({ length: 1_234 }, (_, i) => `+4930${String(1_000_000 + i * 7)}`);
    await addNumbers(s, acc, c.id, [...berlin, ...phoneNumbers(400, 5000)]);
    const before = proxy.exchanges.length;
    const res = await run({ resource: 'campaignNumber', operation: 'getAll', campaignId: byId(c.id), returnAll: true,
      filters: { number: '+4930', status: ['NotContacted'] }, options: { sortBy: 'number', sortDirection: 'DESC' } });
    expect(res.error).toBeUndefined();
    const got = json(res.items).map((n) => n.number as string);
    expect(got).toEqual([...berlin].sort().reverse());
    const pages = proxy.exchanges.slice(before).map((e) => new URL(e.path, 'http://x').searchParams);
    expect(pages.length).toBe(Math.ceil(1_234 / 200));
    for (const p of pages) {
      expect(JSON.parse(p.get('filter')!)).toEqual({ number: '+4930', status: ['NotContacted'] });
      expect(JSON.parse(p.get('sort')!)).toEqual(['number', 'DESC']);
    }
    const limited = await run({ resource: 'campaignNumber', operation: 'getAll', campaignId: byId(c.id), limit: 450, options: { sortBy: 'number' } });
    expect(json(limited.items).map((n) => n.number)).toEqual([...berlin, ...phoneNumbers(400, 5000)].sort().slice(0, 450));
  });

  it('Delete takes number record IDs from the items, in one request; a number being called blocks all of them', async () => {
    const listed = await api<CampaignNumber[]>(`/campaigns/${dynamic.id}/numbers${q({ range: [0, 2], sort: ['number', 'ASC'] })}`);
    const before = requestsTo('DELETE', /\/numbers(\?|$)/).length;
    const res = await run({ resource: 'campaignNumber', operation: 'delete', campaignId: byId(dynamic.id), numberIds: '={{ $json.id }}' },
      { items: listed.map((n) => ({ json: n as unknown as Record<string, string> })) });
    expect(res.error).toBeUndefined();
    expect(requestsTo('DELETE', /\/numbers(\?|$)/).length - before).toBe(1);
    expect(res.items.map((i) => i.json)).toEqual(listed.map((n) => ({ id: n.id, deleted: true })));
    const unknown = await run({ resource: 'campaignNumber', operation: 'delete', campaignId: byId(dynamic.id), numberIds: '999999999' });
    expect((unknown.error as { httpCode?: string }).httpCode).toBe('404');
    expect(unknown.error?.message).toMatch(/999999999/);
  });
});

describe('Report', () => {
  it('Call Details and Number Details read a dialing campaign\'s reports with filters and sort, over many pages', async () => {
    const c = await createCampaign(s, acc, { name: 'Dialing', type: 'Static', state: 'Draft', dialer: { mode: 'Power', agents: 100 } });
    await addNumbers(s, acc, c.id, phoneNumbers(900, 7000));
    await api(`/campaigns/${c.id}/state`, { method: 'PUT', json: 'Active' });
    await s.advance(6 * 3600);
    const all = await api<CallDetail[]>(`/campaigns/${c.id}/reports/callDetails${q({ range: [0, 9999] })}`);
    expect(all.length).toBeGreaterThan(1_000);
    const res = await run({ resource: 'report', operation: 'callDetails', campaignId: byId(c.id), returnAll: true,
      filters: { ringResult: 'NoAnswer' }, options: { sortBy: 'endedAtLocal', sortDirection: 'DESC' } });
    expect(res.error).toBeUndefined();
    const expected = all.filter((r) => r.ringResult === 'NoAnswer')
      .sort((a, b) => b.endedAtLocal.localeCompare(a.endedAtLocal) || Number(a.id) - Number(b.id));
    const ids = json(res.items).map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.sort()).toEqual(expected.map((r) => r.id).sort());
    const times = json(res.items).map((r) => r.endedAtLocal as string);
    expect(times).toEqual([...times].sort().reverse());

    const firstTime = all.map((r) => r.startedAtLocal).sort()[0]!;
    const early = await run({ resource: 'report', operation: 'callDetails', campaignId: byId(c.id), returnAll: true,
      filters: { startedAtLocal_lte: `${firstTime}.000`, attempt: 1 } });
    expect(json(early.items).every((r) => r.startedAtLocal === firstTime && r.attempt === 1)).toBe(true);
    expect(early.items.length).toBeGreaterThan(0);

    const details = await run({ resource: 'report', operation: 'numberDetails', campaignId: byId(c.id), returnAll: true,
      filters: { status: 'Success', attempts_gte: 1 }, options: { sortBy: 'attempts', sortDirection: 'DESC' } }, { token: reader });
    expect(details.error).toBeUndefined();
    const counts = await api<unknown[]>(`/campaigns/${c.id}/reports/numberDetails${q({ range: [0, 9999], filter: { status: 'Success' } })}`);
    expect(details.items).toHaveLength(counts.length);
    const attempts = json(details.items).map((r) => r.attempts as number);
    expect(attempts).toEqual([...attempts].sort((a, b) => b - a));
  });
});

describe('errors', () => {
  it('401, 403 and 404 carry the server\'s detail and the status code', async () => {
    const c = await createCampaign(s, acc, { name: 'Guarded', type: 'Dynamic' });
    const bad = await run({ resource: 'campaign', operation: 'getAll' }, { token: 'cdk_wrong' });
    expect((bad.error as { httpCode?: string }).httpCode).toBe('401');
    expect(bad.error?.description).toMatch(/API token/);
    const denied = await run({ resource: 'campaign', operation: 'changeState', campaignId: byId(c.id), state: 'Active' }, { token: reader });
    expect((denied.error as { httpCode?: string }).httpCode).toBe('403');
    expect(denied.error?.message).toMatch(/role|not allow/i);
    const missing = await run({ resource: 'campaign', operation: 'changeState', campaignId: byId('00000000-0000-4000-8000-000000000000'), state: 'Active' });
    expect((missing.error as { httpCode?: string }).httpCode).toBe('404');
    const unreachable = await runNode({ pkg, type: NODE, parameters: { resource: 'campaign', operation: 'getAll' },
      credentials: credentials(admin, { baseUrl: 'http://127.0.0.1:9' }) });
    expect(unreachable.error?.message).toMatch(/Could not reach the Campaign Dialing API at http:\/\/127\.0\.0\.1:9\//);
    expect(unreachable.error?.description).toMatch(/refused the connection.*Base URL/);
  });

  it('a 429 waits out Retry-After and retries; past the bound the node fails with the 429', async () => {
    const limited = await startServer({ rateLimit: { rate: 2, burst: 2 } });
    try {
      const a = (await createAccount(limited)).id;
      const token = await createKey(limited, a, ['CampaignAdmin']);
      const c = await createCampaign(limited, a, { name: 'Rate', type: 'Dynamic', state: 'Active' });
      await addNumbers(limited, a, c.id, phoneNumbers(1_000));
      const front = await startProxy(limited.url);
      try {
        const creds = { campaignDialingApi: { baseUrl: front.url, accountId: a, apiToken: token } };
        const res = await runNode({ pkg, type: NODE, credentials: creds,
          parameters: { resource: 'campaignNumber', operation: 'getAll', campaignId: byId(c.id), returnAll: true, options: { sortBy: 'number' } } });
        expect(res.error).toBeUndefined();
        expect(res.items).toHaveLength(1_000);
        expect(front.exchanges.filter((e) => e.status === 429).length).toBeGreaterThan(0);

        front.intercept = () => ({ status: 429, headers: { 'retry-after': '0', 'content-type': 'application/problem+json' },
          body: JSON.stringify({ status: 429, detail: 'Too many requests: slow down' }) });
        const seen = front.exchanges.length;
        const failed = await runNode({ pkg, type: NODE, credentials: creds, parameters: { resource: 'campaign', operation: 'getAll' } });
        expect((failed.error as { httpCode?: string }).httpCode).toBe('429');
        expect(failed.error?.message).toMatch(/slow down/);
        expect(front.exchanges.length - seen).toBe(6);
      } finally {
        await front.close();
      }
    } finally {
      await limited.close();
    }
  });
});
