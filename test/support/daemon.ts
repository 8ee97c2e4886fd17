// Test fixtures for the daemon: a reference server with a Dynamic campaign, Redis key prefixes that are cleaned up,
// a daemon configuration pointing at both, and waiting for a condition instead of sleeping.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { parseConfig, type Config } from '../../daemon/config.ts';
import { createAccount, createCampaign, createKey, startServer, type TestServer } from './server.ts';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export const quietLog = pino({ level: process.env.DAEMON_TEST_LOG ?? 'silent' });

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

export function daemonConfig(f: DialerFixture, prefix: string, syncs: unknown[], extra: Record<string, unknown> = {}): Config {
  return parseConfig({
    redis: { url: REDIS_URL, prefix },
    http: { host: '127.0.0.1', port: 0 },
    dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 } },
    syncs,
    log: { level: 'error' },
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
