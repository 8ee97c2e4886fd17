// The demo's child processes: each component run by its own entry point, its output kept (a log file and the last
// lines in memory), waited on for a line that says it is ready, and stopped by signal.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createServer } from 'node:net';

export interface Exit { code: number | null; signal: NodeJS.Signals | null }

export interface Child {
  name: string;
  logFile: string;
  proc: ChildProcess;
  /** Settles when the process has exited (never rejects). */
  exited: Promise<Exit>;
  running(): boolean;
  /** The first match of `pattern` in its output, past or future; rejects when the process exits first or time runs out. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  lastLines(n: number): string[];
  /** SIGTERM, then SIGKILL if it is still there after `timeoutMs`; resolves once it is gone. */
  stop(timeoutMs: number): Promise<Exit>;
  /** SIGKILL at once (no waiting: also usable in an exit handler). */
  kill(): void;
}

const KEEP_LINES = 200;

/**
 * Starts `node <script> <args>` with stdout and stderr piped to a log file. Its own process group (`detached`), so a
 * Ctrl-C in the terminal reaches only the demo, which then stops the components in order.
 */
export function startChild(name: string, script: string, args: string[], env: Record<string, string>, logFile: string, cwd: string): Child {
  const proc = spawn(process.execPath, [script, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const log = createWriteStream(logFile, { flags: 'a' });
  const lines: string[] = [];
  let partial = '';
  let exit: Exit | null = null;
  const waiters = new Set<{ pattern: RegExp; resolve: (m: RegExpExecArray) => void; reject: (e: Error) => void }>();

  const take = (line: string) => {
    lines.push(line);
    if (lines.length > KEEP_LINES) lines.shift();
    for (const w of waiters) {
      const m = w.pattern.exec(line);
      if (m) { waiters.delete(w); w.resolve(m); }
    }
  };
  const onData = (chunk: Buffer) => {
    log.write(chunk);
    const parts = (partial + chunk.toString('utf8')).split('\n');
    partial = parts.pop()!;
    for (const p of parts) take(p);
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);

  const exited = new Promise<Exit>((resolve) => {
    proc.on('error', (err) => { take(`(could not start: ${err.message})`); });
    proc.on('close', (code, signal) => {
      if (partial) take(partial);
      partial = '';
      exit = { code, signal };
      log.end();
      for (const w of waiters) w.reject(new Error(`${name} exited (${describeExit(exit)}) before it was ready`));
      waiters.clear();
      resolve(exit);
    });
  });

  const signal = (sig: NodeJS.Signals) => {
    if (exit || proc.pid === undefined) return;
    try { process.kill(proc.pid, sig); } catch { /* already gone */ }
  };

  return {
    name, logFile, proc, exited,
    running: () => exit === null,
    waitFor(pattern, timeoutMs) {
      for (const line of lines) {
        const m = pattern.exec(line);
        if (m) return Promise.resolve(m);
      }
      if (exit) return Promise.reject(new Error(`${name} exited (${describeExit(exit)}) before it was ready`));
      return new Promise((resolve, reject) => {
        const w = { pattern, resolve: (m: RegExpExecArray) => { clearTimeout(timer); resolve(m); }, reject: (e: Error) => { clearTimeout(timer); reject(e); } };
        const timer = setTimeout(() => { waiters.delete(w); reject(new Error(`${name} did not say it was ready within ${timeoutMs / 1000} s`)); }, timeoutMs);
        waiters.add(w);
      });
    },
    lastLines: (n) => lines.slice(-n),
    async stop(timeoutMs) {
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), timeoutMs);
      const e = await exited;
      clearTimeout(timer);
      return e;
    },
    kill: () => signal('SIGKILL'),
  };
}

export function describeExit(e: Exit): string {
  return e.signal ? `signal ${e.signal}` : `exit code ${e.code}`;
}

/** Whether nothing listens on 127.0.0.1:port (the components bind there). */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A port the system says is free now (another process could still take it before the component binds it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as import('node:net').AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}
