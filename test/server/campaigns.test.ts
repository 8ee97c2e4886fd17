// §3.1, §4.3–§4.5 over HTTP: the transition table, deleting one and many, duplicating.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CampaignState } from '../../api/enums.ts';
import type { Campaign, CampaignNumber } from '../../api/records.ts';
import { TRANSITIONS } from '../../server/campaign-states.ts';
import { addNumbers, createAccount, createCampaign, createKey, phoneNumbers, q, setNumber, startServer, type TestServer } from '../support/server.ts';

let s: TestServer;
let acc: string;
let token: string;
const api = (path: string) => `/v1/accounts/${acc}${path}`;

beforeAll(async () => {
  s = await startServer();
  acc = (await createAccount(s)).id;
  token = await createKey(s, acc, ['CampaignAdmin']);
});
afterAll(() => s.close());

const putState = (id: string, body: string, type = 'application/json') =>
  s.request(api(`/campaigns/${id}/state`), { method: 'PUT', token, body, headers: { 'content-type': type } });

describe('change state', () => {
  const states: CampaignState[] = ['Draft', 'Active', 'Paused', 'Canceled', 'Finished'];
  const cases = states.flatMap((from) => (['Active', 'Paused', 'Canceled'] as const).map((to) => [from, to] as const));

  it.each(cases)('%s → %s follows the table', async (from, to) => {
    const c = await createCampaign(s, acc, { state: from });
    const res = await putState(c.id, JSON.stringify(to));
    const body = await res.json();
    if (from === to) {
      expect(res.status).toBe(200);
      expect(body.state).toBe(from);
    } else if (TRANSITIONS[from].includes(to)) {
      expect(res.status).toBe(200);
      expect(body).toMatchObject({ id: c.id, state: to });
      if (to === 'Canceled') expect(body.endedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    } else {
      expect(res.status).toBe(409);
      expect(body).toMatchObject({ status: 409, state: from, allowedStates: TRANSITIONS[from] });
      const next = TRANSITIONS[from].length ? `it can become ${TRANSITIONS[from].join(' or ')}` : `${from} is a final state`;
      expect(body.detail).toBe(`Campaign "Campaign" is ${from} and cannot become ${to}; ${next}`);
    }
  });

  it('Finished and Canceled are final', () => {
    expect(TRANSITIONS.Finished).toEqual([]);
    expect(TRANSITIONS.Canceled).toEqual([]);
  });

  it.each([
    ['"Finished"', 'application/json'], ['"Draft"', 'application/json'], ['"active"', 'application/json'],
    ['{"state":"Active"}', 'application/json'], ['42', 'application/json'], ['null', 'application/json'],
  ])('rejects body %s with 400', async (body, type) => {
    const c = await createCampaign(s, acc);
    const res = await putState(c.id, body, type);
    expect(res.status).toBe(400);
    expect((await res.json()).detail).toContain('"Active", "Paused" or "Canceled"');
  });

  it('rejects malformed JSON with 400 and an unknown id with 404', async () => {
    const c = await createCampaign(s, acc);
    expect((await putState(c.id, '"Active')).status).toBe(400);
    const res = await putState('no-such-campaign', '"Active"');
    expect(res.status).toBe(404);
    expect((await res.json()).detail).toContain('"no-such-campaign"');
  });

  it('accepts the state as text/plain too', async () => {
    const c = await createCampaign(s, acc);
    const res = await putState(c.id, 'Active', 'text/plain');
    expect(res.status).toBe(200);
    expect((await res.json()).state).toBe('Active');
  });
});

describe('delete', () => {
  it.each(['Draft', 'Finished', 'Canceled'] as const)('deletes a %s campaign with its numbers, answering it as it was', async (state) => {
    const c = await createCampaign(s, acc, { state });
    await addNumbers(s, acc, c.id, phoneNumbers(3));
    const pk = s.store.campaigns.byId(s.store.accounts.byId(acc)!.pk, c.id)!.pk;
    const res = await s.request(api(`/campaigns/${c.id}`), { method: 'DELETE', token });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ...c, numbersCount: 3 });
    expect((await s.request(api(`/campaigns/${c.id}/numbers`), { token })).status).toBe(404);
    expect(s.store.db.get<{ n: number }>('SELECT count(*) n FROM numbers WHERE campaign_pk = ?', pk)!.n).toBe(0);
    expect(s.store.db.get<{ n: number }>('SELECT count(*) n FROM number_counts WHERE campaign_pk = ?', pk)!.n).toBe(0);
  });

  it.each(['Active', 'Paused'] as const)('refuses a %s campaign with 409 naming it', async (state) => {
    const c = await createCampaign(s, acc, { name: 'Spring leads', state });
    const res = await s.request(api(`/campaigns/${c.id}`), { method: 'DELETE', token });
    expect(res.status).toBe(409);
    expect((await res.json()).detail)
      .toBe(`Campaign "Spring leads" is ${state} and cannot be deleted; only Draft, Finished or Canceled campaigns can be (cancel it first)`);
  });

  it('404 for an unknown campaign', async () => {
    const res = await s.request(api('/campaigns/nope'), { method: 'DELETE', token });
    expect(res.status).toBe(404);
    expect((await res.json()).detail).toBe('Campaign "nope" does not exist in this account');
  });

  it('deletes many at once', async () => {
    const ids = [(await createCampaign(s, acc)).id, (await createCampaign(s, acc, { state: 'Finished' })).id];
    const res = await s.request(api('/campaigns'), { method: 'DELETE', token, json: ids });
    expect(res.status).toBe(204);
    const left = await (await s.request(api('/campaigns') + q({ filter: { ids } }), { token })).json();
    expect(left).toEqual([]);
  });

  it('is all-or-nothing and lists the ids that blocked it', async () => {
    const draft = await createCampaign(s, acc);
    const active = await createCampaign(s, acc, { state: 'Active' });
    const paused = await createCampaign(s, acc, { state: 'Paused' });
    const res = await s.request(api('/campaigns'), { method: 'DELETE', token, json: [draft.id, active.id, paused.id] });
    expect(res.status).toBe(409);
    const p = await res.json();
    expect(p.blockingIds).toEqual([active.id, paused.id]);
    expect(p.detail).toBe(`Campaigns "Campaign" (${active.id}, Active) and "Campaign" (${paused.id}, Paused) cannot be deleted; ` +
      'only Draft, Finished or Canceled campaigns can be (cancel them first); nothing was deleted');
    const one = await (await s.request(api('/campaigns'), { method: 'DELETE', token, json: [draft.id, active.id] })).json();
    expect(one.detail).toBe(`Campaign "Campaign" (${active.id}) is Active and cannot be deleted; ` +
      'only Draft, Finished or Canceled campaigns can be (cancel it first); nothing was deleted');
    const left = await (await s.request(api('/campaigns') + q({ filter: { ids: [draft.id] } }), { token })).json();
    expect(left).toHaveLength(1);
  });

  it('404 lists unknown ids and deletes nothing', async () => {
    const draft = await createCampaign(s, acc);
    const res = await s.request(api('/campaigns'), { method: 'DELETE', token, json: [draft.id, 'ghost'] });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ missingIds: ['ghost'], detail: 'Campaign "ghost" does not exist in this account; nothing was deleted' });
    const two = await (await s.request(api('/campaigns'), { method: 'DELETE', token, json: ['ghost', 'spook'] })).json();
    expect(two.detail).toBe('Campaigns "ghost" and "spook" do not exist in this account; nothing was deleted');
    expect(await (await s.request(api('/campaigns') + q({ filter: { ids: [draft.id] } }), { token })).json()).toHaveLength(1);
  });

  it.each([
    ['not an array', { ids: [] }], ['empty', []], ['not strings', [{}]],
  ])('400 for a body that is %s', async (_why, body) => {
    const res = await s.request(api('/campaigns'), { method: 'DELETE', token, json: body });
    expect(res.status).toBe(400);
  });

  it('400 without a body', async () => {
    expect((await s.request(api('/campaigns'), { method: 'DELETE', token })).status).toBe(400);
  });
});

describe('duplicate', () => {
  let original: Campaign;
  beforeAll(async () => {
    original = await createCampaign(s, acc, { name: 'Spring', type: 'Dynamic', state: 'Active', tagIds: ['t1'], dialer: { mode: 'Predictive' }, startedAt: '2024-01-01T00:00:00' });
    await addNumbers(s, acc, original.id, phoneNumbers(6, 500).map((n, i) => ({ number: n, varValues: [`x${i}`] })));
    const pk = s.store.campaigns.byId(s.store.accounts.byId(acc)!.pk, original.id)!.pk;
    const ids = s.store.db.all<{ id: number }>('SELECT id FROM numbers WHERE campaign_pk = ? ORDER BY id', pk);
    setNumber(s, ids[0]!.id, 'Success', 2);
  });

  const dup = (params: Record<string, unknown> = {}) =>
    s.request(api(`/campaigns/${original.id}/duplicate`) + q(params), { method: 'POST', token });

  it('copies settings and all numbers as a Draft named "Spring (1)", then "Spring (2)"', async () => {
    const res = await dup();
    expect(res.status).toBe(201);
    const copy = await res.json();
    expect(copy).toMatchObject({ name: 'Spring (1)', state: 'Draft', type: 'Dynamic', tagIds: ['t1'], dialer: { mode: 'Predictive' }, startedAt: null, numbersCount: 6 });
    expect(copy.id).not.toBe(original.id);
    const nums: CampaignNumber[] = await (await s.request(api(`/campaigns/${copy.id}/numbers`) + q({ range: [0, 9] }), { token })).json();
    expect(nums.every((n) => n.status === 'NotContacted' && n.attempts === 0)).toBe(true);
    expect(nums.map((n) => n.varValues[0])).toEqual(['x0', 'x1', 'x2', 'x3', 'x4', 'x5']);
    expect((await (await dup()).json()).name).toBe('Spring (2)');
  });

  it('names a copy of a copy from the same base', async () => {
    const first = await (await dup()).json();
    const res = await s.request(api(`/campaigns/${first.id}/duplicate`), { method: 'POST', token });
    expect((await res.json()).name).toMatch(/^Spring \(\d+\)$/);
  });

  it('honours newCampaignName, includeNumbers=false and numbersFilter', async () => {
    expect(await (await dup({ newCampaignName: 'Named', includeNumbers: 'false' })).json()).toMatchObject({ name: 'Named', numbersCount: 0 });
    const filtered = await (await dup({ includeNumbers: 'true', numbersFilter: { status: ['Success'] } })).json();
    expect(filtered.numbersCount).toBe(1);
  });

  it.each([
    [{ includeNumbers: 'maybe' }, 'includeNumbers'],
    [{ numbersFilter: { status: ['Deleted'] } }, 'numbersFilter'],
    [{ numbersFilter: { state: ['Success'] } }, 'numbersFilter'],
    [{ numbersFilter: 'x' }, 'numbersFilter'],
    [{ newCampaignName: '' }, 'newCampaignName'],
    [{ colour: 'red' }, 'colour'],
  ])('400 for %j naming %s', async (params, name) => {
    const res = await dup(params);
    expect(res.status).toBe(400);
    expect((await res.json()).errors[0].name).toBe(name);
  });

  it('accepts the parameters form-encoded in the body (curl --data-urlencode)', async () => {
    const res = await s.request(api(`/campaigns/${original.id}/duplicate`), {
      method: 'POST', token, headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ newCampaignName: 'From form', includeNumbers: 'false' }).toString(),
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ name: 'From form', numbersCount: 0 });
  });
});
