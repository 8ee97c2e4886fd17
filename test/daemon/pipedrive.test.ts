// The sync daemon with a Pipedrive source, end to end: the Pipedrive stand-in → the daemon (in-process) → the reference server.
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { startPipedriveStandIn, type PipedriveStandIn, type StoredPerson } from '../../crm-stand-ins/pipedrive.ts';
import { Daemon } from '../../daemon/app.ts';
import { daemonConfig, dialerFixture, quietLog, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { campaignValues, countedDialer, counter, expectRefusedForLength, held, pullAndSettle, queued, runs, settle, type CountedDialer } from '../support/sync-checks.ts';

const MAPPING = { phone: 'phones', defaultCountry: 'US', variables: { Name: 'name', Segment: 'segment' } };
const WEBHOOK = { user: 'pd-hooks', password: 'a-long-webhook-password' };

function pipedriveSync(pd: PipedriveStandIn, campaignId: string, source: Record<string, unknown> = {}) {
  return {
    id: 'pd', campaignId, mapping: MAPPING,
    source: { type: 'pipedrive', baseUrl: pd.url, apiToken: pd.apiToken, webhookUser: WEBHOOK.user, webhookPassword: WEBHOOK.password, ...source },
  };
}

function e164(text: string): string | null {
  const p = parsePhoneNumberFromString(text, 'US');
  return p?.isValid() ? p.number : null;
}

/** Every phone of every selected person, with the person's values (one number per phone). */
function expected(pd: PipedriveStandIn, selected: (p: StoredPerson) => boolean): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const p of pd.persons().filter(selected)) {
    for (const ph of p.phones) {
      const n = e164(ph.value);
      if (n && !(n in out)) out[n] = [p.name, String(p.custom_fields.segment ?? '')];
    }
  }
  return out;
}

const numbers = (f: DialerFixture) => campaignValues(f, ['Name', 'Segment']);

async function noRejections(d: Daemon): Promise<void> {
  for (const r of await runs(d, 'pd')) expect({ id: r.id, status: r.status, rejected: r.rejected }).toEqual({ id: r.id, status: 'done', rejected: 0 });
}

/** The daemon sent Pipedrive nothing its API refuses: the stand-in is as strict as Pipedrive's OpenAPI files and counts drifts. */
function sentNothingRefused(pd: PipedriveStandIn): void {
  expect(pd.refusals()).toEqual([]);
  expect(pd.stats.refused).toBe(0);
}

describe('Pipedrive: import by filter, incremental runs, webhooks', () => {
  const redis = testPrefix();
  let f: DialerFixture;
  let pd: PipedriveStandIn;
  let d: Daemon;
  let hook: string;
  const inFilter = (p: StoredPerson) => p.id % 3 !== 0 && p.custom_fields.segment !== 'cold';

  beforeAll(async () => {
    f = await dialerFixture();
    // Every 10th seeded person has a second phone.
    pd = await startPipedriveStandIn({ persons: 60 });
    const filterId = pd.filters.create('Not every third, not cold', inFilter);
    d = await Daemon.start(daemonConfig(f, redis.prefix, [pipedriveSync(pd, f.campaignId, { selection: { filterId }, pageSize: 15 })]), { log: quietLog });
    hook = `${d.address}/webhooks/pd`;
    await settle(d);
  });
  afterAll(async () => {
    await d?.close();
    await pd?.close();
    await f?.server.close();
    await redis.cleanup();
  });

  it('imports the persons of the filter, every entry of phones becoming a number', async () => {
    const want = expected(pd, inFilter);
    expect(await numbers(f)).toEqual(want);
    const twoPhones = pd.persons().filter((p) => inFilter(p) && p.phones.length === 2);
    expect(twoPhones.length).toBeGreaterThanOrEqual(3);
    for (const p of twoPhones) for (const ph of p.phones) expect(want).toHaveProperty([e164(ph.value)!]);
    expect(Object.keys(want)).toHaveLength(40 + twoPhones.length);
    const full = (await runs(d, 'pd')).find((r) => r.mode === 'full')!;
    expect(full).toMatchObject({ status: 'done', seen: 40, invalid: 0, rejected: 0 });
  });

  it('an incremental run (updated_since) adds a new person, replaces changed values and follows a changed phone', async () => {
    const [a, b] = pd.persons().filter(inFilter);
    pd.createPerson({ name: 'Nia New', phones: [{ value: validPhone(5000) }, { value: validPhone(5001), label: 'mobile' }], segment: 'warm' });
    pd.updatePerson(a!.id, { segment: 'hot' });
    const oldPhone = e164(b!.phones[0]!.value)!;
    pd.updatePerson(b!.id, { phones: [{ value: validPhone(5002) }] });
    const run = await pullAndSettle(d, 'pd');
    expect(run).toMatchObject({ mode: 'incremental', status: 'done', rejected: 0 });
    expect(run.seen).toBeLessThan(10);
    const now = await numbers(f);
    expect(now).toEqual(expected(pd, inFilter));
    expect(now[validPhone(5000)]).toEqual(['Nia New', 'warm']);
    expect(now[validPhone(5001)]).toEqual(['Nia New', 'warm']);
    expect(now[e164(a!.phones[0]!.value)!]).toEqual([a!.name, 'hot']);
    expect(now).not.toHaveProperty(oldPhone);
    expect(now[validPhone(5002)]).toEqual([b!.name, '']);
  });

  it('a person updated out of the filter has its numbers deleted', async () => {
    const leaving = pd.persons().filter(inFilter).find((p) => p.phones.length === 2)!;
    pd.updatePerson(leaving.id, { segment: 'cold' });
    const run = await pullAndSettle(d, 'pd');
    expect(run).toMatchObject({ status: 'done', left: 1 });
    const now = await numbers(f);
    expect(now).toEqual(expected(pd, inFilter));
    for (const ph of leaving.phones) {
      expect(now).not.toHaveProperty([e164(ph.value)!]);
      expect(await held(d, 'pd', e164(ph.value)!)).toBeNull();
    }
  });

  it('a delete webhook (HTTP Basic auth) deletes the person\'s numbers', async () => {
    const gone = pd.persons().filter(inFilter)[5]!;
    pd.deletePerson(gone.id);
    const res = await pd.sendWebhook('delete', gone, gone, { url: hook, ...WEBHOOK });
    expect(res.status).toBe(200);
    await settle(d);
    const now = await numbers(f);
    expect(now).toEqual(expected(pd, inFilter));
    expect(now).not.toHaveProperty([e164(gone.phones[0]!.value)!]);
    await noRejections(d);
  });

  it('persons deleted without a webhook stay through incremental runs and leave with the comparison, which lists the filter in pages', async () => {
    const gone = pd.persons().filter(inFilter).slice(0, 2);
    for (const p of gone) pd.deletePerson(p.id);
    // Deleted persons are in no updated_since answer: an incremental run cannot see them.
    expect(await pullAndSettle(d, 'pd')).toMatchObject({ mode: 'incremental', status: 'done', left: 0 });
    for (const p of gone) expect(await numbers(f)).toHaveProperty([e164(p.phones[0]!.value)!]);
    const before = { requests: pd.stats.requests, tokens: pd.stats.tokensUsed };
    const started = Date.now();
    const run = await pullAndSettle(d, 'pd', false, 'compare');
    expect(run).toMatchObject({ mode: 'compare', status: 'done', left: 2, rejected: 0 });
    expect(await numbers(f)).toEqual(expected(pd, inFilter));
    // The filter's persons in pages of 15 (the sync's pageSize), then the two updated_since reads of an incremental
    // run: list requests only, 10 tokens each.
    const pages = Math.ceil(pd.persons().filter(inFilter).length / 15);
    const requests = pd.stats.requests - before.requests;
    expect(requests).toBeGreaterThanOrEqual(pages + 2);
    expect(requests).toBeLessThanOrEqual(pages + 3);
    expect(pd.stats.tokensUsed - before.tokens).toBe(10 * requests);
    const { syncStatus } = await import('../../daemon/sync/status.ts');
    const status = await syncStatus(d.runtimes.get('pd')!);
    expect(Date.parse(status.lastCompareAt!)).toBeGreaterThanOrEqual(started - 1000);
  });

  it('a change webhook makes the daemon pull the change', async () => {
    const p = pd.createPerson({ name: 'Hugo Hook', phones: [{ value: validPhone(5100) }], segment: 'warm' });
    const res = await pd.sendWebhook('create', p, null, { url: hook, ...WEBHOOK });
    expect(res.status).toBe(200);
    await waitFor(async () => (await runs(d, 'pd'))[0]?.trigger === 'webhook', 'the pull the webhook queued');
    await settle(d);
    expect((await numbers(f))[validPhone(5100)]).toEqual(['Hugo Hook', 'warm']);
  });

  it('refuses webhooks with wrong or missing Basic credentials (401) and queues nothing', async () => {
    await settle(d);
    const before = await queued(d, 'pd');
    const victim = pd.persons().filter(inFilter)[6]!;
    const wrong = await pd.sendWebhook('delete', victim, victim, { url: hook, user: WEBHOOK.user, password: 'guess' });
    expect(wrong.status).toBe(401);
    expect((await pd.sendWebhook('delete', victim, victim, { url: hook, user: 'someone', password: WEBHOOK.password })).status).toBe(401);
    const none = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ meta: { action: 'delete', entity: 'person', entity_id: String(victim.id) } }) });
    expect(none.status).toBe(401);
    expect(await queued(d, 'pd')).toEqual(before);
    expect(await numbers(f)).toHaveProperty([e164(victim.phones[0]!.value)!]);
  });

  it('waits out a burst of 429s and completes the run', async () => {
    await settle(d);
    const before = await counter(d, 'rateLimited', { service: 'pipedrive' });
    pd.createPerson({ name: 'Rita Retry', phones: [{ value: validPhone(5200) }], segment: 'warm' });
    pd.failNext(2);
    const run = await pullAndSettle(d, 'pd');
    expect(run).toMatchObject({ status: 'done', rejected: 0 });
    expect(await counter(d, 'rateLimited', { service: 'pipedrive' }) - before).toBeGreaterThanOrEqual(2);
    expect(await numbers(f)).toEqual(expected(pd, inFilter));
    await noRejections(d);
  });

  it('sent Pipedrive no request its API refuses', () => sentNothingRefused(pd));
});

/**
 * A daemon with one Pipedrive sync (its first run ended) against a fresh stand-in and server; `cleanups` stops them.
 */
async function startPipedrive(cleanups: (() => Promise<unknown>)[], standIn: Parameters<typeof startPipedriveStandIn>[0], source: Record<string, unknown>,
  sync: Record<string, unknown> = {}, timeoutMs = 10_000) {
  const redis = testPrefix();
  cleanups.push(() => redis.cleanup());
  const f = await dialerFixture();
  cleanups.push(() => f.server.close());
  const pd = await startPipedriveStandIn(standIn);
  cleanups.push(() => pd.close());
  const d = await Daemon.start(daemonConfig(f, redis.prefix, [{ ...pipedriveSync(pd, f.campaignId, source), ...sync }], { shutdownTimeout: '2s' }), { log: quietLog });
  cleanups.push(() => d.close());
  const run = await waitFor(async () => (await runs(d, 'pd')).find((r) => r.status !== 'running'), 'the first run to end', timeoutMs);
  return { f, pd, d, run };
}

describe('Pipedrive: the comparison on its own schedule', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('removes a person deleted without a webhook at the next scheduled comparison', async () => {
    // Pulls once an hour, compares every 2 s: only the comparison can remove a person deleted without a webhook.
    const { f, pd, d } = await startPipedrive(cleanups, { persons: 20 }, { compareEvery: '2s' }, { schedule: { every: '1h' } });
    await settle(d);
    const gone = pd.persons()[4]!;
    const phone = e164(gone.phones[0]!.value)!;
    expect(await numbers(f)).toHaveProperty([phone]);
    pd.deletePerson(gone.id);
    await waitFor(async () => !(phone in await numbers(f)), 'the comparison to delete the number', 20_000);
    const run = (await runs(d, 'pd')).find((r) => r.left > 0)!;
    expect(run).toMatchObject({ mode: 'compare', trigger: 'compare', status: 'done', left: 1 });
    expect(await numbers(f)).toEqual(expected(pd, () => true));
  });
});

describe('Pipedrive: the daily token budget', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  const setUp = (standIn: Parameters<typeof startPipedriveStandIn>[0], source: Record<string, unknown>, timeoutMs = 10_000) =>
    startPipedrive(cleanups, standIn, source, {}, timeoutMs);

  it('stops reading when the configured budget is spent: the run fails with an error naming the budget', async () => {
    // 50 persons in pages of 10 cost 60 tokens; the budget allows 3 pages.
    const { d, pd, run } = await setUp({ persons: 50 }, { dailyTokens: 30, pageSize: 10 });
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/daily token budget \(30\)/);
    expect(pd.stats.tokensUsed).toBeLessThanOrEqual(30);
    // A failed run is not a crash: the daemon still answers.
    const health = await fetch(`${d.address}/health`);
    expect(health.status).toBe(200);
    sentNothingRefused(pd);
  });

  it('fails the run with an error naming the budget when Pipedrive says the day\'s budget is spent', async () => {
    const { d, pd, run } = await setUp({ persons: 50, dailyTokens: 30 }, { pageSize: 10 });
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/budget/);
    expect((await fetch(`${d.address}/health`)).status).toBe(200);
    sentNothingRefused(pd);
  });
});

describe('Pipedrive: one person over the API\'s limits among 1,000', () => {
  // Notes is a Large text custom field (Pipedrive's type `text` holds up to 65,000 characters; a Text field 255).
  const mapping = { phone: 'phones', defaultCountry: 'US', variables: { Name: 'name', Notes: 'notes' } };
  const BAD = 500;
  const redis = testPrefix();
  let f: DialerFixture;
  let dialer: CountedDialer;
  let pd: PipedriveStandIn;
  let d: Daemon;
  let bad: StoredPerson;

  const inCampaign = () => campaignValues(f, ['Name', 'Notes']);
  const good = (except: number | null) => Object.fromEntries(Array.from({ length: 1000 }, (_, i) => i).filter((i) => i !== except)
    .map((i) => [validPhone(i), [`Person ${i}`, `Note ${i}`]]));

  beforeAll(async () => {
    f = await dialerFixture();
    dialer = await countedDialer(f);
    pd = await startPipedriveStandIn({});
    for (let i = 0; i < 1000; i++) {
      const p = pd.createPerson({ name: `Person ${i}`, phones: [{ value: validPhone(i) }], notes: i === BAD ? 'N'.repeat(1100) : `Note ${i}` });
      if (i === BAD) bad = p;
    }
    d = await Daemon.start(daemonConfig(f, redis.prefix, [{ ...pipedriveSync(pd, f.campaignId), mapping }], { dialer: dialer.dialer }), { log: quietLog, http: false });
    await settle(d);
  });
  afterAll(async () => {
    await d?.close();
    await dialer?.proxy.close();
    await pd?.close();
    await f?.server.close();
    await redis.cleanup();
  });

  it('adds the 999 good persons in one request and refuses the bad one alone, its reason in words', async () => {
    expect(await inCampaign()).toEqual(good(BAD));
    const [full] = await runs(d, 'pd');
    expect(full).toMatchObject({ mode: 'full', status: 'done', seen: 1000, invalid: 1, planned: 999, pushed: 999, rejected: 0 });
    await expectRefusedForLength(d, 'pd', full!, { contactId: String(bad.id), variable: 'Notes', field: 'notes', length: 1100 });
    expect(dialer.adds()).toBe(1);
  });

  it('the note shortened, an incremental run adds its number once', async () => {
    pd.updatePerson(bad.id, { notes: `Note ${BAD}` });
    const run = await pullAndSettle(d, 'pd');
    expect(run).toMatchObject({ mode: 'incremental', status: 'done', invalid: 0, planned: 1, pushed: 1, rejected: 0 });
    expect(await inCampaign()).toEqual(good(null));
    expect(dialer.adds()).toBe(2);
    sentNothingRefused(pd);
  });
});
