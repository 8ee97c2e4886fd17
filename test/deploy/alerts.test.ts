// The alert rules and the dashboard in deploy/ against the daemon: `promtool check rules` and `promtool test rules`
// pass (every alert has a test that fires it and one that resolves it), a rule changed breaks its test (the tests are
// not vacuous), and every metric a rule or a dashboard panel queries is one the daemon exports. promtool is Debian's
// prometheus package, which `./dev test` installs when it is missing.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { Metrics } from '../../daemon/metrics.ts';

const DEPLOY = join(import.meta.dirname, '../../deploy');
const RULES = join(DEPLOY, 'prometheus/alerts.yml');
const TESTS = join(DEPLOY, 'prometheus/alerts.test.yml');
const DASHBOARD = join(DEPLOY, 'grafana/campaign-sync.json');

function promtool(args: string[], cwd: string): { status: number | null; out: string } {
  const r = spawnSync('promtool', args, { cwd, encoding: 'utf8' });
  if (r.error) throw new Error(`promtool could not run (${r.error.message}): ./dev test installs it (Debian's prometheus package)`);
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

interface Rule { alert?: string; record?: string; expr: string }
const rules = (parseYaml(readFileSync(RULES, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);
const tests = (parseYaml(readFileSync(TESTS, 'utf8')) as { tests: { alert_rule_test: { eval_time: string; alertname: string; exp_alerts: unknown[] }[] }[] }).tests;

/** The metric names a PromQL expression reads (identifiers followed by a selector, a range or an operator). */
function metricsOf(expr: string): string[] {
  const withoutStrings = expr.replace(/"[^"]*"/g, '""').replace(/\{[^}]*\}/g, '{}');
  const words = withoutStrings.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? [];
  return [...new Set(words.filter((w) => w.startsWith('cds_')))];
}

/** Every metric name the daemon's registry exports, a histogram's series names included. */
async function exported(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const m of await new Metrics().registry.getMetricsAsJSON()) {
    names.add(m.name);
    if (String(m.type) === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${m.name}${s}`);
  }
  return names;
}

describe('alert rules (deploy/prometheus)', () => {
  it('pass promtool check rules and promtool test rules', () => {
    const check = promtool(['check', 'rules', 'alerts.yml'], join(DEPLOY, 'prometheus'));
    expect(check.status, check.out).toBe(0);
    expect(check.out).toContain(`SUCCESS: ${rules.length} rules found`);
    const test = promtool(['test', 'rules', 'alerts.test.yml'], join(DEPLOY, 'prometheus'));
    expect(test.status, test.out).toBe(0);
  });

  it('every alert is tested firing and resolving', () => {
    for (const r of rules.filter((x) => x.alert)) {
      const cases = tests.flatMap((t) => t.alert_rule_test).filter((c) => c.alertname === r.alert);
      expect(cases.some((c) => c.exp_alerts.length > 0), `${r.alert} fires in a test`).toBe(true);
      const firing = cases.filter((c) => c.exp_alerts.length > 0).map((c) => c.eval_time);
      // A resolution: no alert at a time after one where it fired.
      const seconds = (t: string) => [...t.matchAll(/(\d+)(h|m|s)/g)].reduce((n, [, v, u]) => n + Number(v) * ({ h: 3600, m: 60, s: 1 } as Record<string, number>)[u!]!, 0);
      expect(cases.some((c) => c.exp_alerts.length === 0 && firing.some((f) => seconds(c.eval_time) > seconds(f))), `${r.alert} resolves in a test`).toBe(true);
    }
  });

  it('a changed rule fails its test: the tests are not vacuous', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cds-alerts-'));
    try {
      cpSync(join(DEPLOY, 'prometheus'), dir, { recursive: true });
      // Three failing runs in a row no longer fire, as if the threshold had been mistyped.
      writeFileSync(join(dir, 'alerts.yml'), readFileSync(RULES, 'utf8').replace('(cds_runs_failed_consecutive) >= 3', '(cds_runs_failed_consecutive) >= 4'));
      const test = promtool(['test', 'rules', 'alerts.test.yml'], dir);
      expect(test.status).not.toBe(0);
      expect(test.out).toContain('CampaignSyncRunsFailing');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('query only metrics the daemon exports', async () => {
    const names = await exported();
    const used = rules.flatMap((r) => metricsOf(r.expr));
    expect(used.length).toBeGreaterThan(5);
    expect(used.filter((m) => !names.has(m))).toEqual([]);
  });
});

describe('the Grafana dashboard (deploy/grafana)', () => {
  it('queries only metrics the daemon exports, in every panel', async () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: { title: string; targets?: { expr: string }[] }[] };
    const names = await exported();
    const panels = dashboard.panels.filter((p) => p.targets?.length);
    expect(panels.length).toBeGreaterThan(5);
    for (const p of panels) {
      for (const t of p.targets!) {
        const used = metricsOf(t.expr);
        expect(used.length, `panel "${p.title}" queries a metric of the daemon: ${t.expr}`).toBeGreaterThan(0);
        expect(used.filter((m) => !names.has(m)), `panel "${p.title}": ${t.expr}`).toEqual([]);
      }
    }
  });
});
