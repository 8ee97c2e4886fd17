// The published package as n8n judges it: the tarball `npm pack` makes in n8n/ from the built n8n/dist/ (./dev test
// builds it first; `./dev release` packs the same folder), checked the way n8n checks a community package when it installs and loads one, when it verifies one
// (the verification guidelines and @n8n/scan-community-package, whose ESLint analysis runs here on the extracted
// tarball and on the sources), and with the package.json rules of n8n's community-node lint.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkNodesApiVersion } from 'n8n-workflow';
import { loadPackage, type N8nPackage } from '../support/n8n.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The package's own folder in the repository (a workspace: n8n/package.json, n8n/nodes, n8n/credentials). */
const PACKAGE = join(ROOT, 'n8n');

interface PackageJson {
  name: string;
  version: string;
  license?: string;
  keywords?: string[];
  repository?: { type?: string; url?: string } | string;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  bundleDependencies?: unknown;
  bundledDependencies?: unknown;
  peerDependencies?: Record<string, string>;
  overrides?: unknown;
  n8n?: { n8nNodesApiVersion?: unknown; strict?: boolean; nodes?: string[]; credentials?: string[] };
}

interface ScanResult { passed: boolean; message?: string; details?: string }

let work: string;
/** The extracted tarball, as n8n unpacks it into ~/.n8n/nodes/node_modules/<name>. */
let unpacked: string;
/** Paths in the tarball, relative to its package/ root, as `npm pack --json` lists them. */
let packed: string[];
let manifest: PackageJson;

const isPacked = (path: string) => packed.includes(posix.normalize(path));

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'n8n-package-'));
  // --ignore-scripts: nothing of ours runs at pack time anyway (and .npmrc says so too).
  const out = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], {
    cwd: PACKAGE, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [result] = JSON.parse(out) as Array<{ filename: string; files: Array<{ path: string }> }>;
  if (!result) throw new Error(`npm pack answered no package: ${out}`);
  packed = result.files.map((f) => f.path);
  unpacked = join(work, 'package');
  // As n8n's CommunityPackagesService.downloadPackage and the scanner: tar -xzf <tgz> --strip-components=1.
  mkdirSync(unpacked);
  execFileSync('tar', ['-xzf', join(work, result.filename), '-C', unpacked, '--strip-components=1']);
  manifest = JSON.parse(readFileSync(join(unpacked, 'package.json'), 'utf8')) as PackageJson;
  // The host provides the peer dependency (n8n-workflow), as n8n does for the packages it installs.
  symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'), 'dir');
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('package.json of the tarball', () => {
  it('is named n8n-nodes-* or @scope/n8n-nodes-*, in the characters n8n accepts', () => {
    // n8n cli CommunityPackagesService.parseNpmPackageName: /[^0-9a-z@\-._/]/ is refused, the unscoped part must start
    // with NODE_PACKAGE_PREFIX 'n8n-nodes-'; n8n-core scanDirectoryForPackages only globs 'n8n-nodes-*' and
    // '@*/n8n-nodes-*' in node_modules; lint rule @n8n/community-nodes/package-name-convention.
    expect(manifest.name).not.toMatch(/[^0-9a-z@\-._/]/);
    expect(manifest.name).toMatch(/^(@[a-z0-9][a-z0-9-._~]*\/)?n8n-nodes-[a-z0-9][a-z0-9-._~]*$/);
  });

  it('carries the community-node keyword, a version, the MIT license and a public GitHub repository', () => {
    // n8n-nodes-base community rules (keywords-missing, version-missing, license-missing); the verification
    // guidelines (MIT license; npm's repository URL is the public GitHub repository, which npm provenance, required
    // by @n8n/scan-community-package, also checks at publish time).
    expect(manifest.keywords).toContain('n8n-community-node-package');
    expect(manifest.version).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
    expect(manifest.license).toBe('MIT');
    const url = typeof manifest.repository === 'string' ? manifest.repository : manifest.repository?.url;
    expect(url).toMatch(/^git\+https:\/\/github\.com\/[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+?(\.git)?$/);
  });

  it('has no runtime dependencies and n8n-workflow "*" as its only peer', () => {
    // Lint rules no-runtime-dependencies and valid-peer-dependencies (@n8n/eslint-plugin-community-nodes); the
    // verification guidelines ("no external dependencies"); n8n strips peer/dev/optional dependencies before it runs
    // `npm install` in the unpacked package, so anything else required at run time would be missing.
    expect(manifest.dependencies ?? {}).toEqual({});
    expect(manifest.optionalDependencies ?? {}).toEqual({});
    expect(manifest.bundleDependencies ?? manifest.bundledDependencies).toBeUndefined();
    expect(manifest.peerDependencies).toEqual({ 'n8n-workflow': '*' });
  });

  it('has no overrides and no install-time lifecycle scripts', () => {
    // Lint rules no-overrides-field and no-forbidden-lifecycle-scripts (its FORBIDDEN_SCRIPTS list).
    expect(manifest.overrides).toBeUndefined();
    const forbidden = ['prepare', 'preinstall', 'install', 'postinstall', 'prepublish', 'preprepare', 'postprepare'];
    expect(Object.keys(manifest.scripts ?? {}).filter((s) => forbidden.includes(s))).toEqual([]);
  });

  it('declares a node API version this n8n supports', () => {
    // n8n-workflow checkNodesApiVersion, which n8n-core's scanDirectoryForPackages uses to skip a package.
    expect(manifest.n8n?.n8nNodesApiVersion).toBeTypeOf('number');
    expect(checkNodesApiVersion(manifest)).toMatchObject({ compatible: true });
  });

  it('lists nodes and credentials that are in the tarball, each node with its codex JSON', () => {
    // n8n-core PackageDirectoryLoader.loadAll requires every n8n.nodes and n8n.credentials path (relative to the
    // package root); DirectoryLoader.getCodex reads `${nodePath}on` (X.node.js -> X.node.json).
    const nodes = manifest.n8n?.nodes ?? [];
    const credentials = manifest.n8n?.credentials ?? [];
    expect(nodes.length).toBeGreaterThan(0);
    for (const path of nodes) {
      expect(path).toMatch(/^dist\/.+\.node\.js$/);
      expect(isPacked(path), `${path} is packed`).toBe(true);
      expect(isPacked(`${path}on`), `${path}on is packed`).toBe(true);
    }
    for (const path of credentials) {
      expect(path).toMatch(/^dist\/.+\.credentials\.js$/);
      expect(isPacked(path), `${path} is packed`).toBe(true);
    }
  });
});

describe('files of the tarball', () => {
  it('are dist/ plus package.json, README.md and LICENSE, nothing else', () => {
    const outside = packed.filter((p) => !p.startsWith('dist/') && !['package.json', 'README.md', 'LICENSE'].includes(p));
    expect(outside).toEqual([]);
    // The verification guidelines: documentation (README) and the MIT license text.
    expect(packed).toEqual(expect.arrayContaining(['package.json', 'README.md', 'LICENSE']));
  });

  it('require nothing at run time but n8n-workflow and files in the tarball', () => {
    // Stricter than the scanner's no-restricted-imports (which also lets lodash, luxon, zod... through): with no
    // dependencies, only the peer is there to be required.
    const missing: string[] = [];
    for (const file of packed.filter((p) => p.endsWith('.js'))) {
      const source = readFileSync(join(unpacked, file), 'utf8');
      for (const [, spec] of source.matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g)) {
        if (!spec!.startsWith('.')) {
          if (spec !== 'n8n-workflow') missing.push(`${file}: require('${spec}')`);
          continue;
        }
        const target = posix.join(posix.dirname(file), spec!);
        if (![target, `${target}.js`, `${target}/index.js`].some(isPacked)) missing.push(`${file}: require('${spec}')`);
      }
    }
    expect(missing).toEqual([]);
  });
});

describe('the tarball loaded by n8n', () => {
  let pkg: N8nPackage;
  beforeAll(async () => {
    pkg = await loadPackage(unpacked);
  });

  it('gives every node and credential of the n8n block', () => {
    expect(pkg.packageName).toBe(manifest.name);
    expect(Object.values(pkg.loader.known.nodes).map((n) => n.sourcePath).sort()).toEqual([...(manifest.n8n?.nodes ?? [])].sort());
    expect(Object.values(pkg.loader.known.credentials).map((c) => c.sourcePath).sort())
      .toEqual([...(manifest.n8n?.credentials ?? [])].sort());
  });

  it('serves an SVG or PNG icon in the tarball for every node and credential', () => {
    // DirectoryLoader.fixIconPaths turns `file:` icons into icons/<package>/<path> and throws for a path outside
    // the package; n8n's server only serves /icons/<package>/*/*.(svg|png) (LoadNodesAndCredentials.resolveIcon).
    const prefix = `icons/${pkg.packageName}/`;
    const described = [
      ...pkg.loader.types.nodes.map((d) => ({ name: d.name, iconUrl: d.iconUrl, icon: d.icon })),
      ...pkg.loader.types.credentials.map((d) => ({ name: d.name, iconUrl: d.iconUrl, icon: d.icon })),
    ];
    expect(described.length).toBe(Object.keys(pkg.loader.known.nodes).length + Object.keys(pkg.loader.known.credentials).length);
    for (const { name, iconUrl, icon } of described) {
      expect(icon, `${name}: a file: icon, made into iconUrl`).toBeUndefined();
      const urls = typeof iconUrl === 'string' ? [iconUrl] : iconUrl ? [iconUrl.light, iconUrl.dark] : [];
      expect(urls.length, `${name} has an icon`).toBeGreaterThan(0);
      for (const url of urls) {
        expect(url.startsWith(prefix), url).toBe(true);
        const path = url.slice(prefix.length);
        expect(path, url).toMatch(/^[^/]+\/.+\.(svg|png)$/);
        expect(isPacked(path), `${name}: ${path} is packed`).toBe(true);
      }
    }
  });

  it('reads each node\'s codex: its categories and documentation, under the node\'s type name', () => {
    for (const description of pkg.loader.types.nodes) {
      expect(description.codex?.categories?.length, description.name).toBeGreaterThan(0);
      expect(description.codex?.resources?.primaryDocumentation?.length, description.name).toBeGreaterThan(0);
      const sourcePath = pkg.loader.known.nodes[description.name]!.sourcePath;
      const codex = JSON.parse(readFileSync(join(unpacked, `${sourcePath}on`), 'utf8')) as { node?: string };
      expect(codex.node).toBe(`${pkg.packageName}.${description.name}`);
    }
  });
});

describe('@n8n/scan-community-package analysis', () => {
  // The scanner's own code (scanner/scanner.mjs of the installed version), minus what needs the network: it fetches
  // the tarball and the provenance-attested source from npm and GitHub, then lints the tarball's **/*.js and
  // package.json, and the source's package.json and {nodes,credentials}/**/*.{js,ts,json}, with inline ESLint
  // comments ignored (allowInlineConfig: false). Its provenance check cannot run before publishing.
  // It runs in a child process without NODE_ENV: under NODE_ENV=test (as vitest sets it) eslint-plugin-n8n-nodes-base
  // takes every file for "Test.node.ts" and reports file-name and trigger-naming errors that are not there.
  // A checkout (`source`) is first narrowed, as the scanner does with the repository its provenance names, to the
  // folder whose package.json has the package's name (findPackageRoot: n8n/ in this monorepo).
  function analyze(dir: string, patterns?: string[], source = false): ScanResult & { dir?: string } {
    const script = `
      const { analyzePackage, findPackageRoot, SOURCE_FILE_PATTERNS } = await import('@n8n/scan-community-package/scanner/scanner.mjs');
      const [dir, patterns, name] = JSON.parse(process.argv[1]);
      const root = name ? findPackageRoot(dir, name) : dir;
      const { passed, message, details } = root ? await analyzePackage(root, patterns ?? SOURCE_FILE_PATTERNS) : { passed: false, message: 'no package.json named ' + name };
      process.stdout.write(JSON.stringify({ passed, message, details, dir: root }));`;
    // TMPDIR: the scanner makes a temporary directory when loaded and leaves it; it goes with ours.
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: work };
    delete env.NODE_ENV;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify([dir, patterns ?? null, source ? manifest.name : null])], {
      cwd: ROOT, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
    });
    return JSON.parse(out) as ScanResult & { dir?: string };
  }

  it('passes on the tarball (compiled JavaScript and the published package.json)', () => {
    expect(existsSync(join(unpacked, 'package.json'))).toBe(true);
    const result = analyze(unpacked, ['**/*.js', 'package.json']);
    expect(result.passed, `${result.message}\n${result.details ?? ''}`).toBe(true);
  });

  it('passes on the sources it would fetch from the repository (the n8n/ folder, found by the package\'s name)', () => {
    const result = analyze(ROOT, undefined, true);
    expect(result.dir).toBe(PACKAGE.replace(/\/$/, ''));
    expect(result.passed, `${result.message}\n${result.details ?? ''}`).toBe(true);
  });
});
