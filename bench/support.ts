// What the benchmark commands in bench/ share: flags, the server under test, synthetic phone numbers, figures and results files.
import { randomBytes } from 'node:crypto';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildServer, type ServerOptions } from '../server/app.ts';
import type { Store } from '../server/store/store.ts';

// ---------------------------------------------------------------------------------------------- flags

/**
 * A flag and its default: a number is a non-negative integer flag, a string is passed on as it is (the command
 * checks it), `false` is a switch.
 */
export interface FlagSpec {
  readonly def: number | string | false;
  readonly help: string;
}

export type FlagValues<S extends Record<string, FlagSpec>> = {
  -readonly [K in keyof S]: S[K]['def'] extends number ? number : S[K]['def'] extends string ? string : boolean;
};

/**
 * Reads `specs` from the command line, else from BENCH_<FLAG> in the environment (so a run can be set up
 * without editing a command line), else the default; `--help` lists them in the order of `specs` and exits.
 */
export function readFlags<S extends Record<string, FlagSpec>>(
  specs: S,
  help: { command: string; example: string; width: number },
): FlagValues<S> {
  const parsed = parseArgs({
    options: {
      ...Object.fromEntries(Object.entries(specs).map(([k, s]) => [k, { type: s.def === false ? 'boolean' as const : 'string' as const }])),
      help: { type: 'boolean' },
    },
    strict: true,
  }).values as Record<string, string | boolean | undefined>;
  if (parsed.help) {
    console.log(`usage: ./dev bench ${help.command} [flags]   (each flag also as env BENCH_<FLAG>, e.g. ${help.example})`);
    for (const [k, s] of Object.entries(specs)) {
      console.log(`  --${k.padEnd(help.width)} ${(s.def === false ? '' : String(s.def)).padStart(9)}  ${s.help}`);
    }
    process.exit(0);
  }
  const out: Record<string, number | string | boolean> = {};
  for (const [k, s] of Object.entries(specs)) {
    const raw = parsed[k] ?? process.env[`BENCH_${k.toUpperCase().replaceAll('-', '_')}`];
    if (s.def === false) {
      out[k] = Boolean(raw);
    } else if (typeof s.def === 'string') {
      out[k] = (raw as string | undefined) ?? s.def;
    } else {
      const n = raw === undefined ? s.def : Number((raw as string).replaceAll('_', ''));
      if (!Number.isInteger(n) || n < 0) throw new Error(`--${k} must be a non-negative integer; got ${raw}`);
      out[k] = n;
    }
  }
  return out as FlagValues<S>;
}

// --------------------------------------------------------------------------------- the server under test

export interface BenchServer {
  app: FastifyInstance;
  /** http://127.0.0.1:port */
  base: string;
  consoleToken: string;
  /** POST to /console`path` with a JSON body; the parsed JSON answer, or an error on any status >= 300. */
  consolePost: <T>(path: string, body: unknown) => Promise<T>;
}

/**
 * Starts the server in this process on a random loopback port, rate limit off unless `options.rateLimit` sets one
 * (a benchmark that is the server's only client would otherwise measure the limiter). `beforeListen` may add
 * hooks, which fastify takes only before listen.
 */
export async function startServer(
  store: Store,
  options: Omit<ServerOptions, 'store' | 'consoleToken'> = {},
  beforeListen?: (app: FastifyInstance) => void,
): Promise<BenchServer> {
  const consoleToken = `console_${randomBytes(16).toString('hex')}`;
  const app = await buildServer({ ...options, store, consoleToken, rateLimit: options.rateLimit ?? { rate: 1e9, burst: 1e9 } });
  beforeListen?.(app);
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const consolePost = async <T>(path: string, body: unknown): Promise<T> => {
    const res = await fetch(`${base}/console${path}`, {
      method: 'POST', body: JSON.stringify(body),
      headers: { authorization: `Bearer ${consoleToken}`, 'content-type': 'application/json' },
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`POST /console${path}: ${res.status} ${text.slice(0, 2000)}`);
    return JSON.parse(text) as T;
  };
  return { app, base, consoleToken, consolePost };
}

/** An account with a CampaignAdmin API key: what every benchmark drives the API with. */
export async function openAccount(server: BenchServer, name: string, timezone: string): Promise<{ id: string; token: string }> {
  const account = await server.consolePost<{ id: string }>('/accounts', { name, timezone });
  const { token } = await server.consolePost<{ token: string }>(`/accounts/${account.id}/apiKeys`, { name: 'bench', roles: ['CampaignAdmin'] });
  return { id: account.id, token };
}

// ------------------------------------------------------------------------------------- phone numbers

/** Variable values of the benchmark's numbers. */
export const NAMES = ['Alice', 'Bob', 'Carol', 'Dave', 'Erin', 'Frank', 'Grace', 'Heidi', 'Ivan', 'Judy', 'Mallory', 'Niaj', 'Olivia', 'Peggy'];
export const CITIES = ['New York', 'Brooklyn', 'Queens', 'Bronx', 'Staten Island', 'Newark', 'Yonkers', 'Jersey City'];

/** Valid NANP numbers: +1, area 212/646/917, exchange 2-9xx, 4 digits: 3 × 8,000,000 distinct numbers. */
const AREAS = ['212', '646', '917'] as const;
export const NUMBER_SPACE = AREAS.length * 8_000_000;
/** i ↦ (i·A + B) mod NUMBER_SPACE is a permutation (A is a prime not dividing 24e6): distinct numbers in scrambled order. */
const PERM_A = 15_485_863;
const PERM_B = 7_777_777;

/** The i-th distinct number (0 <= i < NUMBER_SPACE); i·A stays below 2^53 there, so plain numbers are exact. */
export function phone(i: number): string {
  const k = (i * PERM_A + PERM_B) % NUMBER_SPACE;
  return `+1${AREAS[k % 3]}${2_000_000 + Math.floor(k / 3)}`;
}

// ------------------------------------------------------------------------------------- figures

export const MB = 1024 * 1024;

export interface Stats { n: number; p50: number; p90: number; p95: number; p99: number; max: number; mean: number }

/** Percentiles (nearest rank) of latency samples, in their unit, to 2 decimals. */
export function stats(samples: number[]): Stats {
  if (!samples.length) return { n: 0, p50: 0, p90: 0, p95: 0, p99: 0, max: 0, mean: 0 };
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
  const r = (x: number) => Math.round(x * 100) / 100;
  return { n: s.length, p50: r(at(0.5)), p90: r(at(0.9)), p95: r(at(0.95)), p99: r(at(0.99)), max: r(s[s.length - 1]!), mean: r(s.reduce((a, b) => a + b, 0) / s.length) };
}
export const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

/** The 1-, 5- and 15-minute load averages: other work on the machine skews every figure. */
export const loadAverage = () => loadavg().map((x) => round(x, 2));

export interface Machine { cpus: number; loadAverageAtStart: number[]; loadAverageAtEnd: number[] }

export function machine(loadAverageAtStart: number[]): Machine {
  return { cpus: availableParallelism(), loadAverageAtStart, loadAverageAtEnd: loadAverage() };
}

/** One summary part for the FIGURES heading: a figure means little without the machine it was taken on. */
export function describeMachine(m: Machine): string {
  return `${m.cpus} CPUs, load average ${m.loadAverageAtStart.join('/')} at start, ${m.loadAverageAtEnd.join('/')} at end`;
}

/** Prints the FIGURES heading between two rules; returns the rule, which also closes the sections below it. */
export function printFiguresHeading(width: number, summary: string[]): string {
  const line = '-'.repeat(width);
  console.log(`\n${line}\nFIGURES (${summary.join('; ')})\n${line}`);
  return line;
}

/** Labels left-aligned and figures right-aligned, so columns of figures line up by their last digit. */
export function tableRow(label: string, cells: string[], labelWidth: number, cellWidth: number): string {
  return label.padEnd(labelWidth) + cells.map((c) => c.padStart(cellWidth)).join('');
}

/** Sizes in MB of an SQLite database file and its -wal and -shm files (0 for one that is not there). */
export function sqliteFilesMb(path: string): { db: number; wal: number; shm: number } {
  const size = (ext: string) => { try { return statSync(path + ext).size / MB; } catch { return 0; } };
  return { db: size(''), wal: size('-wal'), shm: size('-shm') };
}

/** Writes bench/results/`name`.json and says where. */
export function writeResults(name: string, results: unknown): void {
  const out = join(dirname(fileURLToPath(import.meta.url)), 'results', `${name}.json`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(results, null, 2) + '\n');
  console.log(`\nwritten ${out}`);
}
