// A burst of webhooks reaches the dialer in whole batches (issue 29): 1,000 signed generic webhooks of 10 contacts
// cost at most 12 dialer requests, deletions and replaces alike, and a lone webhook is pushed by the run that drains
// it, held by nothing but a webhook still being received.
import { createHmac, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { Daemon } from '../../daemon/app.ts';
import { campaignNumbers, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { countedDaemon, runs, settle, type CountedDialer } from '../support/sync-checks.ts';

const MAPPING = { id: 'id', phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'first' } };

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

/** POSTs every body, `parallel` at once; every answer must be a 200. */
async function postAll(url: string, bodies: string[], sign: (body: string) => Record<string, string>, parallel = 32): Promise<void> {
  let next = 0;
  const refused: string[] = [];
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!;
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...sign(body) }, body });
      if (res.status !== 200) refused.push(`${res.status} ${await res.text()}`);
      else await res.arrayBuffer();
    }
  }));
  expect(refused).toEqual([]);
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
      (dialer) => ({ dialer: { ...dialer.dialer, rateLimit: { perSecond: 10, burst: 10 } } })));
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
    // The run itself planned the three numbers (no later plan job did), and one request carried them.
    expect(run).toMatchObject({ trigger: 'webhook', planned: 3, pushed: 3 });
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

/** validPhone's index of a phone number (the tests use indices below 20,000). */
const phoneIndex = new Map(Array.from({ length: 30_000 }, (_, i) => [validPhone(i), i]));
function indexOfPhone(phone: string): number { return phoneIndex.get(phone)!; }
