// Webhook events: registered endpoints get signed events for calls, number statuses and campaign states,
// retried with backoff until they answer 2xx, and a slow receiver never holds up dialing.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { Campaign } from '../../api/records.ts';
import { addNumbers, createAccount, createKey, q, startServer, type TestServer } from '../support/server.ts';

interface Received { headers: IncomingHttpHeaders; body: string; event: { id: string; type: string; time: string; campaignId: string; data: Record<string, any> } }

/** A local receiver: answers with respond(n) for the n-th delivery of an event id; resolves waiters as events arrive. */
async function receiver(respond: (attempt: number) => number | 'hang' = () => 200) {
  const received: Received[] = [];
  const attempts = new Map<string, number>();
  const waiters: { test: () => boolean; resolve: () => void }[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      const n = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, n);
      const status = respond(n);
      if (status !== 'hang') {
        received.push({ headers: req.headers, body, event: JSON.parse(body) });
        res.writeHead(status).end();
      }
      for (const w of waiters.splice(0)) (w.test() ? w.resolve() : waiters.push(w));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`, received, attempts,
    until: (test: () => boolean) => new Promise<void>((resolve) => (test() ? resolve() : waiters.push({ test, resolve }))),
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** Waits until a condition holds that no callback announces (checked every 10 ms, for at most 5 s). */
async function eventually(condition: () => boolean): Promise<void> {
  const until = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not met within 5 s');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => { for (const c of cleanups.splice(0)) await c(); });

async function setUp(respond?: (attempt: number) => number | 'hang', sender = { retryBaseMs: 20, timeoutMs: 300 }) {
  const hook = await receiver(respond);
  cleanups.push(hook.close);
  const s = await startServer({ seed: 1, clockStart: '2026-01-05T09:00:00Z', webhookSender: sender });
  cleanups.push(() => s.close());
  const acc = (await createAccount(s, 'Events', 'UTC')).id;
  const token = await createKey(s, acc, ['CampaignAdmin']);
  const endpoint = await s.console('POST', `/accounts/${acc}/webhookEndpoints`, { url: hook.url });
  const c: Campaign = await s.console('POST', `/accounts/${acc}/campaigns`, {
    name: 'with events', webhookEndpointId: endpoint.id,
    dialer: { agents: 2, callingHours: { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] } },
  });
  await addNumbers(s, acc, c.id, ['+16462000001', '+16462000002', '+16462000003']);
  const activate = () => s.request(`/v1/accounts/${acc}/campaigns/${c.id}/state`, { method: 'PUT', token, json: 'Active' });
  return { s, acc, token, c, endpoint, hook, activate };
}

function verify(secret: string, r: Received): boolean {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`).digest();
  const given = Buffer.from(String(r.headers['webhook-signature']).replace(/^v1,/, ''), 'base64');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

describe('webhook events', () => {
  it('delivers signed events for state changes, number statuses and finished calls', async () => {
    const { s, c, endpoint, hook, activate } = await setUp();
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const listed = await s.console('GET', `/accounts/${(await s.store.accounts.byPk(1))!.id}/webhookEndpoints`);
    expect(JSON.stringify(listed)).not.toContain(endpoint.secret);

    await activate();
    await s.advance(24 * 3600);
    await hook.until(() => hook.received.some((r) => r.event.type === 'campaign.state_changed' && r.event.data.to === 'Finished'));

    const types = new Set(hook.received.map((r) => r.event.type));
    expect(types).toEqual(new Set(['campaign.state_changed', 'number.status_changed', 'call.finished']));
    for (const r of hook.received) {
      expect(verify(endpoint.secret, r)).toBe(true);
      expect(r.event).toMatchObject({ id: r.headers['webhook-id'], campaignId: c.id, time: expect.stringMatching(/^2026-01-05T/) });
    }
    const first = hook.received.find((r) => r.event.type === 'campaign.state_changed')!;
    expect(first.event.data).toEqual({ from: 'Draft', to: 'Active' });
    const calls = hook.received.filter((r) => r.event.type === 'call.finished');
    const tampered = { ...calls[0]!, body: calls[0]!.body.replace('"attempt":1', '"attempt":2') };
    expect(verify(endpoint.secret, tampered)).toBe(false);
    const reported = s.store.db.get<{ n: number }>('SELECT count(*) AS n FROM call_details')!.n;
    expect(calls).toHaveLength(reported);
    expect(calls[0]!.event.data.call).toMatchObject({ number: expect.stringMatching(/^\+1646/), attempt: 1 });
  });

  it('retries an event with backoff until the endpoint answers 2xx', async () => {
    const { s, hook, activate } = await setUp((attempt) => (attempt < 3 ? 500 : 204));
    await activate();
    await s.advance(5);
    await hook.until(() => hook.received.some((r) => r.event.type === 'campaign.state_changed' && r.headers['webhook-id'] && hook.attempts.get(String(r.headers['webhook-id'])) === 3));
    const stateEvent = hook.received.filter((r) => r.event.type === 'campaign.state_changed');
    // the same event (same id) arrived three times: twice refused, then accepted
    expect(stateEvent.map((r) => r.headers['webhook-id'])).toEqual([stateEvent[0]!.headers['webhook-id'], stateEvent[0]!.headers['webhook-id'], stateEvent[0]!.headers['webhook-id']]);
    // the delivery leaves the outbox once the endpoint accepted it (after the receiver answered: wait for it)
    await eventually(() => s.store.db.get<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries WHERE body LIKE '%campaign.state_changed%'")!.n === 0);
  });

  it('emits number.status_changed to Deleted for a number deleted one by id or many at once', async () => {
    const { s, acc, token, c, hook } = await setUp();
    const api = `/v1/accounts/${acc}/campaigns/${c.id}/numbers`;
    const [one, ...rest] = await (await s.request(api + q({ sort: ['number', 'ASC'] }), { token })).json() as { id: string; number: string }[];
    expect((await s.request(`${api}/${one!.id}`, { method: 'DELETE', token })).status).toBe(200);
    expect((await s.request(api, { method: 'DELETE', token, json: rest.map((n) => n.id) })).status).toBe(204);
    const deletions = () => hook.received.filter((r) => r.event.type === 'number.status_changed' && r.event.data.to === 'Deleted');
    await hook.until(() => deletions().length === 3);
    expect(deletions().map((r) => r.event.data).sort((x, y) => x.number.localeCompare(y.number))).toEqual([one!, ...rest].map((n) => (
      { numberId: n.id, number: n.number, from: 'NotContacted', to: 'Deleted', attempts: 0 })));
  });

  it('never holds up dialing, even when the receiver does not answer', async () => {
    const { s, acc, token, c, hook, activate } = await setUp(() => 'hang');
    await activate();
    await s.advance(24 * 3600);
    const campaign = (await (await s.request(`/v1/accounts/${acc}/campaigns` + q({ filter: { ids: [c.id] } }), { token })).json())[0];
    expect(campaign.state).toBe('Finished');
    await hook.until(() => hook.attempts.size > 0);
    expect(s.store.db.get<{ n: number }>('SELECT count(*) AS n FROM webhook_deliveries')!.n).toBeGreaterThan(3);
  });
});
