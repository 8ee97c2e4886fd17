// The daemon's operations page (/ops): its auth and CSRF guards over HTTP, and in a real browser (Chromium via
// playwright-core) a finished sync's counts, a record the dialer really refused (a paused campaign) and its retry, bull-board.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { Daemon } from '../../daemon/app.ts';
import { ConfigError, parseConfig } from '../../daemon/config.ts';
import { launchChromium } from '../support/browser.ts';
import { campaignNumbers, daemonConfig, dialerFixture, quietLog, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { createKey } from '../support/server.ts';
import { pullAndSettle, runs, settle } from '../support/sync-checks.ts';

const TOKEN = `ops-${randomBytes(16).toString('hex')}`;
const MAPPING = { id: 'id', phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'first' } };
/** A contact id that would be markup if the page put it into innerHTML. */
const HOSTILE_ID = '<b>c3</b>';

const basic = (password: string, user = 'ops') => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('operations page', () => {
  const redis = testPrefix();
  const offRedis = testPrefix();
  const writableRedis = testPrefix();
  let f: DialerFixture;
  let d: Daemon;
  let off: Daemon;
  let writable: Daemon;
  let dir: string;
  let csv: string;
  let adminKey: string;
  let browser: Browser;

  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${d.address}${path}`, { headers });
  const authed = (path: string, init: RequestInit = {}) =>
    fetch(`${d.address}${path}`, { ...init, headers: { authorization: basic(TOKEN), ...(init.headers as Record<string, string>) } });
  const setState = async (state: 'Active' | 'Paused') => {
    const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/state`, { method: 'PUT', token: adminKey, json: state });
    expect(res.status).toBe(200);
  };
  const writeContacts = (rows: [string, string, string][]) =>
    writeFile(csv, ['id,phone,first', ...rows.map((r) => r.join(','))].join('\n') + '\n');

  beforeAll(async () => {
    f = await dialerFixture();
    adminKey = await createKey(f.server, f.accountId, ['CampaignAdmin']);
    dir = await mkdtemp(join(tmpdir(), 'cds-ops-'));
    csv = join(dir, 'leads.csv');
    await writeContacts([['c1', validPhone(1), 'Ann'], ['c2', validPhone(2), 'Ben']]);
    const sync = { id: 'leads', campaignId: f.campaignId, source: { type: 'csv', path: csv }, mapping: MAPPING, schedule: { every: '1d' } };
    [d, off, writable, browser] = await Promise.all([
      Daemon.start(daemonConfig(f, redis.prefix, [sync], { http: { host: '127.0.0.1', port: 0, adminToken: TOKEN } }), { log: quietLog }),
      // The same sync without an admin token: the page is off (no workers, so it never touches the campaign).
      Daemon.start(daemonConfig(f, offRedis.prefix, [sync]), { log: quietLog, workers: false }),
      Daemon.start(daemonConfig(f, writableRedis.prefix, [sync], { http: { host: '127.0.0.1', port: 0, adminToken: TOKEN, queuesWritable: true } }),
        { log: quietLog, workers: false }),
      launchChromium(),
    ]);
    // The first run (a full import) pushes both contacts.
    await waitFor(async () => (await runs(d, 'leads')).some((r) => r.status === 'done'), 'the first run');
    await settle(d);

    // The dialer refuses a third contact for real: numbers can be added only to an Active campaign (409).
    await setState('Paused');
    await writeContacts([['c1', validPhone(1), 'Ann'], ['c2', validPhone(2), 'Ben'], [HOSTILE_ID, validPhone(3), 'Cat']]);
    const run = await pullAndSettle(d, 'leads');
    expect(run).toMatchObject({ status: 'done', seen: 3, pushed: 0, rejected: 1 });
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all([d?.close(), off?.close(), writable?.close()]);
    await f?.server.close();
    await Promise.all([redis.cleanup(), offRedis.cleanup(), writableRedis.cleanup()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('asks for the admin token (HTTP Basic, any user name) and refuses a wrong one', async () => {
    const wrong: Record<string, string>[] = [{}, { authorization: basic('wrong-token-of-some-length') }, { authorization: basic(`${TOKEN}x`) },
      { authorization: `Bearer ${TOKEN}` }, { authorization: 'Basic !!!' }];
    for (const headers of wrong) {
      for (const path of ['/ops', '/ops/api/syncs', '/ops/queues/', '/ops/queues/api/queues']) {
        const res = await get(path, headers);
        expect(res.status, `${path} with ${JSON.stringify(headers)}`).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Basic realm="campaign-sync"');
        expect(await res.text()).not.toContain(TOKEN);
      }
    }
    const page = await get('/ops', { authorization: basic(TOKEN, 'anyone') });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(await page.text()).toContain('Retry parked records');
  });

  it('throttles wrong admin tokens per client like the console (20, then 429 with Retry-After), logging once, not per guess', async () => {
    const throttled = testPrefix();
    const lines: { msg: string; wrong?: number }[] = [];
    const log = pino({ level: 'warn' }, { write: (l: string) => { lines.push(JSON.parse(l)); } });
    const sync = { id: 'leads', campaignId: f.campaignId, source: { type: 'csv', path: csv }, mapping: MAPPING, schedule: { every: '1d' } };
    const t = await Daemon.start(daemonConfig(f, throttled.prefix, [sync], { http: { host: '127.0.0.1', port: 0, adminToken: TOKEN } }), { log, workers: false });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 25; i++) statuses.push((await fetch(`${t.address}/ops/api/syncs`, { headers: { authorization: basic(`guess-${i}-of-some-length`) } })).status);
      expect(statuses).toEqual([...Array(20).fill(401), ...Array(5).fill(429)]);
      const refused = await fetch(`${t.address}/ops/api/syncs`, { headers: { authorization: basic('one-more-guess-of-some-length') } });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect((await refused.json()).error).toMatch(/too many wrong admin tokens from this address; try again in \d+ s/);
      // While throttled, even the right token waits: otherwise the guesses would go on, only unanswered.
      expect((await fetch(`${t.address}/ops/api/syncs`, { headers: { authorization: basic(TOKEN) } })).status).toBe(429);
      const logged = lines.filter((l) => l.msg.startsWith('operations page: wrong admin token'));
      expect(logged).toHaveLength(1);
      expect(JSON.stringify(lines)).not.toContain('guess-');
      // Another daemon's page (another client bucket) is not held back by these guesses.
      expect((await get('/ops/api/syncs', { authorization: basic(TOKEN) })).status).toBe(200);
    } finally {
      await t.close();
      await throttled.cleanup();
    }
  });

  it('is off without http.adminToken: 404 saying how to turn it on', async () => {
    for (const path of ['/ops', '/ops/api/syncs', '/ops/queues/']) {
      const res = await fetch(`${off.address}${path}`, { headers: { authorization: basic(TOKEN) } });
      expect(res.status).toBe(404);
      expect((await res.json() as { error: string }).error).toContain('http.adminToken');
    }
    // The rest of the daemon's HTTP side is there.
    expect((await fetch(`${off.address}/metrics`)).status).toBe(200);
  });

  it('serves each sync\'s status as JSON, parked record masked', async () => {
    const res = await authed('/ops/api/syncs');
    expect(res.status).toBe(200);
    const body = await res.json() as { queuesWritable: boolean; syncs: any[] };
    expect(body.queuesWritable).toBe(false);
    expect(body.syncs).toHaveLength(1);
    const s = body.syncs[0];
    expect(s).toMatchObject({ sync: 'leads', source: 'csv', campaignId: f.campaignId, contacts: 3, numbers: 2, parked: 1, mirror: null, lastCompareAt: null, compareEvery: null });
    expect(s.parkedRecords).toEqual([expect.objectContaining({ contactId: HOSTILE_ID, code: 'http_409' })]);
    expect(s.parkedRecords[0].phone).toMatch(new RegExp(`${validPhone(3).slice(-4)}$`));
    expect(JSON.stringify(body)).not.toContain(validPhone(3));
  });

  it('shows the mirror\'s lag once the mirror has reported it', async () => {
    const key = d.runtimes.get('leads')!.state.keys.mirror.meta;
    const lastRecordAt = new Date(Date.now() - 90_000).toISOString();
    await d.redis.hset(key, { lagMs: 90_000, mirrored: 17, parked: 2, lastRecordAt });
    try {
      const s = (await (await authed('/ops/api/syncs')).json() as { syncs: any[] }).syncs[0];
      expect(s.mirror).toEqual({ lagMs: 90_000, mirrored: 17, parked: 2, lastRecordAt, countsOnly: false });
    } finally {
      await d.redis.del(key);
    }
  });

  it('refuses a retry without the page\'s CSRF header, from another site, or for an unknown sync', async () => {
    const retry = (id: string, headers: Record<string, string>) => authed(`/ops/api/syncs/${id}/retry`, { method: 'POST', headers });
    const before = await d.syncQueue.getJobCounts('wait', 'active', 'delayed');
    expect((await retry('leads', {})).status).toBe(403);
    expect((await retry('leads', { 'x-requested-with': 'XMLHttpRequest' })).status).toBe(403);
    expect((await retry('leads', { 'x-requested-with': 'campaign-sync', 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await retry('leads', { 'x-requested-with': 'campaign-sync', origin: 'https://evil.example' })).status).toBe(403);
    const unknown = await retry('nope', { 'x-requested-with': 'campaign-sync' });
    expect(unknown.status).toBe(404);
    expect((await unknown.json() as { error: string }).error).toContain('"nope"');
    // Nothing was queued or marked for planning.
    expect(await d.syncQueue.getJobCounts('wait', 'active', 'delayed')).toEqual(before);
    expect(await d.redis.scard(d.runtimes.get('leads')!.state.keys.dirty)).toBe(0);
  });

  it('lists the queues through bull-board, read-only by default', async () => {
    const res = await authed(`/ops/queues/api/queues?activeQueue=${encodeURIComponent(d.keys.syncQueue)}&status=completed&page=1`);
    expect(res.status).toBe(200);
    const { queues } = await res.json() as { queues: { name: string; readOnlyMode: boolean; counts: Record<string, number> }[] };
    const names = queues.map((q) => q.name).sort();
    expect(names).toEqual([d.keys.syncQueue, ...[...d.pushQueues.values()].map((q) => q.queue.name)].sort());
    expect(queues.every((q) => q.readOnlyMode)).toBe(true);
    const completed = queues.find((q) => q.name === d.keys.syncQueue)!.counts.completed!;
    expect(completed).toBeGreaterThan(0);
    // Same-origin and authenticated, still refused: the board is read-only.
    for (const action of ['clean/completed', 'retry/completed', 'pause', 'empty']) {
      const r = await authed(`/ops/queues/api/queues/${encodeURIComponent(d.keys.syncQueue)}/${action}`, { method: 'PUT' });
      expect(r.status, action).toBe(405);
    }
    expect(await d.syncQueue.getJobCounts('completed')).toEqual({ completed });
    expect(await d.syncQueue.isPaused()).toBe(false);
  });

  it('with http.queuesWritable, bull-board acts, but only for same-origin requests', async () => {
    const act = (action: string, headers: Record<string, string>) => fetch(`${writable.address}/ops/queues/api/queues/${encodeURIComponent(d.keys.syncQueue)}/${action}`,
      { method: 'PUT', headers: { authorization: basic(TOKEN), ...headers } });
    const listed = await fetch(`${writable.address}/ops/queues/api/queues`, { headers: { authorization: basic(TOKEN) } });
    const { queues } = await listed.json() as { queues: { readOnlyMode: boolean }[] };
    expect(queues.length).toBeGreaterThan(0);
    expect(queues.every((q) => !q.readOnlyMode)).toBe(true);
    // Browsers send cached Basic credentials cross-site too: another site's page must not drive the board.
    expect((await act('pause', { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await act('pause', { origin: 'http://attacker.example' })).status).toBe(403);
    expect(await writable.syncQueue.isPaused()).toBe(false);
    expect((await act('pause', { 'sec-fetch-site': 'same-origin', origin: writable.address! })).status).toBe(200);
    expect(await writable.syncQueue.isPaused()).toBe(true);
    expect((await act('resume', {})).status).toBe(200);
    expect(await writable.syncQueue.isPaused()).toBe(false);
  });

  it('in Chromium, opened from the link `./dev start` prints (user name and token in the URL): loads, refreshes, draws its charts', async () => {
    // demo/start.ts prints http://demo:<token>@127.0.0.1:<port>/ops; no httpCredentials: the URL is all the browser has.
    const printed = `${d.address!.replace('http://', `http://demo:${encodeURIComponent(TOKEN)}@`)}/ops`;
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const pageErrors: string[] = [];
      page.on('pageerror', (e) => pageErrors.push(e.message));
      const requested: string[] = [];
      page.on('request', (r) => requested.push(r.url()));
      expect((await page.goto(printed))?.status()).toBe(200);
      const sync = page.locator('[data-sync="leads"]');
      const [latest] = await runs(d, 'leads');
      await sync.locator(`tr[data-run="${latest!.id}"]`).waitFor({ timeout: 10_000 });
      // Refreshed again (the "updated" time moves): the page's own requests keep working, not just the first render.
      const updated = await page.locator('#updated').filter({ hasNotText: 'never' }).textContent();
      await page.locator('#updated').filter({ hasNotText: updated! }).waitFor({ timeout: 10_000 });
      expect(await page.locator('#problem').isHidden()).toBe(true);
      expect(await sync.locator('[data-chart="numbers"] canvas').count()).toBe(1);
      expect(Number(await sync.locator('[data-chart="numbers"]').getAttribute('data-points'))).toBeGreaterThan(0);
      expect(await page.getByRole('link', { name: 'Queues (bull-board)' }).getAttribute('href')).toBe(`${d.address}/ops/queues/`);
      // Only the navigation itself carried the credentials; the page's requests went to the bare origin.
      expect(requested[0]).toBe(printed);
      expect(requested.filter((u) => u.endsWith('/ops/api/syncs')).length).toBeGreaterThan(1);
      expect(requested.slice(1).filter((u) => !u.startsWith(`${d.address}/`))).toEqual([]);
      expect(pageErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('in Chromium: 401 without credentials; shows the runs and the parked record; retry re-queues it; the queues page loads', async () => {
    const anonymous = await browser.newContext();
    try {
      // Headless Chromium cannot show the login prompt: the navigation fails, after the daemon's 401 challenge.
      const page = await anonymous.newPage();
      const challenge = page.waitForResponse(`${d.address}/ops`);
      const failed = await page.goto(`${d.address}/ops`).then(() => null, (err: Error) => err);
      expect(failed?.message).toContain('ERR_INVALID_AUTH_CREDENTIALS');
      const res = await challenge;
      expect(res.status()).toBe(401);
      expect(await res.headerValue('www-authenticate')).toBe('Basic realm="campaign-sync"');
    } finally {
      await anonymous.close();
    }

    const context = await browser.newContext({ httpCredentials: { username: 'operator', password: TOKEN } });
    try {
      const page = await context.newPage();
      const elsewhere: string[] = [];
      page.on('request', (r) => { if (!r.url().startsWith(`${d.address}/`)) elsewhere.push(r.url()); });
      const pageErrors: string[] = [];
      page.on('pageerror', (e) => pageErrors.push(e.message));
      expect((await page.goto(`${d.address}/ops`))?.status()).toBe(200);

      const sync = page.locator('[data-sync="leads"]');
      const cell = (run: string, field: string) => sync.locator(`tr[data-run="${run}"] [data-field="${field}"]`).textContent();
      const [latest, first] = await runs(d, 'leads');
      await sync.locator(`tr[data-run="${first!.id}"]`).waitFor();
      for (const r of [first!, latest!]) {
        expect(r.status).toBe('done');
        for (const field of ['status', 'seen', 'changed', 'pushed', 'rejected'] as const) expect(await cell(r.id, field), `${r.id} ${field}`).toBe(String(r[field]));
      }
      expect(await cell(first!.id, 'seen')).toBe('2');
      expect(await cell(first!.id, 'pushed')).toBe('2');
      expect(await cell(latest!.id, 'seen')).toBe('3');
      expect(await cell(latest!.id, 'rejected')).toBe('1');
      expect(await sync.locator('[data-field="parked"]').textContent()).toBe('1');
      expect(await sync.locator('[data-field="mirrorLag"]').textContent()).toBe('—');
      // The Do Not Call lists holding it: the company's own, always.
      expect(await sync.locator('[data-field="dncList-company"]').textContent()).toBe('keeps out 0');
      expect(await sync.locator('[data-field="doNotCallLists"] h3').textContent()).toBe('Do Not Call lists');
      // A CSV sync has no comparison (it reads the whole file every run): no such fact.
      expect(await sync.locator('[data-field="lastCompare"]').count()).toBe(0);

      // The parked record, its contact id shown as text (not markup) and the dialer's reason.
      const parked = sync.locator('tr[data-parked]');
      expect(await parked.count()).toBe(1);
      expect(await parked.locator('[data-field="contact"]').textContent()).toBe(HOSTILE_ID);
      expect(await parked.locator('b').count()).toBe(0);
      expect(await parked.locator('[data-field="code"]').textContent()).toBe('http_409');
      expect(await parked.locator('[data-field="reason"]').textContent()).toContain('Paused');

      // The campaign runs again; the operator retries the parked record.
      await setState('Active');
      const runsBefore = (await runs(d, 'leads')).length;
      await sync.getByRole('button', { name: 'Retry parked records' }).click();
      await sync.locator('[data-field="note"]', { hasText: 'Re-queued 1 parked record' }).waitFor();
      await waitFor(async () => (await campaignNumbers(f)).some((n) => n.number === validPhone(3)), 'the retried number in the campaign', 15_000);
      await sync.locator('[data-field="parked"]', { hasText: /^0$/ }).waitFor({ timeout: 15_000 });
      expect(await sync.locator('tr[data-parked]').count()).toBe(0);
      const after = await runs(d, 'leads');
      const retried = after.slice(0, after.length - runsBefore);
      expect(retried.map((r) => r.trigger)).toContain('operator retry');
      expect(retried.reduce((n, r) => n + r.pushed, 0)).toBe(1);
      expect(retried.reduce((n, r) => n + r.rejected, 0)).toBe(0);
      expect((await campaignNumbers(f)).map((n) => n.number).sort()).toEqual([validPhone(1), validPhone(2), validPhone(3)].sort());

      // bull-board, linked from the page, served by the daemon.
      await page.getByRole('link', { name: 'Queues (bull-board)' }).click();
      await page.waitForURL(`${d.address}/ops/queues/`);
      for (const q of [d.keys.syncQueue, ...[...d.pushQueues.values()].map((p) => p.queue.name)]) {
        await page.getByText(q, { exact: true }).first().waitFor();
      }
      expect(pageErrors).toEqual([]);
      expect(elsewhere).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

describe('operations page configuration', () => {
  const base = {
    dialer: { baseUrl: 'https://dialer.example.com', accountId: 'acc-1', apiToken: 'tok' },
    syncs: [{ id: 's', campaignId: 'c', source: { type: 'csv', path: 'x.csv' }, mapping: { phone: 'phone' } }],
  };

  it('takes the admin token from the environment; the board stays read-only unless asked', () => {
    const c = parseConfig({ ...base, http: { adminToken: '${CDS_ADMIN_TOKEN}' } }, 'ops.yaml', { CDS_ADMIN_TOKEN: TOKEN });
    expect(c.http.adminToken).toBe(TOKEN);
    expect(c.http.queuesWritable ?? false).toBe(false);
    expect(parseConfig({ ...base, http: { adminToken: TOKEN, queuesWritable: true } }).http.queuesWritable).toBe(true);
    expect(parseConfig(base).http.adminToken).toBeUndefined();
  });

  it('refuses a short admin token without echoing it', () => {
    let err: unknown;
    try {
      parseConfig({ ...base, http: { adminToken: 'hunter2' } }, 'ops.yaml', {});
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([expect.stringMatching(/^http\.adminToken: .*at least 16 characters/)]);
    expect((err as ConfigError).message).not.toContain('hunter2');
  });
});
