// The `notify:` block of the configuration: where the daemon sends its alerts (Slack's incoming webhooks, signed JSON
// to any receiver), how often a firing alert is repeated, how many failed runs in a row make one, how often it looks.
import { z } from 'zod/v4';
import { duration, secret, url } from '../config-fields.ts';

/** The docs an alert links to when `docsUrl` is not set: the repository's docs folder. */
export const DOCS_URL = 'https://github.com/campaign-dialing/n8n-nodes-campaign-dialing/blob/main/docs';

/** A Standard Webhooks secret (`whsec_` and base64), or any other text used as its bytes, as the daemon's other secrets. */
const whsec = secret.refine((s) => !s.startsWith('whsec_') || /^whsec_[A-Za-z0-9+/]{16,}={0,2}$/.test(s),
  'a Standard Webhooks secret: whsec_ and at least 16 base64 characters (use ${ENV_NAME})');

const destination = z.discriminatedUnion('type', [
  /** A Slack incoming webhook (its URL is the secret: give it as ${ENV_NAME}). */
  z.strictObject({ type: z.literal('slack'), url }),
  /** Any receiver: JSON signed as Standard Webhooks with `secret`. */
  z.strictObject({ type: z.literal('webhook'), url, secret: whsec }),
], { error: (issue) => issue.code === 'invalid_union' ? 'type must be one of slack, webhook' : undefined });

export const notifySchema = z.strictObject({
  to: z.array(destination).min(1, 'at least one destination: { type: slack, url } or { type: webhook, url, secret }'),
  /** A firing alert's message is sent again this often while it lasts. */
  repeatEvery: duration.refine((ms) => ms >= 1000, 'at least 1s').default(4 * 3_600_000),
  /** Runs of a sync failing in a row before it notifies. */
  runsFailing: z.number().int().min(1).max(50).default(3),
  /** How often one process looks at what fires. */
  checkEvery: duration.refine((ms) => ms >= 1000, 'at least 1s').default(30_000),
  /** Where the docs live, for the link each message carries (your own copy's address, say). */
  docsUrl: url.default(DOCS_URL),
});

export type NotifyConfig = z.output<typeof notifySchema>;
export type Destination = NotifyConfig['to'][number];

/**
 * Whether a configuration path is a notify URL: it may hold a secret (a Slack webhook's path is its token), so an
 * error never shows its value.
 */
export function notifySecretPath(path: readonly PropertyKey[]): boolean {
  return path[0] === 'notify' && path.at(-1) === 'url';
}
