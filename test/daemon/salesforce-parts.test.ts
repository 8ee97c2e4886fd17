// The Salesforce folder's pure parts: ids in their 18-character form, Sforce-Limit-Info, SOQL literals, and the
// Outbound Message parser's verdicts on what Salesforce sends and on what it never would.
import { describe, expect, it } from 'vitest';
import { makeId, toId18 } from '../../crm-stand-ins/salesforce-records.ts';
import { notificationsXml } from '../../crm-stand-ins/salesforce-outbound.ts';
import { id18, parseLimitInfo, soqlDateTime, soqlString } from '../../daemon/crm/salesforce/client.ts';
import { parseOutboundMessage, SOAP_ACK, soapFault } from '../../daemon/crm/salesforce/outbound.ts';
import { XMLParser } from 'fast-xml-parser';
import { ConfigError, parseConfig } from '../../daemon/config.ts';

describe('record ids', () => {
  it('gives the 18-character form the stand-in (written from Salesforce\'s description) gives, for mixed-case ids', () => {
    for (const id of ['001A0000006Vm9r', 'a0Bx000000AbCdE', '003zzzzzzzzzzzz', '00QABCDEABCDEAB', makeId('003', 77).slice(0, 15)]) {
      expect(id18(id)).toBe(toId18(id));
    }
    expect(id18('003000000000001AAA')).toBe('003000000000001AAA');
  });
});

describe('Sforce-Limit-Info', () => {
  it('reads api-usage among other entries, and nothing from a header without it', () => {
    expect(parseLimitInfo('api-usage=18/5000')).toEqual({ used: 18, max: 5000 });
    expect(parseLimitInfo('per-app-api-usage=17/250(appName=sample), api-usage=25/5000')).toEqual({ used: 25, max: 5000 });
    expect(parseLimitInfo(undefined)).toBeNull();
    expect(parseLimitInfo('api-usage=abc/5000')).toBeNull();
    expect(parseLimitInfo('api-usage=1/0')).toBeNull();
  });
});

describe('SOQL literals', () => {
  it('escapes quotes and backslashes, and writes datetimes in whole seconds UTC', () => {
    expect(soqlString("O'Brien \\ Co")).toBe("'O\\'Brien \\\\ Co'");
    expect(soqlDateTime(Date.parse('2026-03-04T05:06:07.890Z'))).toBe('2026-03-04T05:06:07Z');
  });
});

describe('Outbound Messages', () => {
  const org = makeId('00D', 1);
  const message = (count: number, orgId = org) => Buffer.from(notificationsXml({
    orgId, actionId: makeId('04k', 1), sessionId: null, instanceUrl: 'https://example.my.salesforce.com', apiVersion: '62.0', objectType: 'Contact',
    notifications: Array.from({ length: count }, (_, i) => ({ id: makeId('04l', i + 1), record: { id: makeId('003', i + 1), fields: [['Phone', `+1 (212) 555-01${String(i).padStart(2, '0')} & more`]] } })),
  }));

  const ours = (id: string) => id.slice(0, 15) === org.slice(0, 15);
  const parse = (raw: Buffer | string, maxBytes = 1_000_000) => parseOutboundMessage(Buffer.isBuffer(raw) ? raw : Buffer.from(raw), maxBytes, ours);

  it('reads the org, each notification\'s id, its record and the record\'s type', () => {
    const parsed = parse(message(3));
    expect(parsed).toEqual({
      ok: true, orgId: org.slice(0, 15),
      notifications: [1, 2, 3].map((i) => ({ id: makeId('04l', i), recordId: makeId('003', i), objectType: 'Contact' })),
    });
  });

  it('refuses more than 100 notifications, none, a body past the size limit, and foreign shapes, each with its reason', () => {
    expect(parse(message(101), 10_000_000)).toEqual({ ok: false, status: 400, reason: '101 notifications; Salesforce sends at most 100' });
    expect(parse(message(1), 100)).toMatchObject({ ok: false, status: 413, reason: expect.stringMatching(/larger than maxOutboundBytes \(100\)/) });
    const none = message(1).toString('utf8').replace(/<Notification>.*<\/Notification>/, '');
    expect(parse(none)).toEqual({ ok: false, status: 400, reason: 'no Notification in the message' });
    const badOrg = message(1).toString('utf8').replace(/<OrganizationId>[^<]*</, '<OrganizationId>not-an-org<');
    expect(parse(badOrg)).toEqual({ ok: false, status: 400, reason: 'OrganizationId is missing or not an org id (00D…)' });
    const noType = message(1).toString('utf8').replace(/ xsi:type="sf:Contact"/, '');
    expect(parse(noType)).toEqual({ ok: false, status: 400, reason: 'Notification 1: sObject has no xsi:type naming its object' });
    expect(parse('{"json": true}')).toMatchObject({ ok: false, status: 400 });
    const other = makeId('00D', 2);
    expect(parse(message(1, other))).toEqual({ ok: false, status: 401, reason: `OrganizationId ${other.slice(0, 15)} is not this sync's org` });
  });

  it('refuses another org, too many tags or attributes before parsing: a hostile body costs a scan', () => {
    const other = makeId('00D', 2);
    const xml = message(1, other).toString('utf8');
    // Malformed after the org id: only a scan that stops at the org can answer 401 (a parse would say "not well-formed").
    expect(parse(`${xml.slice(0, xml.indexOf('</OrganizationId>') + 17)}<x a="1" a="1"><y></x>`)).toMatchObject({ ok: false, status: 401 });
    // A second OrganizationId (in a comment or a field) that is not ours refuses the message, wherever it stands.
    const sneaky = message(1).toString('utf8').replace('</notifications>', `<!-- <OrganizationId>${other.slice(0, 15)}</OrganizationId> --></notifications>`);
    expect(parse(sneaky)).toMatchObject({ ok: false, status: 401 });
    const attrs = (n: number) => Array.from({ length: n }, (_, i) => ` a${i}="v"`).join('');
    const inOne = message(1).toString('utf8').replace('<Notification>', `<Notification${attrs(17)}>`);
    expect(parse(inOne)).toEqual({ ok: false, status: 400, reason: 'an element with more than 16 attributes: not an Outbound Message' });
    expect(parse(message(1).toString('utf8').replace('<Notification>', `<Notification${attrs(16)}>`))).toMatchObject({ ok: true });
    const spread = message(1).toString('utf8').replace('</notifications>', `${`<x${attrs(10)}/>`.repeat(501)}</notifications>`);
    expect(parse(spread, 10_000_000)).toEqual({ ok: false, status: 400, reason: 'more than 5000 attributes: not an Outbound Message' });
    const tags = message(1).toString('utf8').replace('</notifications>', `${'<x/>'.repeat(10_000)}</notifications>`);
    expect(parse(tags, 10_000_000)).toMatchObject({ ok: false, status: 400, reason: expect.stringMatching(/^more than 10000 tags: not an Outbound Message/) });
    // Quotes cannot hide markup from the count: a '<' counts wherever it stands.
    const quoted = message(1).toString('utf8').replace('</notifications>', `<!-- ' -->${'<x/>'.repeat(10_000)}</notifications>`);
    expect(parse(quoted, 10_000_000)).toMatchObject({ ok: false, status: 400, reason: expect.stringMatching(/^more than 10000 tags/) });
  });

  it('answers an Ack and faults that are well-formed SOAP, with the reason escaped', () => {
    const parser = new XMLParser({ removeNSPrefix: true });
    expect(parser.parse(SOAP_ACK).Envelope.Body.notificationsResponse.Ack).toBe(true);
    const fault = parser.parse(soapFault('bad <xml> & "stuff"')).Envelope.Body.Fault;
    expect(fault).toEqual({ faultcode: 'soapenv:Client', faultstring: 'bad <xml> & "stuff"' });
  });
});

describe('configuration', () => {
  const config = (source: Record<string, unknown>) => ({
    redis: { url: 'redis://127.0.0.1:6379' },
    dialer: { baseUrl: 'https://dialer.example.com', accountId: 'a1', apiToken: 'k' },
    syncs: [{ id: 'sf', campaignId: 'c1', mapping: { phone: ['Phone'] }, source: {
      type: 'salesforce', clientId: '3MVG9x', auth: { flow: 'client_credentials', clientSecret: 's' }, selection: { campaignId: '7015e000000XyZa' }, ...source,
    } }],
  });
  const problems = (source: Record<string, unknown>): string[] => {
    try {
      parseConfig(config(source), 'sync.yaml', {});
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).problems;
    }
    return [];
  };

  it('takes a Campaign selection with its defaults', () => {
    const source = parseConfig(config({}), 'sync.yaml', {}).syncs[0]!.source as Record<string, unknown>;
    expect(source).toMatchObject({ loginUrl: 'https://login.salesforce.com', apiVersion: '62.0', reserveShare: 0.2, batchSize: 2000, overlap: 300_000 });
  });

  it('names what is wrong: both selections, a WHERE without an object, a key that is not PEM, a bad field name, an unknown flow', () => {
    expect(problems({ selection: { campaignId: '7015e000000XyZa', object: 'Lead' } }).join('\n')).toMatch(/give either campaignId .* or object/);
    expect(problems({ selection: { where: "Status = 'Open'" } }).join('\n')).toMatch(/give either campaignId/);
    expect(problems({ auth: { flow: 'jwt_bearer', username: 'u@example.com', privateKey: 'not a key' } }).join('\n')).toMatch(/PEM private key/);
    expect(problems({ taskExternalIdField: 'Bad Field;' }).join('\n')).toMatch(/field API name/);
    expect(problems({ auth: { flow: 'password', clientSecret: 's' } }).join('\n')).toMatch(/client_credentials or jwt_bearer/);
    expect(problems({ selection: { campaignId: '001000000000001' } }).join('\n')).toMatch(/campaignId: a Salesforce id .* starting with 701/);
  });
});
