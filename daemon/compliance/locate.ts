// Where a callee may be, as the daemon reads it: libphonenumber-js parses the E.164 number the sync holds, and the
// decision the n8n node shares (api/calling-window/locate.ts) places the callee from its parts and the contact's fields.
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { placeCallee, type Evidence, type Location, type LocationFields } from '../../api/calling-window/locate.ts';

/** The callee's zones and states. `phone` is E.164 (as the sync holds it). */
export function locate(phone: string, fields: LocationFields = {}, evidence: Evidence = 'all'): Location {
  const parsed = parsePhoneNumberFromString(phone);
  return placeCallee(parsed && {
    callingCode: parsed.countryCallingCode,
    nationalNumber: parsed.nationalNumber,
    // Matching the plan's patterns costs more than the parse: asked for only when the decision needs it (a new area code).
    get valid() { return parsed.isValid(); },
  }, fields, evidence);
}
