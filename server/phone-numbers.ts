// Phone number validation and E.164 normalisation (libphonenumber-js's rules), for JSON adds and CSV uploads.
import { parsePhoneNumberFromString, validatePhoneNumberLength } from 'libphonenumber-js/min';
import { validE164 } from './phone-fast.ts';

export type PhoneCheck = { ok: true; e164: string } | { ok: false; reason: string };

const SEPARATORS = /[\s().\-\/]/g;
const MAX_RAW = 64;

/**
 * Accepts international numbers with a plus, with a 00 international prefix, or without either
 * (a CSV may carry `4930123456`). There is no default country: a national-format number is ambiguous.
 */
export function checkPhoneNumber(raw: string): PhoneCheck {
  return checkQuickly(raw) ?? checkPhoneNumberSlowly(raw);
}

/**
 * checkPhoneNumber's answer when it is cheap (under a microsecond): a valid number, recognised by the compiled
 * matchers of ./phone-fast.ts, or a rejection of its characters or length. Undefined when only libphonenumber-js
 * can tell (~15-30 us: it builds a RegExp per pattern), i.e. for nearly every other rejection.
 */
export function checkQuickly(raw: string): PhoneCheck | undefined {
  const s = bare(raw);
  if (typeof s !== 'string') return s;
  const e164 = validE164(s);
  return e164 === undefined ? undefined : { ok: true, e164 };
}

/** The input as bare `+digits`, or why it cannot be a phone number. */
function bare(raw: string): string | PhoneCheck {
  if (raw.length > MAX_RAW) return { ok: false, reason: `longer than ${MAX_RAW} characters` };
  let s = onlyDigits(raw) ? raw : raw.replace(SEPARATORS, '');
  if (s.startsWith('00')) s = `+${s.slice(2)}`;
  else if (!s.startsWith('+')) s = `+${s}`;
  if (!/^\+\d+$/.test(s)) return { ok: false, reason: 'not a phone number: only digits, an optional leading +, spaces, dashes, dots and parentheses are allowed' };
  if (s.length < 4) return { ok: false, reason: 'too short to be a phone number' };
  return s;
}

/** Digits with an optional leading +: most rows of a CSV, which have no separators to remove. */
function onlyDigits(raw: string): boolean {
  for (let i = raw.charCodeAt(0) === 43 ? 1 : 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** checkPhoneNumber on libphonenumber-js alone: the reference the fast path is tested and benchmarked against. */
export function checkPhoneNumberSlowly(raw: string): PhoneCheck {
  const s = bare(raw);
  if (typeof s !== 'string') return s;
  // s is already bare `+digits`: extract: false skips searching it for a number inside text.
  const parsed = parsePhoneNumberFromString(s, { extract: false });
  if (parsed?.isValid()) return { ok: true, e164: parsed.number };
  // Only a rejected number pays for the second parse that says why.
  const lengthProblem = validatePhoneNumberLength(s);
  if (lengthProblem) return { ok: false, reason: LENGTH_REASONS[lengthProblem] ?? 'not a valid phone number' };
  const where = parsed?.country ? ` for ${parsed.country}` : parsed ? ` for country code +${parsed.countryCallingCode}` : '';
  return { ok: false, reason: `not a valid phone number${where}` };
}

const LENGTH_REASONS: Record<string, string> = {
  INVALID_COUNTRY: 'unknown country calling code',
  NOT_A_NUMBER: 'not a phone number',
  TOO_SHORT: 'too short for its country',
  TOO_LONG: 'too long for its country',
  INVALID_LENGTH: 'wrong length for its country',
};
