// The Salesforce stand-in over real HTTP: both OAuth flows, SOQL (shapes, refusals, cursors), getDeleted, rows and collections, API limits, sessions, faults, Outbound Messages.
import { createHmac, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSalesforceStandIn, type SalesforceStandIn, type SfRecord } from '../../crm-stand-ins/salesforce.ts';

const SECRET = 'sf-client-secret';
const V = 'v62.0';

/** A clock the test moves by hand. */
function manualClock(start: string) {
  let t = Date.parse(start);
  return { now: () => t, advance(ms: number) { t += ms; } };
}

function tokenRequest(s: SalesforceStandIn, params: Record<string, string>): Promise<Response> {
  return fetch(`${s.url}/services/oauth2/token`, { method: 'POST', body: new URLSearchParams(params) });
}

async function clientCredentials(s: SalesforceStandIn): Promise<string> {
  const res = await tokenRequest(s, { grant_type: 'client_credentials', client_id: s.clientId, client_secret: SECRET });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

function api(s: SalesforceStandIn, token: string) {
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(s.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return {
    call,
    query: (soql: string, headers: Record<string, string> = {}, kind = 'query') =>
      call('GET', `/services/data/${V}/${kind}?q=${encodeURIComponent(soql)}`, undefined, headers),
  };
}

function jwt(key: KeyObject, claims: Record<string, unknown>, alg = 'RS256'): string {
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const head = `${part({ alg, typ: 'JWT' })}.${part(claims)}`;
  return `${head}.${sign('RSA-SHA256', Buffer.from(head), key).toString('base64url')}`;
}

const ids = (body: { records: Array<{ Id: string }> }) => body.records.map((r) => r.Id);

describe('OAuth 2.0 token endpoint', () => {
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const otherKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const clock = manualClock('2026-03-01T12:00:00Z');
  let s: SalesforceStandIn;
  beforeAll(async () => {
    s = await startSalesforceStandIn({ contacts: 3, jwtPublicKey: keys.publicKey.export({ type: 'spki', format: 'pem' }) as string, now: clock.now });
  });
  afterAll(() => s.close());

  const claims = () => ({ iss: s.clientId, sub: s.username, aud: 'https://login.salesforce.com', exp: Math.floor(clock.now() / 1000) + 180 });

  it('issues a token for the client credentials flow, signed as Salesforce signs it, that the REST API accepts', async () => {
    const res = await tokenRequest(s, { grant_type: 'client_credentials', client_id: s.clientId, client_secret: SECRET });
    expect(res.status).toBe(200);
    const body = await res.json() as Record<string, string>;
    expect(body).toMatchObject({ instance_url: s.url, token_type: 'Bearer', scope: 'api', issued_at: String(clock.now()) });
    expect(body.id).toBe(`${s.url}/id/${s.orgId}/${s.userId}`);
    expect(body.signature).toBe(createHmac('sha256', SECRET).update(body.id! + body.issued_at!).digest('base64'));
    const q = await api(s, body.access_token!).query('SELECT Id FROM Contact');
    expect(q.status).toBe(200);
    expect((await q.json()).totalSize).toBe(3);
  });

  it('refuses wrong client credentials with Salesforce\'s OAuth errors', async () => {
    const wrongSecret = await tokenRequest(s, { grant_type: 'client_credentials', client_id: s.clientId, client_secret: 'nope' });
    expect(wrongSecret.status).toBe(400);
    expect(await wrongSecret.json()).toEqual({ error: 'invalid_client', error_description: 'invalid client credentials' });
    const wrongId = await tokenRequest(s, { grant_type: 'client_credentials', client_id: 'someone-else', client_secret: SECRET });
    expect(await wrongId.json()).toEqual({ error: 'invalid_client_id', error_description: 'client identifier invalid' });
    const grant = await tokenRequest(s, { grant_type: 'password', username: 'x', password: 'y' });
    expect(grant.status).toBe(400);
    expect(await grant.json()).toEqual({ error: 'unsupported_grant_type', error_description: 'grant type not supported' });
  });

  it('issues a token for a JWT bearer assertion signed with the configured key', async () => {
    const res = await tokenRequest(s, { grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: jwt(keys.privateKey, claims()) });
    expect(res.status).toBe(200);
    const body = await res.json() as Record<string, string>;
    expect(body).toMatchObject({ instance_url: s.url, token_type: 'Bearer' });
    expect((await api(s, body.access_token!).query('SELECT Id FROM Contact')).status).toBe(200);
  });

  it('refuses assertions with a foreign signature, wrong audience, past expiry, unknown user or issuer', async () => {
    const grant = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
    const cases: Array<[string, Record<string, string>]> = [
      [jwt(otherKeys.privateKey, claims()), { error: 'invalid_grant', error_description: 'invalid assertion' }],
      ['not.a.jwt', { error: 'invalid_grant', error_description: 'invalid assertion' }],
      [jwt(keys.privateKey, { ...claims(), aud: 'https://evil.example' }), { error: 'invalid_grant', error_description: 'audience is invalid' }],
      [jwt(keys.privateKey, { ...claims(), exp: Math.floor(clock.now() / 1000) - 1 }), { error: 'invalid_grant', error_description: 'expired authorization code' }],
      [jwt(keys.privateKey, { ...claims(), sub: 'someone@example.com' }), { error: 'invalid_grant', error_description: "user hasn't approved this consumer" }],
      [jwt(keys.privateKey, { ...claims(), iss: 'other-app' }), { error: 'invalid_client_id', error_description: 'client identifier invalid' }],
    ];
    for (const [assertion, expected] of cases) {
      const res = await tokenRequest(s, { grant_type: grant, assertion });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual(expected);
    }
  });

  it('answers 401 INVALID_SESSION_ID without a token, with an unknown one, and once a session is expired or idle', async () => {
    const none = await fetch(`${s.url}/services/data/${V}/query?q=SELECT+Id+FROM+Contact`);
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual([{ message: 'Session expired or invalid', errorCode: 'INVALID_SESSION_ID' }]);
    expect((await api(s, 'made-up').query('SELECT Id FROM Contact')).status).toBe(401);

    const a = await clientCredentials(s);
    const b = await clientCredentials(s);
    expect((await api(s, a).query('SELECT Id FROM Contact')).status).toBe(200);
    s.expireSessions(a);
    const expired = await api(s, a).query('SELECT Id FROM Contact');
    expect(expired.status).toBe(401);
    expect((await expired.json())[0].errorCode).toBe('INVALID_SESSION_ID');
    expect((await api(s, b).query('SELECT Id FROM Contact')).status).toBe(200);
    // Two hours unused is Salesforce's default session timeout.
    clock.advance(2 * 60 * 60 * 1000);
    expect((await api(s, b).query('SELECT Id FROM Contact')).status).toBe(401);
  });
});

describe('SOQL query and queryAll', () => {
  let s: SalesforceStandIn;
  let sf: ReturnType<typeof api>;
  beforeAll(async () => {
    s = await startSalesforceStandIn({ contacts: 300, leads: 200, campaigns: 3, now: () => Date.parse('2026-02-01T00:00:00Z') });
    sf = api(s, await clientCredentials(s));
  });
  afterAll(() => s.close());

  async function rows(soql: string, kind = 'query'): Promise<any> {
    const res = await sf.query(soql, {}, kind);
    expect(res.status, JSON.stringify(await res.clone().json())).toBe(200);
    return res.json();
  }

  it('selects fields of contacts with a datetime range, ORDER BY and LIMIT, in the REST record shape', async () => {
    const since = '2026-01-01T00:01:00Z';
    const body = await rows(`SELECT Id, FirstName, LastName, Phone, MobilePhone, Secondary_Phone__c, DoNotCall, SystemModstamp FROM Contact WHERE SystemModstamp >= ${since} ORDER BY SystemModstamp DESC, Id LIMIT 50`);
    const expected = s.records('Contact').filter((c) => (c.values.SystemModstamp as number) >= Date.parse(since))
      .sort((a, b) => (b.values.SystemModstamp as number) - (a.values.SystemModstamp as number)).slice(0, 50);
    expect(body.totalSize).toBe(50);
    expect(body.done).toBe(true);
    expect(ids(body)).toEqual(expected.map((c) => c.values.Id));
    const first = body.records[0];
    expect(Object.keys(first)).toEqual(['attributes', 'Id', 'FirstName', 'LastName', 'Phone', 'MobilePhone', 'Secondary_Phone__c', 'DoNotCall', 'SystemModstamp']);
    expect(first.attributes).toEqual({ type: 'Contact', url: `/services/data/${V}/sobjects/Contact/${first.Id}` });
    expect(first.SystemModstamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000\+0000$/);
    expect(first.Id).toMatch(/^003[a-zA-Z0-9]{15}$/);
  });

  it('seeds people in varied phone formats, some Do Not Call, some in several campaigns', async () => {
    const people = [...s.records('Contact'), ...s.records('Lead')];
    const phones = people.map((p) => p.values.Phone).filter((p): p is string => typeof p === 'string');
    expect(phones.some((p) => p.startsWith('+1') && !p.includes(' '))).toBe(true);
    expect(phones.some((p) => p.startsWith('('))).toBe(true);
    expect(phones.some((p) => p.includes('.'))).toBe(true);
    expect(people.some((p) => p.values.Phone === null && p.values.MobilePhone !== null)).toBe(true);
    // Every number in the org is a different phone number, however it is typed.
    const all = people.flatMap((p) => [p.values.Phone, p.values.MobilePhone, p.values.Secondary_Phone__c]).filter((v): v is string => typeof v === 'string');
    expect(new Set(all.map((v) => v.replace(/\D/g, '').replace(/^1/, ''))).size).toBe(all.length);
    expect(all.some((v) => /^\+1\d{10}$/.test(v) && people.some((p) => p.values.Secondary_Phone__c === v))).toBe(true);
    const dnc = people.filter((p) => p.values.DoNotCall === true).length;
    expect(dnc).toBeGreaterThan(20);
    expect(dnc).toBeLessThan(120);
    const memberships = new Map<string, number>();
    for (const m of s.records('CampaignMember')) memberships.set(m.values.LeadOrContactId as string, (memberships.get(m.values.LeadOrContactId as string) ?? 0) + 1);
    expect([...memberships.values()].some((n) => n >= 2)).toBe(true);
    expect(memberships.size).toBeLessThan(people.length);
  });

  it('reads campaign members with their contact\'s and lead\'s phone fields through relationships', async () => {
    const campaign = s.records('Campaign')[0]!;
    const body = await rows(`SELECT Id, CampaignId, ContactId, LeadId, Status, Contact.Phone, Contact.DoNotCall, Lead.MobilePhone, Lead.DoNotCall FROM CampaignMember WHERE CampaignId = '${(campaign.values.Id as string).slice(0, 15)}' AND (Contact.DoNotCall = false OR Lead.DoNotCall = false) ORDER BY Id`);
    const members = s.records('CampaignMember').filter((m) => m.values.CampaignId === campaign.values.Id && s.get(m.values.LeadOrContactId as string)!.values.DoNotCall === false);
    expect(ids(body)).toEqual(members.map((m) => m.values.Id));
    const withContact = body.records.find((r: any) => r.ContactId !== null);
    const contact = s.get(withContact.ContactId)!;
    expect(withContact.Contact).toEqual({
      attributes: { type: 'Contact', url: `/services/data/${V}/sobjects/Contact/${withContact.ContactId}` },
      Phone: contact.values.Phone, DoNotCall: false,
    });
    expect(withContact.Lead).toBeNull();
    const withLead = body.records.find((r: any) => r.LeadId !== null);
    expect(withLead.Lead).toMatchObject({ attributes: { type: 'Lead' }, MobilePhone: s.get(withLead.LeadId)!.values.MobilePhone, DoNotCall: false });
    expect(withLead.Contact).toBeNull();
  });

  it('evaluates IN, NOT IN, LIKE, NOT, != null and nested parentheses', async () => {
    const leads = s.records('Lead');
    const picked = leads.slice(0, 3).map((l) => `'${l.values.Id}'`).join(', ');
    expect(ids(await rows(`SELECT Id FROM Lead WHERE Id IN (${picked})`))).toEqual(leads.slice(0, 3).map((l) => l.values.Id));
    expect((await rows(`SELECT Id FROM Lead WHERE Id NOT IN (${picked})`)).totalSize).toBe(leads.length - 3);

    const like = await rows("SELECT Id, Phone FROM Contact WHERE Phone LIKE '(2%'");
    const expectedLike = s.records('Contact').filter((c) => typeof c.values.Phone === 'string' && c.values.Phone.startsWith('(2'));
    expect(expectedLike.length).toBeGreaterThan(0);
    expect(ids(like)).toEqual(expectedLike.map((c) => c.values.Id));

    const body = await rows("SELECT Id FROM Lead WHERE NOT (DoNotCall = true OR Phone = null) AND (MobilePhone != null OR Secondary_Phone__c != null)");
    const expected = leads.filter((l) => !(l.values.DoNotCall === true || l.values.Phone === null) && (l.values.MobilePhone !== null || l.values.Secondary_Phone__c !== null));
    expect(expected.length).toBeGreaterThan(0);
    expect(ids(body)).toEqual(expected.map((l) => l.values.Id));

    // String comparison is case-insensitive, as in Salesforce.
    const one = leads[0]!;
    expect(ids(await rows(`SELECT Id FROM Lead WHERE LastName = '${String(one.values.LastName).toUpperCase().replace(/'/g, "\\'")}' AND Id = '${one.values.Id}'`))).toEqual([one.values.Id]);
  });

  it('answers MALFORMED_QUERY for what it does not serve, INVALID_FIELD and INVALID_TYPE for unknown names', async () => {
    const cases: Array<[string, string]> = [
      ['SELECT Id FROM Contact GROUP BY Id', 'MALFORMED_QUERY'],
      ['SELECT COUNT() FROM Contact', 'MALFORMED_QUERY'],
      ['SELECT Id, (SELECT Id FROM CampaignMembers) FROM Contact', 'MALFORMED_QUERY'],
      ['SELECT Id FROM Contact WHERE Id IN (SELECT ContactId FROM CampaignMember)', 'MALFORMED_QUERY'],
      ['SELECT Id FROM Contact WHERE SystemModstamp > LAST_N_DAYS:3', 'MALFORMED_QUERY'],
      ['SELECT Id FROM Contact WHERE DoNotCall = true OR Phone = null AND MobilePhone = null', 'MALFORMED_QUERY'],
      ['SELEC Id FROM Contact', 'MALFORMED_QUERY'],
      ['SELECT Id FROM Contact WHERE', 'MALFORMED_QUERY'],
      ['SELECT Fax FROM Contact', 'INVALID_FIELD'],
      ['SELECT Id FROM Contact WHERE SystemModstamp > \'2026-01-01\'', 'INVALID_FIELD'],
      ['SELECT Account.Name FROM Contact', 'INVALID_FIELD'],
      ['SELECT Id FROM Opportunity', 'INVALID_TYPE'],
    ];
    for (const [soql, code] of cases) {
      const res = await sf.query(soql);
      expect(res.status, soql).toBe(400);
      const body = await res.json();
      expect(body, soql).toEqual([{ message: expect.any(String), errorCode: code }]);
    }
  });

  it('pages through nextRecordsUrl in batches of 2,000 by default or the Sforce-Query-Options batch size', async () => {
    const more = await startSalesforceStandIn({ contacts: 4500, campaigns: 0 });
    try {
      const client = api(more, await clientCredentials(more));
      const all = more.records('Contact').map((c) => c.values.Id);
      for (const [header, sizes] of [[undefined, [2000, 2000, 500]], ['batchSize=1000', [1000, 1000, 1000, 1000, 500]], ['batchSize=50', null]] as const) {
        const seen: string[] = [];
        const pageSizes: number[] = [];
        let res = await client.query('SELECT Id, Phone FROM Contact', header ? { 'Sforce-Query-Options': header } : {});
        for (;;) {
          expect(res.status).toBe(200);
          const body = await res.json();
          expect(body.totalSize).toBe(4500);
          seen.push(...ids(body));
          pageSizes.push(body.records.length);
          if (body.done) {
            expect(body.nextRecordsUrl).toBeUndefined();
            break;
          }
          expect(body.nextRecordsUrl).toMatch(new RegExp(`^/services/data/${V.replace('.', '\\.')}/query/01g[a-zA-Z0-9]{15}-${seen.length}$`));
          res = await client.call('GET', body.nextRecordsUrl);
        }
        expect(seen).toEqual(all);
        // Below Salesforce's minimum of 200 the stand-in serves 200, as Salesforce may.
        expect(pageSizes).toEqual(sizes ?? [...Array.from({ length: 22 }, () => 200), 100]);
      }
      const bad = await client.call('GET', `/services/data/${V}/query/01gXXXXXXXXXXXXXXX-2000`);
      expect(bad.status).toBe(400);
      expect(await bad.json()).toEqual([{ message: 'invalid query locator', errorCode: 'INVALID_QUERY_LOCATOR' }]);
    } finally {
      await more.close();
    }
  });

  it('leaves deleted records out of query and shows them, IsDeleted true, in queryAll', async () => {
    const victim = s.records('Contact')[5]!;
    s.deleteRecord(victim.values.Id as string);
    const soql = `SELECT Id, IsDeleted FROM Contact WHERE Id = '${victim.values.Id}'`;
    expect((await rows(soql)).totalSize).toBe(0);
    const all = await rows(soql, 'queryAll');
    expect(all.records).toEqual([{ attributes: expect.any(Object), Id: victim.values.Id, IsDeleted: true }]);
  });
});

describe('changes, the deleted window and record reads', () => {
  const clock = manualClock('2026-02-01T09:00:00Z');
  let s: SalesforceStandIn;
  let sf: ReturnType<typeof api>;
  beforeAll(async () => {
    s = await startSalesforceStandIn({ contacts: 20, leads: 10, campaigns: 2, now: clock.now });
    sf = api(s, await clientCredentials(s));
  });
  afterAll(() => s.close());

  it('moves SystemModstamp on a phone change and on Do Not Call, so an incremental query finds exactly those', async () => {
    const [a, b] = s.records('Contact');
    const lead = s.records('Lead')[0]!;
    clock.advance(30_000);
    const since = new Date(clock.now()).toISOString().replace('.000Z', 'Z');
    s.updateRecord(a!.values.Id as string, { Phone: '+1 415-555-0199' });
    s.updateRecord(lead.values.Id as string, { DoNotCall: true });
    const contacts = await (await sf.query(`SELECT Id, Phone FROM Contact WHERE SystemModstamp >= ${since}`)).json();
    expect(contacts.records).toEqual([{ attributes: expect.any(Object), Id: a!.values.Id, Phone: '+1 415-555-0199' }]);
    const leads = await (await sf.query(`SELECT Id, DoNotCall FROM Lead WHERE SystemModstamp >= ${since}`)).json();
    expect(leads.records).toEqual([{ attributes: expect.any(Object), Id: lead.values.Id, DoNotCall: true }]);
    expect(s.get(b!.values.Id as string)!.values.SystemModstamp).toBeLessThan(Date.parse(since));
  });

  it('updates a contact by PATCH (204) and reads it by id and in a composite read', async () => {
    const c = s.records('Contact')[3]!;
    const id = c.values.Id as string;
    clock.advance(1000);
    const patch = await sf.call('PATCH', `/services/data/${V}/sobjects/Contact/${id}`, { DoNotCall: true, MobilePhone: '212.555.0142' });
    expect(patch.status).toBe(204);
    expect(s.get(id)!.values.SystemModstamp).toBe(clock.now());
    const one = await (await sf.call('GET', `/services/data/${V}/sobjects/Contact/${id.slice(0, 15)}?fields=Id,DoNotCall,MobilePhone`)).json();
    expect(one).toEqual({ attributes: { type: 'Contact', url: `/services/data/${V}/sobjects/Contact/${id}` }, Id: id, DoNotCall: true, MobilePhone: '212.555.0142' });
    const other = s.records('Contact')[4]!.values.Id as string;
    const many = await (await sf.call('GET', `/services/data/${V}/composite/sobjects/Contact?ids=${id},${other}&fields=Id,Phone`)).json();
    expect(many.map((r: any) => r.Id)).toEqual([id, other]);

    const bad = await sf.call('PATCH', `/services/data/${V}/sobjects/Contact/${id}`, { Fax: '1' });
    expect(bad.status).toBe(400);
    expect((await bad.json())[0].errorCode).toBe('INVALID_FIELD');
    const readOnly = await sf.call('PATCH', `/services/data/${V}/sobjects/Contact/${id}`, { SystemModstamp: '2026-01-01T00:00:00Z' });
    expect((await readOnly.json())[0].errorCode).toBe('INVALID_FIELD_FOR_INSERT_UPDATE');
    const wrongType = await sf.call('PATCH', `/services/data/${V}/sobjects/Contact/${id}`, { DoNotCall: 'maybe' });
    expect((await wrongType.json())[0].errorCode).toBe('JSON_PARSER_ERROR');
    const missing = await sf.call('GET', `/services/data/${V}/sobjects/Contact/003000000000000`);
    expect(missing.status).toBe(404);
    expect((await missing.json())[0].errorCode).toBe('NOT_FOUND');
  });

  it('lists deletions in the documented window: whole minutes, latestDateCovered, 15 days back at most', async () => {
    clock.advance(60 * 60 * 1000); // 10:00:31
    const [x, y] = s.records('Lead');
    const start = new Date(clock.now()).toISOString();
    s.deleteRecord(x!.values.Id as string); // 10:00:31
    clock.advance(2 * 60 * 1000);
    s.deleteRecord(y!.values.Id as string); // 10:02:31
    clock.advance(30 * 1000); // now 10:03:01
    const end = new Date(clock.now() + 60 * 60 * 1000).toISOString(); // the future: covered only up to now's minute
    const res = await sf.call('GET', `/services/data/${V}/sobjects/Lead/deleted/?start=${encodeURIComponent(start)}&end=${encodeURIComponent(end)}`);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toEqual({
      deletedRecords: [
        { id: x!.values.Id, deletedDate: sfTime(s.get(x!.values.Id as string)!) },
        { id: y!.values.Id, deletedDate: sfTime(s.get(y!.values.Id as string)!) },
      ],
      earliestDateAvailable: '2026-01-17T10:03:00.000+0000',
      latestDateCovered: '2026-02-01T10:03:00.000+0000',
    });
    // A deletion in the current minute shows in the next window, which starts at latestDateCovered.
    const z = s.records('Lead')[0]!;
    s.deleteRecord(z.values.Id as string);
    clock.advance(60 * 1000);
    const next = await (await sf.call('GET', `/services/data/${V}/sobjects/Lead/deleted/?start=2026-02-01T10:03:00%2B00:00&end=2026-02-01T10:10:00%2B00:00`)).json();
    expect(next.deletedRecords.map((d: any) => d.id)).toEqual([z.values.Id]);

    for (const [q, why] of [
      ['start=2026-01-01T00:00:00Z&end=2026-02-01T00:00:00Z', /15 days/],
      ['start=2026-02-01T10:00:10Z&end=2026-02-01T10:00:50Z', /more than one minute/],
      ['start=yesterday&end=2026-02-01T00:00:00Z', /start/],
    ] as const) {
      const refused = await sf.call('GET', `/services/data/${V}/sobjects/Lead/deleted/?${q}`);
      expect(refused.status).toBe(400);
      const [err] = await refused.json();
      expect(err.errorCode).toBe('INVALID_REPLICATION_DATE');
      expect(err.message).toMatch(why);
    }
  });

  it('takes a person out of a campaign: the member leaves query results and enters the CampaignMember delete log', async () => {
    const member = s.records('CampaignMember')[0]!;
    const soql = `SELECT Id FROM CampaignMember WHERE CampaignId = '${member.values.CampaignId}' AND LeadOrContactId = '${member.values.LeadOrContactId}'`;
    expect((await (await sf.query(soql)).json()).totalSize).toBe(1);
    // Past the minutes of the lead deletions above, whose campaign members went with them.
    clock.advance(5 * 60_000);
    const start = new Date(clock.now()).toISOString();
    s.removeFromCampaign(member.values.CampaignId as string, member.values.LeadOrContactId as string);
    clock.advance(60_000);
    expect((await (await sf.query(soql)).json()).totalSize).toBe(0);
    const deleted = await (await sf.call('GET', `/services/data/${V}/sobjects/CampaignMember/deleted/?start=${start}&end=${new Date(clock.now()).toISOString()}`)).json();
    expect(deleted.deletedRecords.map((d: any) => d.id)).toEqual([member.values.Id]);
  });
});

function sfTime(r: SfRecord): string {
  return new Date(r.values.SystemModstamp as number).toISOString().replace('Z', '+0000');
}

describe('sObject Collections', () => {
  let s: SalesforceStandIn;
  let sf: ReturnType<typeof api>;
  let contactId: string;
  let leadId: string;
  beforeAll(async () => {
    s = await startSalesforceStandIn({ contacts: 5, leads: 5 });
    sf = api(s, await clientCredentials(s));
    contactId = s.records('Contact')[0]!.values.Id as string;
    leadId = s.records('Lead')[0]!.values.Id as string;
  });
  afterAll(() => s.close());

  const upsertPath = `/services/data/${V}/composite/sobjects/Task/Dialer_Call_Id__c`;
  const callTask = (ext: string, whoId: unknown, more: Record<string, unknown> = {}) => ({
    attributes: { type: 'Task' }, Dialer_Call_Id__c: ext, WhoId: whoId, Subject: 'Call', TaskSubtype: 'Call', CallType: 'Outbound',
    Status: 'Completed', CallDurationInSeconds: 42, CallDisposition: 'Connected', CallObject: `cdr-${ext}`, ActivityDate: '2026-02-01', ...more,
  });

  it('upserts on the external id: the same call twice is one Task, created the first time only', async () => {
    const first = await sf.call('PATCH', upsertPath, { allOrNone: false, records: [callTask('call-1', contactId)] });
    expect(first.status).toBe(200);
    const [r1] = await first.json();
    expect(r1).toEqual({ id: expect.stringMatching(/^00T[a-zA-Z0-9]{15}$/), success: true, errors: [], created: true });
    const again = await (await sf.call('PATCH', upsertPath, { records: [callTask('call-1', contactId, { CallDurationInSeconds: 43 })] })).json();
    expect(again).toEqual([{ id: r1.id, success: true, errors: [], created: false }]);
    const tasks = s.records('Task').filter((t) => t.values.Dialer_Call_Id__c === 'call-1');
    expect(tasks).toHaveLength(1);
    expect(tasks[0]!.values).toMatchObject({ WhoId: contactId, CallDurationInSeconds: 43, TaskSubtype: 'Call', Priority: 'Normal' });
    const q = await (await sf.query("SELECT Id, Who.Name, CallDurationInSeconds FROM Task WHERE Dialer_Call_Id__c = 'call-1'")).json();
    expect(q.records[0]).toMatchObject({ Id: r1.id, CallDurationInSeconds: 43, Who: { attributes: { type: 'Contact' }, Name: expect.any(String) } });
  });

  it('answers per-record errors for a missing, foreign, unknown or deleted WhoId, a bad picklist value and a text too long', async () => {
    const deletedLead = s.records('Lead')[4]!.values.Id as string;
    s.deleteRecord(deletedLead);
    const body = await (await sf.call('PATCH', upsertPath, {
      records: [
        callTask('ok-1', leadId),
        callTask('bad-1', null),
        callTask('bad-2', s.records('Campaign')[0]!.values.Id),
        callTask('bad-3', '003000000000000AAA'),
        callTask('bad-4', deletedLead),
        callTask('bad-5', contactId, { CallType: 'Sideways' }),
        { ...callTask('', contactId) },
        callTask('bad-6', contactId, { Description: 'x'.repeat(32_001) }),
      ],
    })).json();
    expect(body[0]).toMatchObject({ success: true, created: true });
    const codes = body.slice(1).map((r: any) => [r.success, r.errors[0].statusCode, r.errors[0].fields]);
    expect(codes).toEqual([
      [false, 'REQUIRED_FIELD_MISSING', ['WhoId']],
      [false, 'FIELD_INTEGRITY_EXCEPTION', ['WhoId']],
      [false, 'INVALID_CROSS_REFERENCE_KEY', ['WhoId']],
      [false, 'ENTITY_IS_DELETED', ['WhoId']],
      [false, 'INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST', ['CallType']],
      [false, 'MISSING_ARGUMENT', ['Dialer_Call_Id__c']],
      [false, 'STRING_TOO_LONG', ['Description']],
    ]);
    expect(body[7].errors[0].message).toMatch(/^Description: data value too large: x+\.\.\. \(max length=32000\)$/);
    expect(body.slice(1).every((r: any) => !('id' in r))).toBe(true);
    expect(s.records('Task').map((t) => t.values.Dialer_Call_Id__c)).toEqual(['call-1', 'ok-1']);
  });

  it('upserts two records of one new external id in one request as one Task, with or without allOrNone', async () => {
    for (const allOrNone of [false, true]) {
      const ext = `twice-${allOrNone}`;
      const body = await (await sf.call('PATCH', upsertPath, { allOrNone, records: [callTask(ext, contactId), callTask(ext, contactId, { CallDurationInSeconds: 7 })] })).json();
      expect(body.map((r: any) => r.created)).toEqual([true, false]);
      expect(body[0].id).toBe(body[1].id);
      expect(s.records('Task').filter((t) => t.values.Dialer_Call_Id__c === ext).map((t) => t.values.CallDurationInSeconds)).toEqual([7]);
    }
  });

  it('writes nothing when allOrNone is set and one record fails', async () => {
    const before = s.records('Task').length;
    const body = await (await sf.call('PATCH', upsertPath, { allOrNone: true, records: [callTask('all-1', contactId), callTask('all-2', null)] })).json();
    expect(body[0]).toEqual({ success: false, errors: [{ statusCode: 'ALL_OR_NONE_OPERATION_ROLLED_BACK', message: expect.any(String), fields: [] }] });
    expect(body[1].errors[0].statusCode).toBe('REQUIRED_FIELD_MISSING');
    expect(s.records('Task')).toHaveLength(before);
  });

  it('refuses more than 200 records, an unknown field and a field that is no external id', async () => {
    const tooMany = await sf.call('PATCH', upsertPath, { records: Array.from({ length: 201 }, (_, i) => callTask(`many-${i}`, contactId)) });
    expect(tooMany.status).toBe(400);
    expect(await tooMany.json()).toEqual([{ message: 'record limit reached. cannot submit more than 200 records into this call', errorCode: 'EXCEEDED_ID_LIMIT' }]);
    const ok200 = await (await sf.call('PATCH', upsertPath, { records: Array.from({ length: 200 }, (_, i) => callTask(`many-${i}`, contactId)) })).json();
    expect(ok200.filter((r: any) => r.created)).toHaveLength(200);
    const unknown = await sf.call('PATCH', upsertPath, { records: [callTask('u-1', contactId, { Mood__c: 'x' })] });
    expect(unknown.status).toBe(400);
    expect((await unknown.json())[0].errorCode).toBe('INVALID_FIELD');
    const notExternal = await sf.call('PATCH', `/services/data/${V}/composite/sobjects/Task/Subject`, { records: [] });
    expect(notExternal.status).toBe(404);
    expect(s.records('Task').some((t) => t.values.Dialer_Call_Id__c === 'u-1')).toBe(false);
  });

  it('inserts with POST and answers each record without `created`', async () => {
    const res = await sf.call('POST', `/services/data/${V}/composite/sobjects`, {
      records: [{ attributes: { type: 'Task' }, WhoId: leadId, Subject: 'Note' }, { attributes: {}, Subject: 'x' }],
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body[0]).toEqual({ id: expect.stringMatching(/^00T/), success: true, errors: [] });
    expect(body[1]).toEqual({ success: false, errors: [{ statusCode: 'INVALID_TYPE', message: 'Must send a concrete entity type.', fields: [] }] });
    expect(s.get(body[0].id)!.values).toMatchObject({ Subject: 'Note', Status: 'Not Started', WhoId: leadId });
  });

  it('updates Leads and Contacts by id in one PATCH, each record its own result; an unknown field refuses the whole request', async () => {
    const path = `/services/data/${V}/composite/sobjects`;
    const deleted = s.createRecord('Lead', { LastName: 'Gone', Company: 'Gone Co' });
    s.deleteRecord(deleted.values.Id as string);
    const res = await sf.call('PATCH', path, {
      allOrNone: false,
      records: [
        { attributes: { type: 'Contact' }, id: contactId, Dialer_Status__c: 'Success' },
        { attributes: { type: 'Lead' }, id: (leadId as string).slice(0, 15), Dialer_Status__c: 'Failure' },
        { attributes: { type: 'Lead' }, id: contactId, Dialer_Status__c: 'Failure' },
        { attributes: { type: 'Lead' }, id: deleted.values.Id, Dialer_Status__c: 'Failure' },
        { attributes: { type: 'Contact' }, Dialer_Status__c: 'Failure' },
      ],
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.slice(0, 2)).toEqual([{ id: contactId, success: true, errors: [] }, { id: leadId, success: true, errors: [] }]);
    expect(body.slice(2).map((r: { errors: { statusCode: string }[] }) => r.errors[0]!.statusCode)).toEqual(['INVALID_CROSS_REFERENCE_KEY', 'ENTITY_IS_DELETED', 'MISSING_ARGUMENT']);
    expect(s.get(contactId)!.values.Dialer_Status__c).toBe('Success');
    expect(s.get(leadId)!.values.Dialer_Status__c).toBe('Failure');
    const unknown = await sf.call('PATCH', path, { records: [{ attributes: { type: 'Contact' }, id: contactId, Mood__c: 'x' }] });
    expect(unknown.status).toBe(400);
    expect((await unknown.json())[0].errorCode).toBe('INVALID_FIELD');
  });

  it('injects faults: a 503 before the write changes nothing; a lost answer after the write is repaired by an idempotent retry', async () => {
    s.injectFault({ status: 503, mode: 'before' });
    const refused = await sf.call('PATCH', upsertPath, { records: [callTask('fault-1', contactId)] });
    expect(refused.status).toBe(503);
    expect((await refused.json())[0].errorCode).toBe('SERVER_UNAVAILABLE');
    expect(s.records('Task').some((t) => t.values.Dialer_Call_Id__c === 'fault-1')).toBe(false);

    s.injectFault({ mode: 'lost' });
    await expect(sf.call('PATCH', upsertPath, { records: [callTask('fault-1', contactId)] })).rejects.toThrow();
    expect(s.records('Task').filter((t) => t.values.Dialer_Call_Id__c === 'fault-1')).toHaveLength(1);
    const retry = await (await sf.call('PATCH', upsertPath, { records: [callTask('fault-1', contactId)] })).json();
    expect(retry[0]).toMatchObject({ success: true, created: false });

    // A fault aimed at one path leaves the others alone.
    s.injectFault({ status: 503, path: /\/sobjects\/Contact\// });
    expect((await sf.call('PATCH', upsertPath, { records: [callTask('fault-3', contactId)] })).status).toBe(200);
    expect((await sf.call('PATCH', `/services/data/${V}/sobjects/Contact/${contactId}`, { Title: 'CEO' })).status).toBe(503);
    expect(s.get(contactId)!.values.Title).toBeNull();

    s.injectFault({ status: 500, mode: 'after' });
    const after = await sf.call('PATCH', upsertPath, { records: [callTask('fault-2', contactId)] });
    expect(after.status).toBe(500);
    expect((await after.json())[0].errorCode).toBe('UNKNOWN_EXCEPTION');
    expect(s.records('Task').filter((t) => t.values.Dialer_Call_Id__c === 'fault-2')).toHaveLength(1);
    expect(s.stats.faults).toBe(4);
  });
});

describe('API allowance', () => {
  const clock = manualClock('2026-03-01T00:00:00Z');
  let s: SalesforceStandIn;
  beforeAll(async () => {
    // Sessions outlive the hours this test skips over.
    s = await startSalesforceStandIn({ contacts: 2, dailyApiRequests: 5, sessionTimeoutMs: 48 * 60 * 60 * 1000, now: clock.now });
  });
  afterAll(() => s.close());

  it('reports api-usage on every answer and refuses with REQUEST_LIMIT_EXCEEDED for a rolling 24 hours once spent', async () => {
    const sf = api(s, await clientCredentials(s));
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await sf.query('SELECT Id FROM Contact');
      expect(res.status).toBe(200);
      seen.push(res.headers.get('sforce-limit-info')!);
      clock.advance(60 * 60 * 1000);
    }
    expect(seen).toEqual(['api-usage=1/5', 'api-usage=2/5', 'api-usage=3/5', 'api-usage=4/5', 'api-usage=5/5']);
    const refused = await sf.query('SELECT Id FROM Contact');
    expect(refused.status).toBe(403);
    expect(refused.headers.get('sforce-limit-info')).toBe('api-usage=5/5');
    expect(await refused.json()).toEqual([{ message: 'TotalRequests Limit exceeded.', errorCode: 'REQUEST_LIMIT_EXCEEDED' }]);
    // 24 hours after the first request it leaves the window and frees one call.
    clock.advance(19 * 60 * 60 * 1000);
    const again = await sf.query('SELECT Id FROM Contact');
    expect(again.status).toBe(200);
    expect(again.headers.get('sforce-limit-info')).toBe('api-usage=5/5');
    expect((await sf.query('SELECT Id FROM Contact')).status).toBe(403);
    s.setApiUsage(0);
    expect((await sf.query('SELECT Id FROM Contact')).headers.get('sforce-limit-info')).toBe('api-usage=1/5');
    expect(s.stats.limitRefused).toBe(2);
  });
});

describe('bad input', () => {
  it('gets a 4xx in Salesforce\'s error shape that names the problem, never a 500', async () => {
    const s = await startSalesforceStandIn({ contacts: 2 });
    try {
      const sf = api(s, await clientCredentials(s));
      const id = s.records('Contact')[0]!.values.Id as string;
      const cases: Array<[string, string, unknown, number, string, RegExp]> = [
        ['GET', `/services/data/${V}/query`, undefined, 400, 'MALFORMED_QUERY', /q parameter/],
        ['GET', `/services/data/${V}/query?q=${encodeURIComponent('SELECT Id FROM Contact WHERE SystemModstamp > 2026-13-45T99:00:00Z')}`, undefined, 400, 'MALFORMED_QUERY', /dateTime/],
        ['GET', `/services/data/${V}/query?q=${encodeURIComponent("SELECT Id FROM Contact WHERE Id = 'x'")}`, undefined, 400, 'INVALID_QUERY_FILTER_OPERATOR', /invalid ID field: x/],
        ['GET', `/services/data/${V}/query?q=${encodeURIComponent('SELECT Id FROM Contact LIMIT 5 OFFSET 5000')}`, undefined, 400, 'NUMBER_OUTSIDE_VALID_RANGE', /2000/],
        ['GET', `/services/data/${V}/query/abc`, undefined, 400, 'INVALID_QUERY_LOCATOR', /locator/],
        ['GET', `/services/data/${V}/sobjects/Contact/deleted/`, undefined, 400, 'MISSING_ARGUMENT', /start and end/],
        ['GET', `/services/data/${V}/sobjects/Contact/${id}?fields=Nope`, undefined, 400, 'INVALID_FIELD', /Nope/],
        ['PATCH', `/services/data/${V}/sobjects/Contact/${id}`, [1], 400, 'JSON_PARSER_ERROR', /JSON object/],
        ['PATCH', `/services/data/${V}/sobjects/Contact/${id}`, { LastName: null }, 400, 'REQUIRED_FIELD_MISSING', /LastName/],
        ['PATCH', `/services/data/${V}/sobjects/Contact/${id}`, { Phone: { a: 1 } }, 400, 'JSON_PARSER_ERROR', /Phone/],
        ['POST', `/services/data/${V}/composite/sobjects`, { records: 'x' }, 400, 'JSON_PARSER_ERROR', /records/],
        ['POST', `/services/data/${V}/composite/sobjects`, { allOrNone: 'yes', records: [] }, 400, 'JSON_PARSER_ERROR', /allOrNone/],
        ['POST', `/services/data/${V}/composite/sobjects`, { records: [{ attributes: { type: 'Task' }, ActivityDate: 'tomorrow' }] }, 400, 'JSON_PARSER_ERROR', /ActivityDate/],
        ['GET', `/services/data/${V}/composite/sobjects/Contact?ids=abc&fields=Id`, undefined, 400, 'MALFORMED_ID', /abc/],
        ['GET', `/services/data/${V}/composite/sobjects/Contact?ids=${id}`, undefined, 400, 'MISSING_ARGUMENT', /fields/],
        ['GET', '/services/data/v99.0/query?q=SELECT+Id+FROM+Contact', undefined, 404, 'NOT_FOUND', /does not exist/],
      ];
      for (const [method, path, body, status, code, message] of cases) {
        const res = await sf.call(method, path, body);
        expect(res.status, `${method} ${path}`).toBe(status);
        const [err] = await res.json();
        expect(err.errorCode, `${method} ${path}`).toBe(code);
        expect(err.message).toMatch(message);
      }
      const badJson = await fetch(`${s.url}/services/data/${V}/sobjects/Contact/${id}`, { method: 'PATCH', headers: { authorization: `Bearer ${await clientCredentials(s)}`, 'content-type': 'application/json' }, body: '{bad' });
      expect(badJson.status).toBe(400);
      expect((await badJson.json())[0].errorCode).toBe('JSON_PARSER_ERROR');
    } finally {
      await s.close();
    }
  });
});

describe('versions and limits', () => {
  it('lists versions without a session and reports the allowance in the limits resource', async () => {
    const s = await startSalesforceStandIn({ dailyApiRequests: 1000 });
    try {
      const versions = await (await fetch(`${s.url}/services/data`)).json();
      expect(versions).toContainEqual({ label: "Winter '25", url: '/services/data/v62.0', version: '62.0' });
      const sf = api(s, await clientCredentials(s));
      const limits = await sf.call('GET', `/services/data/${V}/limits`);
      expect(await limits.json()).toEqual({ DailyApiRequests: { Max: 1000, Remaining: 999 } });
      expect((await sf.call('GET', '/services/data/v20.0/limits')).status).toBe(404);
    } finally {
      await s.close();
    }
  });
});

describe('Outbound Messages', () => {
  let s: SalesforceStandIn;
  let listener: ReturnType<typeof createServer>;
  let listenerUrl: string;
  const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  const answers: Array<[number, string]> = [];
  beforeAll(async () => {
    s = await startSalesforceStandIn({ contacts: 3, outboundRetryDelayMs: () => 20 });
    listener = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        const [status, text] = answers.shift() ?? [200, ack(true)];
        res.writeHead(status, { 'content-type': 'text/xml' }).end(text);
      });
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    listenerUrl = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/sf/outbound`;
  });
  afterAll(async () => {
    await s.close();
    await new Promise((resolve) => listener.close(resolve));
  });

  const ack = (value: boolean) =>
    `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><notificationsResponse xmlns="http://soap.sforce.com/2005/09/outbound"><Ack>${value}</Ack></notificationsResponse></soapenv:Body></soapenv:Envelope>`;

  it('posts the SOAP notifications and retries on errors and Ack false until the listener acknowledges', async () => {
    const [a, b] = s.records('Contact');
    answers.push([500, 'boom'], [200, ack(false)], [200, '<html>not soap</html>']);
    const delivery = s.sendOutboundMessage({ url: listenerUrl, ids: [a!.values.Id as string, (b!.values.Id as string).slice(0, 15)], fields: ['Phone'] });
    expect(await delivery.settled).toBe('acknowledged');
    expect(delivery.attempts).toBe(4);
    expect(delivery.answers).toEqual([500, 200, 200, 200]);
    expect(received).toHaveLength(4);
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    const { headers, body } = received[0]!;
    expect(headers['content-type']).toBe('text/xml; charset=utf-8');
    expect(headers.soapaction).toBe('""');
    expect(body).toContain('<notifications xmlns="http://soap.sforce.com/2005/09/outbound">');
    expect(body).toContain(`<OrganizationId>${s.orgId.slice(0, 15)}</OrganizationId>`);
    expect(body).toContain(`<ActionId>${delivery.actionId}</ActionId>`);
    expect(body).toContain('<SessionId xsi:nil="true"/>');
    expect(body).toContain(`<EnterpriseUrl>${s.url}/services/Soap/c/62.0/${s.orgId.slice(0, 15)}</EnterpriseUrl>`);
    expect(body).toContain(`<PartnerUrl>${s.url}/services/Soap/u/62.0/${s.orgId.slice(0, 15)}</PartnerUrl>`);
    const notes = [...body.matchAll(/<Notification><Id>(04l\w+)<\/Id><sObject xsi:type="sf:Contact" xmlns:sf="urn:sobject.enterprise.soap.sforce.com"><sf:Id>(\w+)<\/sf:Id>(.*?)<\/sObject><\/Notification>/g)];
    expect(notes.map((n) => n[1])).toEqual(delivery.notificationIds);
    expect(notes.map((n) => n[2])).toEqual([a!.values.Id, b!.values.Id]);
    expect(notes[0]![3]).toBe(a!.values.Phone === null ? '<sf:Phone xsi:nil="true"/>' : `<sf:Phone>${a!.values.Phone}</sf:Phone>`);
    expect(s.outboundDeliveries().map((d) => [d.state, d.recordIds])).toEqual([['acknowledged', [a!.values.Id, b!.values.Id]]]);
  });

  it('sends a message on every change of a record a rule watches, over the API or by a hook, and none for seeds', async () => {
    const watched = await startSalesforceStandIn({ contacts: 3, leads: 2, outboundRetryDelayMs: () => 20, outboundRules: [{ url: listenerUrl, objectType: 'Contact', fields: ['Phone', 'DoNotCall'] }] });
    try {
      expect(watched.outboundDeliveries()).toEqual([]);
      const [c1, c2] = watched.records('Contact');
      watched.updateRecord(c1!.values.Id as string, { Phone: '+12025550111' });
      watched.updateRecord(watched.records('Lead')[0]!.values.Id as string, { DoNotCall: true });
      const sf = api(watched, await clientCredentials(watched));
      expect((await sf.call('PATCH', `/services/data/${V}/sobjects/Contact/${c2!.values.Id}`, { DoNotCall: true })).status).toBe(204);
      const deliveries = watched.outboundDeliveries();
      expect(deliveries.map((d) => d.recordIds)).toEqual([[c1!.values.Id], [c2!.values.Id]]);
      expect(await Promise.all(deliveries.map((d) => d.settled))).toEqual(['acknowledged', 'acknowledged']);
      expect(deliveries[0]!.body).toContain('<sf:Phone>+12025550111</sf:Phone><sf:DoNotCall>false</sf:DoNotCall>');
      expect(deliveries[1]!.body).toContain('<sf:DoNotCall>true</sf:DoNotCall>');
      const other = watched.sendOutboundMessage({ url: listenerUrl, ids: [c1!.values.Id as string], orgId: '00D000000000042AAA' });
      expect(other.body).toContain('<OrganizationId>00D000000000042</OrganizationId>');
      await other.settled;
    } finally {
      await watched.close();
    }
  });

  it('gives up once 24 hours have passed without an Ack', async () => {
    const clock = manualClock('2026-03-01T00:00:00Z');
    const late = await startSalesforceStandIn({ contacts: 1, now: clock.now, outboundRetryDelayMs: () => 5 });
    const down = createServer((_req, res) => {
      // Every refusal moves the clock on five hours, so the fifth attempt is past the 24 hours.
      clock.advance(5 * 60 * 60 * 1000);
      res.writeHead(503).end();
    });
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    try {
      const d = late.sendOutboundMessage({ url: `http://127.0.0.1:${(down.address() as AddressInfo).port}/`, ids: [late.records('Contact')[0]!.values.Id as string] });
      expect(await d.settled).toBe('expired');
      expect(d.answers).toEqual([503, 503, 503, 503, 503]);
    } finally {
      await late.close();
      await new Promise((resolve) => down.close(resolve));
    }
  });
});
