// A burst of webhooks reaches the dialer in whole batches (issue 29): 1,000 signed generic webhooks of 10 contacts
// cost at most 12 dialer requests, deletions and replaces alike, and a lone webhook is pushed by the run that drains
// it, held by nothing but a webhook still being received. A burst of HubSpot events or Salesforce Outbound Messages
// is read from the CRM in its batches (100, 300 ids a request), not one read a webhook; a burst of Pipedrive webhooks
// costs a few incremental reads (pulls coalesce), and each burst reaches the dialer in whole batches.
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { startPipedriveStandIn, type PipedriveStandIn } from '../../crm-stand-ins/pipedrive.ts';
import { startSalesforceStandIn, type SalesforceStandIn } from '../../crm-stand-ins/salesforce.ts';
import type { Daemon } from '../../daemon/app.ts';
import { DaemonKeys, campaignKey } from '../../daemon/state/keys.ts';
import { campaignNumbers, dialerFixture, REDIS_URL, spawnDaemon, testPrefix, waitFor, type DaemonProcess, type DialerFixture } from '../support/daemon.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { salesforceSync } from '../support/salesforce.ts';
import { countedDaemon, freePort, runs, settle, type CountedDialer } from '../support/sync-checks.ts';

const MAPPING = { id: 'id', phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'first' } };
const OPS_TOKEN = 'burst-test-admin-token-0123456789';

/** Standard Webhooks headers for a body, signed here with node:crypto. */
function signer(secret: string): (body: string) => Record<string, string> {
  let seq = 0;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return (body) => {
    const id = `msg_${++seq}_${randomBytes(4).toString('hex')}`;
    const ts = String(Math.floor(Date.now() / 1000));
    return { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64')}` };
  };
}

/** Calls `send(i)` for i = 0..count-1, `parallel` at once (32: a CRM's webhook burst), and collects what each answered. */
async function inParallel<T>(count: number, send: (i: number) => Promise<T>, parallel = 32): Promise<T[]> {
  let next = 0;
  const out: T[] = [];
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < count) {
      const i = next++;
      out[i] = await send(i);
    }
  }));
  return out;
}

/** POSTs every body, 32 at once; every answer must be a 200. */
async function postAll(url: string, bodies: string[], sign: (body: string) => Record<string, string>): Promise<void> {
  const statuses = await inParallel(bodies.length, async (i) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...sign(bodies[i]!) }, body: bodies[i]! });
    await res.arrayBuffer();
    return res.status;
  });
  expect(statuses.filter((s) => s !== 200)).toEqual([]);
}

/** Webhook bodies of `per` contacts each, contacts `from`..`from + count*per - 1`, with a first name. */
function bodies(from: number, count: number, per: number, first: (i: number) => unknown = (i) => `N${i}`): string[] {
  return Array.from({ length: count }, (_, w) => JSON.stringify({
    contacts: Array.from({ length: per }, (_, k) => {
      const i = from + w * per + k;
      return first(i) === 'deleted' ? { id: `c${i}`, deleted: true } : { id: `c${i}`, phone: validPhone(i), first: first(i) };
    }),
  }));
}

describe('a burst of generic webhooks', () => {
  const redis = testPrefix();
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const sign = signer(secret);
  let f: DialerFixture;
  let dialer: CountedDialer;
  let d: Daemon;
  let close: () => Promise<void>;
  let hook: string;
  /** Dialer requests by kind, since the last call. */
  let mark = 0;
  const requests = () => {
    const all = dialer.proxy.exchanges.slice(mark).filter((e) => /\/numbers(\?|$)/.test(e.path));
    mark = dialer.proxy.exchanges.length;
    return { adds: all.filter((e) => e.method === 'POST').length, deletes: all.filter((e) => e.method === 'DELETE').length };
  };

  beforeAll(async () => {
    // The key's pace of the reference server (10 requests a second), batches of 1,000.
    ({ f, dialer, d, close } = await countedDaemon(redis.prefix, (f) => [{ id: 'burst', campaignId: f.campaignId, source: { type: 'webhook', secret }, mapping: MAPPING }],
      (dialer) => ({ dialer: { ...dialer.dialer, rateLimit: { perSecond: 10, burst: 10 } }, http: { host: '127.0.0.1', port: 0, adminToken: OPS_TOKEN } })));
    hook = `${d.address}/webhooks/burst`;
  });
  afterAll(async () => {
    await close?.();
    await redis.cleanup();
  });

  it('1,000 webhooks of 10 contacts, 32 at once: at most 12 dialer requests, every number once', async () => {
    requests();
    await postAll(hook, bodies(0, 1000, 10), sign);
    await settle(d, 120_000);
    const numbers = await campaignNumbers(f);
    expect(numbers).toHaveLength(10_000);
    expect(new Set(numbers.map((n) => n.number)).size).toBe(10_000);
    // 10 whole batches of 1,000, and a part batch or two where the burst paused (1,000 requests before issue 29).
    const sent = requests();
    expect(sent.adds).toBeLessThanOrEqual(12);
    expect(sent.deletes).toBe(0);
  }, 180_000);

  it('the same 10,000 contacts with new variables: at most 12 delete and 12 add requests, each number replaced once', async () => {
    const before = new Map((await campaignNumbers(f)).map((n) => [n.number, n.id]));
    await postAll(hook, bodies(0, 1000, 10, (i) => `M${i}`), sign);
    await settle(d, 120_000);
    const numbers = await campaignNumbers(f);
    expect(numbers).toHaveLength(10_000);
    for (const n of numbers) {
      expect(n.varValues).toEqual([`M${indexOfPhone(n.number)}`]);
      expect(before.get(n.number)).not.toBe(n.id);
    }
    const sent = requests();
    expect(sent.deletes).toBeLessThanOrEqual(12);
    expect(sent.adds).toBeLessThanOrEqual(12);
  }, 180_000);

  /** Sync jobs of a name that have run (completed ones are kept). */
  const completed = async (name: string) => (await d.syncQueue.getJobs(['completed'])).filter((j) => j.name === name).length;

  it('a lone webhook is pushed by the run that drains it: one dialer request, no plan job after it, nothing delayed', async () => {
    await settle(d);
    requests();
    const plans = await completed('plan');
    const known = (await runs(d, 'burst')).length;
    const body = bodies(20_000, 1, 3)[0]!;
    const res = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json', ...sign(body) }, body });
    expect(res.status).toBe(200);
    const run = await waitFor(async () => {
      const all = await runs(d, 'burst');
      return all.length > known && all[0]!.status === 'done' && all[0]!.pushed === 3 ? all[0] : null;
    }, 'the run of the lone webhook');
    // The run itself planned the three numbers (no later plan job or run did), and one request carried them.
    expect(run).toMatchObject({ trigger: 'webhook', planned: 3, pushed: 3 });
    await settle(d);
    expect((await runs(d, 'burst')).length).toBe(known + 1);
    expect(await completed('plan')).toBe(plans);
    expect((await d.syncQueue.getDelayed()).filter((j) => j.name !== 'tick')).toEqual([]);
    expect(requests()).toEqual({ adds: 1, deletes: 0 });
  });

  /** Starts a webhook request and sends the first bytes of its body; `finish` sends the rest and gives the status. */
  async function begin(body: string, headers: Record<string, string>): Promise<{ finish(): Promise<number> }> {
    const arrivals = d.runtimes.get('burst')!.arrivals;
    const before = arrivals.count;
    const req = httpRequest(hook, { method: 'POST', headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } });
    const status = new Promise<number>((resolve, reject) => {
      req.on('response', (res) => { res.resume(); res.on('end', () => resolve(res.statusCode!)); });
      req.on('error', reject);
    });
    req.write(body.slice(0, 5));
    await waitFor(() => arrivals.count > before, 'the daemon to begin receiving the request');
    return { finish: () => { req.end(body.slice(5)); return status; } };
  }

  for (const [what, signed, at] of [['accepted', true, 20_100], ['refused (bad signature)', false, 20_300]] as const) {
    it(`a part batch waits while another webhook is being received, and goes in one request when that one is ${what}`, async () => {
      await settle(d);
      requests();
      const known = (await runs(d, 'burst')).length;
      const [slowBody, quickBody] = [bodies(at, 1, 3)[0]!, bodies(at + 100, 1, 3)[0]!];
      const slow = await begin(slowBody, signed ? sign(slowBody) : { ...sign(slowBody), 'webhook-signature': 'v1,Zm9yZ2Vk' });
      const res = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json', ...sign(quickBody) }, body: quickBody });
      expect(res.status).toBe(200);
      await waitFor(async () => {
        const all = await runs(d, 'burst');
        return all.length > known && all[0]!.seen === 3 && all[0]!.status === 'done';
      }, 'the run of the quick webhook');
      // The run is over and its three numbers wait, dirty and unclaimed: another delivery is on its way.
      expect(requests()).toEqual({ adds: 0, deletes: 0 });
      expect(await d.redis.scard(d.runtimes.get('burst')!.state.keys.dirty)).toBe(3);
      expect(await slow.finish()).toBe(signed ? 200 : 401);
      await settle(d);
      const phones = new Set((await campaignNumbers(f)).map((n) => n.number));
      for (let i = 0; i < 3; i++) expect(phones.has(validPhone(at + 100 + i))).toBe(true);
      for (let i = 0; i < 3; i++) expect(phones.has(validPhone(at + i))).toBe(signed);
      expect(requests()).toEqual({ adds: 1, deletes: 0 });
    });
  }

  it('a part batch waits while a batch of its sync is being sent, and goes when that batch\'s answer is recorded', async () => {
    await settle(d);
    requests();
    const known = (await runs(d, 'burst')).length;
    let answer!: () => void;
    dialer.proxy.holdAnswers = new Promise((resolve) => { answer = resolve; });
    const send = async (at: number) => {
      const body = bodies(at, 1, 3)[0]!;
      expect((await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json', ...sign(body) }, body })).status).toBe(200);
    };
    try {
      await send(20_600);
      // Its add reached the dialer, whose answer waits at the proxy: the batch is open.
      await waitFor(() => dialer.proxy.exchanges.slice(mark).some((e) => e.method === 'POST'), 'the first webhook\'s add');
      await send(20_700);
      await waitFor(async () => {
        const all = await runs(d, 'burst');
        return all.length > known + 1 && all[0]!.seen === 3 && all[0]!.status === 'done';
      }, 'the run of the second webhook');
      expect(requests()).toEqual({ adds: 1, deletes: 0 });
      expect(await d.redis.scard(d.runtimes.get('burst')!.state.keys.dirty)).toBe(3);
    } finally {
      dialer.proxy.holdAnswers = null;
      answer();
    }
    await settle(d);
    expect(requests()).toEqual({ adds: 1, deletes: 0 });
    const phones = new Set((await campaignNumbers(f)).map((n) => n.number));
    for (const at of [20_600, 20_700]) for (let i = 0; i < 3; i++) expect(phones.has(validPhone(at + i))).toBe(true);
  });

  it('/ops shows the deliveries waiting in the inbox, and 0 once a run has drained them', async () => {
    await settle(d);
    const status = async () => {
      const res = await fetch(`${d.address}/ops/api/syncs`, { headers: { authorization: `Basic ${Buffer.from(`ops:${OPS_TOKEN}`).toString('base64')}` } });
      expect(res.status).toBe(200);
      return ((await res.json()) as { syncs: { sync: string; inbox: number; receiving: number }[] }).syncs.find((s) => s.sync === 'burst')!;
    };
    // Three deliveries as the webhook route queues them, with no run queued yet: what a burst leaves while it drains.
    const inbox = d.runtimes.get('burst')!.state.keys.inbox;
    for (const body of bodies(20_500, 3, 2)) await d.redis.rpush(inbox, JSON.stringify({ c: JSON.parse(body).contacts.map((c: { id: string }) => ({ id: c.id, fields: c })) }));
    expect(await status()).toMatchObject({ inbox: 3, receiving: 0 });
    await d.triggerPull('burst', 'webhook', false, 'inbox');
    await settle(d);
    expect(await status()).toMatchObject({ inbox: 0, receiving: 0 });
    const phones = new Set((await campaignNumbers(f)).map((n) => n.number));
    for (let i = 0; i < 6; i++) expect(phones.has(validPhone(20_500 + i))).toBe(true);
  });

  it('1,000 webhooks deleting 10 contacts each: at most 12 delete requests, and their numbers are gone', async () => {
    requests();
    await postAll(hook, bodies(0, 1000, 10, () => 'deleted'), sign);
    await settle(d, 120_000);
    expect((await campaignNumbers(f)).filter((n) => indexOfPhone(n.number) < 10_000)).toEqual([]);
    const sent = requests();
    expect(sent.deletes).toBeLessThanOrEqual(12);
    expect(sent.adds).toBe(0);
  }, 180_000);
});

/** A daemon whose one sync is given, on a dialer at the key's pace whose requests are counted, its webhooks at `hook`. */
async function crmDaemon(prefix: string, sync: (f: DialerFixture) => { id: string }) {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  let id = '';
  const w = await countedDaemon(prefix, (f) => { const s = sync(f); id = s.id; return [s]; },
    (dialer) => ({ dialer: { ...dialer.dialer, rateLimit: { perSecond: 10, burst: 10 } }, http: { host: '127.0.0.1', port, publicUrl } }));
  return { ...w, hook: `${publicUrl}/webhooks/${id}` };
}

/** The campaign holds each of these phone numbers, and no phone number twice. */
async function holdsOnce(f: DialerFixture, phones: string[]): Promise<void> {
  const held = (await campaignNumbers(f)).map((n) => n.number);
  expect(new Set(held).size).toBe(held.length);
  const all = new Set(held);
  expect(phones.filter((p) => !all.has(p))).toEqual([]);
}

describe('a burst of HubSpot change events', () => {
  const redis = testPrefix();
  let hs: HubSpotStandIn;
  let w: Awaited<ReturnType<typeof crmDaemon>>;

  beforeAll(async () => {
    hs = await startHubSpotStandIn({ contacts: 10 });
    w = await crmDaemon(redis.prefix, (f) => ({
      id: 'hs', campaignId: f.campaignId, mapping: { phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'firstname' } },
      source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, clientSecret: 'hs-client-secret' },
    }));
  });
  afterAll(async () => {
    await w?.close();
    await hs?.close();
    await redis.cleanup();
  });

  it('1,000 contacts created, one webhook each, 32 at once: read 100 a request, added in whole batches, each once', async () => {
    const reads = () => hs.stats.byRoute['POST contacts/batch/read'] ?? 0;
    const [readsBefore, addsBefore] = [reads(), w.dialer.adds()];
    const created = Array.from({ length: 1000 }, (_, i) => hs.createContact({ firstname: `H${i}`, phone: validPhone(30_000 + i) }));
    let eventId = 1;
    const answers = await inParallel(created.length, async (i) => (await hs.sendWebhook([{
      eventId: eventId++, subscriptionId: 4001, portalId: 62515, appId: 1160452, occurredAt: Date.now(),
      subscriptionType: 'contact.creation', attemptNumber: 0, objectId: Number(created[i]!.id), changeSource: 'CRM_UI',
    }], { url: w.hook })).status);
    expect(answers.filter((s) => s !== 200)).toEqual([]);
    await settle(w.d, 120_000);
    await holdsOnce(w.f, created.map((_, i) => validPhone(30_000 + i)));
    // 1,000 ids are 10 batch reads; a few more where the burst paused; never one a webhook (19 reads and 19 add
    // requests before issue 29, when each drain read and sent what it found).
    expect(reads() - readsBefore).toBeGreaterThanOrEqual(10);
    expect(reads() - readsBefore).toBeLessThanOrEqual(13);
    expect(w.dialer.adds() - addsBefore).toBeLessThanOrEqual(3);
    expect(hs.refusals()).toEqual([]);
  }, 180_000);
});

describe('a burst of Salesforce Outbound Messages', () => {
  const redis = testPrefix();
  let sf: SalesforceStandIn;
  let w: Awaited<ReturnType<typeof crmDaemon>>;

  beforeAll(async () => {
    sf = await startSalesforceStandIn({ contacts: 10, leads: 0 });
    w = await crmDaemon(redis.prefix, (f) => salesforceSync(sf, f.campaignId, { object: 'Contact' }));
  });
  afterAll(async () => {
    await w?.close();
    await sf?.close();
    await redis.cleanup();
  });

  it('1,000 Contacts created, one message each, 32 at once: read by Id IN (…) 300 at a time, added in whole batches, each once', async () => {
    const [queriesBefore, addsBefore] = [sf.stats.queries, w.dialer.adds()];
    const created = Array.from({ length: 1000 }, (_, i) => sf.createRecord('Contact', { LastName: `S${i}`, Phone: validPhone(40_000 + i) }));
    const states = await inParallel(created.length, (i) => sf.sendOutboundMessage({ url: w.hook, ids: [created[i]!.values.Id as string] }).settled);
    expect(states.filter((s) => s !== 'acknowledged')).toEqual([]);
    await settle(w.d, 120_000);
    await holdsOnce(w.f, created.map((_, i) => validPhone(40_000 + i)));
    // 1,000 ids are 4 queries of at most 300; a few more where the burst paused; never one a message (21 queries and
    // 21 add requests before issue 29).
    expect(sf.stats.queries - queriesBefore).toBeGreaterThanOrEqual(4);
    expect(sf.stats.queries - queriesBefore).toBeLessThanOrEqual(8);
    expect(w.dialer.adds() - addsBefore).toBeLessThanOrEqual(3);
  }, 180_000);
});

describe('a burst of Pipedrive webhooks', () => {
  const redis = testPrefix();
  const hooks = { user: 'pd-hooks', password: 'a-long-webhook-password' };
  let pd: PipedriveStandIn;
  let w: Awaited<ReturnType<typeof crmDaemon>>;

  beforeAll(async () => {
    pd = await startPipedriveStandIn({ persons: 10 });
    w = await crmDaemon(redis.prefix, (f) => ({
      id: 'pd', campaignId: f.campaignId, mapping: { phone: 'phones', defaultCountry: 'US', variables: { Name: 'name' } },
      source: { type: 'pipedrive', baseUrl: pd.url, apiToken: pd.apiToken, webhookUser: hooks.user, webhookPassword: hooks.password },
    }));
  });
  afterAll(async () => {
    await w?.close();
    await pd?.close();
    await redis.cleanup();
  });

  it('1,000 persons created, one webhook each, 32 at once: a few incremental reads of 500 a page, added in whole batches, each once', async () => {
    const [requestsBefore, addsBefore] = [pd.stats.requests, w.dialer.adds()];
    const created = Array.from({ length: 1000 }, (_, i) => pd.createPerson({ name: `P${i}`, phones: [{ value: validPhone(50_000 + i) }] }));
    const answers = await inParallel(created.length, async (i) => (await pd.sendWebhook('create', created[i]!, null, { url: w.hook, ...hooks })).status);
    expect(answers.filter((s) => s !== 200)).toEqual([]);
    await settle(w.d, 120_000);
    await holdsOnce(w.f, created.map((_, i) => validPhone(50_000 + i)));
    // A pull a webhook queues waits while more webhooks are being received, then reads what changed: 2 pages of 500,
    // a few more where the burst paused (16 requests before issue 29: a pull a run, each reading the whole burst so far).
    expect(pd.stats.requests - requestsBefore).toBeLessThanOrEqual(9);
    expect(w.dialer.adds() - addsBefore).toBeLessThanOrEqual(3);
    expect(pd.stats.refused).toBe(0);
  }, 180_000);
});

describe('kill -9 of the daemon in the middle of a burst', () => {
  const redis = testPrefix();
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const dir = mkdtempSync(join(tmpdir(), 'cds-burst-'));
  const client = new Redis(REDIS_URL);
  let f: DialerFixture;
  let proxy: Proxy;
  let daemon: DaemonProcess | null = null;
  afterAll(async () => {
    await daemon?.kill();
    await proxy?.close();
    await f?.server.close();
    await redis.cleanup();
    client.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });

  it('1,000 webhooks of 10, the daemon killed the moment the dialer added a batch it never heard of: every number once', async () => {
    f = await dialerFixture();
    proxy = await startProxy(f.server.url);
    let duplicates = 0;
    let adds = 0;
    let killed: Promise<void> | null = null;
    proxy.onAnswer = (exchange, body) => {
      if (exchange.method !== 'POST' || !/\/numbers(\?|$)/.test(exchange.path)) return;
      adds++;
      // The server refusing a number as already there would mean the daemon sent it twice.
      duplicates += ((JSON.parse(body.toString() || '{}') as { rejected?: { code: string }[] }).rejected ?? []).filter((r) => r.code === 'duplicate').length;
      if (!killed && adds === 3 && exchange.status === 201) {
        killed = daemon!.kill();
        return 'drop';
      }
    };
    const port = await freePort();
    const config = {
      redis: { url: REDIS_URL, prefix: redis.prefix }, http: { host: '127.0.0.1', port },
      dialer: { baseUrl: proxy.url, accountId: f.accountId, apiToken: '${BURST_DIALER_TOKEN}', rateLimit: { perSecond: 10, burst: 10 } },
      takeoverAfter: '2s', log: { level: process.env.DAEMON_TEST_LOG ?? 'info' },
      syncs: [{ id: 'burst', campaignId: f.campaignId, source: { type: 'webhook', secret: '${BURST_SECRET}' }, mapping: MAPPING, schedule: { every: '1h' } }],
    };
    const env = { BURST_DIALER_TOKEN: f.token, BURST_SECRET: secret };
    daemon = await spawnDaemon(config, dir, env);
    await daemon.address;
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const all = bodies(60_000, 1000, 10);
    // A sender that retries as Standard Webhooks senders do: the same webhook-id, a new timestamp (so a new signature).
    const deliveries = inParallel(all.length, async (i) => {
      const id = `msg_kill_${i}`;
      for (let attempt = 0; ; attempt++) {
        const ts = String(Math.floor(Date.now() / 1000) - attempt);
        const signature = `v1,${createHmac('sha256', key).update(`${id}.${ts}.${all[i]}`).digest('base64')}`;
        try {
          const res = await fetch(`http://127.0.0.1:${port}/webhooks/burst`, {
            method: 'POST', body: all[i], headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': signature },
          });
          await res.arrayBuffer();
          if (res.status === 200) return attempt;
        } catch { /* the daemon is down: try again */ }
        await new Promise((r) => setTimeout(r, 100)); // a sender's back-off between attempts
      }
    });
    await waitFor(() => killed !== null, 'the daemon to be killed at a batch\'s answer');
    await killed;
    daemon = await spawnDaemon(config, dir, env);
    const attempts = await deliveries;
    expect(attempts.some((a) => a > 0)).toBe(true); // some deliveries met the dead daemon and were sent again
    const keys = new DaemonKeys(redis.prefix).sync('burst', campaignKey(proxy.url, f.accountId, f.campaignId));
    const expected = Array.from({ length: 10_000 }, (_, i) => validPhone(60_000 + i)).sort();
    await waitFor(async () => {
      const numbers = (await campaignNumbers(f)).map((n) => n.number).sort();
      if (numbers.length !== expected.length || numbers.some((n, i) => n !== expected[i])) return false;
      return !(await client.hlen(keys.batches)) && !(await client.llen(keys.inbox)) && !(await client.scard(keys.dirty));
    }, 'the campaign to hold every number of the burst once', 120_000);
    expect(duplicates).toBe(0);
  }, 240_000);
});

/** validPhone's index of a phone number (the tests use indices below 20,000). */
const phoneIndex = new Map(Array.from({ length: 30_000 }, (_, i) => [validPhone(i), i]));
function indexOfPhone(phone: string): number { return phoneIndex.get(phone)!; }
