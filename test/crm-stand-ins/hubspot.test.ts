// The HubSpot stand-in over real HTTP: search paging and its 10,000 cap, filters, auth, rate limits, lists, batch read, signed webhooks, generated phones.
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { areaCodePhone, generatePeople, validPhone } from '../../crm-stand-ins/contacts.ts';
import { DO_NOT_CALL_PROPERTY, signHubSpotV3, startHubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import type { HubSpotEvent, HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';

const SEED_BASE = Date.parse('2026-01-01T00:00:00.000Z');

interface Answer {
  status: number;
  headers: Headers;
  // Response bodies are whatever the stand-in sent; the assertions check their shape.
  body: any;
}

async function call(hs: HubSpotStandIn, method: string, path: string, body?: unknown, token: string | null = hs.token): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(hs.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

const search = (hs: HubSpotStandIn, body: unknown) => call(hs, 'POST', `/crm/objects/${hs.apiVersion}/contacts/search`, body);

function expectHubSpotError(a: Answer, status: number, category: string): void {
  expect(a.status).toBe(status);
  expect(a.body).toMatchObject({ status: 'error', category });
  expect(a.body.message).toEqual(expect.any(String));
  expect(a.body.correlationId).toMatch(/^[0-9a-f-]{36}$/);
}

describe('search paging over 25,000 contacts', () => {
  let clock = Date.parse('2026-06-01T00:00:00.000Z');
  let hs: HubSpotStandIn;
  beforeAll(async () => {
    hs = await startHubSpotStandIn({ contacts: 25_000, now: () => clock });
  });
  afterAll(() => hs.close());

  const since = (value: string, after?: string) => ({
    filterGroups: [{ filters: [{ propertyName: 'lastmodifieddate', operator: 'GTE', value }] }],
    sorts: [{ propertyName: 'lastmodifieddate', direction: 'ASCENDING' }],
    properties: ['email'],
    limit: 200,
    ...(after ? { after } : {}),
  });

  it('reads every contact once in lastmodifieddate order, restarting from the last value before the 10,000 cap', async () => {
    const seen = new Set<string>();
    let cursor = '0';
    let after: string | undefined;
    let last = '';
    let restarts = 0;
    let pages = 0;
    for (;;) {
      clock += 250; // four searches a second, under the limit of five
      const res = await search(hs, since(cursor, after));
      expect(res.status).toBe(200);
      pages++;
      if (!after) expect(res.body.total).toBe(25_000 - (restarts === 0 ? 0 : restarts * 10_000 - restarts));
      for (const r of res.body.results) {
        expect(r.properties.lastmodifieddate >= last).toBe(true);
        last = r.properties.lastmodifieddate;
        seen.add(r.id);
      }
      const next: string | undefined = res.body.paging?.next?.after;
      if (!next) break;
      if (Number(next) + 200 > 10_000) {
        // The next page would pass the cap: search again from the last value read (GTE repeats one contact).
        cursor = String(Date.parse(last));
        after = undefined;
        restarts++;
      } else {
        after = next;
      }
    }
    expect(seen.size).toBe(25_000);
    expect(Math.min(...[...seen].map(Number))).toBe(1001);
    expect(Math.max(...[...seen].map(Number))).toBe(26_000);
    expect(restarts).toBe(2);
    expect(pages).toBe(126);
    expect(hs.stats.maxSearchesInAnySecond).toBeLessThanOrEqual(4);
    expect(hs.stats.rateLimited).toBe(0);
  });

  it('answers 400 for a page past 10,000 results and accepts the last page before it', async () => {
    clock += 1000;
    const lastAllowed = await search(hs, since('0', '9800'));
    expect(lastAllowed.status).toBe(200);
    expect(lastAllowed.body.results).toHaveLength(200);
    expect(lastAllowed.body.paging.next.after).toBe('10000');
    const beyond = await search(hs, since('0', lastAllowed.body.paging.next.after));
    expectHubSpotError(beyond, 400, 'VALIDATION_ERROR');
    expect(beyond.body.message).toContain('10000');
    expectHubSpotError(await search(hs, since('0', '9900')), 400, 'VALIDATION_ERROR');
  });

  it('omits paging on the last page and gives seeded contacts increasing timestamps from 2026-01-01', async () => {
    clock += 1000;
    const res = await search(hs, { ...since(String(SEED_BASE + 24_990)), limit: 20 });
    expect(res.body.total).toBe(10);
    expect(res.body.paging).toBeUndefined();
    expect(res.body.results[0]).toEqual({
      id: '25991',
      properties: {
        email: generatePeople(1, 1, 24_990)[0]!.email,
        hs_object_id: '25991',
        createdate: new Date(SEED_BASE + 24_990).toISOString(),
        lastmodifieddate: new Date(SEED_BASE + 24_990).toISOString(),
      },
      createdAt: new Date(SEED_BASE + 24_990).toISOString(),
      updatedAt: new Date(SEED_BASE + 24_990).toISOString(),
      archived: false,
    });
  });

  it('serves full pages of 200 deep into 100,000 contacts', async () => {
    // Its speed is measured by bench/daemon.ts, not asserted here.
    const big = await startHubSpotStandIn({ contacts: 100_000, searchPerSecond: 1_000_000 });
    try {
      for (let i = 0; i < 5; i++) {
        const res = await search(big, { ...since(String(SEED_BASE + 50_000 + 1000 * i)), after: String(200 * i) });
        expect(res.body.results).toHaveLength(200);
        expect(res.body.results[0].id).toBe(String(1001 + 50_000 + 1000 * i + 200 * i));
      }
    } finally {
      await big.close();
    }
  });
});

describe('search filters, sorts and properties', () => {
  let clock = Date.parse('2026-06-01T00:00:00.000Z');
  let hs: HubSpotStandIn;
  const people = generatePeople(50);
  beforeAll(async () => {
    hs = await startHubSpotStandIn({ contacts: 50, now: () => clock, searchPerSecond: 1000 });
  });
  afterAll(() => hs.close());
  const ids = (a: Answer): string[] => a.body.results.map((r: { id: string }) => r.id);
  const one = (propertyName: string, operator: string, rest: Record<string, unknown> = {}) => ({
    filterGroups: [{ filters: [{ propertyName, operator, ...rest }] }],
    limit: 100,
  });

  it('EQ matches an email case-insensitively', async () => {
    const res = await search(hs, one('email', 'EQ', { value: people[17]!.email.toUpperCase() }));
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(1);
    expect(ids(res)).toEqual(['1018']);
  });

  it('IN on hs_object_id skips unknown ids', async () => {
    expect(ids(await search(hs, one('hs_object_id', 'IN', { values: ['1005', '1001', '99999'] })))).toEqual(['1001', '1005']);
  });

  it('HAS_PROPERTY / NOT_HAS_PROPERTY tell contacts with and without a phone apart', async () => {
    const noPhone = hs.createContact({ firstname: 'Nadia', email: 'nadia@example.com' });
    const has = await search(hs, one('phone', 'HAS_PROPERTY'));
    expect(has.body.total).toBe(50);
    expect(ids(await search(hs, one('phone', 'NOT_HAS_PROPERTY')))).toEqual([noPhone.id]);
    hs.deleteContact(noPhone.id);
    expect((await search(hs, one('phone', 'NOT_HAS_PROPERTY'))).body.total).toBe(0);
  });

  it('GTE and BETWEEN compare dates given as ISO strings or ms and ids numerically', async () => {
    const gte = await search(hs, one('lastmodifieddate', 'GTE', { value: new Date(SEED_BASE + 45).toISOString() }));
    expect(ids(gte)).toEqual(['1046', '1047', '1048', '1049', '1050']);
    const between = await search(hs, one('createdate', 'BETWEEN', { value: String(SEED_BASE + 10), highValue: String(SEED_BASE + 12) }));
    expect(ids(between)).toEqual(['1011', '1012', '1013']);
    expect(ids(await search(hs, one('hs_object_id', 'BETWEEN', { value: '1008', highValue: '1010' })))).toEqual(['1008', '1009', '1010']);
    expectHubSpotError(await search(hs, one('createdate', 'GTE', { value: 'yesterday' })), 400, 'VALIDATION_ERROR');
  });

  it('ANDs filters in a group, ORs groups, and combines range and other filters', async () => {
    const company = people[3]!.company;
    const expected = people.filter((p) => p.company === company && p.index >= 20).map((p) => String(1001 + p.index));
    const and = await search(hs, {
      filterGroups: [{ filters: [
        { propertyName: 'company', operator: 'EQ', value: company },
        { propertyName: 'lastmodifieddate', operator: 'GTE', value: String(SEED_BASE + 20) },
      ] }],
      limit: 100,
    });
    expect(ids(and)).toEqual(expected);
    const or = await search(hs, {
      filterGroups: [
        { filters: [{ propertyName: 'hs_object_id', operator: 'EQ', value: '1040' }] },
        { filters: [{ propertyName: 'email', operator: 'EQ', value: people[2]!.email }] },
      ],
    });
    expect(ids(or)).toEqual(['1003', '1040']);
    const tokens = await search(hs, one('email', 'CONTAINS_TOKEN', { value: '*@example.com' }));
    expect(tokens.body.total).toBe(50);
    expect((await search(hs, one('email', 'NOT_CONTAINS_TOKEN', { value: people[0]!.email }))).body.total).toBe(49);
  });

  it('sorts by one rule, as an object or a string, ties by id', async () => {
    const desc = await search(hs, { sorts: [{ propertyName: 'lastmodifieddate', direction: 'DESCENDING' }], limit: 3 });
    expect(ids(desc)).toEqual(['1050', '1049', '1048']);
    expect(ids(await search(hs, { sorts: ['-createdate'], limit: 2 }))).toEqual(['1050', '1049']);
    const byCompany = await search(hs, { sorts: ['company'], limit: 100, properties: ['company'] });
    const expected = [...people].sort((a, b) => a.company.toLowerCase().localeCompare(b.company.toLowerCase()) || a.index - b.index);
    expect(ids(byCompany)).toEqual(expected.map((p) => String(1001 + p.index)));
    expectHubSpotError(await search(hs, { sorts: ['company', 'email'] }), 400, 'VALIDATION_ERROR');
  });

  it('returns the requested properties plus hs_object_id, createdate, lastmodifieddate (defaults otherwise)', async () => {
    const picked = await search(hs, { properties: ['phone', 'nonexistent'], limit: 1 });
    expect(Object.keys(picked.body.results[0].properties).sort()).toEqual(['createdate', 'hs_object_id', 'lastmodifieddate', 'nonexistent', 'phone']);
    expect(picked.body.results[0].properties.phone).toBe(people[0]!.phone);
    const defaults = await search(hs, {});
    expect(Object.keys(defaults.body.results[0].properties).sort()).toEqual(['createdate', 'email', 'firstname', 'hs_object_id', 'lastmodifieddate', 'lastname']);
    expect(defaults.body.total).toBe(50);
    expect(defaults.body.results).toHaveLength(10);
    expect(defaults.body.paging.next.after).toBe('10');
  });

  it('enforces the documented limits with HubSpot error bodies', async () => {
    const f = { propertyName: 'email', operator: 'HAS_PROPERTY' };
    expectHubSpotError(await search(hs, { filterGroups: Array.from({ length: 6 }, () => ({ filters: [f] })) }), 400, 'VALIDATION_ERROR');
    expectHubSpotError(await search(hs, { filterGroups: [{ filters: Array.from({ length: 7 }, () => f) }] }), 400, 'VALIDATION_ERROR');
    const nineteen = await search(hs, { filterGroups: [5, 5, 5, 4].map((n) => ({ filters: Array.from({ length: n }, () => f) })) });
    expectHubSpotError(nineteen, 400, 'VALIDATION_ERROR');
    expect(nineteen.body.message).toContain('18');
    expect((await search(hs, { filterGroups: [6, 6, 6].map((n) => ({ filters: Array.from({ length: n }, () => f) })) })).status).toBe(200);
    expectHubSpotError(await search(hs, { limit: 201 }), 400, 'VALIDATION_ERROR');
    expectHubSpotError(await search(hs, { after: 'abc' }), 400, 'VALIDATION_ERROR');
    expectHubSpotError(await search(hs, one('email', 'LIKE', { value: 'x' })), 400, 'VALIDATION_ERROR');
    expectHubSpotError(await search(hs, one('email', 'IN')), 400, 'VALIDATION_ERROR');
  });

  it('serves the legacy v3 search path with the same answers', async () => {
    const body = one('hs_object_id', 'LTE', { value: '1003' });
    const legacy = await call(hs, 'POST', '/crm/v3/objects/contacts/search', body);
    expect(legacy.status).toBe(200);
    expect(legacy.body.results).toEqual((await search(hs, body)).body.results);
  });

  it('moves an updated contact to the end of lastmodifieddate order with strictly increasing times', async () => {
    const frozen = clock;
    const a = hs.updateContact('1001', { firstname: 'Ann' });
    const b = hs.updateContact('1002', { firstname: 'Bo' });
    expect(clock).toBe(frozen);
    expect(Date.parse(b.updatedAt) - Date.parse(a.updatedAt)).toBe(1);
    const res = await search(hs, { sorts: ['-lastmodifieddate'], limit: 2, properties: ['firstname'] });
    expect(ids(res)).toEqual(['1002', '1001']);
    expect(res.body.results[1].properties.firstname).toBe('Ann');
    const since = await search(hs, one('lastmodifieddate', 'GT', { value: String(SEED_BASE + 49) }));
    expect(ids(since)).toEqual(['1001', '1002']);
  });
});

describe('auth, reads and lists', () => {
  let hs: HubSpotStandIn;
  beforeAll(async () => {
    hs = await startHubSpotStandIn({ contacts: 40, requestsPer10Seconds: 1000 });
  });
  afterAll(() => hs.close());

  it('answers 401 without the private-app token or with a wrong one', async () => {
    expectHubSpotError(await call(hs, 'POST', `/crm/objects/${hs.apiVersion}/contacts/search`, {}, null), 401, 'INVALID_AUTHENTICATION');
    expectHubSpotError(await call(hs, 'GET', `/crm/objects/${hs.apiVersion}/contacts/1001`, undefined, 'wrong'), 401, 'INVALID_AUTHENTICATION');
  });

  it('reads one contact or answers 404', async () => {
    const res = await call(hs, 'GET', `/crm/objects/${hs.apiVersion}/contacts/1003?properties=phone,company`);
    expect(res.status).toBe(200);
    expect(res.body.properties.phone).toBe(generatePeople(3)[2]!.phone);
    expect(Object.keys(res.body.properties).sort()).toEqual(['company', 'createdate', 'hs_object_id', 'lastmodifieddate', 'phone']);
    expectHubSpotError(await call(hs, 'GET', `/crm/objects/${hs.apiVersion}/contacts/99999`), 404, 'OBJECT_NOT_FOUND');
  });

  it('batch-reads up to 100 contacts, skipping missing ids', async () => {
    const path = `/crm/objects/${hs.apiVersion}/contacts/batch/read`;
    const res = await call(hs, 'POST', path, { inputs: [{ id: '1002' }, { id: '424242' }, { id: '1007' }], properties: ['email'] });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('COMPLETE');
    expect(res.body.results.map((r: { id: string }) => r.id)).toEqual(['1002', '1007']);
    expect(res.body.results[1].properties.email).toBe(generatePeople(7)[6]!.email);
    const byEmail = await call(hs, 'POST', path, { inputs: [{ id: generatePeople(5)[4]!.email }], idProperty: 'email' });
    expect(byEmail.body.results.map((r: { id: string }) => r.id)).toEqual(['1005']);
    const tooMany = await call(hs, 'POST', path, { inputs: Array.from({ length: 101 }, (_, i) => ({ id: String(1001 + i) })) });
    expectHubSpotError(tooMany, 400, 'VALIDATION_ERROR');
  });

  it('batch-updates up to 100 contacts; ids of no contact come back in a 207, a value of a wrong type refuses all', async () => {
    const path = `/crm/objects/${hs.apiVersion}/contacts/batch/update`;
    const res = await call(hs, 'POST', path, { inputs: [{ id: '1003', properties: { dialer_status: 'Success' } }, { id: '424242', properties: { dialer_status: 'Failure' } }] });
    expect(res.status).toBe(207);
    expect(res.body.results.map((r: { id: string; properties: Record<string, string> }) => [r.id, r.properties.dialer_status])).toEqual([['1003', 'Success']]);
    expect(res.body.errors).toEqual([expect.objectContaining({ category: 'OBJECT_NOT_FOUND', context: { ids: ['424242'] } })]);
    expect(hs.getContact('1003')!.properties.dialer_status).toBe('Success');
    const ok = await call(hs, 'POST', path, { inputs: [{ id: '1003', properties: { dialer_status: 'Failure' } }] });
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe('COMPLETE');
    expectHubSpotError(await call(hs, 'POST', path, { inputs: [{ id: '1004', properties: { dialer_status: ['x'] } }, { id: '1003', properties: { dialer_status: 'x' } }] }), 400, 'VALIDATION_ERROR');
    expect(hs.getContact('1003')!.properties.dialer_status).toBe('Failure');
    const tooMany = await call(hs, 'POST', path, { inputs: Array.from({ length: 101 }, (_, i) => ({ id: String(1001 + i), properties: {} })) });
    expectHubSpotError(tooMany, 400, 'VALIDATION_ERROR');
  });

  it('pages list memberships in recordId order and drops deleted contacts', async () => {
    const members = Array.from({ length: 25 }, (_, i) => String(1040 - i));
    const listId = hs.lists.create('Call today', members);
    hs.lists.add(listId, ['1001']);
    hs.lists.remove(listId, ['1040']);
    hs.deleteContact('1039');
    const read: string[] = [];
    let after: string | undefined;
    let pages = 0;
    do {
      const res = await call(hs, 'GET', `/crm/lists/${hs.apiVersion}/${listId}/memberships?limit=10${after ? `&after=${after}` : ''}`);
      expect(res.status).toBe(200);
      for (const m of res.body.results) {
        expect(m.membershipTimestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
        read.push(m.recordId);
      }
      after = res.body.paging?.next?.after;
      pages++;
    } while (after);
    const expected = ['1001', ...Array.from({ length: 23 }, (_, i) => String(1016 + i))];
    expect(read).toEqual(expected);
    expect(pages).toBe(3);
    const legacy = await call(hs, 'GET', `/crm/v3/lists/${listId}/memberships?limit=250`);
    expect(legacy.body.results.map((m: { recordId: string }) => m.recordId)).toEqual(expected);
    expect(legacy.body.paging).toBeUndefined();
    expectHubSpotError(await call(hs, 'GET', `/crm/lists/${hs.apiVersion}/${listId}/memberships?limit=251`), 400, 'VALIDATION_ERROR');
    expectHubSpotError(await call(hs, 'GET', `/crm/lists/${hs.apiVersion}/777/memberships`), 404, 'OBJECT_NOT_FOUND');
    expectHubSpotError(await call(hs, 'GET', `/crm/objects/${hs.apiVersion}/contacts/1039`), 404, 'OBJECT_NOT_FOUND');
  });
});

describe('list memberships in join order, and records\' list memberships', () => {
  let hs: HubSpotStandIn;
  let t = Date.parse('2026-03-01T00:00:00Z');
  beforeAll(async () => {
    hs = await startHubSpotStandIn({ contacts: 10, requestsPer10Seconds: 1000, now: () => t });
  });
  afterAll(() => hs.close());

  async function joinOrder(listId: string, after?: string, limit = 2): Promise<{ ids: string[]; next?: string; status: number }> {
    const res = await call(hs, 'GET', `/crm/lists/${hs.apiVersion}/${listId}/memberships/join-order?limit=${limit}${after ? `&after=${after}` : ''}`);
    return { ids: res.body.results?.map((m: { recordId: string }) => m.recordId), next: res.body.paging?.next?.after, status: res.status };
  }

  it('pages members in the order they joined (ties by id); a kept cursor finds members who join later, and a re-added member moves to the end', async () => {
    const listId = hs.lists.create('Join order', ['1005', '1003']);
    t += 1000; hs.lists.add(listId, ['1001']);
    t += 1000; hs.lists.add(listId, ['1009']);
    const first = await joinOrder(listId);
    expect(first).toMatchObject({ status: 200, ids: ['1003', '1005'] });
    const second = await joinOrder(listId, first.next);
    expect(second.ids).toEqual(['1001', '1009']);
    expect(second.next).toBeUndefined();
    // The cursor of the last full page, kept: members added afterwards come after it.
    t += 1000; hs.lists.add(listId, ['1002']);
    hs.lists.remove(listId, ['1003']);
    t += 1000; hs.lists.add(listId, ['1003']);
    expect((await joinOrder(listId, first.next, 10)).ids).toEqual(['1001', '1009', '1002', '1003']);
    const legacy = await call(hs, 'GET', `/crm/v3/lists/${listId}/memberships/join-order?limit=250`);
    expect(legacy.body.results.map((m: { recordId: string }) => m.recordId)).toEqual(['1005', '1001', '1009', '1002', '1003']);
    expect(legacy.body.results[0].membershipTimestamp).toBe('2026-03-01T00:00:00.000Z');
    expectHubSpotError(await call(hs, 'GET', `/crm/lists/${hs.apiVersion}/${listId}/memberships/join-order?after=not-a-cursor`), 400, 'VALIDATION_ERROR');
    expectHubSpotError(await call(hs, 'GET', `/crm/lists/${hs.apiVersion}/${listId}/memberships/join-order?limit=251`), 400, 'VALIDATION_ERROR');
    expectHubSpotError(await call(hs, 'GET', `/crm/lists/${hs.apiVersion}/777/memberships/join-order`), 404, 'OBJECT_NOT_FOUND');
  });

  it('batch-reads the lists each record is in, and refuses inputs HubSpot\'s schema refuses', async () => {
    const a = hs.lists.create('A', ['1004', '1006']);
    const b = hs.lists.create('B', ['1006']);
    const path = `/crm/lists/${hs.apiVersion}/records/memberships/batch/read`;
    const res = await call(hs, 'POST', path, { inputs: ['1004', '1006', '1008'].map((recordId) => ({ objectTypeId: '0-1', recordId })) });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('COMPLETE');
    const lists = Object.fromEntries(res.body.results.map((r: { recordId: string; recordListMemberships: { listId: string }[] }) =>
      [r.recordId, r.recordListMemberships.map((m) => m.listId).filter((id) => id === a || id === b)]));
    expect(lists).toEqual({ 1004: [a], 1006: [a, b], 1008: [] });
    expect(res.body.results[0].recordListMemberships[0]).toMatchObject({ listId: a, firstAddedTimestamp: expect.stringMatching(/^2026-/), lastAddedTimestamp: expect.stringMatching(/^2026-/) });
    const before = hs.stats.refused;
    expectHubSpotError(await call(hs, 'POST', path, { inputs: [{ recordId: '1004' }] }), 400, 'VALIDATION_ERROR');
    expectHubSpotError(await call(hs, 'POST', path, { inputs: [{ objectTypeId: '0-1', recordId: 1004 }] }), 400, 'VALIDATION_ERROR');
    expectHubSpotError(await call(hs, 'POST', `/crm/v3/lists/records/memberships/batch/read`, { ids: ['1004'] }), 400, 'VALIDATION_ERROR');
    expect(hs.stats.refused).toBe(before + 3);
    expect(hs.stats.byRoute['POST lists/records/memberships/batch/read']).toBe(4);
  });
});

describe('rate limits', () => {
  let clock = Date.parse('2026-06-01T00:00:00.000Z');
  let hs: HubSpotStandIn;
  beforeAll(async () => {
    hs = await startHubSpotStandIn({ contacts: 5, now: () => clock, requestsPer10Seconds: 3 });
  });
  afterAll(() => hs.close());

  it('refuses the 6th search within one rolling second with 429 and Retry-After: 1', async () => {
    for (let i = 0; i < 5; i++) {
      clock += 10;
      expect((await search(hs, {})).status).toBe(200);
    }
    const refused = await search(hs, {});
    expectHubSpotError(refused, 429, 'RATE_LIMITS');
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(hs.stats.rateLimited).toBe(1);
    expect(hs.stats.maxSearchesInAnySecond).toBe(5);
    clock += 960; // the first admitted search (at +10 ms) leaves the window
    expect((await search(hs, {})).status).toBe(200);
    expect(hs.stats.maxSearchesInAnySecond).toBe(5);
    expect(hs.stats.searches).toBe(6);
  });

  it('limits other requests per rolling 10 seconds and says when to retry', async () => {
    clock += 60_000;
    const read = () => call(hs, 'GET', `/crm/objects/${hs.apiVersion}/contacts/1001`);
    for (let i = 0; i < 3; i++) {
      clock += 1000;
      const ok = await read();
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-hubspot-ratelimit-remaining')).toBe(String(2 - i));
    }
    const refused = await read();
    expectHubSpotError(refused, 429, 'RATE_LIMITS');
    expect(refused.headers.get('retry-after')).toBe('8');
    clock += 8000;
    expect((await read()).status).toBe(200);
  });

  it('failNext makes the next n requests of any kind answer 429 with the given Retry-After', async () => {
    clock += 60_000;
    const before = hs.stats.rateLimited;
    hs.failNext(2, 7);
    const first = await search(hs, {});
    const second = await call(hs, 'GET', `/crm/objects/${hs.apiVersion}/contacts/1002`);
    for (const a of [first, second]) {
      expectHubSpotError(a, 429, 'RATE_LIMITS');
      expect(a.headers.get('retry-after')).toBe('7');
    }
    expect((await search(hs, {})).status).toBe(200);
    expect(hs.stats.rateLimited).toBe(before + 2);
  });
});

describe('webhooks', () => {
  interface Received {
    method: string;
    uri: string;
    headers: IncomingHttpHeaders;
    body: string;
  }
  const received: Received[] = [];
  let receiver: Server;
  let target: string;
  let clock = Date.parse('2026-06-01T00:00:00.000Z');
  let hs: HubSpotStandIn;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ method: req.method!, uri: `http://${req.headers.host}${req.url}`, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    target = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hubspot/webhook?portal=62515`;
    hs = await startHubSpotStandIn({ contacts: 3, webhookUrl: target, clientSecret: 'app-secret', now: () => clock });
  });
  afterAll(async () => {
    await hs.close();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  });

  function verify(r: Received, secret: string): void {
    const timestamp = r.headers['x-hubspot-request-timestamp'] as string;
    const expected = createHmac('sha256', secret).update(r.method + r.uri + r.body + timestamp).digest('base64');
    expect(r.headers['x-hubspot-signature-v3']).toBe(expected);
    expect(r.headers['x-hubspot-signature-version']).toBe('v3');
    expect(r.headers['content-type']).toBe('application/json');
  }

  it('signs v3 as documented (known answer)', () => {
    const uri = 'https://example.com/hubspot/webhook?x=1';
    const body = '[{"objectId":1001}]';
    const ts = 1767225600000;
    const independent = createHmac('sha256', 'hs-client-secret').update(`POST${uri}${body}${ts}`, 'utf8').digest('base64');
    expect(independent).toBe('r1zrp1euC6b+unQ4tznSZZj9XI5ZlnrKDaYsBrk//1g=');
    expect(signHubSpotV3('hs-client-secret', 'POST', uri, body, ts)).toBe(independent);
    expect(hs.signV3('POST', uri, body, ts, 'hs-client-secret')).toBe(independent);
    expect(hs.signV3('POST', uri, body, ts)).toBe(signHubSpotV3('app-secret', 'POST', uri, body, ts));
  });

  it('sendWebhook POSTs a signed array and returns the answer', async () => {
    received.length = 0;
    const event: HubSpotEvent = {
      eventId: 1, subscriptionId: 4002, portalId: 62515, appId: 1160452, occurredAt: clock,
      subscriptionType: 'contact.propertyChange', attemptNumber: 0, objectId: 1001,
      propertyName: 'phone', propertyValue: '+12125550100', changeSource: 'CRM_UI',
    };
    const answer = await hs.sendWebhook([event], { timestamp: 1767225600000 });
    expect(answer).toEqual({ status: 204, body: '' });
    expect(received).toHaveLength(1);
    const r = received[0]!;
    expect(r.uri).toBe(target);
    expect(r.headers['x-hubspot-request-timestamp']).toBe('1767225600000');
    expect(JSON.parse(r.body)).toEqual([event]);
    verify(r, 'app-secret');
  });

  it('fires creation, one propertyChange per changed property, and deletion events', async () => {
    received.length = 0;
    const created = hs.createContact({ firstname: 'Wes', phone: '(646) 555-0123' });
    const updated = hs.updateContact(created.id, { phone: '+16465550124', firstname: 'Wes', lastname: 'Lee' });
    hs.deleteContact(created.id);
    await hs.flushWebhooks();
    expect(received).toHaveLength(3);
    for (const r of received) verify(r, 'app-secret');
    const events = received.flatMap((r) => JSON.parse(r.body) as HubSpotEvent[]);
    expect(events.map((e) => [e.subscriptionType, e.propertyName, e.propertyValue])).toEqual([
      ['contact.creation', undefined, undefined],
      ['contact.propertyChange', 'phone', '+16465550124'],
      ['contact.propertyChange', 'lastname', 'Lee'],
      ['contact.deletion', undefined, undefined],
    ]);
    for (const e of events) expect(e).toMatchObject({ objectId: Number(created.id), portalId: 62515, attemptNumber: 0 });
    expect(events[1]!.occurredAt).toBe(Date.parse(updated.updatedAt));
    const eventIds = events.map((e) => e.eventId);
    expect(eventIds).toEqual([...eventIds].sort((a, b) => a - b));
    expect(new Set(eventIds).size).toBe(eventIds.length);
    expect(hs.stats.webhooksDelivered).toBe(3);
    expect(hs.getContact(created.id)?.archived).toBe(true);
    expect(hs.contacts().map((c) => c.id)).toEqual(['1001', '1002', '1003']);
  });
});

describe('generated contacts', () => {
  it('have valid, distinct phone numbers written in varied human formats', () => {
    const sample = [...generatePeople(1000), ...generatePeople(1000, 1, 999_000)];
    const numbers = new Set<string>();
    const formats = new Set<string>();
    for (const p of sample) {
      const parsed = parsePhoneNumberFromString(p.phone, 'US');
      expect(parsed?.isValid(), p.phone).toBe(true);
      expect(parsed!.number).toBe(validPhone(p.index));
      numbers.add(parsed!.number);
      formats.add(p.phone.replace(/\d/g, '9'));
    }
    expect(numbers.size).toBe(2000);
    expect(formats).toEqual(new Set(['+99999999999', '(999) 999-9999', '999.999.9999', '+9 999-999-9999']));
  });

  it('validPhone gives valid E.164 numbers across its whole range', () => {
    for (let k = 0; k < 2000; k++) {
      const phone = validPhone((k * 7_919_993) % 1_000_000);
      expect(phone).toMatch(/^\+1\d{10}$/);
      expect(parsePhoneNumberFromString(phone)?.isValid(), phone).toBe(true);
    }
    expect(() => validPhone(1_000_000)).toThrow(RangeError);
  });

  it('spread over chosen area codes (Alaska, Hawaii, Puerto Rico, Canada): valid, distinct, each code in turn', async () => {
    const codes = [907, 808, 787, 416, 604, 902];
    const people = generatePeople(600, 1, 0, codes);
    const parsed = people.map((p) => parsePhoneNumberFromString(p.phone, 'US')!);
    expect(parsed.every((n) => n.isValid())).toBe(true);
    expect(new Set(parsed.map((n) => n.number)).size).toBe(600);
    expect(parsed.slice(0, 6).map((n) => [n.nationalNumber.slice(0, 3), n.country])).toEqual([['907', 'US'], ['808', 'US'], ['787', 'PR'], ['416', 'CA'], ['604', 'CA'], ['902', 'CA']]);
    expect(() => areaCodePhone(60_000, codes)).toThrow(RangeError);
    // The stand-in seeds them so.
    const seeded = await startHubSpotStandIn({ contacts: 12, areaCodes: codes });
    try {
      expect(seeded.contacts().map((c) => parsePhoneNumberFromString(String(c.properties.phone), 'US')!.nationalNumber.slice(0, 3)))
        .toEqual([...codes, ...codes].map(String));
    } finally {
      await seeded.close();
    }
  });

  it('are deterministic per seed, and a slice generated alone equals the same slice of a longer run', () => {
    expect(generatePeople(5, 1, 10)).toEqual(generatePeople(15).slice(10));
    expect(generatePeople(20, 2)).not.toEqual(generatePeople(20, 1));
    expect(new Set(generatePeople(500).map((p) => p.email)).size).toBe(500);
  });
});

describe('call logging: create, batch create, search, read, contact update', () => {
  interface Received {
    body: string;
  }
  const received: Received[] = [];
  let receiver: Server;
  let clock = Date.parse('2026-07-01T09:00:00.000Z');
  let hs: HubSpotStandIn;
  const base = () => `/crm/objects/${hs.apiVersion}/calls`;
  const toContact = (id: string, associationTypeId = 194, associationCategory = 'HUBSPOT_DEFINED') => ({
    to: { id }, types: [{ associationCategory, associationTypeId }],
  });
  const callProps = (title: string, extra: Record<string, string | number> = {}) => ({
    hs_timestamp: '2026-07-01T08:59:00.000Z', hs_call_title: title, hs_call_direction: 'OUTBOUND', hs_call_status: 'COMPLETED', hs_call_duration: '61000', ...extra,
  });

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const target = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    hs = await startHubSpotStandIn({ contacts: 5, webhookUrl: target, now: () => clock });
  });
  afterAll(async () => {
    await hs.close();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  });

  it('creates a call associated with a contact (201 SimplePublicObject), on the date-versioned and the legacy path', async () => {
    clock += 1000;
    const created = await call(hs, 'POST', base(), { properties: callProps('First call', { hs_timestamp: 1782896340000 }), associations: [toContact('1001')] });
    expect(created.status).toBe(201);
    const at = new Date(clock).toISOString();
    expect(created.body).toEqual({
      id: expect.stringMatching(/^\d+$/),
      properties: {
        // A timestamp given as ms since the epoch reads back as ISO 8601.
        hs_timestamp: '2026-07-01T08:59:00.000Z', hs_call_title: 'First call', hs_call_direction: 'OUTBOUND', hs_call_status: 'COMPLETED',
        hs_call_duration: '61000', hs_object_id: created.body.id, hs_createdate: at, hs_lastmodifieddate: at,
      },
      createdAt: at,
      updatedAt: at,
      archived: false,
    });
    const legacy = await call(hs, 'POST', '/crm/v3/objects/calls', { properties: { hs_timestamp: '2026-07-01T09:00:00Z', hs_call_duration: 0 } });
    expect(legacy.status).toBe(201);
    expect(legacy.body.properties).toMatchObject({ hs_timestamp: '2026-07-01T09:00:00.000Z', hs_call_duration: '0' });
    expect(hs.calls().map((c) => [c.id, c.contactIds])).toEqual([[created.body.id, ['1001']], [legacy.body.id, []]]);
    expect(hs.stats.callsCreated).toBe(2);
  });

  it('reads a call back, with its contact associations when asked, and 404s an unknown id', async () => {
    const [first] = hs.calls();
    const plain = await call(hs, 'GET', `${base()}/${first!.id}`);
    expect(plain.status).toBe(200);
    expect(Object.keys(plain.body.properties).sort()).toEqual(['hs_createdate', 'hs_lastmodifieddate', 'hs_object_id']);
    expect(plain.body.associations).toBeUndefined();
    const full = await call(hs, 'GET', `/crm/v3/objects/calls/${first!.id}?associations=contacts&properties=hs_call_title,hs_call_status`);
    expect(full.body.properties).toMatchObject({ hs_call_title: 'First call', hs_call_status: 'COMPLETED' });
    expect(full.body.associations).toEqual({ contacts: { results: [{ id: '1001', type: 'call_to_contact' }] } });
    expectHubSpotError(await call(hs, 'GET', `${base()}/999`), 404, 'OBJECT_NOT_FOUND');
    // A contact id is not a call id.
    expectHubSpotError(await call(hs, 'GET', `${base()}/1001`), 404, 'OBJECT_NOT_FOUND');
  });

  it('refuses invalid single creates with 400 VALIDATION_ERROR naming the problem, and creates nothing', async () => {
    const before = hs.calls().length;
    const cases: Array<[unknown, RegExp]> = [
      [{ properties: { hs_call_title: 'no time' } }, /hs_timestamp/],
      [{ properties: callProps('bad time', { hs_timestamp: 'yesterday' }) }, /hs_timestamp.*'yesterday' is not a date/],
      [{ properties: callProps('bad status', { hs_call_status: 'DONE' }) }, /DONE was not one of the allowed options.*"name":"hs_call_status"/],
      [{ properties: callProps('bad direction', { hs_call_direction: 'SIDEWAYS' }) }, /"name":"hs_call_direction"/],
      [{ properties: callProps('bad duration', { hs_call_duration: '1m' }) }, /hs_call_duration: '1m' is not a number/],
      [{ properties: { ...callProps('object value'), hs_call_body: { html: true } } }, /hs_call_body: give a string or a number/],
      [{ properties: callProps('no such contact'), associations: [toContact('424242')] }, /no contact with id 424242/],
      [{ properties: callProps('wrong type'), associations: [toContact('1001', 202)] }, /HUBSPOT_DEFINED 202.*HUBSPOT_DEFINED 194/],
      [{ properties: callProps('wrong category'), associations: [toContact('1001', 194, 'USER_DEFINED')] }, /USER_DEFINED 194/],
      [{ associations: [] }, /properties/],
    ];
    for (const [body, message] of cases) {
      const refused = await call(hs, 'POST', base(), body);
      expectHubSpotError(refused, 400, 'VALIDATION_ERROR');
      expect(refused.body.message).toMatch(message);
    }
    expect(hs.calls()).toHaveLength(before);
  });

  it('batch-creates calls: 201 when all succeed, each result carrying its objectWriteTraceId', async () => {
    clock += 1000;
    const answer = await call(hs, 'POST', `${base()}/batch/create`, {
      inputs: [
        { properties: callProps('Batch A'), associations: [toContact('1002')], objectWriteTraceId: 'cdr-a' },
        { properties: callProps('Batch B'), associations: [toContact('1003'), toContact('1004')], objectWriteTraceId: 'cdr-b' },
      ],
    });
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ status: 'COMPLETE', startedAt: new Date(clock).toISOString(), completedAt: new Date(clock).toISOString() });
    expect(answer.body.errors).toBeUndefined();
    expect(answer.body.results.map((r: { objectWriteTraceId: string; properties: Record<string, string> }) => [r.objectWriteTraceId, r.properties.hs_call_title]))
      .toEqual([['cdr-a', 'Batch A'], ['cdr-b', 'Batch B']]);
    const byTitle = new Map(hs.calls().map((c) => [c.properties.hs_call_title, c]));
    expect(byTitle.get('Batch A')!.contactIds).toEqual(['1002']);
    expect(byTitle.get('Batch B')!.contactIds).toEqual(['1003', '1004']);
  });

  it('answers 207 on partial failure: the valid inputs are created and each error maps back by objectWriteTraceId', async () => {
    const before = hs.stats.callsCreated;
    const answer = await call(hs, 'POST', `/crm/v3/objects/calls/batch/create`, {
      inputs: [
        { properties: callProps('P ok 1'), associations: [toContact('1001')], objectWriteTraceId: 'p-1' },
        { properties: callProps('P bad status', { hs_call_status: 'LOST' }), objectWriteTraceId: 'p-2' },
        { properties: callProps('P ok 2'), objectWriteTraceId: 'p-3' },
        { properties: callProps('P bad contact'), associations: [toContact('99')], objectWriteTraceId: 'p-4' },
        { properties: { hs_call_title: 'P no trace, no time' } },
      ],
    });
    expect(answer.status).toBe(207);
    expect(answer.body.status).toBe('COMPLETE');
    expect(answer.body.results.map((r: { objectWriteTraceId: string }) => r.objectWriteTraceId)).toEqual(['p-1', 'p-3']);
    expect(answer.body.numErrors).toBe(3);
    const errors = answer.body.errors as Array<{ status: string; category: string; message: string; context?: { objectWriteTraceId: string[] } }>;
    for (const e of errors) expect(e).toMatchObject({ status: 'error', category: 'VALIDATION_ERROR' });
    expect(errors.map((e) => e.context?.objectWriteTraceId)).toEqual([['p-2'], ['p-4'], undefined]);
    expect(errors[0]!.message).toMatch(/LOST/);
    expect(errors[1]!.message).toMatch(/no contact with id 99/);
    expect(errors[2]!.message).toMatch(/hs_timestamp/);
    expect(hs.stats.callsCreated).toBe(before + 2);
    expect(hs.calls().filter((c) => c.properties.hs_call_title?.startsWith('P ')).map((c) => c.properties.hs_call_title)).toEqual(['P ok 1', 'P ok 2']);
  });

  it('answers 207 with no results when every input fails, and 400 for an empty or oversized batch', async () => {
    const before = hs.calls().length;
    const allBad = await call(hs, 'POST', `${base()}/batch/create`, {
      inputs: [{ properties: { hs_call_title: 'x' }, objectWriteTraceId: 'z-1' }, { properties: callProps('y', { hs_call_direction: 'UP' }), objectWriteTraceId: 'z-2' }],
    });
    expect(allBad.status).toBe(207);
    expect(allBad.body.results).toEqual([]);
    expect(allBad.body.numErrors).toBe(2);
    expect(allBad.body.errors.map((e: { context: { objectWriteTraceId: string[] } }) => e.context.objectWriteTraceId[0])).toEqual(['z-1', 'z-2']);
    expectHubSpotError(await call(hs, 'POST', `${base()}/batch/create`, { inputs: [] }), 400, 'VALIDATION_ERROR');
    const tooMany = Array.from({ length: 101 }, (_, i) => ({ properties: callProps(`n${i}`) }));
    expectHubSpotError(await call(hs, 'POST', `${base()}/batch/create`, { inputs: tooMany }), 400, 'VALIDATION_ERROR');
    expect((await call(hs, 'POST', `${base()}/batch/create`, { inputs: tooMany.slice(0, 100) })).status).toBe(201);
    expect(hs.calls()).toHaveLength(before + 100);
  });

  it('failCalls makes matching inputs fail validation (400 alone, 207 entries or a 400 for the whole batch) until cleared', async () => {
    hs.failCalls((p) => (p.hs_call_title?.includes('doomed') ? 'Simulated refusal for a doomed call' : false));
    const single = await call(hs, 'POST', base(), { properties: callProps('doomed single') });
    expectHubSpotError(single, 400, 'VALIDATION_ERROR');
    expect(single.body.message).toBe('Simulated refusal for a doomed call');
    const batch = await call(hs, 'POST', `${base()}/batch/create`, {
      inputs: [{ properties: callProps('fine'), objectWriteTraceId: 'f-1' }, { properties: callProps('doomed batch'), objectWriteTraceId: 'f-2' }],
    });
    expect(batch.status).toBe(207);
    expect(batch.body.results.map((r: { objectWriteTraceId: string }) => r.objectWriteTraceId)).toEqual(['f-1']);
    expect(batch.body.errors).toEqual([
      { status: 'error', category: 'VALIDATION_ERROR', message: 'Simulated refusal for a doomed call', context: { objectWriteTraceId: ['f-2'] } },
    ]);
    // Answered as HubSpot's property validation does: a 400 for the whole batch, nothing created, naming the inputs
    // only when asked to (context.objectWriteTraceId).
    const created = hs.calls().length;
    const doomed = { inputs: [{ properties: callProps('fine'), objectWriteTraceId: 'f-3' }, { properties: callProps('doomed batch'), objectWriteTraceId: 'f-4' }] };
    for (const [answer, context] of [['whole-batch', undefined], ['whole-batch-traced', { objectWriteTraceId: ['f-4'] }]] as const) {
      hs.failCalls((p) => (p.hs_call_title?.includes('doomed') ? 'Simulated refusal for a doomed call' : false), answer);
      const whole = await call(hs, 'POST', `${base()}/batch/create`, doomed);
      expectHubSpotError(whole, 400, 'VALIDATION_ERROR');
      expect(whole.body.message).toBe('Simulated refusal for a doomed call');
      expect(whole.body.context).toEqual(context);
    }
    expect(hs.calls().length).toBe(created);
    hs.failCalls(() => true);
    const generic = await call(hs, 'POST', base(), { properties: callProps('any') });
    expectHubSpotError(generic, 400, 'VALIDATION_ERROR');
    expect(generic.body.message).toMatch(/failCalls/);
    hs.failCalls(null);
    expect((await call(hs, 'POST', base(), { properties: callProps('doomed no more') })).status).toBe(201);
  });

  it('searches calls with the contacts search semantics: EQ on a property, date ranges, sorts, paging', async () => {
    clock += 1000;
    const searches = hs.stats.searches;
    const byTitle = await call(hs, 'POST', `${base()}/search`, {
      filterGroups: [{ filters: [{ propertyName: 'hs_call_title', operator: 'EQ', value: 'batch a' }] }],
      properties: ['hs_call_title', 'hs_call_status'],
    });
    expect(byTitle.status).toBe(200);
    expect(byTitle.body.total).toBe(1);
    expect(byTitle.body.results[0].properties).toMatchObject({ hs_call_title: 'Batch A', hs_call_status: 'COMPLETED' });
    expect(hs.stats.searches).toBe(searches + 1);

    // hs_timestamp takes an ISO value; only the legacy create (09:00) is that late.
    const late = await call(hs, 'POST', '/crm/v3/objects/calls/search', {
      filterGroups: [{ filters: [{ propertyName: 'hs_timestamp', operator: 'GTE', value: '2026-07-01T09:00:00Z' }] }],
    });
    expect(late.body.total).toBe(1);
    expect(late.body.results[0].id).toBe(hs.calls()[1]!.id);

    const all = hs.calls();
    const paged = await call(hs, 'POST', `${base()}/search`, {
      sorts: [{ propertyName: 'hs_createdate', direction: 'DESCENDING' }], limit: 3, after: '1', properties: ['hs_call_title'],
    });
    expect(paged.body.total).toBe(all.length);
    expect(paged.body.results.map((r: { id: string }) => r.id)).toEqual(all.slice(-4, -1).reverse().map((c) => c.id));
    expect(paged.body.paging.next.after).toBe('4');
    expectHubSpotError(await call(hs, 'POST', `${base()}/search`, { limit: 200, after: '9900' }), 400, 'VALIDATION_ERROR');
  });

  it('PATCH updates a contact: 200 with the new values, a later lastmodifieddate and a propertyChange webhook; 404 for an unknown id', async () => {
    clock += 5000;
    received.length = 0;
    const before = hs.getContact('1005')!;
    const answer = await call(hs, 'PATCH', `/crm/objects/${hs.apiVersion}/contacts/1005`, { properties: { last_call_outcome: 'answered', firstname: before.properties.firstname } });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id: '1005', properties: { last_call_outcome: 'answered', firstname: before.properties.firstname, lastmodifieddate: new Date(clock).toISOString() } });
    expect(answer.body.updatedAt).toBe(new Date(clock).toISOString());
    expect(hs.getContact('1005')!.properties.last_call_outcome).toBe('answered');
    await hs.flushWebhooks();
    const events = received.flatMap((r) => JSON.parse(r.body) as HubSpotEvent[]);
    // Only the property whose value changed is announced.
    expect(events.map((e) => [e.subscriptionType, e.objectId, e.propertyName, e.propertyValue])).toEqual([['contact.propertyChange', 1005, 'last_call_outcome', 'answered']]);
    expectHubSpotError(await call(hs, 'PATCH', `/crm/objects/${hs.apiVersion}/contacts/77`, { properties: { firstname: 'x' } }), 404, 'OBJECT_NOT_FOUND');
    expectHubSpotError(await call(hs, 'PATCH', `/crm/objects/${hs.apiVersion}/contacts/1005`, { properties: { firstname: ['x'] } }), 400, 'VALIDATION_ERROR');
    expectHubSpotError(await call(hs, 'PATCH', `/crm/objects/${hs.apiVersion}/contacts/1005`, {}), 400, 'VALIDATION_ERROR');
  });
});

describe('call logging and the rate limits', () => {
  let clock = Date.parse('2026-07-01T00:00:00.000Z');
  let hs: HubSpotStandIn;
  beforeAll(async () => {
    hs = await startHubSpotStandIn({ contacts: 1, now: () => clock, requestsPer10Seconds: 2, searchPerSecond: 1 });
  });
  afterAll(() => hs.close());

  it('counts call writes toward the 10-secondly limit and call searches toward the search limit', async () => {
    const body = { properties: { hs_timestamp: '1782864000000' } };
    expect((await call(hs, 'POST', `/crm/objects/${hs.apiVersion}/calls`, body)).status).toBe(201);
    expect((await call(hs, 'POST', '/crm/v3/objects/calls/batch/create', { inputs: [body] })).status).toBe(201);
    const refused = await call(hs, 'POST', `/crm/objects/${hs.apiVersion}/calls`, body);
    expectHubSpotError(refused, 429, 'RATE_LIMITS');
    expect(refused.body.policyName).toBe('TEN_SECONDLY_ROLLING');
    // Searches have their own window.
    expect((await call(hs, 'POST', `/crm/objects/${hs.apiVersion}/calls/search`, {})).body.total).toBe(2);
    expectHubSpotError(await call(hs, 'POST', '/crm/v3/objects/calls/search', {}), 429, 'RATE_LIMITS');
    clock += 10_000;
    expect((await call(hs, 'POST', `/crm/objects/${hs.apiVersion}/calls`, body)).status).toBe(201);
    expect(hs.stats.callsCreated).toBe(3);
  });
});

describe('strict as HubSpot: a drifting request is refused the way HubSpot refuses it, and counted', () => {
  let hs: HubSpotStandIn;
  let listId: string;
  beforeAll(async () => {
    hs = await startHubSpotStandIn({ contacts: 3, searchPerSecond: 1000, requestsPer10Seconds: 1000 });
    listId = hs.lists.create('Strict', ['1001', '1002']);
  });
  afterAll(() => hs.close());

  /** Expects a 400 VALIDATION_ERROR whose message matches, counted as one more refusal of this path. */
  async function expectRefused(method: string, path: string, body: unknown, message: RegExp, status = 400): Promise<void> {
    const before = hs.stats.refused;
    const answer = await call(hs, method, path, body);
    expectHubSpotError(answer, status, status === 404 ? 'OBJECT_NOT_FOUND' : 'VALIDATION_ERROR');
    expect(answer.body.message).toMatch(message);
    expect(hs.stats.refused).toBe(before + 1);
    expect(hs.refusals().at(-1)).toEqual({ method, path: path.split('?')[0], status, message: answer.body.message });
  }
  const searchPath = () => `/crm/objects/${hs.apiVersion}/contacts/search`;
  const filter = (f: Record<string, unknown>) => ({ filterGroups: [{ filters: [{ propertyName: 'hs_object_id', operator: 'BETWEEN', value: '1', ...f }] }] });

  it('filter values must be strings, as in HubSpot\'s Filter schema: a number in highValue, values or value is refused', async () => {
    await expectRefused('POST', searchPath(), filter({ highValue: 999_999_999 }), /^Invalid input JSON: filterGroups\[0\]\.filters\[0\]\.highValue must be string; got the number 999999999$/);
    await expectRefused('POST', searchPath(), filter({ operator: 'IN', value: undefined, values: [1000, 1001] }), /filterGroups\[0\]\.filters\[0\]\.values\[0\] must be string; got the number 1000/);
    await expectRefused('POST', searchPath(), filter({ value: 1, highValue: '9' }), /filters\[0\]\.value must be string/);
    await expectRefused('POST', searchPath(), filter({ operator: 'EQ', value: true }), /value must be string; got the boolean true/);
    // The same filters with strings are answered.
    const ok = await call(hs, 'POST', searchPath(), filter({ highValue: '999999999' }));
    expect(ok.status).toBe(200);
    expect(ok.body.total).toBe(3);
  });

  it('refuses unknown fields and missing required ones with HubSpot\'s wording, naming where', async () => {
    await expectRefused('POST', searchPath(), { filters: [{ propertyName: 'email', operator: 'HAS_PROPERTY' }] },
      /^Invalid input JSON: Unrecognized field "filters" \(PublicObjectSearchRequest\), not marked as ignorable \(6 known properties: filterGroups, sorts, properties, limit, after, query\)$/);
    await expectRefused('POST', searchPath(), { filterGroups: [{ filters: [{ property: 'email', propertyName: 'email', operator: 'HAS_PROPERTY' }] }] },
      /Unrecognized field "property" at filterGroups\[0\]\.filters\[0\] \(Filter\)/);
    await expectRefused('POST', searchPath(), { filterGroups: [{ filters: [{ propertyName: 'email' }] }] },
      /^Invalid input JSON: Cannot build Filter at filterGroups\[0\]\.filters\[0\], some of required attributes are not set \[operator\]$/);
    await expectRefused('POST', searchPath(), { filterGroups: [{}] }, /Cannot build FilterGroup at filterGroups\[0\], some of required attributes are not set \[filters\]/);
    await expectRefused('POST', searchPath(), { sorts: [{ propertyName: 'createdate', order: 'DESCENDING' }] }, /Unrecognized field "order" at sorts\[0\] \(Sort\)/);
    await expectRefused('POST', searchPath(), { after: 10 }, /after must be string; got the number 10/);
    await expectRefused('POST', searchPath(), filter({ operator: 'LIKE' }), /operator: the string "LIKE" is not one of EQ, NEQ/);
  });

  it('checks batch reads, contact updates and call creation against their schemas', async () => {
    const objects = `/crm/objects/${hs.apiVersion}`;
    await expectRefused('POST', `${objects}/contacts/batch/read`, { inputs: [{ id: 1001 }] }, /inputs\[0\]\.id must be string; got the number 1001/);
    await expectRefused('POST', `${objects}/contacts/batch/read`, { inputs: [{ id: '1001' }], props: ['phone'] }, /Unrecognized field "props" \(BatchReadInputSimplePublicObjectId\)/);
    expect((await call(hs, 'POST', `${objects}/contacts/batch/read`, { inputs: [{ id: '1001' }], properties: ['phone'], propertiesWithHistory: [] })).status).toBe(200);
    await expectRefused('PATCH', `${objects}/contacts/1001`, { properties: { firstname: 'A' }, archived: false }, /Unrecognized field "archived" \(SimplePublicObjectInput\)/);
    const props = { hs_timestamp: '2026-07-01T09:00:00Z' };
    // objectWriteTraceId belongs to batch inputs (SimplePublicObjectBatchInputForCreate), not to a single create.
    await expectRefused('POST', `${objects}/calls`, { properties: props, objectWriteTraceId: 'x' }, /Unrecognized field "objectWriteTraceId" \(SimplePublicObjectInputForCreate\)/);
    const to = (id: unknown, associationCategory = 'HUBSPOT_DEFINED') => ({ to: { id }, types: [{ associationCategory, associationTypeId: 194 }] });
    await expectRefused('POST', `${objects}/calls/batch/create`, { inputs: [{ properties: props, associations: [to(1001)] }] }, /inputs\[0\]\.associations\[0\]\.to\.id must be string/);
    await expectRefused('POST', `${objects}/calls/batch/create`, { inputs: [{ properties: props, associations: [to('1001', 'HUBSPOT')] }] }, /associationCategory: the string "HUBSPOT" is not one of HUBSPOT_DEFINED, INTEGRATOR_DEFINED, USER_DEFINED, WORK/);
    // An invalid property value of one batch input is a drift too: its 207 error entry is counted.
    const before = hs.stats.refused;
    const mixed = await call(hs, 'POST', `${objects}/calls/batch/create`, { inputs: [{ properties: { ...props, hs_call_status: 'LOST' }, objectWriteTraceId: 'a' }] });
    expect(mixed.status).toBe(207);
    expect(hs.stats.refused).toBe(before + 1);
    expect(hs.refusals().at(-1)).toMatchObject({ status: 207, message: expect.stringMatching(/^inputs\[0\]: .*LOST/) });
  });

  it('serves the paths of each version HubSpot publishes and refuses (404, counted) the shapes it has not', async () => {
    for (const v of ['2025-09', '2026-03', '2026-09']) {
      expect((await call(hs, 'POST', `/crm/objects/${v}/contacts/search`, {})).status).toBe(200);
      expect((await call(hs, 'GET', `/crm/lists/${v}/${listId}/memberships`)).status).toBe(200);
    }
    expect((await call(hs, 'GET', `/crm/v3/lists/${listId}/memberships?limit=250`)).status).toBe(200);
    // v3 comes before "lists" in the legacy path: /crm/lists/v3/... exists nowhere.
    await expectRefused('GET', `/crm/lists/v3/${listId}/memberships`, undefined, /No route GET \/crm\/lists\/v3\/\d+\/memberships/, 404);
    await expectRefused('POST', '/crm/objects/2024-01/contacts/search', {}, /HubSpot serves 2025-09, 2026-03, 2026-09 and the legacy v3 paths/, 404);
    await expectRefused('POST', '/crm/objects/v3/contacts/search', {}, /No route/, 404);
    await expectRefused('GET', `/crm/v3/lists/${listId}/memberships?limit=251`, undefined, /limit: at most 250/);
    await expectRefused('GET', `/crm/v3/lists/${listId}/memberships?limit=ten`, undefined, /querystring limit must match pattern/);
    await expect(startHubSpotStandIn({ apiVersion: '2024-01' })).rejects.toThrow(/2025-09, 2026-03, 2026-09/);
  });

  it('does not count what is not a drift: 401, 429, an id not found, a contact gone, a failure the test asked for', async () => {
    const before = hs.stats.refused;
    expect((await call(hs, 'POST', searchPath(), {}, 'wrong-token')).status).toBe(401);
    hs.failNext(1);
    expect((await call(hs, 'POST', searchPath(), {})).status).toBe(429);
    expect((await call(hs, 'GET', `/crm/objects/${hs.apiVersion}/contacts/9999`)).status).toBe(404);
    expect((await call(hs, 'PATCH', `/crm/v3/objects/contacts/9999`, { properties: { firstname: 'x' } })).status).toBe(404);
    const props = { hs_timestamp: '2026-07-01T09:00:00Z' };
    const gone = { to: { id: '9999' }, types: [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: 194 }] };
    expect((await call(hs, 'POST', '/crm/v3/objects/calls', { properties: props, associations: [gone] })).status).toBe(400);
    hs.failCalls(() => true);
    expect((await call(hs, 'POST', '/crm/v3/objects/calls', { properties: props })).status).toBe(400);
    expect((await call(hs, 'POST', '/crm/v3/objects/calls/batch/create', { inputs: [{ properties: props }] })).status).toBe(207);
    hs.failCalls(null);
    expect(hs.stats.refused).toBe(before);
  });
});

describe('a Do Not Call property', () => {
  it('is seeded for a share of the contacts as a custom checkbox ("true"/"false", as HubSpot sends them), and searched and read like any property', async () => {
    const hs = await startHubSpotStandIn({ contacts: 200, doNotCallShare: 0.25, searchPerSecond: 1000 });
    const plain = await startHubSpotStandIn({ contacts: 5 });
    try {
      const values = hs.contacts().map((c) => c.properties[DO_NOT_CALL_PROPERTY]);
      expect(new Set(values)).toEqual(new Set(['true', 'false']));
      const marked = hs.contacts().filter((c) => c.properties[DO_NOT_CALL_PROPERTY] === 'true').map((c) => c.id);
      expect(marked.length).toBeGreaterThan(30);
      expect(marked.length).toBeLessThan(70);
      const found = await search(hs, { filterGroups: [{ filters: [{ propertyName: DO_NOT_CALL_PROPERTY, operator: 'EQ', value: 'true' }] }], properties: [DO_NOT_CALL_PROPERTY], limit: 100 });
      expect(found.body.results.map((r: { id: string }) => r.id)).toEqual(marked);
      expect(found.body.results[0].properties[DO_NOT_CALL_PROPERTY]).toBe('true');
      // Without the option, contacts have no such property (a portal that does not track it).
      expect(plain.contacts().every((c) => !(DO_NOT_CALL_PROPERTY in c.properties))).toBe(true);
      expect(hs.stats.refused).toBe(0);
    } finally {
      await hs.close();
      await plain.close();
    }
  });
});
