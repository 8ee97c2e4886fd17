// HubSpot's part of a sync's configuration: the account, its budgets, and the selection (filterGroups or a list).
import { z } from 'zod/v4';
import { duration, secret, url } from '../../config-fields.ts';

/**
 * The versions HubSpot publishes the contacts, calls and lists APIs in (its OpenAPI collection): the date-versioned
 * ones, and v3 for the legacy paths. Any other segment is a path HubSpot does not serve.
 */
export const HUBSPOT_API_VERSIONS = ['2025-09', '2026-03', '2026-09', 'v3'] as const;

// HubSpot's Filter takes value, highValue and values as strings: numbers (and booleans) written in the configuration
// are turned into their text here, so every request carries strings.
const filterValue = z.union([z.string(), z.number(), z.boolean()]).transform(String);
const hubspotFilter = z.strictObject({
  propertyName: z.string().min(1),
  operator: z.enum(['EQ', 'NEQ', 'LT', 'LTE', 'GT', 'GTE', 'BETWEEN', 'IN', 'NOT_IN', 'HAS_PROPERTY', 'NOT_HAS_PROPERTY',
    'CONTAINS_TOKEN', 'NOT_CONTAINS_TOKEN']),
  value: filterValue.optional(),
  highValue: z.union([z.string(), z.number()]).transform(String).optional(),
  values: z.array(z.union([z.string(), z.number()]).transform(String)).optional(),
});

export const hubspotSource = z.strictObject({
  type: z.literal('hubspot'),
  baseUrl: url.default('https://api.hubapi.com'),
  accessToken: secret,
  /** The date-versioned path segment of HubSpot's CRM APIs (`/crm/objects/2026-09/...`). */
  apiVersion: z.enum(HUBSPOT_API_VERSIONS, { error: `a version HubSpot publishes these APIs in: ${HUBSPOT_API_VERSIONS.join(', ')} (v3: the legacy paths)` })
    .default('2026-09'),
  /** Verifies X-HubSpot-Signature-v3 on webhooks (the app's client secret). Without it, webhooks are refused. */
  clientSecret: secret.optional(),
  searchPerSecond: z.number().positive().max(50).default(5),
  requestsPer10Seconds: z.number().int().positive().default(100),
  pageSize: z.number().int().min(1).max(200).default(200),
  /** Contacts modified this long before the last run's start are read again (indexing lag, clock skew). */
  overlap: duration.default(300_000),
  selection: z.strictObject({
    /** OR of AND-groups, HubSpot's own filterGroups shape. */
    filterGroups: z.array(z.strictObject({ filters: z.array(hubspotFilter).min(1).max(6) })).max(4).optional(),
    listId: z.string().regex(/^\d+$/, 'a HubSpot list id (digits)').optional(),
  }).refine((s) => !(s.filterGroups && s.listId), 'give filterGroups or listId, not both').default({}),
  /**
   * How often the whole selection is compared with what the daemon holds: what finds contacts that left it or were
   * deleted without a change or a webhook (incremental runs see only changes).
   */
  compareEvery: duration.default(3_600_000),
  /** Properties to read besides those the mapping names. */
  properties: z.array(z.string()).default([]),
});

export type HubSpotConfig = z.output<typeof hubspotSource>;
