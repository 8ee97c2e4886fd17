// The sync daemon with a Salesforce source, end to end: the Salesforce stand-in → the daemon (in-process) → the
// reference server. Campaign members and SOQL selections, full and incremental, Do Not Call, deletions, Outbound
// Messages, a session expiring mid-run, the daily API allowance, every call attempt back as one Task, and each
// number's final status on its Lead or Contact.
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { startSalesforceStandIn, type SalesforceStandIn, type SfRecord } from '../../crm-stand-ins/salesforce.ts';
import { Daemon } from '../../daemon/app.ts';
import { SalesforceApi } from '../../daemon/crm/salesforce/client.ts';
import { salesforceSource } from '../../daemon/crm/salesforce/config.ts';
import { SalesforceSink } from '../../daemon/crm/salesforce/sink.ts';
import { Metrics } from '../../daemon/metrics.ts';
import { callKey } from '../../daemon/mirror/mirror.ts';
import { DaemonKeys, campaignKey } from '../../daemon/state/keys.ts';
import { parseConfig } from '../../daemon/config.ts';
import { callDetailRecords, campaignNumbers, daemonConfig, dialerFixture, numberCount, quietLog, REDIS_URL, rulesOff, spawnDaemon, startRedisServer, testPrefix, waitFor, type DaemonProcess, type DialerFixture } from '../support/daemon.ts';
import { startProxy } from '../support/proxy.ts';
import { dialingFixture, e164, MAPPING, members, numbersOf, PHONES, proxied, salesforceSync, TZ } from '../support/salesforce.ts';
import { createAccount, createCampaign, createKey, startServer } from '../support/server.ts';
import { campaignValues, countedDialer, counter, expectRefusedForLength, freePort, pullAndSettle, queued, runs, settle, type CountedDialer } from '../support/sync-checks.ts';

const ADMIN = 'sf-test-admin-token-0123456789';
const dir = mkdtempSync(join(tmpdir(), 'cds-salesforce-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function phonesOf(p: SfRecord): string[] {
  return PHONES.map((f) => e164(p.values[f])).filter((n): n is string => n !== null);
}

async function held(f: DialerFixture): Promise<string[]> {
  return (await campaignNumbers(f)).map((n) => n.number).sort();
}

async function postXml(url: string, body: string): Promise<{ status: number; type: string; body: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '""' }, body });
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
}

describe('Salesforce: a Campaign\'s members, incremental runs, Outbound Messages', () => {
  const redis = testPrefix();
  let f: DialerFixture;
  let sf: SalesforceStandIn;
  let d: Daemon;
  let hook: string;
  let campaignId: string;

  beforeAll(async () => {
    f = await dialerFixture();
    sf = await startSalesforceStandIn({ contacts: 120, leads: 80, outboundRetryDelayMs: () => 100 });
    campaignId = sf.records('Campaign')[0]!.values.Id as string;
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    d = await Daemon.start(daemonConfig(f, redis.prefix, [salesforceSync(sf, f.campaignId, { campaignId })],
      { http: { host: '127.0.0.1', port, publicUrl, adminToken: ADMIN } }), { log: quietLog });
    hook = `${publicUrl}/webhooks/sf`;
    await settle(d);
  });
  afterAll(async () => {
    await d?.close();
    await sf?.close();
    await f?.server.close();
    await redis.cleanup();
  });

  it('imports every member\'s phone numbers (Contacts and Leads, three fields, any format) and none of a Do Not Call person', async () => {
    const people = members(sf, campaignId);
    expect(people.some((p) => p.type === 'Lead') && people.some((p) => p.type === 'Contact')).toBe(true);
    const dnc = people.filter((p) => p.values.DoNotCall);
    expect(dnc.length).toBeGreaterThan(0);
    const want = numbersOf(people);
    await waitFor(async () => (await numberCount(f)) === want.length, `${want.length} numbers`);
    expect(await held(f)).toEqual(want);
    for (const p of dnc) for (const n of phonesOf(p)) expect(want).not.toContain(n);
    const [run] = await runs(d, 'sf');
    expect(run).toMatchObject({ mode: 'full', status: 'done' });
  });

  it('an incremental run adds a new member, drops one turned Do Not Call and follows a changed phone; the comparison drops a removed and a deleted one', async () => {
    const outside = sf.records('Contact').find((c) => !members(sf, campaignId).some((m) => m.values.Id === c.values.Id) && !c.values.DoNotCall && phonesOf(c).length)!;
    const inside = members(sf, campaignId).filter((p) => !p.values.DoNotCall && phonesOf(p).length);
    const [removed, deleted, turned, changed] = inside;
    sf.addToCampaign(campaignId, outside.values.Id as string);
    sf.removeFromCampaign(campaignId, removed!.values.Id as string);
    sf.deleteRecord(deleted!.values.Id as string);
    sf.updateRecord(turned!.values.Id as string, { DoNotCall: true });
    sf.updateRecord(changed!.values.Id as string, { Phone: '(415) 555-0142', MobilePhone: null, Secondary_Phone__c: null });
    const run = await pullAndSettle(d, 'sf');
    expect(run).toMatchObject({ mode: 'incremental', status: 'done' });
    let now = await held(f);
    for (const n of phonesOf(outside)) expect(now).toContain(n);
    for (const n of phonesOf(turned!)) expect(now).not.toContain(n);
    expect(now).toContain('+14155550142');
    // Removed from the campaign or deleted without a change of their own: the scheduled comparison finds them.
    const compared = await pullAndSettle(d, 'sf', false, 'compare');
    expect(compared).toMatchObject({ status: 'done' });
    now = await held(f);
    expect(now).toEqual(numbersOf(members(sf, campaignId)));
    for (const p of [removed!, deleted!, turned!]) for (const n of phonesOf(p)) expect(now).not.toContain(n);
  });

  it('an Outbound Message from the org is acknowledged once with a SOAP Ack, and its record is read by id', async () => {
    const person = members(sf, campaignId).find((p) => !p.values.DoNotCall && phonesOf(p).length)!;
    sf.updateRecord(person.values.Id as string, { MobilePhone: '+1 212 555 0199' });
    const before = await counter(d, 'webhooks', { sync: 'sf', result: 'accepted' });
    const delivery = sf.sendOutboundMessage({ url: hook, ids: [person.values.Id as string], fields: ['Phone', 'MobilePhone', 'DoNotCall'] });
    expect(await delivery.settled).toBe('acknowledged');
    expect(delivery.attempts).toBe(1);
    await waitFor(async () => (await held(f)).includes('+12125550199'), 'the changed phone number in the campaign');
    expect(await counter(d, 'webhooks', { sync: 'sf', result: 'accepted' })).toBe(before + 1);
    // The same message again (a retry Salesforce sends when our Ack was lost) is acknowledged and applied no further.
    const again = await postXml(hook, delivery.body);
    expect(again.status).toBe(200);
    expect(again.type).toContain('text/xml');
    expect(again.body).toContain('<Ack>true</Ack>');
    expect(await counter(d, 'webhooks', { sync: 'sf', result: 'duplicate' })).toBe(1);
  });

  it('an unacknowledged message is retried until acknowledged', async () => {
    const proxy = await startProxy(new URL(hook).origin);
    let refused = 0;
    proxy.intercept = () => (refused++ === 0 ? { status: 503, body: 'busy' } : undefined);
    try {
      const person = members(sf, campaignId).find((p) => !p.values.DoNotCall && phonesOf(p).length)!;
      sf.updateRecord(person.values.Id as string, { Secondary_Phone__c: '212-555-0177' });
      const delivery = sf.sendOutboundMessage({ url: `${proxy.url}/webhooks/sf`, ids: [person.values.Id as string] });
      expect(await delivery.settled).toBe('acknowledged');
      expect(delivery.answers).toEqual([503, 200]);
      await waitFor(async () => (await held(f)).includes('+12125550177'), 'the retried message applied');
    } finally {
      await proxy.close();
    }
  });

  it('refuses a forged org, malformed XML, an oversized or empty message with a SOAP fault, and queues nothing', async () => {
    const person = members(sf, campaignId)[0]!;
    const forged = sf.sendOutboundMessage({ url: 'http://127.0.0.1:9/unused', ids: [person.values.Id as string], orgId: '00D000000000001AAA' });
    const cases: [string, number, RegExp][] = [
      [forged.body, 401, /not this sync's org/],
      ['<soapenv:Envelope><soapenv:Body><notifications>', 400, /not well-formed/],
      ['<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>', 400, /document type/],
      ['<Envelope><Body><other/></Body></Envelope>', 400, /notifications/],
      [`<x>${'a'.repeat(1024 * 1024 + 10)}</x>`, 413, /larger than maxOutboundBytes/],
      ['', 400, /empty body/],
    ];
    // What the earlier messages queued is drained first (their inbox items are trimmed after the numbers are planned).
    await settle(d);
    const snapshot = await queued(d, 'sf');
    for (const [body, status, reason] of cases) {
      const res = await postXml(hook, body);
      expect(res.status, reason.source).toBe(status);
      expect(res.type).toContain('text/xml');
      expect(res.body).toContain('<faultcode>soapenv:Client</faultcode>');
      expect(res.body).toMatch(reason);
      expect(res.body).not.toContain('<Ack>');
    }
    expect(await queued(d, 'sf')).toEqual(snapshot);
  });

  it('fails the run on REQUEST_LIMIT_EXCEEDED, and the next run catches up', async () => {
    const { max } = sf.apiUsage();
    const person = members(sf, campaignId).find((p) => !p.values.DoNotCall && phonesOf(p).length)!;
    sf.updateRecord(person.values.Id as string, { Phone: '212-555-0133' });
    sf.setApiUsage(max);
    const refused = sf.stats.limitRefused;
    const run = await pullAndSettle(d, 'sf');
    expect(run.status).toBe('failed');
    // Salesforce's 403 is what told the daemon (no answer below the allowance can say 100000/100000); the run ends on
    // it, or, when a request of the same run had met it first, on the reserve that figure shows.
    expect(run.error).toMatch(/REQUEST_LIMIT_EXCEEDED|reserve reached: the org has used 100000 of its 100000/);
    expect(sf.stats.limitRefused).toBeGreaterThan(refused);
    expect(await held(f)).not.toContain('+12125550133');
    sf.setApiUsage(0);
    await waitFor(async () => (await pullAndSettle(d, 'sf')).status === 'done', 'a run after the allowance is back', 30_000);
    expect(await held(f)).toContain('+12125550133');
  }, 60_000);

  it('under REQUEST_LIMIT_EXCEEDED an Outbound Message is acknowledged and queued: nothing is sent before the next scheduled run', async () => {
    const { max } = sf.apiUsage();
    const person = members(sf, campaignId).find((p) => !p.values.DoNotCall && phonesOf(p).length)!;
    sf.updateRecord(person.values.Id as string, { Phone: '212-555-0144' });
    sf.setApiUsage(max);
    const run = await pullAndSettle(d, 'sf');
    expect(run.status).toBe('failed');
    const before = await queued(d, 'sf');
    const requests = sf.stats.requests;
    const delivery = sf.sendOutboundMessage({ url: hook, ids: [person.values.Id as string] });
    expect(await delivery.settled).toBe('acknowledged');
    // The run a webhook queues is queued before the Ack: none was, and the message waits in the inbox.
    expect(await queued(d, 'sf')).toEqual({ ...before, inbox: before.inbox + 1 });
    expect(sf.stats.requests).toBe(requests);
    sf.setApiUsage(0);
    // The next scheduled run (here: runs until one passes; a run within 5 s of the 403 still trusts its figure) reads
    // the queued record first. Settling waits for an empty inbox, so each try waits for its own run to end instead.
    await waitFor(async () => {
      const last = (await runs(d, 'sf'))[0]!.id;
      await d.triggerPull('sf', 'test');
      const run = await waitFor(async () => {
        const [latest] = await runs(d, 'sf');
        return latest && latest.id !== last && latest.status !== 'running' ? latest : null;
      }, 'the next run');
      return run.status === 'done';
    }, 'a run after the allowance is back', 30_000);
    await settle(d);
    expect(await held(f)).toContain('+12125550144');
    expect((await queued(d, 'sf')).inbox).toBe(0);
  }, 60_000);

  it('shows the org\'s API usage on /metrics and /ops', async () => {
    const { used, max } = sf.apiUsage();
    const metrics = await (await fetch(`${d.address}/metrics`)).text();
    const line = metrics.split('\n').find((l) => l.startsWith('cds_crm_api_requests_used{'));
    expect(line).toContain(`account="${sf.orgId}"`);
    expect(Number(line!.split(' ').at(-1))).toBeGreaterThan(0);
    expect(Number(line!.split(' ').at(-1))).toBeLessThanOrEqual(used);
    expect(metrics).toContain(`cds_crm_api_requests_allowed{crm="salesforce",account="${sf.orgId}"} ${max}`);
    const ops = await (await fetch(`${d.address}/ops/api/crm-usage`, { headers: { authorization: `Basic ${Buffer.from(`x:${ADMIN}`).toString('base64')}` } })).json();
    expect(ops.usage).toEqual([{ crm: 'salesforce', account: sf.orgId, used: expect.any(Number), allowed: max }]);
  });
});

describe('Salesforce: a SOQL selection of Leads, with the JWT bearer flow', () => {
  const redis = testPrefix();
  let f: DialerFixture;
  let sf: SalesforceStandIn;
  let d: Daemon;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  const WHERE = "Status = 'Open - Not Contacted'";
  const matching = () => sf.records('Lead').filter((l) => l.values.Status === 'Open - Not Contacted');

  beforeAll(async () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    f = await dialerFixture();
    sf = await startSalesforceStandIn({ contacts: 30, leads: 150, jwtPublicKey: publicKey.export({ type: 'spki', format: 'pem' }) as string });
    // A third of the leads are worked already: the WHERE leaves them out.
    sf.records('Lead').forEach((l, i) => { if (i % 3 === 0) sf.updateRecord(l.values.Id as string, { Status: 'Working - Contacted' }); });
    // Every request passes a proxy, so a test can act between two.
    proxy = await proxied(sf);
    d = await Daemon.start(daemonConfig(f, redis.prefix, [salesforceSync(sf, f.campaignId, { object: 'Lead', where: WHERE }, {
      loginUrl: proxy.url, auth: { flow: 'jwt_bearer', username: sf.username, audience: sf.url, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string },
      reserveShare: 0.1,
    })]), { log: quietLog, http: false });
    await settle(d);
  });
  afterAll(async () => {
    await d?.close();
    await proxy?.close();
    await sf?.close();
    await f?.server.close();
    await redis.cleanup();
  });

  it('imports the Leads the WHERE matches, signed in with an RS256 assertion', async () => {
    const want = numbersOf(matching());
    expect(matching().length).toBeLessThan(sf.records('Lead').length);
    await waitFor(async () => (await numberCount(f)) === want.length, `${want.length} numbers`);
    expect(await held(f)).toEqual(want);
    expect(sf.stats.tokensIssued).toBe(1);
  });

  it('an incremental run drops a Lead that stopped matching, one deleted and one turned Do Not Call, and adds a new one', async () => {
    const [stopped, deleted, turned] = matching().filter((l) => !l.values.DoNotCall && phonesOf(l).length);
    sf.updateRecord(stopped!.values.Id as string, { Status: 'Working - Contacted' });
    sf.deleteRecord(deleted!.values.Id as string);
    sf.updateRecord(turned!.values.Id as string, { DoNotCall: true });
    const created = sf.createRecord('Lead', { LastName: 'Newman', Company: 'Acme', Status: 'Open - Not Contacted', Phone: '(646) 555-0123' });
    const run = await pullAndSettle(d, 'sf');
    expect(run).toMatchObject({ mode: 'incremental', status: 'done' });
    const now = await held(f);
    expect(now).toEqual(numbersOf(matching()));
    expect(now).toContain('+16465550123');
    for (const p of [stopped!, deleted!, turned!]) for (const n of phonesOf(p)) expect(now).not.toContain(n);
    expect(created.values.Id).toBeTruthy();
  });

  it('signs in again once when the session expires in the middle of a run', async () => {
    let expired = 0;
    const onAnswer = proxy.onAnswer!;
    proxy.onAnswer = (ex, body) => {
      // After the run's first query is answered, every session is expired: the next query meets INVALID_SESSION_ID.
      if (ex.path.includes('/query') && expired++ === 0) sf.expireSessions();
      return onAnswer(ex, body);
    };
    const tokens = sf.stats.tokensIssued;
    const refused = sf.stats.sessionRefused;
    const lead = matching().find((l) => !l.values.DoNotCall)!;
    sf.updateRecord(lead.values.Id as string, { MobilePhone: '646-555-0188' });
    const run = await pullAndSettle(d, 'sf');
    proxy.onAnswer = onAnswer;
    expect(run).toMatchObject({ status: 'done' });
    expect(sf.stats.sessionRefused).toBe(refused + 1);
    expect(sf.stats.tokensIssued).toBe(tokens + 1);
    expect(await held(f)).toContain('+16465550188');
  });

  it('stops reading at the reserve: one request shows it, none follows; a later run catches up', async () => {
    const { max } = sf.apiUsage();
    // 95% used: the first answer tells the daemon, and it stops before its 10% reserve is touched.
    const spentAt = Math.floor(max * 0.95);
    sf.setApiUsage(spentAt);
    const reserved = await pullAndSettle(d, 'sf');
    expect(reserved.status).toBe('failed');
    expect(reserved.error).toMatch(/reserve reached: the org has used 9500\d of its 100000 daily API requests/);
    expect(sf.apiUsage().used).toBe(spentAt + 1);
    const lead = matching().find((l) => !l.values.DoNotCall)!;
    sf.updateRecord(lead.values.Id as string, { Phone: '646-555-0166' });
    sf.setApiUsage(0);
    // The next scheduled run (here: runs until one passes) reads from where the last complete run started.
    await waitFor(async () => (await pullAndSettle(d, 'sf')).status === 'done', 'a run after the allowance is back', 30_000);
    expect(await held(f)).toContain('+16465550166');
  }, 60_000);
});

describe('Salesforce: calls back as Tasks, exactly once', () => {

  for (const mode of ['upsert on the external-ID field', 'insert, found again by CallObject'] as const) {
    it(`${mode}: every attempt one Task on its person, although answers were lost`, async () => {
      const f = await dialingFixture(mode.startsWith('upsert') ? 31 : 32);
      const sf = await startSalesforceStandIn({ contacts: 150, leads: 100 });
      const campaignId = sf.records('Campaign')[0]!.values.Id as string;
      const { prefix, cleanup } = testPrefix();
      const ext = mode.startsWith('upsert') ? sf.taskExternalIdField : undefined;
      const d = await Daemon.start(daemonConfig(f, prefix, [salesforceSync(sf, f.campaignId, { campaignId }, { taskExternalIdField: ext }, {
        mirror: { every: '1h' },
      })], { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ } }), { log: quietLog, http: false });
      try {
        const want = numbersOf(members(sf, campaignId));
        await waitFor(async () => (await numberCount(f)) === want.length, 'the members in the campaign');
        await f.server.advance(3 * 3600);
        const all = await callDetailRecords<{ number: string; attempt: number; startedAtLocal: string }>(f);
        expect(all.length).toBeGreaterThan(200);
        // Both writes of 200 are stored but their answers lost (a 500, a cut connection); the look-up that settles
        // them meets a 503 first.
        const path = /composite\/sobjects/;
        sf.injectFault({ mode: 'after', status: 500, path });
        sf.injectFault({ mode: 'lost', path });
        sf.injectFault({ mode: 'before', status: 503, on: 'read', path: /\/query$/ });
        const mk = d.runtimes.get('sf')!.state.keys.mirror;
        const field = ext ?? 'CallObject';
        await waitFor(async () => {
          const tasks = sf.records('Task');
          if (tasks.length >= all.length && (await d.redis.hlen(mk.pending)) === 0 && sf.stats.faults >= 3) return true;
          await d.triggerMirror('sf', 'test');
          return false;
        }, `${all.length} Tasks`, 120_000);
        const tasks = sf.records('Task');
        const keys = tasks.map((t) => t.values[field]);
        expect(new Set(keys).size).toBe(keys.length);
        expect(new Set(keys)).toEqual(new Set(all.map((r) => callKey(f.campaignId, r))));
        const personOf = new Map<string, string>();
        for (const p of members(sf, campaignId)) for (const n of phonesOf(p)) personOf.set(n, p.values.Id as string);
        for (const t of tasks) {
          const r = all.find((x) => callKey(f.campaignId, x) === t.values[field])!;
          expect(t.values).toMatchObject({ WhoId: personOf.get(r.number), TaskSubtype: 'Call', CallType: 'Outbound', Status: 'Completed', CallObject: t.values[field] });
          expect(typeof t.values.CallDurationInSeconds).toBe('number');
          expect(String(t.values.Description)).toContain(r.number);
          expect(t.values.ActivityDate).toBe('2026-11-03');
          expect(t.values.CallDisposition).toBeTruthy();
        }
      } finally {
        await d.close(2000); await sf.close(); await f.server.close(); await cleanup();
      }
    }, 180_000);
  }
});

describe('Salesforce: each number\'s final status on its Lead or Contact (mirror.statusProperty)', () => {
  type Detail = { number: string; attempt: number; startedAtLocal: string; outcome: string; endedAtLocal: string };

  /** Log lines at warn and above, as JSON, so a test can read what the daemon reported. */
  function collecting() {
    const lines: Array<{ msg: string; err?: string; sync?: string }> = [];
    return { lines, log: pino({ level: 'warn' }, { write: (l: string) => { lines.push(JSON.parse(l)); } }) };
  }

  /**
   * A dialing campaign fed by a Salesforce Campaign's members, its virtual clock advanced `seconds`, mirrored with
   * `statusProperty` until every attempt is a Task and a later run found nothing to write (so the runs that wrote
   * the Tasks, and the status writes that follow each Task, are over).
   */
  async function mirrored(seed: number, seconds: number, statusProperty: string, log: Logger, body: (w: {
    f: DialerFixture; sf: SalesforceStandIn; d: Daemon; sfCampaign: string; all: Detail[]; mirrorAll: () => Promise<Detail[]>;
  }) => Promise<void>): Promise<void> {
    // Four agents: an hour leaves some numbers not yet final.
    const f = await dialingFixture(seed, 4);
    const sf = await startSalesforceStandIn({ contacts: 150, leads: 100 });
    const sfCampaign = sf.records('Campaign')[0]!.values.Id as string;
    const { prefix, cleanup } = testPrefix();
    const d = await Daemon.start(daemonConfig(f, prefix, [salesforceSync(sf, f.campaignId, { campaignId: sfCampaign }, { taskExternalIdField: sf.taskExternalIdField }, {
      mirror: { every: '1h', statusProperty },
    })], { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ } }), { log, http: false });
    const mk = d.runtimes.get('sf')!.state.keys.mirror;
    const mirrorAll = async (): Promise<Detail[]> => {
      const all = await callDetailRecords<Detail>(f);
      await waitFor(async () => {
        if (sf.records('Task').length >= all.length && (await d.redis.hlen(mk.pending)) === 0) return true;
        await d.triggerMirror('sf', 'test');
        return false;
      }, `${all.length} Tasks`, 120_000);
      // The run that wrote the last Tasks may still be writing statuses. Runs of a sync never overlap: once a run that
      // ended after this point wrote and settled nothing, every run before it is over.
      const from = Date.now();
      await waitFor(async () => {
        const last = JSON.parse(await d.redis.hget(mk.meta, 'lastRun') ?? 'null') as { at: string; written: number; resolved: number; parked: number } | null;
        if (last && Date.parse(last.at) >= from && last.written === 0 && last.resolved === 0 && last.parked === 0) return true;
        await d.triggerMirror('sf', 'test');
        return false;
      }, 'a mirror run with nothing left to write', 60_000);
      return all;
    };
    try {
      const want = numbersOf(members(sf, sfCampaign));
      await waitFor(async () => (await numberCount(f)) === want.length, 'the members in the campaign');
      await f.server.advance(seconds);
      const all = await mirrorAll();
      await body({ f, sf, d, sfCampaign, all, mirrorAll });
    } finally {
      await d.close(2000); await sf.close(); await f.server.close(); await cleanup();
    }
  }

  /** Each Task's key once, and exactly the attempts' keys. */
  function expectOneTaskPerAttempt(sf: SalesforceStandIn, f: DialerFixture, all: Detail[]): void {
    const keys = sf.records('Task').map((t) => t.values[sf.taskExternalIdField]);
    expect(keys.length).toBe(all.length);
    expect(new Set(keys)).toEqual(new Set(all.map((r) => callKey(f.campaignId, r))));
  }

  it('holds the final status of its number on every person whose number reached one, and nothing on the others', async () => {
    const { lines, log } = collecting();
    await mirrored(51, 3600, 'Dialer_Status__c', log, async ({ f, sf, sfCampaign, all }) => {
      expect(sf.statusField).toBe('Dialer_Status__c');
      expectOneTaskPerAttempt(sf, f, all);
      // The dialer's own word on each number: Success and Failure are final, the rest (NotContacted, RetryPending, …) not.
      const statusOf = new Map((await campaignNumbers(f)).map((n) => [n.number, n.status]));
      // The attempt that settled each final number, from the call-detail records.
      const settledBy = new Map<string, Detail>();
      for (const r of all) {
        if (r.outcome === 'Success' || r.outcome === 'FailureWithNoRetryLeft') {
          expect(settledBy.has(r.number), `${r.number} settled twice`).toBe(false);
          settledBy.set(r.number, r);
        }
      }
      for (const [n, r] of settledBy) expect(statusOf.get(n), n).toBe(r.outcome === 'Success' ? 'Success' : 'Failure');
      const people = members(sf, sfCampaign).filter((p) => !p.values.DoNotCall && phonesOf(p).length);
      let withStatus = 0;
      let without = 0;
      const statuses = new Set<unknown>();
      for (const p of people) {
        const field = sf.get(p.values.Id as string)!.values[sf.statusField];
        const settled = phonesOf(p).flatMap((n) => (settledBy.has(n) ? [settledBy.get(n)!] : []));
        for (const n of phonesOf(p)) if (!settledBy.has(n)) expect(['Success', 'Failure']).not.toContain(statusOf.get(n));
        if (!settled.length) {
          expect(field, `${p.type} ${p.values.Id}: none of its numbers is final`).toBeNull();
          without++;
          continue;
        }
        // A person with several final numbers holds the status of the one settled last (records are mirrored in
        // end order; two settled in the same second may come in either order).
        const lastEnd = settled.reduce((m, r) => (r.endedAtLocal > m ? r.endedAtLocal : m), '');
        const expected = new Set(settled.filter((r) => r.endedAtLocal === lastEnd).map((r) => statusOf.get(r.number)));
        expect([...expected], `${p.type} ${p.values.Id}: ${phonesOf(p).join(', ')}`).toContain(field);
        statuses.add(field);
        withStatus++;
      }
      // The case is only a test when both kinds of person, both final statuses and both objects are there.
      expect(withStatus).toBeGreaterThanOrEqual(5);
      expect(without).toBeGreaterThanOrEqual(5);
      expect(statuses).toEqual(new Set(['Success', 'Failure']));
      const marked = people.filter((p) => sf.get(p.values.Id as string)!.values[sf.statusField] !== null);
      expect(new Set(marked.map((p) => p.type))).toEqual(new Set(['Contact', 'Lead']));
      // Nobody outside the campaign was touched.
      const outside = [...sf.records('Contact'), ...sf.records('Lead')].filter((p) => !people.some((q) => q.values.Id === p.values.Id));
      for (const p of outside) expect(p.values[sf.statusField]).toBeNull();
      expect(lines.filter((l) => l.msg === 'could not write the final status')).toEqual([]);
      // Written together, up to 200 a request with the Tasks' batch, never one request per person.
      expect(sf.stats.recordsUpdatedByCollections).toBeGreaterThanOrEqual(withStatus);
      expect(sf.stats.collectionUpdates).toBeLessThan(withStatus / 5);
    });
  }, 180_000);

  it('a statusProperty the objects lack is refused by Salesforce (INVALID_FIELD): logged, and every Task is still written once', async () => {
    const { lines, log } = collecting();
    await mirrored(52, 3600, 'No_Such_Status__c', log, async ({ f, sf, sfCampaign, all, mirrorAll }) => {
      expectOneTaskPerAttempt(sf, f, all);
      const refused = lines.filter((l) => l.msg === 'could not write the final status');
      const finals = all.filter((r) => r.outcome === 'Success' || r.outcome === 'FailureWithNoRetryLeft').length;
      expect(finals).toBeGreaterThan(0);
      // Each refused request logged once with the statuses it carried (none retried into a storm, none silent):
      // every final status was in one, a person's several in one request count once.
      const personOf = new Map<string, string>();
      for (const p of members(sf, sfCampaign)) for (const n of phonesOf(p)) personOf.set(n, p.values.Id as string);
      const persons = new Set(all.filter((r) => r.outcome === 'Success' || r.outcome === 'FailureWithNoRetryLeft').map((r) => personOf.get(r.number))).size;
      expect(refused.length).toBe(sf.stats.collectionUpdates);
      expect(refused.length).toBeLessThan(finals);
      const carried = refused.reduce((n, l) => n + Number((l as { refused?: number }).refused), 0);
      expect(carried).toBeLessThanOrEqual(finals);
      expect(carried).toBeGreaterThanOrEqual(persons);
      for (const l of refused) expect(l).toMatchObject({ sync: 'sf', err: expect.stringMatching(/No such column 'No_Such_Status__c' on sobject of type (Lead|Contact).*INVALID_FIELD/) });
      for (const p of [...sf.records('Contact'), ...sf.records('Lead')]) expect(p.values[sf.statusField]).toBeNull();
      // The daemon goes on: later calls are mirrored too, still once each.
      await f.server.advance(1800);
      const later = await mirrorAll();
      expect(later.length).toBeGreaterThan(all.length);
      expectOneTaskPerAttempt(sf, f, later);
    });
  }, 180_000);
});

describe('Salesforce: kill -9 in the middle of mirroring', () => {
  it('a restarted daemon settles the upsert whose answer it never heard, and every attempt is one Task by its key', async () => {
    const server = await startServer({ seed: 41, clockStart: '2026-11-03T14:00:00Z' });
    const account = await createAccount(server, 'Kill Co', 'America/New_York');
    const campaign = await createCampaign(server, account.id, {
      name: 'Callbacks', type: 'Dynamic', state: 'Active',
      dialer: { mode: 'Power', agents: 4, maxAttempts: 2, callingHours: { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] },
        retryDelaySeconds: { NoAnswer: 1200, Busy: 900, CallError: 900, Machine: 1200, Abandoned: 600 } },
    });
    const token = await createKey(server, account.id, ['CampaignNumberAdmin', 'CampaignReader']);
    const f: DialerFixture = { server, accountId: account.id, token, campaignId: campaign.id };
    const sf = await startSalesforceStandIn({ contacts: 20, leads: 10 });
    const proxy = await proxied(sf);
    const tokenRewrite = proxy.onAnswer!;
    const sfCampaign = sf.records('Campaign')[0]!.values.Id as string;
    const { prefix, cleanup } = testPrefix();
    let child: Awaited<ReturnType<typeof spawnDaemon>> | null = null;
    try {
      const config = (everyMirror: string) => ({
        redis: { prefix }, http: { host: '127.0.0.1', port: 0 }, takeoverAfter: '2s', log: { level: 'warn' },
        dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: '${KILL_DIALER_TOKEN}', rateLimit: { perSecond: 50, burst: 100 }, timeZone: 'America/New_York' },
        syncs: [{
          id: 'sf', campaignId: f.campaignId, mapping: MAPPING, mirror: { every: everyMirror },
          source: { type: 'salesforce', loginUrl: proxy.url, clientId: sf.clientId, auth: { flow: 'client_credentials', clientSecret: '${KILL_SF_SECRET}' },
            selection: { campaignId: sfCampaign }, taskExternalIdField: sf.taskExternalIdField },
        }],
      });
      const env = { KILL_DIALER_TOKEN: f.token, KILL_SF_SECRET: 'sf-client-secret' };
      child = await spawnDaemon(config('1h'), dir, env);
      const want = numbersOf(members(sf, sfCampaign));
      await waitFor(async () => (await numberCount(f)) === want.length, 'the members in the campaign');
      await f.server.advance(2 * 3600);
      const all = await callDetailRecords<{ number: string; attempt: number; startedAtLocal: string }>(f);
      // The first upsert reaches Salesforce; the daemon dies before it hears the answer.
      let killed: Promise<void> | null = null;
      proxy.onAnswer = (ex, body) => {
        if (!killed && ex.method === 'PATCH' && /\/composite\/sobjects\/Task\//.test(ex.path)) {
          killed = child!.kill();
          return 'drop';
        }
        return tokenRewrite(ex, body);
      };
      await child.kill();
      child = await spawnDaemon(config('1s'), dir, env);
      await waitFor(() => killed !== null, 'an upsert written while the daemon dies');
      await killed;
      const written = sf.records('Task').length;
      expect(written).toBeGreaterThan(0);
      const redis = new Redis(REDIS_URL);
      const mk = new DaemonKeys(prefix).sync('sf', campaignKey(f.server.url, f.accountId, f.campaignId)).mirror.meta;
      try {
        expect(await redis.hlen(`${mk}:pending`)).toBe(written);
        proxy.onAnswer = tokenRewrite;
        child = await spawnDaemon(config('1s'), dir, env);
        await waitFor(async () => (await redis.hlen(`${mk}:pending`)) === 0 && Number(await redis.hget(mk, 'mirrored')) === all.length, 'every attempt settled', 60_000);
      } finally {
        redis.disconnect();
      }
      const keys = sf.records('Task').map((t) => t.values[sf.taskExternalIdField]);
      expect(new Set(keys).size).toBe(keys.length);
      expect(new Set(keys)).toEqual(new Set(all.map((r) => callKey(f.campaignId, r))));
      // The pending ones were settled by one look-up query, not written blindly again.
      expect(proxy.exchanges.some((e) => e.method === 'GET' && /\/query\?q=SELECT\+Id/.test(e.path) && e.path.includes(sf.taskExternalIdField))).toBe(true);
    } finally {
      await child?.kill();
      await proxy.close();
      await sf.close();
      await f.server.close();
      await cleanup();
    }
  }, 120_000);
});

describe('Salesforce: kill -9 during a full import, and Redis restarted mid-import', () => {
  // A Campaign of about 3,000 members read 200 a page, into a dialer behind a proxy that counts duplicates refused.
  async function world() {
    const f = await dialerFixture();
    const dialerProxy = await startProxy(f.server.url);
    const sf = await startSalesforceStandIn({ contacts: 2500, leads: 2500 });
    const sfCampaign = sf.records('Campaign')[0]!.values.Id as string;
    const { prefix, cleanup } = testPrefix();
    const counts = { duplicatesRejected: 0, posts: 0 };
    dialerProxy.onAnswer = (ex, body) => {
      if (ex.method === 'POST' && /\/numbers(\?|$)/.test(ex.path)) {
        counts.posts++;
        const answer = JSON.parse(body.toString() || '{}') as { rejected?: { code: string }[] };
        counts.duplicatesRejected += (answer.rejected ?? []).filter((r) => r.code === 'duplicate').length;
      }
    };
    const raw = (redisUrl = REDIS_URL) => ({
      redis: { url: redisUrl, prefix }, http: { host: '127.0.0.1', port: 0 }, takeoverAfter: '2s', log: { level: 'warn' },
      dialer: { baseUrl: dialerProxy.url, accountId: f.accountId, apiToken: '${CRASH_DIALER_TOKEN}', rateLimit: { perSecond: 20, burst: 20 }, maxNumbersPerRequest: 100 },
      syncs: [{
        id: 'sf', campaignId: f.campaignId, mapping: MAPPING, schedule: { every: '1h' },
        source: { type: 'salesforce', loginUrl: sf.url, clientId: sf.clientId, auth: { flow: 'client_credentials', clientSecret: '${CRASH_SF_SECRET}' },
          selection: { campaignId: sfCampaign }, batchSize: 200, requestsPerSecond: 50 },
      }],
    });
    const env = { CRASH_DIALER_TOKEN: f.token, CRASH_SF_SECRET: 'sf-client-secret' };
    const expected = numbersOf(members(sf, sfCampaign));
    const settledCheck = async () => {
      const held = (await campaignNumbers(f)).map((n) => n.number).sort();
      return held.length === expected.length && held.every((n, i) => n === expected[i]);
    };
    const close = async () => { await dialerProxy.close(); await sf.close(); await f.server.close(); await cleanup(); };
    return { f, sf, raw, env, expected, counts, settledCheck, close };
  }

  it('killed twice mid-import, the campaign ends with every member\'s numbers once and the read resumed', async () => {
    const w = await world();
    let d: DaemonProcess | null = null;
    try {
      expect(w.expected.length).toBeGreaterThan(2500);
      d = await spawnDaemon(w.raw(), dir, w.env);
      await waitFor(async () => (await numberCount(w.f)) >= 600, 'a first part of the import');
      await d.kill();
      d = await spawnDaemon(w.raw(), dir, w.env);
      const at = await numberCount(w.f);
      await waitFor(async () => (await numberCount(w.f)) >= at + 600, 'more of the import');
      await d.kill();
      d = await spawnDaemon(w.raw(), dir, w.env);
      await waitFor(w.settledCheck, 'the campaign to hold exactly the members\' numbers', 120_000);
      expect(w.counts.duplicatesRejected).toBe(0);
      // The restarts resumed the full read: far fewer query pages than three whole reads.
      expect(w.sf.stats.apiRequests).toBeLessThan(3 * Math.ceil(w.sf.records('CampaignMember').length / 200));
    } finally {
      await d?.kill();
      await w.close();
    }
  }, 180_000);

  it('Redis killed and restarted mid-import is survived: every member\'s numbers once', async () => {
    const w = await world();
    const port = await freePort();
    const redisDir = mkdtempSync(join(tmpdir(), 'cds-sf-redis-'));
    let redisServer = await startRedisServer(port, redisDir);
    let daemon: Daemon | null = null;
    try {
      daemon = await Daemon.start(parseConfig(rulesOff(w.raw(`redis://127.0.0.1:${port}`)), 'test', w.env), { log: quietLog, http: false });
      await waitFor(async () => (await numberCount(w.f)) >= 500, 'part of the import');
      const exited = new Promise((r) => redisServer.once('exit', r));
      redisServer.kill('SIGKILL');
      await exited;
      redisServer = await startRedisServer(port, redisDir);
      await waitFor(w.settledCheck, 'the import to finish after the restart', 120_000);
      expect(w.counts.duplicatesRejected).toBe(0);
    } finally {
      await daemon?.close(2000);
      redisServer.kill('SIGKILL');
      rmSync(redisDir, { recursive: true, force: true });
      await w.close();
    }
  }, 180_000);
});

describe('Salesforce: what a Task tells a person about its call', () => {
  it('ActivityDate is the day the call started on the account\'s clock, and CallObject the key docs/salesforce.md computes', async () => {
    const sf = await startSalesforceStandIn({ contacts: 3, leads: 0 });
    const { prefix, cleanup } = testPrefix();
    const redis = new Redis(REDIS_URL);
    try {
      const config = salesforceSource.parse(salesforceSync(sf, 'unused', { object: 'Contact' }).source);
      const sink = new SalesforceSink(new SalesforceApi(config, { redis, keys: new DaemonKeys(prefix), log: quietLog, metrics: new Metrics() }));
      const contactId = sf.records('Contact')[0]!.values.Id as string;
      const campaignId = '3f9a61c2-6a70-4d55-9a57-0c1f0f3e2b11';
      // New York, 23:59:40 to 00:00:50 on the account's wall clock: in UTC the call starts on the 4th, and it ends on the 4th.
      const record = {
        number: '+12125550100', attempt: 2, startedAtLocal: '2026-11-03T23:59:40', answeredAtLocal: '2026-11-03T23:59:50', endedAtLocal: '2026-11-04T00:00:50',
        ringResult: 'Answered', answerType: 'Human', sipResponseCode: 200, endType: null, queueId: null, outcome: 'Success',
      };
      const key = callKey(campaignId, record);
      const [written] = await sink.write([{
        key, record, outcome: 'connected', contactId, campaignId, startedAt: Date.parse('2026-11-04T04:59:40Z'),
        answeredAt: Date.parse('2026-11-04T04:59:50Z'), endedAt: Date.parse('2026-11-04T05:00:50Z'), durationMs: 60_000,
      }]);
      expect(written).toMatchObject({ ok: true });
      const task = sf.records('Task').find((t) => t.values.CallObject === key)!;
      expect(task.values).toMatchObject({ WhoId: contactId, ActivityDate: '2026-11-03', CallDurationInSeconds: 60, CallDisposition: 'Connected' });
      expect(task.values.Subject).toBe(`Outbound call to +12125550100 (attempt 2) [cds:${key}]`);
      // docs/salesforce.md's recipe ("Finding the Task of a call", also run by test/docs.test.ts) for a person who has a call (campaign, number, attempt, start) and looks for its Task.
      const recipe = 'printf \'%s\\n%s\\n%s\\n%s\' "$1" "$2" "$3" "$4" | openssl dgst -sha256 -binary | basenc --base64url | cut -c1-20';
      expect(execFileSync('sh', ['-c', recipe, 'sh', campaignId, record.number, String(record.attempt), record.startedAtLocal]).toString().trim()).toBe(key);
    } finally {
      redis.disconnect(); await sf.close(); await cleanup();
    }
  });
});

describe('Salesforce: one Lead over the API\'s limits among 1,000', () => {
  // Description is a Long Text Area on Lead (32,000 characters); FirstName holds 40 and LastName 80, so Salesforce
  // itself would refuse a 1,100-character name.
  const mapping = { phone: ['Phone'], defaultCountry: 'US', variables: { FirstName: 'FirstName', LastName: 'LastName', Notes: 'Description' } };
  const BAD = 500;
  const redis = testPrefix();
  let f: DialerFixture;
  let dialer: CountedDialer;
  let sf: SalesforceStandIn;
  let d: Daemon;
  let bad: SfRecord;

  const inCampaign = () => campaignValues(f, ['FirstName', 'LastName', 'Notes']);
  const good = (except: number | null) => Object.fromEntries(Array.from({ length: 1000 }, (_, i) => i).filter((i) => i !== except)
    .map((i) => [validPhone(i), [`First${i}`, `Last${i}`, `Note ${i}`]]));

  beforeAll(async () => {
    f = await dialerFixture();
    dialer = await countedDialer(f);
    sf = await startSalesforceStandIn({ contacts: 0, leads: 0 });
    for (let i = 0; i < 1000; i++) {
      const lead = sf.createRecord('Lead', { FirstName: `First${i}`, LastName: `Last${i}`, Company: 'Acme', Status: 'Open - Not Contacted', Phone: validPhone(i),
        Description: i === BAD ? 'D'.repeat(1100) : `Note ${i}` });
      if (i === BAD) bad = lead;
    }
    d = await Daemon.start(daemonConfig(f, redis.prefix, [salesforceSync(sf, f.campaignId, { object: 'Lead' }, {}, { mapping })], { dialer: dialer.dialer }),
      { log: quietLog, http: false });
    await settle(d);
  });
  afterAll(async () => {
    await d?.close();
    await dialer?.proxy.close();
    await sf?.close();
    await f?.server.close();
    await redis.cleanup();
  });

  it('adds the 999 good Leads in one request and refuses the bad one alone, its reason in words', async () => {
    expect(await inCampaign()).toEqual(good(BAD));
    const [full] = await runs(d, 'sf');
    expect(full).toMatchObject({ mode: 'full', status: 'done', seen: 1000, invalid: 1, planned: 999, pushed: 999, rejected: 0 });
    await expectRefusedForLength(d, 'sf', full!, { contactId: bad.values.Id as string, variable: 'Notes', field: 'Description', length: 1100 });
    expect(dialer.adds()).toBe(1);
  });

  it('the description shortened, an incremental run adds its number once', async () => {
    sf.updateRecord(bad.values.Id as string, { Description: `Note ${BAD}` });
    const run = await pullAndSettle(d, 'sf');
    // The read reaches back `overlap` (5 min) before the last run, so it sees the 1,000 Leads created just now again;
    // only the fixed one is new to the campaign.
    expect(run).toMatchObject({ mode: 'incremental', status: 'done', seen: 1000, invalid: 0, planned: 1, pushed: 1, rejected: 0 });
    expect(await inCampaign()).toEqual(good(null));
    expect(dialer.adds()).toBe(2);
  });
});
