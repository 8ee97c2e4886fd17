// What the HTTP side (webhooks, /health, /metrics, /ops) reads and triggers of a running daemon. app.ts's Daemon is
// one; the HTTP modules import this, never app.ts, so the file that wires the daemon imports them and none imports it.
import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { History } from '../history/history.ts';
import type { Metrics } from '../metrics.ts';
import type { MirrorRuntime } from '../mirror/mirror.ts';
import type { PushQueue } from '../push/push-queue.ts';
import type { SyncJobData } from '../schedules.ts';
import type { RedisClient } from '../state/connection.ts';
import type { SyncRuntime } from '../sync/run.ts';

export interface RunningDaemon {
  readonly config: Config;
  readonly log: Logger;
  readonly redis: RedisClient;
  readonly metrics: Metrics;
  readonly history: History;
  readonly syncQueue: Queue<SyncJobData>;
  readonly pushQueues: Map<string, PushQueue>;
  readonly runtimes: Map<string, SyncRuntime>;
  /** Where the daemon's Redis is (the URL or the cluster's seed nodes, without credentials), for messages. */
  readonly redisWhere: string;
  /** Null while the Redis connection is up; else what is wrong, where, and that the daemon keeps trying. */
  redisProblem(): string | null;
  /** The mirrors of a sync: its own, or one per route of a routed sync (in route order); none without a mirror. */
  mirrorsOf(syncId: string): MirrorRuntime[];
  /** Queues a run of the sync (see Daemon.triggerPull). */
  triggerPull(syncId: string, trigger: string, full?: boolean, read?: 'pull' | 'compare' | 'inbox'): Promise<void>;
  /** Queues a mirror run of the sync. */
  triggerMirror(syncId: string, trigger: string, since?: string): Promise<void>;
}
