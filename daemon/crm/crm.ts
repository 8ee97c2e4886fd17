// What a CRM is to the daemon: one folder (crm/<name>/) with its client and pacing, its source (pull + webhook
// verification), its sink (call activities) and its configuration schema, seen by the rest only through this
// interface and the registry.
import type { RedisClient } from '../state/connection.ts';
import type { Logger } from 'pino';
import type { SyncConfig } from '../config.ts';
import type { Metrics } from '../metrics.ts';
import type { Sink } from '../sinks/sink.ts';
import type { Source } from '../sources/source.ts';
import type { DaemonKeys } from '../state/keys.ts';

/** What a CRM's client needs of the daemon: Redis for its shared gates and budgets (named by the keys), logs, metrics. */
export interface CrmContext { redis: RedisClient; keys: DaemonKeys; log: Logger; metrics: Metrics }

export interface Crm {
  /** The `source.type` that selects it in a sync's configuration (its schema, in its config.ts, is listed in schemas.ts). */
  readonly type: string;
  /** Reads the sync's selection and verifies the CRM's webhooks. */
  source(sync: SyncConfig, ctx: CrmContext): Source;
  /** Writes the sync's call activities back into the CRM (`mirror.sink: {type: source}`). */
  sink(sync: SyncConfig, ctx: CrmContext): Sink;
}
