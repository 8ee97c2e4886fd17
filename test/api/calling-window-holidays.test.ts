// Holidays as each state row's own source states them: every holiday of 2026 and 2027 (a table written from the
// statutes in test/support/state-holidays.ts) closed at midday local time for the rows whose source stops calls on
// holidays (Rhode Island, Louisiana), the nearest ordinary day before and after open, and the rows whose source names
// no holiday (Florida, Mississippi, Washington, Massachusetts) open on all of them.
import { describe, expect, it } from 'vitest';
import { STATE_RULES } from '../../api/calling-window/rules.ts';
import { callingWindow, DEFAULT_RULE_SET, holidayOn } from '../../api/calling-window/window.ts';
import { addDays, HOLIDAY_ROWS, localNoon, NO_HOLIDAY_ROWS, weekday } from '../support/state-holidays.ts';

const openAt = (zone: string, state: string, date: string) =>
  callingWindow({ zones: [zone], states: [state] }, DEFAULT_RULE_SET, localNoon(zone, date)).open;

describe.each(HOLIDAY_ROWS)('$state: holidays of 2026 and 2027', ({ state, zone, closed, open }) => {
  const holidays = new Set(closed.map(([d]) => d));
  /** The nearest day from `date` (stepping by `step`) that is neither in the table nor a Sunday (both rows close Sundays). */
  const ordinary = (date: string, step: number) => {
    let d = addDays(date, step);
    while (holidays.has(d) || weekday(d) === 0) d = addDays(d, step);
    return d;
  };

  it.each(closed)('%s (%s) is closed at midday', (date) => {
    expect(openAt(zone, state, date)).toBe(false);
  });

  it.each(closed)('the ordinary days before and after %s (%s) are open at midday', (date) => {
    expect([ordinary(date, -1), ordinary(date, 1)].map((d) => [d, openAt(zone, state, d)]))
      .toEqual([[ordinary(date, -1), true], [ordinary(date, 1), true]]);
  });

  it.each(open)('%s is open at midday: %s', (date) => {
    expect(openAt(zone, state, date)).toBe(true);
  });

  it('the row names every closed day, none else, with a statute for each', () => {
    const row = STATE_RULES.find((r) => r.state === state)!;
    for (const [date, why] of closed) {
      const h = holidayOn(row.holidays ?? [], Date.parse(date));
      // A table Sunday is closed by the row's days anyway; every other table day must be one of the row's holidays.
      if (weekday(date) !== 0) expect({ date, why, holiday: h !== undefined }).toEqual({ date, why, holiday: true });
      if (h) expect(h.source).toMatch(/§|U\.S\.C\.|Acts \d{4}/);
    }
    // Every weekday of 2026 and 2027 the row calls a holiday is in the table (nothing the statutes do not name).
    const extra: string[] = [];
    for (let d = '2026-01-01'; d <= '2027-12-31'; d = addDays(d, 1)) {
      if (weekday(d) !== 0 && holidayOn(row.holidays ?? [], Date.parse(d)) && !holidays.has(d)) extra.push(d);
    }
    expect(extra).toEqual([]);
  });
});

describe.each(NO_HOLIDAY_ROWS)('$state: its source names no holiday', ({ state, zone }) => {
  const dates = [...new Set(HOLIDAY_ROWS.flatMap((r) => r.closed.map(([d]) => d)))].filter((d) => d < '2028-01-01').sort();

  it('holds no holidays', () => {
    expect(STATE_RULES.find((r) => r.state === state)!.holidays).toEqual([]);
  });

  it('is open at midday on every holiday of Rhode Island and Louisiana in 2026 and 2027 (Mississippi: but Sundays)', () => {
    const asked = dates.filter((d) => !(state === 'MS' && weekday(d) === 0));
    expect(asked.length).toBeGreaterThan(40);
    expect(asked.filter((d) => !openAt(zone, state, d))).toEqual([]);
  });
});

describe('the kinds of holiday', () => {
  const ri = STATE_RULES.find((r) => r.state === 'RI')!.holidays!;
  const la = STATE_RULES.find((r) => r.state === 'LA')!.holidays!;
  it.each([
    // Easter-relative days across years: Easter 2025 20 April, 2028 16 April, 2038 25 April (the latest of the century).
    [la, '2025-03-04', 'Mardi Gras'], [la, '2025-04-18', 'Good Friday'], [la, '2028-02-29', 'Mardi Gras'],
    [la, '2028-04-14', 'Good Friday'], [la, '2038-03-09', 'Mardi Gras'], [la, '2038-04-23', 'Good Friday'],
    // Election day in even years only: 2028's first Monday of November is the 6th.
    [ri, '2028-11-07', 'election day'], [ri, '2029-11-06', undefined], [la, '2030-11-05', 'general election day'],
    // Rhode Island's Saturday holiday kept on the following Monday, Sunday's on the day after.
    [ri, '2032-12-27', 'Christmas Day'], [ri, '2027-05-03', undefined],
  ] as const)('%#: %s is %s', (holidays, date, name) => {
    expect(holidayOn(holidays, Date.parse(date))?.name).toBe(name);
  });
});
