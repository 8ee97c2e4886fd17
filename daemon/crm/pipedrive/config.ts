// Pipedrive's part of a sync's configuration: the API token, its burst and daily token budget, the filter, webhooks.
import { z } from 'zod/v4';
import { duration, secret, url } from '../../config-fields.ts';

export const pipedriveSource = z.strictObject({
  type: z.literal('pipedrive'),
  baseUrl: url.default('https://api.pipedrive.com'),
  apiToken: secret,
  /** Requests per rolling 2 s for the API token (Lite 20, Growth 40, Premium 100, Ultimate 120). */
  burstPer2Seconds: z.number().int().positive().default(20),
  /** The company's daily token budget (30,000 × plan multiplier × seats); the daemon stops reading at it. */
  dailyTokens: z.number().int().positive().default(30_000),
  pageSize: z.number().int().min(1).max(500).default(500),
  overlap: duration.default(300_000),
  selection: z.strictObject({ filterId: z.number().int().positive().optional() }).default({}),
  /**
   * How often the whole selection is compared with what the daemon holds: what finds contacts that left it or were
   * deleted without a change or a webhook (incremental runs see only changes).
   */
  compareEvery: duration.default(3_600_000),
  /** HTTP Basic credentials Pipedrive sends with webhooks (http_auth_user / http_auth_password). */
  webhookUser: z.string().min(1).optional(),
  webhookPassword: secret.optional(),
});

export type PipedriveConfig = z.output<typeof pipedriveSource>;
