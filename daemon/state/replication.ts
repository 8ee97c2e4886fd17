// Intent marks that reach a replica before what they guard leaves: a batch in flight, an activity pending. Redis
// replicates asynchronously, so a master can acknowledge a mark and die before its replica has it; the replica, promoted,
// then shows the batch unmarked and another process sends it again. WAIT makes the mark durable first.
import { Cluster, type ChainableCommander, type Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisClient } from './connection.ts';

/** How long one WAIT blocks before the master's replicas are counted again. */
const WAIT_MS = 1000;
/** How long a master's count of connected replicas is trusted. */
const REPLICAS_TTL_MS = 2000;

export class ReplicaAcks {
  private readonly replicas = new Map<string, { count: number; at: number }>();
  /** A key's slot, asked of the cluster once (the daemon writes intents on a few keys, one set per sync). */
  private readonly slots = new Map<string, number>();
  private readonly redis: RedisClient;
  private readonly log: Logger;
  /** Counts the writes that waited for a replica, and for how long (ms): figures for the benchmark and the logs. */
  readonly stats = { waited: 0, waitedMs: 0, unreplicated: 0 };

  constructor(redis: RedisClient, log: Logger) {
    this.redis = redis;
    this.log = log;
  }

  /**
   * Runs `build`'s writes (all on `key`'s slot) and returns once a replica of the master holds them, when the master
   * has one. A replica that is connected but does not answer (stalled, or its link about to time out) holds the write
   * back, never lets it through unreplicated: the caller's batch waits rather than risk being sent twice. A master with
   * no replica has nothing to fail over to: its writes count at once (a restart is caught by the run-id check).
   */
  async write(key: string, build: (p: ChainableCommander) => void): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const master = await this.masterOf(key);
      const replicas = await this.connectedReplicas(master, attempt > 0);
      // The writes again on each attempt (they are idempotent): after a failover the new master may lack them.
      // WAIT counts the writes of this connection so far; in a cluster the pipeline runs on `key`'s master.
      const p = this.redis.pipeline();
      build(p);
      if (replicas > 0) p.call('WAIT', '1', String(WAIT_MS));
      const started = performance.now();
      const results = await p.exec();
      for (const [err] of results ?? []) if (err) throw err;
      if (replicas === 0) {
        if (attempt === 0) this.stats.unreplicated++;
        return;
      }
      const acked = Number(results!.at(-1)![1]);
      this.stats.waited++;
      this.stats.waitedMs += performance.now() - started;
      if (acked >= 1) return;
      if (attempt % 10 === 0) {
        this.log.warn({ key, master: master ?? 'single', waitedMs: (attempt + 1) * WAIT_MS },
          'a replica has not acknowledged an intent mark: the write it guards waits (a failover now would lose the mark)');
      }
    }
  }

  /** The node key (host:port) of the master serving `key`'s slot; null on a single Redis. */
  private async masterOf(key: string): Promise<string | null> {
    if (!(this.redis instanceof Cluster)) return null;
    let slot = this.slots.get(key);
    if (slot === undefined) {
      slot = Number(await this.redis.cluster('KEYSLOT', key));
      this.slots.set(key, slot);
    }
    return this.redis.slots[slot]?.[0] ?? null;
  }

  private async connectedReplicas(master: string | null, fresh: boolean): Promise<number> {
    const id = master ?? 'single';
    const known = this.replicas.get(id);
    if (known && !fresh && Date.now() - known.at < REPLICAS_TTL_MS) return known.count;
    const node = this.node(master);
    let count = 0;
    if (node) {
      const info = await node.info('replication');
      count = Number(/connected_slaves:(\d+)/.exec(info)?.[1] ?? 0);
    }
    this.replicas.set(id, { count, at: Date.now() });
    return count;
  }

  private node(master: string | null): Redis | null {
    if (!(this.redis instanceof Cluster)) return this.redis;
    if (!master) return null;
    return this.redis.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === master) ?? null;
  }
}
