// One push queue per dialer API key: syncs sharing a key share its queue (and so its rate limit); another key has its own.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { Daemon } from '../../daemon/app.ts';
import { createCampaign, createKey } from '../support/server.ts';
import { campaignNumbers, daemonConfig, dialerFixture, quietLog, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';

describe('push queues', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cds-push-'));
  const { prefix, cleanup } = testPrefix();
  let f: DialerFixture;
  let daemon: Daemon;
  afterAll(async () => {
    await daemon?.close(2000);
    await cleanup();
    await f.server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeAll(async () => { f = await dialerFixture(); });

  it('are one per API key, shared by the syncs using it', async () => {
    const second = await createCampaign(f.server, f.accountId, { name: 'Second', type: 'Dynamic', state: 'Active' });
    const third = await createCampaign(f.server, f.accountId, { name: 'Third', type: 'Dynamic', state: 'Active' });
    const otherToken = await createKey(f.server, f.accountId, ['CampaignNumberAdmin']);
    const csv = (name: string, from: number) => {
      const file = join(dir, name);
      writeFileSync(file, `id,phone\n${Array.from({ length: 30 }, (_, i) => `${from + i},${validPhone(from + i)}`).join('\n')}\n`);
      return file;
    };
    const sync = (id: string, campaignId: string, file: string, dialer?: object) => ({
      id, campaignId, source: { type: 'csv', path: file }, mapping: { phone: 'phone' }, ...(dialer ? { dialer } : {}),
    });
    daemon = await Daemon.start(daemonConfig(f, prefix, [
      sync('a', f.campaignId, csv('a.csv', 0)),
      sync('b', second.id, csv('b.csv', 100)),
      sync('c', third.id, csv('c.csv', 200), { apiToken: otherToken, rateLimit: { perSecond: 5, burst: 5 } }),
    ]), { log: quietLog, http: false });
    expect(daemon.pushQueues.size).toBe(2);
    expect(daemon.runtimes.get('a')!.push).toBe(daemon.runtimes.get('b')!.push);
    expect(daemon.runtimes.get('c')!.push).not.toBe(daemon.runtimes.get('a')!.push);
    for (const [campaignId, from] of [[f.campaignId, 0], [second.id, 100], [third.id, 200]] as const) {
      const want = Array.from({ length: 30 }, (_, i) => validPhone(from + i)).sort();
      await waitFor(async () => {
        const got = (await campaignNumbers({ ...f, campaignId })).map((n) => n.number).sort();
        return got.length === 30 && got.every((n, i) => n === want[i]);
      }, `campaign ${campaignId} to hold its 30 numbers`);
    }
  });
});
