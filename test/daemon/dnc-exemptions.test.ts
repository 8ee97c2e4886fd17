// Exemptions from the Do Not Call registry and state lists, read from a contact's mapped dates: the periods of the
// table (consent until withdrawn, 18 months after a purchase, 3 months after an inquiry), the date forms CRMs send, and
// a date that cannot be read (or lies in the future) exempting nothing, with its reason.
import { describe, expect, it } from 'vitest';
import { addMonths, EXEMPTION_RULES, exemptAt, readDate, readExemption, UNTIL_WITHDRAWN } from '../../daemon/dnc/exemptions.ts';

const NOW = Date.parse('2026-11-29T12:00:00Z');
const FIELDS = { consent: 'consent', lastPurchase: 'bought', lastInquiry: 'asked' } as const;

describe('exemptions', () => {
  it('are data: each rule its field, its period and its source', () => {
    expect(EXEMPTION_RULES.map((r) => [r.field, r.months])).toEqual([['consent', null], ['lastPurchase', 18], ['lastInquiry', 3]]);
    for (const r of EXEMPTION_RULES) expect(r.source).toMatch(/16 CFR 310\./);
  });

  it('read a day, an ISO time with its offset and epoch milliseconds (HubSpot); a day counts from its first moment anywhere', () => {
    expect(readDate('2026-03-01')).toEqual({ at: Date.parse('2026-03-01T00:00:00+14:00'), day: true });
    expect(readDate('2026-03-01T09:30:00-05:00')).toEqual({ at: Date.parse('2026-03-01T14:30:00Z'), day: false });
    expect(readDate(1772323200000)).toEqual({ at: 1772323200000, day: false });
    expect(readDate('1772323200000')).toEqual({ at: 1772323200000, day: false });
    expect(readDate('2026-02-30')).toBe('not a calendar date');
    expect(readDate('March 1st')).toMatch(/^not a date/);
    expect(readDate(1.5)).toBe('not a date');
  });

  it('last 18 months after a purchase and 3 after an inquiry, a month\'s last day standing in for a day it lacks', () => {
    expect(new Date(addMonths(Date.parse('2025-08-31T00:00:00Z'), 18)).toISOString()).toBe('2027-02-28T00:00:00.000Z');
    expect(new Date(addMonths(Date.parse('2026-11-30T10:00:00Z'), 3)).toISOString()).toBe('2027-02-28T10:00:00.000Z');
    const bought = readExemption({ bought: '2025-06-15T00:00:00Z' }, FIELDS, NOW);
    expect(bought).toEqual({ exemption: { until: Date.parse('2026-12-15T00:00:00Z'), why: 'purchase of 2025-06-15T00:00:00.000Z (until 2026-12-15T00:00:00.000Z)' }, errors: [] });
    // Ended: no exemption, and no error.
    expect(readExemption({ bought: '2025-05-01' }, FIELDS, NOW)).toEqual({ exemption: null, errors: [] });
    expect(readExemption({ asked: '2026-09-15' }, FIELDS, NOW).exemption?.why).toBe(`inquiry of 2026-09-15 (until ${new Date(addMonths(Date.parse('2026-09-15T00:00:00+14:00'), 3)).toISOString()})`);
    expect(readExemption({ asked: '2026-08-28' }, FIELDS, NOW).exemption).toBeNull();
  });

  it('take the longest: consent until withdrawn over any period; emptied, it is withdrawn', () => {
    const both = readExemption({ consent: '2024-01-10', bought: '2026-11-01' }, FIELDS, NOW);
    expect(both.exemption).toEqual({ until: UNTIL_WITHDRAWN, why: 'written consent of 2024-01-10 (until withdrawn)' });
    expect(exemptAt(both.exemption!.until, NOW + 1e12)).toBe(true);
    expect(readExemption({ consent: '', bought: '2026-11-01' }, FIELDS, NOW).exemption?.why).toMatch(/^purchase of 2026-11-01/);
    expect(readExemption({ consent: null }, FIELDS, NOW).exemption).toBeNull();
    expect(exemptAt(undefined, NOW)).toBe(false);
    expect(exemptAt(NOW - 1, NOW)).toBe(false);
  });

  it('exempt nothing for a date that cannot be read or lies in the future, and say why', () => {
    const r = readExemption({ consent: 'yes please', bought: '2027-01-01', asked: { value: '2026-11-01' } }, FIELDS, NOW);
    expect(r.errors).toEqual([
      { field: 'consent', value: 'yes please', reason: expect.stringMatching(/^written consent date in field consent: not a date .*no written consent exemption from the Do Not Call lists until it reads as a date$/) },
      { field: 'bought', value: '2027-01-01', reason: expect.stringMatching(/^purchase date in field bought: a date in the future;/) },
    ]);
    // Pipedrive's {value} objects read as their value.
    expect(r.exemption?.why).toMatch(/^inquiry of 2026-11-01/);
  });
});
