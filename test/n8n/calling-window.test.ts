// Campaign Number > Calling Window inside n8n's execution engine: a callee's window from its number and the CRM's
// evidence, at a given instant (New York, London, Rhode Island's Sunday, a number and an address that disagree, a
// number no zone places, numbers that cannot be read), and the same answers as the daemon's own locate and window for
// hundreds of numbers at several instants. No request is made: no server runs.
import { beforeAll, describe, expect, it } from 'vitest';
import type { INodeExecutionData } from 'n8n-workflow';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { AREA_CODE_ZONES } from '../../api/calling-window/number-zones.ts';
import { NEW_AREA_CODE_COUNTRIES } from '../../api/calling-window/number-plan.ts';
import { callingWindow, rulesFor, type RuleSet } from '../../api/calling-window/window.ts';
import { heldBecause, type Evidence, type LocationFields } from '../../api/calling-window/locate.ts';
import { TZ_NAMES } from '../api/fixtures/tz-names.ts';
import { locate } from '../../daemon/compliance/locate.ts';
import { toE164 } from '../../daemon/phone.ts';
import { loadPackage, runNode, type N8nPackage } from '../support/n8n.ts';
import { phoneSamples } from '../support/phone-samples.ts';

/** The n8n package's folder (its package.json's n8n block names the built files in n8n/dist/). */
const PACKAGE = new URL('../../n8n/', import.meta.url).pathname;
let pkg: N8nPackage;

beforeAll(async () => {
  pkg = await loadPackage(PACKAGE);
});

/** Every parameter read from the item, so one run answers for many numbers, fields, instants and options. */
const FROM_ITEM = {
  resource: 'campaignNumber', operation: 'callingWindow', phoneNumber: '={{ $json.phone }}',
  timeZone: '={{ $json.timeZone }}', region: '={{ $json.region }}', postalCode: '={{ $json.postalCode }}', country: '={{ $json.country }}',
  windowOptions: {
    at: '={{ $json.at }}', evidence: '={{ $json.evidence }}', stateRules: '={{ $json.stateRules }}',
    operatorFrom: '={{ $json.from }}', operatorTo: '={{ $json.to }}',
  },
};

interface Ask extends LocationFields { phone: string; at: string; evidence?: Evidence; stateRules?: boolean; from?: string; to?: string }

const item = (a: Ask): INodeExecutionData => ({
  json: { timeZone: '', region: '', postalCode: '', country: '', evidence: 'all', stateRules: true, from: '', to: '', ...a },
});

function run(asks: Ask[], continueOnFail = false) {
  // The credential of the node is required by n8n although this operation sends nothing.
  return runNode({ pkg, type: 'campaignDialing', parameters: FROM_ITEM, items: asks.map(item), continueOnFail,
    credentials: { campaignDialingApi: { baseUrl: 'http://127.0.0.1:9', accountId: 'unused', apiToken: 'unused' } } });
}

async function answer(ask: Ask) {
  const res = await run([ask]);
  expect(res.error).toBeUndefined();
  expect(res.items).toHaveLength(1);
  return res.items[0]!.json;
}

describe('Calling Window', () => {
  it('a New York number on a Monday morning is open until 21:00 New York time', async () => {
    const a = await answer({ phone: '+1 (212) 555-0123', at: '2026-03-02T15:00:00Z' }); // 10:00 EST
    expect(a).toMatchObject({
      number: '+12125550123', open: true, opensAt: '2026-03-02T15:00:00.000Z', closesAt: '2026-03-03T02:00:00.000Z',
      zones: ['America/New_York'], states: [], reason: null,
    });
    expect(a.evidence).toMatch(/^area code 212 \(libphonenumber time-zone map .*\): America\/New_York$/);
    expect(a.rules).toEqual([{ name: 'federal (TCPA)', source: '47 CFR 64.1200(c)(1)' }]);
  });

  it('a London number at 22:00 London time is closed until 08:00 London time', async () => {
    const winter = await answer({ phone: '+44 20 7946 0018', at: '2026-01-14T22:00:00Z' }); // GMT
    expect(winter).toMatchObject({ number: '+442079460018', open: false, opensAt: '2026-01-15T08:00:00.000Z', closesAt: '2026-01-15T21:00:00.000Z' });
    expect(winter.zones).toContain('Europe/London');
    // In summer (BST), and the At option given with an offset.
    const summer = await answer({ phone: '+442079460018', at: '2026-07-14T22:00:00+01:00' });
    expect(summer).toMatchObject({ open: false, opensAt: '2026-07-15T07:00:00.000Z', closesAt: '2026-07-15T20:00:00.000Z' });
  });

  it('a Rhode Island number (401) on a Sunday is closed until Monday 09:00, by Rhode Island\'s row', async () => {
    const a = await answer({ phone: '+14015550123', at: '2026-03-01T17:00:00Z' }); // Sunday 12:00 EST
    expect(a).toMatchObject({ open: false, opensAt: '2026-03-02T14:00:00.000Z', closesAt: '2026-03-02T23:00:00.000Z', states: ['RI'] });
    expect((a.rules as Array<{ name: string; source: string }>).map((r) => r.name)).toEqual(['federal (TCPA)', 'Rhode Island']);
    expect((a.rules as Array<{ source: string }>)[1]!.source).toMatch(/R\.I\. Gen\. Laws § 5-61/);
    // Without the state rules the federal window alone: open.
    expect(await answer({ phone: '+14015550123', at: '2026-03-01T17:00:00Z', stateRules: false })).toMatchObject({ open: true, states: ['RI'] });
  });

  it('a New York number with a California address: All holds it to both clocks, Best to the address\'s', async () => {
    const at = '2026-03-03T03:00:00Z'; // 22:00 in New York, 19:00 in Los Angeles
    const all = await answer({ phone: '+12125550123', region: 'CA', at });
    expect(all).toMatchObject({
      open: false, zones: ['America/Los_Angeles', 'America/New_York'],
      opensAt: '2026-03-03T16:00:00.000Z', closesAt: '2026-03-04T02:00:00.000Z', // 08:00 in Los Angeles to 21:00 in New York
    });
    expect(all.evidence).toMatch(/^state CA: America\/Los_Angeles; area code 212 .*: America\/New_York$/);
    const best = await answer({ phone: '+12125550123', region: 'CA', at, evidence: 'best' });
    expect(best).toMatchObject({ open: true, zones: ['America/Los_Angeles'], closesAt: '2026-03-03T05:00:00.000Z', evidence: 'state CA: America/Los_Angeles' });
  });

  it('an operator window narrows the law\'s', async () => {
    const a = await answer({ phone: '+12125550123', at: '2026-03-02T15:00:00Z', from: '11:00', to: '17:00' });
    expect(a).toMatchObject({ open: false, opensAt: '2026-03-02T16:00:00.000Z', closesAt: '2026-03-02T22:00:00.000Z' });
    expect((a.rules as Array<{ name: string }>).map((r) => r.name)).toEqual(['federal (TCPA)', 'operator']);
  });

  it('a number no zone places (+800) is closed, with the reason, not an error', async () => {
    const a = await answer({ phone: '+80012345678', at: '2026-03-02T15:00:00Z' });
    expect(a).toMatchObject({ number: '+80012345678', open: false, opensAt: null, closesAt: null, zones: [], states: [] });
    expect(a.reason).toMatch(/cannot be placed in any time zone \(country code \+800 is not in the time-zone map\)/);
  });

  it('a toll-free number with nothing else to place it: every US zone and state row, with the reason; an address places it', async () => {
    const a = await answer({ phone: '+1 800 234 5670', at: '2026-01-14T20:00:00Z' }); // Wednesday 15:00 EST, 10:00 HST
    expect(a).toMatchObject({ open: true, closesAt: '2026-01-14T23:00:00.000Z', states: ['FL', 'LA', 'MA', 'MS', 'RI', 'WA'] });
    expect(a.zones).toEqual(expect.arrayContaining(['America/New_York', 'Pacific/Honolulu', 'America/Adak']));
    expect(a.evidence).toMatch(/^area code 800 \(toll-free\) names no place; every zone of US: /);
    expect(a.reason).toMatch(/^toll-free: no place, so the callee is held to every zone of its country and every state row of it/);
    expect(await answer({ phone: '+18002345670', region: 'CA', at: '2026-01-14T20:00:00Z' })).toMatchObject({ zones: ['America/Los_Angeles'], reason: null });
  });

  it('a time zone that names no zone is said in the reason; a HubSpot alias reads', async () => {
    const a = await answer({ phone: '+18082345670', timeZone: 'Mars/Base', at: '2026-07-02T01:30:00Z' });
    expect(a).toMatchObject({ open: true, zones: ['Pacific/Honolulu'] });
    expect(a.reason).toMatch(/^time zone field "Mars\/Base" names no zone, so every other piece of the evidence counts/);
    // 21:30 Eastern: Indianapolis' clock is closed, Honolulu's open.
    const b = await answer({ phone: '+18082345670', timeZone: 'america_slash_indiana_slash_indianapolis', at: '2026-07-02T01:30:00Z' });
    expect(b).toMatchObject({ open: false, zones: ['America/Indianapolis', 'Pacific/Honolulu'], reason: null });
  });

  it('a phone number that cannot be read fails naming it; with Continue On Fail it is an error item among the answers', async () => {
    for (const [phone, why] of [
      ['call me maybe', /does not start with \+/], ['+1 212 555 012', /a \+1 number has 10 digits/], ['+999 1234567', /no country calling code/],
      ['+44 20 7946 0018 ext. 12', /more than digits/],
    ] as const) {
      const failed = await run([{ phone, at: '2026-03-02T15:00:00Z' }]);
      expect(failed.error?.message).toContain(`The phone number "${phone}" of item 0 cannot be read`);
      expect(failed.error?.message).toMatch(why);
      expect(failed.error?.description).toMatch(/international format/);
    }
    const kept = await run([{ phone: '+12125550123', at: '2026-03-02T15:00:00Z' }, { phone: '555-0123', at: '2026-03-02T15:00:00Z' }], true);
    expect(kept.error).toBeUndefined();
    expect(kept.items.map((i) => [i.pairedItem, i.json.open, i.json.error])).toEqual([
      [{ item: 0 }, true, undefined], [{ item: 1 }, undefined, expect.stringContaining('"555-0123" of item 1 cannot be read')],
    ]);
  });

  it('a wrong option fails naming it', async () => {
    const bad = await run([{ phone: '+12125550123', at: 'tomorrow' }]);
    expect(bad.error?.message).toMatch(/At needs a date and time, not "tomorrow"/);
    const half = await run([{ phone: '+12125550123', at: '2026-03-02T15:00:00Z', from: '09:00' }]);
    expect(half.error?.message).toMatch(/Operator Window To is empty/);
  });
});

describe('the same answers as the daemon', () => {
  // Numbers as the sync holds them (E.164 that libphonenumber-js finds valid): 200 of the seeded samples, every calling
  // code's, plus one of each NANP area code the tables know.
  const sampled = [...new Set(phoneSamples(3000, 36).map((p) => toE164(p)).flatMap((r) => (r.ok ? [r.e164] : [])))].slice(0, 200);
  const nanp = [...Object.keys(AREA_CODE_ZONES), ...Object.keys(NEW_AREA_CODE_COUNTRIES)]
    .map((areaCode) => toE164(`+1${areaCode}2345670`)).flatMap((r) => (r.ok ? [r.e164] : []));
  // US and EU clock changes, a Sunday, a Saturday holiday kept on the Friday (4 July 2026), Thanksgiving.
  const instants = ['2026-03-08T06:30:00Z', '2026-07-03T23:00:00Z', '2026-10-25T01:30:00Z', '2026-11-26T15:00:00Z'];
  // Evidence beside the number, in turn: none, a state, a ZIP code, a time zone field, a province.
  // Evidence beside the number, in turn: none, a state, a ZIP code, a time zone field, a province, and evidence the
  // rules cannot read (a zone, a state, a ZIP code).
  const fieldSets: LocationFields[] = [{}, { region: 'FL' }, { postalCode: '02903' }, { timeZone: 'America/Chicago' }, { region: 'ON', country: 'CA' },
    { timeZone: 'Mars/Base' }, { region: 'Narnia' }, { postalCode: '00000' }];
  // Every name and link of the tz database in HubSpot's spelling, beside a Hawaii number.
  const hubspot = (name: string) => name.toLowerCase().replaceAll('/', '_slash_').replaceAll('-', '_minus_').replaceAll('+', '_plus_');
  const zoneAsks: Ask[] = TZ_NAMES.map(([name], n) => ({ phone: '+18082345670', timeZone: hubspot(name), at: instants[n % instants.length]!, evidence: n % 2 ? 'best' : 'all' }));

  it('for hundreds of numbers, evidence and options at several instants', async () => {
    expect(sampled.length).toBe(200);
    expect(new Set(sampled.map((p) => parsePhoneNumberFromString(p)!.countryCallingCode)).size).toBeGreaterThan(120);
    expect(nanp.length).toBeGreaterThan(400);
    const asks: Ask[] = [...sampled, ...nanp].flatMap((phone, n) => instants.map((at, k): Ask => ({
      phone, at, ...fieldSets[(n + k) % fieldSets.length],
      evidence: (n + k) % 2 ? 'best' : 'all', stateRules: (n + k) % 7 !== 0, ...((n + k) % 3 === 0 ? { from: '09:30', to: '19:00' } : {}),
    }))).concat(zoneAsks);
    const res = await run(asks);
    expect(res.error).toBeUndefined();
    expect(res.items).toHaveLength(asks.length);
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    const differ: unknown[] = [];
    asks.forEach((ask, i) => {
      const { phone, at, evidence, stateRules, from, to, ...fields } = ask;
      const ruleSet: RuleSet = { stateRules: stateRules !== false, ...(from && to ? { operator: { hours: [from, to] as const } } : {}) };
      const where = locate(phone, fields, evidence);
      const instant = Date.parse(at);
      const w = callingWindow(where, ruleSet, instant);
      const daemon = {
        number: phone, open: w.open, opensAt: iso(w.open ? instant : w.opensAt), closesAt: iso(w.closesAt),
        evidence: where.evidence, zones: where.zones, states: where.states,
        rules: rulesFor(where.states, ruleSet).map(({ name, source }) => ({ name, source })),
      };
      const { reason, ...node } = res.items[i]!.json;
      if (JSON.stringify(node) !== JSON.stringify(daemon)) differ.push({ ask, node, daemon });
      // Where the daemon places the callee, the node's reason says why its window is narrowed (no place, unreadable).
      const held = heldBecause(where);
      if (held !== null && reason !== held) differ.push({ ask, reason, held });
    });
    expect(differ.slice(0, 3)).toEqual([]);
    // The answers are not all alike: open and closed, placed and not, several states.
    const answers = res.items.map((x) => x.json);
    expect(new Set(answers.map((a) => a.open))).toEqual(new Set([true, false]));
    expect(answers.some((a) => (a.zones as string[]).length === 0)).toBe(true);
    expect(new Set(answers.flatMap((a) => a.states as string[])).size).toBeGreaterThanOrEqual(5);
    // Numbers with no place and unreadable evidence were among them, and every tz name read.
    expect(answers.filter((a) => /^toll-free: no place/.test(String(a.reason))).length).toBeGreaterThanOrEqual(7);
    expect(answers.filter((a) => / names no zone, so every other piece/.test(String(a.reason))).length).toBeGreaterThan(50);
    expect(answers.slice(-zoneAsks.length).filter((a) => !/^time zone field: /.test(String(a.evidence))).map((a) => a.evidence)).toEqual(['EST', 'HST', 'MST'].map((z) => expect.stringContaining(`"${z.toLowerCase()}" names no zone`)));
  }, 120_000);
});
