// Proof on the reference server's simulation clock that evidence read by its name holds the calls: a Hawaii number
// whose HubSpot contact has `hs_timezone` america_slash_indiana_slash_indianapolis (an alias the runtime's list of
// zones leaves out) is called only while both Honolulu's and Indianapolis' clocks allow it, so no call starts after
// 21:00 Eastern though Honolulu's own window runs to 03:00 Eastern; a contact whose time zone names no zone is a
// record error (unread_evidence, on the run, `status` and /ops) and is still called, held to its number's window.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Daemon } from '../../daemon/app.ts';
import { locate } from '../../daemon/compliance/locate.ts';
import { toUtc } from '../../daemon/local-time.ts';
import { syncStatus } from '../../daemon/sync/status.ts';
import { DEFAULT_OUTCOMES } from '../../server/dialer/model.ts';
import { callingWindow, DEFAULT_RULE_SET } from '../../api/calling-window/window.ts';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { callDetailRecords, campaignNumbers, daemonConfig, quietLog, testPrefix, type DialerFixture } from '../support/daemon.ts';
import { allRunErrors, settle } from '../support/sync-checks.ts';
import { createAccount, createCampaign, createKey, startServer } from '../support/server.ts';

const TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
// Wednesday 1 July 2026, 19:00 UTC: 15:00 in New York and Indianapolis, 09:00 in Honolulu.
const START = '2026-07-01T19:00:00Z';
const INDIANAPOLIS = '+18082345670';
const UNREAD = '+18082345671';
const STEP_S = 300;
const OPS_TOKEN = 'an operations token for the evidence test';

interface Call { number: string; attempt: number; startedAtLocal: string }

describe('time-zone evidence on the virtual clock', () => {
  let f: DialerFixture;
  let hs: HubSpotStandIn;
  let marsId: string;
  beforeAll(async () => {
    // Nobody answers and the dialer retries every 20 minutes: it would call all night if the window let it.
    const server = await startServer({ seed: 27, clockStart: START, outcomes: { ...DEFAULT_OUTCOMES, ringResult: { Answer: 0, NoAnswer: 1, Busy: 0, CallError: 0 } } });
    const account = await createAccount(server, 'Evidence Co', TZ);
    const retry = 1200;
    const campaign = await createCampaign(server, account.id, {
      name: 'Hawaii', type: 'Dynamic', state: 'Active',
      dialer: { mode: 'Power', agents: 2, maxAttempts: 20, callingHours: ALL_DAY, retryDelaySeconds: { NoAnswer: retry, Busy: retry, CallError: retry, Machine: retry, Abandoned: retry } },
    });
    f = { server, accountId: account.id, token: await createKey(server, account.id, ['CampaignAdmin']), campaignId: campaign.id };
    hs = await startHubSpotStandIn();
    hs.createContact({ firstname: 'Indy', lastname: 'Hawaii', phone: INDIANAPOLIS, hs_timezone: 'america_slash_indiana_slash_indianapolis' });
    marsId = hs.createContact({ firstname: 'Mars', lastname: 'Hawaii', phone: UNREAD, hs_timezone: 'Mars/Base' }).id;
  });
  afterAll(async () => {
    await hs?.close();
    await f?.server.close();
  });

  it('a Hawaii number with an Indianapolis hs_timezone gets no call after 21:00 Eastern; a zone that names none is a record error', async () => {
    const { prefix, cleanup } = testPrefix();
    let now = Date.parse(START);
    const d = await Daemon.start(daemonConfig(f, prefix, [{
      id: 'hawaii', campaignId: f.campaignId, source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token },
      mapping: { phone: 'phone', timeZone: 'hs_timezone', defaultCountry: 'US' }, schedule: { every: '1d' },
      compliance: { checkEvery: '5m', margin: '10m' },
    }], { dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
      http: { host: '127.0.0.1', port: 0, adminToken: OPS_TOKEN } }), { log: quietLog, now: () => now });
    try {
      const rt = d.runtimes.get('hawaii')!;
      await settle(d);
      // Both numbers are in the campaign: the unreadable zone keeps nobody out.
      expect((await campaignNumbers(f)).map((n) => n.number).sort()).toEqual([INDIANAPOLIS, UNREAD]);
      expect(await d.redis.hget(rt.state.keys.window.evidence, INDIANAPOLIS)).toMatch(/^time zone field: America\/Indianapolis; area code 808 .*: Pacific\/Honolulu \(group America\/Indianapolis\+Pacific\/Honolulu\)$/);
      expect(await d.redis.hget(rt.state.keys.window.evidence, UNREAD)).toMatch(/^time zone field "Mars\/Base" names no zone; area code 808 .*: Pacific\/Honolulu \(group Pacific\/Honolulu\)$/);

      // 16 hours on the clock, the window checked every 5 minutes as its scheduler does.
      const states = new Map<number, string>();
      for (let t = 0; t < (16 * 3600) / STEP_S; t++) {
        now += STEP_S * 1000;
        await f.server.advance(STEP_S);
        states.set(now, await d.enforceWindow(rt, 'test', true));
      }
      // 21:30 Eastern (15:30 in Honolulu, open there): Paused, as Indianapolis' clock says.
      const late = Date.parse('2026-07-02T01:30:00Z');
      expect(callingWindow(locate(INDIANAPOLIS), DEFAULT_RULE_SET, late).open).toBe(true);
      expect(states.get(late)).toBe('Paused');
      const calls = (await callDetailRecords<Call>(f)).map((c) => ({ ...c, at: toUtc(c.startedAtLocal, TZ) }));
      // Both callees were called through the afternoon, and no call started at or after 21:00 Eastern (01:00 UTC).
      expect(new Set(calls.map((c) => c.number))).toEqual(new Set([INDIANAPOLIS, UNREAD]));
      expect(calls.length).toBeGreaterThan(10);
      expect(calls.filter((c) => c.at >= Date.parse('2026-07-02T01:00:00Z'))).toEqual([]);
      const held = locate(INDIANAPOLIS, { timeZone: 'america_slash_indiana_slash_indianapolis' });
      expect(calls.filter((c) => !callingWindow(held, DEFAULT_RULE_SET, c.at).open)).toEqual([]);

      // The unreadable zone is the contact's record error, named by its HubSpot field; the alias is none.
      const errors = await allRunErrors(d, 'hawaii');
      // (Each run that read the contact reports it: the import and the read the window's first check asked for.)
      expect(errors.length).toBeGreaterThanOrEqual(1);
      for (const e of errors) expect(e).toMatchObject({ contactId: marsId, code: 'unread_evidence', field: 'hs_timezone', value: 'Mars/Base' });
      expect(errors[0]!.reason).toMatch(/^time zone field "Mars\/Base" names no zone: the callee may be elsewhere, so it is held to the window every other piece of its evidence allows \(\+•+5671: Pacific\/Honolulu\)$/);
      const status = await syncStatus(rt);
      expect(status.recordErrors.length).toBeGreaterThanOrEqual(1);
      for (const e of status.recordErrors) expect(e).toMatchObject({ code: 'unread_evidence', field: 'hs_timezone', value: 'Mars/Base' });
      const ops = await fetch(`${d.address}/ops/api/syncs`, { headers: { authorization: `Basic ${Buffer.from(`ops:${OPS_TOKEN}`).toString('base64')}` } });
      const body = await ops.json() as { syncs: { recordErrors: { code: string; field: string; reason: string }[] }[] };
      expect(body.syncs[0]!.recordErrors.map((e) => [e.code, e.field])).toContainEqual(['unread_evidence', 'hs_timezone']);
      expect(body.syncs[0]!.recordErrors.every((e) => e.code === 'unread_evidence')).toBe(true);
    } finally {
      await d.close(2000);
      await cleanup();
    }
  }, 180_000);
});
