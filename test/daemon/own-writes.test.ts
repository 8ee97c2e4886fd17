// The mirror's own writes cost the contact sync nothing: the final status written to a person (Pipedrive) or contact
// (HubSpot) comes back as a change webhook from the CRM stand-in, and the daemon queues no pull for it, while a change
// of anything the sync reads still does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { startPipedriveStandIn, type PipedriveStandIn } from '../../crm-stand-ins/pipedrive.ts';
import { Daemon } from '../../daemon/app.ts';
import { callDetailRecords, daemonConfig, freePort, numberCount, quietLog, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { runs, settle } from '../support/sync-checks.ts';
import { createAccount, createCampaign, createKey, startServer } from '../support/server.ts';

const TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
const STATUS = 'dialer_status';
const WEBHOOK = { user: 'pd-hooks', password: 'a-long-webhook-password' };
const HS_SECRET = 'hs-client-secret-own-writes';

interface Record { number: string; attempt: number; outcome: string }

/** A reference server on the manual clock with a dialing campaign: two attempts at most, so most numbers end final. */
async function dialer(seed: number): Promise<DialerFixture> {
  const server = await startServer({ seed, clockStart: '2026-03-02T13:00:00Z' });
  const account = await createAccount(server, 'Own Writes Co', TZ);
  const campaign = await createCampaign(server, account.id, {
    name: 'Statuses', type: 'Dynamic', state: 'Active',
    dialer: { mode: 'Power', agents: 4, maxAttempts: 2, callingHours: ALL_DAY, retryDelaySeconds: { NoAnswer: 600, Busy: 600, CallError: 600, Machine: 600, Abandoned: 600 } },
  });
  const token = await createKey(server, account.id, ['CampaignNumberAdmin', 'CampaignReader']);
  return { server, accountId: account.id, token, campaignId: campaign.id };
}

/** Attempts that settle their number (a final status the mirror writes to the contact). */
const finals = (all: Record[]) => all.filter((r) => r.outcome === 'Success' || r.outcome === 'FailureWithNoRetryLeft');

async function webhookRuns(d: Daemon, syncId: string): Promise<number> {
  return (await runs(d, syncId)).filter((r) => r.trigger === 'webhook').length;
}

describe('Pipedrive: status writes come back as change webhooks', () => {
  let f: DialerFixture;
  let pd: PipedriveStandIn;
  let d: Daemon;
  let hook: string;
  const { prefix, cleanup } = testPrefix();

  beforeAll(async () => {
    f = await dialer(21);
    const port = await freePort();
    hook = `http://127.0.0.1:${port}/webhooks/pd`;
    pd = await startPipedriveStandIn({ persons: 24, burstPer2Seconds: 100, webhook: { url: hook, ...WEBHOOK } });
    d = await Daemon.start(daemonConfig(f, prefix, [{
      id: 'pd', campaignId: f.campaignId,
      source: { type: 'pipedrive', baseUrl: pd.url, apiToken: pd.apiToken, burstPer2Seconds: 100, webhookUser: WEBHOOK.user, webhookPassword: WEBHOOK.password },
      mapping: { phone: 'phones', defaultCountry: 'US', variables: { Name: 'name' } },
      schedule: { every: '24h' },
      mirror: { every: '1h', statusProperty: STATUS },
    }], { http: { host: '127.0.0.1', port }, dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ } }),
    { log: quietLog });
    await waitFor(async () => (await numberCount(f)) >= 24, 'the persons in the campaign');
    await settle(d);
  });
  afterAll(async () => {
    await d?.close(2000);
    await pd?.close();
    await f?.server.close();
    await cleanup();
  });

  it('mirroring spends one call-log write and one status update per final attempt, and no person read', async () => {
    await f.server.advance(4 * 3600);
    const all = await callDetailRecords<Record>(f);
    const final = finals(all);
    expect(final.length).toBeGreaterThan(5);
    const before = { ...pd.stats };
    const runsBefore = (await runs(d, 'pd')).length;
    await d.triggerMirror('pd', 'test');
    await waitFor(() => pd.callLogs().length >= all.length, 'the call logs');
    await waitFor(() => pd.stats.requests - before.requests >= all.length + final.length, 'the status updates');
    await pd.flushWebhooks();
    await settle(d);
    // Pipedrive sent a change webhook for every status update, and each was acknowledged.
    expect(pd.stats.webhooksSent - before.webhooksSent).toBe(final.length);
    expect(pd.stats.webhooksFailed).toBe(before.webhooksFailed);
    expect(pd.persons().filter((p) => p.custom_fields[STATUS]).length).toBeGreaterThan(0);
    // No run, no read: exactly the call logs (10 tokens each) and the status updates (5 each).
    expect((await runs(d, 'pd')).length).toBe(runsBefore);
    expect(pd.stats.rateLimited).toBe(before.rateLimited);
    expect(pd.stats.requests - before.requests).toBe(all.length + final.length);
    expect(pd.stats.tokensUsed - before.tokensUsed).toBe(10 * all.length + 5 * final.length);
    expect(pd.refusals()).toEqual([]);
  }, 60_000);

  it('a webhook whose previous holds only the changed status field queues no pull either', async () => {
    const p = pd.persons()[3]!;
    const body = {
      meta: { action: 'change', entity: 'person', version: '2.0', id: 'own-write-partial', entity_id: String(p.id), timestamp: new Date().toISOString() },
      data: { ...p, custom_fields: { ...p.custom_fields, [STATUS]: 'Success' } },
      previous: { custom_fields: { [STATUS]: null } },
    };
    const runsBefore = (await runs(d, 'pd')).length;
    const res = await fetch(hook, {
      method: 'POST', body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${WEBHOOK.user}:${WEBHOOK.password}`).toString('base64')}` },
    });
    expect(res.status).toBe(200);
    await settle(d);
    expect((await runs(d, 'pd')).length).toBe(runsBefore);
  });

  it('a change of a field the sync reads (with the status or without) still pulls the person', async () => {
    const p = pd.persons()[5]!;
    const webhooksBefore = await webhookRuns(d, 'pd');
    pd.updatePerson(p.id, { name: 'Renamed Person', custom_fields: { [STATUS]: 'Failure' } });
    await pd.flushWebhooks();
    await waitFor(async () => (await webhookRuns(d, 'pd')) > webhooksBefore, 'the pull the webhook queued');
    await settle(d);
    // The run read the person and found its name (a variable) changed.
    expect((await runs(d, 'pd')).find((r) => r.trigger === 'webhook')).toMatchObject({ status: 'done', changed: 1 });
  });
});

describe('HubSpot: status writes come back as property-change webhooks', () => {
  let f: DialerFixture;
  let hs: HubSpotStandIn;
  let d: Daemon;
  const { prefix, cleanup } = testPrefix();

  beforeAll(async () => {
    f = await dialer(22);
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    hs = await startHubSpotStandIn({ contacts: 24, clientSecret: HS_SECRET, webhookUrl: `${publicUrl}/webhooks/hs` });
    d = await Daemon.start(daemonConfig(f, prefix, [{
      id: 'hs', campaignId: f.campaignId,
      source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, clientSecret: HS_SECRET, searchPerSecond: 50 },
      mapping: { phone: 'phone', defaultCountry: 'US', variables: { firstName: 'firstname' } },
      schedule: { every: '24h' },
      mirror: { every: '1h', statusProperty: STATUS },
    }], { http: { host: '127.0.0.1', port, publicUrl }, dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ } }),
    { log: quietLog });
    await waitFor(async () => (await numberCount(f)) >= 24, 'the contacts in the campaign');
    await settle(d);
  });
  afterAll(async () => {
    await d?.close(2000);
    await hs?.close();
    await f?.server.close();
    await cleanup();
  });

  it('mirroring queues no pull for the status property changes HubSpot reports, and searches nothing', async () => {
    await f.server.advance(4 * 3600);
    const all = await callDetailRecords<Record>(f);
    const final = finals(all);
    expect(final.length).toBeGreaterThan(5);
    const before = { ...hs.stats };
    const runsBefore = (await runs(d, 'hs')).length;
    await d.triggerMirror('hs', 'test');
    await waitFor(() => hs.calls().length >= all.length, 'the calls');
    await waitFor(() => hs.contacts().filter((c) => c.properties[STATUS]).length > 0 && hs.stats.webhooksDelivered > before.webhooksDelivered, 'status webhooks');
    // Every final attempt's status write done: the mirror run has ended.
    await waitFor(async () => JSON.parse((await d.redis.hget(d.runtimes.get('hs')!.state.keys.mirror.meta, 'lastRun')) ?? 'null')?.written >= all.length, 'the mirror run');
    await hs.flushWebhooks();
    await settle(d);
    expect(hs.stats.webhooksDelivered - before.webhooksDelivered).toBeGreaterThan(0);
    expect(hs.stats.webhookFailures).toBe(before.webhookFailures);
    expect((await runs(d, 'hs')).length).toBe(runsBefore);
    expect(hs.stats.searches).toBe(before.searches);
    expect(hs.refusals()).toEqual([]);
  }, 60_000);

  it('a change of a property the sync reads still pulls the contact', async () => {
    const c = hs.contacts()[2]!;
    const webhooksBefore = await webhookRuns(d, 'hs');
    hs.updateContact(c.id, { firstname: 'Renamed', [STATUS]: 'Failure' });
    await hs.flushWebhooks();
    await waitFor(async () => (await webhookRuns(d, 'hs')) > webhooksBefore, 'the pull the webhook queued');
    await settle(d);
    expect((await runs(d, 'hs')).find((r) => r.trigger === 'webhook')).toMatchObject({ status: 'done', changed: 1 });
  });
});
