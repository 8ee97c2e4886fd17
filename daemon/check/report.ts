// How `check` prints its results: one line each (status, where, what was found, how to fix it), then a summary; or
// the report as JSON for scripts (`--json`).
import type { CheckReport } from './checks.ts';
import type { CheckResult } from './result.ts';

const LABEL: Record<CheckResult['status'], string> = { ok: 'ok   ', warn: 'WARN ', fail: 'FAIL ', error: 'ERROR', skip: 'skip ' };

export function resultLine(r: CheckResult): string {
  const where = r.sync === null ? r.check : `${r.sync} ${r.check}`;
  const fix = r.fix && r.status !== 'ok' && r.status !== 'skip' ? `\n        fix: ${r.fix}` : '';
  return `${LABEL[r.status]} ${where}: ${r.message}${r.refuses ? ' [start refuses this sync]' : ''}${fix}`;
}

export function formatReport(report: CheckReport): string {
  const count = (s: CheckResult['status']) => report.checks.filter((r) => r.status === s).length;
  const refused = Object.entries(report.syncs).filter(([, v]) => v.refusals.length).map(([id]) => id);
  const summary = `${report.checks.length} checks in ${(report.durationMs / 1000).toFixed(1)} s: ${count('ok')} ok, ${count('warn')} warnings, ${count('fail')} failed, ${count('error')} without an answer, ${count('skip')} skipped` +
    (refused.length ? `; start would refuse ${refused.join(', ')} (it would add no numbers until fixed)` : '');
  return [...report.checks.map(resultLine), '', summary].join('\n');
}
