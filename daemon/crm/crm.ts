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
import type { CheckResult } from '../check/result.ts';

/** What a CRM's client needs of the daemon: Redis for its shared gates and budgets (named by the keys), logs, metrics. */
export interface CrmContext { redis: RedisClient; keys: DaemonKeys; log: Logger; metrics: Metrics }

export interface Crm {
  /** The `source.type` that selects it in a sync's configuration (its schema, in its config.ts, is listed in schemas.ts). */
  readonly type: string;
  /** Reads the sync's selection and verifies the CRM's webhooks. */
  source(sync: SyncConfig, ctx: CrmContext): Source;
  /** Writes the sync's call activities back into the CRM (`mirror.sink: {type: source}`). */
  sink(sync: SyncConfig, ctx: CrmContext): Sink;
  /**
   * `check`: tries read-only and cheaply (a few requests) what the sync needs of the CRM: the token or login, the
   * permissions for its reads and its mirror's writes, the selection, and every mapped field (exists, with a type the
   * mapping reads). A result that `refuses` makes `start` refuse the sync (see check/result.ts).
   */
  check(sync: SyncConfig, ctx: CrmContext): Promise<CheckResult[]>;
  /** What `init --source <type>` writes for it: the sync's source block and mapping, commented, secrets as ${ENV}. */
  readonly init: CrmTemplate;
}

/**
 * A CRM's part of a generated configuration (YAML, indented for a sync's keys) and the environment variables it names.
 * `{{source.<key>}}` (`|duration`: as 5m, 1h) is the value the source schema gives `minimal` for that key: the
 * defaults are spelled out as the schema has them.
 */
export interface CrmTemplate {
  source: string;
  mapping: string;
  /** The least source block the CRM's schema takes. */
  minimal: Record<string, unknown>;
  /** ENV_NAME → what to put in it. */
  env: Record<string, string>;
}
