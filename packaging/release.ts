// `./dev release`: one npm tarball per shipped part in release/, all of one version (the root package.json's):
// campaign-sync (the daemon) and campaign-dialing-server (the reference server) as compiled JavaScript with only their
// run-time dependencies, and n8n-nodes-campaign-dialing (n8n/, built by `./dev build` first). Each tarball is then
// installed into an empty folder with plain npm and its bin asked for --version; the sizes are printed.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, globSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const USAGE = `usage: ./dev release [--out DIR] [--no-install]
  Writes release/<name>-<version>.tgz for the daemon, the reference server and the n8n package, and SHA256SUMS.
  --no-install  skip installing each tarball into an empty folder (then no installed sizes are printed)`;

interface Manifest {
  name: string; version: string; description?: string; license?: string; homepage?: string; private?: boolean;
  repository?: { type: string; url: string; directory?: string }; engines?: Record<string, string>;
  bin?: Record<string, string>; dependencies?: Record<string, string>; peerDependencies?: Record<string, string>;
}

/** A service compiled by its tsconfig.build.json; its `files` are the entry points (the CLI and worker threads). */
interface Service { dir: 'daemon' | 'server'; assets: string[] }

const SERVICES: Service[] = [
  // The Redis state's Lua scripts, read by daemon/state/scripts.ts from its folder.
  { dir: 'daemon', assets: ['state/commands/**/*.lua'] },
  // The /docs page's own files and the web console's (server/api-docs.ts, server/routes/console-page.ts).
  { dir: 'server', assets: ['api-docs/*', 'console-page/*'] },
];

export interface Packed { file: string; name: string; packed: number; unpacked: number; files: number; installed?: number }

const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;

function run(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}

/** The one version, and a sentence when a part's package.json says another. */
export function releaseVersion(): string {
  const { version } = readJson<Manifest>(join(ROOT, 'package.json'));
  const others = ['daemon', 'server', 'n8n'].map((d) => [d, readJson<Manifest>(join(ROOT, d, 'package.json')).version] as const).filter(([, v]) => v !== version);
  if (others.length) {
    throw new Error(`the parts must have the root's version ${version}; ${others.map(([d, v]) => `${d}/package.json has ${v}`).join(', ')}. ` +
      'Set them together: npm version <version> --workspaces --include-workspace-root --no-git-tag-version');
  }
  return version;
}

/** Relative and bare module specifiers of compiled JavaScript (tsc's output: static, dynamic and re-exports). */
function specifiers(source: string): { relative: string[]; bare: string[] } {
  const found = new Set<string>();
  for (const re of [/\bfrom\s*["']([^"']+)["']/g, /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g, /^\s*import\s*["']([^"']+)["']/gm, /\bresolve\(\s*["']([^"']+)["']\s*\)/g]) {
    for (const m of source.matchAll(re)) found.add(m[1]!);
  }
  const all = [...found];
  return { relative: all.filter((s) => s.startsWith('.')), bare: all.filter((s) => !s.startsWith('.') && !s.startsWith('node:')) };
}

/** The package name of a bare specifier (`@scope/name/sub` → `@scope/name`). */
const packageOf = (spec: string) => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');

/**
 * Keeps only what the entry points load: tsc also emits modules imported for their types alone. Returns the files
 * left out, and fails when a loaded module imports a package the part's package.json does not depend on.
 */
function pruneToLoaded(stage: string, entries: string[], dependencies: Record<string, string>, what: string): string[] {
  const seen = new Set<string>();
  const queue = [...entries];
  const missing = new Set<string>();
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const { relative: rel, bare } = specifiers(readFileSync(join(stage, file), 'utf8'));
    for (const spec of rel) {
      const target = posix.normalize(posix.join(posix.dirname(file), spec));
      if (!existsSync(join(stage, target))) throw new Error(`${what}: ${file} imports ${spec}, which the build did not emit`);
      queue.push(target);
    }
    for (const spec of bare) if (!builtinModules.includes(spec) && !(packageOf(spec) in dependencies)) missing.add(`${packageOf(spec)} (${file})`);
  }
  if (missing.size) throw new Error(`${what}: imported at run time but not in its package.json dependencies: ${[...missing].join(', ')}`);
  const emitted = globSync('**/*.js', { cwd: stage });
  const unloaded = emitted.filter((f) => !seen.has(f));
  for (const f of unloaded) rmSync(join(stage, f));
  return unloaded;
}

/** Compiles a service into a staging folder laid out as the repository (dir/ and api/), with its package.json. */
function stageService(service: Service, version: string, stage: string): void {
  const { dir } = service;
  const workspace = readJson<Manifest>(join(ROOT, dir, 'package.json'));
  const root = readJson<Manifest>(join(ROOT, 'package.json'));
  const tsconfig = readJson<{ files: string[] }>(join(ROOT, dir, 'tsconfig.build.json'));
  run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.build.json'), '--outDir', stage], ROOT);
  const entries = tsconfig.files.map((f) => posix.join(dir, f.replace(/\.ts$/, '.js')));
  const unloaded = pruneToLoaded(stage, entries, workspace.dependencies ?? {}, dir);
  if (unloaded.length) console.log(`  ${dir}: left out ${unloaded.length} compiled modules that only carry types`);
  for (const pattern of service.assets) {
    for (const file of globSync(pattern, { cwd: join(ROOT, dir) })) {
      if (statSync(join(ROOT, dir, file)).isDirectory()) continue;
      mkdirSync(dirname(join(stage, dir, file)), { recursive: true });
      cpSync(join(ROOT, dir, file), join(stage, dir, file));
    }
  }
  const bin = Object.fromEntries(Object.entries(workspace.bin ?? {}).map(([name, path]) => [name, posix.join(dir, path.replace(/\.ts$/, '.js'))]));
  const manifest: Manifest & { type: string; files: string[] } = {
    name: workspace.name, version, description: workspace.description, license: workspace.license, homepage: root.homepage,
    repository: { ...root.repository!, directory: dir }, type: 'module', engines: workspace.engines, bin, files: [dir, 'api'],
    dependencies: workspace.dependencies,
  };
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  cpSync(join(ROOT, dir, 'README.md'), join(stage, 'README.md'));
  cpSync(join(ROOT, 'LICENSE'), join(stage, 'LICENSE'));
}

function pack(dir: string, out: string): Packed {
  const [result] = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], dir)) as
    Array<{ name: string; filename: string; size: number; unpackedSize: number; entryCount: number; files: Array<{ path: string }> }>;
  if (!result) throw new Error(`npm pack in ${dir} answered nothing`);
  const stray = result.files.map((f) => f.path).filter((p) => /(^|\/)(test|tests|bench|crm-stand-ins)\//.test(p) || (/\.ts$/.test(p) && !/\.d\.ts$/.test(p)) || /\.(build|test)\.js$/.test(p));
  if (stray.length) throw new Error(`${result.filename} would ship files its part does not load: ${stray.join(', ')}`);
  return { file: join(out, result.filename), name: result.name, packed: result.size, unpacked: result.unpackedSize, files: result.entryCount };
}

/** Bytes under a folder, as `du -sb` counts them. */
function bytesUnder(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  }
  return total;
}

/** Installs a tarball into an empty folder as a user would, and runs each of its bins with --version. */
export function installAndCheck(tarball: string, name: string, version: string, into = mkdtempSync(join(tmpdir(), 'release-install-'))): number {
  // --omit=peer: the n8n package's peer (n8n-workflow) is n8n's own; n8n installs a package the same way.
  run('npm', ['install', '--omit=dev', '--omit=peer', '--no-audit', '--no-fund', '--loglevel=error', tarball], into);
  const manifest = readJson<Manifest>(join(into, 'node_modules', name, 'package.json'));
  for (const bin of Object.keys(manifest.bin ?? {})) {
    const said = run(join(into, 'node_modules/.bin', bin), ['--version'], into).trim();
    if (said !== version) throw new Error(`${bin} --version said ${JSON.stringify(said)}, not ${version}`);
  }
  return bytesUnder(join(into, 'node_modules'));
}

export const human = (bytes: number) => (bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${(bytes / 1e3).toFixed(0)} kB`);

function main(): void {
  let values;
  try {
    ({ values } = parseArgs({ options: { out: { type: 'string' }, 'no-install': { type: 'boolean' }, help: { type: 'boolean' } } }));
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) { console.log(USAGE); return; }
  const out = values.out ?? join(ROOT, 'release');
  let version: string;
  try {
    version = releaseVersion();
  } catch (err) {
    console.error(`release: ${(err as Error).message}`);
    process.exit(1);
  }
  if (!existsSync(join(ROOT, 'n8n/dist/package.json'))) {
    console.error('release: n8n/dist/ is missing: ./dev release builds it (./dev build) before this script');
    process.exit(1);
  }
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'release-'));
  const packed: Packed[] = [];
  try {
    for (const service of SERVICES) {
      const stage = join(work, service.dir);
      stageService(service, version, stage);
      packed.push(pack(stage, out));
    }
    packed.push(pack(join(ROOT, 'n8n'), out));
    if (!values['no-install']) {
      for (const p of packed) p.installed = installAndCheck(p.file, p.name, version, mkdtempSync(join(work, 'install-')));
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const sums = packed.map((p) => `${createHash('sha256').update(readFileSync(p.file)).digest('hex')}  ${basename(p.file)}`).join('\n');
  writeFileSync(join(out, 'SHA256SUMS'), `${sums}\n`);
  console.log(`release ${version} in ${relative(process.cwd(), out) || '.'}/ (installed: the package and its run-time dependencies, as \`npm install ./<tarball>\` in an empty folder leaves them)`);
  for (const p of packed) {
    console.log(`  ${basename(p.file).padEnd(40)} packed ${human(p.packed).padStart(8)}   unpacked ${human(p.unpacked).padStart(8)} (${p.files} files)` +
      (p.installed === undefined ? '' : `   installed ${human(p.installed).padStart(8)}`));
  }
}

if (import.meta.main) main();
