// The holidays of 2026 and 2027 on which each state row stops calls, written by hand from the statutes the rows cite
// (dates counted on a calendar, not by the code under test), with the days that look like holidays and are not.

/** A row's callee (a number the row's area code places, its one zone) and its closed days: [date, why]. */
export interface HolidayRow { state: string; phone: string; zone: string; closed: readonly (readonly [date: string, why: string])[]; open: readonly (readonly [date: string, why: string])[] }

export const HOLIDAY_ROWS: readonly HolidayRow[] = [
  {
    // R.I. Gen. Laws § 5-61-2: "a state or federal holiday". Federal: 5 U.S.C. 6103(a), a Saturday's kept on the
    // Friday before, a Sunday's on the Monday after. State: § 25-1-1, New Year's, 4 July, 11 November and Christmas
    // on a Saturday or Sunday kept on the following Monday; election day in even years (§ 17-1-2(2)).
    state: 'RI', phone: '+14015550123', zone: 'America/New_York',
    closed: [
      ['2026-01-01', "New Year's Day"], ['2026-01-19', 'Martin Luther King, Jr. Day'], ['2026-02-16', "Washington's Birthday"],
      ['2026-05-04', 'Rhode Island Independence Day'], ['2026-05-25', 'Memorial Day'], ['2026-06-19', 'Juneteenth (federal)'],
      ['2026-07-03', 'Independence Day (Saturday) kept by federal offices'], ['2026-07-04', 'Independence Day'],
      ['2026-07-06', 'Independence Day (Saturday) kept by the state'], ['2026-08-10', 'Victory Day'], ['2026-09-07', 'Labor Day'],
      ['2026-10-12', 'Columbus Day'], ['2026-11-03', 'election day'], ['2026-11-11', "Veterans' Day"],
      ['2026-11-26', 'Thanksgiving Day (federal)'], ['2026-12-25', 'Christmas Day'],
      ['2027-01-01', "New Year's Day"], ['2027-01-18', 'Martin Luther King, Jr. Day'], ['2027-02-15', "Washington's Birthday"],
      ['2027-05-04', 'Rhode Island Independence Day'], ['2027-05-31', 'Memorial Day'],
      ['2027-06-18', 'Juneteenth (Saturday) kept by federal offices'], ['2027-06-19', 'Juneteenth (federal)'],
      ['2027-07-04', 'Independence Day (a Sunday)'], ['2027-07-05', 'Independence Day (Sunday) kept'], ['2027-08-09', 'Victory Day'],
      ['2027-09-06', 'Labor Day'], ['2027-10-11', 'Columbus Day'], ['2027-11-11', "Veterans' Day"],
      ['2027-11-25', 'Thanksgiving Day (federal)'], ['2027-12-24', 'Christmas Day (Saturday) kept by federal offices'],
      ['2027-12-25', 'Christmas Day'], ['2027-12-27', 'Christmas Day (Saturday) kept by the state'],
      ['2027-12-31', "New Year's Day 2028 (Saturday) kept by federal offices"],
      // Beyond the two years, so that the ordinary days around them are known.
      ['2028-01-01', "New Year's Day"], ['2028-01-03', "New Year's Day (Saturday) kept by the state"],
    ],
    open: [['2027-11-02', 'no general election in an odd year'], ['2026-05-05', 'the day after Rhode Island Independence Day']],
  },
  {
    // La. Rev. Stat. § 45:811(3): no calls on days declared to be a state holiday. § 1:55(A)(1)'s list, Mardi Gras and
    // Good Friday; § 1:55(E)(1)(a)(i)'s clerks' days (the Friday after Thanksgiving, Christmas Eve, New Year's Eve; New
    // Year's, 4 July and Christmas on a Saturday kept the Friday before, on a Sunday the Monday after); Juneteenth Day
    // (the third Saturday of June, § 1:58.2; its Friday; 19 June); the even-year general election day (§ 1:55(B)).
    state: 'LA', phone: '+15045550123', zone: 'America/Chicago',
    closed: [
      ['2026-01-01', "New Year's Day"], ['2026-01-08', 'Battle of New Orleans'], ['2026-01-19', 'Martin Luther King, Jr. Day'],
      ['2026-02-16', "Washington's Birthday"], ['2026-02-17', 'Mardi Gras (Easter 5 April)'], ['2026-04-03', 'Good Friday'],
      ['2026-05-25', 'National Memorial Day'], ['2026-06-19', 'Juneteenth: 19 June, and the Friday before Juneteenth Day'],
      ['2026-06-20', 'Juneteenth Day (third Saturday of June)'], ['2026-07-03', 'Independence Day (Saturday) kept'],
      ['2026-07-04', 'Independence Day'], ['2026-08-30', 'Huey P. Long Day (a Sunday)'], ['2026-09-07', 'Labor Day'],
      ['2026-10-12', 'Christopher Columbus Day'], ['2026-11-01', "All Saints' Day (a Sunday)"], ['2026-11-03', 'general election day'],
      ['2026-11-11', "Veterans' Day"], ['2026-11-26', 'Thanksgiving Day'], ['2026-11-27', 'the Friday after Thanksgiving'],
      ['2026-12-24', 'Christmas Eve Day'], ['2026-12-25', 'Christmas Day'], ['2026-12-31', "New Year's Eve Day"],
      ['2027-01-01', "New Year's Day"], ['2027-01-08', 'Battle of New Orleans'], ['2027-01-18', 'Martin Luther King, Jr. Day'],
      ['2027-02-09', 'Mardi Gras (Easter 28 March)'], ['2027-02-15', "Washington's Birthday"], ['2027-03-26', 'Good Friday'],
      ['2027-05-31', 'National Memorial Day'], ['2027-06-18', 'the Friday before Juneteenth Day'],
      ['2027-06-19', 'Juneteenth Day (third Saturday of June) and 19 June'], ['2027-07-04', 'Independence Day (a Sunday)'],
      ['2027-07-05', 'Independence Day (Sunday) kept'], ['2027-08-30', 'Huey P. Long Day'], ['2027-09-06', 'Labor Day'],
      ['2027-10-11', 'Christopher Columbus Day'], ['2027-11-01', "All Saints' Day"], ['2027-11-11', "Veterans' Day"],
      ['2027-11-25', 'Thanksgiving Day'], ['2027-11-26', 'the Friday after Thanksgiving'],
      ['2027-12-24', 'Christmas Eve Day, and Christmas (Saturday) kept'], ['2027-12-25', 'Christmas Day'],
      ['2027-12-31', "New Year's Eve Day, and New Year's Day 2028 (Saturday) kept"],
      // Beyond the two years, so that the ordinary days around them are known; and an inauguration.
      ['2025-12-31', "New Year's Eve Day"], ['2028-01-01', "New Year's Day"], ['2028-01-08', 'Battle of New Orleans'],
      ['2028-01-10', 'Inauguration Day (the second Monday of January after the 2027 election)'],
    ],
    open: [
      ['2027-11-02', 'no general election in an odd year'], ['2027-01-11', 'no inauguration in 2027'],
      ['2026-11-12', "the day after Veterans' Day (no weekend rule for it)"],
    ],
  },
];

/** Rows whose sources name no holiday: open at midday on every holiday above (Mississippi: not on a Sunday). */
export const NO_HOLIDAY_ROWS = [
  { state: 'FL', phone: '+13055550123', zone: 'America/New_York' },
  { state: 'MS', phone: '+16015550123', zone: 'America/Chicago' },
  { state: 'WA', phone: '+12065550123', zone: 'America/Los_Angeles' },
  { state: 'MA', phone: '+16175550123', zone: 'America/New_York' },
] as const;

/** The instant a zone's clock reads 12:00 on a date (read with Intl, not with the rules' own clock code). */
export function localNoon(zone: string, date: string): number {
  const guess = Date.parse(`${date}T12:00:00Z`);
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-US', {
    timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
  }).formatToParts(guess).map((p) => [p.type, Number(p.value)]));
  const shown = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!);
  return guess - (shown - guess);
}

/** A date `days` away (YYYY-MM-DD) and its weekday (0: Sunday). */
export const addDays = (date: string, days: number) => new Date(Date.parse(date) + days * 86_400_000).toISOString().slice(0, 10);
export const weekday = (date: string) => new Date(Date.parse(date)).getUTCDay();
