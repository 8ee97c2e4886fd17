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

  it('reads the org, each notification\'s id, its record and the record\'s type', () => {
    const parsed = parseOutboundMessage(message(3), 1_000_000);
    expect(parsed).toEqual({
      ok: true, orgId: org.slice(0, 15),
      notifications: [1, 2, 3].map((i) => ({ id: makeId('04l', i), recordId: makeId('003', i), objectType: 'Contact' })),
    });
  });

  it('refuses more than 100 notifications, none, a body past the size limit, and foreign shapes, each with its reason', () => {
    expect(parseOutboundMessage(message(101), 10_000_000)).toEqual({ ok: false, reason: '101 notifications; Salesforce sends at most 100' });
    expect(parseOutboundMessage(message(1), 100)).toMatchObject({ ok: false, reason: expect.stringMatching(/larger than maxOutboundBytes \(100\)/) });
    const none = message(1).toString('utf8').replace(/<Notification>.*<\/Notification>/, '');
    expect(parseOutboundMessage(Buffer.from(none), 1_000_000)).toEqual({ ok: false, reason: 'no Notification in the message' });
    const badOrg = message(1).toString('utf8').replace(/<OrganizationId>[^<]*</, '<OrganizationId>not-an-org<');
    expect(parseOutboundMessage(Buffer.from(badOrg), 1_000_000)).toEqual({ ok: false, reason: 'OrganizationId is missing or not an org id (00D…)' });
    const noType = message(1).toString('utf8').replace(/ xsi:type="sf:Contact"/, '');
    expect(parseOutboundMessage(Buffer.from(noType), 1_000_000)).toEqual({ ok: false, reason: 'Notification 1: sObject has no xsi:type naming its object' });
    expect(parseOutboundMessage(Buffer.from('{"json": true}'), 1_000_000)).toMatchObject({ ok: false });
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
