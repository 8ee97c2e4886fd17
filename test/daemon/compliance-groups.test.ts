// Window groups and call caps as tables: which campaign state each group wants at an instant (paused a margin before
// the close, across the 2026 DST changes), when the edge job runs next, and Florida's 3 calls in 24 hours.
import { describe, expect, it } from 'vitest';
import { cappedUntil, overCap } from '../../daemon/compliance/cap.ts';
import { edges, nextEdge, windowGroup } from '../../daemon/compliance/groups.ts';
import { locate } from '../../daemon/compliance/locate.ts';
import { DEFAULT_RULE_SET } from '../../api/calling-window/window.ts';

const t = (s: string) => Date.parse(s.replace('Z', ':00Z'));
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString().slice(0, 16) + 'Z');
const group = (phone: string) => windowGroup(locate(phone), DEFAULT_RULE_SET)!;
const MARGIN = 60_000;

describe('window groups', () => {
  it.each([
    ['+12125550123', 'America/New_York'],
    ['+13055550123', 'America/New_York|FL'],
    ['+14165550123', 'America/Toronto'],
    ['+12195550123', 'America/Chicago+America/New_York'],
    ['+19285550123', 'America/Denver+America/Phoenix'],
  ])('%s is in group %s', (phone, key) => {
    expect(group(phone).key).toBe(key);
  });

  it('a callee without zones has no group (it is held)', () => {
    expect(windowGroup({ zones: [], states: [] }, DEFAULT_RULE_SET)).toBeNull();
  });

  it('state rows split groups only when they apply', () => {
    expect(windowGroup(locate('+13055550123'), { stateRules: false })!.key).toBe('America/New_York');
    expect(windowGroup({ zones: ['America/New_York'], states: ['NY'] }, DEFAULT_RULE_SET)!.key).toBe('America/New_York');
  });

  it.each([
    // group phone, now, want, next change
    ['+12125550123', '2026-03-08T11:59Z', 'Paused', '2026-03-08T12:00Z'], // spring forward: 08:00 EDT
    ['+12125550123', '2026-03-08T12:00Z', 'Active', '2026-03-09T00:59Z'], // paused a minute before 21:00 EDT
    ['+12125550123', '2026-03-09T00:59Z', 'Paused', '2026-03-09T12:00Z'],
    ['+12125550123', '2026-11-01T12:00Z', 'Paused', '2026-11-01T13:00Z'], // fall back: 08:00 EST
    ['+13055550123', '2026-07-01T23:58Z', 'Active', '2026-07-01T23:59Z'], // Florida closes at 20:00 EDT
    ['+13055550123', '2026-07-01T23:59Z', 'Paused', '2026-07-02T12:00Z'],
    ['+18085550123', '2026-07-01T12:00Z', 'Paused', '2026-07-01T18:00Z'],
    ['+17875550123', '2026-01-15T00:58Z', 'Active', '2026-01-15T00:59Z'],
  ])('%s at %s wants %s until %s', (phone, now, want, next) => {
    const [e] = edges([group(phone)], DEFAULT_RULE_SET, t(now), MARGIN);
    expect({ want: e!.want, next: iso(e!.next) }).toEqual({ want, next });
  });

  it('the edge job runs next at the earliest change of any group', () => {
    const list = edges([group('+12125550123'), group('+18085550123')], DEFAULT_RULE_SET, t('2026-07-01T12:30Z'), MARGIN);
    expect(list.map((e) => e.want)).toEqual(['Active', 'Paused']);
    expect(iso(nextEdge(list))).toBe('2026-07-01T18:00Z');
  });
});

describe('call caps', () => {
  const FL = { calls: 3, hours: 24 };
  it.each([
    [[], '2026-07-01T12:00Z', null],
    [['2026-07-01T12:00Z', '2026-07-01T13:00Z'], '2026-07-01T14:00Z', null],
    [['2026-07-01T12:00Z', '2026-07-01T13:00Z', '2026-07-01T14:00Z'], '2026-07-01T15:00Z', '2026-07-02T12:00Z'],
    [['2026-06-30T11:00Z', '2026-07-01T13:00Z', '2026-07-01T14:00Z'], '2026-07-01T15:00Z', null], // the first aged out
    [['2026-07-01T12:00Z', '2026-07-01T13:00Z', '2026-07-01T14:00Z', '2026-07-01T14:30Z'], '2026-07-01T15:00Z', '2026-07-02T13:00Z'],
  ] as const)('starts %j at %s: held until %s', (starts, at, until) => {
    expect(iso(cappedUntil(starts.map(t), FL, t(at)))).toBe(until);
  });

  it('counts the calls that broke a cap', () => {
    const starts = ['2026-07-01T12:00Z', '2026-07-01T13:00Z', '2026-07-01T14:00Z', '2026-07-02T11:00Z', '2026-07-02T12:00Z'].map(t);
    // The 4th (11:00 next day) has three in the 24 h before it; so has the 5th (12:00 next day: 13:00, 14:00, 11:00).
    expect(overCap(starts, FL)).toBe(2);
    expect(overCap([...starts.slice(0, 3), t('2026-07-02T12:00Z')], FL)).toBe(0);
    expect(overCap(starts.slice(0, 3), FL)).toBe(0);
  });
});
