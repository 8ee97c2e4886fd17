// Salesforce as the daemon sees it: Campaign members or a SOQL selection of Leads and Contacts, calls back as Tasks,
// Outbound Messages as its webhooks.
import type { Crm } from '../crm.ts';
import { checkSalesforce } from './check.ts';
import { SalesforceApi } from './client.ts';
import type { SalesforceConfig } from './config.ts';
import { SalesforceSink } from './sink.ts';
import { SalesforceSource } from './source.ts';

export const salesforce: Crm = {
  type: 'salesforce',
  source: (sync, ctx) => new SalesforceSource(sync, new SalesforceApi(sync.source as SalesforceConfig, ctx)),
  sink: (sync, ctx) => new SalesforceSink(new SalesforceApi(sync.source as SalesforceConfig, ctx),
    sync.mirror?.dispositions ?? {}, sync.mirror?.statusProperty ?? null),
  check: checkSalesforce,
  init: {
    source: `    source:
      type: salesforce
      loginUrl: {{source.loginUrl}}   # https://test.salesforce.com for a sandbox, or your My Domain URL
      apiVersion: "{{source.apiVersion}}"
      clientId: your-consumer-key              # the External Client App's (or connected app's) consumer key
      auth:
        flow: client_credentials               # the app runs as its run-as user; or jwt_bearer with username and privateKey
        clientSecret: \${SALESFORCE_CLIENT_SECRET}
      # orgId: 00D000000000000                 # the org's id: Outbound Messages from any other org are refused (without it, all are)
      requestsPerSecond: {{source.requestsPerSecond}}
      reserveShare: {{source.reserveShare}}     # the share of the daily API allowance left to the org's other integrations
      batchSize: {{source.batchSize}}
      overlap: {{source.overlap|duration}}
      compareEvery: {{source.compareEvery|duration}}
      # Which people: a Campaign's members (its id, 701..., is in its URL), or records of one object:
      # selection: { object: Contact, where: "LeadSource = 'Web'" }
      selection: { campaignId: "701000000000000" }   # your Campaign's id
      # taskExternalIdField: Dialer_Call_Id__c   # a Task field marked External ID: calls are upserted on it`,
    mapping: `    mapping:
      phone: [Phone, MobilePhone]           # fields on both Contact and Lead for a Campaign's members
      variables: { firstName: FirstName, lastName: LastName }
      defaultCountry: US
      # DoNotCall (Salesforce's own) is always honoured; doNotCall names another field to honour besides it.`,
    minimal: { type: 'salesforce', clientId: 'x', auth: { flow: 'client_credentials', clientSecret: 'x' }, selection: { object: 'Contact' } },
    env: { SALESFORCE_CLIENT_SECRET: 'the app\'s consumer secret' },
  },
};
