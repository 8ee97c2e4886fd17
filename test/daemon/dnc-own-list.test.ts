// The company's own Do Not Call list in a real Redis (daemon/dnc/own-list.ts): add, remove and list with who and when,
// a log of every change, bad input refused by name, and the lookup's answers.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { OwnList } from '../../daemon/dnc/own-list.ts';
import { DncKeys } from '../../daemon/state/keys.ts';
import { REDIS_URL, testPrefix } from '../support/daemon.ts';

const redis = new Redis(REDIS_URL);
const prefixes: { cleanup(): Promise<void> }[] = [];
afterAll(async () => {
  for (const p of prefixes) await p.cleanup();
  redis.disconnect();
});

const clock = { now: Date.parse('2026-11-29T12:00:00Z') };
function fresh(): { own: OwnList; keys: DncKeys } {
  const p = testPrefix();
  prefixes.push(p);
  const keys = new DncKeys(p.prefix);
  return { own: new OwnList(redis, keys, 'company', { now: () => clock.now }), keys };
}

describe("the company's own list", () => {
  it('adds, keeps the first record of a number added twice, removes, and logs who did each and when', async () => {
    const { own } = fresh();
    expect(await own.add(['+12015550123', '+442071234567'], { by: 'agent 7', reason: ' asked on the call ' })).toBe(2);
    const first = new Date(clock.now).toISOString();
    clock.now += 60_000;
    expect(await own.add(['+12015550123', '+12015550124'], { by: 'web form' })).toBe(1);
    expect(await own.size()).toBe(3);
    const listed = await own.lookup(['+12015550123', '+12015550124', '+12015550125', '+442071234567']);
    expect(listed).toEqual([
      { list: 'company', status: 'listed', entry: { at: first, by: 'agent 7', reason: 'asked on the call' } },
      { list: 'company', status: 'listed', entry: { at: new Date(clock.now).toISOString(), by: 'web form' } },
      { list: 'company', status: 'not-listed' },
      { list: 'company', status: 'listed', entry: { at: first, by: 'agent 7', reason: 'asked on the call' } },
    ]);

    clock.now += 60_000;
    expect(await own.remove(['+12015550123', '+12015550125'], { by: 'compliance officer', reason: 'entered by mistake' })).toBe(1);
    expect((await own.lookup(['+12015550123']))[0]!.status).toBe('not-listed');
    const page = await own.page();
    expect(page.cursor).toBe('0');
    expect(page.entries.map((e) => e.number).sort()).toEqual(['+12015550124', '+442071234567']);
    expect((await own.log()).map((l) => `${l.op} ${l.number} ${l.by} ${l.at.slice(11, 16)}`)).toEqual([
      'add +12015550123 agent 7 12:00', 'add +442071234567 agent 7 12:00',
      'add +12015550123 web form 12:01', 'add +12015550124 web form 12:01', // asked again: logged, its first record kept
      'remove +12015550123 compliance officer 12:02', 'remove +12015550125 compliance officer 12:02',
    ]);
  });

  it('refuses a number not in E.164 and a change without who, changing nothing', async () => {
    const { own } = fresh();
    await expect(own.add(['+12015550123', '201-555-0124'], { by: 'x' })).rejects.toThrow('"201-555-0124" is not a phone number in E.164');
    await expect(own.add(['+12015550123'], { by: ' ' })).rejects.toThrow("a change of the company's Do Not Call list names who makes it (by)");
    await expect(own.remove(['+12015550123'], { by: '' })).rejects.toThrow('names who makes it (by)');
    expect(await own.size()).toBe(0);
    expect(await own.log()).toEqual([]);
  });

  it('answers listed for a number whose record cannot be read', async () => {
    const { own, keys } = fresh();
    await redis.hset(keys.ownNumbers('company'), '+12015550123', 'not json');
    expect(await own.lookup(['+12015550123'])).toEqual([{ list: 'company', status: 'listed', reason: 'its record cannot be read (kept as listed)' }]);
  });
});
