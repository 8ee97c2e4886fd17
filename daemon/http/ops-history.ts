// What the operations page's charts read: a sync's history for the last hour or day, its request budgets' limits,
// and its runs within the window; and the charting library (uPlot) read from node_modules.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { RunningDaemon } from './running-daemon.ts';
import { dialerOf } from '../config.ts';
import { budgetLimits, RESOLUTIONS, type HistoryView, type View } from '../history/history.ts';
import type { SyncRuntime } from '../sync/run.ts';

export const VIEWS = Object.keys(RESOLUTIONS) as View[];

/** Runs looked at for the marks on the time axis (a sync keeps its last 100). */
const RUNS = 100;

export interface RunMark { id: string; mode: string; status: string; trigger: string; start: number; end: number | null }

export interface SyncHistoryBody extends HistoryView {
  sync: string;
  view: View;
  now: number;
  /** Requests per second each budget allows (the dialer key's rate limit; the CRM account's pacing). */
  limits: Record<string, number>;
  runs: RunMark[];
}

export async function syncHistory(d: RunningDaemon, rt: SyncRuntime, view: View): Promise<SyncHistoryBody> {
  const now = Date.now();
  const { redis, keys } = rt.state;
  const [history, ids] = await Promise.all([d.history.read(rt.config.id, view, now), redis.lrange(keys.runs, 0, RUNS - 1)]);
  const m = redis.pipeline();
  for (const id of ids) m.hmget(keys.run(id), 'id', 'mode', 'status', 'trigger', 'startedAtMs', 'durationMs');
  const runs: RunMark[] = [];
  for (const [err, v] of (await m.exec()) ?? []) {
    const [id, mode, status, trigger, startedAtMs, durationMs] = (err ? [] : v) as (string | null)[];
    const start = Number(startedAtMs);
    if (!id || !Number.isFinite(start) || start < history.start) continue;
    runs.push({ id, mode: mode ?? '', status: status ?? '', trigger: trigger ?? '', start, end: durationMs ? start + Number(durationMs) : null });
  }
  return { sync: rt.config.id, view, now, ...history, limits: budgetLimits(rt.config, dialerOf(d.config, rt.config)) as Record<string, number>, runs: runs.reverse() };
}

/** uPlot's script and stylesheet, read once. */
export async function chartLibrary(): Promise<{ js: string; css: string }> {
  const require = createRequire(import.meta.url);
  const [js, css] = await Promise.all([
    readFile(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
    readFile(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
  ]);
  return { js, css };
}
