// The simulated dialer on the manual clock: campaigns dial, numbers move through their statuses, every
// attempt is a call-detail record, Static campaigns finish, and one seed repeats a run exactly.
import { afterEach, describe, expect, it } from 'vitest';
import type { CallDetail, Campaign, NumberDetail } from '../../api/records.ts';
import { addNumbers, createAccount, createCampaign, createKey, q, startServer, type TestServer } from '../support/server.ts';

const servers: TestServer[] = [];
afterEach(async () => { await Promise.all(servers.splice(0).map((s) => s.close())); });

async function setUp(seed: number, numbers = 40) {
  const s = await startServer({ seed, clockStart: '2026-01-05T09:00:00Z' });
  servers.push(s);
  const acc = (await createAccount(s, 'Dialing', 'Europe/Berlin')).id;
  const token = await createKey(s, acc, ['CampaignAdmin']);
  const c = await createCampaign(s, acc, { name: 'Static run', type: 'Static', state: 'Draft' });
  await addNumbers(s, acc, c.id, Array.from({ length: numbers }, (_, i) => `+1646${2_000_000 + i * 37}`));
  const api = (path: string) => `/v1/accounts/${acc}/campaigns${path}`;
  const get = async <T>(path: string): Promise<T> => (await s.request(api(path), { token })).json() as Promise<T>;
  const setState = (state: string) => s.request(api(`/${c.id}/state`), { method: 'PUT', token, json: state });
  const campaign = async () => (await get<Campaign[]>(q({ filter: { ids: [c.id] } })))[0]!;
  return { s, c, acc, token, get, setState, campaign };
}

describe('a Static campaign', () => {
  it('dials only once Active, then finishes when every number has a final status', async () => {
    const { s, c, get, setState, campaign } = await setUp(7);
    await s.advance(3600);
    expect(await get<CallDetail[]>(`/${c.id}/reports/callDetails`)).toEqual([]);
    expect((await setState('Active')).status).toBe(200);
    await s.advance(60);
    const early = await campaign();
    expect(early.startedAt).toBe('2026-01-05T10:00:00Z');
    expect(early.state).toBe('Active');
    await s.advance(3 * 24 * 3600);
    const done = await campaign();
    expect(done.state).toBe('Finished');
    expect(done.endedAt).not.toBeNull();

    const details = await get<NumberDetail[]>(`/${c.id}/reports/numberDetails` + q({ range: [0, 99] }));
    expect(details).toHaveLength(40);
    expect(details.every((n) => n.status === 'Success' || n.status === 'Failure')).toBe(true);
    expect(details.every((n) => n.attempts >= 1 && n.attempts <= 3)).toBe(true);
    expect(details.filter((n) => n.status === 'Failure').every((n) => n.attempts === 3)).toBe(true);

    const calls = await get<CallDetail[]>(`/${c.id}/reports/callDetails` + q({ range: [0, 999] }));
    expect(calls).toHaveLength(details.reduce((sum, n) => sum + n.attempts, 0));
    for (const call of calls) {
      const n = details.find((d) => d.number === call.number)!;
      expect(call.attempt).toBeLessThanOrEqual(n.attempts);
      expect(call.outcome).toBe(call.attempt === n.attempts
        ? (n.status === 'Success' ? 'Success' : 'FailureWithNoRetryLeft') : 'FailureWithRetryPending');
      expect(call.startedAtLocal <= call.endedAtLocal).toBe(true);
      if (call.ringResult === 'Answer') {
        expect(call.sipResponseCode).toBe(200);
        expect(call.answeredAtLocal).not.toBeNull();
      } else {
        expect(call.answeredAtLocal).toBeNull();
        expect({ Busy: [486, 600], NoAnswer: [408, 480, 487], CallError: [404, 484, 503] }[call.ringResult]).toContain(call.sipResponseCode);
      }
    }
    // local timestamps in the account's zone: the first call started at 10:00 UTC, 11:00 in Berlin
    expect(calls.map((x) => x.startedAtLocal).sort()[0]).toBe('2026-01-05T11:00:00');
  });

  it('makes no new calls while Paused; calls in flight finish', async () => {
    const { s, c, get, setState, campaign } = await setUp(11);
    await setState('Active');
    await s.advance(600);
    expect((await setState('Paused')).status).toBe(200);
    await s.advance(600);
    const atPause = await get<CallDetail[]>(`/${c.id}/reports/callDetails` + q({ range: [0, 999] }));
    const contacting = await get<NumberDetail[]>(`/${c.id}/reports/numberDetails` + q({ filter: { status: 'Contacting' } }));
    expect(contacting).toEqual([]);
    await s.advance(24 * 3600);
    expect(await get<CallDetail[]>(`/${c.id}/reports/callDetails` + q({ range: [0, 999] }))).toEqual(atPause);
    expect((await campaign()).state).toBe('Paused');
    await setState('Active');
    await s.advance(24 * 3600);
    expect((await get<CallDetail[]>(`/${c.id}/reports/callDetails` + q({ range: [0, 999] }))).length).toBeGreaterThan(atPause.length);
  });

  it('shows numbers as Contacting while their call is live', async () => {
    const { s, c, get, setState } = await setUp(3);
    await setState('Active');
    await s.advance(1);
    const live = await get<NumberDetail[]>(`/${c.id}/reports/numberDetails` + q({ filter: { status: 'Contacting' } }));
    expect(live.length).toBe(5); // five agents, one line each
  });
});

describe('a Dynamic campaign', () => {
  it('stays Active once every number is final, and dials numbers added later', async () => {
    const s = await startServer({ seed: 21, clockStart: '2026-01-05T09:00:00Z' });
    servers.push(s);
    const acc = (await createAccount(s, 'Dynamic', 'Europe/Berlin')).id;
    const token = await createKey(s, acc, ['CampaignAdmin']);
    const c = await createCampaign(s, acc, { name: 'Feed', type: 'Dynamic', state: 'Active' });
    const api = (path: string) => `/v1/accounts/${acc}/campaigns/${c.id}${path}`;
    const add = (numbers: string[]) => s.request(api('/numbers'), { method: 'POST', token, json: numbers.map((number) => ({ number })) });
    const details = async () => (await s.request(api('/reports/numberDetails') + q({ range: [0, 99] }), { token })).json() as Promise<NumberDetail[]>;
    expect((await add(['+16462000001', '+16462000002'])).status).toBe(201);
    await s.advance(4 * 24 * 3600);
    expect((await details()).every((n) => n.status === 'Success' || n.status === 'Failure')).toBe(true);
    const [campaign] = await (await s.request(`/v1/accounts/${acc}/campaigns` + q({ filter: { ids: [c.id] } }), { token })).json() as Campaign[];
    expect(campaign!.state).toBe('Active');
    expect(campaign!.endedAt).toBeNull();
    expect((await add(['+16462000003'])).status).toBe(201);
    await s.advance(4 * 24 * 3600);
    const late = (await details()).find((n) => n.number === '+16462000003')!;
    expect(late.attempts).toBeGreaterThan(0);
    expect(['Success', 'Failure']).toContain(late.status);
  });
});

describe('a Canceled campaign', () => {
  it('makes no new calls, and can be deleted while its last calls are live', async () => {
    const { s, c, get, setState } = await setUp(5);
    await setState('Active');
    await s.advance(5);
    expect((await setState('Canceled')).status).toBe(200);
    const before = await get<CallDetail[]>(`/${c.id}/reports/callDetails` + q({ range: [0, 999] }));
    await s.advance(3600);
    const after = await get<CallDetail[]>(`/${c.id}/reports/callDetails` + q({ range: [0, 999] }));
    // only the (at most five) calls live at the cancel finish; none starts after it (10:00:05 in Berlin)
    expect(after.length).toBeGreaterThan(before.length);
    expect(after.length).toBeLessThanOrEqual(before.length + 5);
    expect(after.every((x) => x.startedAtLocal <= '2026-01-05T10:00:05')).toBe(true);
    const { s: s2, c: c2, setState: set2 } = await setUp(6);
    await set2('Active');
    await s2.advance(5);
    await set2('Canceled');
    const acc2 = s2.store.campaigns.byPk(1)!.account_pk;
    expect(s2.store.campaigns.byId(acc2, c2.id)).toBeDefined();
    s2.store.campaigns.delete([s2.store.campaigns.byId(acc2, c2.id)!.pk]);
    await s2.advance(3600);
    expect(s2.store.db.get<{ n: number }>('SELECT count(*) n FROM call_details')!.n).toBe(0);
  });
});

describe('a restart', () => {
  it('redials numbers whose call was cut off, and the campaign still finishes', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'cdk-restart-'));
    try {
      const db = join(dir, 'dialer.db');
      const first = await startServer({ db, seed: 1, clockStart: '2026-01-05T09:00:00Z' });
      const acc = (await createAccount(first, 'Restart', 'UTC')).id;
      const c = await createCampaign(first, acc, { type: 'Static', state: 'Active', dialer: { callingHours: { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] } } });
      await addNumbers(first, acc, c.id, Array.from({ length: 20 }, (_, i) => `+1646${2_000_000 + i}`));
      await first.advance(2);
      const pk = first.store.campaigns.byId(first.store.accounts.byId(acc)!.pk, c.id)!.pk;
      expect(first.store.numbers.counts(pk).Contacting).toBe(5);
      await first.close();

      const second = await startServer({ db, seed: 1, clockStart: '2026-01-05T10:00:00Z' });
      try {
        expect(second.store.numbers.counts(pk).Contacting ?? 0).toBe(0);
        expect(second.store.numbers.counts(pk).RetryPending).toBe(5);
        await second.advance(2 * 24 * 3600);
        const counts = second.store.numbers.counts(pk);
        expect((counts.Success ?? 0) + (counts.Failure ?? 0)).toBe(20);
        expect(second.store.campaigns.byPk(pk)!.state).toBe('Finished');
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('determinism', () => {
  it('gives byte-identical reports for the same seed and requests, and different ones for another seed', async () => {
    const run = async (seed: number) => {
      const { s, c, acc, token, setState } = await setUp(seed);
      await setState('Active');
      await s.advance(2 * 24 * 3600);
      const base = `/v1/accounts/${acc}/campaigns/${c.id}/reports`;
      const calls = await (await s.request(`${base}/callDetails` + q({ range: [0, 999] }), { token })).text();
      const numbers = await (await s.request(`${base}/numberDetails` + q({ range: [0, 999] }), { token })).text();
      return { calls, numbers };
    };
    const a = await run(42);
    const b = await run(42);
    const other = await run(43);
    expect(a.calls.length).toBeGreaterThan(1000);
    expect(b).toEqual(a);
    expect(other.calls).not.toEqual(a.calls);
  });
});
