// The CRMs the daemon speaks: adding one is adding its folder, its entry here and its schema in schemas.ts (which
// config.ts reads: the configuration sits below the CRMs' code, so that code may use its types).
import type { Crm } from './crm.ts';
import { hubspot } from './hubspot/index.ts';
import { pipedrive } from './pipedrive/index.ts';
import { salesforce } from './salesforce/index.ts';

export const CRMS: readonly Crm[] = [hubspot, pipedrive, salesforce];

export function crmOf(type: string): Crm | null {
  return CRMS.find((c) => c.type === type) ?? null;
}
