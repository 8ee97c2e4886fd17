// The calling window fails closed on a Redis Cluster too (issue 36 §1, §2), on the reference server's manual clock: a
// governed campaign with numbers waiting at night, two daemon processes on a cluster of three masters and three
// replicas; the master holding the campaign's window keys is killed (its replica takes over), then every master is
// emptied while the processes run, then again before two new processes start. Each time the campaign stays Paused
// (a process that finds no judgement pauses it before it reads what the campaign holds), it is set Active only once
// the window of every number it holds is open, and no call starts outside its callee's window.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Daemon } from '../../daemon/app.ts';
import { locate } from '../../daemon/compliance/locate.ts';
import { callingWindow, DEFAULT_RULE_SET } from '../../api/calling-window/window.ts';
import { callDetailRecords, campaignNumbers, quietLog, testPrefix, waitFor } from '../support/daemon.ts';
import { campaignState, governedConfig, governedDialer, outside, type Call } from '../support/governed.ts';
import { startProxy } from '../support/proxy.ts';
import { startRedisCluster } from '../support/redis-cluster.ts';

const STEP_S = 300;
const SYNC = 'night';
/** New York (two), Chicago, Los Angeles: the window they share opens at 08:00 in Los Angeles (15:00 UTC). */
const PHONES = ['+12122345670', '+12122345671', '+13122345670', '+12132345670'];

/** What the window wants at `t`, by the daemon's own judgement of each number: Active only while every one is open. */
const wanted = (t: number) => (PHONES.every((p) => callingWindow(locate(p), DEFAULT_RULE_SET, t).open) ? 'Active' : 'Paused');

describe('a Redis Cluster that fails over, then loses its data, at night', () => {
  it('keeps the campaign Paused until the window of the numbers it holds opens, and no call starts outside its callee\'s window', async () => {
    const cluster = await startRedisCluster();
    // 16:00 in New York: the numbers go in while the window is open.
    const start = '2026-07-01T20:00:00Z';
    const f = await governedDialer(start);
    // The daemons talk to the dialer through a proxy that notes, in order, each request and the campaign state set.
    const proxy = await startProxy(f.server.url);
    const sent: { method: string; path: string; state?: string; at: number }[] = [];
    let now = Date.parse(start);
    proxy.interceptWithBody = (req, body) => {
      const path = req.url!.split('?')[0]!;
      sent.push({ method: req.method!, path, at: now, ...(path.endsWith('/state') ? { state: JSON.parse(body.toString()) as string } : {}) });
      return undefined;
    };
    /** From `mark` on: a campaign state set before any read of the campaign's numbers, and that state Paused. */
    const pausedBeforeRead = (mark: number) => {
      const after = sent.slice(mark);
      const set = after.findIndex((r) => r.state);
      const read = after.findIndex((r) => r.method === 'GET' && r.path.endsWith('/numbers'));
      return { firstState: after[set]?.state, setBeforeRead: set >= 0 && (read < 0 || set < read) };
    };
    const dir = mkdtempSync(join(tmpdir(), 'cds-compliance-cluster-'));
    const { prefix } = testPrefix();
    const cfg = governedConfig(f, { dir, prefix, id: SYNC, rows: PHONES.map((p, i) => `c${i},${p}`).join('\n'), redis: { cluster: cluster.urls }, dialerUrl: proxy.url });
    const daemons: Daemon[] = [];
    const startDaemon = async (schedules: boolean) => {
      const d = await Daemon.start(cfg, { log: quietLog, now: () => now, schedules });
      daemons.push(d);
      return d;
    };
    /** One check by `d` at the daemons' time, then the dialer's clock moved on by a step, then the daemons'. */
    const step = async (d: Daemon) => {
      const state = await d.enforceWindow(d.runtimes.get(SYNC)!, 'test', true);
      expect({ at: new Date(now).toISOString(), state }).toEqual({ at: new Date(now).toISOString(), state: wanted(now) });
      expect(await campaignState(f)).toBe(state);
      await f.server.advance(STEP_S);
      now += STEP_S * 1000;
    };
    try {
      const a = await startDaemon(true);
      await waitFor(async () => (await campaignNumbers(f)).length === PHONES.length, 'the numbers in the open campaign');
      expect(await campaignState(f)).toBe('Active');
      // 01:36 in New York: the check pauses the campaign before the dialer's clock gets there; the numbers wait.
      now = Date.parse('2026-07-02T05:36:00Z');
      expect(await a.enforceWindow(a.runtimes.get(SYNC)!, 'test', true)).toBe('Paused');
      await f.server.advance((now - Date.parse(start)) / 1000);
      // A second process, without schedules (no run of its own reads the CSV again).
      const b = await startDaemon(false);
      expect(await campaignState(f)).toBe('Paused');

      // (a) The master holding the campaign's window keys dies; its replica takes over. The processes go on.
      const meta = a.runtimes.get(SYNC)!.state.keys.window.meta;
      const master = await cluster.masterOf(meta);
      const replica = await cluster.replicaOf(master);
      await cluster.kill(master);
      await cluster.healthy();
      expect(await cluster.masterOf(meta)).toBe(replica);
      for (const d of [a, b, a]) await step(d);
      // It rejoins as a replica: the cluster has a replica for each master again.
      await cluster.restart(master);

      // (b) Every master emptied while the processes run: the next check pauses before it reads, and stays Paused.
      let mark = sent.length;
      await cluster.flush();
      await step(b);
      expect(pausedBeforeRead(mark)).toEqual({ firstState: 'Paused', setBeforeRead: true });
      await step(a);
      await Promise.all([a.close(2000), b.close(2000)]);

      // Emptied again, and two new processes start on it: the first pauses at its start, before any read.
      await cluster.flush();
      mark = sent.length;
      const c = await startDaemon(false);
      expect(pausedBeforeRead(mark)).toEqual({ firstState: 'Paused', setBeforeRead: true });
      expect(await campaignState(f)).toBe('Paused');
      await f.server.advance(STEP_S);
      now += STEP_S * 1000;
      expect(await callDetailRecords<Call>(f)).toEqual([]);
      const d = await startDaemon(true);
      expect(await campaignState(f)).toBe('Paused');

      // Through the night and the morning, both checking every 5 minutes: Paused until 08:00 in Los Angeles.
      for (let t = 0; now < Date.parse('2026-07-02T17:00:00Z'); t++) await step(t % 2 ? c : d);
      const calls = await callDetailRecords<Call>(f);
      expect(outside(calls)).toEqual([]);
      expect(new Set(calls.map((call) => call.number))).toEqual(new Set(PHONES));
      // The campaign was set Active only while the window of every number it holds was open (the afternoon's import,
      // then 08:00 in Los Angeles).
      expect(sent.filter((r) => r.state === 'Active' && wanted(r.at) !== 'Active')).toEqual([]);
      expect(sent.some((r) => r.state === 'Active' && r.at >= Date.parse('2026-07-02T15:00:00Z'))).toBe(true);
    } finally {
      await Promise.all(daemons.map((d) => d.close(2000)));
      await proxy.close();
      await f.server.close();
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
