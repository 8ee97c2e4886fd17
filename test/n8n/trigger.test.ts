// The Campaign Dialing Trigger and the credential test inside n8n's engine, against a dialing reference server
// on the manual clock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';
import type { CallDetail, Campaign, CampaignNumber } from '../../api/records.ts';
import { listSearch, loadPackage, pollTrigger, testCredential, type N8nPackage } from '../support/n8n.ts';
import { addNumbers, createAccount, createCampaign, createKey, phoneNumbers, q, startServer, type TestServer } from '../support/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const AROUND_THE_CLOCK = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };

let pkg: N8nPackage;
let s: TestServer;
let acc: string;
let token: string;

const credentials = () => ({ campaignDialingApi: { baseUrl: s.url, accountId: acc, apiToken: token } });
const api = async <T>(path: string, init: RequestInit & { json?: unknown } = {}): Promise<T> => {
  const res = await s.request(`/v1/accounts/${acc}${path}`, { token, ...init });
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
};
const jsonOf = (items: INodeExecutionData[] | null) => (items ?? []).map((i) => i.json);

async function dialingCampaign(name: string, numbers: string[]): Promise<Campaign> {
  const c = await createCampaign(s, acc, { name, type: 'Dynamic', state: 'Active', dialer: { mode: 'Power', agents: 4, callingHours: AROUND_THE_CLOCK } });
  await addNumbers(s, acc, c.id, numbers);
  return c;
}

function poller(campaignId: string, event: string, pollBudgetMs?: number) {
  let staticData: IDataObject = {};
  return async (mode: 'trigger' | 'manual' = 'trigger') => {
    const res = await pollTrigger({ pkg, type: 'campaignDialingTrigger', mode, staticData, credentials: credentials(), pollBudgetMs,
      parameters: { event, campaignId: { __rl: true, mode: 'id', value: campaignId } } });
    expect(res.error).toBeUndefined();
    staticData = res.staticData;
    return { items: res.items, staticData };
  };
}

beforeAll(async () => {
  pkg = await loadPackage(ROOT);
  s = await startServer({ seed: 5, clockStart: '2026-01-05T09:00:00Z' });
  acc = (await createAccount(s, 'Trigger', 'America/New_York')).id;
  token = await createKey(s, acc, ['CampaignAdmin']);
});
afterAll(async () => { await s?.close(); });

describe('Campaign Dialing Trigger', () => {
  it('emits every new call-detail record exactly once across polls, and nothing from before activation', async () => {
    const c = await dialingCampaign('Watched', phoneNumbers(80, 100));
    await s.advance(15 * 60); // calls before activation are history
    const history = await api<CallDetail[]>(`/campaigns/${c.id}/reports/callDetails${q({ range: [0, 9999] })}`);
    expect(history.length).toBeGreaterThan(0);
    const poll = poller(c.id, 'callFinished');
    expect((await poll()).items).toBeNull();

    const emitted: IDataObject[] = [];
    let polls = 0;
    let empty = 0;
    for (const minutes of [5, 0, 30, 1, 0, 120, 600]) {
      if (minutes) await s.advance(minutes * 60);
      const { items } = await poll();
      polls++;
      if (!items) empty++;
      emitted.push(...jsonOf(items));
    }
    expect(empty).toBeGreaterThanOrEqual(2); // the polls with no time passed
    const all = await api<CallDetail[]>(`/campaigns/${c.id}/reports/callDetails${q({ range: [0, 9999] })}`);
    const ids = emitted.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    const historyIds = new Set(history.map((r) => r.id));
    expect(ids.filter((id) => historyIds.has(id as string))).toEqual([]);
    expect(new Set(ids)).toEqual(new Set(all.map((r) => r.id).filter((id) => !historyIds.has(id))));
    expect(emitted[0]).toHaveProperty('outcome');
    expect(polls).toBe(7);
  });

  it('drains a backlog larger than one poll\'s budget over several polls, none lost or repeated', async () => {
    const c = await dialingCampaign('Backlog', phoneNumbers(300, 1500));
    const poll = poller(c.id, 'callFinished', 0); // no budget: one page a poll
    expect((await poll()).items).toBeNull();
    await s.advance(24 * 3600);
    const all = await api<CallDetail[]>(`/campaigns/${c.id}/reports/callDetails${q({ range: [0, 9999] })}`);
    expect(all.length).toBeGreaterThan(400);
    const emitted: IDataObject[] = [];
    const sizes: number[] = [];
    for (let i = 0; i < 20 && emitted.length < all.length; i++) {
      const got = jsonOf((await poll()).items);
      sizes.push(got.length);
      emitted.push(...got);
    }
    expect(sizes.length).toBeGreaterThan(2);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(200);
    expect(emitted.map((r) => r.id).sort()).toEqual(all.map((r) => r.id).sort());
    expect((await poll()).items).toBeNull();
  });

  it('a manual test run shows the most recent records and does not move the trigger\'s place', async () => {
    const c = await dialingCampaign('Manual', phoneNumbers(20, 300));
    const poll = poller(c.id, 'callFinished');
    expect((await poll('manual')).items).toBeNull();
    await s.advance(3600);
    const { items, staticData } = await poll('manual');
    expect(staticData).toEqual({});
    const all = await api<CallDetail[]>(`/campaigns/${c.id}/reports/callDetails${q({ range: [0, 9999], sort: ['endedAtLocal', 'DESC'] })}`);
    expect(all.length).toBeGreaterThan(10);
    expect(jsonOf(items).map((r) => r.endedAtLocal)).toEqual(all.slice(0, 10).map((r) => r.endedAtLocal));
  });

  it('emits number status changes from calls, the black list and deletions, each once', async () => {
    const phones = phoneNumbers(40, 500);
    const c = await dialingCampaign('Statuses', phones);
    const poll = poller(c.id, 'numberStatusChanged');
    expect((await poll()).items).toBeNull();
    await s.console('POST', `/accounts/${acc}/blacklist`, [phones[39]]);
    const waiting = await api<CampaignNumber[]>(`/campaigns/${c.id}/numbers${q({ range: [0, 1], sort: ['number', 'DESC'], filter: { status: ['NotContacted'] } })}`);
    const deleted = waiting.find((n) => n.number !== phones[39])!;
    await api(`/campaigns/${c.id}/numbers`, { method: 'DELETE', json: [deleted.id] });

    const changes: IDataObject[] = [];
    for (const minutes of [10, 0, 60, 600, 3000]) {
      if (minutes) await s.advance(minutes * 60);
      changes.push(...jsonOf((await poll()).items));
    }
    const calls = await api<CallDetail[]>(`/campaigns/${c.id}/reports/callDetails${q({ range: [0, 9999] })}`);
    const fromCalls = changes.filter((e) => e.cause === 'call');
    expect(fromCalls.map((e) => (e.call as IDataObject).id).sort()).toEqual(calls.map((r) => r.id).sort());
    for (const e of fromCalls) {
      const call = e.call as unknown as CallDetail;
      expect(e.status).toBe({ Success: 'Success', FailureWithRetryPending: 'RetryPending', FailureWithNoRetryLeft: 'Failure' }[call.outcome]);
      expect(e.attempts).toBe(call.attempt);
    }
    expect(changes.filter((e) => e.cause === 'blacklist').map((e) => [e.number, e.status])).toEqual([[phones[39], 'Blacklisted']]);
    expect(changes.filter((e) => e.cause === 'deleted').map((e) => [e.id, e.status])).toEqual([[deleted.id, 'Deleted']]);
  });

  it('starts over when its campaign changes, and the campaign picker lists campaigns by name', async () => {
    const a = await dialingCampaign('Picker Alpha', phoneNumbers(5, 900));
    await dialingCampaign('Picker Beta', phoneNumbers(5, 950));
    const found = await listSearch({ pkg, type: 'campaignDialingTrigger', method: 'searchCampaigns', filter: 'picker', credentials: credentials() });
    expect(found.results.map((r) => r.name)).toEqual(['Picker Alpha (Active, Dynamic)', 'Picker Beta (Active, Dynamic)']);
    const exact = await listSearch({ pkg, type: 'campaignDialing', method: 'searchCampaigns', filter: a.id, credentials: credentials() });
    expect(exact.results.map((r) => r.value)).toEqual([a.id]);
  });
});

describe('the credential test', () => {
  const check = (data: Record<string, string>) => testCredential({ pkg, credentialType: 'campaignDialingApi',
    data: { baseUrl: s.url, accountId: acc, apiToken: token, ...data } });

  it('passes with a working URL, account and token', async () => {
    expect(await check({})).toEqual({ status: 'OK', message: expect.any(String) });
  });

  it('fails with a clear message on a wrong token, account or URL', async () => {
    expect(await check({ apiToken: 'cdk_not-a-token' })).toEqual({ status: 'Error', message: expect.stringMatching(/API token was not accepted/) });
    const other = (await createAccount(s, 'Other')).id;
    expect(await check({ accountId: other })).toEqual({ status: 'Error', message: expect.stringMatching(/Account ID/) });
    expect(await check({ baseUrl: `${s.url}/v1` })).toEqual({ status: 'Error', message: expect.stringMatching(/Base URL/) });
    const down = await check({ baseUrl: 'http://127.0.0.1:9' });
    expect(down.status).toBe('Error');
    expect(down.message).toMatch(/refused|ECONNREFUSED/i);
  });
});
