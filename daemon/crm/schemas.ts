// Each CRM's part of a sync's configuration, as config.ts reads it: its `source` schema and its own Do Not Call field.
// It imports only the CRM folders' config.ts files, so config.ts stays below the CRMs' code (which uses its types);
// what a CRM does (source, sink) is listed in registry.ts.
import { hubspotSource } from './hubspot/config.ts';
import { pipedriveSource } from './pipedrive/config.ts';
import { SALESFORCE_DO_NOT_CALL, salesforceSource } from './salesforce/config.ts';

/** Each CRM's `source` schema (with `type: z.literal(...)`), for the configuration's discriminated union. */
export const crmSchemas = [hubspotSource, pipedriveSource, salesforceSource] as const;

/** The `source.type` of each CRM. */
export const CRM_TYPES: readonly string[] = crmSchemas.map((s) => s.shape.type.value);

/** A CRM's own Do Not Call field, honoured by every sync of it besides `mapping.doNotCall`. */
export const CRM_DO_NOT_CALL: Readonly<Record<string, string>> = { salesforce: SALESFORCE_DO_NOT_CALL };
