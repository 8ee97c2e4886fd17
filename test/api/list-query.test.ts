import { describe, expect, it } from 'vitest';
import { formatContentRange, parseContentRange } from '../../api/content-range.ts';
import { decodeListQuery, encodeListQuery, LIST_SPECS, MAX_PAGE_SIZE } from '../../api/list-query.ts';
import { parseTimestamp } from '../../api/timestamps.ts';

const decode = (spec: keyof typeof LIST_SPECS, p: Record<string, string>) => decodeListQuery(LIST_SPECS[spec], p);

describe('range', () => {
  it('defaults to [0,9]', () => {
    const r = decode('campaigns', {});
    expect(r.ok && r.value.range).toEqual([0, 9]);
  });
  it.each([
    ['[1]', 'exactly two'], ['[0,1,2]', 'exactly two'], ['[5,2]', 'first index (5) must not be greater than its last (2)'], ['[-1,3]', 'non-negative'],
    ['[0.5,3]', 'non-negative integers'], ['["0","9"]', 'non-negative integers'], ['{}', 'exactly two'], ['0-9', 'URL-encoded JSON'],
    [`[0,${MAX_PAGE_SIZE}]`, 'at most'],
  ])('rejects %s', (raw, why) => {
    const r = decode('numbers', { range: raw });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors[0]!.name).toBe('range');
      expect(r.errors[0]!.detail).toContain(why.replace(' integers', ''));
    }
  });
  it('accepts first == last', () => {
    const r = decode('numbers', { range: '[3,3]' });
    expect(r.ok && r.value.range).toEqual([3, 3]);
  });
});

describe('sort', () => {
  it('accepts each endpoint field and both directions, case-insensitively', () => {
    for (const [name, spec] of Object.entries(LIST_SPECS)) {
      for (const f of spec.sortFields) {
        const r = decode(name as keyof typeof LIST_SPECS, { sort: JSON.stringify([f, 'desc']) });
        expect(r.ok && r.value.sort).toEqual({ field: f, direction: 'DESC' });
      }
    }
  });
  it('names an unknown field and the allowed ones', () => {
    const r = decode('numbers', { sort: '["status","ASC"]' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0]!.detail).toBe('Numbers cannot be sorted by "status"; the sort fields are number and attempts');
    const report = decode('callDetails', { sort: '["attempts","ASC"]' });
    if (!report.ok) expect(report.errors[0]!.detail).toMatch(/^Call-detail records cannot be sorted by "attempts"; the sort fields are number, attempt, .*, endType and outcome$/);
    expect(report.ok).toBe(false);
  });
  it('rejects a bad direction', () => {
    expect(decode('numbers', { sort: '["number","UP"]' }).ok).toBe(false);
  });
  it('reads status as the campaigns state (open point of §4.2)', () => {
    const r = decode('campaigns', { sort: '["status","ASC"]', filter: '{"status":"Active"}' });
    expect(r.ok && r.value).toMatchObject({ sort: { field: 'state' }, conditions: [{ field: 'state', op: 'eq', value: 'Active' }] });
  });
});

describe('filter', () => {
  it('decodes every campaigns key', () => {
    const filter = {
      ids: ['a'], name: 'n', phoneSystemId: 'p', extensionId: 'e', dialer: { mode: 'Power' }, tagIds_ovl: ['t'], state: 'Active',
      type: 'Static', startDate_gte: '2024-12-01T00:00:00', endDate_lt: '20241201T000000', startedAt_gt: '2024-01-01T10:00:00',
      endedAt_lte: '2024-01-01T10:00:00Z', callflowIds_ctn: 'cf', callBehavior: { humanAnswerCallflowId: 'h' },
      'callBehavior.answeringMachineCallflowId': 'm', 'dialer.mode': 'Predictive', webhookEndpointId: 'w', isArchived: false,
    };
    const r = decode('campaigns', { filter: JSON.stringify(filter) });
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.value.conditions.map((c) => `${c.field}:${c.op}`)).toEqual([
        'id:in', 'name:eq', 'phoneSystemId:eq', 'extensionId:eq', 'dialer.mode:eq', 'tagIds:overlaps', 'state:eq', 'type:eq',
        'startDate:gte', 'endDate:lt', 'startedAt:gt', 'endedAt:lte', 'callflowIds:callflow',
        'callBehavior.humanAnswerCallflowId:eq', 'callBehavior.answeringMachineCallflowId:eq', 'dialer.mode:eq',
        'webhookEndpointId:eq', 'isArchived:eq',
      ]);
    }
  });
  it('names an unknown key and lists the allowed ones', () => {
    const r = decode('numbers', { filter: '{"phone":"1"}' });
    expect(!r.ok && r.errors[0]).toMatchObject({ name: 'filter.phone' });
    if (!r.ok) {
      expect(r.errors[0]!.detail).toBe(
        'Unknown filter key "phone" for numbers; the keys are number, status, attempts_gte, attempts_gt, attempts_lte, attempts_lt, id and ids');
    }
  });
  it('names the key, what it takes and what it got', () => {
    const r = decode('campaigns', { filter: '{"state":"Running","dialer":{"speed":1},"callBehavior":{"humanAnswerCallflowId":5}}' });
    expect(!r.ok && r.errors).toEqual([
      { in: 'query', name: 'filter.state', detail: 'Filter "state" must be Draft, Active, Paused, Canceled or Finished (or an array of them); got "Running"' },
      { in: 'query', name: 'filter.dialer', detail: 'Filter "dialer" takes only mode; got the key "speed"' },
      { in: 'query', name: 'filter.callBehavior.humanAnswerCallflowId', detail: 'Filter "callBehavior.humanAnswerCallflowId" must be a string of at most 256 characters; got 5' },
    ]);
  });
  it('reports every bad key, not just the first', () => {
    const r = decode('callDetails', { filter: '{"ringResult":"Maybe","attempt":"x","startedAtLocal_gte":"yesterday"}' });
    expect(!r.ok && r.errors.map((e) => e.name)).toEqual(['filter.ringResult', 'filter.attempt', 'filter.startedAtLocal_gte']);
  });
  it('takes status arrays and single statuses', () => {
    const r = decode('numbers', { filter: '{"status":["Success","Failure","Success"]}' });
    expect(r.ok && r.value.conditions).toEqual([{ field: 'status', op: 'in', value: ['Success', 'Failure'] }]);
    expect(decode('numbers', { filter: '{"status":[]}' }).ok).toBe(false);
    expect(decode('numbers', { filter: '{"status":["Deleted"]}' }).ok).toBe(false);
    expect(decode('numberDetails', { filter: '{"status":"Deleted"}' }).ok).toBe(true);
  });
  it('rejects non-object filters and bad shapes', () => {
    expect(decode('campaigns', { filter: '[1]' }).ok).toBe(false);
    expect(decode('campaigns', { filter: '{"dialer":{"speed":1}}' }).ok).toBe(false);
    expect(decode('campaigns', { filter: '{"tagIds_ovl":"t"}' }).ok).toBe(false);
    expect(decode('campaigns', { filter: '{"isArchived":"yes"}' }).ok).toBe(false);
    expect(decode('numbers', { filter: '{"attempts_gt":1.5}' }).ok).toBe(false);
  });
});

describe('the id filter of every list (react-admin\'s getMany sends {"id": [...]})', () => {
  it.each(Object.keys(LIST_SPECS) as (keyof typeof LIST_SPECS)[])('%s takes id and ids, one id or an array, as strings', (list) => {
    for (const filter of [{ id: ['7', 8, '7'] }, { ids: ['7', 8] }]) {
      const r = decode(list, { filter: JSON.stringify(filter), range: '[0,9]' });
      expect(r.ok && r.value.conditions).toEqual([{ field: 'id', op: 'in', value: ['7', '8'] }]);
    }
    const one = decode(list, { filter: '{"id":"abc"}' });
    expect(one.ok && one.value.conditions).toEqual([{ field: 'id', op: 'in', value: ['abc'] }]);
  });
  it('keeps the spec\'s default range of [0,9] for an id lookup too (§4.1), and a given range as given', () => {
    const ids = Array.from({ length: 25 }, (_, i) => `c${i}`);
    const r = decode('campaigns', { filter: JSON.stringify({ id: ids }) });
    expect(r.ok && r.value.range).toEqual([0, 9]);
    const given = decode('campaigns', { filter: JSON.stringify({ id: ids }), range: '[0,24]' });
    expect(given.ok && given.value.range).toEqual([0, 24]);
  });
  it('rejects what is not an id', () => {
    const r = decode('numbers', { filter: '{"id":{"gt":1}}' });
    expect(!r.ok && r.errors[0]).toEqual({ in: 'query', name: 'filter.id', detail: 'Filter "id" must be one id or an array of at most 1000 ids; got {"gt":1}' });
    expect(decode('campaigns', { filter: JSON.stringify({ ids: Array.from({ length: 1001 }, (_, i) => String(i)) }) }).ok).toBe(false);
    expect(decode('campaigns', { filter: '{"ids":[1.5]}' }).ok).toBe(false);
  });
});

describe('timestamps', () => {
  it('reads the separated and compact forms and zones', () => {
    expect(parseTimestamp('2024-12-01T08:09:10')).toEqual({ wall: '2024-12-01T08:09:10', offsetMinutes: null });
    expect(parseTimestamp('20241201T080910')).toEqual({ wall: '2024-12-01T08:09:10', offsetMinutes: null });
    expect(parseTimestamp('2024-12-01T08:09:10+05:30')).toEqual({ wall: '2024-12-01T08:09:10', offsetMinutes: 330 });
    expect(parseTimestamp('2024-02-30T00:00:00')).toBeNull();
    expect(parseTimestamp('2024-12-01T24:00:00')).toBeNull();
  });
});

describe('Content-Range', () => {
  it('writes and reads every form', () => {
    expect(formatContentRange('numbers', 0, 10, 25)).toBe('numbers 0-9/25');
    expect(formatContentRange('campaigns', 0, 0, 0)).toBe('campaigns 0-0/0');
    expect(formatContentRange('callDetails', 50, 0, 25)).toBe('callDetails */25');
    expect(parseContentRange('numbers 0-9/25')).toEqual({ resource: 'numbers', first: 0, last: 9, total: 25 });
    expect(parseContentRange('callDetails */25')).toEqual({ resource: 'callDetails', first: null, last: null, total: 25 });
  });
  it('encodes a list request as the server decodes it', () => {
    const p = encodeListQuery({ range: [0, 199], sort: ['number', 'ASC'], filter: { status: ['Success'] } });
    const r = decode('numbers', Object.fromEntries(p));
    expect(r.ok && r.value).toEqual({ range: [0, 199], sort: { field: 'number', direction: 'ASC' }, conditions: [{ field: 'status', op: 'in', value: ['Success'] }] });
  });
});
