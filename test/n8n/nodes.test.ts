// The Campaign Dialing action node inside n8n's execution engine, against a running reference server: every
// operation, paging, batching, binary CSV upload, the error paths and Continue On Fail.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { INodeExecutionData, INodeProperties, INodePropertyCollection, INodePropertyOptions } from 'n8n-workflow';
import { LIST_SPECS } from '../../api/list-query.ts';
import type { CallDetail, Campaign, CampaignNumber } from '../../api/records.ts';
import { loadPackage, nodeSubtitle, runAsTool, runNode, testCredential, type N8nPackage } from '../support/n8n.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { addNumbers, createAccount, createCampaign, createKey, phoneNumbers, q, setNumber, startServer, type TestServer } from '../support/server.ts';

/** The n8n package's folder (its package.json's n8n block names the built files in n8n/dist/). */
const PACKAGE = new URL('../../n8n/', import.meta.url).pathname;
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

/** What the node run as an AI agent's tool answers when it fails: one item whose `error` is the text for the model (nothing is thrown). */
async function toolAnswer(parameters: Record<string, unknown>, token = admin): Promise<string> {
  const res = await runAsTool({ pkg, type: NODE, credentials: credentials(token), parameters });
  expect(res.error).toBeUndefined();
  expect(res.items).toHaveLength(1);
  return String(res.items![0]!.json.error);
}

function run(parameters: Record<string, unknown>, options: { items?: INodeExecutionData[]; token?: string; continueOnFail?: boolean } = {}) {
  return runNode({ pkg, type: NODE, parameters, credentials: credentials(options.token), items: options.items, continueOnFail: options.continueOnFail });
}

beforeAll(async () => {
  pkg = await loadPackage(PACKAGE);
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
    // 204 (the ID) or 200 (the deleted campaign): either way the item names the campaign and says it is deleted.
    expect(ok.items[0]!.json).toMatchObject({ id: draft.id, deleted: true });
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
    const filters = { number: '+4930', status: ['NotContacted'] };
    const pagesOf = async (options: Record<string, unknown>) => {
      const before = proxy.exchanges.length;
      const res = await run({ resource: 'campaignNumber', operation: 'getAll', campaignId: byId(c.id), returnAll: true, filters, options });
      expect(res.error).toBeUndefined();
      expect(json(res.items).map((n) => n.number as string)).toEqual([...berlin].sort().reverse());
      return proxy.exchanges.slice(before).map((e) => new URL(e.path, 'http://x').searchParams);
    };
    // By default, pages as large as the API serves: all 1,234 in one request.
    expect((await pagesOf({ sortBy: 'number', sortDirection: 'DESC' })).map((p) => JSON.parse(p.get('range')!))).toEqual([[0, 9_999]]);
    // A lower Page Size for a server that caps pages: the last page asks only for the records the total leaves.
    const pages = await pagesOf({ sortBy: 'number', sortDirection: 'DESC', pageSize: 500 });
    expect(pages.map((p) => JSON.parse(p.get('range')!))).toEqual([[0, 499], [500, 999], [1_000, 1_233]]);
    for (const p of pages) {
      expect(JSON.parse(p.get('filter')!)).toEqual(filters);
      expect(JSON.parse(p.get('sort')!)).toEqual(['number', 'DESC']);
    }
    // A server that serves at most 300 records a page, whatever the range asks (its Content-Range and X-Total-Count
    // say so): each page is read on from where the one before ended.
    proxy.rewritePath = (path) => {
      const url = new URL(path, 'http://x');
      const range = url.searchParams.get('range');
      if (!url.pathname.endsWith('/numbers') || !range) return path;
      const [first, last] = JSON.parse(range) as [number, number];
      url.searchParams.set('range', JSON.stringify([first, Math.min(last, first + 299)]));
      return `${url.pathname}${url.search}`;
    };
    try {
      expect((await pagesOf({ sortBy: 'number', sortDirection: 'DESC' })).map((p) => JSON.parse(p.get('range')!)))
        .toEqual([[0, 9_999], [300, 1_233], [600, 1_233], [900, 1_233], [1_200, 1_233]]);
    } finally {
      proxy.rewritePath = null;
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
    // 204 gives each ID; a 200 answering the deleted records gives them too.
    expect(res.items.map((i) => [i.json.id, i.json.deleted, i.pairedItem])).toEqual(listed.map((n, i) => [n.id, true, { item: i }]));
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
    expect(unreachable.error?.message).toBe(
      'Could not reach the Campaign Dialing API at http://127.0.0.1:9: the connection was refused: no server is listening at that host and port (ECONNREFUSED)');
    expect(unreachable.error?.description).toMatch(/Base URL of the credential .*server is running.*firewall/);
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
          parameters: { resource: 'campaignNumber', operation: 'getAll', campaignId: byId(c.id), returnAll: true, options: { sortBy: 'number', pageSize: 100 } } });
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

// "On Error" in the node's settings, through n8n-core's own routing (WorkflowExecute.handleNodeErrorOutput): with
// "Continue (using error output)" a failed item goes to the error output, its JSON the error and its details plus the
// input item's fields; with "Continue" every item stays in the regular output, its reason beside its values. Each run
// connects a node to each output, as a workflow's branches.
describe('On Error', () => {
  const modes = ['continueErrorOutput', 'continueRegularOutput'] as const;
  type Mode = (typeof modes)[number];
  /** The node's two outputs (pairedItem as the node set it), after checking that the branch nodes received them. */
  async function branches(parameters: Record<string, unknown>, items: INodeExecutionData[], onError: Mode) {
    const res = await runNode({ pkg, type: NODE, parameters, credentials: credentials(), items, onError, branches: true });
    expect(res.error).toBeUndefined();
    const [success = [], error = []] = res.outputs.map((o) => o ?? []);
    expect(res.branches!.success.map((i) => i.json)).toEqual(success.map((i) => i.json));
    expect(res.branches!.error.map((i) => i.json)).toEqual(error.map((i) => i.json));
    if (onError === 'continueRegularOutput') expect(res.outputs).toHaveLength(1);
    return { success, error };
  }
  const paired = (items: INodeExecutionData[]) => items.map((i) => (i.pairedItem as { item: number }).item);

  it('Delete: a Draft campaign is deleted, an Active one (409) goes to the error output, or stays in the regular output with its reason', async () => {
    for (const onError of modes) {
      const draft = await createCampaign(s, acc, { name: `Draft ${onError}` });
      const active = await createCampaign(s, acc, { name: `Active ${onError}`, type: 'Dynamic', state: 'Active' });
      const got = await branches({ resource: 'campaign', operation: 'delete', campaignId: byId('={{ $json.id }}') },
        [{ json: { id: draft.id } }, { json: { id: active.id } }], onError);
      if (onError === 'continueErrorOutput') {
        expect(paired(got.success)).toEqual([0]);
        expect(got.success[0]!.json).toMatchObject({ id: draft.id, deleted: true });
        expect(paired(got.error)).toEqual([1]);
        // The engine adds the input item's fields to an error item, so the campaign's ID is there to act on.
        expect(got.error[0]!.json).toMatchObject({ id: active.id, details: { httpCode: '409' }, error: expect.stringMatching(/Active/) });
      } else {
        expect(paired(got.success)).toEqual([0, 1]);
        expect(got.success[1]!.json).toMatchObject({ httpCode: '409', error: expect.stringMatching(/Active/) });
        expect(got.success[1]!.json.deleted).toBeUndefined();
        expect(got.error).toEqual([]);
      }
      expect(await api<Campaign[]>(`/campaigns${q({ filter: { ids: [active.id] } })}`)).toHaveLength(1);
    }
  });

  it('Add: rejected phone numbers (invalid, repeated in the request, already in the campaign) go to the error output, each naming its item', async () => {
    for (const onError of modes) {
      const c = await createCampaign(s, acc, { name: `Add ${onError}`, type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
      await addNumbers(s, acc, c.id, ['+12125558999']);
      const items = ['+12125558001', 'not a number', '+12125558002', '+1 212 555 8001', '+12125558999'].map((phone) => ({ json: { phone } }));
      const got = await branches({ resource: 'campaignNumber', operation: 'add', campaignId: byId(c.id), phoneNumber: '={{ $json.phone }}' },
        items, onError);
      const rejected = onError === 'continueErrorOutput' ? got.error : got.success.filter((i) => i.json.error !== undefined);
      const added = onError === 'continueErrorOutput' ? got.success : got.success.filter((i) => i.json.error === undefined);
      // The reason's details: in `details` on the error output, beside the error in the regular output.
      const about = (item: INodeExecutionData) => ({ ...item.json, ...(item.json.details as object | undefined) });
      expect(paired(added)).toEqual([0, 2]);
      expect(added.map((i) => i.json.number)).toEqual(['+12125558001', '+12125558002']);
      expect(paired(rejected)).toEqual([1, 3, 4]);
      expect(about(rejected[0]!)).toMatchObject({ code: 'invalid_number', number: 'not a number',
        error: expect.stringMatching(/^The phone number "not a number" of item 1 was rejected: \S/) });
      expect(about(rejected[1]!)).toMatchObject({ code: 'duplicate', duplicateOfItem: 0,
        error: 'The phone number "+1 212 555 8001" of item 3 duplicates the phone number of item 0' });
      expect(about(rejected[2]!)).toMatchObject({ code: 'duplicate', error: expect.stringMatching(/^The phone number "\+12125558999" of item 4 was rejected: \S/) });
      expect(about(rejected[2]!).duplicateOfItem).toBeUndefined();
      if (onError === 'continueErrorOutput') expect(rejected.map((i) => i.json.phone)).toEqual(['not a number', '+1 212 555 8001', '+12125558999']);
      else expect(got.error).toEqual([]);
      const inCampaign = await api<CampaignNumber[]>(`/campaigns/${c.id}/numbers${q({ range: [0, 99], sort: ['number', 'ASC'] })}`);
      expect(inCampaign.map((n) => n.number)).toEqual(['+12125558001', '+12125558002', '+12125558999']);
    }
  });

  it('an unknown campaign (404) and missing parameters go to the error output of each operation', async () => {
    const unknown = byId('00000000-0000-4000-8000-000000000000');
    const cases: Array<{ parameters: Record<string, unknown>; error: RegExp; httpCode?: string }> = [
      { parameters: { resource: 'campaign', operation: 'changeState', campaignId: unknown, state: 'Paused' }, error: /./, httpCode: '404' },
      { parameters: { resource: 'campaign', operation: 'duplicate', campaignId: unknown }, error: /./, httpCode: '404' },
      { parameters: { resource: 'campaignNumber', operation: 'getAll', campaignId: unknown }, error: /./, httpCode: '404' },
      { parameters: { resource: 'campaignNumber', operation: 'add', campaignId: unknown, phoneNumber: '+12125557001' }, error: /./, httpCode: '404' },
      { parameters: { resource: 'campaignNumber', operation: 'delete', campaignId: unknown, numberIds: '1' }, error: /./, httpCode: '404' },
      { parameters: { resource: 'report', operation: 'numberDetails', campaignId: unknown }, error: /./, httpCode: '404' },
      { parameters: { resource: 'campaign', operation: 'deleteMany', campaignIds: '={{ $json.none }}' }, error: /^The Campaign IDs field is empty for item 0$/ },
      { parameters: { resource: 'campaignNumber', operation: 'getAll', campaignId: byId('={{ $json.none }}') }, error: /^No campaign is selected for item 0$/ },
      { parameters: { resource: 'campaign', operation: 'getAll', filters: { endedAt_gte: '={{ "soon" }}' } }, error: /Ended At or After/ },
    ];
    for (const { parameters, error, httpCode } of cases) {
      const what = `${String(parameters.resource)} ${String(parameters.operation)}`;
      const routed = await branches(parameters, [{ json: { n: 1 } }], 'continueErrorOutput');
      expect(routed.success, what).toEqual([]);
      expect(routed.error, what).toHaveLength(1);
      expect(routed.error[0]!.json.error, what).toMatch(error);
      expect((routed.error[0]!.json.details as { httpCode?: string } | undefined)?.httpCode, what).toBe(httpCode);
      expect(routed.error[0]!.json.n, what).toBe(1);
      const kept = await branches(parameters, [{ json: { n: 1 } }], 'continueRegularOutput');
      expect(kept.success.map((i) => i.json.error), what).toEqual([routed.error[0]!.json.error]);
    }
  });

  it('Delete Many: a refused request (409) sends every item of it to the error output', async () => {
    const draft = await createCampaign(s, acc, { name: 'Many draft' });
    const active = await createCampaign(s, acc, { name: 'Many active', type: 'Dynamic', state: 'Active' });
    const got = await branches({ resource: 'campaign', operation: 'deleteMany', campaignIds: '={{ $json.id }}' },
      [{ json: { id: draft.id } }, { json: { id: active.id } }], 'continueErrorOutput');
    expect(got.success).toEqual([]);
    expect(paired(got.error)).toEqual([0, 1]);
    expect(got.error.map((i) => [i.json.id, (i.json.details as { httpCode?: string }).httpCode])).toEqual([[draft.id, '409'], [active.id, '409']]);
  });
});

describe('rejected phone numbers when the node stops on errors', () => {
  it('one error names how many were rejected and which items, and says how many were added', async () => {
    const c = await createCampaign(s, acc, { name: 'Stop', type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
    await addNumbers(s, acc, c.id, ['+12125558999']);
    const items = ['+12125558001', 'not a number', '+12125558002', '+1 212 555 8001', '+12125558999'].map((phone) => ({ json: { phone } }));
    const res = await run({ resource: 'campaignNumber', operation: 'add', campaignId: byId(c.id), phoneNumber: '={{ $json.phone }}' }, { items });
    expect(res.error?.message).toMatch(new RegExp('^3 of 5 phone numbers were rejected: item 1 \\("not a number": [^)]+\\), '
      + 'item 3 \\("\\+1 212 555 8001": duplicates the phone number of item 0\\) and item 4 \\("\\+12125558999": [^)]+\\)$'));
    expect(res.error?.description).toMatch(/^The other 2 phone numbers were added to the campaign\. .*On Error.*"Continue \(using error output\)"/);
    expect((res.error as { context?: { itemIndex?: number } }).context?.itemIndex).toBe(1);
    const inCampaign = await api<CampaignNumber[]>(`/campaigns/${c.id}/numbers${q({ range: [0, 99], sort: ['number', 'ASC'] })}`);
    expect(inCampaign.map((n) => n.number)).toEqual(['+12125558001', '+12125558002', '+12125558999']);

    const many = await run({ resource: 'campaignNumber', operation: 'add', campaignId: byId(c.id), phoneNumber: '={{ $json.phone }}' },
      { items: [...Array.from({ length: 13 }, (_, i) => ({ json: { phone: `bad ${i}` } })), { json: { phone: '+12125558003' } }] });
    expect(many.error?.message).toMatch(/^13 of 14 phone numbers were rejected: item 0 \("bad 0": [^)]+\), item 1 .*item 9 \("bad 9": [^)]+\) and 3 more$/);
    expect(many.error?.description).toMatch(/^The other phone number was added to the campaign\./);
  });
});

describe('the credential test', () => {
  const check = (data: Record<string, string>) => testCredential({ pkg, credentialType: 'campaignDialingApi',
    data: { baseUrl: s.url, accountId: acc, apiToken: admin, ...data } });

  it('passes with a working Base URL, Account ID and API token', async () => {
    expect(await check({})).toMatchObject({ status: 'OK' });
    expect(await check({ baseUrl: `${s.url}/`, apiToken: reader })).toMatchObject({ status: 'OK' });
  });

  it('says which field is wrong on a 401, 403 or 404', async () => {
    expect(await check({ apiToken: 'cdk_not-a-token' })).toEqual({ status: 'Error', message: expect.stringMatching(/^The API token was not accepted \(401\)/) });
    const other = (await createAccount(s, 'Other')).id;
    expect(await check({ accountId: other })).toEqual({ status: 'Error', message: expect.stringMatching(/\(403\): check the Account ID/) });
    expect(await check({ baseUrl: `${s.url}/v1` })).toEqual({ status: 'Error', message: expect.stringMatching(/at this Base URL \(404\): give the address without \/v1/) });
  });

  it('says what could not be reached and what to check, in the words of the node', async () => {
    const down = await check({ baseUrl: 'http://127.0.0.1:9' });
    const node = await runNode({ pkg, type: NODE, parameters: { resource: 'campaign', operation: 'getAll' },
      credentials: credentials(admin, { baseUrl: 'http://127.0.0.1:9' }) });
    expect(down).toEqual({ status: 'Error', message: `${node.error?.message}. ${node.error?.description}` });
    expect(down.message).toMatch(/^Could not reach the Campaign Dialing API at http:\/\/127\.0\.0\.1:9: the connection was refused.*\(ECONNREFUSED\)\. Check that the Base URL/);
    expect(await check({ baseUrl: 'localhost:4000' })).toEqual({ status: 'Error', message: expect.stringMatching(/^The Base URL "localhost:4000" of the credential is not a web address/) });
    const notApi = await startProxy(s.url);
    try {
      notApi.intercept = () => ({ status: 200, headers: { 'content-type': 'text/html' }, body: '<html>Welcome</html>' });
      expect(await check({ baseUrl: notApi.url })).toEqual({ status: 'Error', message: expect.stringMatching(/answered, but not as the Campaign Dialing API/) });
    } finally {
      await notApi.close();
    }
  });
});

// n8n's title case, as its nodes write it: every word capitalised but articles, conjunctions and prepositions of up to
// three letters, which stay lowercase unless first or last ("Sort By", "Number Statuses to Copy"). "At" is capitalised,
// as n8n's own fields write it ("Created At", "Ended At or After"). (eslint-plugin-n8n-nodes-base's
// node-param-display-name-miscased accepts either case for these words.)
const SMALL_WORDS = new Set(['a', 'an', 'the', 'and', 'but', 'or', 'nor', 'as', 'by', 'for', 'in', 'of', 'on', 'per', 'to', 'up', 'via', 'vs']);
function titleCaseProblem(label: string): string | undefined {
  if (label !== label.trim() || / {2}/.test(label)) return 'stray spaces';
  const words = label.split(' ');
  for (const [k, word] of words.entries()) {
    const small = SMALL_WORDS.has(word.toLowerCase()) && k > 0 && k < words.length - 1;
    if (small && word !== word.toLowerCase()) return `"${word}" is a short word: lowercase`;
    if (!small && !/^[A-Z0-9]/.test(word)) return `"${word}" must start with a capital`;
  }
  return undefined;
}

/** Every label of a list of parameters: display names (collections, fixed collections, resource locator modes included) and option names. */
function labelsOf(properties: Array<INodeProperties | INodePropertyOptions | INodePropertyCollection>, where: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const p of properties) {
    if ('type' in p && p.type === 'notice') continue;
    const label = 'displayName' in p ? p.displayName : p.name;
    const at = `${where} > ${label}`;
    out.push([label, at]);
    if ('options' in p && Array.isArray(p.options)) out.push(...labelsOf(p.options as INodeProperties[], at));
    if ('values' in p && Array.isArray(p.values)) out.push(...labelsOf(p.values, at));
    if ('modes' in p && Array.isArray(p.modes)) out.push(...p.modes.map((m): [string, string] => [m.displayName, `${at} > ${m.displayName}`]));
  }
  return out;
}

describe('labels', () => {
  it('every display name and option name of the action node and the credential is in n8n\'s title case', () => {
    const { description } = pkg.nodeTypes.getByNameAndVersion(`${pkg.packageName}.${NODE}`);
    const credential = pkg.credentialTypes.getByName('campaignDialingApi');
    const labels = [
      [description.displayName, 'node'], [credential.displayName, 'credential'],
      ...labelsOf(description.properties, 'node'), ...labelsOf(credential.properties, 'credential'),
    ] as Array<[string, string]>;
    expect(labels.length).toBeGreaterThan(150);
    const problems = labels.map(([label, at]) => [at, titleCaseProblem(label)]).filter(([, problem]) => problem);
    expect(problems).toEqual([]);
    // The comparison filters read alike for timestamps and counts, for every list.
    const names = new Set(labels.map(([label]) => label));
    for (const label of ['End Date At or After', 'Ended At or After', 'Started Before', 'Answered At or Before', 'Attempts At Least',
      'Attempts At Most', 'Attempts Greater Than']) {
      expect(names, label).toContain(label);
    }
    expect(titleCaseProblem('Ended At Or After')).toBe('"Or" is a short word: lowercase');
    expect(titleCaseProblem('Ended at or After')).toBe('"at" must start with a capital');
    expect(titleCaseProblem('sort By')).toBe('"sort" must start with a capital');
  });

  it('the subtitle names the operation and resource in words for every operation', () => {
    const { description } = pkg.nodeTypes.getByNameAndVersion(`${pkg.packageName}.${NODE}`);
    const resource = description.properties.find((p) => p.name === 'resource')!;
    let count = 0;
    for (const r of resource.options as INodePropertyOptions[]) {
      const operation = description.properties.find((p) => p.name === 'operation' && p.displayOptions?.show?.resource?.includes(r.value))!;
      for (const o of operation.options as INodePropertyOptions[]) {
        expect(nodeSubtitle({ pkg, type: NODE, parameters: { resource: r.value, operation: o.value } })).toBe(`${o.name}: ${r.name}`);
        count++;
      }
    }
    expect(count).toBe(12);
    // The defaults, as a node just dropped on the canvas shows them.
    expect(nodeSubtitle({ pkg, type: NODE, parameters: {} })).toBe('Get Many: Campaign');
  });
});

// Tracker issue 20 §4: what a user (or a model) stumbled on.
describe('rough edges', () => {
  it('the credential test passes for a key that can only add numbers, and says what it can do', async () => {
    const check = (token: string, accountId = acc) => testCredential({ pkg, credentialType: 'campaignDialingApi',
      data: { baseUrl: s.url, accountId, apiToken: token } });
    const provider = await createKey(s, acc, ['CampaignNumberProvider']);
    const numbersOnly = await check(provider);
    expect(numbersOnly).toEqual({ status: 'OK', message: expect.stringMatching(/^Connection successful\. This API key cannot list campaigns: it works for the numbers of campaigns only/) });
    expect(await check(await createKey(s, acc, ['CampaignNumberAdmin']))).toEqual(numbersOnly);
    // The same key for another account is refused, with the API's reason in words.
    const other = (await createAccount(s, 'Provider elsewhere')).id;
    expect(await check(provider, other)).toEqual({ status: 'Error',
      message: expect.stringMatching(/^The API token is valid but was refused for this account \(403\): check the Account ID.*The API said: This API key belongs to another account/) });
    // And the key does what the test says it does.
    const c = await createCampaign(s, acc, { name: 'Provided', type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
    const added = await run({ resource: 'campaignNumber', operation: 'add', campaignId: byId(c.id), phoneNumber: '+12125556001' }, { token: provider });
    expect(added.error).toBeUndefined();
    expect(added.items[0]!.json).toMatchObject({ number: '+12125556001', status: 'NotContacted' });
  });

  it('Number Details\' "Attempts Less Than" starts at 1, as the Numbers list\'s does, and so matches numbers not yet called', async () => {
    const { properties } = pkg.nodeTypes.getByNameAndVersion(`${pkg.packageName}.${NODE}`).description;
    const lessThan = (resource: string, operation: string) => (properties.find((p) => p.name === 'filters'
      && p.displayOptions?.show?.resource?.includes(resource) && p.displayOptions.show.operation?.includes(operation))!
      .options as INodeProperties[]).find((o) => o.name === 'attempts_lt')!;
    expect(lessThan('report', 'numberDetails').default).toBe(1);
    expect(lessThan('report', 'numberDetails').default).toBe(lessThan('campaignNumber', 'getAll').default);
    const c = await createCampaign(s, acc, { name: 'Not yet called', type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
    await addNumbers(s, acc, c.id, phoneNumbers(4, 8100));
    const res = await run({ resource: 'report', operation: 'numberDetails', campaignId: byId(c.id), returnAll: true,
      filters: { attempts_lt: lessThan('report', 'numberDetails').default } });
    expect(res.error).toBeUndefined();
    expect(json(res.items).map((r) => r.attempts)).toEqual([0, 0, 0, 0]);
  });

  it('Custom API Call, which n8n offers because the credential authenticates, points to the HTTP Request node with this credential', async () => {
    for (const parameters of [{ resource: '__CUSTOM_API_CALL__' }, { resource: 'campaign', operation: '__CUSTOM_API_CALL__' }]) {
      const res = await run(parameters);
      expect(res.error?.message).toBe('Custom API Call is made with n8n\'s HTTP Request node, not with this node');
      expect(res.error?.description).toContain(`"Predefined Credential Type", Credential Type to "Campaign Dialing API"`);
      expect(res.error?.description).toContain(`The URL is ${proxy.url}/v1/accounts/${acc}/ followed by`);
    }
    // What the HTTP Request node sends with this credential (its generic authenticate block) is what the API takes.
    const { authenticate } = pkg.credentialTypes.getByName('campaignDialingApi');
    expect(authenticate).toEqual({ type: 'generic', properties: { headers: { Authorization: '=Bearer {{$credentials.apiToken}}' } } });
    const answer = await fetch(`${proxy.url}/v1/accounts/${acc}/campaigns?range=[0,0]`, { headers: { Authorization: `Bearer ${admin}` } });
    expect(answer.status).toBe(200);
  });

  it('run as an AI agent\'s tool, an error tells the model what was wrong with its input, not which setting to change', async () => {
    const c = await createCampaign(s, acc, { name: 'Tool', type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
    const rejected = await toolAnswer({ resource: 'campaignNumber', operation: 'add', campaignId: byId(c.id), phoneNumber: 'call me maybe' });
    expect(rejected).toMatch(/^The phone number "call me maybe" was rejected: .*\nNo phone number was added\. Call again with only the rejected phone numbers, corrected: each in international format/);
    expect(rejected).not.toMatch(/Settings|On Error|item 0/);
    const unknown = await toolAnswer({ resource: 'campaign', operation: 'changeState', campaignId: byId('00000000-0000-4000-8000-000000000000'), state: 'Paused' });
    expect(unknown).toMatch(/^Campaign "00000000-0000-4000-8000-000000000000" does not exist in this account\.\nAn ID in the input does not exist: get campaign IDs with the Get Many operation/);
    expect(unknown).not.toMatch(/Settings|Base URL/);
    const added = await runAsTool({ pkg, type: NODE, credentials: credentials(),
      parameters: { resource: 'campaignNumber', operation: 'add', campaignId: byId(c.id), phoneNumber: '+12125556101' } });
    expect(added).toEqual({ items: [expect.objectContaining({ json: expect.objectContaining({ number: '+12125556101' }) })] });
    // The same failure in a workflow still fails the node, and tells its user the setting and the item.
    const inWorkflow = await run({ resource: 'campaignNumber', operation: 'add', campaignId: byId(c.id), phoneNumber: 'call me maybe' });
    expect(inWorkflow.error?.message).toMatch(/^The phone number "call me maybe" of item 0 was rejected/);
    expect(inWorkflow.error?.description).toMatch(/Settings > On Error/);
  });

  it('run as a tool, no error names an item: a tool call is one item, whose index means nothing to a model', async () => {
    const c = await createCampaign(s, acc, { name: 'Tool items', type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
    await addNumbers(s, acc, c.id, phoneNumbers(1, 8400));
    const [called] = await api<CampaignNumber[]>(`/campaigns/${c.id}/numbers`);
    setNumber(s, called!.id, 'Success', 1);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ resource: 'campaign', operation: 'deleteMany', campaignIds: '' }, /^The Campaign IDs field is empty$/],
      [{ resource: 'campaignNumber', operation: 'getAll', campaignId: byId('') }, /^No campaign is selected\.\nUnder Campaign/],
      [{ resource: 'campaignNumber', operation: 'add', campaignId: byId(c.id), phoneNumber: '' }, /^The Phone Number field is empty$/],
      [{ resource: 'campaignNumber', operation: 'add', campaignId: byId(c.id), phoneNumber: '+12125558401', variables: { variable: [{ name: ' ', value: 'x' }] } },
        /^Variable 1 has no name\.\nGive every variable/],
      [{ resource: 'campaignNumber', operation: 'delete', campaignId: byId(c.id), numberIds: called!.id }, /only Not Contacted or Retry Pending numbers can be.*\nNothing was deleted\.\nThe campaign or number is in a state/s],
    ];
    for (const [parameters, expected] of cases) {
      const answer = await toolAnswer(parameters);
      expect(answer, JSON.stringify(parameters)).toMatch(expected);
      expect(answer, JSON.stringify(parameters)).not.toMatch(/\bitems? \d/);
    }
  });

  it('a key restricted to campaigns: the credential test says so without a made-up campaign, and a refusal names the restriction', async () => {
    const mine = await createCampaign(s, acc, { name: 'Restricted mine', type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
    const other = await createCampaign(s, acc, { name: 'Restricted other', type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
    const restricted = await createKey(s, acc, ['CampaignNumberProvider'], [mine.id]);
    const tested = await testCredential({ pkg, credentialType: 'campaignDialingApi', data: { baseUrl: s.url, accountId: acc, apiToken: restricted } });
    expect(tested).toEqual({ status: 'OK', message: expect.stringMatching(/^Connection successful: the API token and the Account ID were accepted\. This API key is restricted to certain campaigns, so it cannot be tested further without one of them/) });
    expect(tested.message).not.toMatch(/00000000|campaign "/);
    // A key of another account is still refused.
    const elsewhere = (await createAccount(s, 'Restricted elsewhere')).id;
    expect(await testCredential({ pkg, credentialType: 'campaignDialingApi', data: { baseUrl: s.url, accountId: elsewhere, apiToken: restricted } }))
      .toMatchObject({ status: 'Error', message: expect.stringMatching(/\(403\): check the Account ID/) });

    const add = (campaignId: string) => ({ resource: 'campaignNumber', operation: 'add', campaignId: byId(campaignId), phoneNumber: '+12125558501' });
    expect((await run(add(mine.id), { token: restricted })).error).toBeUndefined();
    const refused = await run(add(other.id), { token: restricted });
    expect((refused.error as { httpCode?: string }).httpCode).toBe('403');
    expect(refused.error?.message).toMatch(/^This API key is restricted to 1 campaign/);
    expect(refused.error?.description).toMatch(/^The API key is restricted to certain campaigns, and this is not one of them: pick one of the key's campaigns/);
    expect(refused.error?.description).not.toMatch(/deleted|another account/);
    const asTool = await toolAnswer(add(other.id), restricted);
    expect(asTool).toMatch(/\nThis tool's API key is restricted to certain campaigns, and this is not one of them: do not call again for this campaign/);
  });

  it('a 404 of a record that does not exist points at the ID, and only an address the API does not serve at the Base URL', async () => {
    const missing = await run({ resource: 'campaign', operation: 'changeState', campaignId: byId('00000000-0000-4000-8000-000000000000'), state: 'Active' });
    expect(missing.error?.message).toBe('Campaign "00000000-0000-4000-8000-000000000000" does not exist in this account');
    expect(missing.error?.description).toMatch(/^Check the ID of the campaign or number record/);
    expect(missing.error?.description).not.toMatch(/Base URL|\/v1/);
    const misaddressed = await runNode({ pkg, type: NODE, parameters: { resource: 'campaign', operation: 'getAll' },
      credentials: credentials(admin, { baseUrl: `${s.url}/v1` }) });
    expect((misaddressed.error as { httpCode?: string }).httpCode).toBe('404');
    expect(misaddressed.error?.description).toMatch(/Base URL of the credential does not end in \/v1/);
  });

  it('says the API\'s spellings in words: roles, operations and statuses', async () => {
    const c = await createCampaign(s, acc, { name: 'Spelled', type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
    const denied = await run({ resource: 'campaign', operation: 'changeState', campaignId: byId(c.id), state: 'Paused' }, { token: reader });
    expect(denied.error?.message).toBe('The key\'s role (Campaign Reader) does not allow changing the state of campaigns; Campaign Admin would');
    await addNumbers(s, acc, c.id, phoneNumbers(1, 8200));
    const [called] = await api<CampaignNumber[]>(`/campaigns/${c.id}/numbers`);
    setNumber(s, called!.id, 'Success', 1);
    const refused = await run({ resource: 'campaignNumber', operation: 'delete', campaignId: byId(c.id), numberIds: called!.id });
    expect((refused.error as { httpCode?: string }).httpCode).toBe('409');
    expect(refused.error?.message).toMatch(/only Not Contacted or Retry Pending numbers can be/);
    expect(refused.error?.message).not.toMatch(/NotContacted|RetryPending/);
  });

  it('a refused Delete Many or Delete points at the item whose ID is at fault, not at the first item', async () => {
    const drafts = [await createCampaign(s, acc, { name: 'Blame draft 0' }), await createCampaign(s, acc, { name: 'Blame draft 1' })];
    const active = await createCampaign(s, acc, { name: 'Blame active', type: 'Dynamic', state: 'Active' });
    const many = await run({ resource: 'campaign', operation: 'deleteMany', campaignIds: '={{ $json.id }}' },
      { items: [drafts[0]!, active, drafts[1]!].map((c) => ({ json: { id: c.id } })) });
    expect((many.error as { httpCode?: string }).httpCode).toBe('409');
    expect((many.error as { context?: { itemIndex?: number } }).context?.itemIndex).toBe(1);
    expect(many.error?.description).toMatch(/^The IDs at fault come from item 1; nothing was deleted, for any item\./);
    expect(await api<Campaign[]>(`/campaigns${q({ filter: { ids: drafts.map((d) => d.id) } })}`)).toHaveLength(2);

    const c = await createCampaign(s, acc, { name: 'Blame numbers', type: 'Dynamic', state: 'Active', startDate: '2027-01-01T00:00:00Z' });
    await addNumbers(s, acc, c.id, phoneNumbers(2, 8300));
    const listed = await api<CampaignNumber[]>(`/campaigns/${c.id}/numbers`);
    const numbers = await run({ resource: 'campaignNumber', operation: 'delete', campaignId: byId(c.id), numberIds: '={{ $json.id }}' },
      { items: [{ json: { id: listed[0]!.id } }, { json: { id: listed[1]!.id } }, { json: { id: '999999999' } }] });
    expect((numbers.error as { httpCode?: string }).httpCode).toBe('404');
    expect((numbers.error as { context?: { itemIndex?: number } }).context?.itemIndex).toBe(2);
    expect(numbers.error?.description).toMatch(/^The IDs at fault come from item 2/);
  });
});
