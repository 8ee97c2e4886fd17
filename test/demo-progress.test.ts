// The demo's progress view as it draws what the rules hold back: numbers waiting for the calling window and when it
// opens (in the dialer's time and in real seconds at its speed), numbers at a call cap, numbers held by Do Not Call;
// and when the demo counts as settled (Do Not Call contacts have no number; none may wait for the window).
import { expect, it } from 'vitest';
import { plainLine, settled, viewLines, type Counts } from '../demo/progress.ts';

const plain = (lines: string[]) => lines.map((l) => l.replace(/\x1b\[[0-9;]*m/g, ''));

const waiting: Counts = {
  crmContacts: 300, synced: 0, calls: 0, activities: 0,
  byStatus: { NotContacted: 0, Contacting: 0, RetryPending: 0, Success: 0, Failure: 0 },
  dialerClock: { now: '2026-12-01T17:49:00.000Z', speed: 60 },
  daemon: {
    contacts: 300, numbers: 0, parked: 0, mirrorParked: 0, lastRun: null, doNotCall: 32,
    rules: { state: 'Paused', nextEdgeAt: '2026-12-01T18:00:00.000Z', window: 300, cap: 0, nextCapReleaseAt: null },
  },
};

const done: Counts = {
  ...waiting, synced: 268, calls: 567, activities: 567,
  byStatus: { NotContacted: 0, Contacting: 0, RetryPending: 0, Success: 182, Failure: 86 },
  dialerClock: { now: '2026-12-01T19:00:00.000Z', speed: 60 },
  daemon: { ...waiting.daemon!, numbers: 268, rules: { state: 'Active', nextEdgeAt: '2026-12-01T22:58:00.000Z', window: 0, cap: 2, nextCapReleaseAt: '2026-12-02T18:31:00.000Z' } },
};

it('says what the window, the call cap and Do Not Call hold back, and when the window opens', () => {
  const lines = plain(viewLines(waiting, 5000));
  expect(lines[0]).toBe("Progress 00:05   dialer's clock Tue 17:49 UTC (60x)");
  expect(lines).toContain("  Held back by the rules     window 300 (campaign paused: the callees' calling window is closed; opens Tue 18:00 UTC, in 11 s)  call cap 0  Do Not Call 32");
  expect(plainLine(waiting, 5000)).toMatch(/ \| held: window 300 cap 0 dnc 32, campaign Paused until 2026-12-01T18:00:00\.000Z$/);

  expect(plain(viewLines(done, 80_000))).toContain('  Held back by the rules     window 0 (open; the campaign pauses Tue 22:58 UTC, in 4 min)  call cap 2 (next released Wed 18:31 UTC)  Do Not Call 32');
});

it('is settled once every number not held by Do Not Call is final and mirrored, and none waits for the window', () => {
  expect(settled(done)).toBe(true);
  expect(plainLine(done, 80_000)).toMatch(/ \| settled$/);
  // Numbers still waiting for the window: not settled, whatever the dialer's counts say.
  expect(settled({ ...done, daemon: { ...done.daemon!, rules: { ...done.daemon!.rules!, window: 5 } } })).toBe(false);
  // A contact without a number that Do Not Call does not explain: not settled.
  expect(settled({ ...done, daemon: { ...done.daemon!, doNotCall: 31 } })).toBe(false);
});
