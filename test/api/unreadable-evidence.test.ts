// Evidence that cannot be read never widens a window, and a number with no place has one answer: a time zone, state
// or postal code the rules cannot read is named (`unread`) and makes every readable piece count, under `best` too;
// a toll-free or other non-geographic NANP number, or an area code newer than the map, that alone places the callee
// holds it to every zone of its country and every state row of it, with the reason; a number of no country (+800,
// +881) has no window. What that costs in open hours, measured minute by minute over two weeks.
import { describe, expect, it } from 'vitest';
import { heldBecause, placeCallee, type DialedNumber, type Evidence, type LocationFields } from '../../api/calling-window/locate.ts';
import { NON_GEOGRAPHIC_AREA_CODES } from '../../api/calling-window/non-geographic.ts';
import { NEW_AREA_CODE_COUNTRIES } from '../../api/calling-window/number-plan.ts';
import { CA_REGION_ZONES, US_REGION_ZONES } from '../../api/calling-window/regions.ts';
import { STATE_RULES } from '../../api/calling-window/rules.ts';
import { callingWindow, DEFAULT_RULE_SET } from '../../api/calling-window/window.ts';

const nanp = (digits: string): DialedNumber => ({ callingCode: '1', nationalNumber: digits, valid: true });
const place = (digits: string, fields: LocationFields = {}, evidence: Evidence = 'all') => placeCallee(nanp(digits), fields, evidence);
const US_ZONES = [...new Set(Object.entries(US_REGION_ZONES).filter(([c]) => !['GU', 'MP', 'AS', 'PR', 'VI'].includes(c)).flatMap(([, z]) => z))].sort();
const ROWS = STATE_RULES.map((r) => r.state).sort();

/** Hours open per local day (Monday first), checked every 5 minutes from `start` for `days` days. */
function openHours(l: Parameters<typeof callingWindow>[0], start: string, days: number): number[] {
  return Array.from({ length: days }, (_, d) => {
    let minutes = 0;
    for (let m = 0; m < 1440; m += 5) if (callingWindow(l, DEFAULT_RULE_SET, Date.parse(start) + d * 86_400_000 + m * 60_000).open) minutes += 5;
    return minutes / 60;
  });
}

describe('unreadable evidence is named and never widens a window', () => {
  it.each([
    // fields, evidence, zones, the fields unread
    [{ timeZone: 'Mars/Base' }, 'all', ['America/New_York'], ['timeZone']],
    [{ timeZone: 'EST' }, 'best', ['America/New_York'], ['timeZone']],
    // Under `best` an address would decide alone; an unreadable time zone says the callee may be elsewhere: both count.
    [{ timeZone: 'Mars/Base', region: 'CA' }, 'best', ['America/Los_Angeles', 'America/New_York'], ['timeZone']],
    [{ region: 'CA' }, 'best', ['America/Los_Angeles'], []],
    // A state that is no state: the ZIP code places the callee, the number counts too.
    [{ region: 'Narnia', postalCode: '96813' }, 'best', ['America/New_York', 'Pacific/Honolulu'], ['region']],
    [{ region: 'Narnia', country: 'US' }, 'all', ['America/New_York'], ['region']],
    [{ postalCode: '00000' }, 'all', ['America/New_York'], ['postalCode']],
    [{ postalCode: '09001' }, 'all', ['America/New_York'], ['postalCode']], // military mail: no zones
    [{ postalCode: 'ABC' }, 'all', ['America/New_York'], ['postalCode']],
    [{ postalCode: 'X0A 0H0' }, 'all', ['America/New_York'], ['postalCode']], // NT or NU: no one province
    [{ timeZone: 'Mars/Base', region: 'Narnia', postalCode: '1' }, 'all', ['America/New_York'], ['timeZone', 'region', 'postalCode']],
    // Another country's region and postal code are not evidence the rules read: no error.
    [{ region: 'Bayern', postalCode: '80331', country: 'DE' }, 'all', ['America/New_York'], []],
  ] as const)('212 with %j under %s → %j, unread %j', (fields, evidence, zones, unread) => {
    const l = place('2125550123', fields, evidence);
    expect(l.zones).toEqual(zones);
    expect(l.unread.map((u) => u.field)).toEqual(unread);
    for (const u of l.unread) expect(l.evidence).toContain(u.said);
    expect(heldBecause(l) === null).toBe(unread.length === 0);
  });
});

describe('a number with no place', () => {
  it('every non-geographic code libphonenumber gives a country holds a callee nothing else places to every zone of that country, with the reason', () => {
    const codes = Object.keys(NON_GEOGRAPHIC_AREA_CODES).filter((c) => NEW_AREA_CODE_COUNTRIES[c]);
    expect(codes).toEqual(expect.arrayContaining(['800', '833', '844', '855', '866', '877', '888', '500', '900', '600']));
    for (const code of codes) {
      const l = place(`${code}2345670`);
      const us = NEW_AREA_CODE_COUNTRIES[code] === 'US';
      expect([code, l.zones]).toEqual([code, us ? US_ZONES : [...new Set(Object.values(CA_REGION_ZONES).flat())].sort()]);
      expect([code, l.states]).toEqual([code, us ? ROWS : []]);
      expect(l.noPlace).toBe(`${NON_GEOGRAPHIC_AREA_CODES[code]}: no place`);
      expect(l.evidence).toMatch(new RegExp(`^area code ${code} \\(${NON_GEOGRAPHIC_AREA_CODES[code]}\\) names no place; every zone of ${us ? 'US' : 'CA'}: `));
      expect(heldBecause(l)).toMatch(/no place, so the callee is held to every zone of its country and every state row of it/);
    }
    expect(place('8002345670').noPlace).toBe('toll-free: no place');
    expect(place('9002345670').noPlace).toBe('premium-rate service: no place');
  });

  it('an area code newer than the map is the same answer, with its own reason', () => {
    const l = place('2732345670');
    expect(l).toMatchObject({ noPlace: 'not in the time-zone map: no place', states: [] });
    expect(l.zones).toEqual([...new Set(Object.values(CA_REGION_ZONES).flat())].sort());
  });

  it('other evidence places the callee: the number does not count', () => {
    for (const fields of [{ region: 'CA' }, { timeZone: 'america_slash_los_angeles' }, { postalCode: '90210' }]) {
      const l = place('8002345670', fields);
      expect(l.zones).toEqual(['America/Los_Angeles']);
      expect(l.noPlace).toBeNull();
      expect(l.evidence).toMatch(/area code 800 \(toll-free\) names no place \(not counted: other evidence places the callee\)$/);
    }
    // Unreadable evidence beside it: nothing readable places the callee, so every zone and state row holds.
    expect(place('8002345670', { timeZone: 'Mars/Base' })).toMatchObject({ zones: US_ZONES, states: ROWS, noPlace: 'toll-free: no place' });
  });

  it('a number of no country, or an area code no plan assigns, has no window', () => {
    expect(placeCallee({ callingCode: '800', nationalNumber: '12345678', valid: true })).toMatchObject({ zones: [], noPlace: null });
    expect(placeCallee({ callingCode: '881', nationalNumber: '612345678', valid: true })).toMatchObject({ zones: [], noPlace: null });
    const l = place('7002345670');
    expect(l).toMatchObject({ zones: [], noPlace: null, evidence: 'area code 700 (carrier service) names no place and no country' });
    expect(callingWindow(l, DEFAULT_RULE_SET, Date.parse('2026-01-14T20:00:00Z')).open).toBe(false);
  });

  it('what it costs: 4 hours a weekday in winter, 3 in summer, Saturday 2 and 1, no Sunday, where a placed callee has 13 a day; Canada\'s 600 8.5', () => {
    const tollFree = place('8002345670');
    // Monday 12 January and Monday 13 July 2026, from 10:00 UTC (05:00 in New York, 00:00 in Honolulu): local days.
    expect(openHours(tollFree, '2026-01-12T10:00:00Z', 7)).toEqual([4, 4, 4, 4, 4, 2, 0]);
    expect(openHours(tollFree, '2026-07-13T10:00:00Z', 7)).toEqual([3, 3, 3, 3, 3, 1, 0]);
    expect(openHours(place('8082345670'), '2026-01-12T10:00:00Z', 7)).toEqual([13, 13, 13, 13, 13, 13, 13]);
    // Canada's 600: every Canadian zone, no state row: 08:00 in Vancouver and Whitehorse to 21:00 in St. John's.
    expect(openHours(place('6002345670'), '2026-01-12T10:00:00Z', 7)).toEqual([8.5, 8.5, 8.5, 8.5, 8.5, 8.5, 8.5]);
    // 19:00–23:00 UTC in January: 09:00 in Honolulu (Rhode Island's row) to 18:00 in New York.
    const w = callingWindow(tollFree, DEFAULT_RULE_SET, Date.parse('2026-01-14T20:00:00Z'));
    expect(w).toMatchObject({ open: true, closesAt: Date.parse('2026-01-14T23:00:00Z'), opensAt: Date.parse('2026-01-15T19:00:00Z') });
  });
});
