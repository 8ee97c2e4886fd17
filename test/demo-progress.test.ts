// The demo's progress view as it draws what the rules hold back: numbers waiting for the calling window and when it
// opens (in the dialer's time and in real seconds at its speed), numbers at a call cap, numbers held by Do Not Call;
// and when the demo counts as settled (Do Not Call contacts have no number; none may wait for the window); and what
// became of the contact changed last, from the daemon's per-number view.
import { expect, it } from 'vitest';
import { lastChangeOf, plainLine, settled, viewLines, type Counts, type OpsNumber } from '../demo/progress.ts';

const plain = (lines: string[]) => lines.map((l) => l.replace(/\x1b\[[0-9;]*m/g, ''));

const waiting: Counts = {
  crmContacts: 300, synced: 0, calls: 0, activities: 0,
  byStatus: { NotContacted: 0, Contacting: 0, RetryPending: 0, Success: 0, Failure: 0 },
  dialerClock: { now: '2026-12-01T17:49:00.000Z', speed: 60 },
  daemon: {
    contacts: 300, numbers: 0, parked: 0, mirrorParked: 0, lastRun: null, doNotCall: 32, listed: 30,
    rules: { state: 'Paused', nextEdgeAt: '2026-12-01T18:00:00.000Z', window: 300, cap: 0, nextCapReleaseAt: null },
  },
  lastChange: null,
};

const done: Counts = {
  ...waiting, synced: 238, calls: 567, activities: 567,
  byStatus: { NotContacted: 0, Contacting: 0, RetryPending: 0, Success: 182, Failure: 86 },
  dialerClock: { now: '2026-12-01T19:00:00.000Z', speed: 60 },
  daemon: { ...waiting.daemon!, numbers: 238, rules: { state: 'Active', nextEdgeAt: '2026-12-01T22:58:00.000Z', window: 0, cap: 2, nextCapReleaseAt: '2026-12-02T18:31:00.000Z' } },
};

it('says what the window, the call cap and Do Not Call hold back, and when the window opens', () => {
  const lines = plain(viewLines(waiting, 5000));
  expect(lines[0]).toBe("Progress 00:05   dialer's clock Tue 17:49 UTC (60x)");
  expect(lines).toContain("  Held back by the rules     window 300 (campaign paused: the callees' calling window is closed; opens Tue 18:00 UTC, in 11 s)  call cap 0  Do Not Call 32  Do Not Call lists 30");
  expect(plainLine(waiting, 5000)).toMatch(/ \| held: window 300 cap 0 dnc 32 lists 30, campaign Paused until 2026-12-01T18:00:00\.000Z$/);

  expect(plain(viewLines(done, 80_000))).toContain('  Held back by the rules     window 0 (open; the campaign pauses Tue 22:58 UTC, in 4 min)  call cap 2 (next released Wed 18:31 UTC)  Do Not Call 32  Do Not Call lists 30');
});

it('is settled once every number not held by Do Not Call is final and mirrored, and none waits for the window', () => {
  expect(settled(done)).toBe(true);
  expect(plainLine(done, 80_000)).toMatch(/ \| settled$/);
  // Numbers still waiting for the window: not settled, whatever the dialer's counts say.
  expect(settled({ ...done, daemon: { ...done.daemon!, rules: { ...done.daemon!.rules!, window: 5 } } })).toBe(false);
  // A contact without a number that Do Not Call does not explain: not settled.
  expect(settled({ ...done, daemon: { ...done.daemon!, doNotCall: 31 } })).toBe(false);
  // Nor one the Do Not Call lists do not explain.
  expect(settled({ ...done, daemon: { ...done.daemon!, listed: 29 } })).toBe(false);
});

const number = (state: string, more: Partial<OpsNumber> = {}): OpsNumber => ({
  campaignId: 'c1', phone: '+12125550199', state, doNotCall: 0, parked: null, window: { open: true, opensAt: null }, ...more,
});

it('follows the changed contact\'s number the campaign does not hold yet: added, held by Do Not Call, or by the calling window', () => {
  const open = done.daemon!.rules;
  const paused = waiting.daemon!.rules;
  // Its other number was there before the change: the new one is the one followed.
  expect(lastChangeOf('1002', [number('held', { phone: '+16175550000' }), number('dirty')], paused))
    .toEqual({ contactId: '1002', phone: '+12125550199', outcome: { is: 'window', opensAt: '2026-12-01T18:00:00.000Z' } });
  expect(lastChangeOf('1002', [number('held', { phone: '+16175550000' }), number('held')], open).outcome).toEqual({ is: 'added', campaignId: 'c1' });
  // Do Not Call holds it whether the window is open or not; the daemon keeps it dirty while the campaign is paused.
  expect(lastChangeOf('1001', [number('dirty', { doNotCall: 1 })], paused).outcome).toEqual({ is: 'do-not-call' });
  expect(lastChangeOf('1001', [number('do-not-call', { doNotCall: 1 })], open).outcome).toEqual({ is: 'do-not-call' });
  // The campaign is open but the number's own window is closed.
  expect(lastChangeOf('1003', [number('wanted', { window: { open: false, opensAt: '2026-12-02T13:00:00.000Z' } })], open).outcome)
    .toEqual({ is: 'window', opensAt: '2026-12-02T13:00:00.000Z' });
  expect(lastChangeOf('1003', [number('parked', { parked: { reason: 'invalid number' } })], open).outcome).toEqual({ is: 'refused', reason: 'invalid number' });
  // Not read yet, even while the campaign is paused: the window holds nothing the daemon has not read.
  expect(lastChangeOf('1003', [number('unknown', { window: null })], paused).outcome).toEqual({ is: 'pending', state: 'unknown' });
  expect(lastChangeOf('1004', [], open)).toEqual({ contactId: '1004', phone: null, outcome: { is: 'no-number' } });
});

it('says what became of the last change, in the view and the plain line', () => {
  const held: Counts = { ...waiting, lastChange: { contactId: '1002', phone: '+12125550199', outcome: { is: 'window', opensAt: '2026-12-01T18:00:00.000Z' } } };
  expect(plain(viewLines(held, 5000))).toContain('  Last change                contact 1002 +12125550199 held by the calling window (waiting for it to open at Tue 18:00 UTC, in 11 s)');
  expect(plainLine(held, 5000)).toMatch(/ \| last change: contact 1002 \+12125550199 held by the calling window \(waiting for it to open at 2026-12-01T18:00:00\.000Z\)$/);

  const added: Counts = { ...done, lastChange: { contactId: '1002', phone: '+12125550199', outcome: { is: 'added', campaignId: 'c1' } } };
  expect(plain(viewLines(added, 80_000))).toContain('  Last change                contact 1002 +12125550199 added to campaign c1');
  // Still settled: the change is in the campaign (its call comes, and the counts say so).
  expect(plainLine(added, 80_000)).toMatch(/ \| last change: contact 1002 \+12125550199 added to campaign c1 \| settled$/);

  const dnc: Counts = { ...done, lastChange: { contactId: '1001', phone: '+12125550199', outcome: { is: 'do-not-call' } } };
  expect(plainLine(dnc, 80_000)).toContain(' | last change: contact 1001 +12125550199 held by Do Not Call');
  expect(plainLine({ ...done, lastChange: { contactId: '1003', phone: '+12125550199', outcome: { is: 'pending', state: 'unknown' } } }, 80_000))
    .toContain(' | last change: contact 1003 +12125550199 not read by the daemon yet');
  // No change yet: no line.
  expect(plain(viewLines(done, 80_000)).some((l) => l.includes('Last change'))).toBe(false);
});
