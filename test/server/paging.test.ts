// Reading every page in order: the keyset continuation gives the same records as one big page, and under
// changes between pages never skips or repeats a record that was there throughout. Each test runs on a :memory:
// database (pages read on the server's connection) and on a file (pages read on the page reader's thread).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CampaignNumber } from '../../api/records.ts';
import { numberRecord, type NumberRow } from '../../server/store/numbers.ts';
import { addNumbers, createAccount, createCampaign, createKey, q, setNumber, startServer, type TestServer } from '../support/server.ts';

const STATUSES = ['NotContacted', 'Success', 'Failure', 'RetryPending'];
const phone = (i: number) => `+1646${2_000_000 + ((i * 7919) % 1_000_000)}`;

describe.each([':memory:', 'a file'])('on %s', (where) => {
  let s: TestServer;
  let acc: string;
  let token: string;
  let cid: string;
  let dir: string | undefined;

  beforeAll(async () => {
    if (where === 'a file') dir = mkdtempSync(join(tmpdir(), 'cdk-paging-'));
    s = await startServer({ db: dir ? join(dir, 'paging.db') : ':memory:' });
    acc = (await createAccount(s)).id;
    token = await createKey(s, acc, ['CampaignAdmin']);
    cid = (await createCampaign(s, acc, { type: 'Dynamic', state: 'Active' })).id;
    await addNumbers(s, acc, cid, Array.from({ length: 600 }, (_, i) => phone(i)));
    const all: CampaignNumber[] = await (await s.request(`/v1/accounts/${acc}/campaigns/${cid}/numbers` + q({ range: [0, 999] }), { token })).json();
    all.forEach((n, i) => { if (i % 5) setNumber(s, n.id, STATUSES[i % 4]!, i % 3); });
  });
  afterAll(async () => {
    await s.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function page(path: string, params: Parameters<typeof q>[0]): Promise<CampaignNumber[]> {
    const res = await s.request(`/v1/accounts/${acc}/campaigns/${cid}/${path}` + q(params), { token });
    expect(res.status).toBe(200);
    return res.json();
  }

  async function readAll(path: string, params: Parameters<typeof q>[0], size: number): Promise<string[]> {
    const ids: string[] = [];
    for (let first = 0; ; first += size) {
      const p = await page(path, { ...params, range: [first, first + size - 1] });
      ids.push(...p.map((n) => n.id));
      if (p.length < size) return ids;
    }
  }

  describe('reading all pages in order', () => {
    it.each([
      ['numbers', {}],
      ['numbers', { sort: ['number', 'DESC'] }],
      ['numbers', { sort: ['attempts', 'DESC'] }],
      ['numbers', { sort: ['attempts', 'ASC'], filter: { status: 'Failure' } }],
      ['numbers', { sort: ['attempts', 'DESC'], filter: { status: ['Success', 'RetryPending'] } }],
      ['numbers', { sort: ['number', 'ASC'], filter: { status: ['NotContacted', 'Failure'], attempts_gt: 0 } }],
      ['reports/numberDetails', { sort: ['number', 'ASC'] }],
      ['reports/numberDetails', { sort: ['attempts', 'DESC'], filter: { status: 'Success' } }],
    ] as const)('%s %j gives the records of one big page, each once', async (path, params) => {
      const big = (await page(path, { ...params, range: [0, 999] })).map((n) => n.id);
      expect(big.length).toBeGreaterThan(40);
      for (const size of [7, 50]) expect(await readAll(path, params, size)).toEqual(big);
    });
  });

  describe('changes between pages', () => {
    it('continues after the last record seen when an earlier record is deleted', async () => {
      const params = { sort: ['number', 'ASC'] as const, filter: { status: ['NotContacted'] } };
      const before = (await page('numbers', { ...params, range: [0, 999] })).map((n) => n.number);
      const first = await page('numbers', { ...params, range: [0, 9] });
      const del = await s.request(`/v1/accounts/${acc}/campaigns/${cid}/numbers`, { method: 'DELETE', token, json: [first[3]!.id] });
      expect(del.status).toBe(204);
      const second = await page('numbers', { ...params, range: [10, 19] });
      // with a plain offset the deletion would have shifted everything by one and skipped before[10]
      expect(second.map((n) => n.number)).toEqual(before.slice(10, 20));
    });
  });

  describe('the page written as JSON text by the store', () => {
    it('is exactly JSON.stringify of the records, for awkward variable values and deleted numbers too', async () => {
      const c = (await createCampaign(s, acc, { type: 'Dynamic', state: 'Active' })).id;
      const awkward = ['"quoted"', 'back\\slash', 'tab\there', 'line\nbreak', 'ünïcödé', '😀 emoji', '\u0001 control', '</script>', ''];
      await addNumbers(s, acc, c, awkward.map((v, i) => ({ number: phone(5_000 + i), varValues: [v, `#${i}`] })));
      const pk = s.store.db.get<{ pk: number }>('SELECT pk FROM campaigns WHERE id = ?', c)!.pk;
      const rows = s.store.db.all<NumberRow>('SELECT * FROM numbers WHERE campaign_pk = ? ORDER BY number', pk);
      s.store.numbers.markDeleted(pk, [rows[0]!]);
      for (const [path, record] of [['numbers', numberRecord], ['reports/numberDetails', (r: NumberRow) => ({ ...numberRecord(r), status: r.status })]] as const) {
        const res = await s.request(`/v1/accounts/${acc}/campaigns/${c}/${path}` + q({ range: [0, 99], sort: ['number', 'ASC'] }), { token });
        const text = await res.text();
        const expected = s.store.db.all<NumberRow>(
          `SELECT * FROM numbers WHERE campaign_pk = ? ${path === 'numbers' ? 'AND deleted = 0' : ''} ORDER BY number, deleted`, pk).map(record);
        expect(expected.length).toBe(path === 'numbers' ? awkward.length - 1 : awkward.length);
        expect(text).toBe(JSON.stringify(expected));
        expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      }
    });
  });

  describe('the page reader', () => {
    it(where === 'a file' ? 'reads on a thread of its own' : 'reads on the server connection (nothing else can open :memory:)', () => {
      expect(s.store.pages.thread !== null).toBe(where === 'a file');
    });

    it('sees a write answered just before: numbers added, then listed, then deleted', async () => {
      const c = (await createCampaign(s, acc, { type: 'Dynamic', state: 'Active' })).id;
      const list = async () => {
        const res = await s.request(`/v1/accounts/${acc}/campaigns/${c}/numbers` + q({ range: [0, 99] }), { token });
        return { total: Number(res.headers.get('x-total-count')), numbers: ((await res.json()) as CampaignNumber[]).map((n) => n.number) };
      };
      for (let round = 0; round < 20; round++) {
        const added = [phone(10_000 + round * 2), phone(10_001 + round * 2)];
        await addNumbers(s, acc, c, added);
        const after = await list();
        expect(after.numbers).toEqual(expect.arrayContaining(added));
        expect(after.total).toBe(after.numbers.length);
      }
      const all: CampaignNumber[] = await (await s.request(`/v1/accounts/${acc}/campaigns/${c}/numbers` + q({ range: [0, 99] }), { token })).json();
      const del = await s.request(`/v1/accounts/${acc}/campaigns/${c}/numbers`, { method: 'DELETE', token, json: all.slice(0, 5).map((n) => n.id) });
      expect(del.status).toBe(204);
      expect((await list()).total).toBe(all.length - 5);
    });
  });
});

describe('a page reader thread that fails', () => {
  it('costs no answer: the pages asked for meanwhile and after are read on the server connection, with a warning', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdk-paging-'));
    const s = await startServer({ db: join(dir, 'fails.db') });
    try {
      const acc = (await createAccount(s)).id;
      const token = await createKey(s, acc, ['CampaignAdmin']);
      const cid = (await createCampaign(s, acc, { type: 'Dynamic', state: 'Active' })).id;
      await addNumbers(s, acc, cid, Array.from({ length: 300 }, (_, i) => phone(i)));
      const page = async (first: number) => {
        const res = await s.request(`/v1/accounts/${acc}/campaigns/${cid}/numbers` + q({ range: [first, first + 9], sort: ['number', 'ASC'] }), { token });
        return { status: res.status, total: res.headers.get('x-total-count'), numbers: ((await res.json()) as CampaignNumber[]).map((n) => n.number) };
      };
      const sorted = Array.from({ length: 300 }, (_, i) => phone(i)).sort();
      const warned = new Promise<Error>((resolve) => process.once('warning', resolve));
      const thread = s.store.pages.thread!;
      expect(thread).not.toBeNull();
      const firsts = Array.from({ length: 30 }, (_, i) => i * 10);
      const asked = firsts.map(page);
      await thread.terminate();
      firsts.push(290);
      const answers = await Promise.all([...asked, page(290)]);
      answers.forEach((a, i) => {
        expect(a.status).toBe(200);
        expect(a.total).toBe('300');
        expect(a.numbers).toEqual(sorted.slice(firsts[i], firsts[i]! + 10));
      });
      expect((await warned).message).toMatch(/page reader exited with code \d+; pages are read on the server's connection from now on/);
      expect(s.store.pages.thread).toBeNull();
    } finally {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
