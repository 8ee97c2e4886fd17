// The Pipedrive stand-in over real HTTP: cursor paging, incremental sync, filters, auth, burst and daily limits, webhooks, call logs.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DO_NOT_CALL_FIELD, startPipedriveStandIn, type PipedriveStandIn, type StoredPerson } from '../../crm-stand-ins/pipedrive.ts';

const TOKEN = 'pd-test-token';
const NO_LIMITS = { burstPer2Seconds: 1e9, dailyTokens: 1e12 };

function get(s: PipedriveStandIn, path: string, token: string | null = TOKEN): Promise<Response> {
  return fetch(s.url + path, { headers: token ? { 'x-api-token': token } : {} });
}

async function json(res: Response): Promise<any> {
  return res.json();
}

/** A clock the test moves by hand. */
function manualClock(start: string) {
  let t = Date.parse(start);
  return { now: () => t, advance(ms: number) { t += ms; } };
}

describe('persons listing', () => {
  let s: PipedriveStandIn;
  const clock = manualClock('2026-03-01T12:00:00Z');
  beforeAll(async () => {
    s = await startPipedriveStandIn({ persons: 12_000, ...NO_LIMITS, now: clock.now });
  });
  afterAll(() => s.close());

  it('pages through every person exactly once with cursors, staying stable while persons are added at the end', async () => {
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await get(s, `/api/v2/persons?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status).toBe(200);
      const body = await json(res);
      expect(body.success).toBe(true);
      expect(body.data.length).toBeLessThanOrEqual(500);
      seen.push(...body.data.map((p: StoredPerson) => p.id));
      cursor = body.additional_data.next_cursor;
      pages++;
      if (pages === 3) for (let i = 0; i < 5; i++) s.createPerson({ name: `Late Comer ${i}`, phones: [{ value: '+12125550000' }] });
    } while (cursor);
    expect(pages).toBe(25); // 12,005 persons, 500 a page
    expect(seen).toEqual(Array.from({ length: 12_005 }, (_, i) => i + 1));
  });

  it('returns persons in the API v2 shape, seeded with phones and increasing update_time', async () => {
    const body = await json(await get(s, '/api/v2/persons?ids=1,10,11'));
    expect(body.data.map((p: StoredPerson) => p.id)).toEqual([1, 10, 11]);
    const [first, tenth] = body.data as StoredPerson[];
    expect(first).toMatchObject({
      id: 1, org_id: null, owner_id: 1, add_time: '2026-01-01T00:00:00Z', update_time: '2026-01-01T00:00:00Z',
      phones: [{ primary: true, label: 'work' }], emails: [{ primary: true, label: 'work' }], custom_fields: {},
    });
    expect(first!.name).toBe(`${first!.first_name} ${first!.last_name}`);
    expect(tenth!.update_time).toBe('2026-01-01T00:00:09Z');
    expect(tenth!.phones.map((p) => p.label)).toEqual(['work', 'mobile']);
    expect((await json(await get(s, '/api/v2/persons/10'))).data).toEqual(tenth);
    const missing = await get(s, '/api/v2/persons/999999');
    expect(missing.status).toBe(404);
    expect(await json(missing)).toMatchObject({ success: false, errorCode: 404 });
  });

  it('returns only persons changed since a time (inclusive), in update_time order', async () => {
    // Everything so far (seeds and the five late comers) is at or before now; move on and change two persons.
    clock.advance(60_000);
    const since = new Date(clock.now()).toISOString().replace('.000Z', 'Z');
    const a = s.updatePerson(500, { name: 'Renamed Person' });
    const b = s.updatePerson(7, { phones: [{ value: '+13125550199', label: 'mobile' }] });
    expect(a.update_time).toBe(since);
    expect(b.update_time).toBe(since); // same second: hence the inclusive updated_since
    expect(a.first_name).toBe('Renamed');
    const body = await json(await get(s, `/api/v2/persons?sort_by=update_time&updated_since=${since}&limit=500`));
    expect(body.data.map((p: StoredPerson) => p.id)).toEqual([7, 500]);
    expect(body.additional_data.next_cursor).toBeNull();
    // The same range in id order finds them too.
    const byId = await json(await get(s, `/api/v2/persons?updated_since=${since}`));
    expect(byId.data.map((p: StoredPerson) => p.id)).toEqual([7, 500]);
    // A range of seeded times: 2026-01-01T00:00:10Z..00:00:20Z exclusive of the end.
    const range = await json(await get(s, '/api/v2/persons?sort_by=update_time&updated_since=2026-01-01T00:00:10Z&updated_until=2026-01-01T00:00:20Z'));
    expect(range.data.map((p: StoredPerson) => p.id)).toEqual([11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
  });

  it('pages by update_time with a cursor, newest first', async () => {
    const ids: number[] = [];
    let cursor: string | null = null;
    do {
      const q: string = `sort_by=update_time&sort_direction=desc&updated_since=2026-01-01T03:00:00Z&limit=300${cursor ? `&cursor=${cursor}` : ''}`;
      const body = await json(await get(s, `/api/v2/persons?${q}`));
      ids.push(...body.data.map((p: StoredPerson) => p.id));
      cursor = body.additional_data.next_cursor;
    } while (cursor);
    // The 1,200 seeds from 03:00:00 on, the 5 late comers, and 7 and 500, which their updates moved into the range.
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(12_000 - 10_800 + 5 + 2);
    expect(ids.slice(0, 2)).toEqual([500, 7]);
  });

  it('applies a saved filter, and answers 404 for an unknown one', async () => {
    const filterId = s.filters.create('every 7th', (p) => p.id % 7 === 0);
    const ids: number[] = [];
    let cursor: string | null = null;
    do {
      const body = await json(await get(s, `/api/v2/persons?filter_id=${filterId}&limit=500${cursor ? `&cursor=${cursor}` : ''}`));
      ids.push(...body.data.map((p: StoredPerson) => p.id));
      cursor = body.additional_data.next_cursor;
    } while (cursor);
    expect(ids.length).toBe(Math.floor(12_005 / 7));
    expect(ids.every((id) => id % 7 === 0)).toBe(true);
    const unknown = await get(s, '/api/v2/persons?filter_id=999');
    expect(unknown.status).toBe(404);
    expect(await json(unknown)).toMatchObject({ success: false, error: 'Filter not found', errorCode: 404 });
  });

  it('answers 400 naming the parameter for bad input', async () => {
    const cases: [string, RegExp][] = [
      ['limit=501', /^limit: .*1 to 500/],
      ['limit=0', /^limit:/],
      ['sort_by=name', /^sort_by:/],
      ['sort_direction=up', /^sort_direction:/],
      ['updated_since=yesterday', /^updated_since:/],
      [`ids=${Array.from({ length: 101 }, (_, i) => i + 1).join(',')}`, /^ids: at most 100/],
      ['cursor=garbage', /^cursor:/],
    ];
    for (const [q, message] of cases) {
      const res = await get(s, `/api/v2/persons?${q}`);
      expect(res.status, q).toBe(400);
      const body = await json(res);
      expect(body).toMatchObject({ success: false, errorCode: 400 });
      expect(body.error, q).toMatch(message);
    }
    const page = await json(await get(s, '/api/v2/persons?limit=1'));
    const mismatch = await json(await get(s, `/api/v2/persons?limit=1&sort_by=update_time&cursor=${page.additional_data.next_cursor}`));
    expect(mismatch.error).toMatch(/^cursor: was issued for sort_by=id/);
  });

  it('requires the API token, as a header or a query parameter', async () => {
    for (const res of [await get(s, '/api/v2/persons', null), await get(s, '/api/v2/persons', 'wrong')]) {
      expect(res.status).toBe(401);
      expect(await json(res)).toMatchObject({ success: false, error: 'unauthorized access', errorCode: 401 });
    }
    const viaQuery = await get(s, `/api/v2/persons?limit=1&api_token=${TOKEN}`, null);
    expect(viaQuery.status).toBe(200);
  });
});

describe('rate limits', () => {
  it('refuses the 21st request in 2 seconds with 429 and x-ratelimit-reset, without Retry-After', async () => {
    const clock = manualClock('2026-03-01T12:00:00Z');
    const s = await startPipedriveStandIn({ persons: 10, now: clock.now });
    try {
      for (let i = 0; i < 20; i++) {
        const res = await get(s, '/api/v2/persons/1');
        expect(res.status).toBe(200);
        expect(res.headers.get('x-ratelimit-limit')).toBe('20');
        expect(res.headers.get('x-ratelimit-remaining')).toBe(String(19 - i));
        if (i === 9) clock.advance(1500);
      }
      const over = await get(s, '/api/v2/persons/1');
      expect(over.status).toBe(429);
      expect(over.headers.get('retry-after')).toBeNull();
      expect(over.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(over.headers.get('x-ratelimit-reset')).toBe('1'); // the first ten leave the window 0.5 s from now
      expect(await json(over)).toMatchObject({ success: false, error: 'Request over limit', errorCode: 429 });
      clock.advance(500);
      const again = await get(s, '/api/v2/persons/1');
      expect(again.status).toBe(200);
      expect(again.headers.get('x-ratelimit-remaining')).toBe('9');
      expect(s.stats).toMatchObject({ requests: 22, rateLimited: 1, tokensUsed: 21, maxRequestsInAny2Seconds: 21 });
    } finally {
      await s.close();
    }
  });

  it('answers 429 to the next n requests after failNext(n)', async () => {
    const s = await startPipedriveStandIn({ persons: 3 });
    try {
      s.failNext(2);
      for (let i = 0; i < 2; i++) {
        const res = await get(s, '/api/v2/persons');
        expect(res.status).toBe(429);
        expect(res.headers.get('retry-after')).toBeNull();
        expect(res.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
      }
      expect((await get(s, '/api/v2/persons')).status).toBe(200);
      expect(s.stats.rateLimited).toBe(2);
    } finally {
      await s.close();
    }
  });

  it('spends the daily token budget by each endpoint\'s cost and restores it the next UTC day', async () => {
    const clock = manualClock('2026-03-01T23:00:00Z');
    const s = await startPipedriveStandIn({ persons: 3, dailyTokens: 25, now: clock.now });
    try {
      const first = await get(s, '/api/v2/persons'); // 10 tokens
      expect(first.headers.get('x-daily-requests-left')).toBe('15');
      clock.advance(2000);
      expect((await get(s, '/api/v2/persons')).status).toBe(200); // 20
      clock.advance(2000);
      const refused = await get(s, '/api/v2/persons'); // would be 30
      expect(refused.status).toBe(429);
      expect(refused.headers.get('x-daily-requests-left')).toBe('5');
      expect(refused.headers.get('retry-after')).toBeNull();
      const single = await get(s, '/api/v2/persons/1'); // 1 token still fits
      expect(single.status).toBe(200);
      expect(single.headers.get('x-daily-requests-left')).toBe('4');
      clock.advance(60 * 60 * 1000);
      const nextDay = await get(s, '/api/v2/persons');
      expect(nextDay.status).toBe(200);
      expect(nextDay.headers.get('x-daily-requests-left')).toBe('15');
      expect(s.stats.tokensUsed).toBe(31);
    } finally {
      await s.close();
    }
  });
});

describe('webhooks', () => {
  it('POSTs v2 person webhooks with HTTP Basic auth on create, change and delete', async () => {
    const received: { headers: IncomingHttpHeaders; body: any }[] = [];
    const receiver = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => { raw += c; });
      req.on('end', () => {
        received.push({ headers: req.headers, body: JSON.parse(raw) });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/pipedrive`;
    const s = await startPipedriveStandIn({ persons: 2, webhook: { url, user: 'hook-user', password: 's3cret' } });
    try {
      const created = s.createPerson({ name: 'Grace Hopper', phones: [{ value: '(212) 555-0142' }], emails: [{ value: 'grace@example.com' }], abc123hash: 'vip' });
      expect(created).toMatchObject({ id: 3, first_name: 'Grace', last_name: 'Hopper', custom_fields: { abc123hash: 'vip' } });
      expect(created.phones).toEqual([{ value: '(212) 555-0142', primary: true, label: 'work' }]);
      const changed = s.updatePerson(created.id, { phones: [{ value: '+12125550143', label: 'mobile' }] });
      s.deletePerson(created.id);
      expect(s.getPerson(created.id)).toBeUndefined();
      await s.flushWebhooks();

      expect(received.map((r) => r.body.meta.action)).toEqual(['create', 'change', 'delete']);
      const auth = `Basic ${Buffer.from('hook-user:s3cret').toString('base64')}`;
      for (const r of received) {
        expect(r.headers.authorization).toBe(auth);
        expect(r.headers['content-type']).toBe('application/json');
        expect(r.body.meta).toMatchObject({
          entity: 'person', version: '2.0', entity_id: '3', is_bulk_edit: false, attempt: 1,
          host: 'company.pipedrive.com', change_source: 'app',
        });
        expect(typeof r.body.meta.id).toBe('string');
        expect(Number.isNaN(Date.parse(r.body.meta.timestamp))).toBe(false);
      }
      expect(new Set(received.map((r) => r.body.meta.id)).size).toBe(3);
      const [create, change, del] = received.map((r) => r.body);
      expect(create.data).toEqual(created);
      expect(create.previous).toBeNull();
      expect(change.data).toEqual(changed);
      expect(change.previous).toEqual(created);
      expect(del.data).toBeNull();
      expect(del.previous).toEqual(changed);
      expect(s.stats).toMatchObject({ webhooksSent: 3, webhooksFailed: 0 });

      // An explicit send, to another address and credentials, reports the receiver's answer.
      const direct = await s.sendWebhook('change', changed, created, { user: 'other', password: 'pw' });
      expect(direct).toEqual({ status: 200, body: 'ok' });
      expect(received.at(-1)!.headers.authorization).toBe(`Basic ${Buffer.from('other:pw').toString('base64')}`);
    } finally {
      await s.close();
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});

describe('call logs', () => {
  it('stores a call log and answers 400 for missing or malformed fields', async () => {
    const s = await startPipedriveStandIn({ persons: 2 });
    try {
      const post = (body: unknown) => fetch(`${s.url}/v1/callLogs`, {
        method: 'POST', headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' }, body: JSON.stringify(body),
      });
      const good = {
        outcome: 'connected', to_phone_number: '+12125550142', start_time: '2026-03-01 12:00:00', end_time: '2026-03-01 12:03:20',
        person_id: 1, duration: '200', subject: 'Campaign call', note: 'Spoke to Grace',
      };
      const res = await post(good);
      expect(res.status).toBe(200);
      const body = await json(res);
      expect(body.success).toBe(true);
      expect(typeof body.data.id).toBe('string');
      expect(body.data).toMatchObject(good);
      expect(s.callLogs()).toEqual([body.data]);

      const bad: [Record<string, unknown>, RegExp][] = [
        [{ ...good, outcome: undefined }, /^outcome: required/],
        [{ ...good, outcome: 'answered' }, /^outcome: must be one of/],
        [{ ...good, to_phone_number: undefined }, /^to_phone_number: required/],
        [{ ...good, start_time: '2026-03-01T12:00:00Z' }, /^start_time: .*YYYY-MM-DD HH:MM:SS/],
        [{ ...good, end_time: '2026-02-30 12:00:00' }, /^end_time:/],
      ];
      for (const [b, message] of bad) {
        const r = await post(b);
        expect(r.status).toBe(400);
        const e = await json(r);
        expect(e).toMatchObject({ success: false, errorCode: 400 });
        expect(e.error).toMatch(message);
      }
      expect(s.callLogs()).toHaveLength(1);
      expect(s.stats.tokensUsed).toBe(10 * 6);
    } finally {
      await s.close();
    }
  });
});

describe('call logs: list, read, failCallLogs', () => {
  const log = (i: number) => ({
    outcome: i % 2 === 0 ? 'connected' : 'no_answer', to_phone_number: `+1212555${String(1000 + i)}`,
    start_time: '2026-03-01 12:00:00', end_time: '2026-03-01 12:01:00', person_id: 1, subject: `Call ${i}`,
  });
  const post = (s: PipedriveStandIn, body: unknown, path = '/v1/callLogs') => fetch(s.url + path, {
    method: 'POST', headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });

  it('pages call logs in creation order with start/limit, capping limit at the documented 50', async () => {
    const s = await startPipedriveStandIn({ persons: 1, ...NO_LIMITS });
    try {
      const empty = await json(await get(s, '/v1/callLogs'));
      expect(empty).toEqual({ success: true, data: null, additional_data: { pagination: { start: 0, limit: 50, more_items_in_collection: false } } });
      for (let i = 0; i < 120; i++) expect((await post(s, log(i), i % 2 ? '/api/v1/callLogs' : '/v1/callLogs')).status).toBe(200);

      const seen: string[] = [];
      let start: number | undefined = 0;
      let pages = 0;
      while (start !== undefined) {
        const body = await json(await get(s, `/v1/callLogs?start=${start}&limit=50`));
        expect(body.success).toBe(true);
        expect(body.additional_data.pagination).toMatchObject({ start, limit: 50 });
        seen.push(...body.data.map((l: { id: string }) => l.id));
        start = body.additional_data.pagination.more_items_in_collection ? body.additional_data.pagination.next_start : undefined;
        pages++;
      }
      expect(pages).toBe(3);
      expect(seen).toEqual(s.callLogs().map((l) => l.id));

      // A limit above 50 is served as 50; the answer says so and where to go on.
      const big = await json(await get(s, '/api/v1/callLogs?start=60&limit=500'));
      expect(big.data).toHaveLength(50);
      expect(big.data[0].subject).toBe('Call 60');
      expect(big.additional_data.pagination).toEqual({ start: 60, limit: 50, more_items_in_collection: true, next_start: 110 });
      const last = await json(await get(s, '/v1/callLogs?start=110&limit=20'));
      expect(last.data.map((l: { subject: string }) => l.subject)).toEqual(Array.from({ length: 10 }, (_, i) => `Call ${110 + i}`));
      expect(last.additional_data.pagination).toEqual({ start: 110, limit: 20, more_items_in_collection: false });
      expect((await json(await get(s, '/v1/callLogs?start=500'))).data).toBeNull();

      for (const bad of ['start=-1', 'start=x', 'limit=0', 'limit=abc']) {
        const r = await get(s, `/v1/callLogs?${bad}`);
        expect(r.status).toBe(400);
        expect(await json(r)).toMatchObject({ success: false, errorCode: 400, error: expect.stringMatching(/^(start|limit): /) });
      }
    } finally {
      await s.close();
    }
  });

  it('reads one call log by id (404 when unknown) and charges 20 tokens a list, 2 a read', async () => {
    const s = await startPipedriveStandIn({ persons: 1 });
    try {
      const created = (await json(await post(s, log(7)))).data;
      const one = await get(s, `/v1/callLogs/${created.id}`);
      expect(one.status).toBe(200);
      expect(await json(one)).toEqual({ success: true, data: created });
      expect((await json(await get(s, `/api/v1/callLogs/${created.id}`))).data).toEqual(created);
      const missing = await get(s, '/v1/callLogs/0123456789abcdef01234567');
      expect(missing.status).toBe(404);
      expect(await json(missing)).toMatchObject({ success: false, error: 'Call log not found', errorCode: 404 });
      expect(s.stats.tokensUsed).toBe(10 + 2 * 3);
      await get(s, '/v1/callLogs');
      expect(s.stats.tokensUsed).toBe(10 + 2 * 3 + 20);
    } finally {
      await s.close();
    }
  });

  it('failCallLogs refuses matching call logs with 400 and its message until cleared', async () => {
    const s = await startPipedriveStandIn({ persons: 1, ...NO_LIMITS });
    try {
      s.failCallLogs((l) => (l.to_phone_number.endsWith('1003') ? 'Simulated: number blocked' : false));
      expect((await post(s, log(2))).status).toBe(200);
      const refused = await post(s, log(3));
      expect(refused.status).toBe(400);
      expect(await json(refused)).toMatchObject({ success: false, error: 'Simulated: number blocked', errorCode: 400 });
      s.failCallLogs(() => true);
      const generic = await post(s, log(4));
      expect(generic.status).toBe(400);
      expect((await json(generic)).error).toMatch(/failCallLogs/);
      s.failCallLogs(null);
      expect((await post(s, log(3))).status).toBe(200);
      expect(s.callLogs().map((l) => l.subject)).toEqual(['Call 2', 'Call 3']);
      expect((await json(await get(s, '/v1/callLogs'))).data.map((l: { subject: string }) => l.subject)).toEqual(['Call 2', 'Call 3']);
    } finally {
      await s.close();
    }
  });
});

describe('PATCH /api/v2/persons/{id}', () => {
  it('updates fields and custom fields, bumps update_time, fires the change webhook, and 404s an unknown person', async () => {
    const received: any[] = [];
    const receiver = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => { raw += c; });
      req.on('end', () => {
        received.push(JSON.parse(raw));
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    const clock = manualClock('2026-04-01T10:00:00Z');
    const s = await startPipedriveStandIn({ persons: 3, now: clock.now, ...NO_LIMITS, webhook: { url, user: 'u', password: 'p' } });
    const patch = (id: number | string, body: unknown) => fetch(`${s.url}/api/v2/persons/${id}`, {
      method: 'PATCH', headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    try {
      const before = s.getPerson(2)!;
      clock.advance(30_000);
      const res = await patch(2, { name: 'Ada Lovelace', custom_fields: { last_call_outcome: 'connected', calls_made: 3 } });
      expect(res.status).toBe(200);
      const body = await json(res);
      expect(body.success).toBe(true);
      expect(body.data).toMatchObject({
        id: 2, name: 'Ada Lovelace', first_name: 'Ada', last_name: 'Lovelace', add_time: before.add_time,
        update_time: '2026-04-01T10:00:30Z', custom_fields: { last_call_outcome: 'connected', calls_made: 3 }, phones: before.phones,
      });
      expect(s.getPerson(2)).toEqual(body.data);
      // Custom fields merge: a later PATCH keeps the ones it does not name.
      clock.advance(1000);
      const again = await json(await patch(2, { custom_fields: { last_call_outcome: 'no_answer' } }));
      expect(again.data.custom_fields).toEqual({ last_call_outcome: 'no_answer', calls_made: 3 });
      expect(again.data.update_time).toBe('2026-04-01T10:00:31Z');
      // The change shows up for an incremental sync.
      const since = await json(await get(s, '/api/v2/persons?sort_by=update_time&updated_since=2026-04-01T10:00:00Z'));
      expect(since.data.map((p: StoredPerson) => p.id)).toEqual([2]);

      await s.flushWebhooks();
      expect(received.map((r) => [r.meta.action, r.meta.entity_id])).toEqual([['change', '2'], ['change', '2']]);
      expect(received[0].previous).toEqual(before);
      expect(received[1].data).toEqual(again.data);

      const missing = await patch(999, { name: 'Nobody' });
      expect(missing.status).toBe(404);
      expect(await json(missing)).toMatchObject({ success: false, error: 'Person not found', errorCode: 404 });
      const bad: [unknown, RegExp][] = [
        [{}, /^body: give at least one/],
        [{ abc123hash: 'vip' }, /^abc123hash: not a person field; custom fields go inside custom_fields/],
        [{ name: '' }, /^name:/],
        [{ org_id: 'x' }, /^org_id:/],
        [{ visible_to: 2 }, /^visible_to:/],
        [{ phones: [{ label: 'work' }] }, /^phones\[0\]\.value/],
        [{ custom_fields: ['x'] }, /^custom_fields:/],
      ];
      for (const [b, message] of bad) {
        const r = await patch(3, b);
        expect(r.status).toBe(400);
        expect((await json(r)).error).toMatch(message);
      }
      expect(s.getPerson(3)!.update_time).toBe('2026-01-01T00:00:02Z');
    } finally {
      await s.close();
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it('costs 5 tokens', async () => {
    const s = await startPipedriveStandIn({ persons: 1 });
    try {
      const res = await fetch(`${s.url}/api/v2/persons/1`, {
        method: 'PATCH', headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'New Name' }),
      });
      expect(res.status).toBe(200);
      expect(s.stats.tokensUsed).toBe(5);
    } finally {
      await s.close();
    }
  });
});

describe('strict as Pipedrive: a drifting request is refused the way Pipedrive refuses it, and counted', () => {
  let s: PipedriveStandIn;
  beforeAll(async () => {
    s = await startPipedriveStandIn({ persons: 3, ...NO_LIMITS });
  });
  afterAll(() => s.close());

  const send = (method: string, path: string, body?: unknown) => fetch(s.url + path, {
    method, headers: { 'x-api-token': TOKEN, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  /** Expects Pipedrive's error body with this status and message, counted as one more refusal of this path. */
  async function expectRefused(method: string, path: string, body: unknown, message: RegExp, status = 400): Promise<void> {
    const before = s.stats.refused;
    const res = await send(method, path, body);
    expect(res.status).toBe(status);
    const e = await json(res);
    expect(e).toMatchObject({ success: false, errorCode: status, error: expect.stringMatching(message), data: null });
    expect(s.stats.refused).toBe(before + 1);
    expect(s.refusals().at(-1)).toEqual({ method, path: path.split('?')[0], status, message: e.error });
  }
  const log = { outcome: 'connected', to_phone_number: '+12125550142', start_time: '2026-03-01 12:00:00', end_time: '2026-03-01 12:00:30', person_id: 1 };

  it('refuses call log fields AddCallLogRequest does not have, or of another type', async () => {
    await expectRefused('POST', '/v1/callLogs', { ...log, personId: 1 }, /^personId: not a call log field; a call log takes outcome, to_phone_number/);
    await expectRefused('POST', '/v1/callLogs', { ...log, duration: 30 }, /^duration: must be a string of whole seconds; got 30$/);
    await expectRefused('POST', '/v1/callLogs', { ...log, person_id: '1' }, /^person_id: must be a positive integer; got "1"$/);
    expect((await send('POST', '/v1/callLogs', { ...log, duration: '30' })).status).toBe(200);
  });

  it('refuses query parameters an endpoint does not have, and unknown fields of a person update', async () => {
    await expectRefused('GET', '/api/v2/persons?start=0', undefined, /^start: not a parameter of this endpoint; it takes filter_id, ids/);
    await expectRefused('GET', '/api/v2/persons?sort=id', undefined, /^sort: not a parameter/);
    await expectRefused('GET', '/v1/callLogs?cursor=abc', undefined, /^cursor: not a parameter of this endpoint; it takes start, limit$/);
    await expectRefused('GET', '/api/v2/persons?updated_since=2026-01-01', undefined, /^updated_since:/);
    await expectRefused('PATCH', '/api/v2/persons/1', { phone: '+12125550100' }, /^phone: not a person field/);
    expect((await send('GET', '/api/v2/persons?limit=2&sort_by=update_time&sort_direction=asc&updated_since=2026-01-01T00:00:00Z&api_token=' + TOKEN)).status).toBe(200);
  });

  it('refuses (404, counted) paths Pipedrive does not serve: call logs have no v2, persons are read through v2', async () => {
    await expectRefused('POST', '/api/v2/callLogs', log, /^Unknown method POST \/api\/v2\/callLogs$/, 404);
    await expectRefused('GET', '/v2/persons', undefined, /Unknown method GET \/v2\/persons/, 404);
  });

  it('does not count what is not a drift: 401, 429, an id or filter not found, a failure the test asked for', async () => {
    const before = s.stats.refused;
    expect((await get(s, '/api/v2/persons', 'wrong')).status).toBe(401);
    s.failNext(1);
    expect((await send('GET', '/api/v2/persons')).status).toBe(429);
    expect((await send('GET', '/api/v2/persons/999')).status).toBe(404);
    expect((await send('PATCH', '/api/v2/persons/999', { name: 'X' })).status).toBe(404);
    expect((await send('GET', '/api/v2/persons?filter_id=77')).status).toBe(404);
    expect((await send('GET', '/v1/callLogs/nope')).status).toBe(404);
    s.failCallLogs(() => true);
    expect((await send('POST', '/v1/callLogs', log)).status).toBe(400);
    s.failCallLogs(null);
    expect(s.stats.refused).toBe(before);
  });
});

describe('a Do Not Call field', () => {
  it('is seeded for a share of the persons as a single-option field (its option id, as API v2 gives it); a PATCH takes an option id or null and refuses anything else', async () => {
    const s = await startPipedriveStandIn({ persons: 200, doNotCallShare: 0.25, ...NO_LIMITS });
    const [yes, no] = DO_NOT_CALL_FIELD.options.map((o) => o.id);
    const patch = (id: number, value: unknown) => fetch(`${s.url}/api/v2/persons/${id}`, {
      method: 'PATCH', headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' }, body: JSON.stringify({ custom_fields: { [DO_NOT_CALL_FIELD.key]: value } }),
    });
    try {
      const body = await json(await get(s, '/api/v2/persons?limit=500'));
      const values = (body.data as StoredPerson[]).map((p) => p.custom_fields[DO_NOT_CALL_FIELD.key]);
      expect(new Set(values)).toEqual(new Set([yes, no]));
      const marked = values.filter((v) => v === yes).length;
      expect(marked).toBeGreaterThan(30);
      expect(marked).toBeLessThan(70);
      expect((await patch(1, yes)).status).toBe(200);
      expect(s.getPerson(1)!.custom_fields[DO_NOT_CALL_FIELD.key]).toBe(yes);
      expect((await patch(1, null)).status).toBe(200);
      expect(s.stats.refused).toBe(0);
      for (const bad of ['Yes', String(yes), true, 999]) {
        const res = await patch(1, bad);
        expect(res.status).toBe(400);
        expect((await json(res)).error).toMatch(new RegExp(`^custom_fields\\.${DO_NOT_CALL_FIELD.key}: must be one of the option ids ${yes}, ${no} or null`));
      }
      expect(s.stats.refused).toBe(4);
      expect(s.getPerson(1)!.custom_fields[DO_NOT_CALL_FIELD.key]).toBeNull();
    } finally {
      await s.close();
    }
  });
});
