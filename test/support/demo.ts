// Running `./dev start` (demo/start.ts) in its own process for a test: its output as it comes, its progress lines,
// and its exit; killed at the end of the file if a failed assertion left it running.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { REDIS_URL } from './daemon.ts';

const ROOT = join(import.meta.dirname, '../..');

export interface DemoProcess {
  proc: ChildProcess;
  /** Everything it wrote so far (stdout and stderr). */
  output(): string;
  /** The last plain progress line (`[mm:ss] crm …`), if any. */
  lastProgress(): string | undefined;
  gone(): boolean;
  exited: Promise<{ code: number | null; signal: string | null }>;
}

const started: ChildProcess[] = [];
afterAll(() => {
  // Only when an assertion failed before the SIGINT: the demo's own exit handler then kills its components.
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

export function startDemo(args: string[]): DemoProcess {
  const proc = spawn(process.execPath, ['demo/start.ts', ...args], { cwd: ROOT, env: { ...process.env, REDIS_URL }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(proc);
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => { out += c.toString(); });
  proc.stderr!.on('data', (c: Buffer) => { out += c.toString(); });
  return {
    proc,
    output: () => out,
    lastProgress: () => out.split('\n').filter((l) => /^\[\d\d:\d\d\] crm /.test(l)).at(-1),
    gone: () => proc.exitCode !== null || proc.signalCode !== null,
    exited: new Promise((r) => proc.on('exit', (code, signal) => r({ code, signal }))),
  };
}

/** A figure of a progress line (`synced 40`). */
export function field(line: string, name: string): number {
  return Number(new RegExp(`\\b${name} (\\d+)`).exec(line)?.[1] ?? Number.NaN);
}
