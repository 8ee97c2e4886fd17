// The daemons of earlier versions, for the rolling-upgrade test: 0.1.0 (the commit the state-version work started
// from) and a8ba58f (what operators ran from a checkout before 0.1.0; its package.json says 0.1.0 too). Each is that
// commit's files (git archive, so no worktree is registered in the repository) with their own `npm ci`, in a folder
// of the system's temp directory, made once and reused (a run after the first starts in a second).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** 0.1.0: the last commit without the state's version record (merge of t39). */
export const PREVIOUS_COMMIT = '4ad403859d5202176f1b04f2ee429788a05e18f2';

/** a8ba58f: the checkout operators ran before 0.1.0 (no calling-window rules unless a `compliance` block asks). */
export const CHECKOUT_COMMIT = 'a8ba58f191670019a7cb436f2c70988275922860';

const ROOT = join(import.meta.dirname, '../..');

/** The folder holding that commit's version, ready to run (`node <folder>/daemon/cli.ts start --config FILE`). */
export function previousVersion(commit = PREVIOUS_COMMIT): string {
  const dir = join(tmpdir(), `cds-previous-${commit.slice(0, 12)}`);
  if (existsSync(join(dir, '.ready'))) return dir;
  try {
    execFileSync('git', ['-C', ROOT, 'cat-file', '-e', `${commit}^{commit}`], { stdio: 'ignore' });
  } catch {
    throw new Error(`the earlier version's commit ${commit} is not in this clone (a shallow one?): git fetch --unshallow, or git fetch origin ${commit}`);
  }
  // Built beside its place and renamed into it: a run that dies mid-way leaves no half-made folder to be reused, and
  // two runs at once each build their own, the second rename finding the first's in place.
  const building = `${dir}.${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  try {
    execFileSync('sh', ['-c', 'git -C "$1" archive --format=tar "$2" | tar -x -C "$3"', 'sh', ROOT, commit, building], { stdio: 'inherit' });
    // This Node's own npm (its folder first on PATH, so npm's scripts and node-gyp find the same Node); the tree's
    // .npmrc keeps install scripts off.
    const bin = dirname(process.execPath);
    const npm = existsSync(join(bin, 'npm')) ? join(bin, 'npm') : 'npm';
    execFileSync(npm, ['ci', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: building, stdio: 'inherit', env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` }, timeout: 600_000,
    });
    writeFileSync(join(building, '.ready'), `${commit}\n`);
    if (existsSync(dir) && !existsSync(join(dir, '.ready'))) rmSync(dir, { recursive: true, force: true });
    try {
      renameSync(building, dir);
    } catch (err) {
      if (!existsSync(join(dir, '.ready'))) throw err;
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return dir;
}
