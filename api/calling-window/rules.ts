// Data: the calling-time rules, each row with its source. The federal window applies to every callee; a state's row
// applies to callees in that state (from the address, or presumed from one of its area codes); the operator's own
// window narrows them all. Only rows whose statute text was read are here (see docs/calling-windows.md for those left out).

export type Weekday = 'sun' | 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat';
export const WEEKDAYS: readonly Weekday[] = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

/** Local wall-clock times `HH:MM`, from inclusive, to exclusive: a call may start at `from`, not at `to`. */
export type Hours = readonly [from: string, to: string];

/** A holiday: a fixed date, or the nth weekday of a month (n = -1: the last). */
export type Holiday = { name: string; month: number; day: number } | { name: string; month: number; weekday: Weekday; nth: number };

export interface WindowRule {
  /** Who set the rule, for the evidence an operator reads ("Florida", "federal", "operator"). */
  name: string;
  /** The statute or setting the row comes from. */
  source: string;
  /** Hours every day unless `days` says otherwise. */
  hours: Hours;
  /** Hours per weekday; `null`: no calls that day. */
  days?: Partial<Record<Weekday, Hours | null>>;
  /** Days without calls. A holiday that falls on a Saturday is kept on the Friday before too, on a Sunday the Monday after. */
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

/** Federal legal public holidays, 5 U.S.C. 6103(a). */
export const FEDERAL_HOLIDAYS: readonly Holiday[] = [
  { name: "New Year's Day", month: 1, day: 1 },
  { name: 'Birthday of Martin Luther King, Jr.', month: 1, weekday: 'mon', nth: 3 },
  { name: "Washington's Birthday", month: 2, weekday: 'mon', nth: 3 },
  { name: 'Memorial Day', month: 5, weekday: 'mon', nth: -1 },
  { name: 'Juneteenth National Independence Day', month: 6, day: 19 },
  { name: 'Independence Day', month: 7, day: 4 },
  { name: 'Labor Day', month: 9, weekday: 'mon', nth: 1 },
  { name: 'Columbus Day', month: 10, weekday: 'mon', nth: 2 },
  { name: 'Veterans Day', month: 11, day: 11 },
  { name: 'Thanksgiving Day', month: 11, weekday: 'thu', nth: 4 },
  { name: 'Christmas Day', month: 12, day: 25 },
];

export const STATE_RULES: readonly StateRule[] = [
  {
    state: 'FL', name: 'Florida',
    source: 'Fla. Stat. § 501.616(6)(a) (8 a.m.–8 p.m. in the called person\'s time zone) and (6)(b) (at most 3 calls in 24 hours on the same subject), as amended by 2021 SB 1120',
    hours: ['08:00', '20:00'],
    cap: { calls: 3, hours: 24 },
    areaCodes: ['239', '305', '321', '324', '352', '386', '407', '448', '561', '645', '656', '689', '727', '728', '754', '772', '786', '813', '850', '863', '904', '941', '954'],
  },
  {
    state: 'RI', name: 'Rhode Island',
    source: 'R.I. Gen. Laws § 5-61-3.6 (calls only during hours of operation) and § 5-61-2 ("hours of operation": Monday–Friday 9 a.m.–6 p.m. except a state or federal holiday, Saturday 10 a.m.–5 p.m.)',
    hours: ['09:00', '18:00'],
    days: { sat: ['10:00', '17:00'], sun: null },
    // State holidays besides the federal ones: Victory Day (second Monday of August), R.I. Gen. Laws § 25-1-1.
    holidays: [...FEDERAL_HOLIDAYS, { name: 'Victory Day', month: 8, weekday: 'mon', nth: 2 }],
    areaCodes: ['401'],
  },
  {
    state: 'LA', name: 'Louisiana',
    source: 'La. Rev. Stat. § 45:811(2), (3) (calls by automatic dialer or live operator offering goods, services or property for personal, family or household use: only 8:00 a.m.–8:00 p.m., Monday through Saturday; not on Sundays nor state holidays, which are not in this table)',
    hours: ['08:00', '20:00'],
    days: { sun: null },
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
    areaCodes: ['228', '601', '662', '769'],
  },
  {
    state: 'WA', name: 'Washington',
    source: 'Wash. Rev. Code (RCW) § 19.158.040(2) (a commercial telephone solicitor may not place calls that will be received before 8:00 a.m. or after 8:00 p.m. at the call recipient\'s local time)',
    hours: ['08:00', '20:00'],
    areaCodes: ['206', '253', '360', '425', '509', '564'],
  },
  {
    state: 'MA', name: 'Massachusetts',
    // The regulation's words were read (regulations.justia.com, current through Register 1531, 27 Sept 2024); the
    // statute's own section, M.G.L. c. 159C, § 3, was not.
    source: '201 CMR 12.02(2) (no telephone solicitor shall make or cause to be made an unsolicited telephonic sales call to a consumer between the hours of 8:00 P.M. to 8:00 A.M., local time at the consumer\'s location), the Office of Consumer Affairs and Business Regulation\'s regulation under M.G.L. c. 159C, § 6',
    hours: ['08:00', '20:00'],
    areaCodes: ['339', '351', '413', '508', '617', '774', '781', '857', '978'],
  },
];

/** The state rows by USPS code, and by the area codes presumed to be in each state. */
export const STATE_RULE_BY_STATE: ReadonlyMap<string, StateRule> = new Map(STATE_RULES.map((r) => [r.state, r]));
export const STATE_BY_AREA_CODE: ReadonlyMap<string, string> = new Map(STATE_RULES.flatMap((r) => r.areaCodes.map((a) => [a, r.state] as const)));
