// The daemon's Redis: one server (`redis.url`) or a Redis Cluster (`redis.cluster`), as ioredis connects to either.
// Every key the daemon and its queues write carries a hash tag (keys.ts), so the same code runs on both.
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';

export type RedisClient = Redis | Cluster;

export interface RedisConfig {
  url?: string;
  /** Seed nodes of a cluster (redis:// or rediss:// URLs); ioredis finds the rest. */
  cluster?: string[];
  /** A cluster behind NAT (a managed service): the address each node announces, mapped to one this process can reach. */
  natMap?: Record<string, { host: string; port: number }>;
  password?: string;
  username?: string;
  tls?: boolean;
}

/** BullMQ's workers wait for Redis forever (maxRetriesPerRequest null), so a Redis restart or failover pauses them. */
export function connectRedis(config: RedisConfig): RedisClient {
  const tls = config.tls ?? (config.cluster ?? [config.url ?? '']).some((u) => u.startsWith('rediss:'));
  const auth: RedisOptions = {
    maxRetriesPerRequest: null,
    ...(config.password ? { password: config.password } : {}),
    ...(config.username ? { username: config.username } : {}),
    ...(tls && config.cluster?.length ? { tls: {} } : {}),
  };
  // A rediss:// URL makes ioredis use TLS by itself.
  if (!config.cluster?.length) return new Redis(config.url ?? 'redis://127.0.0.1:6379', { ...auth, ...(config.tls ? { tls: {} } : {}) });
  const nodes = config.cluster.map((u) => {
    const url = new URL(u);
    return { host: url.hostname, port: Number(url.port || 6379) };
  });
  const options: ClusterOptions = {
    redisOptions: auth,
    ...(config.natMap ? { natMap: config.natMap } : {}),
    // TLS endpoints of managed clusters present certificates for their DNS names, not the node IPs they announce.
    ...(tls ? { dnsLookup: (address, callback) => callback(null, address) } : {}),
    // A failover moves slots: commands wait for the new master instead of failing.
    retryDelayOnFailover: 300,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 300,
  };
  return new Cluster(nodes, options);
}

/** The masters' run ids (one server's, or each master's of a cluster): a change means a restart or a failover. */
export async function serverRunIds(redis: RedisClient): Promise<string> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  const ids = await Promise.all(nodes.map(async (n) => /run_id:(\w+)/.exec(await n.info('server'))?.[1] ?? ''));
  return ids.sort().join(',');
}

/** Where the daemon looks for Redis, for messages: the URL or the seed nodes, without user name or password. */
export function redisWhere(config: RedisConfig): string {
  const bare = (u: string) => {
    try {
      const url = new URL(u);
      return `${url.protocol}//${url.host}`;
    } catch {
      return 'an unparsable URL';
    }
  };
  return config.cluster?.length ? `the cluster ${config.cluster.map(bare).join(', ')}` : bare(config.url ?? 'redis://127.0.0.1:6379');
}

/**
 * Null when Redis answers a PING within `timeoutMs` on a connection of its own, else why not: the connection's first
 * error (refused, unknown host, wrong password) at once, or the silence. The daemon's own connections wait for Redis
 * for ever (see connectRedis), which is right for a running daemon but leaves a one-shot command hanging, mute.
 */
export async function redisUnreachable(config: RedisConfig, timeoutMs: number): Promise<string | null> {
  const probe = connectRedis(config);
  probe.on('error', () => {}); // the first one is the answer below; the ones until disconnect say nothing more
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      probe.ping().then(() => null, (err: Error) => `Redis at ${redisWhere(config)} refused: ${err.message}`),
      new Promise<string>((r) => probe.once('error', (err: Error) => r(`Redis at ${redisWhere(config)} is unreachable: ${err.message}`))),
      new Promise<string>((r) => { timer = setTimeout(() => r(`Redis at ${redisWhere(config)} did not answer within ${Math.round(timeoutMs / 1000)} s`), timeoutMs); }),
    ]);
  } finally {
    clearTimeout(timer);
    probe.disconnect();
  }
}
