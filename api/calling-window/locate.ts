// Where a callee may be: the IANA zones and US states of a phone number, from the evidence at hand (a CRM time zone
// field, the address, the number itself): all of it, or only the strongest piece, with that evidence in words for the
// operator. One decision for the daemon and the n8n node: each parses the number its own way (libphonenumber-js, a
// small E.164 reader) and hands the parts here.
import { NEW_AREA_CODE_COUNTRIES } from './number-plan.ts';
import { NON_GEOGRAPHIC_AREA_CODES } from './non-geographic.ts';
import { AREA_CODE_ZONES, CALLING_CODE_ZONES, NUMBER_ZONES_SOURCE } from './number-zones.ts';
import { CA_POSTAL_DISTRICTS, CA_REGION_ZONES, REGION_NAMES, US_REGION_ZONES } from './regions.ts';
import { STATE_BY_AREA_CODE, STATE_RULES } from './rules.ts';
import { ZIP3_STATES, ZIP5_STATES, ZIP_STATES_SOURCE } from './zip-states.ts';

/** A phone number as a parser read it. */
export interface DialedNumber {
  /** The country calling code, digits only: '1', '44', '800'. */
  callingCode: string;
  /** The national significant number, digits only; a NANP number's first three are its area code. */
  nationalNumber: string;
  /**
   * Whether the numbering plan assigns such a number (libphonenumber-js's isValid()). Read only for an area code newer
   * than the time-zone map: only a valid number of it says which country's zones it may be in.
   */
  readonly valid: boolean;
}

/** What the contact's mapped fields say (each optional; strings as the CRM holds them). */
export interface LocationFields {
  timeZone?: string;
  /** State or province: a code (FL, ON) or a name (Florida). */
  region?: string;
  postalCode?: string;
  /** ISO country of the address (US, CA); helps read `region` and `postalCode`. */
  country?: string;
}

export interface Location {
  /** Zones the callee may be in (sorted); the calling window is the intersection of theirs. Empty: unknown. */
  zones: string[];
  /** US states whose rules apply (sorted): the address's, and the one its area code presumes. */
  states: string[];
  /** The strongest evidence that gave zones (`field`, then `address`, then `number`), or `none`. */
  from: 'field' | 'address' | 'number' | 'none';
  /**
   * The evidence in words, every piece that counted (and those unreadable), e.g. "state CA: America/Los_Angeles; area
   * code 212 (libphonenumber time-zone map): America/New_York".
   */
  evidence: string;
  /**
   * Evidence given that the rules cannot read (a time zone, a state or province, a postal code). Unreadable evidence
   * never widens a window: every readable piece then counts (as under `all`, whatever `evidence` says), and the daemon
   * makes each a record error of the contact.
   */
  unread: Unread[];
  /**
   * Why the number places nobody (`toll-free: no place`) when it alone placed the callee: in every zone of its
   * country, under every state row of it. Null otherwise.
   */
  noPlace: string | null;
}

/** A location field whose value the rules cannot read, and what the evidence says of it. */
export interface Unread { field: 'timeZone' | 'region' | 'postalCode'; value: string; said: string }
const FIELD_ORDER: readonly Unread['field'][] = ['timeZone', 'region', 'postalCode'];

/**
 * Which evidence places the callee: `all` (the zones every piece names, so a call only while each piece's window
 * allows it: the "most restrictive time zone" of dialers) or `best` (the strongest piece that names zones alone).
 */
export type Evidence = 'all' | 'best';
export const EVIDENCE: readonly Evidence[] = ['all', 'best'];

const canonicalZones = new Map(Intl.supportedValuesOf('timeZone').map((z) => [z.toLowerCase(), z]));

/**
 * Names of the tz database that are abbreviations of a clock rather than a place's: EST and MST are fixed UTC-5 and
 * UTC-7 (links to Panama and Phoenix since tzdata 2024b), HST UTC-10. A CRM that writes "EST" means the US Eastern
 * clock, summer time included; read as a fixed offset it would allow 21:00–22:00 EDT, so they read as no zone.
 */
const CLOCK_ABBREVIATIONS = new Set(['est', 'mst', 'hst']);
const readZones = new Map<string, string | null>();

/**
 * A zone as CRMs write it: any name or link of the runtime's tz database (Asia/Kolkata as well as Asia/Calcutta,
 * America/Indiana/Indianapolis, US/Eastern) in any case, or HubSpot's `hs_timezone` option values
 * (`america_slash_indiana_slash_indianapolis`, `america_slash_port_minus_au_minus_prince`). The answer is the runtime's
 * own name of the zone (Intl canonicalises a link: Asia/Kolkata → Asia/Calcutta). Undefined when it names no zone.
 */
export function readTimeZone(text: string): string | undefined {
  const t = text.trim();
  if (!t || t.length > 64) return undefined;
  const spelled = t.toLowerCase().replaceAll('_slash_', '/').replaceAll('_minus_', '-').replaceAll('_plus_', '+');
  // Only names (a letter first): Intl also takes offsets such as "-05:00", which no place keeps in summer.
  if (!/^[a-z]/.test(spelled) || CLOCK_ABBREVIATIONS.has(spelled)) return undefined;
  const known = canonicalZones.get(spelled);
  if (known) return known;
  let zone = readZones.get(spelled);
  if (zone === undefined) {
    try { zone = new Intl.DateTimeFormat('en-US', { timeZone: spelled }).resolvedOptions().timeZone; } catch { zone = null; }
    if (readZones.size > 10_000) readZones.clear();
    readZones.set(spelled, zone);
  }
  return zone ?? undefined;
}

function regionCode(region: string, country: string | undefined): { code: string; country: 'US' | 'CA' } | undefined {
  const t = region.trim();
  const code = t.length === 2 ? t.toUpperCase() : REGION_NAMES[t.toLowerCase()];
  if (!code) return undefined;
  const c = countryCode(country);
  if (US_REGION_ZONES[code] && c !== 'CA') return { code, country: 'US' };
  if (CA_REGION_ZONES[code] && c !== 'US') return { code, country: 'CA' };
  return undefined;
}

const ZIP3 = new Map(ZIP3_STATES.flatMap(([from, to, region]) =>
  Array.from({ length: Number(to) - Number(from) + 1 }, (_, i) => [String(Number(from) + i).padStart(3, '0'), region] as const)));

/** The USPS region of a US ZIP Code (5 digits or ZIP+4), by its prefix or as assigned apart; undefined when none is. */
export function zipRegion(zip: string): string | undefined {
  const m = /^\s*(\d{5})(?:[-\s]?\d{4})?\s*$/.exec(zip);
  return m ? ZIP5_STATES[m[1]!] ?? ZIP3.get(m[1]!.slice(0, 3)) : undefined;
}

/** The country an address names: a code (US, CA) or the usual names of these two; other codes as given. */
function countryCode(country: string | undefined): string | undefined {
  const c = country?.trim().toUpperCase().replaceAll('.', '');
  if (!c) return undefined;
  if (['USA', 'UNITED STATES', 'UNITED STATES OF AMERICA'].includes(c)) return 'US';
  return c === 'CANADA' ? 'CA' : c;
}

const words = (zones: readonly string[]) => zones.join(', ');
const sorted = (values: Iterable<string>) => [...new Set(values)].sort();

/** The callee's zones and states, from its number (undefined: not a phone number) and the contact's fields. */
export function placeCallee(number: DialedNumber | undefined, fields: LocationFields = {}, evidence: Evidence = 'all'): Location {
  const nanp = number?.callingCode === '1';
  const areaCode = nanp ? number!.nationalNumber.slice(0, 3) : undefined;
  const presumed = areaCode ? STATE_BY_AREA_CODE.get(areaCode) : undefined;
  const unread: Unread[] = [];
  const addressCountry = countryCode(fields.country);
  // The rules read addresses in the US and Canada (or naming no country): another country's region is not evidence.
  const northAmerican = addressCountry === 'US' || addressCountry === 'CA' || !addressCountry;

  // The address's state (US) or province (CA), from the region field or a Canadian postal code.
  let address: { code: string; country: 'US' | 'CA'; said: string } | undefined;
  let regionNote = '';
  const region = fields.region?.trim();
  if (region) {
    const r = regionCode(region, fields.country);
    if (r) address = { ...r, said: `${r.country === 'US' ? 'state' : 'province'} ${r.code}` };
    else if (northAmerican) {
      regionNote = `state or province "${region.slice(0, 32)}" is not read`;
      unread.push({ field: 'region', value: region.slice(0, 64), said: regionNote });
    }
  }
  // A postal code when no state or province was read: a Canadian one's first letter, or a US ZIP Code's prefix (read
  // as a ZIP only when the address says US, or names no country and the number is a NANP one: 10115 is also Berlin's).
  let postalNote = '';
  const postal = fields.postalCode?.trim();
  if (!address && postal) {
    const ca = addressCountry !== 'US' ? /^([ABCEGHJ-NPRSTVXY])\d[A-Z]\s?\d[A-Z]\d$/i.exec(postal) : null;
    const provinces = ca ? CA_POSTAL_DISTRICTS[ca[1]!.toUpperCase()] : undefined;
    const zip = !ca && (addressCountry === 'US' || (!addressCountry && nanp)) && /^\d{5}(?:[-\s]?\d{4})?$/.test(postal);
    const state = zip ? zipRegion(postal) : undefined;
    if (provinces?.length === 1) address = { code: provinces[0]!, country: 'CA', said: `postal code ${postal.toUpperCase()} (province ${provinces[0]})` };
    else if (state && US_REGION_ZONES[state]) address = { code: state, country: 'US', said: `ZIP code ${postal} (${ZIP_STATES_SOURCE}: state ${state})` };
    else if (zip) postalNote = `ZIP code ${postal} ${state ? `is ${state}'s (military mail or a freely associated state: no zones listed)` : 'has a prefix assigned to no state'}`;
    else if (!ca && (addressCountry === 'US' || addressCountry === 'CA' || (!addressCountry && nanp))) postalNote = `postal code "${postal.slice(0, 16)}" is not read`;
    else if (provinces) postalNote = `postal code ${postal.toUpperCase()} is in ${provinces.join(' or ')} (no one province)`;
    if (postalNote) unread.push({ field: 'postalCode', value: postal.slice(0, 64), said: postalNote });
  }
  const states = sorted([...(address?.country === 'US' ? [address.code] : []), ...(presumed ? [presumed] : [])]);

  // Each piece in order of strength: what it says in words, and its zones (none: unreadable, said all the same).
  const pieces: Piece[] = [];
  const zone = fields.timeZone ? readTimeZone(fields.timeZone) : undefined;
  if (zone) pieces.push({ from: 'field', zones: [zone], said: `time zone field: ${zone}` });
  else if (fields.timeZone?.trim()) {
    const said = `time zone field "${fields.timeZone.trim().slice(0, 64)}" names no zone`;
    unread.push({ field: 'timeZone', value: fields.timeZone.trim().slice(0, 64), said });
    pieces.push({ from: 'field', zones: [], said });
  }
  if (regionNote) pieces.push({ from: 'address', zones: [], said: regionNote });
  if (address) {
    const zones = sorted((address.country === 'US' ? US_REGION_ZONES : CA_REGION_ZONES)[address.code]!);
    pieces.push({ from: 'address', zones, said: `${address.said}: ${words(zones)}` });
  } else if (postalNote) pieces.push({ from: 'address', zones: [], said: postalNote });
  const numbered = numberPiece(number, areaCode, pieces.some((p) => p.zones.length));
  pieces.push(numbered);

  // `best`: the first piece with zones decides, and only the unreadable ones before it are said. `all`: every piece
  // counts, so the callee is held to the window each of them allows (a number from New York with an address in
  // California is called only while both clocks allow it). A piece that cannot be read may say the callee is
  // elsewhere: then every readable piece counts, under `best` too (the strictest reading of what can be read).
  const decisive = pieces.findIndex((p) => p.zones.length);
  const used = evidence === 'best' && decisive >= 0 && !unread.length ? pieces.slice(0, decisive + 1) : pieces;
  const noPlace = numbered.noPlace && used.includes(numbered) ? numbered.noPlace : null;
  return {
    zones: sorted(used.flatMap((p) => p.zones)),
    // A number with no place holds the callee to every state row of its country besides the zones.
    states: noPlace ? sorted([...states, ...numbered.states ?? []]) : states,
    from: decisive >= 0 ? pieces[decisive]!.from : 'none',
    evidence: used.map((p) => p.said).join('; '),
    // In the order of the evidence: the time zone, the state, the postal code.
    unread: unread.sort((a, b) => FIELD_ORDER.indexOf(a.field) - FIELD_ORDER.indexOf(b.field)),
    noPlace,
  };
}

interface Piece {
  from: Exclude<Location['from'], 'none'>; zones: string[]; said: string;
  /** The number places nobody: why, and the state rows of its country. */
  noPlace?: string; states?: string[];
}

/** The states with a row in the US (a callee anywhere in it may be in any of them); Canada has none. */
const US_STATES_WITH_ROWS = STATE_RULES.map((r) => r.state);

/**
 * What the number says: its area code's zones (NANP) or its country code's. A number with no place (a toll-free or
 * other non-geographic area code, or one newer than the map) gives every zone of its country and every state row of
 * it, but only when nothing else gives zones: that is a lack of evidence, not evidence of a place, and would hold a
 * callee the address places to the narrow window all those zones share. A number whose country is unknown (+800,
 * +881) gives none: it has no window.
 */
function numberPiece(number: DialedNumber | undefined, areaCode: string | undefined, placedElsewhere: boolean): Piece {
  const none = (said: string): Piece => ({ from: 'number', zones: [], said });
  if (!number) return none('not a phone number');
  if (areaCode !== undefined) {
    const listed = AREA_CODE_ZONES[areaCode];
    if (listed) {
      const zones = listed.split(' ');
      return { from: 'number', zones, said: `area code ${areaCode} (${NUMBER_ZONES_SOURCE}): ${words(zones)}` };
    }
    const service = NON_GEOGRAPHIC_AREA_CODES[areaCode];
    const what = `area code ${areaCode} ${service ? `(${service}) names no place` : 'is not in the time-zone map'}`;
    // The number plan (number-plan.ts, from libphonenumber-js) knows the country of a new or non-geographic area code.
    const country = number.valid ? NEW_AREA_CODE_COUNTRIES[areaCode] : undefined;
    const table = country === 'US' ? US_REGION_ZONES : country === 'CA' ? CA_REGION_ZONES : undefined;
    if (!table) return none(`${what} and no country`);
    if (placedElsewhere) return none(`${what} (not counted: other evidence places the callee)`);
    const zones = sorted(Object.entries(table).filter(([code]) => country === 'CA' || !['GU', 'MP', 'AS', 'PR', 'VI'].includes(code)).flatMap(([, z]) => z));
    const states = country === 'US' ? US_STATES_WITH_ROWS : [];
    return {
      from: 'number', zones, states, noPlace: `${service ?? 'not in the time-zone map'}: no place`,
      said: `${what}; every zone of ${country}: ${words(zones)}${states.length ? `; every state row of ${country}: ${states.join(', ')}` : ''}`,
    };
  }
  const listed = CALLING_CODE_ZONES[number.callingCode];
  if (!listed) return none(`country code +${number.callingCode} is not in the time-zone map`);
  const zones = listed.split(' ');
  return { from: 'number', zones, said: `country code +${number.callingCode} (${NUMBER_ZONES_SOURCE}): ${words(zones)}` };
}

/**
 * Why a placed callee is held to a narrower window than its evidence would seem to give, in words for whoever asked
 * (the n8n node's `reason`): a number with no place, or evidence the rules cannot read. Null when neither.
 */
export function heldBecause(l: Pick<Location, 'zones' | 'unread' | 'noPlace'>): string | null {
  if (!l.zones.length) return null;
  const why: string[] = [];
  if (l.noPlace) why.push(`${l.noPlace}, so the callee is held to every zone of its country and every state row of it`);
  for (const u of l.unread) why.push(`${u.said}, so every other piece of the evidence counts`);
  return why.length ? `${why.join('; ')} (unreadable evidence never widens a window)` : null;
}
