// A phone number in international format (E.164) read into the parts the calling-window decision takes, without
// libphonenumber-js (the package depends on n8n alone): its calling code, the one of api/'s table that starts it, and
// its national number; a NANP (+1) number must have the shape of its plan. And the Phone Number field that reads it.
import type { IDisplayOptions, INodeProperties } from 'n8n-workflow';
import type { DialedNumber } from '../../../api/calling-window/locate.ts';
import { CALLING_CODES } from '../../../api/calling-window/number-plan.ts';

const CODES = new Set(CALLING_CODES);

/** The Phone Number field of an operation; `does` says what the operation does with it, after "The phone number". */
export function phoneNumberField(does: string, displayOptions: IDisplayOptions): INodeProperties {
  return {
    displayName: 'Phone Number',
    name: 'phoneNumber',
    type: 'string',
    default: '',
    required: true,
    placeholder: 'e.g. {{ $json.phone }}',
    description: `The phone number ${does}`,
    displayOptions,
  };
}

/** What people type between the digits of a phone number. */
const SEPARATORS = /[\s().\-/]/g;

export type PhoneNumberReading = { ok: true; e164: string; number: DialedNumber } | { ok: false; reason: string };

/** Reads `+<calling code><national number>`, separators allowed; the reason says what is wrong otherwise. */
export function readPhoneNumber(text: string): PhoneNumberReading {
  const compact = text.replace(SEPARATORS, '');
  if (!compact.startsWith('+')) return { ok: false, reason: 'it does not start with + and a country calling code' };
  const digits = compact.slice(1);
  if (!/^\d+$/.test(digits)) return { ok: false, reason: 'it holds more than digits after the +' };
  if (digits.length > 15) return { ok: false, reason: `it has ${digits.length} digits, and an international number has at most 15` };
  // Calling codes are prefix-free: at most one of them starts the digits.
  const callingCode = [1, 2, 3].map((n) => digits.slice(0, n)).find((code) => CODES.has(code));
  if (!callingCode) return { ok: false, reason: 'no country calling code starts it' };
  const nationalNumber = digits.slice(callingCode.length);
  if (callingCode === '1' && !/^[2-9]\d{2}[2-9]\d{6}$/.test(nationalNumber)) {
    return { ok: false, reason: 'a +1 number has 10 digits after the 1: an area code and a 7-digit number, each starting with 2 to 9' };
  }
  if (nationalNumber.length < 4) return { ok: false, reason: `it has only ${nationalNumber.length} digits after the country calling code +${callingCode}` };
  // Valid as far as a reader without the plans' patterns can tell: the decision asks only of a NANP area code newer than
  // the time-zone map, and its table lists only the area codes in service.
  return { ok: true, e164: `+${digits}`, number: { callingCode, nationalNumber, valid: true } };
}
