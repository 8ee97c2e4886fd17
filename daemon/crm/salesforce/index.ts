// Salesforce as the daemon sees it: Campaign members or a SOQL selection of Leads and Contacts, calls back as Tasks,
// Outbound Messages as its webhooks.
import type { Crm } from '../crm.ts';
import { SalesforceApi } from './client.ts';
import type { SalesforceConfig } from './config.ts';
import { SalesforceSink } from './sink.ts';
import { SalesforceSource } from './source.ts';

export const salesforce: Crm = {
  type: 'salesforce',
  source: (sync, ctx) => new SalesforceSource(sync, new SalesforceApi(sync.source as SalesforceConfig, ctx)),
  sink: (sync, ctx) => new SalesforceSink(new SalesforceApi(sync.source as SalesforceConfig, ctx),
    sync.mirror?.dispositions ?? {}, sync.mirror?.statusProperty ?? null),
};
