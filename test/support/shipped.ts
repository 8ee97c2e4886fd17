// The check every shipped form of the server and the daemon passes (the installed tarballs, the images, the compose
// file): a reference server given an account, a dialing Dynamic campaign and a key through its console API; a
// daemon configuration with a CSV source and a file sink; and what to read back (the campaign's numbers, the
// mirrored activities).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { releaseVersion } from '../../packaging/release.ts';
import { waitFor } from './daemon.ts';

export const ROOT = join(import.meta.dirname, '../..');
export const VERSION = releaseVersion();

/** release/'s tarballs of this version: made by `./dev release` (./dev test makes them before the tests) when missing. */
export function releaseTarballs(): { daemon: string; server: string; n8n: string } {
  const files = {
    daemon: join(ROOT, 'release', `campaign-sync-${VERSION}.tgz`),
    server: join(ROOT, 'release', `campaign-dialing-server-${VERSION}.tgz`),
    n8n: join(ROOT, 'release', `n8n-nodes-campaign-dialing-${VERSION}.tgz`),
  };
  if (!Object.values(files).every(existsSync)) execFileSync(join(ROOT, 'dev'), ['release', '--no-install'], { cwd: ROOT, stdio: 'inherit' });
  return files;
}

/** An empty folder with the daemon's and the server's tarballs installed in it, and the processes started there. */
export interface Installed {
  dir: string;
  children: ChildProcess[];
  /** Kills what is still running and removes the folder. */
  cleanup(): void;
}

/** Installs the tarballs into a new empty folder as the README says: plain npm, no repository, no development dependencies. */
export function installRelease(prefix: string): Installed {
  const tarballs = releaseTarballs();
  const dir = mkdtempSync(join(tmpdir(), prefix));
  execFileSync('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--loglevel=error', tarballs.daemon, tarballs.server], { cwd: dir, stdio: 'inherit' });
  const children: ChildProcess[] = [];
  return {
    dir, children,
    cleanup() {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Started {
  child: ChildProcess;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  /** stdout and stderr so far, interleaved. */
  output: () => string;
  /** The first match of a pattern in the output (waits up to 30 s). */
  line: (re: RegExp) => Promise<RegExpExecArray>;
}

/**
 * Runs a command in `dir` as a user's shell would, with only PATH and HOME (none of the repository's Node options or
 * tsx loaders): `npx BIN …` through npm, any other BIN from the install's node_modules/.bin.
 */
export function startInstalled({ dir, children }: Installed, argv: string[], env: Record<string, string> = {}): Started {
  const [first, ...rest] = argv;
  const file = first === 'npx' ? 'npx' : join(dir, 'node_modules/.bin', first!);
  const child = spawn(file, rest, { cwd: dir, env: { PATH: process.env.PATH!, HOME: dir, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => { out += c.toString(); });
  child.stderr!.on('data', (c: Buffer) => { out += c.toString(); });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  return {
    child, exited, output: () => out,
    line: (re: RegExp) => waitFor(() => re.exec(out), `${argv.join(' ')} to print ${re}`, 30_000).catch((err: Error) => { throw new Error(`${err.message}\n${out}`); }),
  };
}

const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };

export interface DialerAccount { accountId: string; campaignId: string; token: string }

/** Through the console API: an account, an Active Dynamic campaign dialing all day, a key that adds numbers and reads reports. */
export async function dialerAccount(base: string, consoleToken: string): Promise<DialerAccount> {
  const call = async (path: string, body: unknown) => {
    const res = await fetch(`${base}/console${path}`, {
      method: 'POST', headers: { authorization: `Bearer ${consoleToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== 201) throw new Error(`console POST ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const account = await call('/accounts', { name: 'Shipped Co', timezone: 'America/New_York' });
  const campaign = await call(`/accounts/${account.id}/campaigns`, {
    name: 'From the CSV', type: 'Dynamic', state: 'Active', dialer: { mode: 'Power', agents: 4, maxAttempts: 1, callingHours: ALL_DAY },
  });
  const key = await call(`/accounts/${account.id}/apiKeys`, { name: 'campaign-sync', roles: ['CampaignNumberAdmin', 'CampaignReader'] });
  return { accountId: String(account.id), campaignId: String(campaign.id), token: String(key.token) };
}

/** A CSV of `count` contacts with valid, distinct US numbers (columns id, phone, first). */
export function contactsCsv(count: number, first = 0): string {
  const rows = Array.from({ length: count }, (_, i) => `c${first + i},${validPhone(first + i)},Contact ${first + i}`);
  return `id,phone,first\n${rows.join('\n')}\n`;
}

/** Whether GET url answers 200 (the body read to its end: one left unread keeps a connection busy, and a server's close waits for it). */
export async function answers200(url: string): Promise<boolean> {
  const res = await fetch(url);
  await res.arrayBuffer();
  return res.status === 200;
}

/** How many live numbers the campaign holds (X-Total-Count). */
export async function numberCount(base: string, a: DialerAccount): Promise<number> {
  const res = await fetch(`${base}/v1/accounts/${a.accountId}/campaigns/${a.campaignId}/numbers?range=[0,0]`, { headers: { authorization: `Bearer ${a.token}` } });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`numbers: ${res.status}`);
  return Number(res.headers.get('x-total-count'));
}

/** The campaign's call-detail records (up to 10,000). */
export async function callCount(base: string, a: DialerAccount): Promise<number> {
  const res = await fetch(`${base}/v1/accounts/${a.accountId}/campaigns/${a.campaignId}/reports/callDetails?range=[0,0]`, { headers: { authorization: `Bearer ${a.token}` } });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`call details: ${res.status}`);
  return Number(res.headers.get('x-total-count'));
}

/** The file sink's activities: one JSON line per call attempt, each with its key. */
export function activities(text: string): Array<{ key: string; phone?: string }> {
  return text.split('\n').filter((l) => l.endsWith('}')).map((l) => JSON.parse(l) as { key: string; phone?: string });
}

/**
 * The daemon's configuration for these checks (JSON, which YAML reads): one CSV sync into the campaign, its calls
 * mirrored to a JSON-lines file. Calling-window rules off: the reference server's numbers are simulated callees.
 */
export function csvSyncConfig(o: { redisUrl: string; prefix: string; dialer: string; a: DialerAccount; csv: string; activities: string; host?: string; port?: number; shutdownTimeout?: string }): Record<string, unknown> {
  return {
    redis: { url: o.redisUrl, prefix: o.prefix },
    http: { host: o.host ?? '127.0.0.1', port: o.port ?? 0 },
    dialer: { baseUrl: o.dialer, accountId: o.a.accountId, apiToken: '${DIALER_API_TOKEN}', rateLimit: { perSecond: 50, burst: 100 }, timeZone: 'America/New_York' },
    syncs: [{
      id: 'contacts', campaignId: o.a.campaignId, source: { type: 'csv', path: o.csv },
      mapping: { id: 'id', phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'first' } },
      schedule: { every: '1h' },
      mirror: { sink: { type: 'file', path: o.activities }, every: '2s' },
    }],
    compliance: { off: 'test: the reference server calls simulated numbers' },
    shutdownTimeout: o.shutdownTimeout ?? '10s',
    log: { level: 'info' },
  };
}
