// The CRMs the daemon speaks: adding one is adding its folder and its entry in both lists here.
import type { Crm } from './crm.ts';
import { hubspotSource } from './hubspot/config.ts';
import { hubspot } from './hubspot/index.ts';
import { pipedriveSource } from './pipedrive/config.ts';
import { pipedrive } from './pipedrive/index.ts';
import { salesforceSource } from './salesforce/config.ts';
import { salesforce } from './salesforce/index.ts';

/** Each CRM's `source` schema (with `type: z.literal(...)`), for the configuration's discriminated union. */
export const crmSchemas = [hubspotSource, pipedriveSource, salesforceSource] as const;

export const CRMS: readonly Crm[] = [hubspot, pipedrive, salesforce];

export function crmOf(type: string): Crm | null {
  return CRMS.find((c) => c.type === type) ?? null;
}
