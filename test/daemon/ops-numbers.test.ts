// /ops's phone number lookup: typed as a person types it, normalised as the sync normalises a CRM's numbers, it shows
// what each sync knows of the number (held, its contact and number id, parked and why, the calling window's evidence)
// and the trace that added or parked it, linked through telemetry.viewerUrl. Over HTTP and in Chromium.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { Daemon } from '../../daemon/app.ts';
import type { NumberStatus } from '../../daemon/sync/status.ts';
import { startTelemetry, stopTelemetry, telemetrySettings } from '../../daemon/telemetry.ts';
import { launchChromium } from '../support/browser.ts';
import { campaignNumbers, daemonConfig, quietLog, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp.ts';
import { createAccount, createCampaign, createKey, startServer } from '../support/server.ts';
import { pullAndSettle, runs, settle } from '../support/sync-checks.ts';

const TOKEN = `ops-${randomBytes(16).toString('hex')}`;
const VIEWER = 'https://jaeger.example/trace/{traceId}';
/** Tuesday 12:00 in New York: every US callee's window is open. */
const NOON = '2026-11-03T17:00:00Z';
const TZ = 'America/New_York';
const HOSTILE_ID = '<b>c3</b>';
/** Arizona (area code 928): the calling window records the zone evidence of it. */
const ARIZONA = '+19282345670';
const basic = (password: string) => `Basic ${Buffer.from(`ops:${password}`).toString('base64')}`;
/** A number as people write it in the US: (212) 555-0199. */
const national = (e164: string) => parsePhoneNumberFromString(e164)!.formatNational();

describe('/ops: a phone number and its trace', () => {
  const { prefix, cleanup } = testPrefix();
  let f: DialerFixture;
  let windowCampaign: string;
  let d: Daemon;
  let otlp: OtlpReceiver;
  let browser: Browser;
  let dir: string;
  let adminKey: string;
  const lookUp = async (typed: string, query = '') => {
    const res = await fetch(`${d.address}/ops/api/numbers/${encodeURIComponent(typed)}${query}`, { headers: { authorization: basic(TOKEN) } });
    return { status: res.status, body: await res.json() as { syncs: NumberStatus[]; refused: { sync: string; reason: string }[]; error?: string } };
  };
  const of = (body: { syncs: NumberStatus[] }, sync: string) => body.syncs.find((s) => s.sync === sync)!;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    // The daemon runs in this process: tracing starts here, as the command line starts it.
    await startTelemetry(telemetrySettings(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url }, 'ops-numbers'));
    const server = await startServer({ seed: 28, clockStart: NOON });
    const account = await createAccount(server, 'Lookup Co', TZ);
    const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
    const [leads, windowed] = await Promise.all(['Leads', 'National'].map((name) =>
      createCampaign(server, account.id, { name, type: 'Dynamic', state: 'Active', dialer: { mode: 'Power', agents: 2, maxAttempts: 1, callingHours: ALL_DAY } })));
    adminKey = await createKey(server, account.id, ['CampaignAdmin']);
    f = { server, accountId: account.id, token: adminKey, campaignId: leads!.id };
    windowCampaign = windowed!.id;
    dir = await mkdtemp(join(tmpdir(), 'cds-ops-numbers-'));
    const csv = join(dir, 'leads.csv');
    await writeFile(csv, `id,phone\nc1,${validPhone(1)}\nc2,${validPhone(2)}\n`);
    await writeFile(join(dir, 'national.csv'), `id,phone\nz1,${ARIZONA}\n`);
    const mapping = { phone: 'phone', defaultCountry: 'US' };
    d = await Daemon.start(daemonConfig(f, prefix, [
      { id: 'leads', campaignId: f.campaignId, source: { type: 'csv', path: csv }, mapping, schedule: { every: '1d' } },
      { id: 'national', campaignId: windowCampaign, source: { type: 'csv', path: join(dir, 'national.csv') }, mapping, schedule: { every: '1d' }, compliance: {} },
    ], {
      http: { host: '127.0.0.1', port: 0, adminToken: TOKEN }, telemetry: { viewerUrl: VIEWER },
      dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
    }), { log: quietLog, now: () => Date.parse(NOON) });
    browser = await launchChromium();
    await waitFor(async () => (await runs(d, 'leads')).some((r) => r.status === 'done') && (await runs(d, 'national')).some((r) => r.status === 'done'), 'the first runs');
    await settle(d);
    await waitFor(async () => (await campaignNumbers({ ...f, campaignId: windowCampaign })).length === 1, 'the Arizona number added');
    // The dialer refuses a third contact for real: a Paused campaign takes no numbers (409); it is parked.
    const paused = await f.server.request(`/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/state`, { method: 'PUT', token: adminKey, json: 'Paused' });
    expect(paused.status).toBe(200);
    await writeFile(csv, `id,phone\nc1,${validPhone(1)}\nc2,${validPhone(2)}\n${HOSTILE_ID},${validPhone(3)}\n`);
    expect(await pullAndSettle(d, 'leads')).toMatchObject({ status: 'done', rejected: 1 });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await d?.close();
    await stopTelemetry();
    await otlp?.close();
    await f?.server.close();
    await cleanup();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('answers a number typed in any common format: held, its contact, number id and the trace of the push that added it', async () => {
    const [added] = (await campaignNumbers(f)).filter((n) => n.number === validPhone(1));
    for (const typed of [national(validPhone(1)), validPhone(1), `00${validPhone(1).slice(1)}`, parsePhoneNumberFromString(validPhone(1))!.formatInternational()]) {
      const { status, body } = await lookUp(typed);
      expect(status, typed).toBe(200);
      const leads = of(body, 'leads');
      expect(leads).toMatchObject({ phone: validPhone(1), state: 'held', contactId: 'c1', numberId: String(added!.id), heldBy: 'leads', parked: null, batch: null, traceOf: 'push' });
      expect(leads.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(leads.traceUrl).toBe(VIEWER.replace('{traceId}', leads.traceId!));
      // The other sync (another campaign) does not know it; it has a calling window, which never admitted it.
      expect(of(body, 'national')).toMatchObject({ state: 'unknown', contactId: null, numberId: null, window: null, traceId: null });
    }
    // The trace is a real one: the push that added the number sent its span under that id.
    const { body } = await lookUp(validPhone(1), '?sync=leads');
    expect(body.syncs.map((s) => s.sync)).toEqual(['leads']);
    await waitFor(() => otlp.spans().some((s) => s.traceId === body.syncs[0]!.traceId && s.name === 'push batch'), 'the push batch span of the trace');
  });

  it('shows a parked number with the dialer\'s reason and the trace of the push that parked it', async () => {
    const { status, body } = await lookUp(national(validPhone(3)), '?sync=leads');
    expect(status).toBe(200);
    const [n] = body.syncs;
    expect(n).toMatchObject({ state: 'parked', contactId: HOSTILE_ID, numberId: null, traceOf: 'push' });
    expect(n!.parked).toMatchObject({ contactId: HOSTILE_ID });
    expect(n!.parked!.reason).toMatch(/Paused|Active|state/i);
    expect(n!.traceUrl).toBe(VIEWER.replace('{traceId}', n!.traceId!));
  });

  it('gives the calling window\'s evidence of a number its window admitted', async () => {
    const { body } = await lookUp('(928) 234-5670', '?sync=national');
    const [n] = body.syncs;
    expect(n).toMatchObject({ phone: ARIZONA, state: 'held', contactId: 'z1' });
    expect(n!.window).toMatchObject({ open: true });
    expect(n!.window!.evidence).toMatch(/area code 928.*America\/Phoenix/);
    // Without a window the field is absent, not null.
    expect('window' in of((await lookUp(ARIZONA)).body, 'leads')).toBe(false);
  });

  it('refuses bad input with a sentence, never a 500', async () => {
    expect(await lookUp('not a number')).toMatchObject({ status: 400, body: { error: expect.stringMatching(/"not a number" is not a phone number \(not a phone number\).*country code/) } });
    expect(await lookUp('12')).toMatchObject({ status: 400, body: { error: expect.stringMatching(/is not a phone number/) } });
    expect(await lookUp('1'.repeat(41))).toMatchObject({ status: 400, body: { error: 'a phone number is at most 40 characters; got 41' } });
    expect(await lookUp('1'.repeat(500))).toMatchObject({ status: 400, body: { error: 'a phone number is at most 40 characters; got 500' } });
    // A slash is part of what was typed, not a path.
    expect(of((await lookUp(`${national(validPhone(1)).slice(0, 5)}/${national(validPhone(1)).slice(6)}`)).body, 'leads')).toMatchObject({ state: 'held', contactId: 'c1' });
    expect(await lookUp('')).toMatchObject({ status: 400, body: { error: expect.stringMatching(/is not a phone number \(empty\)/) } });
    expect(await lookUp(validPhone(1), '?country=XX')).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^country must be a two-letter country code/) } });
    expect(await lookUp(validPhone(1), '?sync=nope')).toMatchObject({ status: 404, body: { error: 'no sync "nope" in this daemon\'s configuration' } });
    // A valid number no sync has heard of is an answer, not an error.
    const unknown = await lookUp(validPhone(99));
    expect(unknown.status).toBe(200);
    expect(unknown.body.syncs.map((s) => s.state)).toEqual(['unknown', 'unknown']);
    // With a country, a number without its country code is read as that country's.
    expect(of((await lookUp('020 7946 0018', '?country=gb')).body, 'leads').phone).toBe('+442079460018');
    // Behind the admin token like the rest of /ops.
    expect((await fetch(`${d.address}/ops/api/numbers/${encodeURIComponent(validPhone(1))}`)).status).toBe(401);
  });

  it('shows a number planned and not yet sent: its batch, and the trace of the plan', async () => {
    let planTrace = '';
    // The push queue paused, the run plans the new contact's number into a batch that waits.
    const [push] = [...d.pushQueues.values()];
    await push!.queue.pause();
    try {
      await writeFile(join(dir, 'leads.csv'), `id,phone\nc1,${validPhone(1)}\nc2,${validPhone(2)}\n${HOSTILE_ID},${validPhone(3)}\nc4,${validPhone(4)}\n`);
      await d.triggerPull('leads', 'test');
      const keys = d.runtimes.get('leads')!.state.keys;
      await waitFor(async () => await d.redis.hget(keys.claims, validPhone(4)), 'the number planned');
      const [n] = (await lookUp(national(validPhone(4)), '?sync=leads')).body.syncs;
      expect(n).toMatchObject({ state: 'planned', contactId: 'c4', numberId: null, traceOf: 'plan', batch: { sync: 'leads', kind: 'add', sending: false } });
      expect(n!.traceUrl).toBe(VIEWER.replace('{traceId}', n!.traceId!));
      planTrace = n!.traceId!;
    } finally {
      await push!.queue.resume();
    }
    // Sent to the still Paused campaign, it is parked, by a push in the trace of its plan.
    const sent = await waitFor(async () => (await lookUp(validPhone(4), '?sync=leads')).body.syncs.find((s) => s.state === 'parked'), 'the number parked once sent');
    expect(sent).toMatchObject({ traceOf: 'push', traceId: planTrace, batch: null });
  });

  it('in Chromium: the lookup field shows a held number\'s trace link, a parked one\'s reason, and says what is wrong with bad input', async () => {
    const context = await browser.newContext({ httpCredentials: { username: 'operator', password: TOKEN } });
    try {
      const page = await context.newPage();
      const pageErrors: string[] = [];
      page.on('pageerror', (e) => pageErrors.push(e.message));
      expect((await page.goto(`${d.address}/ops`))?.status()).toBe(200);
      await page.locator('[data-sync="leads"]').waitFor();
      // Typed as a person writes it, and Enter.
      await page.getByRole('searchbox', { name: 'Phone number' }).fill(national(validPhone(1)));
      await page.getByRole('searchbox', { name: 'Phone number' }).press('Enter');
      const leads = page.locator('[data-lookup-sync="leads"]');
      await leads.locator('[data-field="state"]').filter({ hasText: 'held' }).waitFor();
      expect(await leads.locator('[data-field="phone"]').textContent()).toBe(validPhone(1));
      expect(await leads.locator('[data-field="contact"]').textContent()).toBe('c1');
      const { body } = await lookUp(validPhone(1), '?sync=leads');
      const traceId = body.syncs[0]!.traceId!;
      const link = leads.locator('[data-field="trace"] a');
      expect(await link.textContent()).toBe(traceId);
      expect(await link.getAttribute('href')).toBe(VIEWER.replace('{traceId}', traceId));
      expect(await page.locator('[data-lookup-sync="national"] [data-field="window"]').textContent()).toBe('Calling window: no evidence (the window has not admitted this number)');
      // The page refreshes its syncs every few seconds; the lookup's answer stays.
      const updated = await page.locator('#updated').filter({ hasNotText: 'never' }).textContent();
      await page.locator('#updated').filter({ hasNotText: updated! }).waitFor({ timeout: 10_000 });
      expect(await leads.locator('[data-field="contact"]').textContent()).toBe('c1');

      // One sync only, the parked number: its contact id (markup if the page used innerHTML) and the dialer's reason.
      await page.getByRole('combobox', { name: 'Sync' }).selectOption('leads');
      await page.getByRole('searchbox', { name: 'Phone number' }).fill(validPhone(3));
      await page.getByRole('button', { name: 'Look up' }).click();
      await leads.locator('[data-field="state"]').filter({ hasText: 'parked' }).waitFor();
      expect(await page.locator('[data-lookup-sync]').count()).toBe(1);
      expect(await leads.locator('[data-field="contact"]').textContent()).toBe(HOSTILE_ID);
      expect(await leads.locator('b').count()).toBe(0);
      expect(await leads.locator('[data-field="reason"]').textContent()).toMatch(/^Parked: /);

      // The calling window's evidence.
      await page.getByRole('combobox', { name: 'Sync' }).selectOption('national');
      await page.getByRole('searchbox', { name: 'Phone number' }).fill('928-234-5670');
      await page.getByRole('searchbox', { name: 'Phone number' }).press('Enter');
      await page.locator('[data-lookup-sync="national"] [data-field="window"]').filter({ hasText: 'Calling window: open' }).waitFor();
      expect(await page.locator('[data-lookup-sync="national"] [data-field="window"]').textContent()).toMatch(/Evidence: area code 928/);

      // Bad input: the daemon's sentence, no result left over from before.
      await page.getByRole('searchbox', { name: 'Phone number' }).fill('12');
      await page.getByRole('searchbox', { name: 'Phone number' }).press('Enter');
      await page.locator('#lookup-message').filter({ hasText: 'is not a phone number' }).waitFor();
      expect(await page.locator('[data-lookup-sync]').count()).toBe(0);
      await page.getByRole('searchbox', { name: 'Phone number' }).fill('');
      await page.getByRole('button', { name: 'Look up' }).click();
      await page.locator('#lookup-message').filter({ hasText: 'Type a phone number first.' }).waitFor();
      expect(pageErrors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
