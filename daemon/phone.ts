// Phone numbers as people type them, in E.164: the one normalisation the sync, /ops and `./dev daemon trace` share.
import { getCountries, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';

export type PhoneResult = { ok: true; e164: string } | { ok: false; reason: string };

/**
 * The numbers normalised last, by default country and text. The CSV source normalises every row's numbers to find the
 * repeated ones, and the sync's mapping then normalises the same page again: this saves the second libphonenumber
 * parse (about 10 µs a number). Two generations of at most 10,000 (a page of 1,000 rows with 10 phone fields): when
 * the newer is full it becomes the older, and the older is dropped (no per-entry eviction, which a Map does slowly).
 */
const GENERATION = 10_000;
let newer = new Map<string, PhoneResult>();
let older = new Map<string, PhoneResult>();

/** Normalises a phone number as a person typed it; numbers without a country code take the default country. */
export function toE164(text: string, defaultCountry?: CountryCode): PhoneResult {
  const key = `${defaultCountry ?? ''} ${text}`;
  const known = newer.get(key) ?? older.get(key);
  if (known) return known;
  const result = normalise(text, defaultCountry);
  if (newer.size >= GENERATION) {
    older = newer;
    newer = new Map();
  }
  newer.set(key, result);
  return result;
}

function normalise(text: string, defaultCountry?: CountryCode): PhoneResult {
  const trimmed = text.trim();
  if (!trimmed) return { ok: false, reason: 'empty' };
  const international = trimmed.startsWith('00') ? `+${trimmed.slice(2)}` : trimmed;
  const parsed = parsePhoneNumberFromString(international, defaultCountry);
  if (!parsed) {
    return { ok: false, reason: defaultCountry || international.startsWith('+')
      ? 'not a phone number' : 'no country code, and the mapping sets no defaultCountry' };
  }
  // parse() yields a .number even for impossible input ('12345' → '+112345'): only isValid() says it can be dialed.
  if (!parsed.isValid()) return { ok: false, reason: `not a valid number for ${parsed.country ?? `+${parsed.countryCallingCode}`}` };
  return { ok: true, e164: parsed.number };
}

/** A two-letter country code libphonenumber knows (any case), as a CountryCode; null for anything else. */
export function countryCode(text: string): CountryCode | null {
  const upper = text.trim().toUpperCase();
  return (getCountries() as string[]).includes(upper) ? upper as CountryCode : null;
}
