// Every name of the tz database reads as a callee's time zone, as CRMs write it: each zone and link of tzdata (the
// generated list in fixtures/tz-names.ts: Asia/Kolkata beside Asia/Calcutta, America/Indiana/Indianapolis, US/Eastern)
// and every name the runtime lists, plainly in any case and in HubSpot's hs_timezone spelling, gives the runtime's own
// name of that zone; names of no zone, offsets and the fixed-offset abbreviations EST, MST and HST read as none.
import { describe, expect, it } from 'vitest';
import { placeCallee, readTimeZone } from '../../api/calling-window/locate.ts';
import { TZ_NAMES, TZ_NAMES_REFUSED } from './fixtures/tz-names.ts';

/** HubSpot's option value of an IANA name: `America/Port-au-Prince` → `america_slash_port_minus_au_minus_prince`. */
const hubspot = (name: string) => name.toLowerCase().replaceAll('/', '_slash_').replaceAll('-', '_minus_').replaceAll('+', '_plus_');
const ABBREVIATIONS = ['EST', 'MST', 'HST'];

describe('every name of the tz database reads', () => {
  it('the generated list holds the links the runtime does not list', () => {
    const listed = new Set(Intl.supportedValuesOf('timeZone'));
    const links = TZ_NAMES.filter(([name]) => !listed.has(name)).map(([name]) => name);
    expect(TZ_NAMES.length).toBeGreaterThan(590);
    expect(links.length).toBeGreaterThan(170);
    for (const name of ['Asia/Kolkata', 'Europe/Kyiv', 'America/Indiana/Indianapolis', 'America/Kentucky/Louisville', 'America/Argentina/Buenos_Aires', 'US/Eastern']) {
      expect(links).toContain(name);
    }
  });

  it('each zone and link, in HubSpot\'s spelling, plainly, upper and lower case, gives the runtime\'s name of its zone', () => {
    const wrong: string[] = [];
    let read = 0;
    for (const [name, zone] of TZ_NAMES) {
      if (ABBREVIATIONS.includes(name)) continue;
      for (const form of [hubspot(name), hubspot(name).toUpperCase(), name, name.toLowerCase(), name.toUpperCase(), ` ${name} `]) {
        const got = readTimeZone(form);
        if (got !== zone) wrong.push(`${form} → ${got} (want ${zone})`);
        else read++;
      }
    }
    expect(wrong.slice(0, 10)).toEqual([]);
    expect(read).toBe((TZ_NAMES.length - ABBREVIATIONS.length) * 6);
  });

  it('every name the runtime lists reads in HubSpot\'s spelling as itself', () => {
    const wrong = Intl.supportedValuesOf('timeZone').filter((z) => readTimeZone(hubspot(z)) !== z);
    expect(wrong).toEqual([]);
  });

  it('the names of the issue read as their zones, and place the callee', () => {
    expect(readTimeZone('america_slash_indiana_slash_indianapolis')).toBe('America/Indianapolis');
    expect(readTimeZone('america_slash_kentucky_slash_louisville')).toBe('America/Louisville');
    expect(readTimeZone('asia_slash_kolkata')).toBe('Asia/Calcutta');
    expect(readTimeZone('EUROPE_SLASH_KYIV')).toBe('Europe/Kiev');
    expect(readTimeZone('america_slash_argentina_slash_buenos_aires')).toBe(readTimeZone('America/Buenos_Aires'));
    // A Hawaii number whose contact lives in Indianapolis: both clocks, no unreadable evidence.
    const l = placeCallee({ callingCode: '1', nationalNumber: '8082345670', valid: true }, { timeZone: 'america_slash_indiana_slash_indianapolis' });
    expect(l).toMatchObject({ zones: ['America/Indianapolis', 'Pacific/Honolulu'], unread: [], noPlace: null, from: 'field' });
  });

  it('names of no zone, offsets and fixed-offset abbreviations read as none', () => {
    for (const text of [...ABBREVIATIONS, 'est', 'hst', 'Mars/Base', 'america_slash_nowhere', '-05:00', '+0100', 'UTC-5', '', '   ', ...TZ_NAMES_REFUSED, 'x'.repeat(65)]) {
      expect([text, readTimeZone(text)]).toEqual([text, undefined]);
    }
  });
});
