// Deterministic generator of fake people (names, emails, valid US phone numbers) that seeds the CRM stand-ins.

export interface GeneratedPerson {
  index: number;
  firstName: string;
  lastName: string;
  email: string;
  /** The phone number as a CRM user might have typed it (always a valid, distinct US number). */
  phone: string;
  company: string;
}

const FIRST_NAMES = [
  'Ada', 'Ben', 'Chloe', 'Diego', 'Elena', 'Farah', 'Gus', 'Hana', 'Ivan', 'Jade',
  'Kofi', 'Lena', 'Mateo', 'Nora', 'Omar', 'Priya', 'Quinn', 'Rosa', 'Sam', 'Tara',
  'Uma', 'Victor', 'Wen', 'Ximena', 'Yusuf', 'Zoe',
] as const;

const LAST_NAMES = [
  'Adams', 'Baker', 'Chen', 'Dubois', 'Evans', 'Fischer', 'Garcia', 'Haddad', 'Ito', 'Jensen',
  'Kowalski', 'Lopez', 'Murphy', 'Nguyen', 'Okafor', 'Patel', 'Quintero', 'Rossi', 'Smith', 'Tanaka',
  "O'Brien", 'Van der Berg', 'Walsh', 'Yamada', 'Zimmer',
] as const;

const COMPANIES = [
  'Acme Corp', 'Globex', 'Initech', 'Umbrella Health', 'Stark Logistics', 'Wayne Foods',
  'Hooli', 'Vandelay Industries', 'Soylent Co', 'Tyrell Systems', 'Cyberdyne', 'Wonka Sweets',
] as const;

// 100 real, geographic US area codes; with the 555 exchange and 10,000 line numbers each they give
// 1,000,000 distinct numbers that libphonenumber-js accepts as valid.
const AREA_CODES = [
  201, 202, 203, 205, 206, 207, 208, 209, 210, 212, 213, 214, 215, 216, 217, 218, 219, 224, 225, 228,
  229, 231, 234, 239, 240, 248, 251, 252, 253, 254, 256, 260, 262, 267, 269, 270, 276, 281, 301, 302,
  303, 304, 305, 307, 308, 309, 310, 312, 313, 314, 315, 316, 317, 318, 319, 320, 321, 323, 325, 330,
  334, 336, 337, 339, 347, 351, 352, 360, 361, 386, 401, 402, 404, 405, 406, 407, 408, 409, 410, 412,
  413, 414, 415, 417, 419, 423, 425, 430, 432, 434, 435, 440, 443, 469, 478, 479, 480, 484, 501, 502,
] as const;

/** How many distinct numbers validPhone can produce. */
export const VALID_PHONE_COUNT = AREA_CODES.length * 10_000;

/** The i-th distinct valid US phone number in E.164 (+1 AAA 555 XXXX), for 0 <= i < VALID_PHONE_COUNT. */
export function validPhone(i: number): string {
  return areaCodePhone(i, AREA_CODES);
}

/**
 * The i-th distinct phone number (+1 AAA 555 XXXX) over these NANP area codes (Alaska's, Hawaii's, Puerto Rico's,
 * Canada's...; real ones, so the numbers are valid), for 0 <= i < areaCodes.length * 10,000.
 */
export function areaCodePhone(i: number, areaCodes: readonly number[]): string {
  if (!Number.isInteger(i) || i < 0 || i >= areaCodes.length * 10_000) {
    throw new RangeError(`validPhone: index ${i} is outside 0..${areaCodes.length * 10_000 - 1}`);
  }
  // Area code varies fastest so that a small sample still spreads over many area codes.
  const area = areaCodes[i % areaCodes.length]!;
  const line = Math.floor(i / areaCodes.length);
  return `+1${area}555${String(line).padStart(4, '0')}`;
}

/** mulberry32: a tiny, fast, seedable PRNG; quality is ample for picking names. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(rand: () => number, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)]!;
}

/** Writes an E.164 US number the way people type it into a CRM. */
function humanFormat(e164: string, style: number): string {
  const area = e164.slice(2, 5);
  const exchange = e164.slice(5, 8);
  const line = e164.slice(8);
  switch (style) {
    case 0: return e164;
    case 1: return `(${area}) ${exchange}-${line}`;
    case 2: return `${area}.${exchange}.${line}`;
    default: return `+1 ${area}-${exchange}-${line}`;
  }
}

function emailPart(name: string): string {
  return name.toLowerCase().replace(/[^a-z]/g, '');
}

/**
 * People start..start+count-1. Each person is derived from (seed, index) alone, so a slice generated
 * on its own equals the same slice of a larger run. `areaCodes`: their phones' area codes (validPhone's).
 */
export function generatePeople(count: number, seed = 1, start = 0, areaCodes?: readonly number[]): GeneratedPerson[] {
  const people: GeneratedPerson[] = [];
  for (let index = start; index < start + count; index++) {
    const rand = mulberry32((Math.imul(seed, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0);
    const firstName = pick(rand, FIRST_NAMES);
    const lastName = pick(rand, LAST_NAMES);
    const company = pick(rand, COMPANIES);
    const style = Math.floor(rand() * 4);
    people.push({
      index,
      firstName,
      lastName,
      // The index keeps emails unique however often a name pair repeats.
      email: `${emailPart(firstName)}.${emailPart(lastName)}.${index}@example.com`,
      phone: humanFormat(areaCodes ? areaCodePhone(index, areaCodes) : validPhone(index), style),
      company,
    });
  }
  return people;
}

/**
 * Whether person `index` is seeded Do Not Call when a share of the people is (0 to 1): derived from (seed, index)
 * alone, like the people, so a slice agrees with a larger run.
 */
export function seededDoNotCall(index: number, share: number, seed = 1): boolean {
  if (share <= 0) return false;
  return mulberry32((Math.imul(seed, 0x27d4eb2f) ^ Math.imul(index + 1, 0x165667b1)) >>> 0)() < share;
}
