// n8n's own lint for community packages (`n8n-node lint`, from @n8n/node-cli), applied only to what this repository
// publishes: package.json, nodes/, credentials/ and the api/ contract they compile in. The rules are not re-listed
// here: every entry of n8n's config is used as it is, and the one entry that n8n scopes to every TypeScript file
// ('**/*.ts', which here would also take in server/, test/ and bench/) is scoped to the package's sources instead.
// The package.json, credentials/ and nodes/ entries keep n8n's own `files`.
//
// `./dev lint` runs it (and `./dev test` runs `./dev lint`). `n8n-node lint` itself cannot be used in this
// repository: with "n8n": { "strict": true } it refuses any eslint.config.mjs that differs from its two-line
// template, and that template lints every .ts file under the root, the reference server and tests included.
import { config as n8nConfig } from '@n8n/node-cli/eslint';
import { globalIgnores } from 'eslint/config';

/** The TypeScript that ends up in the published package (compiled to dist/ by tsconfig.n8n.json). */
export const PACKAGE_SOURCES = ['nodes/**/*.ts', 'credentials/**/*.ts', 'api/**/*.ts'];

const isAllTypeScript = (files) => Array.isArray(files) && files.length === 1 && files[0] === '**/*.ts';

export default [
  // The rest of the repository is run from the repository and never published: not n8n's to judge.
  globalIgnores(['dist/', 'server/', 'test/', 'bench/', '.tools/'], 'campaign-dialing/not-in-package'),
  ...n8nConfig.map((entry) => (isAllTypeScript(entry.files) ? { ...entry, files: PACKAGE_SOURCES } : entry)),
];
