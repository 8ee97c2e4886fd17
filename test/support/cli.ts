// The daemon's command line as a user runs it: `node daemon/cli.ts ...` from this checkout, as a child process.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** This checkout's root: the CLI under test is the one beside these tests. */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliExit { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }

/** Runs `node daemon/cli.ts ...args`; a guard kills it if it hangs, so that a hang fails the test, not the file. */
export function daemonCli(args: string[], env: Record<string, string> = {}, guardMs = 45_000): Promise<CliExit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['daemon/cli.ts', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (b: Buffer) => { stdout += b.toString(); });
    child.stderr.on('data', (b: Buffer) => { stderr += b.toString(); });
    const guard = setTimeout(() => child.kill('SIGKILL'), guardMs);
    child.on('error', reject);
    child.on('close', (code, signal) => { clearTimeout(guard); resolve({ code, signal, stdout, stderr }); });
  });
}
