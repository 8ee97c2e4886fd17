// Salesforce's part of a sync's configuration: the org and how the daemon signs in, the selection (a Campaign's
// members or a SOQL WHERE over Contact or Lead), the share of the daily API allowance left to others, the Task field.
import { z } from 'zod/v4';
import { duration, secret, url } from '../../config-fields.ts';

/** Salesforce's own Do Not Call checkbox (Lead and Contact): every Salesforce sync honours it, besides mapping.doNotCall. */
export const SALESFORCE_DO_NOT_CALL = 'DoNotCall';

/** A Salesforce record id: 15 characters (case-sensitive) or 18 (with the case-safe suffix). */
const recordId = (prefix: string, what: string) =>
  z.string().regex(new RegExp(`^${prefix}[A-Za-z0-9]{${15 - prefix.length}}([A-Za-z0-9]{3})?$`), `${what}: a Salesforce id of 15 or 18 characters starting with ${prefix}`);

/** A field's API name (Phone, Secondary_Phone__c); checked because it is written into SOQL. */
const fieldName = z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,79}$/, 'a field API name such as Phone or Dialer_Call_Id__c');

const clientCredentials = z.strictObject({
  /** OAuth 2.0 client credentials flow: the External Client App (or connected app) runs as its configured user. */
  flow: z.literal('client_credentials'),
  clientSecret: secret,
});

const jwtBearer = z.strictObject({
  /** OAuth 2.0 JWT bearer flow: an RS256 assertion signed with the certificate's private key, for `username`. */
  flow: z.literal('jwt_bearer'),
  username: z.string().min(1),
  /** The PEM private key (give it as ${ENV_NAME}; never in the file). */
  privateKey: secret.refine((k) => k.includes('PRIVATE KEY'), 'a PEM private key (-----BEGIN PRIVATE KEY-----…), from ${ENV_NAME}'),
  /** The JWT audience: https://login.salesforce.com, https://test.salesforce.com, or the My Domain login URL. Default: loginUrl. */
  audience: url.optional(),
});

export const salesforceSource = z.strictObject({
  type: z.literal('salesforce'),
  /** Where tokens are asked for: https://login.salesforce.com, https://test.salesforce.com (sandboxes) or a My Domain URL. */
  loginUrl: url.default('https://login.salesforce.com'),
  /** The REST API version (`/services/data/v62.0/…`). */
  apiVersion: z.string().regex(/^\d{2,3}\.0$/, 'a version such as 62.0').default('62.0'),
  /** The app's consumer key. */
  clientId: z.string().min(1),
  auth: z.discriminatedUnion('flow', [clientCredentials, jwtBearer], {
    error: (issue) => issue.code === 'invalid_union' ? 'flow must be client_credentials or jwt_bearer' : undefined,
  }),
  /** The org's id (00D…): Outbound Messages from any other org are refused. Without it, Outbound Messages are refused. */
  orgId: recordId('00D', 'orgId').optional(),
  /**
   * Requests per second, across every process using this org, on average (Salesforce limits concurrency and the daily
   * total, not the rate; this is politeness): after a pause, a tenth of a second's worth may go at once.
   */
  requestsPerSecond: z.number().positive().max(100).default(20),
  /**
   * The share of the daily API allowance left to the org's other integrations: reading stops (the run fails and the
   * next schedule resumes) once no more than this share of the allowance remains.
   */
  reserveShare: z.number().min(0).max(0.95).default(0.2),
  /** Records a query page asks for (Sforce-Query-Options batchSize, 200–2,000; Salesforce may answer fewer). */
  batchSize: z.number().int().min(200).max(2000).default(2000),
  /** Records modified this long before the last run's start are read again (clock skew, long transactions). */
  overlap: duration.default(300_000),
  /**
   * How often the whole selection is compared with what the daemon holds: what finds members removed from the
   * campaign, and records that stopped matching or were deleted, when no change of theirs says so.
   */
  compareEvery: duration.default(3_600_000),
  selection: z.strictObject({
    /** The members of this Campaign (its Leads and Contacts). */
    campaignId: recordId('701', 'campaignId').optional(),
    /** Only members with these member statuses (CampaignMember.Status), e.g. ["Sent", "Planned"]. */
    memberStatuses: z.array(z.string().min(1).max(255)).min(1).optional(),
    /** Or: records of this object matching `where` (a SOQL condition, e.g. "LeadSource = 'Web' AND State = 'CA'"). */
    object: z.enum(['Contact', 'Lead']).optional(),
    where: z.string().min(1).max(4000).optional(),
  }).refine((s) => (s.campaignId === undefined) !== (s.object === undefined), 'give either campaignId (a Campaign\'s members) or object (Contact or Lead, with an optional where)')
    .refine((s) => !(s.memberStatuses && !s.campaignId), 'memberStatuses applies to campaignId selections only')
    .refine((s) => !(s.where && !s.object), 'where applies to object selections (object: Contact or Lead)'),
  /** Fields to read besides those the mapping names. */
  fields: z.array(fieldName).default([]),
  /** Task's external-ID field (e.g. Dialer_Attempt_Key__c): calls are upserted on it. Without it, calls are inserted and found again by CallObject. */
  taskExternalIdField: fieldName.optional(),
  /** Largest Outbound Message accepted (bytes). */
  maxOutboundBytes: z.number().int().min(1024).max(10 * 1024 * 1024).default(1024 * 1024),
});

export type SalesforceConfig = z.output<typeof salesforceSource>;
