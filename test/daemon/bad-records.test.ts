// One bad record never holds back the good ones: contacts over the API's limits are refused alone before sending, and
// entries the dialer refuses are set aside alone (named, or found by bisection) while the rest of their batch goes in.
import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { Daemon } from '../../daemon/app.ts';
import { OPS_CSRF_HEADER, OPS_CSRF_VALUE } from '../../daemon/http/ops.ts';
import { campaignNumbers, daemonConfig, dialerFixture, quietLog, testPrefix, type DialerFixture } from '../support/daemon.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { runErrors, runs, settle } from '../support/sync-checks.ts';

const MAPPING = { id: 'id', phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'first' } };
const ADMIN = 'ops-admin-password-for-this-test';

interface Contact { id: string; phone: string; first: string }

/** A daemon with one generic webhook sync, its dialer reached through a proxy that counts and can refuse requests. */
async function webhookDaemon(f: DialerFixture, prefix: string, proxy: Proxy) {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const viaProxy = { ...f, server: { ...f.server, url: proxy.url } };
  const d = await Daemon.start(daemonConfig(viaProxy, prefix, [{ id: 'wh', campaignId: f.campaignId, source: { type: 'webhook', secret }, mapping: MAPPING }],
    { http: { host: '127.0.0.1', port: 0, adminToken: ADMIN } }), { log: quietLog });
  let seq = 0;
  /** Delivers contacts in one signed request (signed here with node:crypto, not the daemon's helper) and waits for them. */
  const deliver = async (contacts: Contact[]) => {
    const body = JSON.stringify({ contacts });
    const id = `msg_${++seq}_${randomBytes(4).toString('hex')}`;
    const ts = String(Math.floor(Date.now() / 1000));
    const sig = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(`${id}.${ts}.${body}`).digest('base64');
    const res = await fetch(`${d.address}/webhooks/wh`, {
      method: 'POST', body,
      headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${sig}` },
    });
    expect(res.status).toBe(200);
    await settle(d);
  };
  return { d, deliver };
}

const contacts = (from: number, count: number): Contact[] =>
  Array.from({ length: count }, (_, i) => ({ id: `c${from + i}`, phone: validPhone(from + i), first: `Name ${from + i}` }));

/** The add requests the dialer was sent (answered by it or by the proxy). */
const adds = (proxy: Proxy) => proxy.exchanges.filter((e) => e.method === 'POST' && /\/numbers(\?|$)/.test(e.path));

async function phonesIn(f: DialerFixture): Promise<Map<string, string[]>> {
  const list = await campaignNumbers(f);
  const out = new Map(list.map((n) => [n.number, n.varValues]));
  expect(out.size).toBe(list.length); // each phone number once
  return out;
}

/** The newest run that read contacts (a follow-up plan run after a batch reads none). */
async function lastDelivery(d: Daemon) {
  const run = (await runs(d, 'wh')).find((r) => r.seen > 0);
  expect(run).toBeDefined();
  return run!;
}

/** The operator's "Retry parked records" on /ops, and the run it queues. */
async function retryParked(d: Daemon): Promise<void> {
  const res = await fetch(`${d.address}/ops/api/syncs/wh/retry`, {
    method: 'POST', headers: { authorization: `Basic ${Buffer.from(`ops:${ADMIN}`).toString('base64')}`, [OPS_CSRF_HEADER]: OPS_CSRF_VALUE },
  });
  expect(res.status).toBe(200);
  await settle(d);
}

async function parked(d: Daemon): Promise<Record<string, string>> {
  return d.redis.hgetall(d.runtimes.get('wh')!.state.keys.parked);
}

interface Setup { f: DialerFixture; proxy: Proxy; d: Daemon; deliver: (contacts: Contact[]) => Promise<void> }

/** A reference server, the proxy in front of it and the daemon, for the tests of one describe block. */
function setUp(server: Parameters<typeof dialerFixture>[0] = {}): Setup {
  const redis = testPrefix();
  const t = {} as Setup;
  beforeAll(async () => {
    t.f = await dialerFixture(server);
    t.proxy = await startProxy(t.f.server.url);
    Object.assign(t, await webhookDaemon(t.f, redis.prefix, t.proxy));
  });
  afterAll(async () => {
    await t.d?.close();
    await t.proxy?.close();
    await t.f?.server.close();
    await redis.cleanup();
  });
  return t;
}

describe('one bad record among good ones (generic webhook source)', () => {
  const t = setUp();
  beforeEach(() => {
    t.proxy.exchanges.length = 0;
    t.proxy.interceptWithBody = null;
  });

  it('the issue\'s batch: a valid contact goes in; an invalid number and a 1,100-character variable are refused alone, in words', async () => {
    await t.deliver([
      { id: 'ok', phone: validPhone(1), first: 'Ann' },
      { id: 'badnumber', phone: '12345', first: 'Bob' },
      { id: 'longvar', phone: validPhone(2), first: 'x'.repeat(1100) },
    ]);
    const now = await phonesIn(t.f);
    expect([...now.keys()]).toEqual([validPhone(1)]);
    expect(now.get(validPhone(1))).toEqual(['Ann']);
    const run = await lastDelivery(t.d);
    expect(run).toMatchObject({ seen: 3, pushed: 1, rejected: 0, invalid: 2 });
    const errors = await runErrors(t.d, 'wh', run!.id);
    expect(errors.map((e) => [e.contactId, e.code])).toEqual([['badnumber', 'invalid_number'], ['longvar', 'bad_record']]);
    expect(errors[1]!.reason).toBe('variable FirstName (field first) is 1,100 characters long; the dialer takes at most 1,000, so the contact is not sent until the field is shortened');
    expect(await parked(t.d)).toEqual({});
    expect(adds(t.proxy)).toHaveLength(1);
  });

  it('a contact refused for its variable keeps what the campaign holds for it, and goes in once the field is fixed', async () => {
    await t.deliver([{ id: 'longvar', phone: validPhone(2), first: 'y'.repeat(1001) }]);
    expect((await phonesIn(t.f)).has(validPhone(2))).toBe(false);
    expect(adds(t.proxy)).toHaveLength(0);
    await t.deliver([{ id: 'longvar', phone: validPhone(2), first: 'y'.repeat(1000) }]);
    expect((await phonesIn(t.f)).get(validPhone(2))).toEqual(['y'.repeat(1000)]);
    // A later over-long value leaves the number there with its last good variables, not deleted, not replaced.
    await t.deliver([{ id: 'longvar', phone: validPhone(2), first: 'z'.repeat(1500) }]);
    expect((await phonesIn(t.f)).get(validPhone(2))).toEqual(['y'.repeat(1000)]);
  });

  it('1 over-long contact among 999 good ones: 999 go in, in one whole request; the one is refused with its reason', async () => {
    const batch = contacts(100, 1000);
    batch[500]!.first = 'z'.repeat(1100);
    await t.deliver(batch);
    const now = await phonesIn(t.f);
    for (const [i, c] of batch.entries()) expect(now.has(c.phone), `contact ${i}`).toBe(i !== 500);
    expect(adds(t.proxy)).toHaveLength(1);
    const run = await lastDelivery(t.d);
    expect(run).toMatchObject({ seen: 1000, pushed: 999, rejected: 0, invalid: 1 });
    expect((await runErrors(t.d, 'wh', run!.id)).map((e) => e.contactId)).toEqual(['c600']);
  });

  it('the dialer names one refused entry (400 with a JSON pointer): it alone is parked with the dialer\'s words, the rest go in with one more request', async () => {
    const batch = contacts(1200, 1000);
    const bad = batch[317]!.phone;
    t.proxy.interceptWithBody = (req, body) => {
      if (req.method !== 'POST') return undefined;
      const entries = JSON.parse(body.toString()) as { number: string }[];
      const i = entries.findIndex((e) => e.number === bad);
      if (i < 0) return undefined;
      return {
        status: 400, headers: { 'content-type': 'application/problem+json' },
        body: JSON.stringify({
          type: '/problems/invalid-request', title: 'Invalid request', status: 400, detail: 'The request is invalid', message: 'The request is invalid',
          errors: [{ in: 'body', name: `/${i}/number`, detail: `Entry ${i} is a number this dialer will not call` }],
        }),
      };
    };
    await t.deliver(batch);
    const now = await phonesIn(t.f);
    for (const c of batch) expect(now.has(c.phone)).toBe(c.phone !== bad);
    expect(adds(t.proxy).map((e) => e.status)).toEqual([400, 201]);
    expect(await parked(t.d)).toEqual({ [bad]: expect.stringContaining('the dialer refused it: the entry is a number this dialer will not call') });
    const run = await lastDelivery(t.d);
    expect(run).toMatchObject({ seen: 1000, pushed: 999, rejected: 1 });

    // The dialer takes it now: the operator's retry sends it alone.
    t.proxy.interceptWithBody = null;
    t.proxy.exchanges.length = 0;
    await retryParked(t.d);
    expect((await phonesIn(t.f)).has(bad)).toBe(true);
    expect(adds(t.proxy)).toHaveLength(1);
    expect(await parked(t.d)).toEqual({});
  });

  it('a refusal that names no entry is bisected: 999 go in within 2 × log2(1,000) + 1 requests; a retry from /ops then adds the one alone, a webhook\'s run does not', async () => {
    const batch = contacts(2300, 1000);
    const bad = batch[777]!.phone;
    t.proxy.interceptWithBody = (req, body) => (req.method === 'POST' && body.toString().includes(`"${bad}"`)
      ? { status: 400, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'Bad Request' }) }
      : undefined);
    await t.deliver(batch);
    const now = await phonesIn(t.f);
    for (const c of batch) expect(now.has(c.phone)).toBe(c.phone !== bad);
    const requests = adds(t.proxy).length;
    expect(requests).toBeGreaterThan(2);
    expect(requests).toBeLessThanOrEqual(21);
    expect(await parked(t.d)).toEqual({ [bad]: expect.stringContaining('the dialer refused it: POST') });

    // A webhook's run does not retry parked records (that would make each webhook cost the parked count).
    t.proxy.exchanges.length = 0;
    await t.deliver(contacts(3400, 1));
    expect(adds(t.proxy)).toHaveLength(1);
    expect(Object.keys(await parked(t.d))).toEqual([bad]);

    // The dialer takes it now: the operator's retry sends it alone.
    t.proxy.interceptWithBody = null;
    t.proxy.exchanges.length = 0;
    const before = (await phonesIn(t.f)).size;
    await retryParked(t.d);
    const after = await phonesIn(t.f);
    expect(after.has(bad)).toBe(true);
    expect(after.size).toBe(before + 1);
    expect(adds(t.proxy)).toHaveLength(1);
    expect(await parked(t.d)).toEqual({});
  });
});

describe('a dialer that takes fewer numbers a request than the daemon sends (413)', () => {
  const t = setUp({ limits: { numbersPerRequest: 300 } });

  it('splits the batch until the server takes it: every number goes in, none parked', async () => {
    const batch = contacts(4000, 1000);
    await t.deliver(batch);
    expect((await phonesIn(t.f)).size).toBe(1000);
    expect(await parked(t.d)).toEqual({});
    // 1000 → 413; 500 + 500 → 413 each; 4 × 250 → 201.
    expect(adds(t.proxy).map((e) => e.status)).toEqual([413, 413, 201, 201, 413, 201, 201]);
  });

  it('a 429 in the middle of splitting: what went in is recorded at once and the rest is sent by the next plan, with no look-up of the campaign', async () => {
    t.proxy.exchanges.length = 0;
    const batch = contacts(5000, 1000);
    let posts = 0;
    // The fourth request (the second quarter, after the first went in) is refused by the key's rate limit.
    t.proxy.interceptWithBody = (req) => (req.method === 'POST' && /\/numbers(\?|$)/.test(req.url!) && ++posts === 4
      ? { status: 429, headers: { 'content-type': 'application/json', 'retry-after': '1' }, body: JSON.stringify({ message: 'Too Many Requests' }) }
      : undefined);
    await t.deliver(batch);
    const now = await phonesIn(t.f);
    for (const c of batch) expect(now.has(c.phone)).toBe(true);
    expect(await parked(t.d)).toEqual({});
    // Before, the batch stayed in flight and its next attempt read the whole campaign to learn what the first quarter
    // had added: a cost that grows with the campaign, not with the change.
    expect(t.proxy.exchanges.filter((e) => e.method === 'GET' && /\/numbers(\?|$)/.test(e.path))).toHaveLength(0);
    expect(adds(t.proxy).map((e) => e.status).slice(0, 4)).toEqual([413, 413, 201, 429]);
  });
});
