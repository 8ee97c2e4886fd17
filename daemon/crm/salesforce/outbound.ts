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
  | { ok: false; status: 400 | 401 | 413; reason: string };

/** Salesforce sends at most 100 notifications in one message. */
const MAX_NOTIFICATIONS = 100;
/**
 * What a message may hold before it is parsed: tags (start and end tags counted apart: 100 notifications of about 45
 * fields each) and attributes (namespaces, xsi:type, xsi:nil). Parsing costs some 35 µs a tag or attribute on a
 * 2-core box at load 20: the caps hold a message of the configured org to 0.6–1.1 s there, where 60,000 attributes
 * took several seconds; a message of another org stops at the scan (a few tens of ms for the largest).
 */
export const MAX_TAGS = 10_000;
export const MAX_ATTRIBUTES = 5_000;
const MAX_ATTRIBUTES_PER_TAG = 16;
const ORG_ID = /^00D[A-Za-z0-9]{12}([A-Za-z0-9]{3})?$/;
/** A tag's (prefix and) local name, read where a tag opens. */
const TAG_NAME = /(?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)/y;

/**
 * One pass over the text, no tree: counts tags and attributes (refusing past the caps) and collects what every
 * OrganizationId element says, so a message from another org or of a hostile size costs a scan, never a parse.
 */
function prescan(xml: string): { orgIds: string[] } | { reason: string } {
  let tags = 0;
  let attributes = 0;
  let inTag = 0;
  let quote = 0;
  let orgTag = false;
  const orgIds: string[] = [];
  // Conservative on purpose: every '<' is a tag (XML allows none in text or attribute values), every '=' inside a
  // tag an attribute (quoted or not), so no quoting or comment can hide markup from the count.
  for (let i = 0; i < xml.length; i++) {
    const c = xml.charCodeAt(i);
    if (c === 60 /* < */) {
      if (++tags > MAX_TAGS) return { reason: `more than ${MAX_TAGS} tags: not an Outbound Message (select fewer fields in it: the daemon reads only the record's Id)` };
      inTag = 1;
      quote = 0;
      TAG_NAME.lastIndex = i + 1;
      orgTag = TAG_NAME.exec(xml)?.[1] === 'OrganizationId';
    } else if (!inTag) {
      continue;
    } else if (c === 61 /* = */) {
      if (++attributes > MAX_ATTRIBUTES) return { reason: `more than ${MAX_ATTRIBUTES} attributes: not an Outbound Message` };
      if (++inTag > MAX_ATTRIBUTES_PER_TAG + 1) return { reason: `an element with more than ${MAX_ATTRIBUTES_PER_TAG} attributes: not an Outbound Message` };
    } else if (quote) {
      if (c === quote) quote = 0;
    } else if (c === 34 || c === 39) {
      quote = c;
    } else if (c === 62 /* > */) {
      inTag = 0;
      if (orgTag && xml.charCodeAt(i - 1) !== 47 /* / */) {
        const end = xml.indexOf('<', i + 1);
        orgIds.push(xml.slice(i + 1, end < 0 ? xml.length : end).trim());
      }
      orgTag = false;
    }
  }
  return { orgIds };
}

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

/**
 * Parses a notifications message from the org `ours` accepts; anything not shaped like one is refused (400), a
 * message of another org too (401). The cheap refusals (size, document type, tag and attribute counts, another
 * org's id) come before the parse, so a hostile body costs a scan.
 */
export function parseOutboundMessage(raw: Buffer, maxBytes: number, ours: (orgId: string) => boolean): OutboundParse {
  const bad = (reason: string): OutboundParse => ({ ok: false, status: 400, reason });
  if (raw.length === 0) return bad('empty body: expected a SOAP notifications message');
  if (raw.length > maxBytes) return { ok: false, status: 413, reason: `message of ${raw.length} bytes is larger than maxOutboundBytes (${maxBytes})` };
  const xml = raw.toString('utf8');
  // A notifications message never declares a document type: refusing one keeps entity definitions out entirely.
  if (xml.includes('<!DOCTYPE') || xml.includes('<!ENTITY')) return bad('a document type declaration is not allowed in an Outbound Message');
  const scan = prescan(xml);
  if ('reason' in scan) return bad(scan.reason);
  const foreign = (orgId: string): OutboundParse | null => {
    if (!ORG_ID.test(orgId)) return bad('OrganizationId is missing or not an org id (00D…)');
    return ours(orgId) ? null : { ok: false, status: 401, reason: `OrganizationId ${orgId} is not this sync's org` };
  };
  // Every OrganizationId the scan saw must be ours; a message with none is parsed (within the caps) to say what it lacks.
  for (const orgId of scan.orgIds) {
    const refused = foreign(orgId);
    if (refused) return refused;
  }
  const valid = XMLValidator.validate(xml);
  if (valid !== true) return bad(`not well-formed XML: ${valid.err.msg} (line ${valid.err.line})`);
  let doc: any;
  try {
    doc = parser.parse(xml);
  } catch (err) {
    return bad(`not well-formed XML: ${(err as Error).message}`);
  }
  const body = doc?.Envelope?.Body;
  const n = body?.notifications;
  if (!body || !n || typeof n !== 'object') return bad('not a SOAP Envelope whose Body holds notifications (http://soap.sforce.com/2005/09/outbound)');
  const orgId = text(n.OrganizationId);
  if (!orgId) return bad('OrganizationId is missing or not an org id (00D…)');
  const refused = foreign(orgId);
  if (refused) return refused;
  const list: unknown[] = Array.isArray(n.Notification) ? n.Notification : [];
  if (list.length === 0) return bad('no Notification in the message');
  if (list.length > MAX_NOTIFICATIONS) return bad(`${list.length} notifications; Salesforce sends at most ${MAX_NOTIFICATIONS}`);
  const notifications: OutboundNotification[] = [];
  for (const [i, raw] of list.entries()) {
    const note = raw as { Id?: unknown; sObject?: { Id?: unknown; '@type'?: unknown } };
    const id = text(note?.Id);
    const recordId = text(note?.sObject?.Id);
    const type = typeof note?.sObject?.['@type'] === 'string' ? note.sObject['@type'].replace(/^[^:]*:/, '') : null;
    if (!id || !/^[A-Za-z0-9]{15,18}$/.test(id)) return bad(`Notification ${i + 1}: Id is missing or not a record id`);
    if (!recordId || !/^[A-Za-z0-9]{15}([A-Za-z0-9]{3})?$/.test(recordId)) return bad(`Notification ${i + 1}: sObject Id is missing or not a record id`);
    if (!type || !/^[A-Za-z][A-Za-z0-9_]*$/.test(type)) return bad(`Notification ${i + 1}: sObject has no xsi:type naming its object`);
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
