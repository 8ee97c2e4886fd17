// §4.7–§4.9 over HTTP: adding numbers as JSON, uploading CSV, deleting numbers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CampaignNumber } from '../../api/records.ts';
import { addNumbers, createAccount, createCampaign, createKey, phoneNumbers, q, setNumber, startServer, type TestServer } from '../support/server.ts';

let s: TestServer;
let acc: string;
let token: string;
const api = (path: string) => `/v1/accounts/${acc}${path}`;
const dynamicActive = () => createCampaign(s, acc, { type: 'Dynamic', state: 'Active' });

beforeAll(async () => {
  s = await startServer({ limits: { numbersPerRequest: 1000, uploadBytes: 64 * 1024 } });
  acc = (await createAccount(s)).id;
  token = await createKey(s, acc, ['CampaignAdmin']);
});
afterAll(() => s.close());

const add = (cid: string, body: unknown, params: Record<string, unknown> = {}) =>
  s.request(api(`/campaigns/${cid}/numbers`) + q(params), { method: 'POST', token, json: body });

const listAll = async (cid: string): Promise<CampaignNumber[]> =>
  (await s.request(api(`/campaigns/${cid}/numbers`) + q({ range: [0, 999] }), { token })).json();

describe('add numbers (JSON)', () => {
  it('normalises to E.164, returns created records with ids, and reports each rejected entry', async () => {
    const c = await dynamicActive();
    const res = await add(c.id, [
      { number: '+1 (212) 555-0100', varValues: ['Ann', 'Boston'] },
      { number: '0049 30 901820' },
      { number: '442079460000' },
      { number: 'call me' },
      { number: '+1 212 555 0100' },
      { number: '+1555' },
    ], { varNames: ['name', 'city'] });
    expect(res.status).toBe(201);
    const body = await res.json();
    expect(body.created).toEqual([
      { id: expect.any(String), number: '+12125550100', status: 'NotContacted', attempts: 0, varNames: ['name', 'city'], varValues: ['Ann', 'Boston'] },
      expect.objectContaining({ number: '+4930901820', varValues: [] }),
      expect.objectContaining({ number: '+442079460000' }),
    ]);
    expect(body.rejected).toEqual([
      { index: 3, number: 'call me', code: 'invalid_number', reason: expect.stringContaining('not a phone number') },
      { index: 4, number: '+1 212 555 0100', code: 'duplicate', reason: '+12125550100 duplicates entry 0 of this request', duplicateOf: 0 },
      { index: 5, number: '+1555', code: 'invalid_number', reason: expect.stringMatching(/short|length|valid/) },
    ]);
    // without a sort, numbers come in phone-number order
    expect((await listAll(c.id)).map((n) => n.number)).toEqual(['+12125550100', '+442079460000', '+4930901820']);
  });

  it('validates a batch of hundreds on the worker thread with the same verdicts', async () => {
    const c = await dynamicActive();
    const body = [...phoneNumbers(299, 2000).map((number) => ({ number })), { number: '+1 212 555 20' }];
    const res = await add(c.id, body);
    expect(res.status).toBe(201);
    const r = await res.json();
    expect(r.created).toHaveLength(299);
    expect(r.rejected).toEqual([expect.objectContaining({ index: 299, code: 'invalid_number' })]);
  });

  it('names variables var1..varN when varNames is omitted', async () => {
    const c = await dynamicActive();
    const body = await (await add(c.id, [{ number: '+12125550101', varValues: ['a', 'b'] }])).json();
    expect(body.created[0].varNames).toEqual(['var1', 'var2']);
  });

  it('rejects a number already in the campaign, and answers 422 when nothing was added', async () => {
    const c = await dynamicActive();
    expect((await add(c.id, [{ number: '+12125550102' }])).status).toBe(201);
    const res = await add(c.id, [{ number: '12125550102' }]);
    expect(res.status).toBe(422);
    const p = await res.json();
    expect(p.rejected).toEqual([{ index: 0, number: '12125550102', code: 'duplicate', reason: '+12125550102 is already in this campaign' }]);
    expect(p.detail).toBe('The number was not added: +12125550102 is already in this campaign');
    expect(p.errors[0].name).toBe('/0/number');
    expect(await listAll(c.id)).toHaveLength(1);
    const many = await (await add(c.id, [{ number: 'nope' }, { number: '+12125550102' }, { number: '12125550102' }])).json();
    expect(many.detail).toBe('None of the 3 numbers was added; entry 0 was rejected: ' +
      `${many.rejected[0].reason} (see rejected for the others)`);
    expect(many.rejected.map((r: { index: number; code: string; duplicateOf?: number }) => [r.index, r.code, r.duplicateOf]))
      .toEqual([[0, 'invalid_number', undefined], [1, 'duplicate', undefined], [2, 'duplicate', 1]]);
  });

  it('takes a single entry object as the body, as the vendor documents it, with the same answer', async () => {
    const c = await dynamicActive();
    const res = await add(c.id, { number: '+18005551234', varValues: ['John', '199'] }, { varNames: ['name', 'amount'] });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({
      created: [{ id: expect.any(String), number: '+18005551234', status: 'NotContacted', attempts: 0, varNames: ['name', 'amount'], varValues: ['John', '199'] }],
      rejected: [],
    });
    const again = await add(c.id, { number: '8005551234' });
    expect(again.status).toBe(422);
    expect(await again.json()).toMatchObject({
      rejected: [{ index: 0, number: '8005551234', code: expect.any(String) }],
      errors: [{ in: 'body', name: '/number' }],
    });
    const bad = await add(c.id, { number: 18005551234, extra: 1 });
    expect(bad.status).toBe(400);
    expect((await bad.json()).errors).toEqual([
      { in: 'body', name: '/extra', detail: 'The entry has an unknown field "extra"; an entry has only number and varValues' },
      { in: 'body', name: '/number', detail: 'The entry needs a number that is a string; got 18005551234' },
    ]);
  });

  it.each([
    ['Static', 'Active'], ['Dynamic', 'Draft'], ['Dynamic', 'Paused'], ['Dynamic', 'Finished'], ['Dynamic', 'Canceled'],
  ])('409 for a %s %s campaign', async (type, state) => {
    const c = await createCampaign(s, acc, { type, state });
    const res = await add(c.id, [{ number: '+12125550103' }]);
    expect(res.status).toBe(409);
    expect((await res.json()).detail).toBe(`Numbers can be added only to a Dynamic campaign that is Active; campaign "Campaign" is ${type} and ${state}`);
  });

  it.each([
    ['a string body', '+12125550104', ''],
    ['an empty array', [], ''],
    ['a number that is not a string', [{ number: 12125550104 }], '/0/number'],
    ['an unknown field', [{ number: '+12125550104', phone: 'x' }], '/0/phone'],
    ['varValues that are not strings', [{ number: '+12125550104', varValues: [1] }], '/0/varValues'],
    ['a null entry', [null], '/0'],
  ])('400 for %s, naming %j, adding nothing', async (_why, body, name) => {
    const c = await dynamicActive();
    const res = await add(c.id, body);
    expect(res.status).toBe(400);
    expect((await res.json()).errors[0].name).toBe(name);
    expect(await listAll(c.id)).toHaveLength(0);
  });

  it('400 when an entry has more values than varNames names', async () => {
    const c = await dynamicActive();
    const res = await add(c.id, [{ number: '+12125550105', varValues: ['a', 'b'] }], { varNames: ['only'] });
    expect(res.status).toBe(400);
    expect((await res.json()).errors[0]).toEqual({ in: 'body', name: '/0/varValues', detail: 'Entry 0 has 2 variable values; varNames names only 1' });
  });

  it.each([['not JSON', 'name'], ['{"a":1}', ''], ['["a","a"]', '']])('400 for varNames %s', async (raw) => {
    const c = await dynamicActive();
    const res = await s.request(api(`/campaigns/${c.id}/numbers`) + '?varNames=' + encodeURIComponent(raw), { method: 'POST', token, json: [{ number: '+12125550106' }] });
    expect(res.status).toBe(400);
    expect((await res.json()).errors[0].name).toBe('varNames');
  });

  it('413 above the per-request maximum', async () => {
    const c = await dynamicActive();
    const res = await add(c.id, phoneNumbers(1001).map((number) => ({ number })));
    expect(res.status).toBe(413);
    expect((await res.json()).detail).toContain('at most 1000 per request');
  });
});

const upload = (cid: string, csv: string | Blob, params: Record<string, unknown> = {}, fields: Record<string, string> = {}, part = 'file') => {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append(part, typeof csv === 'string' ? new Blob([csv], { type: 'text/csv' }) : csv, 'numbers.csv');
  return s.request(api(`/campaigns/${cid}/numbers/upload`) + q(params), { method: 'POST', token, body: form });
};

describe('upload CSV', () => {
  it('adds good rows and reports bad ones by line, value and reason', async () => {
    const c = await dynamicActive();
    const csv = 'phone,first,last\n+12125550200,Ann,Lee\n12125550201,Bob,Ray\n\nnot-a-number,X,Y\n+12125550200,Dup,Row\n"+1 212 555 0202","Quoted, with comma",Z\n+12125550203,only-one\n';
    const res = await upload(c.id, csv, { firstRowIsHeader: 'true', varCount: '2' });
    expect(res.status).toBe(201);
    const r = await res.json();
    expect(r).toMatchObject({ rows: 6, createdCount: 4, rejectedCount: 2, varNames: ['first', 'last'], firstRowIsHeader: true, varCount: 2 });
    expect(r.rejected).toEqual([
      { line: 5, value: 'not-a-number', code: 'invalid_number', reason: expect.stringContaining('not a phone number') },
      { line: 6, value: '+12125550200', code: 'duplicate', reason: '+12125550200 duplicates line 2 of this file' },
    ]);
    const nums = await listAll(c.id);
    expect(nums.map((n) => [n.number, ...n.varValues])).toEqual([
      ['+12125550200', 'Ann', 'Lee'], ['+12125550201', 'Bob', 'Ray'], ['+12125550202', 'Quoted, with comma', 'Z'], ['+12125550203', 'only-one', ''],
    ]);
  });

  it('detects a header when not told, and takes every column after the number as a variable', async () => {
    const c = await dynamicActive();
    const r = await (await upload(c.id, 'Number;x\n')).json();
    expect(r.status).toBe(400);
    const ok = await (await upload(c.id, '\ufeffphone,name\n+12125550210,Ann\n')).json();
    expect(ok).toMatchObject({ firstRowIsHeader: true, varCount: 1, varNames: ['name'], createdCount: 1 });
    const noHeader = await (await upload(c.id, '+12125550211,Bob,NY\n12125550212,Cy,LA\n')).json();
    expect(noHeader).toMatchObject({ firstRowIsHeader: false, varCount: 2, varNames: ['var1', 'var2'], createdCount: 2 });
  });

  it('rejects rows with more columns than the number and varCount', async () => {
    const c = await dynamicActive();
    const r = await (await upload(c.id, '+12125550220,a\n+12125550221,a,b\n+12125550222,a,,\n', { varCount: '1' })).json();
    expect(r).toMatchObject({ createdCount: 2, rejectedCount: 1 });
    expect(r.rejected[0]).toEqual({ line: 2, value: '+12125550221,a,b', code: 'wrong_column_count', reason: 'the row has 3 columns; expected the number and 1 variable column' });
  });

  it('takes firstRowIsHeader and varCount as form fields too', async () => {
    const c = await dynamicActive();
    const r = await (await upload(c.id, '12125550230,a,b\n', {}, { firstRowIsHeader: 'false', varCount: '2' })).json();
    expect(r).toMatchObject({ createdCount: 1, varCount: 2 });
  });

  it('reports an unclosed quote as a bad row', async () => {
    const c = await dynamicActive();
    const res = await upload(c.id, '+12125550240,a\n"+12125550241,b\n');
    const r = await res.json();
    expect(r.createdCount).toBe(1);
    expect(r.rejectedCount).toBeGreaterThanOrEqual(1);
  });

  it('validates large files on the worker thread across batches, keeping line numbers', async () => {
    const phone = (i: number) => `+1646${2_000_000 + i}`;
    const lines = Array.from({ length: 12_000 }, (_, i) => (i === 4_999 || i === 11_000 ? `bad${i}` : `${phone(i)},v${i}`));
    const big = await startServer({ limits: { uploadBytes: 10 * 1024 * 1024 } });
    try {
      const a = (await createAccount(big)).id;
      const t = await createKey(big, a, ['CampaignAdmin']);
      const camp = await createCampaign(big, a, { type: 'Dynamic', state: 'Active' });
      const form = new FormData();
      form.append('file', new Blob([lines.join('\n')]), 'big.csv');
      const res = await big.request(`/v1/accounts/${a}/campaigns/${camp.id}/numbers/upload?varCount=1`, { method: 'POST', token: t, body: form });
      const r = await res.json();
      expect(res.status).toBe(201);
      expect(r).toMatchObject({ rows: 12_000, createdCount: 11_998, rejectedCount: 2 });
      expect(r.rejected.map((x: { line: number }) => x.line)).toEqual([5_000, 11_001]);
      const page = await (await big.request(`/v1/accounts/${a}/campaigns/${camp.id}/numbers` + q({ range: [11_997, 11_997] }), { token: t })).json();
      expect(page[0]).toMatchObject({ number: phone(11_999), varValues: ['v11999'] });
    } finally {
      await big.close();
    }
  });

  it('422 when no row was added', async () => {
    const c = await dynamicActive();
    const res = await upload(c.id, 'x1,a\nx2,b\n', { firstRowIsHeader: 'false' });
    expect(res.status).toBe(422);
    const p = await res.json();
    expect(p.rejectedCount).toBe(2);
    expect(p.detail).toBe(`None of the 2 rows was added; line 1 was rejected: ${p.rejected[0].reason} (see rejected for the others)`);
    const one = await (await upload(c.id, 'x1,a\n', { firstRowIsHeader: 'false' })).json();
    expect(one.detail).toBe(`The number on line 1 was not added: ${one.rejected[0].reason}`);
  });

  it.each([
    [{ firstRowIsHeader: 'yes' }, 'firstRowIsHeader'], [{ varCount: '-1' }, 'varCount'], [{ varCount: 'two' }, 'varCount'], [{ other: '1' }, 'other'],
  ])('400 for %j', async (params, name) => {
    const c = await dynamicActive();
    const res = await upload(c.id, '+12125550250\n', params);
    expect(res.status).toBe(400);
    expect((await res.json()).errors[0].name).toBe(name);
  });

  it('400 for a file part with another name, or none', async () => {
    const c = await dynamicActive();
    expect((await upload(c.id, '+12125550260\n', {}, {}, 'csv')).status).toBe(400);
    const form = new FormData();
    form.append('varCount', '0');
    const res = await s.request(api(`/campaigns/${c.id}/numbers/upload`), { method: 'POST', token, body: form });
    expect(res.status).toBe(400);
  });

  it('415 for a body that is not multipart', async () => {
    const c = await dynamicActive();
    const res = await s.request(api(`/campaigns/${c.id}/numbers/upload`), { method: 'POST', token, body: '+12125550270\n', headers: { 'content-type': 'text/csv' } });
    expect(res.status).toBe(415);
    expect(res.headers.get('content-type')).toMatch(/problem\+json/);
  });

  it('413 above the upload size limit', async () => {
    const c = await dynamicActive();
    const big = phoneNumbers(9000).join('\n');
    const res = await upload(c.id, big);
    expect(res.status).toBe(413);
  });

  it('409 unless the campaign is Dynamic and Active', async () => {
    const c = await createCampaign(s, acc, { type: 'Dynamic', state: 'Paused' });
    expect((await upload(c.id, '+12125550280\n')).status).toBe(409);
  });
});

describe('delete numbers', () => {
  it('deletes NotContacted and RetryPending numbers, cancelling the retry; others block with 409', async () => {
    const c = await dynamicActive();
    await addNumbers(s, acc, c.id, phoneNumbers(6, 300));
    const nums = await listAll(c.id);
    const set = (i: number, status: string, retryAt: number | null = null) => setNumber(s, nums[i]!.id, status, 1, retryAt);
    set(1, 'RetryPending', Date.now() + 60_000);
    set(2, 'Success');
    set(3, 'Failure');
    set(4, 'Contacting');
    set(5, 'Blacklisted');

    const blocked = await s.request(api(`/campaigns/${c.id}/numbers`), { method: 'DELETE', token, json: nums.map((n) => n.id) });
    expect(blocked.status).toBe(409);
    const p = await blocked.json();
    expect(p.blockingIds.sort()).toEqual([nums[2]!.id, nums[3]!.id, nums[4]!.id, nums[5]!.id].sort());
    const [, , n2, n3, n4, n5] = nums as [CampaignNumber, CampaignNumber, CampaignNumber, CampaignNumber, CampaignNumber, CampaignNumber];
    expect(p.detail).toBe(`Numbers "${n2.id}" (${n2.number}, Success), "${n3.id}" (${n3.number}, Failure), "${n4.id}" (${n4.number}, Contacting) ` +
      `and "${n5.id}" (${n5.number}, Blacklisted) cannot be deleted in their status; only NotContacted or RetryPending numbers can be; nothing was deleted`);
    expect(await listAll(c.id)).toHaveLength(6);

    const ok = await s.request(api(`/campaigns/${c.id}/numbers`), { method: 'DELETE', token, json: [nums[0]!.id, nums[1]!.id] });
    expect(ok.status).toBe(204);
    expect((await listAll(c.id)).map((n) => n.id)).toEqual(nums.slice(2).map((n) => n.id));
    const row = s.store.db.get<{ status: string; next_attempt_at: number | null }>('SELECT status, next_attempt_at FROM numbers WHERE id = ?', Number(nums[1]!.id));
    expect(row).toEqual({ status: 'Deleted', next_attempt_at: null });
    const campaigns = await (await s.request(api('/campaigns') + q({ filter: { ids: [c.id] } }), { token })).json();
    expect(campaigns[0].numbersCount).toBe(4);
  });

  it('404 for unknown ids and for phone numbers given as ids', async () => {
    const c = await dynamicActive();
    await addNumbers(s, acc, c.id, ['+12125550400']);
    const [n] = await listAll(c.id);
    const res = await s.request(api(`/campaigns/${c.id}/numbers`), { method: 'DELETE', token, json: [n!.id, '+12125550400', '999999'] });
    expect(res.status).toBe(404);
    const p = await res.json();
    expect(p.missingIds).toEqual(['+12125550400', '999999']);
    expect(p.detail).toBe('Campaign "Campaign" has no live numbers with ids "+12125550400" and "999999"; ' +
      'nothing was deleted (ids come from the numbers list, not phone numbers)');
    expect(await listAll(c.id)).toHaveLength(1);
  });

  it('404 for a number of another campaign, and for one already deleted', async () => {
    const a = await dynamicActive();
    const b = await dynamicActive();
    await addNumbers(s, acc, a.id, ['+12125550410']);
    const [n] = await listAll(a.id);
    expect((await s.request(api(`/campaigns/${b.id}/numbers`), { method: 'DELETE', token, json: [n!.id] })).status).toBe(404);
    expect((await s.request(api(`/campaigns/${a.id}/numbers`), { method: 'DELETE', token, json: [n!.id] })).status).toBe(204);
    expect((await s.request(api(`/campaigns/${a.id}/numbers`), { method: 'DELETE', token, json: [n!.id] })).status).toBe(404);
  });

  it('a deleted phone number can be added again', async () => {
    const c = await dynamicActive();
    await add(c.id, [{ number: '+12125550420' }]);
    const [n] = await listAll(c.id);
    await s.request(api(`/campaigns/${c.id}/numbers`), { method: 'DELETE', token, json: [n!.id] });
    expect((await add(c.id, [{ number: '+12125550420' }])).status).toBe(201);
    const details = await (await s.request(api(`/campaigns/${c.id}/reports/numberDetails`), { token })).json();
    expect(details.map((d: { status: string }) => d.status)).toEqual(['NotContacted', 'Deleted']);
  });
});

describe('delete one number (DELETE …/numbers/{id}, react-admin\'s delete)', () => {
  const del = (cid: string, id: string, t = token) => s.request(api(`/campaigns/${cid}/numbers/${encodeURIComponent(id)}`), { method: 'DELETE', token: t });

  it('answers 200 with the number as it was, cancels its retry and keeps it in the number-details report', async () => {
    const c = await dynamicActive();
    await addNumbers(s, acc, c.id, [{ number: '+12125550500', varValues: ['Ann'] }, '+12125550501']);
    const [n, other] = await listAll(c.id);
    setNumber(s, n!.id, 'RetryPending', 1, Date.now() + 60_000);
    const res = await del(c.id, n!.id);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ...n, status: 'RetryPending', attempts: 1 });
    expect((await listAll(c.id)).map((x) => x.id)).toEqual([other!.id]);
    const row = s.store.db.get<{ status: string; next_attempt_at: number | null }>('SELECT status, next_attempt_at FROM numbers WHERE id = ?', Number(n!.id));
    expect(row).toEqual({ status: 'Deleted', next_attempt_at: null });
    const details = await (await s.request(api(`/campaigns/${c.id}/reports/numberDetails`) + q({ filter: { id: n!.id } }), { token })).json();
    expect(details).toEqual([{ ...n, status: 'Deleted', attempts: 1 }]);
  });

  it('404 for an id that is not a live number of the campaign (unknown, deleted, of another campaign, or a phone number)', async () => {
    const a = await createCampaign(s, acc, { name: 'Owner', type: 'Dynamic', state: 'Active' });
    const b = await createCampaign(s, acc, { name: 'Other', type: 'Dynamic', state: 'Active' });
    await addNumbers(s, acc, a.id, ['+12125550510']);
    const [n] = await listAll(a.id);
    for (const [cid, id] of [[b.id, n!.id], [a.id, '999999'], [a.id, '+12125550510']] as const) {
      const res = await del(cid, id);
      expect(res.status).toBe(404);
      const p = await res.json();
      expect(p.missingIds).toEqual([id]);
      expect(p.detail).toBe(`Campaign "${cid === a.id ? 'Owner' : 'Other'}" has no live number with id ${JSON.stringify(id)}; ` +
        'nothing was deleted (ids come from the numbers list, not phone numbers)');
    }
    expect((await del(a.id, n!.id)).status).toBe(200);
    expect((await del(a.id, n!.id)).status).toBe(404);
    expect((await del('no-such-campaign', n!.id)).status).toBe(404);
  });

  it.each(['Contacting', 'Blacklisted', 'Success', 'Failure'])('409 for a %s number, naming it', async (status) => {
    const c = await dynamicActive();
    await addNumbers(s, acc, c.id, ['+12125550520']);
    const [n] = await listAll(c.id);
    setNumber(s, n!.id, status, 1);
    const res = await del(c.id, n!.id);
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({
      blockingIds: [n!.id], blocking: [{ id: n!.id, status }],
      detail: `Number "${n!.id}" (+12125550520) is ${status} and cannot be deleted; only NotContacted or RetryPending numbers can be; nothing was deleted`,
    });
    expect(await listAll(c.id)).toHaveLength(1);
  });

  it('needs a role that may delete numbers, in a campaign the key may reach', async () => {
    const c = await dynamicActive();
    await addNumbers(s, acc, c.id, ['+12125550530']);
    const [n] = await listAll(c.id);
    const reader = await createKey(s, acc, ['CampaignReader']);
    const elsewhere = await createKey(s, acc, ['CampaignNumberAdmin'], [(await dynamicActive()).id]);
    const numberAdmin = await createKey(s, acc, ['CampaignNumberAdmin'], [c.id]);
    expect((await del(c.id, n!.id, reader)).status).toBe(403);
    expect((await del(c.id, n!.id, elsewhere)).status).toBe(403);
    expect(await listAll(c.id)).toHaveLength(1);
    expect((await del(c.id, n!.id, numberAdmin)).status).toBe(200);
  });

  it('takes no parameters', async () => {
    const c = await dynamicActive();
    await addNumbers(s, acc, c.id, ['+12125550540']);
    const [n] = await listAll(c.id);
    const res = await s.request(api(`/campaigns/${c.id}/numbers/${n!.id}?force=true`), { method: 'DELETE', token });
    expect(res.status).toBe(400);
    expect((await res.json()).detail).toBe('Unknown parameter "force"; this operation takes no parameters');
  });
});
