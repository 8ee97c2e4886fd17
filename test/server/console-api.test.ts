// The console API behind the web console, over real HTTP: accounts listed, campaigns with live counters that agree with
// the v1 reports, the call log, a CSV upload into a Static Draft campaign, and each delivery attempt of a webhook endpoint.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallDetail } from '../../api/records.ts';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { createAccount, createCampaign, startServer, type TestServer } from '../support/server.ts';

/** Waits for a condition that no callback announces (checked every 10 ms, for at most 5 s). */
async function eventually(condition: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + 5000;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error('condition not met within 5 s');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('console API for the web console', () => {
  let s: TestServer;
  let hook: Server;
  let hookUrl: string;
  /** Deliveries seen by the receiver, by event id: the first answer of each is a 500, the next a 204. */
  const seen = new Map<string, number>();

  beforeAll(async () => {
    s = await startServer({ seed: 3, clockStart: '2026-01-05T09:00:00Z', webhookSender: { retryBaseMs: 20, timeoutMs: 300 } });
    hook = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const id = String(req.headers['webhook-id']);
        const n = (seen.get(id) ?? 0) + 1;
        seen.set(id, n);
        res.writeHead(n === 1 ? 500 : 204).end();
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(hook.address() as { port: number }).port}/hooks`;
  });
  afterAll(async () => {
    await s.close();
    hook.closeAllConnections();
    await new Promise((r) => hook.close(r));
  });

  it('lists accounts, and campaigns whose counters agree with the v1 reports as calls are made', async () => {
    const acc = await createAccount(s, 'Counted', 'UTC');
    expect((await s.console<{ id: string }[]>('GET', '/accounts')).map((a) => a.id)).toContain(acc.id);
    const c = await createCampaign(s, acc.id, { name: 'Counted', type: 'Dynamic' });
    const fresh = await s.console<any[]>('GET', `/accounts/${acc.id}/campaigns`);
    expect(fresh).toHaveLength(1);
    expect(fresh[0].counters).toEqual({ numbers: {}, calls: 0, answered: 0, answerRate: null });

    await s.console('POST', `/accounts/${acc.id}/campaigns/${c.id}/numbers`, Array.from({ length: 12 }, (_, i) => ({ number: validPhone(i) })));
    await s.console('PUT', `/v1/accounts/${acc.id}/campaigns/${c.id}/state`, 'Active');
    await s.advance(2 * 3600);

    const [row] = await s.console<any[]>('GET', `/accounts/${acc.id}/campaigns?range=[0,0]`);
    const report = await s.console<CallDetail[]>('GET', `/v1/accounts/${acc.id}/campaigns/${c.id}/reports/callDetails?range=[0,999]`);
    const answered = report.filter((r) => r.answeredAtLocal !== null).length;
    expect(report.length).toBeGreaterThan(0);
    expect(row.counters).toMatchObject({ calls: report.length, answered, answerRate: answered / report.length });
    const details = await s.console<{ status: string }[]>('GET', `/v1/accounts/${acc.id}/campaigns/${c.id}/reports/numberDetails?range=[0,999]`);
    const byStatus: Record<string, number> = {};
    for (const d of details) byStatus[d.status] = (byStatus[d.status] ?? 0) + 1;
    expect(row.counters.numbers).toEqual(byStatus);

    // The call log: the newest first, and the same count; one more hour adds to both.
    const log = await s.console<{ calls: number; records: CallDetail[] }>('GET', `/accounts/${acc.id}/campaigns/${c.id}/callLog`);
    expect(log.calls).toBe(report.length);
    expect(log.records.map((r) => r.id)).toEqual(report.map((r) => r.id).reverse().slice(0, 50));
    await s.advance(3600);
    const later = await s.console<{ calls: number; records: CallDetail[] }>('GET', `/accounts/${acc.id}/campaigns/${c.id}/callLog`);
    const total = (await s.console<CallDetail[]>('GET', `/v1/accounts/${acc.id}/campaigns/${c.id}/reports/callDetails?range=[0,999]`)).length;
    expect(later.calls).toBe(total);
    const bad = await s.request(`/console/accounts/${acc.id}/campaigns/${c.id}/callLog?limit=5`, { token: s.consoleToken });
    expect(bad.status).toBe(400);
    expect((await bad.json()).detail).toContain('Unknown parameter "limit"');
  });

  it('uploads a CSV file into a Static Draft campaign, which the v1 upload refuses', async () => {
    const acc = await createAccount(s, 'Uploads', 'UTC');
    const c = await createCampaign(s, acc.id, { name: 'List' });
    const upload = (path: string) => {
      const form = new FormData();
      form.set('firstRowIsHeader', 'true');
      form.set('file', new Blob([`phone,name\n${validPhone(1)},Ann\n${validPhone(2)},Bob\nnope,Eve\n`], { type: 'text/csv' }), 'list.csv');
      return s.request(path, { method: 'POST', body: form, token: s.consoleToken });
    };
    const v1 = await upload(`/console/v1/accounts/${acc.id}/campaigns/${c.id}/numbers/upload`);
    expect(v1.status).toBe(409);
    expect((await v1.json()).detail).toBe('Numbers can be added only to a Dynamic campaign that is Active; campaign "List" is Static and Draft');
    const res = await upload(`/console/accounts/${acc.id}/campaigns/${c.id}/numbers/upload`);
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ rows: 3, createdCount: 2, rejectedCount: 1, varNames: ['name'], rejected: [{ line: 4, value: 'nope' }] });
  });

  it('lists each delivery attempt of an endpoint: a 500 that will be retried, then the delivery', async () => {
    const acc = await createAccount(s, 'Hooks', 'UTC');
    const endpoint = await s.console<{ id: string }>('POST', `/accounts/${acc.id}/webhookEndpoints`, { url: hookUrl });
    const c = await createCampaign(s, acc.id, { name: 'Hooked', type: 'Dynamic', webhookEndpointId: endpoint.id });
    await s.console('PUT', `/v1/accounts/${acc.id}/campaigns/${c.id}/state`, 'Active');
    const path = `/accounts/${acc.id}/webhookEndpoints/${endpoint.id}/deliveries`;
    type Attempts = { attempts: { eventId: string; type: string; attempt: number; outcome: string; detail: string | null }[]; waiting: number };
    let seenNow: Attempts = { attempts: [], waiting: 0 };
    await eventually(async () => (seenNow = await s.console<Attempts>('GET', path)).attempts.length === 2);
    const [second, first] = seenNow.attempts;
    expect(first).toMatchObject({ type: 'campaign.state_changed', attempt: 1, outcome: 'retrying', detail: 'HTTP 500' });
    expect(second).toMatchObject({ eventId: first!.eventId, attempt: 2, outcome: 'delivered', detail: null });
    expect(seenNow.waiting).toBe(0);

    const missing = await s.request(`/console/accounts/${acc.id}/webhookEndpoints/we_nope/deliveries`, { token: s.consoleToken });
    expect(missing.status).toBe(404);
    expect((await missing.json()).detail).toBe('Webhook endpoint "we_nope" does not exist in this account');
  });
});
