// A Redis written by the daemon before its keys carried hash tags: the next start moves the sync state under the new
// names, so nothing is imported or pushed again, and the old queues are removed.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { Daemon } from '../../daemon/app.ts';
import { campaignKey } from '../../daemon/state/keys.ts';
import { LAYOUT } from '../../daemon/state/layout.ts';
import { daemonConfig, dialerFixture, quietLog, REDIS_URL, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { pullAndSettle } from '../support/sync-checks.ts';

describe('the key layout of an earlier version', () => {
  let f: DialerFixture;
  let hs: HubSpotStandIn;
  const t = testPrefix();
  const redis = new Redis(REDIS_URL);
  beforeAll(async () => {
    f = await dialerFixture();
    hs = await startHubSpotStandIn({ contacts: 40 });
  });
  afterAll(async () => {
    await hs.close(); await f.server.close(); await t.cleanup(); redis.disconnect();
  });

  const config = () => daemonConfig(f, t.prefix, [{
    id: 'hs', campaignId: f.campaignId, source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, searchPerSecond: 50 },
    mapping: { phone: 'phone', defaultCountry: 'US' },
  }]);

  it('is moved on start: the campaign is not pushed again and the old queues are gone', async () => {
    let d = await Daemon.start(config(), { log: quietLog });
    await pullAndSettle(d, 'hs', true);
    const keys = d.runtimes.get('hs')!.state.keys;
    const held = await redis.hlen(keys.have);
    expect(held).toBeGreaterThan(20);
    await d.close(2000);

    // What an earlier version left (before the hash tags, and before the state's version was recorded): the same
    // contents under the names without hash tags, and its queue.
    const ck = campaignKey(f.server.url, f.accountId, f.campaignId);
    const renamed: string[] = [];
    for (const [base, old] of [[keys.sync, `${t.prefix}:sync:hs`], [keys.campaign, `${t.prefix}:campaign:${ck}`]] as const) {
      let cursor = '0';
      do {
        const [next, found] = await redis.scan(cursor, 'MATCH', `${base.replace(/[{}]/g, '\\$&')}:*`, 'COUNT', 1000);
        cursor = next;
        for (const k of found) { await redis.rename(k, `${old}${k.slice(base.length)}`); renamed.push(k); }
      } while (cursor !== '0');
    }
    expect(renamed.length).toBeGreaterThan(5);
    await redis.del(`${t.prefix}:{daemon}:layout`, `${t.prefix}:{daemon}:state-version`);
    const oldQueue = new Queue('syncs', { connection: redis, prefix: t.prefix });
    await oldQueue.add('pull', { syncId: 'hs' });
    await oldQueue.close();
    expect(await redis.exists(`${t.prefix}:syncs:meta`)).toBe(1);

    d = await Daemon.start(config(), { log: quietLog });
    try {
      expect(await redis.get(`${t.prefix}:{daemon}:layout`)).toBe(LAYOUT);
      expect(await redis.hlen(keys.have)).toBe(held);
      expect(await redis.exists(`${t.prefix}:sync:hs:contacts`)).toBe(0);
      expect(await redis.exists(`${t.prefix}:syncs:meta`)).toBe(0);
      // Its state intact, the next run is incremental and changes nothing in the campaign.
      const next = await pullAndSettle(d, 'hs');
      expect(next).toMatchObject({ mode: 'incremental', pushed: 0, deleted: 0 });
      await waitFor(async () => (await redis.hlen(keys.have)) === held, 'the campaign unchanged');
    } finally {
      await d.close(2000);
    }
  }, 60_000);
});
