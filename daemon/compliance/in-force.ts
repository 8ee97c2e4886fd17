// Which calling-window rules hold a sync: its own `compliance` block, else the top-level one, else the default rule set
// (the rules are on unless the configuration turns them off, with a reason). Said the same way in the start log,
// `status` (text and --json), `/ops` and `sync --dry-run`.
import { complianceSchema, type Compliance, type ComplianceOff } from './config.ts';
import type { Evidence } from '../../api/calling-window/locate.ts';
import { FEDERAL, type Weekday } from '../../api/calling-window/rules.ts';

/** The rules of a configuration without any block: the federal window, the state rows, the strictest evidence. */
export const DEFAULT_COMPLIANCE = complianceSchema.parse({}) as Compliance;

/** Where a sync's rules come from: its own block, the top-level one, or neither (the default: on). */
export type RulesFrom = 'sync' | 'configuration' | 'default';

export type RulesInForce =
  | { compliance: Compliance; off?: undefined; from: RulesFrom }
  | { compliance?: undefined; off: string; from: Exclude<RulesFrom, 'default'> };

export function rulesInForce(own: Compliance | ComplianceOff | undefined, top: Compliance | ComplianceOff | undefined): RulesInForce {
  const [block, from] = own ? [own, 'sync' as const] : top ? [top, 'configuration' as const] : [DEFAULT_COMPLIANCE, 'default' as const];
  if ('off' in block) return { off: block.off, from: from as Exclude<RulesFrom, 'default'> };
  return { compliance: block, from };
}

/** What `status --json` and `/ops` say of a sync's rules; `summary` is the sentence the text forms print. */
export type RulesStatus = { from: RulesFrom; summary: string } & (
  | {
    on: true;
    /** The federal window, callee-local (47 CFR 64.1200(c)(1)). */
    federal: { from: string; to: string };
    /** The state rows (Florida, Rhode Island, …) applied. */
    stateRules: boolean;
    /** The operator's own window, callee-local (null: none). */
    window: { from: string; to: string; days: Weekday[] | null } | null;
    evidence: Evidence;
    /** The sync's `compliance.zones` (null: every number). */
    zones: string[] | null;
  }
  | { on: false; off: string });

const WHERE: Record<RulesFrom, string> = { sync: "the sync's compliance block", configuration: 'the top-level compliance block', default: 'the default: no compliance block' };

export function rulesStatus(r: RulesInForce): RulesStatus {
  if (r.off !== undefined) return { on: false, off: r.off, from: r.from, summary: `off (${WHERE[r.from]}): ${r.off}` };
  const c = r.compliance;
  const [from, to] = FEDERAL.hours;
  const operator = c.ruleSet.operator;
  const window = operator ? { from: operator.hours[0], to: operator.hours[1], days: operator.days ? [...operator.days] : null } : null;
  const parts = [`federal ${from}-${to}`, `state rows ${c.ruleSet.stateRules ? 'on' : 'off'}`,
    window ? `operator window ${window.from}-${window.to}${window.days ? ` ${window.days.join(',')}` : ''}` : 'no operator window',
    `evidence ${c.evidence}`, ...(c.zones ? [`zones ${c.zones.join(', ')}`] : [])];
  return {
    on: true, from: r.from, federal: { from, to }, stateRules: c.ruleSet.stateRules, window, evidence: c.evidence, zones: c.zones ? [...c.zones] : null,
    summary: `on (${WHERE[r.from]}): ${parts.join('; ')}, in each callee's local time`,
  };
}
