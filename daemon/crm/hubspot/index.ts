// HubSpot as the daemon sees it: contacts from a search or a list, call engagements back, v3-signed webhooks.
import type { Crm } from '../crm.ts';
import { HubSpotApi } from './client.ts';
import type { HubSpotConfig } from './config.ts';
import { HubSpotSink } from './sink.ts';
import { HubSpotSource } from './source.ts';

export const hubspot: Crm = {
  type: 'hubspot',
  source: (sync, ctx) => new HubSpotSource(sync, ctx.redis, ctx.keys, ctx.log, ctx.metrics),
  sink: (sync, ctx) => new HubSpotSink(new HubSpotApi(sync.source as HubSpotConfig, ctx.redis, ctx.keys, ctx.log, ctx.metrics),
    sync.mirror?.dispositions ?? {}, sync.mirror?.statusProperty ?? null),
};
