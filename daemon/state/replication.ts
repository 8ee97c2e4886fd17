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
/** How much longer than the WAIT an attempt may take before it is given up and sent again. */
const ATTEMPT_SLACK_MS = 4000;
/** The pause before an attempt cut by a failover is sent again, doubling up to RETRY_MAX_MS. */
const RETRY_MS = 100;
const RETRY_MAX_MS = 1000;

/** Errors a failover or a lost connection causes: the same writes succeed once the cluster settles. */
const TRANSIENT = /MOVED|\bASK\b|CLUSTERDOWN|TRYAGAIN|LOADING|READONLY|MASTERDOWN|Connection is closed|connection close|Too many Cluster redirections|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|Failed to refresh slots cache|None of startup nodes|no master is known|timed out/;
const transient = (err: unknown): boolean => TRANSIENT.test(String((err as Error)?.message ?? err));

class AttemptTimeout extends Error {}
async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new AttemptTimeout(`an intent mark's write timed out after ${ms} ms`)), ms); });
  work.catch(() => {}); // given up on: its late failure is no one's
  try { return await Promise.race([work, late]); } finally { clearTimeout(timer); }
}

export class ReplicaAcks {
  private readonly replicas = new Map<string, { count: number; at: number }>();
  /** A key's slot, asked of the cluster once (the daemon writes intents on a few keys, one set per sync). */
  private readonly slots = new Map<string, number>();
  private readonly redis: RedisClient;
  private readonly log: Logger;
  /** Counts the writes that waited for a replica, and for how long (ms): figures for the benchmark and the logs. */
  readonly stats = { waited: 0, waitedMs: 0, unreplicated: 0, retried: 0 };

  constructor(redis: RedisClient, log: Logger) {
    this.redis = redis;
    this.log = log;
  }

  /**
   * Runs `build`'s writes (all on `key`'s slot) and returns their results once a replica of the master holds them,
   * when the master has one. A replica that is connected but does not answer (stalled, or its link about to time out)
   * holds the write back, never lets it through unreplicated: the caller's batch waits rather than risk being sent
   * twice. A master with no replica has nothing to fail over to: its writes count at once (a restart is caught by the
   * run-id check). The writes must be idempotent: a failover can make them run again. `signal` ends the waiting (it
   * throws before the next attempt).
   */
  async write(key: string, build: (p: ChainableCommander) => void, signal?: AbortSignal): Promise<unknown[]> {
    for (let attempt = 0; ; attempt++) {
      // (A writer that gave up, e.g. a lease renewal after its holder stopped, sends nothing more.)
      signal?.throwIfAborted();
      try {
        // A failover can leave a command waiting on a dead master's connection: each attempt is bounded, then retried.
        const results = await withTimeout(this.attempt(key, build, attempt > 0), WAIT_MS + ATTEMPT_SLACK_MS);
        if (results) return results;
        if (attempt % 10 === 0) {
          this.log.warn({ key, waitedMs: (attempt + 1) * WAIT_MS },
            'a replica has not acknowledged an intent mark: the write it guards waits (a failover now would lose the mark)');
        }
      } catch (err) {
        // A pipeline, unlike a single command, is not retried by ioredis when a failover cuts it (MOVED, a closed
        // connection): the writes are idempotent, so they are sent again here, once the cluster's map is renewed.
        if (!transient(err)) throw err;
        this.stats.retried++;
        if (attempt % 10 === 0) this.log.warn({ key, err: (err as Error).message, attempt }, 'an intent mark was cut by a failover or a lost connection: writing it again');
        if (this.redis instanceof Cluster) this.redis.refreshSlotsCache();
        await new Promise((r) => setTimeout(r, Math.min(RETRY_MS * 2 ** Math.min(attempt, 4), RETRY_MAX_MS)));
      }
    }
  }

  /** One try: the writes' results once a replica holds them (or the master has none), null if none acknowledged in time. */
  private async attempt(key: string, build: (p: ChainableCommander) => void, fresh: boolean): Promise<unknown[] | null> {
    const master = await this.masterOf(key);
    const replicas = await this.connectedReplicas(master, fresh);
    // The writes again on each attempt (they are idempotent): after a failover the new master may lack them.
    // WAIT counts the writes of this connection so far; in a cluster the pipeline runs on `key`'s master.
    const p = this.redis.pipeline();
    build(p);
    if (replicas > 0) p.call('WAIT', '1', String(WAIT_MS));
    const started = performance.now();
    const results = await p.exec();
    for (const [err] of results ?? []) if (err) throw err;
    const values = (results ?? []).map(([, v]) => v);
    if (replicas === 0) {
      if (!fresh) this.stats.unreplicated++;
      return values;
    }
    this.stats.waited++;
    this.stats.waitedMs += performance.now() - started;
    return Number(values.pop()) >= 1 ? values : null;
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
    // A cluster whose map names no reachable master for the slot is mid-failover: not a master without replicas.
    if (!node) throw new Error(`no master is known for the slot of an intent mark (${id})`);
    const info = await node.info('replication');
    const count = Number(/connected_slaves:(\d+)/.exec(info)?.[1] ?? 0);
    this.replicas.set(id, { count, at: Date.now() });
    return count;
  }

  private node(master: string | null): Redis | null {
    if (!(this.redis instanceof Cluster)) return this.redis;
    if (!master) return null;
    return this.redis.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === master) ?? null;
  }
}
