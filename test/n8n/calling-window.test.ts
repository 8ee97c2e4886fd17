// Campaign Number > Calling Window inside n8n's execution engine: a callee's window from its number and the CRM's
// evidence, at a given instant (New York, London, Rhode Island's Sunday, a number and an address that disagree, a
// number no zone places, numbers that cannot be read), its times on the callee's own clock, Operator Window Days typed
// as text, the field texts a business user reads, and the same answers as the daemon's own locate and window for
// hundreds of numbers at several instants. No request is made: no server runs, and no credential is given.
import { createRequire } from 'node:module';
import { beforeAll, describe, expect, it } from 'vitest';
import type { IDataObject, INode, INodeExecutionData, INodeProperties, INodeTypeDescription } from 'n8n-workflow';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { AREA_CODE_ZONES } from '../../api/calling-window/number-zones.ts';
import { NEW_AREA_CODE_COUNTRIES } from '../../api/calling-window/number-plan.ts';
import { STATE_RULES } from '../../api/calling-window/rules.ts';
import { callingWindow, rulesFor, type RuleSet } from '../../api/calling-window/window.ts';
import { heldBecause, type Evidence, type LocationFields } from '../../api/calling-window/locate.ts';
import { TZ_NAMES } from '../api/fixtures/tz-names.ts';
import { locate } from '../../daemon/compliance/locate.ts';
import { toE164 } from '../../daemon/phone.ts';
import { localWallTime } from '../../api/wall-clock.ts';
import { loadPackage, runNode, type N8nPackage } from '../support/n8n.ts';
import { phoneSamples } from '../support/phone-samples.ts';
import { addDays, HOLIDAY_ROWS, localNoon, NO_HOLIDAY_ROWS } from '../support/state-holidays.ts';

// The CommonJS n8n-workflow, the instance n8n-core and the built nodes use (see test/support/n8n.ts).
const wf: typeof import('n8n-workflow') = createRequire(import.meta.url)('n8n-workflow');

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

interface Ask extends LocationFields { phone: string; at: string; evidence?: Evidence; stateRules?: boolean; from?: string; to?: string; days?: IDataObject[string] }

const item = (a: Ask): INodeExecutionData => ({
  json: { timeZone: '', region: '', postalCode: '', country: '', evidence: 'all', stateRules: true, from: '', to: '', ...a },
});

/** FROM_ITEM, with Operator Window Days read from the item too (`days`) when any ask gives it. */
function run(asks: Ask[], continueOnFail = false) {
  const days = asks.some((a) => 'days' in a);
  const parameters = days ? { ...FROM_ITEM, windowOptions: { ...FROM_ITEM.windowOptions, operatorDays: '={{ $json.days }}' } } : FROM_ITEM;
  // No credential: the operation sends no request, and the node asks for none under it.
  return runNode({ pkg, type: 'campaignDialing', parameters, items: asks.map(item), continueOnFail });
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
    expect(a).toMatchObject({ number: '+80012345678', open: false, opensAt: null, closesAt: null, zones: [], states: [],
      opensAtLocal: null, closesAtLocal: null, timeZone: null, localTimes: [] });
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

describe('Calling Window in the callee\'s own time', () => {
  it('gives opensAt and closesAt on the callee\'s clock with its zone, beside UTC', async () => {
    // Monday 30 November 2026, 08:30 in New York; the operator's window opens at 09:00.
    const ny = await answer({ phone: '+12125550123', at: '2026-11-30T13:30:00Z', from: '09:00', to: '20:00' });
    expect(ny).toMatchObject({
      open: false, opensAt: '2026-11-30T14:00:00.000Z', closesAt: '2026-12-01T01:00:00.000Z',
      opensAtLocal: '2026-11-30T09:00:00-05:00', closesAtLocal: '2026-11-30T20:00:00-05:00', timeZone: 'America/New_York',
      localTimes: [{ timeZone: 'America/New_York', opensAt: '2026-11-30T09:00:00-05:00', closesAt: '2026-11-30T20:00:00-05:00' }],
    });
    // London in summer (+01:00); Newfoundland (-03:30) and India (+05:30), offsets of half an hour.
    const london = await answer({ phone: '+442079460018', at: '2026-07-14T22:00:00+01:00' });
    expect(london).toMatchObject({ opensAtLocal: '2026-07-15T08:00:00+01:00', closesAtLocal: '2026-07-15T21:00:00+01:00' });
    // The number's zones keep one clock (Guernsey, the Isle of Man, Jersey, London): the first by name is named.
    expect(london.timeZone).toBe((london.zones as string[])[0]);
    expect(new Set((london.localTimes as Array<{ opensAt: string }>).map((l) => l.opensAt))).toEqual(new Set(['2026-07-15T08:00:00+01:00']));
    expect(await answer({ phone: '+17095550123', at: '2026-01-14T12:00:00Z' })).toMatchObject({
      open: true, opensAtLocal: '2026-01-14T08:30:00-03:30', closesAtLocal: '2026-01-14T21:00:00-03:30', timeZone: 'America/St_Johns',
    });
    const india = await answer({ phone: '+919876543210', at: '2026-01-14T01:00:00Z' });
    expect(india).toMatchObject({ open: false, opensAt: '2026-01-14T02:30:00.000Z', opensAtLocal: '2026-01-14T08:00:00+05:30' });
    expect(india.timeZone).toBe((india.zones as string[])[0]);
  });

  it('a callee in several zones: the clock of the zone that sets the next change, and every zone\'s in localTimes', async () => {
    // A New York number with a California address, under All: 22:00 in New York, 19:00 in Los Angeles.
    const closed = await answer({ phone: '+12125550123', region: 'CA', at: '2026-03-03T03:00:00Z' });
    expect(closed).toMatchObject({
      open: false, zones: ['America/Los_Angeles', 'America/New_York'],
      // It waits for Los Angeles' 08:00 (New York's 11:00).
      timeZone: 'America/Los_Angeles', opensAtLocal: '2026-03-03T08:00:00-08:00', closesAtLocal: '2026-03-03T18:00:00-08:00',
      localTimes: [
        { timeZone: 'America/Los_Angeles', opensAt: '2026-03-03T08:00:00-08:00', closesAt: '2026-03-03T18:00:00-08:00' },
        { timeZone: 'America/New_York', opensAt: '2026-03-03T11:00:00-05:00', closesAt: '2026-03-03T21:00:00-05:00' },
      ],
    });
    // Open at noon in New York: it closes at New York's 21:00.
    const open = await answer({ phone: '+12125550123', region: 'CA', at: '2026-03-03T17:00:00Z' });
    expect(open).toMatchObject({
      open: true, timeZone: 'America/New_York', opensAtLocal: '2026-03-03T12:00:00-05:00', closesAtLocal: '2026-03-03T21:00:00-05:00',
    });
  });
});

describe('Operator Window Days from an expression', () => {
  const weekdays = 'mon,tue,wed,thu,fri';
  const tuesday = '2026-03-03T15:00:00Z'; // 10:00 in New York
  const saturday = '2026-03-07T15:00:00Z';

  it('a text of days is read whole: every weekday it names, not its first', async () => {
    const res = await run([{ phone: '+12125550123', at: tuesday, days: weekdays }, { phone: '+12125550123', at: saturday, days: weekdays }]);
    expect(res.error).toBeUndefined();
    const [onTuesday, onSaturday] = res.items.map((i) => i.json);
    expect(onTuesday).toMatchObject({ open: true, closesAt: '2026-03-04T02:00:00.000Z' });
    expect((onTuesday!.rules as Array<{ name: string }>).map((r) => r.name)).toEqual(['federal (TCPA)', 'operator']);
    // Closed on Saturday and Sunday: Monday 08:00, the day after the clocks went forward.
    expect(onSaturday).toMatchObject({ open: false, opensAt: '2026-03-09T12:00:00.000Z', opensAtLocal: '2026-03-09T08:00:00-04:00' });
  });

  it('commas or spaces, any case, full names, a list or a list of texts: all read alike', async () => {
    const spellings: Array<IDataObject[string]> = [weekdays, 'Monday Tuesday, WEDNESDAY;thu  fri', ' MON, Tue ,wed,THURSDAY,friday ',
      ['mon', 'TUE', 'Wednesday', 'thu', 'fri'], ['mon,tue', 'wed thu fri'], 'fri,thu,wed,tue,mon,mon'];
    const res = await run(spellings.flatMap((days) => [tuesday, saturday].map((at) => ({ phone: '+12125550123', at, days }))));
    expect(res.error).toBeUndefined();
    const answers = res.items.map((i) => JSON.stringify(i.json));
    expect(answers).toHaveLength(spellings.length * 2);
    expect(new Set(answers.filter((_, n) => n % 2 === 0)).size).toBe(1);
    expect(new Set(answers.filter((_, n) => n % 2 === 1)).size).toBe(1);
    expect(res.items.map((i) => i.json.open)).toEqual(spellings.flatMap(() => [true, false]));
  });

  it('a value that is not weekdays is refused naming it, never cut or widened', async () => {
    for (const [days, message] of [
      ['mon,tue,funday', 'Operator Window Days has no day "funday" (in "mon,tue,funday")'],
      ['mo,tu', 'Operator Window Days has no day "mo" (in "mo,tu")'],
      ['weekdays', 'Operator Window Days has no day "weekdays"'],
      ['', 'Operator Window Days names no weekday: ""'],
      [' , ', 'Operator Window Days names no weekday: " , "'],
      [5, 'Operator Window Days must be weekdays, not 5'],
      [['mon', 3], 'Operator Window Days must be weekdays, not ["mon",3]'],
      [null, 'Operator Window Days must be weekdays, not null'],
    ] as const) {
      const failed = await run([{ phone: '+12125550123', at: tuesday, days }]);
      expect(failed.items, JSON.stringify(days)).toEqual([]);
      expect(failed.error?.message, JSON.stringify(days)).toContain(message);
      expect(failed.error?.description).toMatch(/mon,tue,wed,thu,fri/);
    }
    // An expression reading a field the item does not have.
    const missing = await runNode({ pkg, type: 'campaignDialing', items: [{ json: { phone: '+12125550123' } }],
      parameters: { ...FROM_ITEM, windowOptions: { at: tuesday, operatorDays: '={{ $json.days }}' } } });
    expect(missing.error?.message).toMatch(/^Operator Window Days (names no weekday|must be weekdays)/);
  });

  it('days picked in the editor still work, and none picked is every day', async () => {
    const picked = (operatorDays: string[]) => runNode({ pkg, type: 'campaignDialing', items: [{ json: {} }],
      parameters: { resource: 'campaignNumber', operation: 'callingWindow', phoneNumber: '+12125550123', windowOptions: { at: saturday, operatorDays } } });
    expect((await picked(['mon', 'fri'])).items[0]!.json).toMatchObject({ open: false, opensAt: '2026-03-09T12:00:00.000Z' });
    expect((await picked(['sat'])).items[0]!.json).toMatchObject({ open: true });
    const none = (await picked([])).items[0]!.json;
    expect(none).toMatchObject({ open: true, rules: [{ name: 'federal (TCPA)' }] });
  });
});

describe('the Calling Window as its user reads it', () => {
  let description: INodeTypeDescription;
  beforeAll(() => {
    description = pkg.nodeTypes.getByNameAndVersion(`${pkg.packageName}.campaignDialing`).description;
  });
  const node = (parameters: Record<string, unknown>): INode => ({
    id: 'n', name: 'Campaign Dialing', type: `${pkg.packageName}.campaignDialing`, typeVersion: 1, position: [0, 0], parameters: parameters as INode['parameters'],
  });
  const CW = { resource: 'campaignNumber', operation: 'callingWindow' };
  /** The node's fields the editor shows for these parameters (top level). */
  const shownFor = (parameters: Record<string, unknown>) =>
    description.properties.filter((p) => wf.NodeHelpers.displayParameter(parameters as INode['parameters'], p, node(parameters), description));

  it('Apply State Rules names every state row of the rules table', () => {
    const options = shownFor(CW).find((p) => p.name === 'windowOptions')!.options as INodeProperties[];
    const text = options.find((o) => o.name === 'stateRules')!.description!;
    expect(STATE_RULES.length).toBeGreaterThanOrEqual(6);
    for (const row of STATE_RULES) expect(text, row.state).toContain(row.name);
    expect(text).toContain('Massachusetts');
  });

  it('the fields say it checks whether a number may be called now and dials nothing', () => {
    const fields = shownFor(CW);
    const phone = fields.filter((p) => p.name === 'phoneNumber');
    expect(phone).toHaveLength(1);
    expect(phone[0]!.description).toMatch(/^The phone number to check\b/);
    expect(phone[0]!.description).toMatch(/dials nothing/);
    const operation = (fields.find((p) => p.name === 'operation')!.options as Array<{ value: string; description?: string; action?: string }>)
      .find((o) => o.value === 'callingWindow')!;
    expect(operation.description).toMatch(/^Check whether a phone number's callee may be called now\b.*dials nothing/);
    expect(operation.action).toBe('Check whether a phone number may be called now');
    const texts = JSON.stringify(fields);
    expect(texts).not.toMatch(/to dial\b/);
    // Add keeps its own Phone Number, which says what Add does with it.
    const add = shownFor({ resource: 'campaignNumber', operation: 'add' }).filter((p) => p.name === 'phoneNumber');
    expect(add.map((p) => p.description)).toEqual([expect.stringMatching(/^The phone number to add to the campaign\b/)]);
  });

  it('asks for no credential, as n8n decides it; every other operation still needs one', async () => {
    // n8n-workflow's own reading of which credentials a node uses (the editor's credential issues and n8n-core's
    // getCredentials both go by the credential entry's displayOptions).
    const active = (parameters: Record<string, unknown>) => [...wf.NodeHelpers.getActiveCredentialTypes(node(parameters), description) ?? ['(unknown)']];
    expect(active(CW)).toEqual([]);
    expect(active({ resource: 'campaignNumber', operation: 'add' })).toEqual(['campaignDialingApi']);
    expect(active({})).toEqual(['campaignDialingApi']); // Campaign > Get Many, saved without its defaults
    expect(active({ resource: 'report', operation: 'callDetails' })).toEqual(['campaignDialingApi']);
    expect(active({ resource: '__CUSTOM_API_CALL__' })).toEqual(['campaignDialingApi']);
    // Run without a credential: the Calling Window answers; Get Many stops at n8n's own check.
    const answered = await runNode({ pkg, type: 'campaignDialing', items: [{ json: {} }],
      parameters: { ...CW, phoneNumber: '+12125550123', windowOptions: { at: tuesdayNoon } } });
    expect(answered.error).toBeUndefined();
    expect(answered.items[0]!.json).toMatchObject({ open: true });
    const refused = await runNode({ pkg, type: 'campaignDialing', parameters: { resource: 'campaign', operation: 'getAll' } });
    expect(refused.error?.message).toMatch(/Node does not have any credentials set/);
  });
});
const tuesdayNoon = '2026-03-03T17:00:00Z';

describe('the same answers as the daemon', () => {
  // Numbers as the sync holds them (E.164 that libphonenumber-js finds valid): 200 of the seeded samples, every calling
  // code's, plus one of each NANP area code the tables know.
  const sampled = [...new Set(phoneSamples(3000, 36).map((p) => toE164(p)).flatMap((r) => (r.ok ? [r.e164] : [])))].slice(0, 200);
  const nanp = [...Object.keys(AREA_CODE_ZONES), ...Object.keys(NEW_AREA_CODE_COUNTRIES)]
    .map((areaCode) => toE164(`+1${areaCode}2345670`)).flatMap((r) => (r.ok ? [r.e164] : []));
  // US and EU clock changes, a Sunday, a Saturday holiday kept on the Friday (4 July 2026), Thanksgiving.
  const instants = ['2026-03-08T06:30:00Z', '2026-07-03T23:00:00Z', '2026-10-25T01:30:00Z', '2026-11-26T15:00:00Z'];
  // Evidence beside the number, in turn: none, a state, a ZIP code, a time zone field, a province, and evidence the
  // rules cannot read (a zone, a state, a ZIP code).
  const fieldSets: LocationFields[] = [{}, { region: 'FL' }, { postalCode: '02903' }, { timeZone: 'America/Chicago' }, { region: 'ON', country: 'CA' },
    { timeZone: 'Mars/Base' }, { region: 'Narnia' }, { postalCode: '00000' }];
  // Every name and link of the tz database in HubSpot's spelling, beside a Hawaii number.
  const hubspot = (name: string) => name.toLowerCase().replaceAll('/', '_slash_').replaceAll('-', '_minus_').replaceAll('+', '_plus_');
  const zoneAsks: Ask[] = TZ_NAMES.map(([name], n) => ({ phone: '+18082345670', timeZone: hubspot(name), at: instants[n % instants.length]!, evidence: n % 2 ? 'best' : 'all' }));

  /** Each ask the node answered unlike the daemon's own locate and window (at most 3), after checking it answered all. */
  function differences(asks: Ask[], res: Awaited<ReturnType<typeof run>>) {
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
      const { reason, opensAtLocal, closesAtLocal, timeZone, localTimes, ...node } = res.items[i]!.json;
      if (JSON.stringify(node) !== JSON.stringify(daemon)) differ.push({ ask, node, daemon });
      // The local times are the same instants (to the second), on the clock of one of the callee's zones, and on each.
      const second = (t: unknown) => (t === null ? null : Math.floor(Date.parse(String(t)) / 1000));
      const local = { opensAtLocal, closesAtLocal, timeZone, localTimes };
      const zones = where.zones;
      const clocks = (localTimes as Array<{ timeZone: string; opensAt: string | null; closesAt: string | null }>);
      const agrees = (zones.length ? zones.includes(String(timeZone)) || (zones.length > 1 && timeZone === null && daemon.opensAt === null) : timeZone === null)
        && (timeZone === null || (second(opensAtLocal) === second(daemon.opensAt) && second(closesAtLocal) === second(daemon.closesAt)))
        && JSON.stringify(clocks.map((c) => c.timeZone)) === JSON.stringify(zones)
        && clocks.every((c) => second(c.opensAt) === second(daemon.opensAt) && second(c.closesAt) === second(daemon.closesAt)
          && (c.opensAt === null || localWallTime(Date.parse(c.opensAt), c.timeZone) === c.opensAt.slice(0, 19)));
      if (!agrees) differ.push({ ask, local, daemon });
      // Where the daemon places the callee, the node's reason says why its window is narrowed (no place, unreadable).
      const held = heldBecause(where);
      if (held !== null && reason !== held) differ.push({ ask, reason, held });
    });
    return differ.slice(0, 3);
  }

  it('for hundreds of numbers, evidence and options at several instants', async () => {
    expect(sampled.length).toBe(200);
    expect(new Set(sampled.map((p) => parsePhoneNumberFromString(p)!.countryCallingCode)).size).toBeGreaterThan(120);
    expect(nanp.length).toBeGreaterThan(400);
    const asks: Ask[] = [...sampled, ...nanp].flatMap((phone, n) => instants.map((at, k): Ask => ({
      phone, at, ...fieldSets[(n + k) % fieldSets.length],
      evidence: (n + k) % 2 ? 'best' : 'all', stateRules: (n + k) % 7 !== 0, ...((n + k) % 3 === 0 ? { from: '09:30', to: '19:00' } : {}),
    }))).concat(zoneAsks);
    const res = await run(asks);
    expect(differences(asks, res)).toEqual([]);
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

  it('at midday, the days around it and the evening before, on every holiday of 2026 and 2027 of each state row', async () => {
    // Each row's callee on every day of the holiday tables (its own and the others'), at local midday, the midday
    // before and after, and 19:30 the evening before (so the answer's opensAt/closesAt cross the holiday).
    const rows = [...HOLIDAY_ROWS, ...NO_HOLIDAY_ROWS];
    const dates = [...new Set(HOLIDAY_ROWS.flatMap((r) => r.closed.map(([d]) => d)))];
    const asks: Ask[] = rows.flatMap(({ phone, zone }) => dates.flatMap((date) => [
      localNoon(zone, date), localNoon(zone, addDays(date, -1)), localNoon(zone, addDays(date, 1)), localNoon(zone, addDays(date, -1)) + 7.5 * 3_600_000,
    ].map((t): Ask => ({ phone, at: new Date(t).toISOString() }))));
    const res = await run(asks);
    expect(differences(asks, res)).toEqual([]);
    // The holidays are in the answers: Rhode Island's and Louisiana's callees closed at midday on each of them.
    const closedAtNoon = res.items.filter((x, i) => i % 4 === 0 && ['RI', 'LA'].includes((x.json.states as string[])[0]!) && !x.json.open);
    expect(closedAtNoon.length).toBeGreaterThanOrEqual(HOLIDAY_ROWS.reduce((n, r) => n + r.closed.length, 0));
  }, 120_000);
});
