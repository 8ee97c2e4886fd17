// The operations page's charts and mirror lag, after a demo-sized run (300 HubSpot contacts, calls on the dialer's
// manual clock mirrored back, contacts deleted, a record parked): the history in Redis, its JSON, and in Chromium
// every chart with points for the last hour and the last day (screenshots written under tmp/). The dialer's clock
// runs 3 h ahead of the daemon's for one sync and 3 h behind for another: the lag shows the same either way.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { Daemon } from '../../daemon/app.ts';
import { RESOLUTIONS } from '../../daemon/history/history.ts';
import { toUtc } from '../../daemon/local-time.ts';
import { launchChromium } from '../support/browser.ts';
import { callDetailRecords, campaignNumbers, daemonConfig, numberCount, quietLog, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { createAccount, createCampaign, createKey, startServer } from '../support/server.ts';
import { pullAndSettle, settle } from '../support/sync-checks.ts';

const TOKEN = `charts-${'k'.repeat(24)}`;
const TZ = 'America/New_York';
const HOUR = 3_600_000;
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
const SCREENSHOTS = join(import.meta.dirname, '../../tmp');
const basic = `Basic ${Buffer.from(`ops:${TOKEN}`).toString('base64')}`;

interface CallRecord { number: string; attempt: number; endedAtLocal: string }

/** A reference server on a manual clock `offsetMs` from the wall clock, dialing a Dynamic campaign all day. */
async function dialer(offsetMs: number, agents: number): Promise<DialerFixture & { admin: string }> {
  const server = await startServer({ seed: 5, clockStart: new Date(Date.now() + offsetMs).toISOString() });
  const account = await createAccount(server, 'Charts Co', TZ);
  const campaign = await createCampaign(server, account.id, {
    name: 'Leads', type: 'Dynamic', state: 'Active',
    dialer: { mode: 'Power', agents, maxAttempts: 2, callingHours: ALL_DAY, retryDelaySeconds: { NoAnswer: 1200, Busy: 900, CallError: 900, Machine: 1200, Abandoned: 600 } },
  });
  const token = await createKey(server, account.id, ['CampaignNumberAdmin', 'CampaignReader']);
  const admin = await createKey(server, account.id, ['CampaignAdmin']);
  return { server, accountId: account.id, token, campaignId: campaign.id, admin };
}

const callRecords = (f: DialerFixture) => callDetailRecords<CallRecord>(f);

describe('operations page charts and mirror lag', () => {
  const redis = testPrefix();
  const dir = mkdtempSync(join(tmpdir(), 'cds-ops-charts-'));
  const csv = join(dir, 'behind.csv');
  const activities = join(dir, 'behind-activities.jsonl');
  let ahead: DialerFixture & { admin: string };
  let behind: DialerFixture & { admin: string };
  let hs: HubSpotStandIn;
  let d: Daemon;
  let browser: Browser;

  const api = async (path: string) => {
    const res = await fetch(`${d.address}${path}`, { headers: { authorization: basic } });
    expect(res.status, path).toBe(200);
    return res.json() as Promise<any>;
  };
  const mirrorLag = async (sync: string) => (await api('/ops/api/syncs')).syncs.find((s: any) => s.sync === sync).mirror.lagMs as number;
  const fileLines = () => { try { return readFileSync(activities, 'utf8').split('\n').filter(Boolean).length; } catch { return 0; } };

  /** Moves the dialer's clock on, mirrors, and waits until every call so far is an activity; returns the run's new records. */
  async function callAndMirror(f: DialerFixture, sync: string, seconds: number, written: () => number): Promise<{ all: CallRecord[]; fresh: CallRecord[] }> {
    const before = await callRecords(f);
    await f.server.advance(seconds);
    const all = await callRecords(f);
    const triggered = new Date().toISOString();
    await d.triggerMirror(sync, 'test');
    // Done when the run that wrote them ended (it sets the lag last).
    const meta = d.runtimes.get(sync)!.state.keys.mirror.meta;
    await waitFor(async () => written() >= all.length && JSON.parse(await d.redis.hget(meta, 'lastRun') ?? '{}').at > triggered, `${all.length} activities of ${sync}`);
    const seen = new Set(before.map((r) => `${r.number}/${r.attempt}`));
    return { all, fresh: all.filter((r) => !seen.has(`${r.number}/${r.attempt}`)) };
  }

  beforeAll(async () => {
    [ahead, behind, hs, browser] = await Promise.all([dialer(3 * HOUR, 3), dialer(-3 * HOUR, 2), startHubSpotStandIn({ contacts: 300 }), launchChromium()]);
    writeFileSync(csv, ['id,phone', ...Array.from({ length: 30 }, (_, i) => `b${i},${validPhone(1000 + i)}`)].join('\n') + '\n');
    d = await Daemon.start(daemonConfig(ahead, redis.prefix, [
      {
        id: 'leads', campaignId: ahead.campaignId,
        source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, searchPerSecond: 50 },
        mapping: { phone: 'phone', variables: { firstName: 'firstname' }, defaultCountry: 'US' },
        schedule: { every: '1d' }, mirror: { every: '1d' },
      },
      {
        id: 'behind', campaignId: behind.campaignId, dialer: { baseUrl: behind.server.url, accountId: behind.accountId, apiToken: behind.token },
        source: { type: 'csv', path: csv }, mapping: { phone: 'phone', defaultCountry: 'US' },
        schedule: { every: '1d' }, mirror: { every: '1d', sink: { type: 'file', path: activities } },
      },
    ], {
      http: { host: '127.0.0.1', port: 0, adminToken: TOKEN },
      dialer: { baseUrl: ahead.server.url, accountId: ahead.accountId, apiToken: ahead.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
    }), { log: quietLog });
    await waitFor(async () => (await numberCount(ahead)) === 300 && (await numberCount(behind)) === 30, 'the contacts in both campaigns');
    await settle(d);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await d?.close(2000);
    await Promise.all([hs?.close(), ahead?.server.close(), behind?.server.close()]);
    await redis.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows the lag from the dialer\'s record to the CRM\'s activity whether the dialer\'s clock is ahead of the daemon\'s or behind it', async () => {
    // Catch up with what was dialed while the contacts came in; then one step whose lag is known.
    await callAndMirror(ahead, 'leads', 600, () => hs.calls().length);
    await callAndMirror(behind, 'behind', 600, fileLines);
    for (const [f, sync, written, offset] of [[ahead, 'leads', () => hs.calls().length, 3 * HOUR], [behind, 'behind', fileLines, -3 * HOUR]] as const) {
      const { all, fresh } = await callAndMirror(f, sync, 1200, written);
      expect(fresh.length, sync).toBeGreaterThan(0);
      const ends = (rs: CallRecord[]) => rs.map((r) => toUtc(r.endedAtLocal, TZ));
      const newest = Math.max(...ends(all));
      // The dialer's clock really is off: compared with the daemon's, its newest call ends hours away from now.
      expect(Math.sign(newest - Date.now()), sync).toBe(Math.sign(offset));
      expect(Math.abs(newest - Date.now()), sync).toBeGreaterThan(2 * HOUR);
      // The lag is the 20 dialer-minutes the run caught up with (oldest new call to newest), plus seconds of writing.
      const spread = newest - Math.min(...ends(fresh));
      const lag = await mirrorLag(sync);
      expect(spread, sync).toBeGreaterThan(5 * 60_000);
      expect(lag, sync).toBeGreaterThanOrEqual(spread);
      expect(lag - spread, sync).toBeLessThan(15_000);
    }
  }, 120_000);

  it('keeps each sync\'s history in Redis, bounded: per-minute and per-10-minute points in small hashes that expire', async () => {
    // More of a run: contacts deleted in the CRM (their numbers leave the campaign), and a number the dialer refuses.
    // Only contacts whose numbers can be deleted (NotContacted): one being called would be refused too, and the
    // dialer's earlier hours decide which those are.
    const deletable = new Set((await campaignNumbers(ahead)).filter((n) => n.status === 'NotContacted').map((n) => n.number));
    const gone = hs.contacts().filter((c) => deletable.has(parsePhoneNumberFromString(c.properties.phone!, 'US')!.number)).slice(0, 12);
    expect(gone).toHaveLength(12);
    for (const c of gone) hs.deleteContact(c.id);
    const full = await pullAndSettle(d, 'leads', true);
    expect(full.deleted).toBeGreaterThan(0);
    const paused = await ahead.server.request(`/v1/accounts/${ahead.accountId}/campaigns/${ahead.campaignId}/state`, { method: 'PUT', token: ahead.admin, json: 'Paused' });
    expect(paused.status).toBe(200);
    hs.createContact({ firstname: 'Late', phone: validPhone(4321) });
    expect(await pullAndSettle(d, 'leads')).toMatchObject({ rejected: 1 });
    await d.history.flush();

    const keys = await d.redis.keys(`${redis.prefix}:*:sync:leads:history:*`);
    expect(keys.length).toBeGreaterThan(0);
    let bytes = 0;
    for (const key of keys) {
      const view = key.split(':').at(-2) as keyof typeof RESOLUTIONS;
      const r = RESOLUTIONS[view];
      const block = Number(key.split(':').at(-1));
      expect(key).toBe(d.keys.history('leads', view, block));
      // Expires when its points leave the chart's window, never later.
      const ttl = await d.redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual((block + 1) * r.blockMs + r.keepMs - Date.now() + 1000);
      // A compact listpack: few fields a hash.
      expect(await d.redis.object('ENCODING', key)).toBe('listpack');
      bytes += Number(await d.redis.memory('USAGE', key));
    }
    console.log(`history of sync "leads": ${keys.length} keys, ${bytes} bytes (MEMORY USAGE)`);

    const hour = await api('/ops/api/syncs/leads/history?view=hour');
    expect(hour).toMatchObject({ sync: 'leads', view: 'hour', stepMs: 60_000, points: 60, limits: { dialer: 50, hubspot: 10, 'hubspot-search': 50 } });
    const sum = (name: string) => (hour.series[name] ?? []).reduce((n: number, v: number | null) => n + (v ?? 0), 0);
    expect(sum('added')).toBeGreaterThanOrEqual(300);
    expect(sum('deleted')).toBe(full.deleted);
    // The refused number, and any deletion refused because its number was being called when the clock stopped.
    expect(sum('rejected')).toBe(1 + full.rejected);
    expect(sum('activities')).toBe(hs.calls().length);
    expect(sum('req:dialer')).toBeGreaterThan(0);
    expect(sum('req:hubspot-search')).toBeGreaterThan(0);
    const status = (await api('/ops/api/syncs')).syncs.find((s: any) => s.sync === 'leads');
    expect(status.parked).toBeGreaterThanOrEqual(1);
    expect(hour.series.parked.filter((v: number | null) => v !== null).at(-1)).toBe(status.parked);
    expect(hour.runs.length).toBeGreaterThanOrEqual(3);
    const day = await api('/ops/api/syncs/leads/history?view=day');
    expect(day).toMatchObject({ stepMs: 600_000, points: 144 });
    expect((day.series.added as (number | null)[]).reduce<number>((n, v) => n + (v ?? 0), 0)).toBe(sum('added'));

    for (const bad of ['week', '']) {
      const res = await fetch(`${d.address}/ops/api/syncs/leads/history?view=${bad}`, { headers: { authorization: basic } });
      expect(res.status).toBe(400);
      expect((await res.json() as { error: string }).error).toContain('view must be one of hour, day');
    }
    expect((await fetch(`${d.address}/ops/api/syncs/nope/history`, { headers: { authorization: basic } })).status).toBe(404);
    expect((await fetch(`${d.address}/ops/api/syncs/leads/history`)).status).toBe(401);
  }, 120_000);

  it('in Chromium: every chart has points for the last hour and the last day, under the page\'s strict CSP', async () => {
    const context = await browser.newContext({ httpCredentials: { username: 'operator', password: TOKEN }, viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('console', (m) => { if (m.type() === 'error' && !/status of 404/.test(m.text())) problems.push(m.text()); });
      // Chromium asks for /favicon.ico on its own; anything else missing is a fault of the page.
      page.on('response', (r) => { if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) problems.push(`${r.status()} ${r.url()}`); });
      const elsewhere: string[] = [];
      page.on('request', (r) => { if (!r.url().startsWith(`${d.address}/`)) elsewhere.push(r.url()); });
      expect((await page.goto(`${d.address}/ops`))?.status()).toBe(200);
      mkdirSync(SCREENSHOTS, { recursive: true });
      for (const view of ['hour', 'day']) {
        await page.locator(`button[data-view="${view}"]`).click();
        for (const sync of ['leads', 'behind']) {
          const charts = page.locator(`[data-charts="${sync}"] figure.chart`);
          expect(await charts.count()).toBe(5);
          // The behind sync's CSV run neither deletes nor parks: its numbers and budget charts have points, the others may not.
          const wanted = sync === 'leads' ? ['numbers', 'activities', 'parked', 'lag', 'budgets'] : ['numbers', 'activities', 'lag', 'budgets'];
          for (const chart of wanted) {
            const box = page.locator(`[data-charts="${sync}"] [data-chart="${chart}"]`);
            await waitFor(async () => Number(await box.getAttribute('data-points')) > 0, `${sync} ${chart} (${view}) with points`, 15_000);
            expect(Number(await box.getAttribute('data-runs')), `${sync} ${chart} runs`).toBeGreaterThan(0);
            // uPlot drew it: a canvas of the chart's size.
            const size = await box.locator('canvas').evaluate((c: HTMLCanvasElement) => [c.width, c.height]);
            expect(size[0]).toBeGreaterThan(200);
            expect(size[1]).toBeGreaterThan(100);
          }
        }
        const file = join(SCREENSHOTS, `ops-charts-${view}.png`);
        await page.screenshot({ path: file, fullPage: true });
        console.log(`operations page screenshot (${view}): ${file}`);
      }
      expect(await page.locator('#problem').isHidden()).toBe(true);
      expect(await page.locator('[data-sync="leads"] [data-field="mirrorLag"]').textContent()).not.toBe('0 ms');
      expect(await page.getByText('does not hide the lag').first().isVisible()).toBe(true);
      expect(problems).toEqual([]);
      expect(elsewhere).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
