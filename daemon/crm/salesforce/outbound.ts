// Salesforce Outbound Messages: the SOAP 1.1 notifications a Flow or workflow rule POSTs, parsed with fast-xml-parser
// (never patterns), checked against the configured org, and the SOAP answers Salesforce expects (Ack, or a fault).
import { XMLParser, XMLValidator } from 'fast-xml-parser';

export interface OutboundNotification {
  /** The notification's id (04l…): the same in every retry of the message. */
  id: string;
  /** The record it is about, and its type (Contact, Lead, …). */
  recordId: string;
  objectType: string;
}

export type OutboundParse =
  | { ok: true; orgId: string; notifications: OutboundNotification[] }
  | { ok: false; reason: string };

/** Salesforce sends at most 100 notifications in one message. */
const MAX_NOTIFICATIONS = 100;

const parser = new XMLParser({
  removeNSPrefix: true,
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  parseTagValue: false,
  parseAttributeValue: false,
  // Ids carry no entities; leaving them unexpanded rules out entity-expansion tricks altogether.
  processEntities: false,
  isArray: (name) => name === 'Notification',
});

const text = (v: unknown): string | null => (typeof v === 'string' ? v.trim() : typeof v === 'object' && v && typeof (v as { '#text'?: unknown })['#text'] === 'string' ? String((v as { '#text': string })['#text']).trim() : null);

/** Parses a notifications message; anything not shaped like one is refused with the reason. */
export function parseOutboundMessage(raw: Buffer, maxBytes: number): OutboundParse {
  if (raw.length === 0) return { ok: false, reason: 'empty body: expected a SOAP notifications message' };
  if (raw.length > maxBytes) return { ok: false, reason: `message of ${raw.length} bytes is larger than maxOutboundBytes (${maxBytes})` };
  const xml = raw.toString('utf8');
  // A notifications message never declares a document type: refusing one keeps entity definitions out entirely.
  if (xml.includes('<!DOCTYPE') || xml.includes('<!ENTITY')) return { ok: false, reason: 'a document type declaration is not allowed in an Outbound Message' };
  const valid = XMLValidator.validate(xml);
  if (valid !== true) return { ok: false, reason: `not well-formed XML: ${valid.err.msg} (line ${valid.err.line})` };
  let doc: any;
  try {
    doc = parser.parse(xml);
  } catch (err) {
    return { ok: false, reason: `not well-formed XML: ${(err as Error).message}` };
  }
  const body = doc?.Envelope?.Body;
  const n = body?.notifications;
  if (!body || !n || typeof n !== 'object') return { ok: false, reason: 'not a SOAP Envelope whose Body holds notifications (http://soap.sforce.com/2005/09/outbound)' };
  const orgId = text(n.OrganizationId);
  if (!orgId || !/^00D[A-Za-z0-9]{12}([A-Za-z0-9]{3})?$/.test(orgId)) return { ok: false, reason: 'OrganizationId is missing or not an org id (00D…)' };
  const list: unknown[] = Array.isArray(n.Notification) ? n.Notification : [];
  if (list.length === 0) return { ok: false, reason: 'no Notification in the message' };
  if (list.length > MAX_NOTIFICATIONS) return { ok: false, reason: `${list.length} notifications; Salesforce sends at most ${MAX_NOTIFICATIONS}` };
  const notifications: OutboundNotification[] = [];
  for (const [i, raw] of list.entries()) {
    const note = raw as { Id?: unknown; sObject?: { Id?: unknown; '@type'?: unknown } };
    const id = text(note?.Id);
    const recordId = text(note?.sObject?.Id);
    const type = typeof note?.sObject?.['@type'] === 'string' ? note.sObject['@type'].replace(/^[^:]*:/, '') : null;
    if (!id || !/^[A-Za-z0-9]{15,18}$/.test(id)) return { ok: false, reason: `Notification ${i + 1}: Id is missing or not a record id` };
    if (!recordId || !/^[A-Za-z0-9]{15}([A-Za-z0-9]{3})?$/.test(recordId)) return { ok: false, reason: `Notification ${i + 1}: sObject Id is missing or not a record id` };
    if (!type || !/^[A-Za-z][A-Za-z0-9_]*$/.test(type)) return { ok: false, reason: `Notification ${i + 1}: sObject has no xsi:type naming its object` };
    notifications.push({ id, recordId, objectType: type });
  }
  return { ok: true, orgId, notifications };
}

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const envelope = (body: string) => '<?xml version="1.0" encoding="UTF-8"?>'
  + `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>${body}</soapenv:Body></soapenv:Envelope>`;

/** The answer that tells Salesforce the message is received (it retries anything else for 24 hours). */
export const SOAP_ACK = envelope('<notificationsResponse xmlns="http://soap.sforce.com/2005/09/outbound"><Ack>true</Ack></notificationsResponse>');

/** A SOAP 1.1 fault from the client's side (the message is at fault), with the reason. */
export function soapFault(reason: string): string {
  return envelope(`<soapenv:Fault><faultcode>soapenv:Client</faultcode><faultstring>${escape(reason)}</faultstring></soapenv:Fault>`);
}

export const SOAP_CONTENT_TYPE = 'text/xml; charset=utf-8';
