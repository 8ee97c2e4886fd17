// The Do Not Call values table and its reader: every value of the table reads as the table says, in any case and with
// spaces around; option lists mark exactly their values; a value that is neither is an error naming the field, and marks.
import { describe, expect, it } from 'vitest';
import type { Mapping } from '../../daemon/config.ts';
import { mapContact } from '../../daemon/sync/contacts.ts';
import { DO_NOT_CALL_VALUES, readDoNotCall, type DoNotCallField } from '../../daemon/sync/do-not-call.ts';

const FIELD: DoNotCallField[] = [{ field: 'dnc' }];
const read = (value: unknown, rules = FIELD) => readDoNotCall({ dnc: value }, rules);

describe('the yes/no table', () => {
  it('reads every marking value as marked and every clearing value as clear, in any case and with spaces around', () => {
    for (const v of DO_NOT_CALL_VALUES.marked) {
      for (const spelled of [v, v.toUpperCase(), ` ${v} `]) expect({ v: spelled, ...read(spelled) }).toEqual({ v: spelled, marked: true, unreadable: [] });
    }
    for (const v of DO_NOT_CALL_VALUES.clear) {
      for (const spelled of [v, v.toUpperCase(), ` ${v} `]) expect({ v: spelled, ...read(spelled) }).toEqual({ v: spelled, marked: false, unreadable: [] });
    }
  });

  it('reads JSON booleans and 1/0, a missing or null value as clear, a list as marked when any entry marks it', () => {
    expect(read(true).marked).toBe(true);
    expect(read(1).marked).toBe(true);
    for (const v of [false, 0, null, undefined, []]) expect(read(v)).toEqual({ marked: false, unreadable: [] });
    expect(read(['no', 'yes']).marked).toBe(true);
    expect(read(['no', false]).marked).toBe(false);
    // Pipedrive's v2 custom field objects read as their value.
    expect(read({ type: 'varchar', value: 'Yes' }).marked).toBe(true);
  });

  it('a value that is neither is unreadable: it marks the contact and names the field and the value', () => {
    for (const v of ['maybe', 2, -1, { a: 1 }, ['yes', 'perhaps']]) {
      const r = read(v);
      expect(r.marked).toBe(true);
      expect(r.unreadable).toHaveLength(1);
      expect(r.unreadable[0]).toMatchObject({ field: 'dnc', value: typeof v === 'string' ? v : JSON.stringify(v) });
      expect(r.unreadable[0]!.reason).toMatch(/^Do Not Call field dnc holds a value that is neither yes \(true, yes, .*\) nor no \(false, no, .*empty\); the contact's numbers are held out of the campaign until it is one$/);
    }
    // A long value is shown cut short.
    expect(read('x'.repeat(60)).unreadable[0]!.value).toBe(`${'x'.repeat(37)}...`);
  });
});

describe('a marked list (an option field)', () => {
  const rules: DoNotCallField[] = [{ field: 'dnc', marked: [101, 'Do not call'] }];
  it('marks exactly its values (numbers and text alike), a list when any entry is one; nothing else marks', () => {
    expect(read(101, rules).marked).toBe(true);
    expect(read('101', rules).marked).toBe(true);
    expect(read('Do not call', rules).marked).toBe(true);
    expect(read([7, 101], rules).marked).toBe(true);
    for (const v of [102, 'yes', true, 1, null, [7, 8]]) expect({ v, ...read(v, rules) }).toEqual({ v, marked: false, unreadable: [] });
    const odd = read({ id: 101 }, rules);
    expect(odd.marked).toBe(true);
    expect(odd.unreadable[0]!.reason).toMatch(/^Do Not Call field dnc holds a value that is not an option id or text \(mapping.doNotCall.marked lists 101, Do not call\)/);
  });

  it('any of several fields marks the contact (Salesforce\'s DoNotCall and the mapping\'s own)', () => {
    const both: DoNotCallField[] = [{ field: 'DoNotCall' }, { field: 'Legal_Hold__c' }];
    expect(readDoNotCall({ DoNotCall: false, Legal_Hold__c: 'yes' }, both).marked).toBe(true);
    expect(readDoNotCall({ DoNotCall: true, Legal_Hold__c: null }, both).marked).toBe(true);
    expect(readDoNotCall({ DoNotCall: false }, both).marked).toBe(false);
  });
});

describe('mapping a contact', () => {
  const mapping = { id: 'id', phone: ['phone'], variables: { Name: 'name' }, defaultCountry: 'US', doNotCall: FIELD } as Mapping;
  it('a marked contact keeps its numbers (to hold them out) and no variables, even ones over the limit', () => {
    const { contact, errors } = mapContact({ id: 'c1', fields: { phone: '+12125550100', name: 'x'.repeat(5000), dnc: 'yes' } }, mapping);
    // A readable mark: the numbers go on the company's Do Not Call list too.
    expect(contact).toEqual({ id: 'c1', phones: ['+12125550100'], varValues: [], hash: '', doNotCall: true, markedDoNotCall: true });
    expect(errors).toEqual([]);
  });

  it('an unreadable value is a bad_record error of the contact, which is held as marked', () => {
    const { contact, errors } = mapContact({ id: 'c2', line: 7, fields: { phone: '+12125550101', name: 'Ann', dnc: 'maybe' } }, mapping);
    expect(contact?.doNotCall).toBe(true);
    // A value that cannot be read holds the contact out, but says nothing of its wish: not put on the company's list.
    expect(contact?.markedDoNotCall).toBeUndefined();
    expect(errors).toEqual([expect.objectContaining({ contactId: 'c2', line: 7, field: 'dnc', value: 'maybe', code: 'bad_record' })]);
  });

  it('a clear contact maps as before, without the mark', () => {
    const { contact } = mapContact({ id: 'c3', fields: { phone: '+12125550102', name: 'Ben', dnc: 'no' } }, mapping);
    expect(contact).toMatchObject({ id: 'c3', phones: ['+12125550102'], varValues: ['Ben'] });
    expect(contact?.doNotCall).toBeUndefined();
  });
});
