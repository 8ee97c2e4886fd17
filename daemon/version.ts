// The version of this campaign-sync, one for the three packages and both images: the repository's package.json in a
// checkout, the installed package's own package.json in a compiled install (the release writes the same version
// there). Read once, at start, so a file moved by a build still finds it.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Walks up from `dir` to the package.json that holds the version: a workspace root's (the repository: its members'
 * own package.json files are parts of it), else the nearest one (an installed package, whose walk stops at the
 * node_modules folder it lives in).
 */
export function versionFrom(dir: string): string {
  let nearest: string | undefined;
  for (let at = dir; ; at = dirname(at)) {
    const file = join(at, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { version?: string; workspaces?: unknown };
      if (pkg.workspaces && pkg.version) return pkg.version;
      nearest ??= pkg.version;
    }
    if (dirname(at) === at || basename(dirname(at)) === 'node_modules') break;
  }
  if (!nearest) throw new Error(`no package.json with a version above ${dir}`);
  return nearest;
}

/** This campaign-sync's version (package.json's `version`). */
export const VERSION = versionFrom(import.meta.dirname);
