// The sync daemon with a HubSpot source, end to end: the HubSpot stand-in → the daemon (in-process) → the reference server.
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { startHubSpotStandIn, type HubSpotEvent, type HubSpotStandIn, type StoredContact } from '../../crm-stand-ins/hubspot.ts';
import { Daemon } from '../../daemon/app.ts';
import { gateSlots } from '../../daemon/crm/http.ts';
import { dryRun } from '../../daemon/sync/dry-run.ts';
import { campaignNumbers, daemonConfig, dialerFixture, quietLog, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { createCampaign, createKey, setNumber } from '../support/server.ts';
import { allRunErrors, countedDialer, counter, expectRefusedForLength, freePort, held, pullAndSettle, queued, runs, settle, stateSnapshot, type CountedDialer } from '../support/sync-checks.ts';

const VAR_NAMES = ['FirstName', 'LastName', 'Company'];
const MAPPING = { phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'firstname', LastName: 'lastname', Company: 'company' } };

function hubspotSync(hs: HubSpotStandIn, campaignId: string, extra: { source?: Record<string, unknown>; [k: string]: unknown } = {}) {
  const { source, ...rest } = extra;
  return {
    id: 'hs', campaignId, mapping: MAPPING, ...rest,
    source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, clientSecret: 'hs-client-secret', ...source },
  };
}

/** The phone number as the campaign should hold it (an oracle independent of the daemon's own parsing). */
function e164(text: string | null | undefined): string | null {
  const p = parsePhoneNumberFromString(text ?? '', 'US');
  return p?.isValid() ? p.number : null;
}

function vars(c: StoredContact): string[] {
  return [c.properties.firstname ?? '', c.properties.lastname ?? '', c.properties.company ?? ''];
}

/** Phone number → variable values the campaign should hold: one per phone number, the first contact (id order) holding it. */
function expected(hs: HubSpotStandIn, kept: Map<string, string[]> = new Map()): Record<string, string[]> {
  const out: Record<string, string[]> = Object.fromEntries(kept);
  for (const c of hs.contacts()) {
    const p = e164(c.properties.phone);
    if (p && !(p in out)) out[p] = vars(c);
  }
  return out;
}

type Numbers = Awaited<ReturnType<typeof campaignNumbers>>;

async function byNumber(f: DialerFixture): Promise<Map<string, Numbers[number]>> {
  const list = await campaignNumbers(f);
  const map = new Map(list.map((n) => [n.number, n]));
  // The campaign never holds one phone number twice.
  expect(map.size).toBe(list.length);
  return map;
}

async function expectCampaign(f: DialerFixture, want: Record<string, string[]>): Promise<Map<string, Numbers[number]>> {
  const numbers = await byNumber(f);
  expect(Object.fromEntries([...numbers].map(([k, n]) => [k, n.varValues]))).toEqual(want);
  for (const n of numbers.values()) expect(n.varNames).toEqual(VAR_NAMES);
  return numbers;
}

let nextEventId = 900_000;
function event(subscriptionType: 'contact.creation' | 'contact.propertyChange' | 'contact.deletion', objectId: string): HubSpotEvent {
  return {
    eventId: nextEventId++, subscriptionId: 4002, portalId: 62515, appId: 1160452, occurredAt: Date.now(),
    subscriptionType, attemptNumber: 0, objectId: Number(objectId), changeSource: 'CRM_UI',
  };
}

async function post(url: string, body: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function noRejections(d: Daemon, syncId: string): Promise<void> {
  const all = await runs(d, syncId);
  expect(all.length).toBeGreaterThan(0);
  for (const r of all) expect({ id: r.id, status: r.status, rejected: r.rejected }).toEqual({ id: r.id, status: 'done', rejected: 0 });
}

/** The daemon sent HubSpot nothing its API refuses: the stand-in is as strict as HubSpot's OpenAPI files and counts drifts. */
function sentNothingRefused(hs: HubSpotStandIn): void {
  expect(hs.refusals()).toEqual([]);
  expect(hs.stats.refused).toBe(0);
}

describe('HubSpot: import, incremental runs, webhooks', () => {
  const redis = testPrefix();
  let f: DialerFixture;
  let hs: HubSpotStandIn;
  let d: Daemon;
  let hook: string;
  /** Numbers whose contact is gone but whose status kept them in the campaign. */
  const kept = new Map<string, string[]>();
  /** The slots the daemon's search gate handed out, on Redis's clock: its pacing, before any jitter on the way. */
  const searchSlots: number[] = [];
  const onSlot = (m: unknown) => {
    const { key, slotMs } = m as { key: string; slotMs: number };
    if (key.startsWith(`${redis.prefix}:`) && key.includes(':gate:hubspot-search:')) searchSlots.push(slotMs);
  };

  beforeAll(async () => {
    gateSlots.subscribe(onSlot);
    f = await dialerFixture();
    hs = await startHubSpotStandIn({ contacts: 300 });
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    // A small page size makes the full import several searches, so the search pacing shows.
    d = await Daemon.start(daemonConfig(f, redis.prefix, [hubspotSync(hs, f.campaignId, { source: { pageSize: 30 } })],
      { http: { host: '127.0.0.1', port, publicUrl } }), { log: quietLog });
    expect(d.address).toBe(publicUrl);
    hook = `${publicUrl}/webhooks/hs`;
    await settle(d);
  });
  afterAll(async () => {
    gateSlots.unsubscribe(onSlot);
    await d?.close();
    await hs?.close();
    await f?.server.close();
    await redis.cleanup();
  });

  it('imports every contact: each phone number once, with the mapping\'s variable names and the contact\'s values', async () => {
    const numbers = await expectCampaign(f, expected(hs));
    expect(numbers.size).toBe(300);
    for (let i = 0; i < 300; i++) expect(numbers.has(validPhone(i))).toBe(true);
    const full = (await runs(d, 'hs')).find((r) => r.mode === 'full')!;
    expect(full).toMatchObject({ status: 'done', seen: 300, invalid: 0, pushed: 300, rejected: 0, deleted: 0 });
    await noRejections(d, 'hs');
  });

  it('an incremental run adds a new contact, replaces a number whose variables changed and moves a changed phone number', async () => {
    const before = await byNumber(f);
    const [c1, c2] = hs.contacts();
    const added = hs.createContact({ firstname: 'New', lastname: 'Person', company: 'Initech', phone: validPhone(5000) });
    hs.updateContact(c1!.id, { firstname: 'Renamed' });
    const oldPhone = e164(c2!.properties.phone)!;
    hs.updateContact(c2!.id, { phone: validPhone(5001) });

    const run = await pullAndSettle(d, 'hs');
    expect(run).toMatchObject({ mode: 'incremental', status: 'done', rejected: 0 });
    expect(run.seen).toBeLessThan(300);
    const after = await expectCampaign(f, expected(hs));
    expect(after.get(validPhone(5000))?.varValues).toEqual(['New', 'Person', 'Initech']);
    expect(hs.getContact(added.id)).toBeDefined();
    const p1 = e164(c1!.properties.phone)!;
    expect(after.get(p1)?.varValues[0]).toBe('Renamed');
    // Replaced: the old number record was deleted and a new one added with the new values.
    expect(after.get(p1)?.id).not.toBe(before.get(p1)?.id);
    expect(after.has(oldPhone)).toBe(false);
    expect(after.get(validPhone(5001))?.varValues).toEqual(vars(hs.getContact(c2!.id)!));
    expect(after.size).toBe(301);
    // Untouched numbers keep their records.
    const p3 = e164(hs.contacts()[2]!.properties.phone)!;
    expect(after.get(p3)?.id).toBe(before.get(p3)?.id);
  });

  it('two contacts sharing a phone number give one number (the first read holds it); the other takes over when the first changes its number', async () => {
    const shared = validPhone(6000);
    const a = hs.createContact({ firstname: 'First', lastname: 'Holder', company: 'Acme Corp', phone: shared });
    const national = `(${shared.slice(2, 5)}) ${shared.slice(5, 8)}-${shared.slice(8)}`;
    const b = hs.createContact({ firstname: 'Second', lastname: 'Holder', company: 'Globex', phone: national });
    await pullAndSettle(d, 'hs');
    let numbers = await expectCampaign(f, expected(hs));
    expect(numbers.get(shared)?.varValues).toEqual(vars(a));
    expect((await held(d, 'hs', shared))?.contactId).toBe(a.id);

    hs.updateContact(a.id, { phone: validPhone(6001) });
    await pullAndSettle(d, 'hs');
    numbers = await expectCampaign(f, expected(hs));
    expect(numbers.get(shared)?.varValues).toEqual(vars(b));
    expect(numbers.get(validPhone(6001))?.varValues).toEqual(vars(hs.getContact(a.id)!));
    expect((await held(d, 'hs', shared))?.contactId).toBe(b.id);
    // The dialer never refused a duplicate: the daemon did not send the shared number twice.
    await noRejections(d, 'hs');
  });

  it('a contact deleted in HubSpot (signed deletion webhook) has its number deleted', async () => {
    const c = hs.contacts()[5]!;
    const phone = e164(c.properties.phone)!;
    expect((await byNumber(f)).has(phone)).toBe(true);
    hs.deleteContact(c.id);
    const res = await hs.sendWebhook([event('contact.deletion', c.id)], { url: hook });
    expect(res.status).toBe(200);
    await settle(d);
    const numbers = await expectCampaign(f, expected(hs));
    expect(numbers.has(phone)).toBe(false);
    expect(await held(d, 'hs', phone)).toBeNull();
    expect(await d.redis.hexists(d.runtimes.get('hs')!.state.keys.contacts, c.id)).toBe(0);
  });

  it('a signed webhook about a new contact makes the daemon pull it into the campaign', async () => {
    const c = hs.createContact({ firstname: 'Hook', lastname: 'Created', company: 'Hooli', phone: validPhone(6100) });
    const runsBefore = (await runs(d, 'hs')).length;
    const res = await hs.sendWebhook([event('contact.creation', c.id)], { url: hook });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ accepted: 1 });
    await waitFor(async () => (await runs(d, 'hs')).length > runsBefore, 'the pull the webhook queued');
    await settle(d);
    const latest = (await runs(d, 'hs'))[0]!;
    expect(latest.trigger).toBe('webhook');
    expect((await expectCampaign(f, expected(hs))).get(validPhone(6100))?.varValues).toEqual(['Hook', 'Created', 'Hooli']);
  });

  it('refuses forged, expired, replayed and unsigned webhooks with 401 and queues nothing', async () => {
    const victim = hs.contacts()[7]!;
    const events = () => [event('contact.deletion', victim.id)];
    // A delivery accepted once, to replay below.
    const ts = Date.now();
    const original = [event('contact.propertyChange', victim.id)];
    expect((await hs.sendWebhook(original, { url: hook, timestamp: ts })).status).toBe(200);
    await settle(d);
    const before = await queued(d, 'hs');

    const forged = await hs.sendWebhook(events(), { url: hook, secret: 'not-the-client-secret' });
    expect(forged.status).toBe(401);
    expect(JSON.parse(forged.body).error).toMatch(/signature/);
    const expired = await hs.sendWebhook(events(), { url: hook, timestamp: Date.now() - 6 * 60_000 });
    expect(expired.status).toBe(401);
    expect(JSON.parse(expired.body).error).toMatch(/timestamp/);
    const replay = await hs.sendWebhook(original, { url: hook, timestamp: ts });
    expect(replay.status).toBe(401);
    expect(JSON.parse(replay.body).error).toMatch(/replay/);
    const body = JSON.stringify(events());
    const unsigned = await post(hook, body, {});
    expect(unsigned.status).toBe(401);
    const noTimestamp = await post(hook, body, { 'X-HubSpot-Signature-v3': hs.signV3('POST', hook, body, Date.now()) });
    expect(noTimestamp.status).toBe(401);
    // Signed for another URL: HubSpot signs the URL it called.
    const ts2 = Date.now();
    const otherUrl = await post(hook, body, { 'X-HubSpot-Request-Timestamp': String(ts2), 'X-HubSpot-Signature-v3': hs.signV3('POST', `${hook}-other`, body, ts2) });
    expect(otherUrl.status).toBe(401);

    expect(await queued(d, 'hs')).toEqual(before);
    expect(await counter(d, 'webhooks', { sync: 'hs', result: 'refused' })).toBeGreaterThanOrEqual(5);
    expect((await byNumber(f)).has(e164(victim.properties.phone)!)).toBe(true);
  });

  it('refuses any spelling of a valid v3 signature but HubSpot\'s standard base64, so a replay cannot pass as new', async () => {
    const victim = hs.contacts()[8]!;
    const body = JSON.stringify([event('contact.deletion', victim.id)]);
    // A timestamp whose signature has a character base64url spells differently (32 bytes always end in one '=').
    let ts = Date.now();
    while (!/[+/]/.test(hs.signV3('POST', hook, body, ts))) ts -= 1;
    const sig = hs.signV3('POST', hook, body, ts);
    expect(sig).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    await settle(d);
    const before = await queued(d, 'hs');
    const spellings: [string, string][] = [
      ['padding dropped', sig.replace(/=+$/, '')],
      ['bytes after the padding', `${sig}AA`],
      ['base64url alphabet', sig.replace(/\+/g, '-').replace(/\//g, '_')],
      ['whitespace inside', `${sig.slice(0, 8)} ${sig.slice(8)}`],
    ];
    for (const [name, value] of spellings) {
      const res = await post(hook, body, { 'X-HubSpot-Request-Timestamp': String(ts), 'X-HubSpot-Signature-v3': value });
      expect({ name, status: res.status }).toEqual({ name, status: 401 });
    }
    expect(await queued(d, 'hs')).toEqual(before);
    expect((await byNumber(f)).has(e164(victim.properties.phone)!)).toBe(true);
  });

  it('answers 400 to a signed body that is not a HubSpot event array, and queues nothing', async () => {
    await settle(d);
    const before = await queued(d, 'hs');
    for (const body of ['{"objectId": 1}', 'not json', '[]', JSON.stringify([{ eventId: 1, subscriptionType: 'contact.deletion' }])]) {
      const ts = Date.now();
      const res = await post(hook, body, { 'X-HubSpot-Request-Timestamp': String(ts), 'X-HubSpot-Signature-v3': hs.signV3('POST', hook, body, ts) });
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body.error).toEqual(expect.any(String));
    }
    expect(await queued(d, 'hs')).toEqual(before);
  });

  it('acknowledges event ids it has already seen (fresh signature) as duplicates and queues nothing', async () => {
    const c = hs.contacts()[8]!;
    const events = [event('contact.propertyChange', c.id)];
    expect((await hs.sendWebhook(events, { url: hook, timestamp: Date.now() - 1000 })).status).toBe(200);
    await settle(d);
    const before = await queued(d, 'hs');
    const again = await hs.sendWebhook(events, { url: hook, timestamp: Date.now() });
    expect(again.status).toBe(200);
    expect(JSON.parse(again.body)).toMatchObject({ duplicate: true });
    expect(await queued(d, 'hs')).toEqual(before);
  });

  it('coalesces a storm of 50 webhooks for one sync into at most one running and one waiting pull', async () => {
    await settle(d);
    const before = await queued(d, 'hs');
    const contacts = hs.contacts();
    const peaks: number[] = [];
    // The first webhook's read gets a 429 with Retry-After 3 s, so its run is still running while the rest of the
    // storm arrives: what arrives meanwhile must wait as one job, however slow this machine is. (The first webhook
    // comes alone: a run holds a read short of a batch while more webhooks are being received, and would end at once.)
    hs.failNext(1, 3);
    const limited = hs.stats.rateLimited;
    expect((await hs.sendWebhook([event('contact.propertyChange', contacts[10]!.id)], { url: hook })).status).toBe(200);
    await waitFor(() => hs.stats.rateLimited > limited, 'the first run to meet the 429');
    const answers = await Promise.all(Array.from({ length: 50 }, async (_, i) => {
      if (i === 0) return 200;
      const res = await hs.sendWebhook([event('contact.propertyChange', contacts[10 + i]!.id)], { url: hook });
      peaks.push((await d.syncQueue.getJobs(['active', 'wait', 'prioritized', 'delayed'])).filter((j) => j.name === 'pull').length);
      return res.status;
    }));
    expect(answers).toEqual(Array(50).fill(200));
    expect(Math.max(...peaks)).toBeLessThanOrEqual(2);
    const after = await queued(d, 'hs');
    expect(after.jobs - before.jobs).toBeGreaterThanOrEqual(1);
    expect(after.jobs - before.jobs).toBeLessThanOrEqual(2);
    await settle(d);
    expect((await runs(d, 'hs')).length - before.runs).toBeLessThanOrEqual(2);
  });

  it('keeps a number whose status forbids deleting it, with the reason recorded', async () => {
    const c = hs.contacts()[3]!;
    const phone = e164(c.properties.phone)!;
    const number = (await byNumber(f)).get(phone)!;
    setNumber(f.server, number.id, 'Success');
    hs.deleteContact(c.id);
    expect((await hs.sendWebhook([event('contact.deletion', c.id)], { url: hook })).status).toBe(200);
    await settle(d);
    kept.set(phone, vars(c));
    const numbers = await expectCampaign(f, expected(hs, kept));
    expect(numbers.get(phone)).toMatchObject({ id: number.id, status: 'Success' });
    const h = await held(d, 'hs', phone);
    expect(h?.keptBecause).toMatch(/Success/);
    await noRejections(d, 'hs');
    // Later runs leave it alone rather than trying again.
    const run = await pullAndSettle(d, 'hs');
    expect(run.planned).toBe(0);
  });

  it('a dry run reports the adds, replaces and deletes a sync would make, and changes nothing', async () => {
    await settle(d);
    const created = hs.createContact({ firstname: 'Dry', lastname: 'Run', company: 'Soylent Co', phone: validPhone(7000) });
    const changed = hs.contacts()[20]!;
    hs.updateContact(changed.id, { company: 'Changed Co' });
    const gone = hs.contacts()[21]!;
    hs.deleteContact(gone.id);
    const campaignBefore = await campaignNumbers(f);
    const stateBefore = await stateSnapshot(d, 'hs');

    const lines: string[] = [];
    const result = await dryRun(d.runtimes.get('hs')!, (l) => lines.push(l));
    expect(result).toEqual({ add: 1, replace: 1, remove: 1, invalid: 0, others: 0, doNotCall: 0, lists: {}, waitingForLists: 0 });
    expect(lines.join('\n')).toMatch(/would add 1, replace 1, delete 1/);
    expect(lines.some((l) => /^\s+add\s/.test(l) && l.includes(`contact ${created.id}`))).toBe(true);
    expect(lines.some((l) => /^\s+replace\s/.test(l) && l.includes(`contact ${changed.id}`))).toBe(true);
    expect(lines.some((l) => /^\s+delete\s/.test(l) && l.includes(`contact ${gone.id}`))).toBe(true);
    expect(await campaignNumbers(f)).toEqual(campaignBefore);
    expect(await stateSnapshot(d, 'hs')).toEqual(stateBefore);

    // What the dry run announced is what a sync does.
    const res = await hs.sendWebhook([event('contact.creation', created.id), event('contact.propertyChange', changed.id), event('contact.deletion', gone.id)], { url: hook });
    expect(res.status).toBe(200);
    await settle(d);
    const numbers = await expectCampaign(f, expected(hs, kept));
    expect(numbers.get(validPhone(7000))?.varValues).toEqual(['Dry', 'Run', 'Soylent Co']);
    expect(numbers.get(e164(changed.properties.phone)!)?.varValues[2]).toBe('Changed Co');
    expect(numbers.has(e164(gone.properties.phone)!)).toBe(false);
  });

  it('paced its searches under HubSpot\'s limit of 5 per second', async () => {
    expect(hs.stats.searches).toBeGreaterThanOrEqual(10);
    // Judged where the pacing decides, on one clock: HubSpot's own count (the stand-in's, at arrival) also holds the
    // jitter a loaded machine adds between a slot and its request's arrival, which no pacing can take back.
    // Every search the stand-in received, answered or refused, went through the gate: one slot each.
    const received = Object.entries(hs.stats.byRoute).filter(([route]) => route.endsWith('/search')).reduce((n, [, c]) => n + c, 0);
    expect(searchSlots.length).toBe(received);
    // And no rolling second (as HubSpot counts it: a request leaves the window 1,000 ms later) holds more than 5 slots.
    const slots = [...searchSlots].sort((a, b) => a - b);
    const most = Math.max(...slots.map((t, i) => i - slots.findIndex((u) => u > t - 1000) + 1));
    expect(most).toBeLessThanOrEqual(5);
    // Every 429 the stand-in answered (the storm test's failNext, and any a late arrival earned) reached the daemon.
    expect(hs.stats.rateLimited).toBeGreaterThanOrEqual(1);
    expect(await counter(d, 'rateLimited', { service: 'hubspot' })).toBe(hs.stats.rateLimited);
  });

  it('sent HubSpot no request its API refuses', () => sentNothingRefused(hs));
});

describe('HubSpot: phone numbers that cannot be dialed', () => {
  const redis = testPrefix();
  let f: DialerFixture;
  let hs: HubSpotStandIn;
  let d: Daemon;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    f = await dialerFixture();
    hs = await startHubSpotStandIn();
    ids.valid = hs.createContact({ firstname: 'Val', lastname: 'Id', company: 'Acme Corp', phone: validPhone(1) }).id;
    ids.short = hs.createContact({ firstname: 'Too', lastname: 'Short', company: 'Acme Corp', phone: '12345' }).id;
    ids.national = hs.createContact({ firstname: 'No', lastname: 'Country', company: 'Acme Corp', phone: '(212) 555-0199' }).id;
    ids.none = hs.createContact({ firstname: 'No', lastname: 'Phone', company: 'Acme Corp' }).id;
    ids.mixed = hs.createContact({ firstname: 'Two', lastname: 'Phones', company: 'Acme Corp', phone: validPhone(2), mobilephone: '12345' }).id;
    // No defaultCountry: numbers written without a country code cannot be placed.
    const mapping = { phone: ['phone', 'mobilephone'], variables: MAPPING.variables };
    d = await Daemon.start(daemonConfig(f, redis.prefix, [{ ...hubspotSync(hs, f.campaignId), mapping }]), { log: quietLog });
    await settle(d);
  });
  afterAll(async () => {
    await d?.close();
    await hs?.close();
    await f?.server.close();
    await redis.cleanup();
  });

  it('records invalid and missing numbers as errors of the run and still pushes the valid ones', async () => {
    const numbers = await expectCampaign(f, { [validPhone(1)]: ['Val', 'Id', 'Acme Corp'], [validPhone(2)]: ['Two', 'Phones', 'Acme Corp'] });
    expect(numbers.size).toBe(2);
    const full = (await runs(d, 'hs')).find((r) => r.mode === 'full')!;
    expect(full).toMatchObject({ status: 'done', seen: 5, invalid: 4, pushed: 2, rejected: 0 });
    const errors = (await allRunErrors(d, 'hs')).filter((e, i, all) => all.findIndex((x) => x.contactId === e.contactId && x.field === e.field) === i);
    const byContact = (id: string) => errors.filter((e) => e.contactId === id);
    expect(byContact(ids.short!)).toEqual([expect.objectContaining({ field: 'phone', code: 'invalid_number', reason: expect.any(String) })]);
    expect(byContact(ids.national!)).toEqual([expect.objectContaining({ field: 'phone', code: 'invalid_number', reason: expect.stringMatching(/country code/) })]);
    expect(byContact(ids.mixed!)).toEqual([expect.objectContaining({ field: 'mobilephone', code: 'invalid_number' })]);
    expect(byContact(ids.none!)).toEqual([expect.objectContaining({ code: 'no_number' })]);
    expect(byContact(ids.valid!)).toEqual([]);
    // Values are redacted: enough to find the record, not to call it.
    const national = byContact(ids.national!)[0]!;
    expect(national.value).toMatch(/0199$/);
    expect(national.value).not.toContain('212');
    expect(await counter(d, 'invalid', { sync: 'hs' })).toBeGreaterThanOrEqual(4);
    sentNothingRefused(hs);
  });
});

/** Requests the stand-in received per route since `before` (a copy of stats.byRoute), routes with none left out. */
function requestsSince(hs: HubSpotStandIn, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [route, n] of Object.entries(hs.stats.byRoute)) if (n - (before[route] ?? 0) > 0) out[route] = n - (before[route] ?? 0);
  return out;
}

const JOIN_ORDER = 'GET lists/:listId/memberships/join-order';
const MEMBERSHIPS_BY_RECORD = 'POST lists/records/memberships/batch/read';
const BATCH_READ = 'POST contacts/batch/read';
const SEARCH = 'POST contacts/search';

describe('HubSpot: selection by filterGroups, onLeave delete and keep', () => {
  const redis = testPrefix();
  let f: DialerFixture;
  let keepCampaign: DialerFixture;
  let hs: HubSpotStandIn;
  let d: Daemon;
  const people: StoredContact[] = [];

  beforeAll(async () => {
    f = await dialerFixture();
    const other = await createCampaign(f.server, f.accountId, { name: 'Leads kept', type: 'Dynamic', state: 'Active' });
    keepCampaign = { ...f, campaignId: other.id };
    hs = await startHubSpotStandIn();
    for (let i = 0; i < 20; i++) {
      people.push(hs.createContact({ firstname: `P${i}`, lastname: 'Stage', company: 'Globex', phone: validPhone(100 + i), lifecyclestage: i % 2 ? 'customer' : 'lead' }));
    }
    // Numbers in the configuration's filters (every contact passes these two) go out as the strings HubSpot's Filter takes.
    const selection = { filterGroups: [{ filters: [
      { propertyName: 'lifecyclestage', operator: 'EQ', value: 'lead' },
      { propertyName: 'hs_object_id', operator: 'BETWEEN', value: 1, highValue: 999_999_999 },
      { propertyName: 'hs_object_id', operator: 'NOT_IN', values: [1, 2] },
    ] }] };
    d = await Daemon.start(daemonConfig(f, redis.prefix, [
      { ...hubspotSync(hs, f.campaignId, { source: { selection } }), id: 'leads', onLeave: 'delete' },
      { ...hubspotSync(hs, other.id, { source: { selection } }), id: 'leads-kept', onLeave: 'keep' },
    ]), { log: quietLog });
    await settle(d);
  });
  afterAll(async () => {
    await d?.close();
    await hs?.close();
    await f?.server.close();
    await redis.cleanup();
  });

  const leads = () => Object.fromEntries(hs.contacts().filter((c) => c.properties.lifecyclestage === 'lead').map((c) => [e164(c.properties.phone)!, vars(c)]));

  it('imports only the contacts the filter groups select', async () => {
    expect(Object.keys(leads())).toHaveLength(10);
    await expectCampaign(f, leads());
    await expectCampaign(keepCampaign, leads());
  });

  it('a contact updated out of the selection loses its number with onLeave delete and keeps it (noted) with onLeave keep', async () => {
    const leaving = people[0]!;
    const joining = people[1]!;
    const before = leads();
    hs.updateContact(leaving.id, { lifecyclestage: 'customer' });
    hs.updateContact(joining.id, { lifecyclestage: 'lead' });
    await pullAndSettle(d, 'leads');
    await pullAndSettle(d, 'leads-kept');
    const phone = e164(leaving.properties.phone)!;
    expect(leads()).not.toHaveProperty(phone);
    await expectCampaign(f, leads());
    expect(await held(d, 'leads', phone)).toBeNull();
    await expectCampaign(keepCampaign, { ...leads(), [phone]: before[phone]! });
    expect((await held(d, 'leads-kept', phone))?.keptBecause).toMatch(/onLeave: keep/);
    await noRejections(d, 'leads');
    await noRejections(d, 'leads-kept');
    sentNothingRefused(hs);
  });

  it('a webhook\'s contacts are read by id within the filters: one search for the three, no read of what else changed', async () => {
    const [changed, joining, leaving] = [people[2]!, people[3]!, people[4]!];
    hs.updateContact(changed.id, { company: 'Initech' });
    hs.updateContact(joining.id, { lifecyclestage: 'lead' });
    hs.updateContact(leaving.id, { lifecyclestage: 'customer' });
    const before = { ...hs.stats.byRoute };
    const runsBefore = (await runs(d, 'leads')).length;
    const res = await hs.sendWebhook([changed, joining, leaving].map((c) => event('contact.propertyChange', c.id)), { url: `${d.address}/webhooks/leads` });
    expect(res.status).toBe(200);
    await waitFor(async () => (await runs(d, 'leads')).length > runsBefore, 'the run the webhook queued');
    await settle(d);
    expect((await runs(d, 'leads'))[0]).toMatchObject({ mode: 'inbox', trigger: 'webhook', status: 'done', seen: 2, left: 1 });
    expect(requestsSince(hs, before)).toEqual({ [SEARCH]: 1 });
    await expectCampaign(f, leads());
    sentNothingRefused(hs);
  });
});

// v3 names the legacy paths, /crm/v3/lists/{listId}/...: the version comes before "lists" there.
describe.each(['2026-09', 'v3'])('HubSpot: selection by list (apiVersion %s)', (apiVersion) => {
  const redis = testPrefix();
  let f: DialerFixture;
  let hs: HubSpotStandIn;
  let d: Daemon;
  let listId: string;
  let hook: string;

  beforeAll(async () => {
    f = await dialerFixture();
    // 600 contacts, 520 members: the membership is three pages of 250 in join order.
    hs = await startHubSpotStandIn({ contacts: 600 });
    listId = hs.lists.create('Call today', hs.contacts().slice(0, 520).map((c) => c.id));
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    hook = `${publicUrl}/webhooks/hs`;
    d = await Daemon.start(daemonConfig(f, redis.prefix, [hubspotSync(hs, f.campaignId, { source: { apiVersion, selection: { listId } } })],
      { http: { host: '127.0.0.1', port, publicUrl } }), { log: quietLog });
    await settle(d);
  });
  afterAll(async () => {
    await d?.close();
    await hs?.close();
    await f?.server.close();
    await redis.cleanup();
  });

  const members = (ids: StoredContact[]) => Object.fromEntries(ids.map((c) => [e164(c.properties.phone)!, vars(hs.getContact(c.id)!)]));

  it('imports the list\'s members only, reading the membership in join order and the members by id', async () => {
    await expectCampaign(f, members(hs.contacts().slice(0, 520)));
    // 3 pages of members (200 on a full read: two batch reads each), read by id in batches of 100: no search, no
    // membership check.
    expect(requestsSince(hs, {})).toEqual({ [JOIN_ORDER]: 3, [BATCH_READ]: 6 });
    expect((await runs(d, 'hs'))[0]).toMatchObject({ mode: 'full', status: 'done', seen: 520 });
  });

  it('an idle incremental run reads the last page of the join order and one search, nothing else', async () => {
    const before = { ...hs.stats.byRoute };
    const run = await pullAndSettle(d, 'hs');
    expect(run).toMatchObject({ mode: 'incremental', status: 'done', seen: 0, changed: 0, left: 0 });
    expect(requestsSince(hs, before)).toEqual({ [JOIN_ORDER]: 1, [SEARCH]: 1 });
  });

  it('an incremental run reads only the new member and the changed one; a removal without a change waits for the comparison', async () => {
    const all = hs.contacts();
    hs.lists.remove(listId, [all[0]!.id]);
    hs.lists.add(listId, [all[515 + 30]!.id]);
    hs.updateContact(all[1]!.id, { company: 'Renamed Inc' });
    const before = { ...hs.stats.byRoute };
    const run = await pullAndSettle(d, 'hs');
    expect(run).toMatchObject({ mode: 'incremental', status: 'done', rejected: 0, left: 0 });
    // The join order's last page (the new member is on it), the new member by id, one search of what changed, and the
    // changed contact's list memberships.
    expect(requestsSince(hs, before)).toEqual({ [JOIN_ORDER]: 1, [BATCH_READ]: 1, [SEARCH]: 1, [MEMBERSHIPS_BY_RECORD]: 1 });
    const numbers = await expectCampaign(f, members([...all.slice(0, 520), all[545]!]));
    expect(numbers.get(e164(all[1]!.properties.phone)!)?.varValues[2]).toBe('Renamed Inc');
  });

  it('the comparison (its own schedule) finds the member removed without a change, and status shows when it ran', async () => {
    const all = hs.contacts();
    const before = { ...hs.stats.byRoute };
    const started = Date.now();
    const run = await pullAndSettle(d, 'hs', false, 'compare');
    expect(run).toMatchObject({ mode: 'compare', status: 'done', left: 1, rejected: 0 });
    // The whole join order (520 members: 3 pages), every member already held (no batch read), one search of what
    // changed (the contact changed by the last test is in its overlap, so its memberships are checked again).
    expect(requestsSince(hs, before)).toEqual({ [JOIN_ORDER]: 3, [SEARCH]: 1, [MEMBERSHIPS_BY_RECORD]: 1 });
    const numbers = await expectCampaign(f, members([...all.slice(1, 520), all[545]!]));
    expect(numbers.has(e164(all[0]!.properties.phone)!)).toBe(false);
    const { syncStatus } = await import('../../daemon/sync/status.ts');
    const status = await syncStatus(d.runtimes.get('hs')!);
    expect(status.compareEvery).toBe(3_600_000);
    expect(Date.parse(status.lastCompareAt!)).toBeGreaterThanOrEqual(started - 1000);
  });

  it('a webhook\'s contacts are read by id with their list memberships: no search, no membership page', async () => {
    const all = hs.contacts();
    // A member changed, a member removed from the list and changed, a contact outside the list changed.
    hs.updateContact(all[2]!.id, { company: 'Webhook Co' });
    hs.lists.remove(listId, [all[3]!.id]);
    hs.updateContact(all[3]!.id, { company: 'Gone Co' });
    hs.updateContact(all[590]!.id, { company: 'Outside Co' });
    const before = { ...hs.stats.byRoute };
    const runsBefore = (await runs(d, 'hs')).length;
    const res = await hs.sendWebhook(['2', '3', '590'].map((i) => event('contact.propertyChange', all[Number(i)]!.id)), { url: hook });
    expect(res.status).toBe(200);
    await waitFor(async () => (await runs(d, 'hs')).length > runsBefore, 'the run the webhook queued');
    await settle(d);
    expect((await runs(d, 'hs'))[0]).toMatchObject({ mode: 'inbox', trigger: 'webhook', status: 'done', left: 1 });
    expect(requestsSince(hs, before)).toEqual({ [MEMBERSHIPS_BY_RECORD]: 1, [BATCH_READ]: 1 });
    const numbers = await expectCampaign(f, members([all[1]!, all[2]!, ...all.slice(4, 520), all[545]!]));
    expect(numbers.get(e164(all[2]!.properties.phone)!)?.varValues[2]).toBe('Webhook Co');
    sentNothingRefused(hs);
  });
});

describe('HubSpot: rate limits and the search cap', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  async function setUp(opts: { contacts: number; standIn?: Parameters<typeof startHubSpotStandIn>[0]; server?: Parameters<typeof dialerFixture>[0]; source?: Record<string, unknown>; dialer?: Record<string, unknown>; before?: (hs: HubSpotStandIn) => void }) {
    const redis = testPrefix();
    cleanups.push(() => redis.cleanup());
    const f = await dialerFixture(opts.server);
    cleanups.push(() => f.server.close());
    const hs = await startHubSpotStandIn({ contacts: opts.contacts, ...opts.standIn });
    cleanups.push(() => hs.close());
    opts.before?.(hs);
    const extra = opts.dialer ? { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, ...opts.dialer } } : {};
    const d = await Daemon.start(daemonConfig(f, redis.prefix, [hubspotSync(hs, f.campaignId, { source: opts.source })], extra), { log: quietLog });
    cleanups.push(() => d.close());
    return { f, hs, d };
  }

  it('waits out HubSpot\'s 429s (Retry-After) and still imports every contact once', async () => {
    const { f, hs, d } = await setUp({ contacts: 100, before: (h) => h.failNext(3, 1) });
    await settle(d);
    await expectCampaign(f, expected(hs));
    expect((await byNumber(f)).size).toBe(100);
    expect(hs.stats.rateLimited).toBe(3);
    expect(await counter(d, 'rateLimited', { service: 'hubspot' })).toBeGreaterThanOrEqual(3);
    await noRejections(d, 'hs');
    sentNothingRefused(hs);
  });

  it('meets the dialer\'s 429s by pausing, without losing a batch or spending an attempt', async () => {
    const { f, hs, d } = await setUp({
      contacts: 60, server: { rateLimit: { rate: 2, burst: 2 } },
      // Faster than the server allows, in small batches: the dialer must answer 429.
      dialer: { rateLimit: { perSecond: 20, burst: 20 }, maxNumbersPerRequest: 10 },
    });
    await settle(d, 40_000);
    // Read with a key of its own: the server's limit is per key.
    const reader = { ...f, token: await createKey(f.server, f.accountId, ['CampaignNumberAdmin']) };
    await expectCampaign(reader, expected(hs));
    await noRejections(d, 'hs');
    expect(await counter(d, 'rateLimited', { service: 'dialer' })).toBeGreaterThan(0);
    const push = [...d.pushQueues.values()][0]!.queue;
    expect(await push.getFailedCount()).toBe(0);
    const done = await push.getCompleted();
    expect(done.length).toBeGreaterThanOrEqual(6);
    // BullMQ counts the successful attempt too: 1 means no attempt was spent on a 429; restarts show the pauses.
    for (const job of done) expect({ id: job.id, attemptsMade: job.attemptsMade }).toEqual({ id: job.id, attemptsMade: 1 });
    expect(done.some((job) => (job.attemptsStarted ?? 0) > 1)).toBe(true);
    sentNothingRefused(hs);
  });

  it('reads past HubSpot\'s 10,000-result search cap: 10,500 contacts, each once', async () => {
    const { f, hs, d } = await setUp({ contacts: 10_500, standIn: { searchPerSecond: 50 }, source: { searchPerSecond: 50 } });
    await settle(d, 40_000);
    const full = (await runs(d, 'hs')).find((r) => r.mode === 'full')!;
    expect(full).toMatchObject({ status: 'done', seen: 10_500, pushed: 10_500, rejected: 0 });
    const numbers = await byNumber(f);
    expect(numbers.size).toBe(10_500);
    for (let i = 0; i < 10_500; i++) if (!numbers.has(validPhone(i))) expect.fail(`missing ${validPhone(i)} (contact ${1001 + i})`);
    // Pages of 200 fill whole batches of 1,000 (the dialer's rate limit counts requests): 11 requests, not one a page.
    expect(await [...d.pushQueues.values()][0]!.queue.getCompletedCount()).toBe(11);
    expect(hs.stats.rateLimited).toBe(0);
    sentNothingRefused(hs);
  });
});

describe('HubSpot: one contact over the API\'s limits among 1,000', () => {
  const redis = testPrefix();
  let f: DialerFixture;
  let dialer: CountedDialer;
  let hs: HubSpotStandIn;
  let d: Daemon;
  let bad: StoredContact;

  beforeAll(async () => {
    f = await dialerFixture();
    dialer = await countedDialer(f);
    // 999 seeded contacts, and a 1,000th whose company name is 1,100 characters long: a HubSpot text property holds
    // up to 65,536, a dialer variable 1,000.
    hs = await startHubSpotStandIn({ contacts: 999 });
    bad = hs.createContact({ firstname: 'Long', lastname: 'Name', company: 'C'.repeat(1100), phone: validPhone(999) });
    d = await Daemon.start(daemonConfig(f, redis.prefix, [hubspotSync(hs, f.campaignId)], { dialer: dialer.dialer }), { log: quietLog, http: false });
    await settle(d);
  });
  afterAll(async () => {
    await d?.close();
    await dialer?.proxy.close();
    await hs?.close();
    await f?.server.close();
    await redis.cleanup();
  });

  it('adds the 999 good contacts in one request and refuses the bad one alone, its reason in words', async () => {
    const good = Object.fromEntries(hs.contacts().filter((c) => c.id !== bad.id).map((c) => [e164(c.properties.phone)!, vars(c)]));
    expect(Object.keys(good)).toHaveLength(999);
    await expectCampaign(f, good);
    const [full] = await runs(d, 'hs');
    expect(full).toMatchObject({ mode: 'full', status: 'done', seen: 1000, invalid: 1, planned: 999, pushed: 999, rejected: 0 });
    await expectRefusedForLength(d, 'hs', full!, { contactId: bad.id, variable: 'Company', field: 'company', length: 1100 });
    expect(dialer.adds()).toBe(1);
  });

  it('the company name shortened, an incremental run adds its number once', async () => {
    hs.updateContact(bad.id, { company: 'Short Co' });
    const run = await pullAndSettle(d, 'hs');
    expect(run).toMatchObject({ mode: 'incremental', status: 'done', seen: 1, invalid: 0, planned: 1, pushed: 1, rejected: 0 });
    const numbers = await expectCampaign(f, expected(hs));
    expect(numbers.size).toBe(1000);
    expect(numbers.get(validPhone(999))?.varValues).toEqual(['Long', 'Name', 'Short Co']);
    expect(dialer.adds()).toBe(2);
    sentNothingRefused(hs);
  });

  it('a contact in the campaign whose company name grows past 1,000 characters keeps its number as it was until fixed', async () => {
    const c = hs.contacts()[10]!;
    const phone = e164(c.properties.phone)!;
    const before = (await byNumber(f)).get(phone)!;
    hs.updateContact(c.id, { company: 'X'.repeat(1001) });
    const run = await pullAndSettle(d, 'hs');
    expect(run).toMatchObject({ mode: 'incremental', status: 'done', invalid: 1, planned: 0, rejected: 0 });
    await expectRefusedForLength(d, 'hs', run, { contactId: c.id, variable: 'Company', field: 'company', length: 1001 });
    expect((await byNumber(f)).get(phone)).toMatchObject({ id: before.id, varValues: before.varValues });
    hs.updateContact(c.id, { company: 'Fixed Co' });
    // A replace: the old number deleted, the new one added.
    expect(await pullAndSettle(d, 'hs')).toMatchObject({ mode: 'incremental', status: 'done', invalid: 0, planned: 2, deleted: 1, pushed: 1, rejected: 0 });
    const after = await byNumber(f);
    expect(after.get(phone)?.varValues).toEqual([c.properties.firstname, c.properties.lastname, 'Fixed Co']);
    expect(after.get(phone)?.id).not.toBe(before.id);
    expect(after.size).toBe(1000);
    expect(dialer.adds()).toBe(3);
  });
});
