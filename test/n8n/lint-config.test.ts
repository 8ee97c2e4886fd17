// eslint.config.mjs is n8n's community-node lint (`@n8n/node-cli/eslint`, what `n8n-node lint` runs) and nothing
// else, on what the package ships; the parts of the repository that are never published are not linted by it.
import { globSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// Through a variable: the package's `types` export points at a file it does not ship.
const N8N_ESLINT_CONFIG = '@n8n/node-cli/eslint';

const shipped = ['package.json', ...globSync('{nodes,credentials,api}/**/*.ts', { cwd: ROOT })].sort();

describe('eslint.config.mjs', () => {
  it('gives every shipped file exactly the configuration n8n-node lint gives it', async () => {
    const { config } = (await import(N8N_ESLINT_CONFIG)) as { config: ESLint.Options['overrideConfig'] };
    const ours = new ESLint({ cwd: ROOT });
    const n8n = new ESLint({ cwd: ROOT, overrideConfigFile: true, overrideConfig: config });
    expect(shipped.length).toBeGreaterThan(3);
    for (const file of shipped) {
      type Computed = { rules: object; settings: object; languageOptions: { parser?: { meta?: object } } };
      const a = (await ours.calculateConfigForFile(file)) as Computed;
      const b = (await n8n.calculateConfigForFile(file)) as Computed;
      expect(a.rules, file).toEqual(b.rules);
      expect(a.settings, file).toEqual(b.settings);
      expect(a.languageOptions.parser?.meta, file).toEqual(b.languageOptions.parser?.meta);
    }
  });

  it('leaves the server, the tests, the benchmarks and dist/ alone', async () => {
    const eslint = new ESLint({ cwd: ROOT });
    for (const file of ['server/app.ts', 'test/n8n/package.test.ts', 'bench/server.ts', 'dist/api/enums.js']) {
      expect(await eslint.isPathIgnored(file), file).toBe(true);
    }
  });
});
