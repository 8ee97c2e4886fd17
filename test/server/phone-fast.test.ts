// The compiled phone-number matchers answer exactly as libphonenumber-js does: on 1,000,000 seeded inputs over every calling code.
//
// checkPhoneNumber(raw) is checkQuickly(raw) ?? checkPhoneNumberSlowly(raw), and checkPhoneNumberSlowly is the
// libphonenumber-js-only check as it was before the fast path. So the answers are identical wherever
// checkQuickly's are; those are compared with the reference on every input. Where checkQuickly leaves the input
// to libphonenumber-js (rejections: ~30 us each on both sides), every 8th is compared end to end, which also
// shows that the fast path left no valid number behind.
import { describe, expect, it } from 'vitest';
import { checkPhoneNumber, checkPhoneNumberSlowly, checkQuickly, type PhoneCheck } from '../../server/phone-numbers.ts';
import { PhoneValidator } from '../../server/phone-validator.ts';
import { CALLING_CODES, phoneSamples } from '../support/phone-samples.ts';

const INPUTS = 1_000_000;
const CHUNK = 50_000;
const SLOW_SAMPLE_EVERY = 8;

const same = (a: PhoneCheck | undefined, b: PhoneCheck) =>
  a !== undefined && a.ok === b.ok && (a.ok ? a.e164 === (b as { e164: string }).e164 : a.reason === (b as { reason: string }).reason);

const codes = new Set(CALLING_CODES.map((c) => c.code));
const callingCodeOf = (e164: string) => [2, 3, 4].map((n) => e164.slice(1, n)).find((c) => codes.has(c));

describe('fast phone number checks', () => {
  it(`answer ${INPUTS} generated inputs over every calling code as libphonenumber-js does`, () => {
    let quick = 0;
    let validQuick = 0;
    let leftToLibrary = 0;
    let comparedEndToEnd = 0;
    const mismatches: string[] = [];
    const validByCode = new Map<string, number>();
    for (let from = 0; from < INPUTS; from += CHUNK) {
      for (const raw of phoneSamples(Math.min(CHUNK, INPUTS - from), 20240611 + from)) {
        const fast = checkQuickly(raw);
        if (fast) {
          quick++;
          const reference = checkPhoneNumberSlowly(raw);
          if (!same(fast, reference)) mismatches.push(`${JSON.stringify(raw)}: ${JSON.stringify(fast)} vs ${JSON.stringify(reference)}`);
          if (fast.ok) {
            validQuick++;
            const code = callingCodeOf(fast.e164)!;
            validByCode.set(code, (validByCode.get(code) ?? 0) + 1);
          }
        } else if (leftToLibrary++ % SLOW_SAMPLE_EVERY === 0) {
          comparedEndToEnd++;
          const reference = checkPhoneNumberSlowly(raw);
          const got = checkPhoneNumber(raw);
          // A valid number here would be one the fast path missed: right answer, but slow.
          if (reference.ok || !same(got, reference)) mismatches.push(`${JSON.stringify(raw)} (left to libphonenumber-js): ${JSON.stringify(got)} vs ${JSON.stringify(reference)}`);
        }
      }
    }
    expect(mismatches.slice(0, 20)).toEqual([]);
    // The mix is broad: mostly valid numbers, many rejections, and valid numbers under every calling code.
    expect(quick + leftToLibrary).toBe(INPUTS);
    expect(validQuick).toBeGreaterThan(INPUTS * 0.5);
    expect(leftToLibrary).toBeGreaterThan(INPUTS * 0.2);
    expect(comparedEndToEnd).toBeGreaterThan(INPUTS * 0.02);
    expect(CALLING_CODES.filter((c) => !validByCode.has(c.code)).map((c) => c.code)).toEqual([]);
  }, 180_000);

  it.each([
    // from the API tests, and libphonenumber-js's harder cases: shared calling codes, national prefixes and
    // transform rules (AR 9 / 15, BR carrier codes, NANP area codes, GB dependencies), non-geographic codes.
    '+1 (212) 555-0100', '0049 30 901820', '442079460000', 'call me', '+1555', '+1 212 555 20', '12125550102',
    '+12685551234', '+1 268 555 1234', '+13405551234', '+16135550123', '+17875550123', '+18095550123',
    '+5491123456789', '+54 9 11 2345 6789', '+541115123456789', '+5401123456789', '+5411 15 2345 6789',
    '+5521987654321', '+55 0 21 98765 4321', '+55 021 98765 4321', '+55901521987654321',
    '+447911123456', '+447624369230', '+441481256789', '+441534456789', '+4401481256789',
    '+79123456789', '+77012345678', '+78005553535', '+7 8 800 555 35 35', '+390669812345', '+39 06 698 12345',
    '+61412345678', '+61891621234', '+61891641234', '+262692123456', '+262269612345', '+590690123456',
    '+80012345678', '+80812345678', '+870773111632', '+8816123456789', '+882345678901', '+97912345678',
    '+2125288123456', '+212528812345', '+35818123456', '+3581812345', '+59997012345', '+5999123456',
    '+0123456789', '+', '', '00', '0', '+1', '+12', '+123', '+999123456', '+2 1234', '+210', '+691234',
    '+123456789012345678', '+4930123456789012345678', '1'.repeat(64), '1'.repeat(65), '+49 (30) 12/34-56.7',
    '+49３０1234567', '+4930 1234567 ext. 12', '+4930\t1234567', '+4930\u00a01234567',
  ])('answers %j as libphonenumber-js does', (raw) => {
    expect(checkPhoneNumber(raw)).toEqual(checkPhoneNumberSlowly(raw));
  });

  it('keeps the worker pool\'s answers, in order, when a batch holds many rejections', async () => {
    const validator = new PhoneValidator(1);
    try {
      const raws = phoneSamples(3_000, 99);
      const got = await validator.check(raws);
      const slow = raws.filter((raw) => !checkQuickly(raw)).length;
      expect(slow).toBeGreaterThan(500); // enough to go to the worker
      expect(got).toEqual(raws.map(checkPhoneNumberSlowly));
    } finally {
      await validator.close();
    }
  });
});
