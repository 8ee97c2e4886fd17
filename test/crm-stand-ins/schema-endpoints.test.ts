// The stand-ins' read-only endpoints that tell a client what the CRM has (as `check` asks them): HubSpot's contact
// properties, a list's definition and a private app token's scopes; Pipedrive's person fields and a filter's
// definition; Salesforce's describe, under the integration user's object permissions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DO_NOT_CALL_PROPERTY, startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { DO_NOT_CALL_FIELD, startPipedriveStandIn, type PipedriveStandIn } from '../../crm-stand-ins/pipedrive.ts';
import { startSalesforceStandIn, type SalesforceStandIn } from '../../crm-stand-ins/salesforce.ts';

describe('HubSpot stand-in', () => {
  let hs: HubSpotStandIn;
  let narrow: HubSpotStandIn;
  beforeAll(async () => {
    hs = await startHubSpotStandIn({ contacts: 3, doNotCallShare: 0.5, properties: [{ name: 'lead_source_detail', label: 'Lead source detail', type: 'string', fieldType: 'text' }] });
    narrow = await startHubSpotStandIn({ contacts: 1, scopes: ['crm.objects.contacts.read'] });
  });
  afterAll(async () => { await Promise.all([hs.close(), narrow.close()]); });
  const get = (s: HubSpotStandIn, path: string) => fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${s.token}` } });

  it('lists contact properties: the default ones, the custom ones, the seeded Do Not Call checkbox, and any a contact holds', async () => {
    hs.updateContact(hs.contacts()[0]!.id, { favourite_colour: 'teal' });
    const { results } = await (await get(hs, '/crm/v3/properties/contacts')).json() as { results: { name: string; type: string; fieldType: string; modificationMetadata: { readOnlyValue: boolean } }[] };
    const by = new Map(results.map((p) => [p.name, p]));
    expect(by.get('phone')).toMatchObject({ type: 'string', fieldType: 'phonenumber' });
    expect(by.get('hs_object_id')!.modificationMetadata.readOnlyValue).toBe(true);
    expect(by.get(DO_NOT_CALL_PROPERTY)).toMatchObject({ type: 'bool', fieldType: 'booleancheckbox' });
    expect(by.get('lead_source_detail')).toMatchObject({ type: 'string' });
    expect(by.get('favourite_colour')).toMatchObject({ type: 'string', fieldType: 'text' });
    expect((await get(hs, '/crm/v3/properties/contacts/phone')).status).toBe(200);
    expect((await get(hs, '/crm/v3/properties/contacts/do_not_cal')).status).toBe(404);
    expect(hs.stats.refused).toBe(0);
  });

  it('tells a list\'s definition, 404 for a list it has not', async () => {
    const listId = hs.lists.create('Leads', [hs.contacts()[0]!.id]);
    expect(await (await get(hs, `/crm/lists/2026-09/${listId}`)).json()).toMatchObject({ list: { listId, name: 'Leads', objectTypeId: '0-1', size: 1 } });
    expect((await get(hs, '/crm/v3/lists/999')).status).toBe(404);
  });

  it('tells a private app token its scopes, and refuses a call that needs one it lacks (403 MISSING_SCOPES)', async () => {
    const info = await fetch(`${narrow.url}/oauth/v2/private-apps/get/access-token-info`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tokenKey: narrow.token }) });
    expect(await info.json()).toMatchObject({ scopes: ['crm.objects.contacts.read'] });
    const wrong = await fetch(`${narrow.url}/oauth/v2/private-apps/get/access-token-info`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tokenKey: 'pat-other' }) });
    expect(wrong.status).toBe(401);
    const list = await get(narrow, '/crm/v3/lists/1');
    expect(list.status).toBe(403);
    expect(await list.json()).toMatchObject({ category: 'MISSING_SCOPES', errors: [{ context: { requiredGranularScopes: ['crm.lists.read'] } }] });
    expect((await get(narrow, '/crm/v3/properties/contacts')).status).toBe(200);
  });
});

describe('Pipedrive stand-in', () => {
  let pd: PipedriveStandIn;
  beforeAll(async () => { pd = await startPipedriveStandIn({ persons: 2, doNotCallShare: 0.5, personFields: [{ key: 'f'.repeat(40), name: 'Region', field_type: 'varchar' }] }); });
  afterAll(async () => { await pd.close(); });
  const get = (path: string) => fetch(`${pd.url}${path}`, { headers: { 'x-api-token': pd.apiToken } });

  it('lists person fields in pages (field_code, field_type, an option field\'s options), at 10 tokens a page', async () => {
    const tokens = pd.stats.tokensUsed;
    const first = await (await get('/api/v2/personFields?limit=10')).json() as { data: { field_code: string; field_type: string; options: unknown }[]; additional_data: { next_cursor: string | null } };
    expect(first.data.map((f) => f.field_code)).toContain('phone');
    expect(first.additional_data.next_cursor).not.toBeNull();
    const rest = await (await get(`/api/v2/personFields?limit=10&cursor=${first.additional_data.next_cursor}`)).json() as typeof first;
    const all = [...first.data, ...rest.data];
    expect(all.find((f) => f.field_code === DO_NOT_CALL_FIELD.key)).toMatchObject({ field_type: 'enum', options: [{ id: 101, label: 'Yes' }, { id: 102, label: 'No' }] });
    expect(all.find((f) => f.field_code === 'f'.repeat(40))).toMatchObject({ field_type: 'varchar', options: null });
    expect(pd.stats.tokensUsed - tokens).toBe(20);
    expect((await get('/api/v2/personFields?sort=x')).status).toBe(400);
  });

  it('tells a filter\'s definition (its type), 404 for one it has not', async () => {
    const people = pd.filters.create('Everyone', () => true);
    const deals = pd.filters.create('Open deals', () => true, 'deals');
    expect(await (await get(`/v1/filters/${people}`)).json()).toMatchObject({ success: true, data: { id: people, name: 'Everyone', type: 'people' } });
    expect(await (await get(`/v1/filters/${deals}`)).json()).toMatchObject({ data: { type: 'deals' } });
    expect((await get('/v1/filters/999')).status).toBe(404);
  });
});

describe('Salesforce stand-in', () => {
  let sf: SalesforceStandIn;
  let limited: SalesforceStandIn;
  beforeAll(async () => {
    sf = await startSalesforceStandIn({ contacts: 1 });
    limited = await startSalesforceStandIn({ contacts: 1, objectAccess: { Task: 'none', Lead: 'read' } });
  });
  afterAll(async () => { await Promise.all([sf.close(), limited.close()]); });
  async function session(s: SalesforceStandIn): Promise<(path: string, init?: RequestInit) => Promise<Response>> {
    const token = await (await fetch(`${s.url}/services/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: s.clientId, client_secret: 'sf-client-secret' }) })).json() as { access_token: string };
    return (path, init = {}) => fetch(`${s.url}/services/data/v62.0${path}`, { ...init, headers: { authorization: `Bearer ${token.access_token}`, 'content-type': 'application/json' } });
  }

  it('describes an object: its fields, their types, and what the user may do with them', async () => {
    const api = await session(sf);
    const contact = await (await api('/sobjects/Contact/describe')).json() as { createable: boolean; fields: { name: string; type: string; updateable: boolean }[] };
    expect(contact.createable).toBe(true);
    const field = (n: string) => contact.fields.find((f) => f.name === n);
    expect(field('Phone')).toMatchObject({ type: 'phone', updateable: true });
    expect(field('DoNotCall')).toMatchObject({ type: 'boolean' });
    expect(field('Name')).toMatchObject({ updateable: false });
    const task = await (await api('/sobjects/Task/describe')).json() as { fields: { name: string; externalId: boolean; picklistValues: { value: string }[] }[] };
    expect(task.fields.find((f) => f.name === sf.taskExternalIdField)).toMatchObject({ externalId: true });
    expect(task.fields.find((f) => f.name === 'CallType')!.picklistValues.map((p) => p.value)).toEqual(['Internal', 'Inbound', 'Outbound']);
  });

  it('hides an object the user may not see (describe NOT_FOUND, a query INVALID_TYPE) and refuses writes to one it may only read', async () => {
    const api = await session(limited);
    const hidden = await api('/sobjects/Task/describe');
    expect(hidden.status).toBe(404);
    expect(await hidden.json()).toEqual([{ message: 'The requested resource does not exist', errorCode: 'NOT_FOUND' }]);
    const query = await api(`/query?q=${encodeURIComponent('SELECT Id FROM Task')}`);
    expect(query.status).toBe(400);
    expect((await query.json() as { errorCode: string }[])[0]!.errorCode).toBe('INVALID_TYPE');
    expect(await (await api('/sobjects/Lead/describe')).json()).toMatchObject({ createable: false, updateable: false });
    const write = await api('/composite/sobjects', { method: 'POST', body: JSON.stringify({ records: [{ attributes: { type: 'Lead' }, LastName: 'X', Company: 'Y' }] }) });
    expect(await write.json()).toMatchObject([{ success: false, errors: [{ statusCode: 'INSUFFICIENT_ACCESS_OR_READONLY' }] }]);
  });
});
