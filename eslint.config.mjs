// n8n's own lint for community packages (`n8n-node lint`, from @n8n/node-cli), applied only to what this repository
// publishes as the n8n package: n8n/package.json, n8n/nodes/, n8n/credentials/ and the api/ contract they compile in.
// The rules are not re-listed here: every entry of n8n's config is used as it is, with its files moved to where the
// package lives in this repository (n8n's config is written for a package at the root: 'package.json',
// './nodes/**/*.ts', './credentials/**/*.ts'), and the one entry that n8n scopes to every TypeScript file ('**/*.ts',
// which here would also take in server/, daemon/, test/ and bench/) scoped to the package's sources instead.
//
// `./dev lint` runs it (and `./dev test` runs `./dev lint`). `n8n-node lint` itself cannot be used in this
// repository: with "n8n": { "strict": true } it refuses any eslint.config.mjs that differs from its two-line
// template, and that template lints every .ts file under the root, the reference server and tests included.
import { config as n8nConfig } from '@n8n/node-cli/eslint';
import { globalIgnores } from 'eslint/config';

/** Where the n8n package lives in the repository (its package.json, nodes/ and credentials/). */
export const PACKAGE_DIR = 'n8n';

/** The TypeScript that ends up in the published package (compiled to n8n/dist/ by n8n/tsconfig.build.json). */
export const PACKAGE_SOURCES = [`${PACKAGE_DIR}/nodes/**/*.ts`, `${PACKAGE_DIR}/credentials/**/*.ts`, 'api/**/*.ts'];

/** One of n8n's file patterns, for the package in PACKAGE_DIR. */
function inPackage(pattern) {
  if (pattern === '**/*.ts') return PACKAGE_SOURCES;
  return [`${PACKAGE_DIR}/${pattern.replace(/^\.\//, '')}`];
}

const rebase = (entry) => (Array.isArray(entry.files) ? { ...entry, files: entry.files.flatMap(inPackage) } : entry);

export default [
  // The rest of the repository is run from the repository or shipped otherwise: not n8n's to judge.
  globalIgnores(['**/dist/', 'server/', 'daemon/', 'test/', 'bench/', 'demo/', 'crm-stand-ins/', 'deploy/', 'packaging/', 'release/', '.tools/'], 'campaign-dialing/not-in-package'),
  ...n8nConfig.map(rebase),
];
