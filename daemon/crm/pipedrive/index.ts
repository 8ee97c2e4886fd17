// Pipedrive as the daemon sees it: persons from a filter, call logs back, webhooks with HTTP Basic credentials.
import type { Crm } from '../crm.ts';
import { checkPipedrive } from './check.ts';
import { PipedriveApi } from './client.ts';
import type { PipedriveConfig } from './config.ts';
import { PipedriveSink } from './sink.ts';
import { PipedriveSource } from './source.ts';

export const pipedrive: Crm = {
  type: 'pipedrive',
  source: (sync, ctx) => new PipedriveSource(sync, ctx.redis, ctx.keys, ctx.log, ctx.metrics),
  sink: (sync, ctx) => new PipedriveSink(new PipedriveApi(sync.source as PipedriveConfig, ctx.redis, ctx.keys, ctx.log, ctx.metrics),
    sync.mirror?.statusProperty ?? null),
  check: checkPipedrive,
  init: {
    source: `    source:
      type: pipedrive
      apiToken: \${PIPEDRIVE_API_TOKEN}       # Pipedrive: Personal preferences > API
      # The HTTP Basic credentials of your Pipedrive webhook (person, *): without them webhooks are refused and
      # changes are read on the schedule only.
      webhookUser: sync-daemon
      webhookPassword: \${PIPEDRIVE_WEBHOOK_PASSWORD}
      baseUrl: {{source.baseUrl}}
      burstPer2Seconds: {{source.burstPer2Seconds}}       # the token's burst limit (Lite 20, Growth 40, Premium 100, Ultimate 120)
      dailyTokens: {{source.dailyTokens}}          # the company's daily token budget (30,000 x plan multiplier x seats)
      pageSize: {{source.pageSize}}
      overlap: {{source.overlap|duration}}
      compareEvery: {{source.compareEvery|duration}}
      # Which persons: every person without a selection, or a filter's (its id is in the filter's URL).
      selection: {}
      # selection: { filterId: 12 }`,
    mapping: `    mapping:
      phone: phones                         # every phone of the person becomes a number of the campaign
      variables: { name: name }
      defaultCountry: US
      # Pipedrive has no Do Not Call field of its own: name your single-option field's key and the option ids
      # that mark a contact (GET /api/v2/personFields lists both), e.g.
      # doNotCall: { field: 5f1c0d9ae7b24c6f8a3e2b1d0c9f8e7a6b5c4d3e, marked: [101] }`,
    minimal: { type: 'pipedrive', apiToken: 'x' },
    env: { PIPEDRIVE_API_TOKEN: 'the API token of the user the daemon acts as', PIPEDRIVE_WEBHOOK_PASSWORD: 'the webhook\'s http_auth_password' },
  },
};
