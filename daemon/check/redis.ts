// `check` on Redis: reachable, its version (BullMQ's minimum and recommended), persistence (AOF or snapshots: without
// either a restart forgets the queues and every sync's state), noeviction, and for a cluster every slot served.
import { Cluster } from 'ioredis';
import type { Config } from '../config.ts';
import { redisWhere, type RedisClient } from '../state/connection.ts';
import { fail, ok, warn, type CheckResult } from './result.ts';

/** BullMQ refuses a Redis older than this, and recommends this one (its RedisConnection). */
const MINIMUM = [5, 0, 0];
const RECOMMENDED = [6, 2, 0];

function older(version: string, than: number[]): boolean {
  const parts = version.split('.').map(Number);
  for (let i = 0; i < than.length; i++) if ((parts[i] ?? 0) !== than[i]) return (parts[i] ?? 0) < than[i]!;
  return false;
}

/** `INFO` text as fields. */
function infoFields(text: string): Map<string, string> {
  return new Map(text.split(/\r?\n/).filter((l) => l.includes(':') && !l.startsWith('#')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]));
}

/** `reachable`: null, or why Redis did not answer a PING (then nothing else is tried). */
export async function checkRedis(settings: Config['redis'], redis: RedisClient | null, unreachable: string | null): Promise<CheckResult[]> {
  const where = redisWhere(settings);
  if (!redis || unreachable) {
    return [fail(null, 'redis.reachable', unreachable ?? `Redis at ${where} did not answer`,
      `start Redis, or set redis.${settings.cluster?.length ? 'cluster' : 'url'} (and redis.password) to where it runs`)];
  }
  const out: CheckResult[] = [];
  // One node stands for a cluster's configuration (a managed cluster's nodes are configured alike).
  const node = redis instanceof Cluster ? redis.nodes('master')[0] ?? null : redis;
  if (!node) return [fail(null, 'redis.reachable', `the cluster at ${where} has no master node`, 'check redis.cluster and the cluster itself')];
  const server = infoFields(await node.info('server'));
  const version = server.get('redis_version') ?? '?';
  const kind = server.get('valkey_version') ? `Valkey ${server.get('valkey_version')}` : `Redis ${version}`;
  if (older(version, MINIMUM)) out.push(fail(null, 'redis.version', `${kind} at ${where}: BullMQ needs ${MINIMUM.join('.')} or later`, 'upgrade Redis (6.2 or later)'));
  else if (older(version, RECOMMENDED)) out.push(warn(null, 'redis.version', `${kind} at ${where}: BullMQ recommends ${RECOMMENDED.join('.')} or later`, 'upgrade Redis'));
  else out.push(ok(null, 'redis.version', `${kind} at ${where}`));

  const persistence = infoFields(await node.info('persistence'));
  const aof = persistence.get('aof_enabled') === '1';
  // CONFIG may be refused by a managed Redis: INFO still tells AOF.
  const config = async (name: string): Promise<string | null> => {
    try {
      const [, value] = (await node.config('GET', name)) as [string, string];
      return value ?? null;
    } catch {
      return null;
    }
  };
  const save = await config('save');
  const snapshots = save !== null && save.trim() !== '';
  if (aof || snapshots) out.push(ok(null, 'redis.persistence', `persistence: ${[aof ? 'AOF' : '', snapshots ? `snapshots (save ${save ?? '?'})` : ''].filter(Boolean).join(' and ')}`));
  else if (save === null) out.push(warn(null, 'redis.persistence', 'no AOF, and CONFIG GET save was refused (a managed Redis?): snapshots could not be seen', 'make sure the service persists (AOF, or snapshots): a restart without them forgets the queues and each sync\'s state'));
  else out.push(warn(null, 'redis.persistence', 'no persistence (no AOF, no snapshots): a Redis restart forgets queued batches and every sync\'s state, which then costs a full import',
    'turn AOF on (appendonly yes, appendfsync everysec) or snapshots (save 60 1000) in redis.conf'));

  const policy = await config('maxmemory-policy');
  if (policy === null) out.push(warn(null, 'redis.eviction', 'CONFIG GET maxmemory-policy was refused: eviction could not be seen', 'make sure the service uses maxmemory-policy noeviction'));
  else if (policy !== 'noeviction') out.push(fail(null, 'redis.eviction', `maxmemory-policy is ${policy}: under memory pressure Redis may evict queue and sync keys (locks, batches, claims)`, 'set maxmemory-policy noeviction'));
  else out.push(ok(null, 'redis.eviction', 'maxmemory-policy noeviction'));

  if (redis instanceof Cluster) {
    const info = infoFields(String(await redis.cluster('INFO')));
    const slots = Number(info.get('cluster_slots_ok') ?? 0);
    if (info.get('cluster_state') !== 'ok' || slots < 16_384) {
      out.push(fail(null, 'redis.cluster', `cluster_state ${info.get('cluster_state') ?? '?'}, ${slots} of 16384 slots served (pfail ${info.get('cluster_slots_pfail') ?? '?'}, fail ${info.get('cluster_slots_fail') ?? '?'})`,
        'assign every slot to a reachable master (redis-cli --cluster fix), or wait for the failover to finish'));
    } else out.push(ok(null, 'redis.cluster', `cluster ok: 16384 slots served by ${info.get('cluster_size') ?? '?'} masters`));
  }
  return out;
}
