// HubSpot as the daemon sees it: contacts from a search or a list, call engagements back, v3-signed webhooks.
import type { Crm } from '../crm.ts';
import { checkHubSpot } from './check.ts';
import { HubSpotApi } from './client.ts';
import type { HubSpotConfig } from './config.ts';
import { HubSpotSink } from './sink.ts';
import { HubSpotSource } from './source.ts';

export const hubspot: Crm = {
  type: 'hubspot',
  source: (sync, ctx) => new HubSpotSource(sync, ctx.redis, ctx.keys, ctx.log, ctx.metrics),
  sink: (sync, ctx) => new HubSpotSink(new HubSpotApi(sync.source as HubSpotConfig, ctx.redis, ctx.keys, ctx.log, ctx.metrics),
    sync.mirror?.dispositions ?? {}, sync.mirror?.statusProperty ?? null),
  check: checkHubSpot,
  init: {
    source: `    source:
      type: hubspot
      # A private app's access token (HubSpot: Settings > Integrations > Private Apps), with the scopes
      # crm.objects.contacts.read, crm.objects.contacts.write (the mirror's calls) and crm.lists.read (a list).
      accessToken: \${HUBSPOT_ACCESS_TOKEN}
      # The app's client secret: verifies HubSpot's webhooks (X-HubSpot-Signature-v3). Without it, webhooks are
      # refused and changes are read on the schedule only.
      clientSecret: \${HUBSPOT_CLIENT_SECRET}
      baseUrl: {{source.baseUrl}}
      apiVersion: "{{source.apiVersion}}"    # the date-versioned paths (/crm/objects/2026-09/...); v3: the legacy ones
      searchPerSecond: {{source.searchPerSecond}}          # the account's search budget (requests a second)
      requestsPer10Seconds: {{source.requestsPer10Seconds}}   # its budget of other requests (per 10 seconds; 190 with the API add-on)
      pageSize: {{source.pageSize}}
      overlap: {{source.overlap|duration}}      # contacts changed this long before the last run are read again
      compareEvery: {{source.compareEvery|duration}}   # the whole selection compared with what the daemon holds (finds deleted contacts)
      # Which contacts: every contact without a selection, or a list (its id is in the list's URL), or filterGroups
      # (HubSpot's search filters, e.g. [{ filters: [{ propertyName: lifecyclestage, operator: EQ, value: lead }] }]).
      selection: {}
      # selection: { listId: "123" }`,
    mapping: `    mapping:
      phone: [phone, mobilephone]           # every non-empty one becomes a number of the campaign
      variables: { firstName: firstname, company: company }   # the campaign's variables, in order
      defaultCountry: US                    # numbers written without a country code
      # HubSpot has no Do Not Call property of its own: name your account's (a yes/no checkbox), e.g.
      # doNotCall: do_not_call
      # Where the callee is, for the calling window (each optional; the number's area code is used too):
      timeZone: hs_timezone
      region: state
      postalCode: zip
      country: country`,
    minimal: { type: 'hubspot', accessToken: 'x' },
    env: { HUBSPOT_ACCESS_TOKEN: 'the private app\'s access token (pat-...)', HUBSPOT_CLIENT_SECRET: 'the app\'s client secret (webhook signatures)' },
  },
};
