// Data: the calling-time rules, each row with its source. The federal window applies to every callee; a state's row
// applies to callees in that state (from the address, or presumed from one of its area codes); the operator's own
// window narrows them all. Only rows whose statute text was read are here (see docs/calling-windows.md for those left out).

export type Weekday = 'sun' | 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat';
export const WEEKDAYS: readonly Weekday[] = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

/** Local wall-clock times `HH:MM`, from inclusive, to exclusive: a call may start at `from`, not at `to`. */
export type Hours = readonly [from: string, to: string];

/**
 * A holiday as its statute names it: a fixed date, the nth weekday of a month (n = -1: the last), or a day counted from
 * Easter Sunday (Good Friday: -2, Mardi Gras: -47); then moved `shift` days (the Tuesday after the first Monday of
 * November: the first Monday, +1); only in the years `years` names (`{ every: 2, from: 2024 }`: the even years).
 * `observed`: the days the statute moves it by when it falls on a Saturday or a Sunday (a Saturday's to the Friday
 * before: -1, to the Monday after: 2); the day itself stays a holiday too (fail closed). None: kept on its day only.
 */
export type Holiday = ({ month: number; day: number } | { month: number; weekday: Weekday; nth: number } | { easter: number }) & {
  name: string;
  /** The statute (or the act that made it one) naming the day, and the one that moves it, if another. */
  source: string;
  shift?: number;
  years?: { every: number; from: number };
  observed?: { sat?: number; sun?: number };
};

export interface WindowRule {
  /** Who set the rule, for the evidence an operator reads ("Florida", "federal", "operator"). */
  name: string;
  /** The statute or setting the row comes from. */
  source: string;
  /** Hours every day unless `days` says otherwise. */
  hours: Hours;
  /** Hours per weekday; `null`: no calls that day. */
  days?: Partial<Record<Weekday, Hours | null>>;
  /** Days without calls: the holidays the row's own source stops calls on, each with its statute. */
  holidays?: readonly Holiday[];
  /** At most `calls` calls to one number in any `hours` hours. */
  cap?: { calls: number; hours: number };
  /**
   * The clocks the hours and days are read on: `callee` (the callee's local time, the default) and fixed IANA zones
   * (Mississippi's "Central Standard Time" all year is `Etc/GMT+6`). A call must be inside on every one of them.
   */
  clocks?: readonly string[];
}

export interface StateRule extends WindowRule {
  /** USPS code. */
  state: string;
  /** Area codes whose callees are presumed to be in the state when their address says nothing (NANPA assignments). */
  areaCodes: readonly string[];
}

/** 47 CFR 64.1200(c)(1): no telephone solicitation before 8 a.m. or after 9 p.m., the called party's local time. */
export const FEDERAL: WindowRule = {
  name: 'federal (TCPA)',
  source: '47 CFR 64.1200(c)(1)',
  hours: ['08:00', '21:00'],
};

/**
 * Federal legal public holidays, 5 U.S.C. 6103(a), each kept on the weekday federal offices keep it: a Saturday's on
 * the Friday before (5 U.S.C. 6103(b)(1)), a Sunday's on the Monday after (Executive Order 11582, as OPM applies it).
 */
const FEDERAL_LAW = '5 U.S.C. 6103(a); kept on the Friday before a Saturday, the Monday after a Sunday: 6103(b), E.O. 11582';
const FEDERAL_KEPT = { sat: -1, sun: 1 };
export const FEDERAL_HOLIDAYS: readonly Holiday[] = [
  { name: "New Year's Day", month: 1, day: 1, observed: FEDERAL_KEPT, source: FEDERAL_LAW },
  { name: 'Birthday of Martin Luther King, Jr.', month: 1, weekday: 'mon', nth: 3, source: FEDERAL_LAW },
  { name: "Washington's Birthday", month: 2, weekday: 'mon', nth: 3, source: FEDERAL_LAW },
  { name: 'Memorial Day', month: 5, weekday: 'mon', nth: -1, source: FEDERAL_LAW },
  { name: 'Juneteenth National Independence Day', month: 6, day: 19, observed: FEDERAL_KEPT, source: FEDERAL_LAW },
  { name: 'Independence Day', month: 7, day: 4, observed: FEDERAL_KEPT, source: FEDERAL_LAW },
  { name: 'Labor Day', month: 9, weekday: 'mon', nth: 1, source: FEDERAL_LAW },
  { name: 'Columbus Day', month: 10, weekday: 'mon', nth: 2, source: FEDERAL_LAW },
  { name: 'Veterans Day', month: 11, day: 11, observed: FEDERAL_KEPT, source: FEDERAL_LAW },
  { name: 'Thanksgiving Day', month: 11, weekday: 'thu', nth: 4, source: FEDERAL_LAW },
  { name: 'Christmas Day', month: 12, day: 25, observed: FEDERAL_KEPT, source: FEDERAL_LAW },
];

/**
 * Rhode Island's holidays, R.I. Gen. Laws § 25-1-1 ("General holidays enumerated"). New Year's Day, Independence
 * Day, Veterans' Day and Christmas on a Saturday or a Sunday are kept by state employees on the following Monday;
 * every day of the list on a Sunday, the day following it. Election day is the Tuesday after the first Monday of
 * November in a year of a general election of state officers: even years (§ 17-1-2(2)). Not here: Sundays (the row
 * has none), and days the governor, the General Assembly, the President or Congress appoint, known only when appointed.
 */
const RI_LAW = 'R.I. Gen. Laws § 25-1-1';
const RI_KEPT = { sat: 2, sun: 1 };
const RI_HOLIDAYS: readonly Holiday[] = [
  { name: "New Year's Day", month: 1, day: 1, observed: RI_KEPT, source: RI_LAW },
  { name: "Dr. Martin Luther King, Jr.'s Birthday", month: 1, weekday: 'mon', nth: 3, source: RI_LAW },
  { name: "Washington's Birthday", month: 2, weekday: 'mon', nth: 3, source: RI_LAW },
  { name: 'Rhode Island Independence Day', month: 5, day: 4, observed: { sun: 1 }, source: RI_LAW },
  { name: 'Memorial Day', month: 5, weekday: 'mon', nth: -1, source: RI_LAW },
  { name: 'Independence Day', month: 7, day: 4, observed: RI_KEPT, source: RI_LAW },
  { name: 'Victory Day', month: 8, weekday: 'mon', nth: 2, source: RI_LAW },
  { name: 'Labor Day', month: 9, weekday: 'mon', nth: 1, source: RI_LAW },
  { name: 'Columbus Day', month: 10, weekday: 'mon', nth: 2, source: RI_LAW },
  { name: "Veterans' Day", month: 11, day: 11, observed: RI_KEPT, source: RI_LAW },
  { name: 'Christmas Day', month: 12, day: 25, observed: RI_KEPT, source: RI_LAW },
  {
    name: 'election day', month: 11, weekday: 'mon', nth: 1, shift: 1, years: { every: 2, from: 2024 },
    source: `${RI_LAW} (the Tuesday next after the first Monday in November of a general election of state officers); R.I. Gen. Laws § 17-1-2(2) (general elections: even-numbered years)`,
  },
];

/**
 * Louisiana's state holidays, fail closed: every day La. Rev. Stat. § 1:55 makes a legal holiday anywhere in the state
 * or for its offices, as a day that may be "a state holiday" (§ 45:811(3)). § 1:55(A)(1) (read on legis.la.gov): its
 * list, Mardi Gras and Good Friday (from Easter) and Inauguration Day in Baton Rouge (a parish's day, kept statewide:
 * the governor's, the second Monday of January after the election, La. Const. art. IV, § 3, every 4 years from
 * 2024). § 1:55(E)(1)(a)(i) (read as quoted by clerks' offices and the press): the days the clerks of court close,
 * adding the Friday after Thanksgiving, Christmas Eve and New Year's Eve, and keeping New Year's Day, Independence
 * Day and Christmas on the Friday before a Saturday, the Monday after a Sunday (the others: on their day, as § 1:55
 * says no more). Juneteenth Day: the third Saturday of June (§ 1:58.2(B)), a legal holiday by Acts 2021, No. 128,
 * kept by state offices on the Friday before, and 19 June as the governor proclaimed it in 2024. The even-year
 * general election day of § 1:55(B) was read only in summaries (FindLaw, parish notices), and kept. Not here: the
 * Saturdays that § 1:55(A)(1) makes legal holidays in Orleans Parish, Baton Rouge and other parishes (§ 45:811(2)
 * itself allows calls "Monday through Saturday"), festival Fridays of single parishes (§ 1:55(E)(1)(g) and the like:
 * their dates are the festivals'), and days the governor proclaims or emergencies declared, known only then.
 */
const LA_LAW = 'La. Rev. Stat. § 1:55(A)(1)';
const LA_CLERKS = 'La. Rev. Stat. § 1:55(E)(1)(a)(i)';
const LA_KEPT = { sat: -1, sun: 1 };
const LA_HOLIDAYS: readonly Holiday[] = [
  { name: "New Year's Day", month: 1, day: 1, observed: LA_KEPT, source: `${LA_LAW}; kept on the Friday before a Saturday, the Monday after a Sunday: ${LA_CLERKS}` },
  { name: 'Battle of New Orleans', month: 1, day: 8, source: LA_LAW },
  { name: "Dr. Martin Luther King, Jr.'s Birthday", month: 1, weekday: 'mon', nth: 3, source: LA_LAW },
  { name: "Washington's Birthday and Presidents' Day", month: 2, weekday: 'mon', nth: 3, source: LA_LAW },
  { name: 'Mardi Gras', easter: -47, source: LA_LAW },
  { name: 'Good Friday', easter: -2, source: LA_LAW },
  { name: 'National Memorial Day', month: 5, weekday: 'mon', nth: -1, source: LA_LAW },
  { name: 'Juneteenth Day', month: 6, weekday: 'sat', nth: 3, source: 'La. Rev. Stat. § 1:58.2(B); a legal holiday by Acts 2021, No. 128' },
  { name: 'Juneteenth Day, kept by state offices the Friday before', month: 6, weekday: 'sat', nth: 3, shift: -1, source: "Acts 2021, No. 128, as the governor's office applies it" },
  { name: 'Juneteenth (19 June), as proclaimed in 2024', month: 6, day: 19, source: "the governor's proclamation under La. Rev. Stat. § 1:55(B)" },
  { name: 'Independence Day', month: 7, day: 4, observed: LA_KEPT, source: `${LA_LAW}; kept on the Friday before a Saturday, the Monday after a Sunday: ${LA_CLERKS}` },
  { name: 'Huey P. Long Day', month: 8, day: 30, source: LA_LAW },
  { name: 'Labor Day', month: 9, weekday: 'mon', nth: 1, source: LA_LAW },
  { name: 'Christopher Columbus Day', month: 10, weekday: 'mon', nth: 2, source: LA_LAW },
  { name: "All Saints' Day", month: 11, day: 1, source: LA_LAW },
  { name: 'general election day', month: 11, weekday: 'mon', nth: 1, shift: 1, years: { every: 2, from: 2024 }, source: 'La. Rev. Stat. § 1:55(B) (even-numbered years; read in summaries only)' },
  { name: "Veterans' Day", month: 11, day: 11, source: LA_LAW },
  { name: 'Thanksgiving Day', month: 11, weekday: 'thu', nth: 4, source: LA_LAW },
  { name: 'the Friday after Thanksgiving', month: 11, weekday: 'thu', nth: 4, shift: 1, source: LA_CLERKS },
  { name: 'Christmas Eve Day', month: 12, day: 24, source: LA_CLERKS },
  { name: 'Christmas Day', month: 12, day: 25, observed: LA_KEPT, source: `${LA_LAW}; kept on the Friday before a Saturday, the Monday after a Sunday: ${LA_CLERKS}` },
  { name: "New Year's Eve Day", month: 12, day: 31, source: LA_CLERKS },
  {
    name: 'Inauguration Day in the city of Baton Rouge', month: 1, weekday: 'mon', nth: 2, years: { every: 4, from: 2024 },
    source: `${LA_LAW}; the governor's term begins the second Monday of January after the election: La. Const. art. IV, § 3`,
  },
];

export const STATE_RULES: readonly StateRule[] = [
  {
    state: 'FL', name: 'Florida',
    source: 'Fla. Stat. § 501.616(6)(a) (8 a.m.–8 p.m. in the called person\'s time zone) and (6)(b) (at most 3 calls in 24 hours on the same subject), as amended by 2021 SB 1120',
    hours: ['08:00', '20:00'],
    cap: { calls: 3, hours: 24 },
    // No holidays: § 501.616(6) names hours only.
    holidays: [],
    areaCodes: ['239', '305', '321', '324', '352', '386', '407', '448', '561', '645', '656', '689', '727', '728', '754', '772', '786', '813', '850', '863', '904', '941', '954'],
  },
  {
    state: 'RI', name: 'Rhode Island',
    source: 'R.I. Gen. Laws § 5-61-3.6 (calls only during hours of operation) and § 5-61-2 ("hours of operation": Monday–Friday 9 a.m.–6 p.m. except a state or federal holiday, Saturday 10 a.m.–5 p.m.)',
    hours: ['09:00', '18:00'],
    days: { sat: ['10:00', '17:00'], sun: null },
    // "A state or federal holiday": both lists, each day kept where its own statute keeps it (4 July 2026, a
    // Saturday: federal offices keep it on Friday the 3rd, Rhode Island's on Monday the 6th; all three are holidays).
    holidays: [...FEDERAL_HOLIDAYS, ...RI_HOLIDAYS],
    areaCodes: ['401'],
  },
  {
    state: 'LA', name: 'Louisiana',
    source: 'La. Rev. Stat. § 45:811(2), (3) (calls by automatic dialer or live operator offering goods, services or property for personal, family or household use: only 8:00 a.m.–8:00 p.m., Monday through Saturday; not on days declared to be a state holiday, nor Sundays)',
    hours: ['08:00', '20:00'],
    days: { sun: null },
    holidays: LA_HOLIDAYS,
    areaCodes: ['225', '318', '337', '504', '985'],
  },
  {
    state: 'MS', name: 'Mississippi',
    // "Central Standard Time" is read both as the callee's clock and as standard time all year: in summer 8 a.m. CST
    // is 9 a.m. CDT, so calls go from 09:00 to 20:00 CDT, from 08:00 in winter.
    source: 'Miss. Code Ann. § 77-3-723(1) (telephone solicitations only between 8:00 a.m. and 8:00 p.m. Central Standard Time; none on a Sunday)',
    hours: ['08:00', '20:00'],
    days: { sun: null },
    clocks: ['callee', 'Etc/GMT+6'],
    // No holidays: § 77-3-723(1) bars Sundays only (the Public Service Commission's rule that also barred legal
    // holidays, 39 Miss. Admin. Code Pt. I, R. 1:28, is reported repealed since the Act's enforcement went to the
    // Attorney General in 2023).
    holidays: [],
    areaCodes: ['228', '601', '662', '769'],
  },
  {
    state: 'WA', name: 'Washington',
    source: 'Wash. Rev. Code (RCW) § 19.158.040(2) (a commercial telephone solicitor may not place calls that will be received before 8:00 a.m. or after 8:00 p.m. at the call recipient\'s local time)',
    hours: ['08:00', '20:00'],
    // No holidays: RCW 19.158.040(2) names hours only.
    holidays: [],
    areaCodes: ['206', '253', '360', '425', '509', '564'],
  },
  {
    state: 'MA', name: 'Massachusetts',
    // The regulation's words were read (regulations.justia.com, current through Register 1531, 27 Sept 2024); the
    // statute's own section, M.G.L. c. 159C, § 3, was not.
    source: '201 CMR 12.02(2) (no telephone solicitor shall make or cause to be made an unsolicited telephonic sales call to a consumer between the hours of 8:00 P.M. to 8:00 A.M., local time at the consumer\'s location), the Office of Consumer Affairs and Business Regulation\'s regulation under M.G.L. c. 159C, § 6',
    hours: ['08:00', '20:00'],
    // No holidays: 201 CMR 12.02(2) names hours only (the statute's § 3 was not read, as above).
    holidays: [],
    areaCodes: ['339', '351', '413', '508', '617', '774', '781', '857', '978'],
  },
];

/** The state rows by USPS code, and by the area codes presumed to be in each state. */
export const STATE_RULE_BY_STATE: ReadonlyMap<string, StateRule> = new Map(STATE_RULES.map((r) => [r.state, r]));
export const STATE_BY_AREA_CODE: ReadonlyMap<string, string> = new Map(STATE_RULES.flatMap((r) => r.areaCodes.map((a) => [a, r.state] as const)));
