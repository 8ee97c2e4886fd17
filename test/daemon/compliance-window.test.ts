// Calling windows as tables: where each callee is (time zone field, address, area code, country code) and whether a
// call may start at an instant, with the next edges, across both 2026 US DST changes, Arizona (and the Navajo Nation),
// Hawaii, Alaska, Puerto Rico, Indiana's split area codes, Canada, the UK, Florida's and Rhode Island's rows and an
// operator's window.
import { describe, expect, it } from 'vitest';
import { readTimeZone, zipRegion } from '../../api/calling-window/locate.ts';
import { locate } from '../../daemon/compliance/locate.ts';
import { AREA_CODE_ZONES } from '../../api/calling-window/number-zones.ts';
import { CA_REGION_ZONES, US_REGION_ZONES } from '../../api/calling-window/regions.ts';
import { FEDERAL_HOLIDAYS, STATE_RULES } from '../../api/calling-window/rules.ts';
import { callingWindow, capFor, DEFAULT_RULE_SET, isHoliday, rulesFor, type RuleSet } from '../../api/calling-window/window.ts';
import { isTimeZone } from '../../daemon/local-time.ts';
import { ZIP3_STATES, ZIP5_STATES } from '../../api/calling-window/zip-states.ts';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString().slice(0, 16) + 'Z');

// Each piece of evidence as read: under `best` the strongest one alone decides, so a row shows what that piece says.
describe('where a callee is, by the strongest evidence (best)', () => {
  it.each([
    // phone, fields, zones, states, from
    ['+12125550123', {}, ['America/New_York'], [], 'number'],
    ['+13055550123', {}, ['America/New_York'], ['FL'], 'number'],
    ['+18505550123', {}, ['America/Chicago', 'America/New_York'], ['FL'], 'number'],
    ['+16025550123', {}, ['America/Phoenix'], [], 'number'],
    ['+19285550123', {}, ['America/Denver', 'America/Phoenix'], [], 'number'], // 928 takes in the Navajo Nation (DST)
    ['+18085550123', {}, ['Pacific/Honolulu'], [], 'number'],
    ['+17875550123', {}, ['America/Puerto_Rico'], [], 'number'],
    ['+19395550123', {}, ['America/Puerto_Rico'], [], 'number'],
    ['+13175550123', {}, ['America/New_York'], [], 'number'], // Indianapolis
    ['+12195550123', {}, ['America/Chicago', 'America/New_York'], [], 'number'], // north-west Indiana: Central and Eastern
    ['+18125550123', {}, ['America/Chicago', 'America/New_York'], [], 'number'], // south-west Indiana (Evansville: Central)
    ['+14165550123', {}, ['America/Toronto'], [], 'number'],
    ['+16045550123', {}, ['America/Vancouver'], [], 'number'],
    ['+14015550123', {}, ['America/New_York'], ['RI'], 'number'],
    ['+16015550123', {}, ['America/Chicago'], ['MS'], 'number'],
    ['+15045550123', {}, ['America/Chicago'], ['LA'], 'number'],
    ['+12065550123', {}, ['America/Los_Angeles'], ['WA'], 'number'],
    ['+442071234567', {}, ['Europe/Guernsey', 'Europe/Isle_of_Man', 'Europe/Jersey', 'Europe/London'], [], 'number'],
    ['+12125550123', { timeZone: 'America/Los_Angeles' }, ['America/Los_Angeles'], [], 'field'],
    ['+12125550123', { timeZone: 'america_slash_los_angeles' }, ['America/Los_Angeles'], [], 'field'], // HubSpot hs_timezone
    ['+12125550123', { region: 'Florida' }, ['America/Chicago', 'America/New_York'], ['FL'], 'address'],
    ['+13055550123', { region: 'NY' }, ['America/New_York'], ['FL', 'NY'], 'address'], // both states' rules hold
    ['+12125550123', { region: 'AZ', country: 'US' }, ['America/Denver', 'America/Phoenix'], ['AZ'], 'address'],
    ['+12125550123', { postalCode: 'T2P 1J9' }, ['America/Edmonton'], [], 'address'],
    ['+12125550123', { region: 'ON', country: 'CA' }, ['America/Toronto', 'America/Winnipeg'], [], 'address'],
    ['+12125550123', { timeZone: 'nowhere', region: 'nowhere' }, ['America/New_York'], [], 'number'],
  ] as const)('%s %j → %j %j (%s)', (phone, fields, zones, states, from) => {
    const l = locate(phone, fields, 'best');
    expect(l.zones).toEqual(zones);
    expect(l.states).toEqual(states);
    expect(l.from).toBe(from);
    expect(l.evidence).toMatch(from === 'number' ? /code/ : from === 'field' ? /time zone field/ : /state|province|postal/);
  });

  it('says why a field was passed over', () => {
    expect(locate('+12125550123', { timeZone: 'Mars/Base' }).evidence).toMatch(/^time zone field "Mars\/Base" names no zone; area code 212/);
  });

  it('reads HubSpot and IANA spellings of a zone, and nothing else', () => {
    expect(readTimeZone('america_slash_port_minus_au_minus_prince')).toBe('America/Port-au-Prince');
    expect(readTimeZone('AMERICA/NEW_YORK')).toBe('America/New_York');
    expect(readTimeZone('EST')).toBeUndefined();
    expect(readTimeZone('')).toBeUndefined();
  });

  it('every zone of the data tables is one Intl knows', () => {
    const zones = new Set([...Object.values(AREA_CODE_ZONES).flatMap((z) => z.split(' ')), ...Object.values(US_REGION_ZONES).flat(), ...Object.values(CA_REGION_ZONES).flat()]);
    expect([...zones].filter((z) => !isTimeZone(z))).toEqual([]);
  });
});

// Under `all` (the default) every piece counts: the callee's zones are those of each, so its window is the one they
// all allow; unreadable pieces are said as under `best`.
describe('where a callee is, by every piece of evidence (all, the default)', () => {
  const AC212 = 'area code 212 \\(libphonenumber time-zone map .*\\): America/New_York';
  it.each([
    // phone, fields, zones, states, from, evidence
    ['+12125550123', {}, ['America/New_York'], [], 'number', `^${AC212}$`],
    ['+12125550123', { region: 'California' }, ['America/Los_Angeles', 'America/New_York'], ['CA'], 'address', `^state CA: America/Los_Angeles; ${AC212}$`],
    ['+12125550123', { timeZone: 'America/Los_Angeles' }, ['America/Los_Angeles', 'America/New_York'], [], 'field', `^time zone field: America/Los_Angeles; ${AC212}$`],
    ['+12125550123', { timeZone: 'America/Chicago', postalCode: '96813' }, ['America/Chicago', 'America/New_York', 'Pacific/Honolulu'], ['HI'], 'field',
      `^time zone field: America/Chicago; ZIP code 96813 \\(.*: state HI\\): Pacific/Honolulu; ${AC212}$`],
    // Agreeing pieces: nothing narrows.
    ['+13055550123', { region: 'NY', timeZone: 'America/New_York' }, ['America/New_York'], ['FL', 'NY'], 'field', '^time zone field: America/New_York; state NY: America/New_York; area code 305'],
    ['+12125550123', { timeZone: 'Mars/Base', postalCode: '12' }, ['America/New_York'], [], 'number', `^time zone field "Mars/Base" names no zone; postal code "12" is not read; ${AC212}$`],
    ['+442071234567', { region: 'NY' }, ['America/New_York', 'Europe/Guernsey', 'Europe/Isle_of_Man', 'Europe/Jersey', 'Europe/London'], ['NY'], 'address', '^state NY: America/New_York; country code \\+44'],
    // An area code newer than the map is no evidence of a place: it counts only when nothing else places the callee.
    ['+12732345670', { region: 'ON' }, ['America/Toronto', 'America/Winnipeg'], [], 'address', '^province ON: America/Toronto, America/Winnipeg; area code 273 is not in the time-zone map \\(not counted'],
    ['+12732345670', {}, [...new Set(Object.values(CA_REGION_ZONES).flat())].sort(), [], 'number', '^area code 273 is not in the time-zone map; every zone of CA'],
  ] as const)('%s %j → %j %j (%s)', (phone, fields, zones, states, from, evidence) => {
    const l = locate(phone, fields);
    expect(l.zones).toEqual(zones);
    expect(l.states).toEqual(states);
    expect(l.from).toBe(from);
    expect(l.evidence).toMatch(new RegExp(evidence));
  });

  // The measured case: a New York number with a California address, called at 19:00 in Los Angeles (22:00 in New York).
  it.each([
    ['all', ['America/Los_Angeles', 'America/New_York'], { '2026-07-02T02:00Z': false, '2026-07-01T19:00Z': true }],
    ['best', ['America/Los_Angeles'], { '2026-07-02T02:00Z': true, '2026-07-01T19:00Z': true }],
  ] as const)('a 212 number with a California address under %s: %j', (mode, zones, open) => {
    const l = locate('+12125550123', { region: 'CA', country: 'US' }, mode);
    expect(l.zones).toEqual(zones);
    // 19:00 Pacific (22:00 Eastern): closed under all, open by the address alone; 12:00 Pacific (15:00 Eastern): open.
    for (const [at, want] of Object.entries(open)) expect([at, callingWindow(l, DEFAULT_RULE_SET, Date.parse(at.replace('Z', ':00Z'))).open]).toEqual([at, want]);
    if (mode === 'all') {
      // What both clocks allow: 08:00 Pacific (11:00 Eastern) to 21:00 Eastern (18:00 Pacific).
      const w = callingWindow(l, DEFAULT_RULE_SET, Date.parse('2026-07-01T19:00:00Z'));
      expect([iso(w.closesAt), iso(w.opensAt)]).toEqual(['2026-07-02T01:00Z', '2026-07-02T15:00Z']);
    }
  });
});

describe('a US ZIP code as evidence (best)', () => {
  const AK = ['America/Adak', 'America/Anchorage'];
  it.each([
    // phone, fields, zones, states, evidence
    ['+12125550123', { postalCode: '85004' }, ['America/Denver', 'America/Phoenix'], ['AZ'], /^ZIP code 85004 \(USPS ZIP prefixes .*\): state AZ\): America\/Denver, America\/Phoenix$/],
    ['+12125550123', { postalCode: '86515', country: 'US' }, ['America/Denver', 'America/Phoenix'], ['AZ'], /state AZ/], // Window Rock, Navajo Nation
    ['+12125550123', { postalCode: '96813' }, ['Pacific/Honolulu'], ['HI'], /ZIP code 96813 .*state HI/],
    ['+12125550123', { postalCode: '99501-2230' }, AK, ['AK'], /ZIP code 99501-2230 .*state AK/], // ZIP+4
    ['+12125550123', { postalCode: '00601' }, ['America/Puerto_Rico'], ['PR'], /state PR/], // 006: Puerto Rico
    ['+12125550123', { postalCode: '00725' }, ['America/Puerto_Rico'], ['PR'], /state PR/], // 007
    ['+12125550123', { postalCode: '00802' }, ['America/St_Thomas'], ['VI'], /state VI/], // 008: the Virgin Islands
    ['+12125550123', { postalCode: '00901' }, ['America/Puerto_Rico'], ['PR'], /state PR/], // 009
    ['+12125550123', { postalCode: '46204' }, ['America/Chicago', 'America/Indiana/Indianapolis'], ['IN'], /state IN/], // Indiana: both
    ['+12125550123', { postalCode: '33101' }, ['America/Chicago', 'America/New_York'], ['FL'], /state FL/], // Florida's rules hold
    ['+13055550123', { postalCode: '10001 1234', country: 'United States' }, ['America/New_York'], ['FL', 'NY'], /state NY/],
    ['+12125550123', { postalCode: '83414' }, ['America/Denver'], ['WY'], /state WY/], // assigned apart from Idaho's 834
    ['+12125550123', { postalCode: '06390' }, ['America/New_York'], ['NY'], /state NY/], // Fishers Island, under Connecticut's 063
    // The order holds: a time zone field, then the state, then the ZIP code.
    ['+12125550123', { region: 'NY', postalCode: '96813' }, ['America/New_York'], ['NY'], /^state NY/],
    ['+12125550123', { timeZone: 'America/Chicago', postalCode: '96813' }, ['America/Chicago'], ['HI'], /^time zone field/],
    // A ZIP code that names no place falls to the number, and says so.
    ['+12125550123', { postalCode: '00000' }, ['America/New_York'], [], /^ZIP code 00000 has a prefix assigned to no state; area code 212/],
    ['+18085550123', { postalCode: '21300' }, ['Pacific/Honolulu'], [], /^ZIP code 21300 has a prefix assigned to no state; area code 808/],
    ['+12125550123', { postalCode: '09001' }, ['America/New_York'], [], /^ZIP code 09001 is AE's \(military mail.*\); area code 212/],
    ['+12125550123', { postalCode: '1234' }, ['America/New_York'], [], /^postal code "1234" is not read; area code 212/],
    ['+12125550123', { timeZone: 'Mars/Base', postalCode: '12' }, ['America/New_York'], [], /^time zone field "Mars\/Base" names no zone; postal code "12" is not read; area code/],
    // Another country's five digits are not a ZIP code: Berlin's 10115, said with a German number or a German address.
    ['+493012345678', { postalCode: '10115' }, ['Europe/Berlin'], [], /^country code \+49/],
    ['+12125550123', { postalCode: '10115', country: 'DE' }, ['America/New_York'], [], /^area code 212/],
  ] as const)('%s %j → %j %j', (phone, fields, zones, states, evidence) => {
    const l = locate(phone, fields, 'best');
    expect(l.zones).toEqual(zones);
    expect(l.states).toEqual(states);
    expect(l.evidence).toMatch(evidence);
  });

  it('a Florida ZIP code holds the callee to Florida\'s 20:00', () => {
    // 20:30 EDT on 1 July 2026 (00:30Z): inside the federal window, outside Florida's.
    const at = Date.parse('2026-07-02T00:30:00Z');
    expect(callingWindow(locate('+12125550123', { postalCode: '33101' }), DEFAULT_RULE_SET, at).open).toBe(false);
    expect(callingWindow(locate('+12125550123', { postalCode: '10001' }), DEFAULT_RULE_SET, at).open).toBe(true);
  });

  it('every prefix belongs to one region, and every region but military mail and the freely associated states has zones', () => {
    const seen = new Map<string, string>();
    for (const [from, to, region] of ZIP3_STATES) {
      expect(from <= to).toBe(true);
      for (let p = Number(from); p <= Number(to); p++) {
        const prefix = String(p).padStart(3, '0');
        expect(seen.has(prefix)).toBe(false);
        seen.set(prefix, region);
      }
    }
    const regions = new Set([...seen.values(), ...Object.values(ZIP5_STATES)]);
    expect([...regions].filter((r) => !US_REGION_ZONES[r]).sort()).toEqual(['AA', 'AE', 'AP', 'FM', 'MH', 'PW']);
    expect(Object.keys(US_REGION_ZONES).filter((r) => !regions.has(r))).toEqual([]);
    expect(zipRegion('35004')).toBe('AL');
    expect(zipRegion('3500')).toBeUndefined();
  });
});

describe('may a call start now', () => {
  // Instants are UTC; comments give the callee's local time.
  it.each([
    // Winter, New York EST (UTC-5): 08:00 opens, 21:00 closes.
    ['+12125550123', '2026-01-14T12:59Z', false, '2026-01-14T13:00Z', '2026-01-15T02:00Z'],
    ['+12125550123', '2026-01-14T13:00Z', true, '2026-01-15T13:00Z', '2026-01-15T02:00Z'],
    ['+12125550123', '2026-01-15T01:59Z', true, '2026-01-15T13:00Z', '2026-01-15T02:00Z'],
    ['+12125550123', '2026-01-15T02:00Z', false, '2026-01-15T13:00Z', '2026-01-16T02:00Z'],
    // Spring forward, Sunday 8 March 2026: New York opens at 08:00 EDT = 12:00Z, Phoenix stays at 15:00Z.
    ['+12125550123', '2026-03-08T12:00Z', true, '2026-03-09T12:00Z', '2026-03-09T01:00Z'],
    ['+12125550123', '2026-03-08T11:59Z', false, '2026-03-08T12:00Z', '2026-03-09T01:00Z'],
    ['+16025550123', '2026-03-08T14:59Z', false, '2026-03-08T15:00Z', '2026-03-09T04:00Z'],
    // Navajo Nation in 928: Denver's clock closes first in summer (21:00 MDT = 03:00Z), Phoenix's opens last.
    ['+19285550123', '2026-07-01T15:00Z', true, '2026-07-02T15:00Z', '2026-07-02T03:00Z'],
    ['+19285550123', '2026-01-14T15:00Z', true, '2026-01-15T15:00Z', '2026-01-15T04:00Z'],
    // Fall back, Sunday 1 November 2026: New York 08:00 EST = 13:00Z; Los Angeles 21:00 PST = 05:00Z next day.
    ['+12125550123', '2026-11-01T12:30Z', false, '2026-11-01T13:00Z', '2026-11-02T02:00Z'],
    ['+12135550123', '2026-11-01T15:59Z', false, '2026-11-01T16:00Z', '2026-11-02T05:00Z'],
    ['+12135550123', '2026-10-31T15:00Z', true, '2026-11-01T16:00Z', '2026-11-01T04:00Z'],
    // Hawaii (no DST): 08:00 HST = 18:00Z all year; Alaska takes Adak's and Honolulu's clocks too.
    ['+18085550123', '2026-07-01T17:59Z', false, '2026-07-01T18:00Z', '2026-07-02T07:00Z'],
    ['+19075550123', '2026-07-01T18:00Z', true, '2026-07-02T18:00Z', '2026-07-02T05:00Z'],
    // Puerto Rico (AST, no DST): 08:00 = 12:00Z.
    ['+17875550123', '2026-01-14T12:00Z', true, '2026-01-15T12:00Z', '2026-01-15T01:00Z'],
    // Indiana 219: Eastern opens first, Central closes last: both must allow it.
    ['+12195550123', '2026-01-14T13:30Z', false, '2026-01-14T14:00Z', '2026-01-15T02:00Z'],
    // Florida: 08:00–20:00 (closes 00:00Z in summer); the panhandle (850) also Central.
    ['+13055550123', '2026-07-01T23:59Z', true, '2026-07-02T12:00Z', '2026-07-02T00:00Z'],
    ['+13055550123', '2026-07-02T00:00Z', false, '2026-07-02T12:00Z', '2026-07-03T00:00Z'],
    ['+18505550123', '2026-07-01T12:30Z', false, '2026-07-01T13:00Z', '2026-07-02T00:00Z'],
    // Rhode Island: Saturday 10:00–17:00, no Sunday, no holiday (Monday 7 Sept 2026 is Labor Day).
    ['+14015550123', '2026-09-05T13:59Z', false, '2026-09-05T14:00Z', '2026-09-05T21:00Z'],
    ['+14015550123', '2026-09-05T21:00Z', false, '2026-09-08T13:00Z', '2026-09-08T22:00Z'],
    // Mississippi: 8:00–20:00 "Central Standard Time", read on the callee's clock and on CST all year: in July
    // 09:00–20:00 CDT (14:00Z–01:00Z), in January 08:00–20:00 CST (14:00Z–02:00Z); no Sunday.
    ['+16015550123', '2026-07-01T13:30Z', false, '2026-07-01T14:00Z', '2026-07-02T01:00Z'],
    ['+16015550123', '2026-07-01T14:00Z', true, '2026-07-02T14:00Z', '2026-07-02T01:00Z'],
    ['+16015550123', '2026-01-14T14:00Z', true, '2026-01-15T14:00Z', '2026-01-15T02:00Z'],
    ['+16015550123', '2026-01-18T15:00Z', false, '2026-01-19T14:00Z', '2026-01-20T02:00Z'],
    // Louisiana: 08:00–20:00 Monday to Saturday; Sunday 12 July 2026 shut; Saturday 4 July 2026 a state holiday
    // (and Friday the 3rd, the day it is kept).
    ['+15045550123', '2026-07-11T13:00Z', true, '2026-07-13T13:00Z', '2026-07-12T01:00Z'],
    ['+15045550123', '2026-07-12T15:00Z', false, '2026-07-13T13:00Z', '2026-07-14T01:00Z'],
    ['+15045550123', '2026-07-03T17:00Z', false, '2026-07-06T13:00Z', '2026-07-07T01:00Z'],
    // Washington: 08:00–20:00 at the callee's local time (Seattle PDT: 15:00Z–03:00Z), Sundays too.
    ['+12065550123', '2026-07-02T02:59Z', true, '2026-07-02T15:00Z', '2026-07-02T03:00Z'],
    ['+12065550123', '2026-07-02T03:00Z', false, '2026-07-02T15:00Z', '2026-07-03T03:00Z'],
    ['+12065550123', '2026-07-05T15:00Z', true, '2026-07-06T15:00Z', '2026-07-06T03:00Z'],
    // Massachusetts: 08:00–20:00 at the callee's local time (Boston EDT: 12:00Z–00:00Z; EST: 13:00Z–01:00Z), Sundays too.
    ['+16175550123', '2026-07-01T23:59Z', true, '2026-07-02T12:00Z', '2026-07-02T00:00Z'],
    ['+16175550123', '2026-07-02T00:00Z', false, '2026-07-02T12:00Z', '2026-07-03T00:00Z'],
    ['+19785550123', '2026-01-18T13:00Z', true, '2026-01-19T13:00Z', '2026-01-19T01:00Z'],
    // Toronto; London (08:00 GMT, 08:00 BST = 07:00Z).
    ['+14165550123', '2026-01-14T13:00Z', true, '2026-01-15T13:00Z', '2026-01-15T02:00Z'],
    ['+442071234567', '2026-07-01T07:00Z', true, '2026-07-02T07:00Z', '2026-07-01T20:00Z'],
    ['+442071234567', '2026-01-14T07:30Z', false, '2026-01-14T08:00Z', '2026-01-14T21:00Z'],
  ] as const)('%s at %s → open %s, next open %s, close %s', (phone, at, open, opensAt, closesAt) => {
    const w = callingWindow(locate(phone), DEFAULT_RULE_SET, Date.parse(at.replace('Z', ':00Z')));
    expect({ open: w.open, opensAt: iso(w.opensAt), closesAt: iso(w.closesAt) }).toEqual({ open, opensAt, closesAt });
  });

  it.each([
    // The operator's 09:00–20:00 on weekdays narrows the law's window; state rows may be turned off.
    [{ stateRules: true, operator: { hours: ['09:00', '20:00'], days: ['mon', 'tue', 'wed', 'thu', 'fri'] } }, '+12125550123', '2026-01-14T13:30Z', false, '2026-01-14T14:00Z'],
    [{ stateRules: true, operator: { hours: ['09:00', '20:00'], days: ['mon', 'tue', 'wed', 'thu', 'fri'] } }, '+12125550123', '2026-01-17T15:00Z', false, '2026-01-19T14:00Z'],
    [{ stateRules: false }, '+13055550123', '2026-07-02T00:30Z', true, '2026-07-02T12:00Z'],
  ] as const)('rule set %j: %s at %s → open %s, next open %s', (ruleSet, phone, at, open, opensAt) => {
    const w = callingWindow(locate(phone), ruleSet as RuleSet, Date.parse(at.replace('Z', ':00Z')));
    expect({ open: w.open, opensAt: iso(w.opensAt) }).toEqual({ open, opensAt });
  });

  it('a callee with no known zone, or zones with no common hour, is never open', () => {
    expect(callingWindow({ zones: [], states: [] }, DEFAULT_RULE_SET, Date.now())).toEqual({ open: false, opensAt: null, closesAt: null });
    const narrow: RuleSet = { stateRules: true, operator: { hours: ['09:00', '10:00'] } };
    expect(callingWindow({ zones: ['America/New_York', 'Europe/London'], states: [] }, narrow, Date.now())).toEqual({ open: false, opensAt: null, closesAt: null });
  });

  it('the cap of Florida is 3 calls in 24 hours, and none applies elsewhere', () => {
    expect(capFor(rulesFor(['FL'], DEFAULT_RULE_SET))).toEqual({ calls: 3, hours: 24 });
    expect(capFor(rulesFor(['NY'], DEFAULT_RULE_SET))).toBeUndefined();
  });

  it.each([
    ['2026-01-19', true], ['2026-05-25', true], ['2026-07-03', true], ['2026-07-04', true], ['2026-11-26', true],
    ['2026-11-27', false], ['2026-12-25', true], ['2027-12-31', true], ['2026-06-18', false],
  ])('%s is a federal holiday (or the day one is kept): %s', (date, holiday) => {
    expect(isHoliday(FEDERAL_HOLIDAYS, Date.parse(date))).toBe(holiday);
  });

  it('every state row names its statute and a window inside the federal one', () => {
    for (const r of STATE_RULES) {
      expect(r.source).toMatch(/§/);
      expect(r.hours[0] >= '08:00' && r.hours[1] <= '21:00').toBe(true);
    }
  });
});
