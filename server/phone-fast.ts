// Recognises valid `+digits` phone numbers fast: libphonenumber-js/min's metadata compiled once into reusable matchers.
//
// libphonenumber-js builds a RegExp for every pattern it tests (~15 us a number). This module makes the same
// decisions as `parsePhoneNumberFromString(s, { extract: false })?.isValid()` on a bare `+digits` string —
// calling-code extraction, national prefix stripping (with transform rules and the possible-length guard),
// country selection among countries sharing a calling code, possible lengths per type, validity by types or
// by the national number pattern — with each pattern compiled once. It only ever says "valid, and here is the
// E.164 form"; for anything else it answers undefined and the caller asks libphonenumber-js, which then also
// words the rejection. test/server/phone-fast.test.ts holds it to libphonenumber-js's answers.
//
// Ported from libphonenumber-js 1.13.16 (es6/parse.js, helpers/extractCountryCallingCode.js,
// helpers/extractNationalNumber.js, helpers/extractNationalNumberFromPossiblyIncompleteNumber.js,
// helpers/getCountryByCallingCode.js, helpers/getCountryByNationalNumber.js, helpers/checkNumberLength.js,
// helpers/getNumberType.js, isValid.js, metadata.js): on an upgrade, rerun that test.
import metadataJson from 'libphonenumber-js/metadata.min.json';

/** libphonenumber-js's metadata v4: a numbering plan is an array indexed by field. */
type PlanJson = readonly unknown[];
interface MetadataV4 {
  version: number;
  country_calling_codes: Record<string, readonly string[]>;
  countries: Record<string, PlanJson>;
  nonGeographic?: Record<string, PlanJson>;
}
const F = { nationalNumberPattern: 2, possibleLengths: 3, nationalPrefix: 5, nationalPrefixForParsing: 7, transformRule: 8, leadingDigits: 10, types: 11 } as const;
/** getNumberType's order: FIXED_LINE, then the others; the index of each in a plan's types array. */
const TYPE_INDEXES = [0, 1, 3, 2, 9, 8, 4, 7, 6, 5] as const;

/** checkNumberLength's verdicts, by national number length. */
const IS_POSSIBLE = 0, TOO_SHORT = 1, TOO_LONG = 2, INVALID_LENGTH = 3;
/** Verdict tables cover lengths up to here; longer strings (never seen: inputs are capped far below) are computed. */
const TABLE_LENGTHS = 256;

interface TypeMatcher {
  readonly pattern: RegExp;
  /** possible[length]: the type's possible lengths (or the plan's) allow it; null when neither has any. */
  readonly possible: Uint8Array | null;
}

interface Plan {
  /** ^(?:nationalNumberPattern)$ */
  readonly nationalNumber: RegExp;
  /** The plan's possible lengths, as in the metadata (undefined when it has none). */
  readonly possibleLengths: readonly number[] | undefined;
  /** checkNumberLength's verdict by length, for this plan. */
  readonly lengthVerdicts: Uint8Array;
  /** ^(?:nationalPrefixForParsing || nationalPrefix), undefined when the plan has neither. */
  readonly prefix: RegExp | undefined;
  readonly transformRule: string | undefined;
  /** ^(?:leadingDigits): what `nationalNumber.search(leadingDigits) === 0` asks. */
  readonly leadingDigits: RegExp | undefined;
  /** The plan's number types in getNumberType's order, those with a pattern; null when the plan has no types. */
  readonly types: readonly TypeMatcher[] | null;
}

interface CallingCode {
  readonly code: string;
  /** The plan libphonenumber-js selects for the calling code: its main country's, or the non-geographic one. */
  readonly main: Plan;
  /** The countries sharing the code, in metadata order (empty for a non-geographic code). */
  readonly countries: readonly Plan[];
}

const entirely = (pattern: unknown) => new RegExp('^(?:' + pattern + ')$');

/** checkNumberLengthForType with no type, literally: the metadata's lists are taken as they are. */
function lengthVerdict(possible: readonly number[] | undefined, length: number): number {
  if (!possible) return IS_POSSIBLE;
  const min = possible[0];
  if (min === length) return IS_POSSIBLE;
  if (min! > length) return TOO_SHORT;
  if (possible[possible.length - 1]! < length) return TOO_LONG;
  return possible.indexOf(length, 1) >= 0 ? IS_POSSIBLE : INVALID_LENGTH;
}

function compilePlan(json: PlanJson): Plan {
  const possibleLengths = (json[F.possibleLengths] || undefined) as number[] | undefined;
  const lengthVerdicts = new Uint8Array(TABLE_LENGTHS);
  for (let n = 0; n < TABLE_LENGTHS; n++) lengthVerdicts[n] = lengthVerdict(possibleLengths, n);
  const prefix = json[F.nationalPrefixForParsing] || json[F.nationalPrefix];
  const leadingDigits = json[F.leadingDigits];
  const typesJson = json[F.types] as unknown[] | undefined;
  let types: TypeMatcher[] | null = null;
  // NumberingPlan.hasTypes(): a non-empty types array.
  if (typesJson && typesJson.length !== 0) {
    types = [];
    for (const i of TYPE_INDEXES) {
      const type = typesJson[i] as [string, number[]?] | 0 | undefined;
      if (!type || !type[0]) continue; // no such type, or one with an empty pattern: never matches
      const lengths = type[1] || possibleLengths;
      let possible: Uint8Array | null = null;
      if (lengths) {
        possible = new Uint8Array(TABLE_LENGTHS);
        for (const n of lengths) if (n < TABLE_LENGTHS) possible[n] = 1;
      }
      types.push({ pattern: entirely(type[0]), possible });
    }
  }
  return {
    nationalNumber: entirely(json[F.nationalNumberPattern]),
    possibleLengths,
    lengthVerdicts,
    prefix: prefix ? new RegExp('^(?:' + prefix + ')') : undefined,
    transformRule: (json[F.transformRule] || undefined) as string | undefined,
    leadingDigits: leadingDigits ? new RegExp('^(?:' + leadingDigits + ')') : undefined,
    types,
  };
}

/** Calling codes by numeric value: 1..999 are distinct for codes of 1, 2 and 3 digits without a leading 0. */
const CODES: (CallingCode | undefined)[] = new Array(1000).fill(undefined);

function compileMetadata(metadata: MetadataV4): void {
  if (metadata.version !== 4) throw new Error(`libphonenumber-js metadata version ${metadata.version}: server/phone-fast.ts reads version 4`);
  const plans = new Map<string, Plan>();
  const planOf = (country: string) => {
    let plan = plans.get(country);
    if (!plan) plans.set(country, plan = compilePlan(metadata.countries[country]!));
    return plan;
  };
  const codes = new Set([...Object.keys(metadata.country_calling_codes), ...Object.keys(metadata.nonGeographic ?? {})]);
  for (const code of codes) {
    if (!/^[1-9]\d{0,2}$/.test(code)) throw new Error(`unexpected calling code ${code} in libphonenumber-js metadata`);
    const list = metadata.country_calling_codes[code];
    // Metadata.getCountryCodesForCallingCode: a lone three-letter entry ("001") means non-geographic.
    const countries = list && !(list.length === 1 && list[0]!.length === 3) ? list : undefined;
    let entry: CallingCode | undefined;
    if (countries) entry = { code, main: planOf(countries[0]!), countries: countries.map(planOf) };
    else if (metadata.nonGeographic?.[code]) entry = { code, main: compilePlan(metadata.nonGeographic[code]), countries: [] };
    if (entry) CODES[Number(code)] = entry;
  }
}

compileMetadata(metadataJson as unknown as MetadataV4);

function lengthVerdictOf(plan: Plan, length: number): number {
  return length < TABLE_LENGTHS ? plan.lengthVerdicts[length]! : lengthVerdict(plan.possibleLengths, length);
}

/** getNumberType(...) !== undefined: the national number pattern and one type (in length and pattern) match. */
function hasType(plan: Plan, nationalNumber: string): boolean {
  const types = plan.types;
  if (!plan.nationalNumber.test(nationalNumber) || !types) return false;
  const length = nationalNumber.length;
  for (let i = 0; i < types.length; i++) {
    const t = types[i]!;
    if (t.possible && (length >= TABLE_LENGTHS || t.possible[length] === 0)) continue;
    if (t.pattern.test(nationalNumber)) return true;
  }
  return false;
}

/** Set by countryOf: the country it returned was chosen because the number has one of its types. */
let chosenByType = false;

/** getCountryByCallingCode: the country of a national number, when its calling code is shared. */
function countryOf(code: CallingCode, nationalNumber: string): Plan | undefined {
  chosenByType = false;
  const countries = code.countries;
  if (countries.length <= 1) return countries[0];
  for (let i = 0; i < countries.length; i++) {
    const plan = countries[i]!;
    if (plan.leadingDigits) {
      if (nationalNumber && plan.leadingDigits.test(nationalNumber)) return plan;
    } else if (hasType(plan, nationalNumber)) {
      chosenByType = true;
      return plan;
    }
  }
  return undefined;
}

const MIN_LENGTH_FOR_NSN = 2;
const MAX_LENGTH_FOR_NSN = 17;
const MAX_LENGTH_COUNTRY_CODE = 3;

/**
 * The E.164 form of `plusDigits` (a `+` then ASCII digits) when libphonenumber-js would parse it as a valid
 * number; undefined when it would not, or might not.
 */
export function validE164(plusDigits: string): string | undefined {
  const length = plusDigits.length;
  if (length < 2 || plusDigits.charCodeAt(1) === 48) return undefined;
  // extractCountryCallingCode: the shortest prefix of one to three digits that is a calling code.
  let code: CallingCode | undefined;
  let value = 0;
  let end = 1;
  while (end <= MAX_LENGTH_COUNTRY_CODE && end < length) {
    value = value * 10 + plusDigits.charCodeAt(end) - 48;
    end++;
    code = CODES[value];
    if (code) break;
  }
  if (!code) return undefined;
  const digits = plusDigits.slice(end);
  if (digits === '') return undefined;

  // extractNationalNumber, on the calling code's main plan.
  let nationalNumber = digits;
  let country: Plan | undefined;
  let countryFor: string | undefined;
  let countryByType = false;
  const main = code.main;
  const prefixMatch = main.prefix?.exec(digits);
  if (prefixMatch) {
    const groups = prefixMatch.length - 1;
    const hasGroups = groups > 0 && !!prefixMatch[groups];
    const stripped = main.transformRule && hasGroups
      ? digits.replace(main.prefix!, main.transformRule)
      : digits.slice(prefixMatch[0].length);
    // shouldHaveExtractedNationalPrefix, then the possible-length guard.
    if (stripped !== digits && !(main.nationalNumber.test(digits) && !main.nationalNumber.test(stripped))) {
      if (!main.possibleLengths) nationalNumber = stripped;
      else {
        country = countryOf(code, stripped);
        countryFor = stripped;
        countryByType = chosenByType;
        const verdict = lengthVerdictOf(country ?? main, stripped.length);
        if (verdict !== TOO_SHORT && verdict !== INVALID_LENGTH) nationalNumber = stripped;
      }
    }
  }

  if (nationalNumber.length < MIN_LENGTH_FOR_NSN || nationalNumber.length > MAX_LENGTH_FOR_NSN) return undefined;
  if (countryFor !== nationalNumber) {
    country = countryOf(code, nationalNumber);
    countryByType = chosenByType;
  }
  // PhoneNumber.isValid(): on the exact country's plan, else the calling code's.
  const plan = country ?? main;
  const valid = countryByType || (plan.types ? hasType(plan, nationalNumber) : plan.nationalNumber.test(nationalNumber));
  return valid ? '+' + code.code + nationalNumber : undefined;
}
