// Data: the IANA zones of each US state and territory and each Canadian province, and Canadian postal districts.
// Source: the IANA time zone database (zone1970.tab and its region comments, 2025 releases); where a state is split
// between two zones by county (Florida's panhandle, Indiana, Kentucky, Tennessee, Texas's El Paso, …) every zone is
// listed, so the calling window is the intersection of both. Zones that keep the same clock as a listed one (e.g.
// America/Indiana/Indianapolis and America/New_York since 2006) are not repeated.

/** US states, DC and territories (USPS codes). */
export const US_REGION_ZONES: Readonly<Record<string, readonly string[]>> = {
  AL: ['America/Chicago'],
  AK: ['America/Anchorage', 'America/Adak'],
  // Arizona keeps standard time all year (America/Phoenix); the Navajo Nation in its north-east keeps DST (America/Denver).
  AZ: ['America/Phoenix', 'America/Denver'],
  AR: ['America/Chicago'],
  CA: ['America/Los_Angeles'],
  CO: ['America/Denver'],
  CT: ['America/New_York'],
  DE: ['America/New_York'],
  DC: ['America/New_York'],
  FL: ['America/New_York', 'America/Chicago'],
  GA: ['America/New_York'],
  HI: ['Pacific/Honolulu'],
  ID: ['America/Boise', 'America/Los_Angeles'],
  IL: ['America/Chicago'],
  IN: ['America/Indiana/Indianapolis', 'America/Chicago'],
  IA: ['America/Chicago'],
  KS: ['America/Chicago', 'America/Denver'],
  KY: ['America/New_York', 'America/Chicago'],
  LA: ['America/Chicago'],
  ME: ['America/New_York'],
  MD: ['America/New_York'],
  MA: ['America/New_York'],
  MI: ['America/Detroit', 'America/Menominee'],
  MN: ['America/Chicago'],
  MS: ['America/Chicago'],
  MO: ['America/Chicago'],
  MT: ['America/Denver'],
  NE: ['America/Chicago', 'America/Denver'],
  NV: ['America/Los_Angeles', 'America/Denver'],
  NH: ['America/New_York'],
  NJ: ['America/New_York'],
  NM: ['America/Denver'],
  NY: ['America/New_York'],
  NC: ['America/New_York'],
  ND: ['America/Chicago', 'America/Denver'],
  OH: ['America/New_York'],
  OK: ['America/Chicago'],
  OR: ['America/Los_Angeles', 'America/Boise'],
  PA: ['America/New_York'],
  RI: ['America/New_York'],
  SC: ['America/New_York'],
  SD: ['America/Chicago', 'America/Denver'],
  TN: ['America/New_York', 'America/Chicago'],
  TX: ['America/Chicago', 'America/Denver'],
  UT: ['America/Denver'],
  VT: ['America/New_York'],
  VA: ['America/New_York'],
  WA: ['America/Los_Angeles'],
  WV: ['America/New_York'],
  WI: ['America/Chicago'],
  WY: ['America/Denver'],
  PR: ['America/Puerto_Rico'],
  VI: ['America/St_Thomas'],
  GU: ['Pacific/Guam'],
  MP: ['Pacific/Saipan'],
  AS: ['Pacific/Pago_Pago'],
};

/** Canadian provinces and territories (Canada Post codes). */
export const CA_REGION_ZONES: Readonly<Record<string, readonly string[]>> = {
  NL: ['America/St_Johns', 'America/Goose_Bay'],
  NS: ['America/Halifax'],
  NB: ['America/Moncton'],
  PE: ['America/Halifax'],
  // Quebec east of 63° W (Basse-Côte-Nord) keeps Atlantic standard time all year (America/Puerto_Rico's clock).
  QC: ['America/Toronto', 'America/Puerto_Rico'],
  ON: ['America/Toronto', 'America/Winnipeg'],
  MB: ['America/Winnipeg'],
  // Saskatchewan keeps Central standard time all year; Lloydminster keeps Alberta's clock.
  SK: ['America/Regina', 'America/Edmonton'],
  AB: ['America/Edmonton'],
  // British Columbia: Pacific, with the Peace River and Kootenay areas on Mountain time (Dawson Creek, Creston all year).
  BC: ['America/Vancouver', 'America/Edmonton', 'America/Dawson_Creek'],
  YT: ['America/Whitehorse'],
  NT: ['America/Edmonton'],
  NU: ['America/Iqaluit', 'America/Winnipeg', 'America/Edmonton'],
};

/**
 * The province of a Canadian postal code's first letter (its postal district), per Canada Post's addressing guide.
 * X is shared by the Northwest Territories and Nunavut.
 */
export const CA_POSTAL_DISTRICTS: Readonly<Record<string, readonly string[]>> = {
  A: ['NL'], B: ['NS'], C: ['PE'], E: ['NB'], G: ['QC'], H: ['QC'], J: ['QC'], K: ['ON'], L: ['ON'], M: ['ON'],
  N: ['ON'], P: ['ON'], R: ['MB'], S: ['SK'], T: ['AB'], V: ['BC'], X: ['NT', 'NU'], Y: ['YT'],
};

/** Full names an address may spell out instead of the code (lower case). */
export const REGION_NAMES: Readonly<Record<string, string>> = {
  alabama: 'AL', alaska: 'AK', arizona: 'AZ', arkansas: 'AR', california: 'CA', colorado: 'CO', connecticut: 'CT',
  delaware: 'DE', 'district of columbia': 'DC', florida: 'FL', georgia: 'GA', hawaii: 'HI', idaho: 'ID', illinois: 'IL',
  indiana: 'IN', iowa: 'IA', kansas: 'KS', kentucky: 'KY', louisiana: 'LA', maine: 'ME', maryland: 'MD',
  massachusetts: 'MA', michigan: 'MI', minnesota: 'MN', mississippi: 'MS', missouri: 'MO', montana: 'MT',
  nebraska: 'NE', nevada: 'NV', 'new hampshire': 'NH', 'new jersey': 'NJ', 'new mexico': 'NM', 'new york': 'NY',
  'north carolina': 'NC', 'north dakota': 'ND', ohio: 'OH', oklahoma: 'OK', oregon: 'OR', pennsylvania: 'PA',
  'rhode island': 'RI', 'south carolina': 'SC', 'south dakota': 'SD', tennessee: 'TN', texas: 'TX', utah: 'UT',
  vermont: 'VT', virginia: 'VA', washington: 'WA', 'west virginia': 'WV', wisconsin: 'WI', wyoming: 'WY',
  'puerto rico': 'PR', 'virgin islands': 'VI', guam: 'GU', 'northern mariana islands': 'MP', 'american samoa': 'AS',
  'newfoundland and labrador': 'NL', newfoundland: 'NL', 'nova scotia': 'NS', 'new brunswick': 'NB',
  'prince edward island': 'PE', quebec: 'QC', 'québec': 'QC', ontario: 'ON', manitoba: 'MB', saskatchewan: 'SK',
  alberta: 'AB', 'british columbia': 'BC', yukon: 'YT', 'northwest territories': 'NT', nunavut: 'NU',
};
