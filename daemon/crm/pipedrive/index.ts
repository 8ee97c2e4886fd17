// Pipedrive as the daemon sees it: persons from a filter, call logs back, webhooks with HTTP Basic credentials.
import type { Crm } from '../crm.ts';
import { PipedriveApi } from './client.ts';
import type { PipedriveConfig } from './config.ts';
import { PipedriveSink } from './sink.ts';
import { PipedriveSource } from './source.ts';

export const pipedrive: Crm = {
  type: 'pipedrive',
  source: (sync, ctx) => new PipedriveSource(sync, ctx.redis, ctx.keys, ctx.log, ctx.metrics),
  sink: (sync, ctx) => new PipedriveSink(new PipedriveApi(sync.source as PipedriveConfig, ctx.redis, ctx.keys, ctx.log, ctx.metrics),
    sync.mirror?.statusProperty ?? null),
};
