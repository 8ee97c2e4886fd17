// A new sync pointed at a campaign that already holds numbers, for every source: the dry run is the plan the first
// start carries out (the same adds, replaces and deletions, counted from the campaign itself before and after), and
// the start deletes or replaces none of the numbers it did not add (added by hand before the sync existed, some of
// them numbers its contacts hold too, with other variables): they stay with their record ids, counted as "not this
// sync's". Only a Do Not Call mark takes such a number out. With ownsCampaign, the sync takes them as its own.
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { DO_NOT_CALL_PROPERTY, startHubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { DO_NOT_CALL_FIELD, startPipedriveStandIn } from '../../crm-stand-ins/pipedrive.ts';
import { startSalesforceStandIn } from '../../crm-stand-ins/salesforce.ts';
import { Daemon } from '../../daemon/app.ts';
import { dryRun, type DryRunCounts } from '../../daemon/sync/dry-run.ts';
import { syncStatus } from '../../daemon/sync/status.ts';
import { REDIS_URL, campaignNumbers, daemonConfig, dialerFixture, quietLog, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { PHONES, salesforceSync } from '../support/salesforce.ts';
import { pullAndSettle, settle } from '../support/sync-checks.ts';

function e164(text: unknown): string | null {
  const p = parsePhoneNumberFromString(typeof text === 'string' ? text : '', 'US');
  return p?.isValid() ? p.number : null;
}

/** A contact of the source as the test sees it. */
interface Person { id: string; phones: string[]; marked: boolean }

interface Source {
  sync: Record<string, unknown>;
  people: Person[];
  /** Sends every contact to a webhook source's daemon (null: the source is read). */
  deliver: ((hook: string) => Promise<void>) | null;
  close(): Promise<void>;
}

const toClose: (() => Promise<void>)[] = [];
afterAll(async () => { for (const c of toClose.reverse()) await c(); });

const SOURCES: Record<string, (f: DialerFixture) => Promise<Source>> = {
  async hubspot(f) {
    const hs = await startHubSpotStandIn({ contacts: 30, doNotCallShare: 0.25 });
    return {
      sync: { id: 'first', campaignId: f.campaignId, mapping: { phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'firstname' }, doNotCall: DO_NOT_CALL_PROPERTY },
        source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, clientSecret: 'hs-client-secret' } },
      people: hs.contacts().map((c) => ({ id: c.id, phones: [e164(c.properties.phone)!], marked: c.properties[DO_NOT_CALL_PROPERTY] === 'true' })),
      deliver: null, close: () => hs.close(),
    };
  },
  async pipedrive(f) {
    const pd = await startPipedriveStandIn({ persons: 30, doNotCallShare: 0.25 });
    const [yes] = DO_NOT_CALL_FIELD.options.map((o) => o.id);
    return {
      sync: { id: 'first', campaignId: f.campaignId, mapping: { phone: 'phones', defaultCountry: 'US', variables: { Name: 'name' }, doNotCall: { field: DO_NOT_CALL_FIELD.key, marked: [yes] } },
        source: { type: 'pipedrive', baseUrl: pd.url, apiToken: pd.apiToken, webhookUser: 'pd-hooks', webhookPassword: 'a-long-webhook-password' } },
      people: pd.persons().map((p) => ({ id: String(p.id), phones: p.phones.map((ph) => e164(ph.value)!), marked: p.custom_fields[DO_NOT_CALL_FIELD.key] === yes })),
      deliver: null, close: () => pd.close(),
    };
  },
  async salesforce(f) {
    const sf = await startSalesforceStandIn({ contacts: 30, leads: 0 });
    const phonesOf = (values: Record<string, unknown>) => [...new Set(PHONES.map((p) => e164(values[p])).filter((n): n is string => n !== null))];
    return {
      sync: { ...salesforceSync(sf, f.campaignId, { object: 'Contact' }), id: 'first' },
      people: sf.records('Contact').map((c) => ({ id: c.values.Id as string, phones: phonesOf(c.values), marked: c.values.DoNotCall === true })),
      deliver: null, close: () => sf.close(),
    };
  },
  async webhook(f) {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const people = Array.from({ length: 30 }, (_, i) => ({ id: `w${i}`, phones: [validPhone(610_000 + i)], marked: i % 4 === 0 }));
    return {
      sync: { id: 'first', campaignId: f.campaignId, source: { type: 'webhook', secret }, mapping: { phone: 'phone', defaultCountry: 'US', doNotCall: 'dnc', variables: { Name: 'name' } } },
      people,
      async deliver(hook) {
        // Signed here with node:crypto, not with the daemon's helper, so a shared mistake cannot hide.
        const body = JSON.stringify({ contacts: people.map((p) => ({ id: p.id, phone: p.phones[0], dnc: p.marked, name: `Person ${p.id}` })) });
        const ts = String(Math.floor(Date.now() / 1000));
        const sig = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(`msg_1.${ts}.${body}`).digest('base64');
        const res = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1', 'webhook-timestamp': ts, 'webhook-signature': `v1,${sig}` }, body });
        expect(res.status).toBe(200);
      },
      close: async () => {},
    };
  },
  async csv(f) {
    const dir = await mkdtemp(join(tmpdir(), 'cds-first-'));
    const path = join(dir, 'contacts.csv');
    const people = Array.from({ length: 30 }, (_, i) => ({ id: `c${i}`, phones: [validPhone(620_000 + i)], marked: i % 5 === 0 }));
    await writeFile(path, `id,phone,name,Do Not Call\n${people.map((p) => `${p.id},${p.phones[0]},Person ${p.id},${p.marked ? 'Yes' : 'No'}`).join('\n')}\n`);
    return {
      sync: { id: 'first', campaignId: f.campaignId, source: { type: 'csv', path }, mapping: { phone: 'phone', defaultCountry: 'US', doNotCall: 'Do Not Call', variables: { Name: 'name' } } },
      people, deliver: null, close: () => rm(dir, { recursive: true, force: true }),
    };
  },
};

/** Adds numbers to the campaign as an operator would by hand (another key, the console, an upload, n8n). */
async function addByHand(f: DialerFixture, numbers: string[]): Promise<void> {
  const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/numbers`, {
    token: f.token, method: 'POST', json: numbers.map((number) => ({ number, varValues: ['added by hand'] })),
  });
  expect(res.status, await res.clone().text()).toBeLessThan(300);
}

const byNumber = async (f: DialerFixture) => new Map((await campaignNumbers(f)).map((n) => [n.number, n.id]));

/** What happened to the campaign between two readings of it: numbers added, deleted, and replaced (same number, new record). */
function changes(before: Map<string, string>, after: Map<string, string>) {
  return {
    add: [...after.keys()].filter((n) => !before.has(n)).length,
    remove: [...before.keys()].filter((n) => !after.has(n)).length,
    replace: [...after].filter(([n, id]) => before.has(n) && before.get(n) !== id).length,
  };
}

/** Deletes every key under a prefix, as a Redis that lost the daemon's state would have it. */
async function testPrefixCleanup(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    for (let cursor = '0'; ;) {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length) await redis.unlink(...keys);
      if ((cursor = next) === '0') break;
    }
  } finally {
    redis.disconnect();
  }
}

interface World { f: DialerFixture; source: Source; prefix: string; strangers: string[]; shared: string[]; markedByHand: string[] }

async function world(name: string): Promise<World> {
  const f = await dialerFixture();
  const source = await SOURCES[name]!(f);
  const { prefix, cleanup } = testPrefix();
  toClose.push(async () => { await source.close(); await f.server.close(); await cleanup(); });
  // Numbers of every kind, all added by hand before the sync existed: ten no contact holds, two that unmarked
  // contacts hold too (with other variables than the sync's), one a contact marked Do Not Call holds.
  const strangers = Array.from({ length: 10 }, (_, i) => validPhone(990_000 + i));
  const unmarked = source.people.filter((p) => !p.marked && p.phones.length);
  const shared = [unmarked[0]!.phones[0]!, unmarked[1]!.phones[0]!];
  const markedByHand = [source.people.find((p) => p.marked && p.phones.length)!.phones[0]!];
  await addByHand(f, [...strangers, ...shared, ...markedByHand]);
  return { f, source, prefix, strangers, shared, markedByHand };
}

describe('the first start of a sync on a campaign that already holds numbers', () => {
  for (const name of Object.keys(SOURCES)) {
    it(`${name}: the dry run is the start's plan, and the start deletes or replaces none of the numbers it did not add`, async () => {
      const w = await world(name);
      const config = daemonConfig(w.f, w.prefix, [w.source.sync], { http: { host: '127.0.0.1', port: 0 } });
      const before = await byNumber(w.f);
      expect(before.size).toBe(13);

      // The dry run, as `campaign-sync sync first --dry-run` runs it: no workers, nothing written.
      const dry = await Daemon.start(config, { log: quietLog, workers: false, http: false, schedules: false });
      const lines: string[] = [];
      let counts: DryRunCounts;
      try {
        counts = await dryRun(dry.runtimes.get('first')!, (l) => lines.push(l), 1000);
      } finally {
        await dry.close();
      }
      expect(await byNumber(w.f)).toEqual(before);
      const people = w.source.people;
      const wantedPhones = new Set(people.filter((p) => !p.marked).flatMap((p) => p.phones));
      const markedPhones = new Set(people.filter((p) => p.marked).flatMap((p) => p.phones));
      const pulls = w.source.deliver === null;
      const expected: DryRunCounts = pulls
        ? { add: [...wantedPhones].filter((p) => !before.has(p) && !markedPhones.has(p)).length, replace: 0, remove: w.markedByHand.length, invalid: 0,
          others: w.strangers.length + w.shared.length, doNotCall: [...markedPhones].filter((p) => !before.has(p)).length, lists: {}, waitingForLists: 0 }
        // A webhook source has no selection to read: nothing to add or delete until its webhooks deliver contacts.
        : { add: 0, replace: 0, remove: 0, invalid: 0, others: 13, doNotCall: 0, lists: {}, waitingForLists: 0 };
      expect(counts).toEqual(expected);
      expect(lines).toContain(`in the campaign, not this sync's: ${expected.others} (kept as they are; a sync deletes and replaces only the numbers it added)`);
      if (pulls) for (const p of w.shared) expect(lines.some((l) => l.startsWith('  keep') && l.includes(p.slice(-4)) && l.includes('wants it'))).toBe(true);

      // The start carries out exactly that plan.
      const d = await Daemon.start(config, { log: quietLog });
      try {
        await settle(d);
        const after = await byNumber(w.f);
        expect(changes(before, after)).toEqual({ add: counts.add, remove: counts.remove, replace: counts.replace });
        for (const p of [...w.strangers, ...w.shared]) expect(after.get(p), `${p} kept with its record`).toBe(before.get(p));
        if (pulls) for (const p of w.markedByHand) expect(after.has(p), `${p}: its contact is marked Do Not Call`).toBe(false);
        const status = await syncStatus(d.runtimes.get('first')!);
        expect(status.notThisSyncs).toBe(pulls ? 12 : 13);

        if (!pulls) {
          // The webhook's contacts arrive: the numbers they hold that someone else added stay, with their records;
          // the one whose contact is marked leaves; the rest are added.
          await w.source.deliver!(`${d.address}/webhooks/first`);
          await settle(d);
          const now = await byNumber(w.f);
          for (const p of [...w.strangers, ...w.shared]) expect(now.get(p)).toBe(before.get(p));
          for (const p of w.markedByHand) expect(now.has(p)).toBe(false);
          expect(changes(before, now).add).toBe([...wantedPhones].filter((p) => !before.has(p)).length);
        }
      } finally {
        await d.close();
      }
    }, 60_000);
  }

  it('with ownsCampaign the sync takes them as its own: the dry run says so, and the start does it', async () => {
    const w = await world('csv');
    const config = daemonConfig(w.f, w.prefix, [{ ...w.source.sync, ownsCampaign: true }]);
    const before = await byNumber(w.f);
    const dry = await Daemon.start(config, { log: quietLog, workers: false, http: false, schedules: false });
    const lines: string[] = [];
    let counts: DryRunCounts;
    try { counts = await dryRun(dry.runtimes.get('first')!, (l) => lines.push(l), 1000); } finally { await dry.close(); }
    // The strangers leave (no contact holds them), the two shared numbers are replaced (other variables), and the marked one leaves.
    expect(counts).toMatchObject({ replace: 2, remove: 11, others: 0 });
    const d = await Daemon.start(config, { log: quietLog });
    try {
      await settle(d);
      expect(changes(before, await byNumber(w.f))).toEqual({ add: counts.add, remove: counts.remove, replace: counts.replace });
    } finally {
      await d.close();
    }
  }, 60_000);

  it('after Redis lost the daemon\'s state, the numbers the sync added are no longer provably its own: kept, and counted so', async () => {
    const w = await world('csv');
    const config = daemonConfig(w.f, w.prefix, [w.source.sync]);
    let d = await Daemon.start(config, { log: quietLog });
    await settle(d);
    const added = await byNumber(w.f);
    await d.close();
    // Redis loses every key of the daemon (a restart without persistence); the CSV then empties: every contact left.
    await testPrefixCleanup(w.prefix);
    await writeFile((w.source.sync.source as { path: string }).path, 'id,phone,name,Do Not Call\n');
    d = await Daemon.start(config, { log: quietLog });
    try {
      await settle(d);
      expect(await byNumber(w.f)).toEqual(added);
      expect((await syncStatus(d.runtimes.get('first')!)).notThisSyncs).toBe(added.size);
    } finally {
      await d.close();
    }
    // The operator who knows the campaign is the sync's alone says so: the numbers no contact wants leave.
    d = await Daemon.start(daemonConfig(w.f, w.prefix, [{ ...w.source.sync, ownsCampaign: true }]), { log: quietLog });
    try {
      await pullAndSettle(d, 'first', true);
      expect((await campaignNumbers(w.f)).map((n) => `${n.number} ${n.status}`)).toEqual([]);
    } finally {
      await d.close();
    }
  }, 60_000);

  it('refuses ownsCampaign on a campaign another sync feeds too, naming the field', async () => {
    const f = await dialerFixture();
    toClose.push(() => f.server.close());
    const sync = (id: string) => ({ id, campaignId: f.campaignId, source: { type: 'csv', path: '/nonexistent.csv' }, mapping: { phone: 'phone' }, ...(id === 'a' ? { ownsCampaign: true } : {}) });
    expect(() => daemonConfig(f, 'x', [sync('a'), sync('b')])).toThrow(/syncs\.0\.ownsCampaign.*fed by another sync too/s);
  });
});
