// The container engine this machine has, and how this project runs it: podman by default (with the project's
// containers.conf: runc, explicit ulimits), docker when podman is missing and a docker daemon answers. Used by
// `./dev image`, the image and compose tests, and nothing else.
import { execFileSync, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** podman's settings for this project (packaging/containers.conf), given to podman and podman-compose alike. */
export const CONTAINERS_CONF = join(ROOT, 'packaging/containers.conf');

export interface Engine {
  name: 'podman' | 'docker';
  /** The environment every call of the engine (and of its compose) runs with. */
  env: NodeJS.ProcessEnv;
  /** The compose command: podman-compose (Debian's) for podman, `docker compose` for docker; null when missing. */
  compose: string[] | null;
}

const onPath = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

/** The engine to use, or null: `CONTAINER_ENGINE=podman|docker` chooses; else podman, else a docker that answers. */
export function findEngine(): Engine | null {
  const wanted = process.env.CONTAINER_ENGINE;
  if (wanted && wanted !== 'podman' && wanted !== 'docker') throw new Error(`CONTAINER_ENGINE is podman or docker, not ${wanted}`);
  if ((!wanted || wanted === 'podman') && onPath('podman')) {
    return { name: 'podman', env: { ...process.env, CONTAINERS_CONF }, compose: onPath('podman-compose') ? ['podman-compose'] : null };
  }
  if ((!wanted || wanted === 'docker') && onPath('docker') && spawnSync('docker', ['info'], { stdio: 'ignore' }).status === 0) {
    return { name: 'docker', env: process.env, compose: spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0 ? ['docker', 'compose'] : null };
  }
  return null;
}

/** Runs the engine; its output as text (throws with stderr on a non-zero exit). */
export function engineRun(engine: Engine, args: string[], options: { input?: string | Buffer; inherit?: boolean } = {}): string {
  return execFileSync(engine.name, args, {
    env: engine.env, encoding: 'utf8', input: options.input, maxBuffer: 64 * 1024 * 1024,
    stdio: [options.input === undefined ? 'ignore' : 'pipe', options.inherit ? 'inherit' : 'pipe', options.inherit ? 'inherit' : 'pipe'],
  }) ?? '';
}

/** Runs the engine without throwing: status, stdout, stderr. */
export function engineTry(engine: Engine, args: string[]): SpawnSyncReturns<string> {
  return spawnSync(engine.name, args, { env: engine.env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

export function imageExists(engine: Engine, image: string): boolean {
  return engineTry(engine, engine.name === 'podman' ? ['image', 'exists', image] : ['image', 'inspect', image]).status === 0;
}

/** The images' names and the base they are built on, for one version. */
export const IMAGES = ['campaign-sync', 'campaign-dialing-server'] as const;
export type ImageName = (typeof IMAGES)[number];
/** The official images' full names: one made here is tagged so, and FROM (or compose) finds it without a registry. */
export const DEFAULT_BASE = 'docker.io/library/node:24-bookworm-slim';
export const DEBIAN_BASE = 'docker.io/library/debian:bookworm-slim';
/** The Redis deploy/compose.yaml runs: 7.0 is Debian bookworm's, which a stand-in made here carries. */
export const REDIS_IMAGE = 'docker.io/library/redis:7.0-bookworm';
/** The Prometheus deploy/compose.yaml runs beside the daemon (its alert rules): 2.42 is Debian bookworm's. */
export const PROMETHEUS_IMAGE = 'docker.io/prom/prometheus:v2.42.0';
