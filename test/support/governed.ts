// A campaign governed by the daemon's calling window on the reference server's manual clock, for the proofs that it
// fails closed (compliance-holdings.test.ts on one Redis, compliance-cluster.test.ts on a Redis Cluster): the server's
// own hours are all day, so only the daemon's window holds the calls; the calls are judged against their callee's
// window with the daemon's own functions.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { WindowStatus } from '../../daemon/compliance/campaign-window.ts';
import { locate } from '../../daemon/compliance/locate.ts';
import { callingWindow, DEFAULT_RULE_SET } from '../../api/calling-window/window.ts';
import type { Daemon } from '../../daemon/app.ts';
import { toUtc } from '../../daemon/local-time.ts';
import { daemonConfig, type DialerFixture } from './daemon.ts';
import { createAccount, createCampaign, createKey, startServer } from './server.ts';

/** The account's time zone: call-detail records give their starts in it. */
export const TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
const OPS_TOKEN = 'an operations token for the holdings tests';
/** The `/ops` API's authorization. */
export const ops = { authorization: `Basic ${Buffer.from(`ops:${OPS_TOKEN}`).toString('base64')}` };

export interface Call { number: string; attempt: number; startedAtLocal: string }

export type GovernedFixture = DialerFixture & { otherToken: string };

/** A reference server whose clock starts at `start` (moved only by the test), with an Active governed campaign. */
export async function governedDialer(start: string): Promise<GovernedFixture> {
  const server = await startServer({ seed: 36, clockStart: start });
  const account = await createAccount(server, 'Holdings Co', TZ);
  const campaign = await createCampaign(server, account.id, {
    name: 'Governed', type: 'Dynamic', state: 'Active',
    // The server's own hours are all day: only the daemon's window holds the calls.
    dialer: { mode: 'Power', agents: 2, maxAttempts: 3, callingHours: ALL_DAY, retryDelaySeconds: { NoAnswer: 600, Busy: 600, CallError: 600, Machine: 600, Abandoned: 600 } },
  });
  const token = await createKey(server, account.id, ['CampaignAdmin']);
  // Another key, as the n8n node or the console would use: it adds numbers the daemon knows nothing of.
  const otherToken = await createKey(server, account.id, ['CampaignNumberAdmin']);
  return { server, accountId: account.id, token, campaignId: campaign.id, otherToken };
}

/**
 * A daemon configuration with one CSV sync `id` (its `rows`, written under `dir`) into the governed campaign, checked
 * every 5 minutes with a 10-minute margin; `redis` replaces the test Redis (a cluster of the test's own), `dialerUrl`
 * the server's address (a proxy in front of it).
 */
export function governedConfig(f: DialerFixture, o: { dir: string; prefix: string; id: string; rows: string; redis?: Record<string, unknown>; dialerUrl?: string }) {
  const csv = join(o.dir, `${o.id}-${o.prefix}.csv`);
  writeFileSync(csv, `id,phone\n${o.rows}\n`);
  return daemonConfig(f, o.prefix, [{
    id: o.id, campaignId: f.campaignId, source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, schedule: { every: '1d' },
    compliance: { checkEvery: '5m', margin: '10m' },
  }], { dialer: { baseUrl: o.dialerUrl ?? f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
    http: { host: '127.0.0.1', port: 0, adminToken: OPS_TOKEN }, ...(o.redis ? { redis: { ...o.redis, prefix: o.prefix } } : {}) });
}

/** Adds numbers to the campaign with the other key (the daemon did not admit them). */
export async function addByHand(f: GovernedFixture, phones: string[]): Promise<void> {
  const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/numbers`, { method: 'POST', token: f.otherToken, json: phones.map((number) => ({ number })) });
  expect(res.status).toBeLessThan(300);
  await res.arrayBuffer();
}

/** The campaign's state as the dialer has it. */
export async function campaignState(f: DialerFixture): Promise<string> {
  const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns?filter=${encodeURIComponent(JSON.stringify({ ids: [f.campaignId] }))}`, { token: f.token });
  return ((await res.json()) as { state: string }[])[0]!.state;
}

/** Calls that started outside their callee's window, the callee judged by its number. */
export const outside = (calls: Call[]) => calls.filter((c) => !callingWindow(locate(c.number), DEFAULT_RULE_SET, toUtc(c.startedAtLocal, TZ)).open);

/** The first sync's calling window as `/ops` shows it. */
export async function windowOf(d: Daemon): Promise<WindowStatus> {
  const body = await (await fetch(`${d.address}/ops/api/syncs`, { headers: ops })).json() as { syncs: { window: WindowStatus }[] };
  return body.syncs[0]!.window;
}
