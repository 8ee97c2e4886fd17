// eslint.config.mjs is n8n's community-node lint (`@n8n/node-cli/eslint`, what `n8n-node lint` runs) and nothing
// else, on what the package ships; the parts of the repository that are never published are not linted by it.
import { globSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// Through a variable: the package's `types` export points at a file it does not ship.
const N8N_ESLINT_CONFIG = '@n8n/node-cli/eslint';

/** The n8n package's folder: n8n's config is written for a package at the root of its repository. */
const PACKAGE = join(ROOT, 'n8n');

const shipped = ['n8n/package.json', ...globSync('{n8n/nodes,n8n/credentials,api}/**/*.ts', { cwd: ROOT })].sort();

describe('eslint.config.mjs', () => {
  it('gives every shipped file exactly the configuration n8n-node lint gives it', async () => {
    const { config } = (await import(N8N_ESLINT_CONFIG)) as { config: ESLint.Options['overrideConfig'] };
    const ours = new ESLint({ cwd: ROOT });
    // As n8n-node lint would run in the package's folder; api/ (outside it, compiled into the package) gets what
    // n8n gives every TypeScript file, as from the repository's root.
    const n8nInPackage = new ESLint({ cwd: PACKAGE, overrideConfigFile: true, overrideConfig: config });
    const n8nAtRoot = new ESLint({ cwd: ROOT, overrideConfigFile: true, overrideConfig: config });
    expect(shipped.length).toBeGreaterThan(3);
    for (const file of shipped) {
      type Computed = { rules: object; settings: object; languageOptions: { parser?: { meta?: object } } };
      const a = (await ours.calculateConfigForFile(file)) as Computed;
      const inPackage = file.startsWith('n8n/');
      const b = (await (inPackage ? n8nInPackage : n8nAtRoot).calculateConfigForFile(inPackage ? relative(PACKAGE, join(ROOT, file)) : file)) as Computed;
      expect(a.rules, file).toEqual(b.rules);
      expect(a.settings, file).toEqual(b.settings);
      expect(a.languageOptions.parser?.meta, file).toEqual(b.languageOptions.parser?.meta);
    }
  });

  it('leaves the server, the daemon, the tests, the benchmarks and dist/ alone', async () => {
    const eslint = new ESLint({ cwd: ROOT });
    for (const file of ['server/app.ts', 'daemon/cli.ts', 'test/n8n/package.test.ts', 'bench/server.ts', 'n8n/dist/api/enums.js', 'package.json']) {
      expect(await eslint.isPathIgnored(file), file).toBe(true);
    }
  });
});
