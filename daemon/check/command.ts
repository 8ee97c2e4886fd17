// `check --config FILE [--json]`: runs every check once and prints the results (text, or JSON for scripts); its exit
// code is 0 when nothing failed (warnings allowed), 1 otherwise.
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { Metrics } from '../metrics.ts';
import { connectRedis, redisUnreachable, type RedisClient } from '../state/connection.ts';
import { DaemonKeys } from '../state/keys.ts';
import { checkConfig, type CheckReport } from './checks.ts';
import { formatReport } from './report.ts';

/** How long `check` waits for Redis before it says so. */
const REDIS_WAIT_MS = 5000;

/** The checks with a Redis connection of their own (opened only if Redis answers a PING). */
export async function runChecks(config: Config, log: Logger, only?: readonly string[]): Promise<CheckReport> {
  const redisProblem = await redisUnreachable(config.redis, REDIS_WAIT_MS);
  let redis: RedisClient | null = null;
  if (!redisProblem) {
    redis = connectRedis(config.redis);
    redis.on('error', (err) => log.warn({ err: err.message }, 'redis connection error'));
  }
  try {
    return await checkConfig(config, { redis, redisProblem, keys: new DaemonKeys(config.redis.prefix), log, metrics: new Metrics() }, { syncs: only });
  } finally {
    redis?.disconnect();
  }
}

export async function checkCommand(config: Config, log: Logger, json: boolean): Promise<number> {
  const report = await runChecks(config, log);
  console.log(json ? JSON.stringify(report, null, 2) : formatReport(report));
  return report.ok ? 0 : 1;
}
