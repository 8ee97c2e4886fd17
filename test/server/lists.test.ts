// §4.1 over HTTP: range, sort, every filter key of every list endpoint, headers, GET-body parameters.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallDetail, Campaign, CampaignNumber } from '../../api/records.ts';
import { addNumbers, createAccount, createCampaign, createKey, phoneNumbers, q, rawRequest, setNumber, startServer, type TestServer } from '../support/server.ts';

let s: TestServer;
let acc: string;
let token: string;
let campaigns: Campaign[];
let numbersCampaign: Campaign;
const api = (path: string) => `/v1/accounts/${acc}${path}`;

async function list<T>(path: string, params: Parameters<typeof q>[0] = {}): Promise<{ status: number; body: T[]; total: number; range: string | null; res: Response }> {
  const res = await s.request(api(path) + q(params), { token });
  const body = (await res.json()) as T[];
  return { status: res.status, body, total: Number(res.headers.get('x-total-count')), range: res.headers.get('content-range'), res };
}

beforeAll(async () => {
  s = await startServer();
  acc = (await createAccount(s, 'Lists', 'America/New_York')).id;
  token = await createKey(s, acc, ['CampaignAdmin']);
  campaigns = [];
  const specs = [
    { name: 'Alpha', state: 'Active', type: 'Dynamic', phoneSystemId: 'ps1', extensionId: 'e1', dialer: { mode: 'Power' }, tagIds: ['red', 'blue'], startDate: '2024-12-01T00:00:00', endDate: '2024-12-31T00:00:00', startedAt: '2024-12-01T09:00:00', callflowIds: ['cf1'], callBehavior: { humanAnswerCallflowId: 'h1', answeringMachineCallflowId: 'm1' }, webhookEndpointId: 'wh1' },
    { name: 'Bravo', state: 'Paused', type: 'Static', phoneSystemId: 'ps2', extensionId: 'e2', dialer: { mode: 'Predictive' }, tagIds: ['green'], startDate: '2024-11-01T00:00:00', endDate: '2025-01-31T00:00:00', callflowIds: ['cf2'], callBehavior: { humanAnswerCallflowId: 'h2', answeringMachineCallflowId: 'cf9' }, isArchived: true },
    { name: 'Charlie', state: 'Finished', type: 'Static', dialer: { mode: 'Power' }, startedAt: '2024-10-01T09:00:00', endedAt: '2024-10-05T18:00:00' },
  ];
  for (const spec of specs) campaigns.push(await createCampaign(s, acc, spec));
  for (let i = 0; i < 9; i++) campaigns.push(await createCampaign(s, acc, { name: `Zulu ${String(i).padStart(2, '0')}` }));
  numbersCampaign = campaigns[0]!;
  await addNumbers(s, acc, numbersCampaign.id, phoneNumbers(30).map((n, i) => ({ number: n, varValues: [`v${i}`] })));
  await addNumbers(s, acc, campaigns[1]!.id, phoneNumbers(5, 100));
});
afterAll(() => s.close());

describe('campaigns list', () => {
  it('answers the first 10 by default with X-Total-Count, Content-Range and exposed headers', async () => {
    const r = await list<Campaign>('/campaigns');
    expect(r.status).toBe(200);
    expect(r.body).toHaveLength(10);
    expect(r.total).toBe(12);
    expect(r.range).toBe('campaigns 0-9/12');
    expect(r.res.headers.get('access-control-expose-headers')).toMatch(/X-Total-Count.*Content-Range/);
    expect(r.body[0]).toMatchObject({ id: campaigns[0]!.id, name: 'Alpha', state: 'Active', numbersCount: 30 });
  });

  it('answers [] past the end, with the total', async () => {
    const r = await list<Campaign>('/campaigns', { range: [50, 59] });
    expect(r.body).toEqual([]);
    expect(r.total).toBe(12);
    expect(r.range).toBe('campaigns */12');
  });

  it('answers 0-0/0 when nothing matches', async () => {
    const r = await list<Campaign>('/campaigns', { filter: { name: 'nobody' } });
    expect(r.body).toEqual([]);
    expect(r.res.headers.get('x-total-count')).toBe('0');
    expect(r.range).toBe('campaigns 0-0/0');
  });

  it.each([
    ['name', 'DESC', (c: Campaign[]) => c[0]!.name === 'Zulu 08'],
    ['numbersCount', 'DESC', (c: Campaign[]) => c[0]!.name === 'Alpha' && c[1]!.name === 'Bravo'],
    ['state', 'ASC', (c: Campaign[]) => c[0]!.state === 'Active' && c.at(-1)!.state === 'Paused'],
    ['type', 'ASC', (c: Campaign[]) => c[0]!.type === 'Dynamic'],
    ['startDate', 'DESC', (c: Campaign[]) => c[0]!.name === 'Alpha' && c[1]!.name === 'Bravo'],
    ['endDate', 'DESC', (c: Campaign[]) => c[0]!.name === 'Bravo'],
    ['startedAt', 'DESC', (c: Campaign[]) => c[0]!.name === 'Alpha' && c[1]!.name === 'Charlie'],
    ['endedAt', 'DESC', (c: Campaign[]) => c[0]!.name === 'Charlie'],
  ])('sorts by %s %s', async (field, dir, check) => {
    const r = await list<Campaign>('/campaigns', { sort: [field, dir], range: [0, 99] });
    expect(r.status).toBe(200);
    expect(r.body).toHaveLength(12);
    expect(check(r.body)).toBe(true);
  });

  const names = async (filter: unknown) => (await list<Campaign>('/campaigns', { filter, range: [0, 99], sort: ['name', 'ASC'] })).body.map((c) => c.name);

  it.each([
    [{ name: 'Bravo' }, ['Bravo']],
    [{ phoneSystemId: 'ps1' }, ['Alpha']],
    [{ extensionId: 'e2' }, ['Bravo']],
    [{ dialer: { mode: 'Predictive' } }, ['Bravo']],
    [{ 'dialer.mode': 'Predictive' }, ['Bravo']],
    [{ tagIds_ovl: ['blue', 'green'] }, ['Alpha', 'Bravo']],
    [{ tagIds_ovl: ['purple'] }, []],
    [{ state: 'Paused' }, ['Bravo']],
    [{ state: ['Active', 'Finished'] }, ['Alpha', 'Charlie']],
    [{ status: 'Finished' }, ['Charlie']],
    [{ type: 'Dynamic' }, ['Alpha']],
    [{ startDate_gte: '2024-12-01T00:00:00' }, ['Alpha']],
    [{ startDate_gt: '2024-12-01T00:00:00' }, []],
    [{ startDate_lt: '2024-12-01T00:00:00' }, ['Bravo']],
    [{ startDate_lte: '20241201T000000' }, ['Alpha', 'Bravo']],
    [{ endDate_gt: '2025-01-01T00:00:00' }, ['Bravo']],
    [{ startedAt_lt: '2024-11-01T00:00:00' }, ['Charlie']],
    [{ endedAt_gte: '2024-10-05T18:00:00' }, ['Charlie']],
    [{ startedAt_gte: '2024-12-01T10:00:00+01:00' }, ['Alpha']],
    [{ callflowIds_ctn: 'cf1' }, ['Alpha']],
    [{ callflowIds_ctn: 'h2' }, ['Bravo']],
    [{ callflowIds_ctn: 'cf9' }, ['Bravo']],
    [{ callBehavior: { humanAnswerCallflowId: 'h1' } }, ['Alpha']],
    [{ callBehavior: { answeringMachineCallflowId: 'cf9' } }, ['Bravo']],
    [{ webhookEndpointId: 'wh1' }, ['Alpha']],
    [{ isArchived: true }, ['Bravo']],
    [{ ids: [] }, []],
  ])('filters %j', async (filter, expected) => {
    expect(await names(filter)).toEqual(expected);
  });

  it('takes id (react-admin\'s getMany) as well as ids, one id or an array', async () => {
    expect(await names({ id: campaigns[1]!.id })).toEqual(['Bravo']);
    expect(await names({ id: [campaigns[2]!.id, campaigns[0]!.id, 'unknown'] })).toEqual(['Alpha', 'Charlie']);
    expect(await names({ ids: campaigns[2]!.id })).toEqual(['Charlie']);
    // Without a range, an id lookup answers §4.1's default page of 10 like any list.
    const all = await s.request(api('/campaigns') + q({ filter: { id: campaigns.map((c) => c.id) } }), { token });
    expect((await all.json()).map((c: Campaign) => c.id)).toEqual(campaigns.slice(0, 10).map((c) => c.id));
    expect(all.headers.get('content-range')).toBe('campaigns 0-9/12');
  });

  it('combines filters with AND', async () => {
    expect(await names({ type: 'Static', isArchived: false, state: 'Finished' })).toEqual(['Charlie']);
    expect(await names({ ids: [campaigns[0]!.id, campaigns[2]!.id] })).toEqual(['Alpha', 'Charlie']);
  });

  it('400 names the unknown filter key, sort field and parameter', async () => {
    for (const [params, name] of [
      [{ filter: { colour: 'red' } }, 'filter.colour'],
      [{ sort: ['numbers', 'ASC'] }, 'sort'],
      [{ range: [3, 1] }, 'range'],
      [{ range: [0, 1, 2] }, 'range'],
      [{ page: '2' }, 'page'],
    ] as const) {
      const res = await s.request(api('/campaigns') + q(params), { token });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const p = await res.json();
      expect(p).toMatchObject({ status: 400, title: 'Invalid request', type: '/problems/invalid-request' });
      expect(p.message).toBe(p.detail);
      expect(p.errors[0].name).toBe(name);
    }
  });

  it('accepts the parameters url-encoded in the body of a GET', async () => {
    const body = new URLSearchParams({ range: '[0,1]', sort: '["name","DESC"]', filter: '{"type":"Static"}' }).toString();
    const res = await rawRequest(s.url + api('/campaigns'), 'GET',
      { authorization: `Bearer ${token}`, 'content-type': 'application/x-www-form-urlencoded' }, body);
    expect(res.status).toBe(200);
    expect(res.headers['content-range']).toBe('campaigns 0-1/11');
    expect(JSON.parse(res.text).map((c: Campaign) => c.name)).toEqual(['Zulu 08', 'Zulu 07']);
  });

  it('reads every record exactly once across pages when sorted', async () => {
    const seen: string[] = [];
    for (let first = 0; ; first += 5) {
      const r = await list<Campaign>('/campaigns', { range: [first, first + 4], sort: ['state', 'ASC'] });
      seen.push(...r.body.map((c) => c.id));
      if (r.body.length < 5) break;
    }
    expect(seen).toHaveLength(12);
    expect(new Set(seen).size).toBe(12);
  });
});

describe('numbers list', () => {
  const path = () => `/campaigns/${numbersCampaign.id}/numbers`;
  beforeAll(() => {
    // Fixture: what the dialer would have done to a few numbers.
    const pk = s.store.campaigns.byId(s.store.accounts.byId(acc)!.pk, numbersCampaign.id)!.pk;
    const rows = s.store.db.all<{ id: number }>('SELECT id FROM numbers WHERE campaign_pk = ? ORDER BY id', pk);
    rows.forEach((r, i) => setNumber(s, r.id, i < 5 ? 'Success' : i < 8 ? 'Failure' : i < 10 ? 'RetryPending' : 'NotContacted', i % 4));
  });

  it('lists numbers with ids, statuses and attempts', async () => {
    const r = await list<CampaignNumber>(path(), { range: [0, 2] });
    expect(r.total).toBe(30);
    expect(r.range).toBe('numbers 0-2/30');
    expect(r.body[0]).toEqual({ id: expect.any(String), number: '+12125550000', status: 'Success', attempts: 0, varNames: ['var1'], varValues: ['v0'] });
  });

  it('filters by partial number, with or without the plus', async () => {
    expect((await list<CampaignNumber>(path(), { filter: { number: '555001' } })).body.map((n) => n.number))
      .toEqual(phoneNumbers(10, 10));
    expect((await list<CampaignNumber>(path(), { filter: { number: '+1212 555 0029' } })).body.map((n) => n.number)).toEqual(['+12125550029']);
  });

  it('filters by status arrays and counts them', async () => {
    const r = await list<CampaignNumber>(path(), { filter: { status: ['Failure', 'RetryPending'] }, range: [0, 99] });
    expect(r.total).toBe(5);
    expect(r.body.every((n) => ['Failure', 'RetryPending'].includes(n.status))).toBe(true);
    expect((await list(path(), { filter: { status: 'Success' } })).total).toBe(5);
  });

  it('filters by attempts_gt and attempts_lt', async () => {
    const gt = await list<CampaignNumber>(path(), { filter: { attempts_gt: 2 }, range: [0, 99] });
    expect(gt.body.every((n) => n.attempts === 3)).toBe(true);
    expect(gt.total).toBe(7);
    const lt = await list<CampaignNumber>(path(), { filter: { attempts_lt: 1, status: ['Success'] }, range: [0, 99] });
    expect(lt.body.map((n) => n.number)).toEqual(['+12125550000', '+12125550004']);
  });

  it('looks numbers up by id, with other filters and any sort', async () => {
    const page = (await list<CampaignNumber>(path(), { range: [0, 29] })).body;
    const ids = [page[12]!.id, page[3]!.id, page[7]!.id];
    const r = await list<CampaignNumber>(path(), { filter: { id: ids } });
    expect(r.body.map((n) => n.id)).toEqual([page[3]!.id, page[7]!.id, page[12]!.id]);
    expect(r.total).toBe(3);
    expect((await list<CampaignNumber>(path(), { filter: { id: ids, status: 'Success' } })).body.map((n) => n.id)).toEqual([page[3]!.id]);
    expect((await list<CampaignNumber>(path(), { filter: { ids: ids, attempts_gt: 2 }, sort: ['attempts', 'DESC'] })).body.map((n) => n.id))
      .toEqual([page[3]!.id, page[7]!.id]);
    // ids of another campaign's numbers, phone numbers and unknown ids match nothing
    const other = (await list<CampaignNumber>(`/campaigns/${campaigns[1]!.id}/numbers`)).body[0]!;
    expect((await list(path(), { filter: { id: [other.id, '+12125550000', '999999999'] } })).total).toBe(0);
  });

  it('sorts by number and by attempts with a stable tiebreak', async () => {
    const desc = await list<CampaignNumber>(path(), { sort: ['number', 'DESC'], range: [0, 0] });
    expect(desc.body[0]!.number).toBe('+12125550029');
    const pages: string[] = [];
    for (let f = 0; f < 30; f += 7) pages.push(...(await list<CampaignNumber>(path(), { sort: ['attempts', 'DESC'], range: [f, f + 6] })).body.map((n) => n.id));
    expect(new Set(pages).size).toBe(30);
  });
});

describe('call details report', () => {
  let path: string;
  beforeAll(() => {
    // Fixture: call-detail records as the dialer writes them.
    const pk = s.store.campaigns.byId(s.store.accounts.byId(acc)!.pk, numbersCampaign.id)!.pk;
    path = `/campaigns/${numbersCampaign.id}/reports/callDetails`;
    const rows: Omit<CallDetail, 'id' | 'numberId'>[] = [
      { number: '+12125550000', attempt: 1, startedAtLocal: '2024-12-01T09:00:00', answeredAtLocal: '2024-12-01T09:00:10', endedAtLocal: '2024-12-01T09:02:00', ringResult: 'Answer', answerType: 'Human', sipResponseCode: 200, endType: 'CallflowComplete', queueId: 'q1', outcome: 'Success' },
      { number: '+12125550001', attempt: 1, startedAtLocal: '2024-12-01T09:05:00', answeredAtLocal: null, endedAtLocal: '2024-12-01T09:05:30', ringResult: 'NoAnswer', answerType: null, sipResponseCode: 480, endType: null, queueId: null, outcome: 'FailureWithRetryPending' },
      { number: '+12125550001', attempt: 2, startedAtLocal: '2024-12-02T10:00:00', answeredAtLocal: null, endedAtLocal: '2024-12-02T10:00:05', ringResult: 'Busy', answerType: null, sipResponseCode: 486, endType: null, queueId: null, outcome: 'FailureWithNoRetryLeft' },
      { number: '+44207946000', attempt: 1, startedAtLocal: '2024-12-02T11:00:00', answeredAtLocal: '2024-12-02T11:00:04', endedAtLocal: '2024-12-02T11:00:30', ringResult: 'Answer', answerType: 'Machine', sipResponseCode: 200, endType: 'HangUp', queueId: 'q2', outcome: 'Success' },
      { number: '+44207946001', attempt: 1, startedAtLocal: '2024-12-03T12:00:00', answeredAtLocal: null, endedAtLocal: '2024-12-03T12:00:01', ringResult: 'CallError', answerType: 'Unknown', sipResponseCode: 503, endType: 'ExecutionError', queueId: null, outcome: 'FailureWithNoRetryLeft' },
    ];
    for (const r of rows) s.store.callDetails.insert(pk, { ...r, numberId: 1 });
  });

  const attempts = async (params: Parameters<typeof q>[0]) => (await list<CallDetail>(path, { range: [0, 99], ...params })).body.map((d) => `${d.number}#${d.attempt}`);

  it.each([
    [{ number: '+12125550001' }, ['+12125550001#1', '+12125550001#2']],
    [{ number: '12125550001' }, ['+12125550001#1', '+12125550001#2']],
    [{ numberPrefix: '+44' }, ['+44207946000#1', '+44207946001#1']],
    [{ numberPrefix: '4420794600' }, ['+44207946000#1', '+44207946001#1']],
    [{ attempt: 2 }, ['+12125550001#2']],
    [{ startedAtLocal_gte: '2024-12-02T00:00:00' }, ['+12125550001#2', '+44207946000#1', '+44207946001#1']],
    [{ startedAtLocal_lt: '20241201T090500' }, ['+12125550000#1']],
    [{ answeredAtLocal_gt: '2024-12-01T09:00:10' }, ['+44207946000#1']],
    [{ endedAtLocal_lte: '2024-12-01T09:05:30' }, ['+12125550000#1', '+12125550001#1']],
    // 15:00 UTC is 10:00 in New York, the account's zone
    [{ startedAtLocal_gte: '2024-12-02T15:00:00Z', startedAtLocal_lt: '2024-12-02T16:00:01Z' }, ['+12125550001#2', '+44207946000#1']],
    [{ ringResult: 'Busy' }, ['+12125550001#2']],
    [{ answerType: 'Machine' }, ['+44207946000#1']],
    [{ sipResponseCode: 503 }, ['+44207946001#1']],
    [{ endType: 'HangUp' }, ['+44207946000#1']],
    [{ queueId: 'q1' }, ['+12125550000#1']],
    [{ outcome: 'FailureWithNoRetryLeft' }, ['+12125550001#2', '+44207946001#1']],
  ])('filters %j', async (filter, expected) => {
    expect(await attempts({ filter })).toEqual(expected);
  });

  it.each(['number', 'attempt', 'startedAtLocal', 'answeredAtLocal', 'endedAtLocal', 'ringResult', 'answerType', 'sipResponseCode', 'endType', 'outcome'])(
    'sorts by %s both ways', async (field) => {
      const asc = (await list<CallDetail>(path, { range: [0, 99], sort: [field, 'ASC'] })).body;
      const desc = (await list<CallDetail>(path, { range: [0, 99], sort: [field, 'DESC'] })).body;
      const key = (d: CallDetail) => (d as unknown as Record<string, string | number | null>)[field] ?? null;
      const values = asc.map(key);
      const sorted = [...values].sort((a, b) => (a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1));
      expect(values).toEqual(sorted);
      expect(desc.map(key)).toEqual([...sorted].reverse());
      expect(asc).toHaveLength(5);
    });

  it('looks records up by id', async () => {
    const all = (await list<CallDetail>(path, { range: [0, 99] })).body;
    const r = await list<CallDetail>(path, { filter: { id: [all[4]!.id, all[1]!.id] } });
    expect(r.body).toEqual([all[1], all[4]]);
    expect(r.range).toBe('callDetails 0-1/2');
  });

  it('has the call-details Content-Range name', async () => {
    expect((await list(path, { range: [0, 1] })).range).toBe('callDetails 0-1/5');
  });
});

describe('number details report', () => {
  it('includes deleted numbers, filterable by status Deleted', async () => {
    const c = campaigns[1]!;
    const nums = (await list<CampaignNumber>(`/campaigns/${c.id}/numbers`)).body;
    const del = await s.request(api(`/campaigns/${c.id}/numbers`), { method: 'DELETE', token, json: [nums[0]!.id] });
    expect(del.status).toBe(204);
    const path = `/campaigns/${c.id}/reports/numberDetails`;
    const all = await list<{ status: string }>(path, { range: [0, 99] });
    expect(all.total).toBe(5);
    expect(all.range).toBe('numberDetails 0-4/5');
    const deleted = await list<{ number: string; status: string }>(path, { filter: { status: 'Deleted' } });
    expect(deleted.body).toEqual([expect.objectContaining({ number: nums[0]!.number, status: 'Deleted' })]);
    expect((await list(`/campaigns/${c.id}/numbers`)).total).toBe(4);
    expect((await list(path, { filter: { attempts_gte: 0, attempts_lte: 0, number: '+12125550101' } })).total).toBe(1);
    expect((await list<{ number: string }>(path, { sort: ['number', 'DESC'], range: [0, 0] })).body[0]!.number).toBe('+12125550104');
    // A deleted number keeps its id here (react-admin's getMany of number details).
    expect((await list<{ id: string; status: string }>(path, { filter: { id: nums[0]!.id } })).body)
      .toEqual([expect.objectContaining({ id: nums[0]!.id, status: 'Deleted' })]);
  });
});
