// Each call once in every CRM when a number's attempts start again: a number taken out of its campaign while a retry
// is pending (at its cap, marked Do Not Call, a contact that left) and added again is a new record, called from
// attempt 1 again, so the attempt does not name a call; the mirror keys a call by its start too. And the upgrade from
// the attempt keys earlier versions wrote: what they mirrored is neither written again nor taken for a later call of
// the same number and attempt, with Redis intact and after Redis lost everything.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { startPipedriveStandIn } from '../../crm-stand-ins/pipedrive.ts';
import { startSalesforceStandIn } from '../../crm-stand-ins/salesforce.ts';
import { Daemon } from '../../daemon/app.ts';
import { attemptKey, callKey, mirrorRun } from '../../daemon/mirror/mirror.ts';
import { keyIn } from '../../daemon/sinks/sink.ts';
import { DEFAULT_OUTCOMES } from '../../server/dialer/model.ts';
import { callDetailRecords, campaignNumbers, daemonConfig, numberCount, quietLog, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { members, numbersOf, salesforceSync } from '../support/salesforce.ts';
import { createAccount, createCampaign, createKey, startServer } from '../support/server.ts';

const TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
const CONTACTS = 8;
const dir = mkdtempSync(join(tmpdir(), 'cds-mirror-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Call { number: string; attempt: number; startedAtLocal: string; endedAtLocal: string }

/** Nobody answers, and a retry is an hour away: after its first call each number waits in RetryPending. */
async function dialer(seed: number): Promise<DialerFixture> {
  const server = await startServer({ seed, clockStart: '2026-07-01T14:00:00Z', outcomes: { ...DEFAULT_OUTCOMES, ringResult: { Answer: 0, NoAnswer: 1, Busy: 0, CallError: 0 } } });
  const account = await createAccount(server, 'Keys Co', TZ);
  const campaign = await createCampaign(server, account.id, {
    name: 'Again', type: 'Dynamic', state: 'Active',
    dialer: { mode: 'Power', agents: 4, maxAttempts: 3, callingHours: ALL_DAY, retryDelaySeconds: { NoAnswer: 3600, Busy: 3600, CallError: 3600, Machine: 3600, Abandoned: 3600 } },
  });
  const token = await createKey(server, account.id, ['CampaignAdmin']);
  return { server, accountId: account.id, token, campaignId: campaign.id };
}

/** A CRM: the sync that feeds the campaign (and mirrors into it), and the keys of the activities it holds. */
interface Crm { sync: Record<string, unknown>; numbers: number; keys(): (string | undefined)[]; close(): Promise<void> }

const CRMS: [string, (f: DialerFixture) => Promise<Crm>][] = [
  ['HubSpot', async () => {
    const hs = await startHubSpotStandIn({ contacts: CONTACTS, searchPerSecond: 100 });
    return {
      numbers: CONTACTS,
      sync: { id: 'crm', source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, searchPerSecond: 50 }, mapping: { phone: 'phone', defaultCountry: 'US' } },
      keys: () => hs.calls().map((c) => keyIn(c.properties.hs_call_title)),
      close: () => hs.close(),
    };
  }],
  ['Pipedrive', async () => {
    const pd = await startPipedriveStandIn({ persons: CONTACTS });
    return {
      numbers: CONTACTS,
      sync: { id: 'crm', source: { type: 'pipedrive', baseUrl: pd.url, apiToken: pd.apiToken, burstPer2Seconds: 100 }, mapping: { phone: 'phones', defaultCountry: 'US' } },
      keys: () => pd.callLogs().map((l) => keyIn(l.subject)),
      close: () => pd.close(),
    };
  }],
  // Upserted on the Task's external id: an attempt's key would replace the earlier call's Task.
  ['Salesforce', async () => {
    const sf = await startSalesforceStandIn({ contacts: CONTACTS, leads: 0 });
    const sfCampaign = sf.records('Campaign')[0]!.values.Id as string;
    const { id: _, campaignId: __, ...sync } = salesforceSync(sf, '', { campaignId: sfCampaign }, { taskExternalIdField: sf.taskExternalIdField });
    return {
      numbers: numbersOf(members(sf, sfCampaign)).length,
      sync: { id: 'crm', ...sync },
      keys: () => sf.records('Task').map((t) => t.values[sf.taskExternalIdField] as string | undefined),
      close: () => sf.close(),
    };
  }],
  ['a JSON-lines file', async () => {
    const csv = join(dir, `contacts-${Date.now()}.csv`);
    const file = join(dir, `calls-${Date.now()}.jsonl`);
    writeFileSync(csv, `id,phone\n${Array.from({ length: CONTACTS }, (_, i) => `c${i},+1212555${String(1000 + i)}`).join('\n')}\n`);
    return {
      numbers: CONTACTS,
      sync: { id: 'crm', source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, mirror: { every: '1d', sink: { type: 'file', path: file } } },
      keys: () => { try { return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { key: string }).key); } catch { return []; } },
      close: async () => {},
    };
  }],
];

describe.each(CRMS)('%s: a number added again after its first call', (_, crmOf) => {
  it('gets each of its calls mirrored once, across the upgrade from attempt keys and after Redis lost everything', async () => {
    const f = await dialer(31);
    const crm = await crmOf(f);
    const { prefix, cleanup } = testPrefix();
    const config = () => daemonConfig(f, prefix, [{ mirror: { every: '1d' }, ...crm.sync, campaignId: f.campaignId, schedule: { every: '1d' } }],
      { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ } });
    let d = await Daemon.start(config(), { log: quietLog, http: false });
    const url = `/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/numbers`;
    /** Takes the number out (its retry pending) and adds it again: a new record, called from attempt 1 again. */
    const addAgain = async (phone: string) => {
      const held = (await campaignNumbers(f)).find((n) => n.number === phone)!;
      expect(held.status).toBe('RetryPending');
      expect((await f.server.request(url, { method: 'DELETE', token: f.token, json: [held.id] })).ok).toBe(true);
      expect((await f.server.request(url, { method: 'POST', token: f.token, json: [{ number: phone }] })).ok).toBe(true);
    };
    const expectEachOnce = (keys: string[]) => {
      const got = crm.keys();
      expect(got.length - new Set(got).size).toBe(0);
      expect(new Set(got)).toEqual(new Set(keys));
    };
    try {
      await waitFor(async () => (await numberCount(f)) === crm.numbers, 'the contacts in the campaign');
      let mirror = d.mirrors.get('crm')!;
      const meta = mirror.state.keys.mirror.meta;
      // As a version before per-call keys mirrored: every call under its attempt's key.
      await d.redis.hset(meta, 'attemptKeysUntil', '9999-12-31T23:59:59');
      await f.server.advance(600);
      const first = await callDetailRecords<Call>(f);
      expect(first.length).toBe(crm.numbers);
      expect((await mirrorRun(mirror)).written).toBe(crm.numbers);
      const before = first.map((r) => attemptKey(f.campaignId, r.number, r.attempt));
      expectEachOnce(before);

      // The upgrade: the mirror's state as that version left it.
      await d.redis.hdel(meta, 'attemptKeysUntil', 'lookUpBothBefore');
      const phone = first[0]!.number;
      await addAgain(phone);
      await f.server.advance(600);
      const second = (await callDetailRecords<Call>(f)).filter((r) => !first.some((x) => x.startedAtLocal === r.startedAtLocal && x.number === r.number));
      expect(second.map((r) => [r.number, r.attempt])).toEqual([[phone, 1]]);
      expect((await mirrorRun(mirror)).written).toBe(1);
      // Read again from the start (a backfill): the calls mirrored before the upgrade are found by their marks.
      expect((await mirrorRun(mirror, { since: '2026-07-01' })).written).toBe(0);
      expectEachOnce([...before, callKey(f.campaignId, second[0]!)]);

      // A third call of the number, attempt 1 again, not yet mirrored when Redis loses everything: a look-up by its
      // attempt's key finds the first call's activity, which is not this call.
      await addAgain(phone);
      await f.server.advance(600);
      const all = await callDetailRecords<Call>(f);
      const third = all.filter((r) => r.number === phone && r.attempt === 1 && r.startedAtLocal > second[0]!.startedAtLocal);
      expect(third.length).toBe(1);
      await d.close(2000);
      // Redis lost everything: every key of the daemon's prefix.
      await cleanup();
      d = await Daemon.start(config(), { log: quietLog, http: false });
      mirror = d.mirrors.get('crm')!;
      // (Its contacts read again first: the mirror writes a call on the contact its number came from. The daemon's own
      // first mirror run may come before, and park the calls whose contacts it did not know yet: this run takes them.)
      await waitFor(async () => (await d.redis.hget(d.runtimes.get('crm')!.state.keys.meta, 'fullDone')) === '1', 'the contacts read again');
      await mirrorRun(mirror);
      expectEachOnce([...before, callKey(f.campaignId, second[0]!), callKey(f.campaignId, third[0]!)]);
    } finally {
      await d.close(2000);
      await crm.close();
      await f.server.close();
      await cleanup();
    }
  }, 180_000);
});
