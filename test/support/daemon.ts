// Test fixtures for the daemon: a reference server with a Dynamic campaign, Redis key prefixes that are cleaned up,
// a daemon configuration pointing at both, and waiting for a condition instead of sleeping.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { parseConfig, type Config } from '../../daemon/config.ts';
import { createAccount, createCampaign, createKey, startServer, type TestServer } from './server.ts';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export const quietLog = pino({ level: process.env.DAEMON_TEST_LOG ?? 'silent' });

/**
 * The calling-window rules are on for every sync unless the configuration turns them off: a test that is not about
 * windows would see its campaign paused at night (and its key refused the pause: it has no Campaign Admin), its
 * numbers without a zone refused, a counting mirror added. Such tests run with the rules off, set here once: by
 * `daemonConfig`, `spawnDaemon` and `rulesOff` when the configuration has no top-level `compliance` key. A test about
 * windows gives the sync its own block (which wins), or a top-level one; `compliance: undefined` asks for the default.
 */
export const RULES_OFF = { off: 'test: not about calling windows' } as const;

/** A raw configuration with the rules off for its syncs, unless it has a top-level `compliance` key of its own. */
export function rulesOff<T extends Record<string, unknown>>(raw: T): T {
  return 'compliance' in raw ? raw : { ...raw, compliance: RULES_OFF };
}

/** A fresh key prefix; `cleanup` deletes every key under it. */
export function testPrefix(url = REDIS_URL): { prefix: string; cleanup(): Promise<void> } {
  const prefix = `t${randomBytes(5).toString('hex')}`;
  return {
    prefix,
    async cleanup() {
      const r = new Redis(url, { maxRetriesPerRequest: 1 });
      try {
        let cursor = '0';
        do {
          const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
          cursor = next;
          if (keys.length) await r.unlink(...keys);
        } while (cursor !== '0');
      } finally {
        r.disconnect();
      }
    },
  };
}

export interface DialerFixture { server: TestServer; accountId: string; token: string; campaignId: string }

/** A reference server with an Active Dynamic campaign and a Campaign Number Admin key. */
export async function dialerFixture(options: Parameters<typeof startServer>[0] = {}): Promise<DialerFixture> {
  const server = await startServer(options);
  const account = await createAccount(server, 'Sync Co', 'America/New_York');
  const campaign = await createCampaign(server, account.id, { name: 'Leads', type: 'Dynamic', state: 'Active' });
  const token = await createKey(server, account.id, ['CampaignNumberAdmin']);
  return { server, accountId: account.id, token, campaignId: campaign.id };
}

/** Every live number of the campaign, read through the API. */
export async function campaignNumbers(f: DialerFixture): Promise<{ id: string; number: string; status: string; varValues: string[]; varNames?: string[] }[]> {
  const all = [];
  for (let first = 0; ; first += 5000) {
    const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/numbers?range=${encodeURIComponent(JSON.stringify([first, first + 4999]))}&sort=${encodeURIComponent('["number","ASC"]')}`, { token: f.token });
    if (res.status !== 200) throw new Error(`list numbers: ${res.status} ${await res.text()}`);
    const page = await res.json() as any[];
    all.push(...page);
    if (page.length < 5000) return all;
  }
}

/** The campaign's call-detail records, in end order (up to 10,000). */
export async function callDetailRecords<T = Record<string, unknown>>(f: DialerFixture): Promise<T[]> {
  const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/reports/callDetails?range=[0,9999]&sort=["endedAtLocal","ASC"]`, { token: f.token });
  if (res.status !== 200) throw new Error(`call details: ${res.status} ${await res.text()}`);
  return res.json() as Promise<T[]>;
}

/** How many live numbers the campaign holds (its X-Total-Count). */
export async function numberCount(f: DialerFixture): Promise<number> {
  const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/numbers?range=[0,0]`, { token: f.token });
  await res.arrayBuffer();
  return Number(res.headers.get('x-total-count'));
}

export function daemonConfig(f: DialerFixture, prefix: string, syncs: unknown[], extra: Record<string, unknown> = {}): Config {
  return parseConfig({
    redis: { url: REDIS_URL, prefix },
    http: { host: '127.0.0.1', port: 0 },
    dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 } },
    syncs,
    log: { level: 'error' },
    compliance: RULES_OFF,
    ...extra,
  }, 'test config', {});
}

/** Waits until `check` returns a truthy value (polling what the system exposes, never a fixed sleep). */
export async function waitFor<T>(check: () => Promise<T | null | undefined | false> | T | null | undefined | false, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface DaemonProcess {
  child: import('node:child_process').ChildProcess;
  /** The daemon's HTTP address, once it logged it. */
  address: Promise<string>;
  /** Everything it wrote (JSON log lines). */
  output(): string;
  /** SIGKILL, and wait until it is gone. */
  kill(): Promise<void>;
  /** SIGTERM, and wait for the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Writes the configuration to a file and runs `daemon/cli.ts start` on it in its own process (`cli`: another
 * version's, e.g. the previous one's for the rolling-upgrade test).
 */
export async function spawnDaemon(config: Record<string, unknown>, dir: string, env: Record<string, string> = {}, cli?: string): Promise<DaemonProcess> {
  const { spawn } = await import('node:child_process');
  const { writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const file = join(dir, `daemon-${randomBytes(3).toString('hex')}.json`);
  writeFileSync(file, JSON.stringify(rulesOff(config), null, 2));
  const child = spawn(process.execPath, [cli ?? join(import.meta.dirname, '../../daemon/cli.ts'), 'start', '--config', file], {
    env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let resolveAddress: (a: string) => void;
  const address = new Promise<string>((r) => { resolveAddress = r; });
  const onData = (c: Buffer) => {
    out += c.toString();
    const m = /"address":"([^"]+)"[^\n]*"msg":"daemon listening"/.exec(out);
    if (m) resolveAddress(m[1]!);
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return {
    child, address, output: () => out,
    async kill() { child.kill('SIGKILL'); await exited; },
    async stop() { child.kill('SIGTERM'); return exited; },
  };
}

/** A free loopback port (for a redis-server of a test's own). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as import('node:net').AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * A redis-server of the test's own on `port`, once it answers: persisting every write to `dir` (AOF, fsync always),
 * or with no persistence at all (a restart then starts empty).
 */
export async function startRedisServer(port: number, dir: string, persistence: 'aof' | 'none' = 'aof'): Promise<import('node:child_process').ChildProcess> {
  const { spawn } = await import('node:child_process');
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', persistence === 'aof' ? 'yes' : 'no',
    '--appendfsync', 'always', '--save', '', '--maxmemory-policy', 'noeviction'], { stdio: 'ignore' });
  await waitFor(async () => {
    const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    probe.on('error', () => {});
    try {
      await probe.connect();
      return (await probe.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      probe.disconnect();
    }
  }, 'redis-server to start');
  return server;
}
