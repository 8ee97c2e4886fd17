// The Campaign Dialing Trigger and the credential test inside n8n's engine, against a dialing reference server
// on the manual clock.
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';
import type { CallDetail, Campaign, CampaignNumber } from '../../api/records.ts';
import { listSearch, loadPackage, nodeSubtitle, pollTrigger, testCredential, type N8nPackage } from '../support/n8n.ts';
import { addNumbers, createAccount, createCampaign, createKey, phoneNumbers, q, startServer, type TestServer } from '../support/server.ts';

/** The n8n package's folder (its package.json's n8n block names the built files in n8n/dist/). */
const PACKAGE = new URL('../../n8n/', import.meta.url).pathname;
const AROUND_THE_CLOCK = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
/** Where n8n keeps the trigger's getWorkflowStaticData('node'): under its node's name. */
const NODE_DATA = 'node:Campaign Dialing Trigger';

let pkg: N8nPackage;
let s: TestServer;
let acc: string;
let token: string;

/** A reference server with an account in New York and a Campaign Admin key. */
interface Site { s: TestServer; acc: string; token: string }
const main = (): Site => ({ s, acc, token });
async function openSite(clockStart: string, seed = 5): Promise<Site> {
  const server = await startServer({ seed, clockStart });
  const account = (await createAccount(server, 'Trigger', 'America/New_York')).id;
  return { s: server, acc: account, token: await createKey(server, account, ['CampaignAdmin']) };
}

const credentials = (site = main()) => ({ campaignDialingApi: { baseUrl: site.s.url, accountId: site.acc, apiToken: site.token } });
const api = async <T>(path: string, init: RequestInit & { json?: unknown } = {}, site = main()): Promise<T> => {
  const res = await site.s.request(`/v1/accounts/${site.acc}${path}`, { token: site.token, ...init });
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
};
const jsonOf = (items: INodeExecutionData[] | null) => (items ?? []).map((i) => i.json);
const callDetails = (campaignId: string, site = main()) =>
  api<CallDetail[]>(`/campaigns/${campaignId}/reports/callDetails${q({ range: [0, 9999], sort: ['endedAtLocal', 'ASC'] })}`, {}, site);

async function dialingCampaign(name: string, numbers: string[], site = main(), dialer: Record<string, unknown> = {}): Promise<Campaign> {
  const c = await createCampaign(site.s, site.acc, { name, type: 'Dynamic', state: 'Active',
    dialer: { mode: 'Power', agents: 4, callingHours: AROUND_THE_CLOCK, ...dialer } });
  await addNumbers(site.s, site.acc, c.id, numbers);
  return c;
}

function poller(campaignId: string, event: string, options: { pollBudgetMs?: number; site?: Site; staticData?: IDataObject; pageSize?: number } = {}) {
  let staticData: IDataObject = options.staticData ?? {};
  return async (mode: 'trigger' | 'manual' = 'trigger') => {
    const res = await pollTrigger({ pkg, type: 'campaignDialingTrigger', mode, staticData, credentials: credentials(options.site),
      pollBudgetMs: options.pollBudgetMs, parameters: { event, campaignId: { __rl: true, mode: 'id', value: campaignId },
        ...(options.pageSize ? { options: { pageSize: options.pageSize } } : {}) } });
    expect(res.error).toBeUndefined();
    staticData = res.staticData;
    return { items: res.items, staticData };
  };
}

beforeAll(async () => {
  pkg = await loadPackage(PACKAGE);
  ({ s, acc, token } = await openSite('2026-01-05T09:00:00Z'));
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
    const poll = poller(c.id, 'callFinished', { pollBudgetMs: 0, pageSize: 200 }); // no budget: one page (of Page Size) a poll
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

  it('goes on from the place an earlier version stored (the newest endedAtLocal and the ids read at it)', async () => {
    const c = await dialingCampaign('Upgraded', phoneNumbers(60, 1200));
    await s.advance(20 * 60);
    const before = await callDetails(c.id);
    const newest = before.at(-1)!.endedAtLocal;
    const cursor = { campaignId: c.id, event: 'callFinished', endedAt: newest, ids: before.filter((r) => r.endedAtLocal === newest).map((r) => r.id) };
    const poll = poller(c.id, 'callFinished', { staticData: { [NODE_DATA]: { cursor } } });
    const emitted: IDataObject[] = [];
    for (const minutes of [10, 0, 30]) {
      if (minutes) await s.advance(minutes * 60);
      const { items } = await poll();
      if (minutes) expect(items).not.toBeNull(); // taken as a place, not as a first poll (which emits nothing)
      emitted.push(...jsonOf(items));
    }
    const all = await callDetails(c.id);
    const known = new Set(before.map((r) => r.id));
    const ids = emitted.map((r) => String(r.id));
    expect(ids.length).toBe(new Set(ids).size);
    expect(ids.sort()).toEqual(all.filter((r) => !known.has(r.id)).map((r) => r.id).sort());
    const stored = ((await poll()).staticData[NODE_DATA] as IDataObject).cursor as IDataObject;
    expect(stored).toMatchObject({ campaignId: c.id, event: 'callFinished', version: 2, endedAt: all.at(-1)!.endedAtLocal });
    expect(stored).not.toHaveProperty('ids');
  });

  it('keeps at most 2,000 ids on a busy campaign, shortening its look-back, and still emits every record once', async () => {
    const site = await openSite('2026-01-05T09:00:00Z');
    onTestFinished(() => site.s.close());
    const c = await dialingCampaign('Busy', phoneNumbers(4000, 4000), site, { agents: 100, talkSeconds: 20, wrapUpSeconds: 0 });
    await site.s.advance(30 * 60); // some 4,500 calls: more than the ids kept
    const history = await callDetails(c.id, site);
    const poll = poller(c.id, 'callFinished', { site });
    const places: Array<{ remembered: number; since: string; hourBefore: string; bytes: number }> = [];
    const note = (staticData: IDataObject) => {
      const cursor = (staticData[NODE_DATA] as IDataObject).cursor as { seen: Record<string, string[]>; since: string; endedAt: string };
      const hourBefore = new Date(Date.parse(`${cursor.endedAt}Z`) - 3_600_000).toISOString().slice(0, 19);
      places.push({ remembered: Object.values(cursor.seen).flat().length, since: cursor.since, hourBefore, bytes: JSON.stringify(staticData).length });
    };
    const activated = await poll();
    expect(activated.items).toBeNull();
    note(activated.staticData);
    const emitted: IDataObject[] = [];
    for (let i = 0; i < 4; i++) {
      await site.s.advance(10 * 60);
      const { items, staticData } = await poll();
      emitted.push(...jsonOf(items));
      note(staticData);
    }
    for (const place of places) {
      expect(place.remembered).toBeLessThanOrEqual(2_000);
      expect(place.bytes).toBeLessThan(25_000);
    }
    // The oldest minutes were forgotten: the look-back starts later than an hour before the newest record.
    expect(places.filter((p) => p.since > p.hourBefore).length).toBeGreaterThanOrEqual(3);
    const all = await callDetails(c.id, site);
    const known = new Set(history.map((r) => r.id));
    const ids = emitted.map((r) => String(r.id));
    expect(ids.length).toBe(new Set(ids).size);
    expect(ids.sort()).toEqual(all.filter((r) => !known.has(r.id)).map((r) => r.id).sort());
  });

  it('names the chosen event on the canvas in words', () => {
    const subtitle = (event: string) => nodeSubtitle({ pkg, type: 'campaignDialingTrigger', parameters: { event } });
    expect(subtitle('callFinished')).toBe('New Call Detail Record');
    expect(subtitle('numberStatusChanged')).toBe('Number Status Changed');
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

describe('Campaign Dialing Trigger across daylight-saving changes (America/New_York)', () => {
  const sites: Site[] = [];
  afterAll(async () => { await Promise.all(sites.map((site) => site.s.close())); });

  /**
   * Dials from `clockStart` (UTC) for `minutes`, with one trigger polling every 5 simulated minutes and another
   * every 70 (so that one of its intervals spans the change whole), and returns what each emitted and the report.
   */
  async function watch(clockStart: string, minutes: number, at?: { utc: string; snapshot: (ids: Set<string>) => void }) {
    const site = await openSite(clockStart, 11);
    sites.push(site);
    const c = await dialingCampaign('Around the change', phoneNumbers(1500, 2000), site);
    await site.s.advance(10 * 60);
    const history = await callDetails(c.id, site);
    expect(history.length).toBeGreaterThan(0);
    const often = poller(c.id, 'callFinished', { site });
    const rarely = poller(c.id, 'callFinished', { site });
    expect((await often()).items).toBeNull();
    expect((await rarely()).items).toBeNull();
    const emitted = { often: [] as IDataObject[], rarely: [] as IDataObject[] };
    const pollTimes: string[] = [];
    let largest = 0;
    for (let step = 1; step * 5 <= minutes; step++) {
      const { now } = await site.s.advance(5 * 60);
      if (at && now === at.utc) at.snapshot(new Set((await callDetails(c.id, site)).map((r) => r.id)));
      pollTimes.push(now);
      const polled = await often();
      emitted.often.push(...jsonOf(polled.items));
      largest = Math.max(largest, JSON.stringify(polled.staticData).length);
      if (step % 14 === 0) emitted.rarely.push(...jsonOf((await rarely()).items));
    }
    emitted.rarely.push(...jsonOf((await rarely()).items));
    const all = await callDetails(c.id, site);
    const historyIds = new Set(history.map((r) => r.id));
    const expected = all.filter((r) => !historyIds.has(r.id));
    for (const [name, records] of Object.entries(emitted)) {
      const ids = records.map((r) => String(r.id));
      const once = new Set(ids);
      const missing = expected.filter((r) => !once.has(r.id)).map((r) => `${r.id} ${r.endedAtLocal}`);
      expect({ missing, twice: ids.length - once.size, history: ids.filter((id) => historyIds.has(id)) }, name)
        .toEqual({ missing: [], twice: 0, history: [] });
      expect(ids.length, name).toBe(expected.length);
    }
    return { all, history, pollTimes, largest };
  }

  it('falling back (2026-11-01, 02:00 EDT → 01:00 EST): emits the repeated hour\'s records of both passes, each once', async () => {
    let firstPass = new Set<string>();
    // 04:00Z is 00:00 EDT; 06:00Z is the second 01:00 (EST); 07:00Z is 02:00 EST.
    const { all, pollTimes, largest } = await watch('2026-11-01T04:00:00Z', 220,
      { utc: '2026-11-01T06:00:00.000Z', snapshot: (ids) => { firstPass = ids; } });
    const repeated = (r: CallDetail) => r.endedAtLocal.startsWith('2026-11-01T01:');
    const secondPass = all.filter((r) => repeated(r) && !firstPass.has(r.id));
    const newestOfFirstPass = all.filter((r) => repeated(r) && firstPass.has(r.id)).map((r) => r.endedAtLocal).sort().at(-1)!;
    // The scenario holds: calls ended in both passes of the hour, most of the second behind the first's newest.
    expect(firstPass.size).toBeGreaterThan(0);
    expect(secondPass.filter((r) => r.endedAtLocal < newestOfFirstPass).length).toBeGreaterThan(50);
    expect(pollTimes.filter((t) => t > '2026-11-01T06:00' && t < '2026-11-01T07:00').length).toBeGreaterThan(5);
    expect(largest).toBeLessThan(40_000);
  });

  it('springing forward (2026-03-08, 02:00 EST → 03:00 EDT): loses and repeats nothing across the skipped hour', async () => {
    // 05:30Z is 00:30 EST; 07:00Z is 03:00 EDT.
    const { all } = await watch('2026-03-08T05:30:00Z', 180);
    const hours = new Set(all.map((r) => r.endedAtLocal.slice(11, 13)));
    expect(hours.has('01') && hours.has('03')).toBe(true);
    expect(hours.has('02')).toBe(false);
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
