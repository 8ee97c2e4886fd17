// Do Not Call, for every source, end to end (stand-in or signed webhook or CSV file → the daemon → the reference
// server): a marked contact is never added, a contact marked once added leaves at once (webhook or scheduled read),
// unmarking adds it again, a number already dialed stays, an unreadable value is a record error that holds the
// contact out; each change costs the dialer and the CRM a few requests, not the selection's size.
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { ListCopies } from '../../daemon/dnc/copies.ts';
import { DncKeys } from '../../daemon/state/keys.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { DO_NOT_CALL_PROPERTY, startHubSpotStandIn, type HubSpotEvent, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { DO_NOT_CALL_FIELD, startPipedriveStandIn, type PipedriveStandIn, type StoredPerson } from '../../crm-stand-ins/pipedrive.ts';
import { startSalesforceStandIn, type SalesforceStandIn } from '../../crm-stand-ins/salesforce.ts';
import { Daemon } from '../../daemon/app.ts';
import { dryRun } from '../../daemon/sync/dry-run.ts';
import { crmMarkBy } from '../../daemon/sync/dnc-check.ts';
import { replanNumbers } from '../../daemon/dnc/replan.ts';
import { syncStatus } from '../../daemon/sync/status.ts';
import { campaignNumbers, daemonConfig, dialerFixture, quietLog, REDIS_URL, testPrefix, type DialerFixture } from '../support/daemon.ts';
import { PHONES, salesforceSync } from '../support/salesforce.ts';
import { setNumber } from '../support/server.ts';
import { allRunErrors, countedDialer, freePort, held, pullAndSettle, settle, type CountedDialer } from '../support/sync-checks.ts';

function e164(text: unknown): string | null {
  const p = parsePhoneNumberFromString(typeof text === 'string' ? text : '', 'US');
  return p?.isValid() ? p.number : null;
}

/** A contact of the CRM as the test sees it: its id, its numbers, whether it is marked. */
interface Person { id: string; phones: string[]; marked: boolean }

/**
 * One source as the scenarios drive it: a change in the CRM, then the webhook the CRM sends about it or a scheduled
 * read; `value` writes a raw Do Not Call value (for the unreadable case).
 */
interface Driver {
  syncId: string;
  /** Seeded people (some marked). */
  people(): Person[];
  create(phone: string, marked: boolean): Promise<string>;
  set(id: string, value: boolean | string): Promise<void>;
  /** Tells the daemon about a change: the CRM's webhook, or null when the source has none. */
  webhook: ((id: string) => Promise<void>) | null;
  /** Requests the CRM received so far (0 for sources without one). */
  crmRequests(): number;
  /** A Do Not Call value the table cannot read (for sources whose field takes any text). */
  unreadable: string | null;
  field: string;
}

interface Rig { d: Daemon; f: DialerFixture; dialer: CountedDialer; driver: Driver; close(): Promise<void> }

const numbersHeld = async (f: DialerFixture) => new Map((await campaignNumbers(f)).map((n) => [n.number, n]));

/** Applies a change the way the source learns of it (its webhook, else a scheduled read), and settles. */
async function deliver(rig: Rig, id: string, via: 'webhook' | 'read'): Promise<void> {
  if (via === 'webhook') {
    await rig.driver.webhook!(id);
    await settle(rig.d);
  } else await pullAndSettle(rig.d, rig.driver.syncId);
}

/** What one change cost: dialer requests by method and CRM requests. */
async function cost(rig: Rig, change: () => Promise<void>): Promise<{ dialer: string[]; crm: number }> {
  const dialerBefore = rig.dialer.proxy.exchanges.length;
  const crmBefore = rig.driver.crmRequests();
  await change();
  return { dialer: rig.dialer.proxy.exchanges.slice(dialerBefore).map((e) => `${e.method} ${e.path.replace(/\?.*$/, '').replace(/^.*\/campaigns\/[^/]+/, '')}`), crm: rig.driver.crmRequests() - crmBefore };
}

/** `reads`: the source is read on a schedule (a webhook source is not); `unreadable`: its field takes any text. */
function scenarios(name: string, { unreadable, reads }: { unreadable: boolean; reads: boolean }, start: () => Promise<Rig>): void {
  describe(`Do Not Call: ${name}`, () => {
    let rig: Rig;
    const vias = (): ('webhook' | 'read')[] => [...(rig.driver.webhook ? ['webhook' as const] : []), ...(reads ? ['read' as const] : [])];
    beforeAll(async () => { rig = await start(); });
    afterAll(async () => { await rig?.close(); });

    it('imports every contact but the marked ones, and the status counts the numbers they hold out', async () => {
      const people = rig.driver.people();
      const marked = people.filter((p) => p.marked);
      expect(marked.length).toBeGreaterThan(0);
      const want = [...new Set(people.filter((p) => !p.marked).flatMap((p) => p.phones))].sort();
      const now = await numbersHeld(rig.f);
      expect([...now.keys()].sort()).toEqual(want);
      for (const p of marked) for (const n of p.phones) expect(now.has(n)).toBe(false);
      // The numbers held out by Do Not Call, in the status and on the operations page.
      const heldOut = new Set(marked.flatMap((p) => p.phones)).size;
      expect(heldOut).toBeGreaterThan(0);
      expect((await syncStatus(rig.d.runtimes.get(rig.driver.syncId)!)).doNotCall).toBe(heldOut);
      const ops = await fetch(`${rig.d.address}/ops/api/syncs`, { headers: { authorization: `Basic ${Buffer.from(`ops:${OPS_TOKEN}`).toString('base64')}` } });
      expect((await ops.json() as { syncs: { sync: string; doNotCall: number }[] }).syncs).toEqual([expect.objectContaining({ sync: rig.driver.syncId, doNotCall: heldOut })]);
    });

    if (reads) {
      it('a dry run shows a contact marked in the CRM as a deletion for Do Not Call, and writes nothing', async () => {
        const p = rig.driver.people().find((x) => !x.marked && x.phones.length)!;
        await rig.driver.set(p.id, true);
        const before = await numbersHeld(rig.f);
        const lines: string[] = [];
        const r = await dryRun(rig.d.runtimes.get(rig.driver.syncId)!, (l) => lines.push(l), 1000);
        expect(r).toMatchObject({ add: 0, replace: 0, remove: p.phones.length });
        expect(lines.filter((l) => l.includes('is marked Do Not Call'))).toEqual(p.phones.map(() => expect.stringContaining(`(contact ${p.id} is marked Do Not Call)`)));
        expect(await numbersHeld(rig.f)).toEqual(before);
        await rig.driver.set(p.id, false);
      });
    }

    it('a contact whose number is on the national registry is never added, nor counted as marked', async () => {
      let i = 0;
      for (const via of vias()) {
        const phone = REGISTERED[i++]!;
        const id = await rig.driver.create(phone, false);
        await deliver(rig, id, via);
        expect((await numbersHeld(rig.f)).has(phone)).toBe(false);
        const rt = rig.d.runtimes.get(rig.driver.syncId)!;
        expect(await rt.state.redis.hget(rt.state.keys.dncKeptOut, phone)).toBe('national');
        expect((await rt.dnc!.gate.company.lookup([phone]))[0]!.status).toBe('not-listed');
      }
    });

    it('a contact created marked is never added', async () => {
      let i = 0;
      for (const via of vias()) {
        const phone = validPhone(700_000 + i++);
        const id = await rig.driver.create(phone, true);
        await deliver(rig, id, via);
        expect((await numbersHeld(rig.f)).has(phone)).toBe(false);
        expect(await held(rig.d, rig.driver.syncId, phone)).toBeNull();
      }
    });

    it('a contact marked after it was added leaves the campaign at once, for one DELETE, and its number goes on the company\'s list: unmarked, it stays out until taken off that list, then is added again for one POST', async () => {
      let i = 0;
      for (const via of vias()) {
        const phone = validPhone(710_000 + i++);
        const id = await rig.driver.create(phone, false);
        await deliver(rig, id, via);
        expect((await numbersHeld(rig.f)).get(phone)?.status).toBe('NotContacted');

        await rig.driver.set(id, true);
        const marking = await cost(rig, () => deliver(rig, id, via));
        expect((await numbersHeld(rig.f)).has(phone)).toBe(false);
        // Proportional to the change: one deletion, and a read of what changed (not of the selection).
        expect({ via, dialer: marking.dialer }).toEqual({ via, dialer: ['DELETE /numbers'] });
        expect(marking.crm).toBeLessThanOrEqual(3);

        // The mark put the number on the company's Do Not Call list, which nothing leaves by itself: unmarked, it stays out.
        const rt = rig.d.runtimes.get(rig.driver.syncId)!;
        const company = rt.dnc!.gate.company;
        expect((await company.lookup([phone]))[0]).toMatchObject({ status: 'listed', entry: { by: crmMarkBy(rig.driver.syncId) } });
        // Read again, still marked: the list is not asked to add it again (its log grows with changes, not reads).
        await deliver(rig, id, via);
        expect((await company.log()).filter((l) => l.number === phone)).toHaveLength(1);
        await rig.driver.set(id, false);
        const unmarked = await cost(rig, () => deliver(rig, id, via));
        expect((await numbersHeld(rig.f)).has(phone)).toBe(false);
        expect({ via, dialer: unmarked.dialer }).toEqual({ via, dialer: [] });
        // Taken off the company's list (campaign-sync dnc remove), it is added again, for one POST.
        await company.remove([phone], { by: 'test', reason: 'the contact asked to be called again' });
        await replanNumbers(rt.state.redis, [rt.state.keys], [phone]);
        const unmarking = await cost(rig, () => deliver(rig, id, via));
        expect((await numbersHeld(rig.f)).get(phone)?.status).toBe('NotContacted');
        expect({ via, dialer: unmarking.dialer }).toEqual({ via, dialer: ['POST /numbers'] });
        expect(unmarking.crm).toBeLessThanOrEqual(3);
      }
    });

    it('a number already dialed stays (its status forbids deleting it), with its history; one in a call leaves once the call ends pending a retry', async () => {
      const via = vias()[0]!;
      const [dialed, inCall] = [validPhone(720_000), validPhone(720_001)];
      const ids = [await rig.driver.create(dialed, false), await rig.driver.create(inCall, false)];
      for (const id of ids) await deliver(rig, id, via);
      const before = await numbersHeld(rig.f);
      setNumber(rig.f.server, before.get(dialed)!.id, 'Success', 1);
      setNumber(rig.f.server, before.get(inCall)!.id, 'Contacting', 1);
      for (const id of ids) await rig.driver.set(id, true);
      for (const id of ids) await deliver(rig, id, via);
      let now = await numbersHeld(rig.f);
      expect(now.get(dialed)).toMatchObject({ id: before.get(dialed)!.id, status: 'Success', attempts: 1 });
      expect((await held(rig.d, rig.driver.syncId, dialed))?.keptBecause).toMatch(/Success/);
      expect(now.get(inCall)?.status).toBe('Contacting');
      // The call ends with a retry pending: the next read deletes it (its retry is cancelled).
      setNumber(rig.f.server, before.get(inCall)!.id, 'RetryPending', 1);
      await pullAndSettle(rig.d, rig.driver.syncId);
      now = await numbersHeld(rig.f);
      expect(now.has(inCall)).toBe(false);
      expect(now.get(dialed)?.status).toBe('Success');
    });

    // Salesforce's DoNotCall is a checkbox and Pipedrive's option field takes only its option ids: their APIs refuse other values.
    if (unreadable) it('a Do Not Call value that cannot be read is a record error naming the field, and holds the contact out', async () => {
      const via = vias()[0]!;
      const phone = validPhone(730_000);
      const id = await rig.driver.create(phone, false);
      await deliver(rig, id, via);
      expect((await numbersHeld(rig.f)).has(phone)).toBe(true);
      await rig.driver.set(id, rig.driver.unreadable!);
      await deliver(rig, id, via);
      expect((await numbersHeld(rig.f)).has(phone)).toBe(false);
      const errors = (await allRunErrors(rig.d, rig.driver.syncId)).filter((e) => e.contactId === id);
      expect(errors.at(-1)).toMatchObject({ contactId: id, field: rig.driver.field, value: rig.driver.unreadable, code: 'bad_record' });
      expect(errors.at(-1)!.reason).toMatch(new RegExp(`Do Not Call field ${rig.driver.field} .*held out of the campaign`));
    });
  });
}

const OPS_TOKEN = 'do-not-call-ops-token-0123456789';
/** Numbers the national registry holds (one per via of a source, and more). */
const REGISTERED = Array.from({ length: 10 }, (_, i) => validPhone(760_000 + i));

/** The daemon on a counted dialer, its webhooks at a public URL known before it starts, its operations page on. */
async function startDaemon(f: DialerFixture, prefix: string, sync: Record<string, unknown>): Promise<{ d: Daemon; dialer: CountedDialer; hook: string }> {
  const dialer = await countedDialer(f);
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  // The national registry: a copy of every area code the contacts' numbers have, holding REGISTERED.
  const folder = await mkdtemp(join(tmpdir(), 'cds-dnc-registry-'));
  const byAreaCode = new Map<string, string[]>();
  for (let i = 0; i < 100; i++) byAreaCode.set(validPhone(i).slice(2, 5), [`${validPhone(i).slice(2, 5)}9999999`]);
  for (const p of REGISTERED) byAreaCode.get(p.slice(2, 5))!.push(p.slice(2));
  const files = await Promise.all([...byAreaCode].map(async ([ac, lines]) => { const file = join(folder, `${ac}.txt`); await writeFile(file, `${lines.join('\n')}\n`); return file; }));
  const redis = new Redis(REDIS_URL);
  await new ListCopies(redis, new DncKeys(prefix), 'national').loadFull(files, new Date(Date.now() - 86_400_000).toISOString().slice(0, 10));
  redis.disconnect();
  await rm(folder, { recursive: true, force: true });
  const d = await Daemon.start(daemonConfig(f, prefix, [sync], { dialer: dialer.dialer, http: { host: '127.0.0.1', port, publicUrl, adminToken: OPS_TOKEN },
    doNotCallLists: [{ name: 'national', type: 'registry', folder: tmpdir() }] }), { log: quietLog });
  return { d, dialer, hook: `${publicUrl}/webhooks/${sync.id as string}` };
}

scenarios('HubSpot (a custom booleancheckbox property)', { unreadable: true, reads: true }, async () => {
  const redis = testPrefix();
  const f = await dialerFixture();
  const hs: HubSpotStandIn = await startHubSpotStandIn({ contacts: 40, doNotCallShare: 0.25 });
  const sync = {
    id: 'hs', campaignId: f.campaignId,
    mapping: { phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'firstname' }, doNotCall: DO_NOT_CALL_PROPERTY },
    source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, clientSecret: 'hs-client-secret' },
  };
  const { d, dialer, hook } = await startDaemon(f, redis.prefix, sync);
  await settle(d);
  let eventId = 1;
  const event = (id: string): HubSpotEvent => ({
    eventId: eventId++, subscriptionId: 4002, portalId: 62515, appId: 1160452, occurredAt: Date.now(), subscriptionType: 'contact.propertyChange',
    attemptNumber: 0, objectId: Number(id), propertyName: DO_NOT_CALL_PROPERTY, propertyValue: hs.getContact(id)?.properties[DO_NOT_CALL_PROPERTY] ?? '', changeSource: 'CRM_UI',
  });
  return {
    d, f, dialer,
    driver: {
      syncId: 'hs', unreadable: 'maybe', field: DO_NOT_CALL_PROPERTY,
      people: () => hs.contacts().map((c) => ({ id: c.id, phones: [e164(c.properties.phone)!], marked: c.properties[DO_NOT_CALL_PROPERTY] === 'true' })),
      create: async (phone, marked) => hs.createContact({ firstname: 'New', phone, [DO_NOT_CALL_PROPERTY]: String(marked) }).id,
      set: async (id, value) => { hs.updateContact(id, { [DO_NOT_CALL_PROPERTY]: String(value) }); },
      webhook: async (id) => { expect((await hs.sendWebhook([event(id)], { url: hook })).status).toBe(200); },
      crmRequests: () => hs.stats.requests,
    },
    async close() {
      expect(hs.stats.refused).toBe(0);
      await d.close(); await dialer.proxy.close(); await hs.close(); await f.server.close(); await redis.cleanup();
    },
  };
});

scenarios('Pipedrive (a single-option custom field, by option id; onLeave keep)', { unreadable: false, reads: true }, async () => {
  const redis = testPrefix();
  const f = await dialerFixture();
  const pd: PipedriveStandIn = await startPipedriveStandIn({ persons: 40, doNotCallShare: 0.25 });
  const [yes, no] = DO_NOT_CALL_FIELD.options.map((o) => o.id);
  const auth = { user: 'pd-hooks', password: 'a-long-webhook-password' };
  const sync = {
    id: 'pd', campaignId: f.campaignId, onLeave: 'keep',
    mapping: { phone: 'phones', defaultCountry: 'US', variables: { Name: 'name' }, doNotCall: { field: DO_NOT_CALL_FIELD.key, marked: [yes] } },
    source: { type: 'pipedrive', baseUrl: pd.url, apiToken: pd.apiToken, webhookUser: auth.user, webhookPassword: auth.password },
  };
  const { d, dialer, hook } = await startDaemon(f, redis.prefix, sync);
  await settle(d);
  const previous = new Map<string, StoredPerson | null>();
  return {
    d, f, dialer,
    driver: {
      syncId: 'pd', unreadable: null, field: DO_NOT_CALL_FIELD.key,
      people: () => pd.persons().map((p) => ({ id: String(p.id), phones: p.phones.map((ph) => e164(ph.value)!), marked: p.custom_fields[DO_NOT_CALL_FIELD.key] === yes })),
      create: async (phone, marked) => {
        const p = pd.createPerson({ name: 'New Person', phones: [{ value: phone }], custom_fields: { [DO_NOT_CALL_FIELD.key]: marked ? yes : no } });
        previous.set(String(p.id), null);
        return String(p.id);
      },
      set: async (id, value) => {
        previous.set(id, pd.getPerson(Number(id))!);
        pd.updatePerson(Number(id), { custom_fields: { [DO_NOT_CALL_FIELD.key]: value === true ? yes : no } });
      },
      webhook: async (id) => {
        const before = previous.get(id) ?? null;
        expect((await pd.sendWebhook(before ? 'change' : 'create', pd.getPerson(Number(id))!, before, { url: hook, ...auth })).status).toBe(200);
      },
      crmRequests: () => pd.stats.requests,
    },
    async close() {
      expect(pd.stats.refused).toBe(0);
      await d.close(); await dialer.proxy.close(); await pd.close(); await f.server.close(); await redis.cleanup();
    },
  };
});

scenarios('Salesforce (its own DoNotCall, as every CRM goes; onLeave keep)', { unreadable: false, reads: true }, async () => {
  const redis = testPrefix();
  const f = await dialerFixture();
  const sf: SalesforceStandIn = await startSalesforceStandIn({ contacts: 40, leads: 0 });
  // onLeave keep: a contact leaving keeps its numbers, a contact marked Do Not Call does not.
  const sync = salesforceSync(sf, f.campaignId, { object: 'Contact' }, {}, { onLeave: 'keep' });
  const { d, dialer, hook } = await startDaemon(f, redis.prefix, sync);
  await settle(d);
  const phonesOf = (values: Record<string, unknown>) => [...new Set(PHONES.map((p) => e164(values[p])).filter((n): n is string => n !== null))];
  return {
    d, f, dialer,
    driver: {
      syncId: 'sf', unreadable: null, field: 'DoNotCall',
      people: () => sf.records('Contact').map((c) => ({ id: c.values.Id as string, phones: phonesOf(c.values), marked: c.values.DoNotCall === true })),
      create: async (phone, marked) => sf.createRecord('Contact', { LastName: 'New', Phone: phone, DoNotCall: marked }).values.Id as string,
      set: async (id, value) => { sf.updateRecord(id, { DoNotCall: value === true }); },
      webhook: async (id) => { expect(await sf.sendOutboundMessage({ url: hook, ids: [id], fields: ['Phone', 'DoNotCall'] }).settled).toBe('acknowledged'); },
      crmRequests: () => sf.stats.apiRequests,
    },
    async close() { await d.close(); await dialer.proxy.close(); await sf.close(); await f.server.close(); await redis.cleanup(); },
  };
});

scenarios('a generic webhook (a field of the posted contact)', { unreadable: true, reads: false }, async () => {
  const redis = testPrefix();
  const f = await dialerFixture();
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const sync = { id: 'wh', campaignId: f.campaignId, source: { type: 'webhook', secret }, mapping: { phone: 'phone', defaultCountry: 'US', doNotCall: 'dnc' } };
  const { d, dialer, hook } = await startDaemon(f, redis.prefix, sync);
  const contacts = new Map<string, Record<string, unknown>>();
  let seq = 0;
  // Signed here with node:crypto, not with the daemon's helper, so a shared mistake cannot hide.
  const post = async (payload: unknown) => {
    const body = JSON.stringify(payload);
    const id = `msg_${++seq}`;
    const ts = String(Math.floor(Date.now() / 1000));
    const sig = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(`${id}.${ts}.${body}`).digest('base64');
    const res = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${sig}` }, body });
    expect(res.status).toBe(200);
  };
  // The first delivery is the "import": 40 contacts, every fourth marked, in the spellings people send.
  const spellings = [true, 'yes', 'Y', '1', 1, 'TRUE'];
  for (let i = 0; i < 40; i++) contacts.set(`w${i}`, { id: `w${i}`, phone: validPhone(600_000 + i), dnc: i % 4 === 0 ? spellings[i % spellings.length] : ['no', false, '', null, 0][i % 5] });
  await post({ contacts: [...contacts.values()] });
  await settle(d);
  const markedValue = (v: unknown) => [true, 'yes', 'y', '1', 1, 'true'].includes(typeof v === 'string' ? v.toLowerCase() : v as never);
  let next = 0;
  return {
    d, f, dialer,
    driver: {
      syncId: 'wh', unreadable: 'perhaps', field: 'dnc',
      people: () => [...contacts.values()].filter((c) => String(c.id).startsWith('w') && Number(String(c.id).slice(1)) < 40)
        .map((c) => ({ id: String(c.id), phones: [c.phone as string], marked: markedValue(c.dnc) })),
      create: async (phone, marked) => { const id = `n${next++}`; contacts.set(id, { id, phone, dnc: marked }); return id; },
      set: async (id, value) => { contacts.set(id, { ...contacts.get(id)!, dnc: value }); },
      webhook: async (id) => { await post(contacts.get(id)); },
      crmRequests: () => 0,
    },
    async close() { await d.close(); await dialer.proxy.close(); await f.server.close(); await redis.cleanup(); },
  };
});

scenarios('a CSV file (a column)', { unreadable: true, reads: true }, async () => {
  const redis = testPrefix();
  const f = await dialerFixture();
  const dir = await mkdtemp(join(tmpdir(), 'cds-dnc-'));
  const path = join(dir, 'leads.csv');
  const rows = new Map<string, { phone: string; dnc: string }>();
  for (let i = 0; i < 40; i++) rows.set(`c${i}`, { phone: validPhone(650_000 + i), dnc: i % 5 === 0 ? 'Yes' : 'No' });
  const write = () => writeFile(path, `id,phone,Do Not Call\n${[...rows].map(([id, r]) => `${id},${r.phone},${r.dnc}`).join('\n')}\n`);
  await write();
  const sync = { id: 'csv', campaignId: f.campaignId, source: { type: 'csv', path }, mapping: { phone: 'phone', defaultCountry: 'US', doNotCall: 'Do Not Call' } };
  const { d, dialer } = await startDaemon(f, redis.prefix, sync);
  await settle(d);
  let next = 0;
  return {
    d, f, dialer,
    driver: {
      syncId: 'csv', webhook: null, unreadable: 'later', field: 'Do Not Call',
      people: () => [...rows].filter(([id]) => /^c\d+$/.test(id) && Number(id.slice(1)) < 40).map(([id, r]) => ({ id, phones: [r.phone], marked: r.dnc === 'Yes' })),
      create: async (phone, marked) => { const id = `n${next++}`; rows.set(id, { phone, dnc: marked ? 'Yes' : 'No' }); await write(); return id; },
      set: async (id, value) => { rows.set(id, { ...rows.get(id)!, dnc: value === true ? 'Yes' : value === false ? 'No' : value }); await write(); },
      crmRequests: () => 0,
    },
    async close() { await d.close(); await dialer.proxy.close(); await f.server.close(); await redis.cleanup(); await rm(dir, { recursive: true, force: true }); },
  };
});
