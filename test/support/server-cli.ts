// Runs the reference server's CLI (`./dev server`) in its own process for a test: its base URL once the banner names
// it, everything it printed, and a stop that waits for its exit. Killed at the end of the file if a test left it running.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const started: ChildProcess[] = [];
afterAll(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

export interface ServerProcess {
  /** The base URL the banner printed (http:// or https://); the whole banner is in output() by then. */
  base: string;
  output(): string;
  stop(): Promise<number | null>;
}

/** Starts `server/cli.ts` with these arguments and extra environment; rejects with its output if it exits first. */
export async function startServerCli(args: string[], env: Record<string, string> = {}): Promise<ServerProcess> {
  const proc = spawn(process.execPath, ['server/cli.ts', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(proc);
  let out = '';
  const base = await new Promise<string>((resolve, reject) => {
    const seen = (c: Buffer) => {
      out += c.toString();
      // The banner ends with where the console token came from: every line before it has arrived by then.
      const m = /^Web console: (https?:\/\/\S+)\/console /m.exec(out);
      if (m && /^Console token/m.test(out)) resolve(m[1]!);
    };
    proc.stdout!.on('data', seen);
    proc.stderr!.on('data', seen);
    proc.on('exit', (code) => reject(new Error(`the server exited (${code}) before printing its banner:\n${out}`)));
  });
  return {
    base,
    output: () => out,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        await once(proc, 'exit');
      }
      return proc.exitCode;
    },
  };
}

/** Runs `server/cli.ts` with arguments it should refuse: its exit code and what it printed. */
export async function refusedServerCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const proc = spawn(process.execPath, ['server/cli.ts', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(proc);
  let output = '';
  proc.stdout!.on('data', (c: Buffer) => { output += c.toString(); });
  proc.stderr!.on('data', (c: Buffer) => { output += c.toString(); });
  const [code] = await once(proc, 'exit') as [number | null];
  return { code, output };
}
