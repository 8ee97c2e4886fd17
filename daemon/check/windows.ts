// `check` on calling windows: which rules hold the sync and where they come from (a configuration without any
// `compliance` block, as checkouts before the rules' default were run with, is told what the default now does), and
// every zone a route (or compliance.zones) names is one a callee can be placed in, by its phone number, its state or
// province, or a mapped time-zone field; a zone nothing places a callee in would leave the route without numbers.
// Whether the key may pause the campaign is the dialer's check (dialer.state).
import type { SyncConfig } from '../config.ts';
import { clockOf } from '../compliance/clocks.ts';
import { rulesStatus } from '../compliance/in-force.ts';
import { AREA_CODE_ZONES, CALLING_CODE_ZONES } from '../../api/calling-window/number-zones.ts';
import { CA_REGION_ZONES, US_REGION_ZONES } from '../../api/calling-window/regions.ts';
import { ok, skip, warn, type CheckResult } from './result.ts';

let placeable: Set<string> | null = null;

/** The clocks of every zone a number or a region places a callee in (computed once: a few hundred zones). */
function placeableClocks(): Set<string> {
  placeable ??= new Set([
    ...Object.values(AREA_CODE_ZONES).flatMap((z) => z.split(' ')),
    ...Object.values(CALLING_CODE_ZONES).flatMap((z) => z.split(' ')),
    ...Object.values(US_REGION_ZONES).flat(),
    ...Object.values(CA_REGION_ZONES).flat(),
  ].map(clockOf));
  return placeable;
}

/**
 * Which rules hold the sync. Without any `compliance` block they are the default ones, which a checkout from before
 * the default (such as a8ba58f, whose package.json also said 0.1.0) did not apply at all: said as a warning, so that
 * an operator upgrading with an old file learns what changed for the sync and chooses, once, in the file.
 */
export function checkRules(sync: SyncConfig): CheckResult {
  const summary = `calling-window rules ${rulesStatus(sync.rules).summary}`;
  if (sync.rules.from !== 'default') return ok(sync.id, 'windows.rules', summary);
  return warn(sync.id, 'windows.rules', `${summary}. A checkout from before this default (such as a8ba58f) held a sync without a compliance block to no window; now its campaign is paused outside its callees' windows, a number no time zone can be found for is not added (record error no_window), and the key needs the Campaign Admin role`,
    'say which you mean in the file: compliance: {} keeps the rules (the key needs Campaign Admin), compliance: { off: "<reason>" } turns them off for calls that are not telemarketing');
}

export function checkWindows(sync: SyncConfig): CheckResult[] {
  const id = sync.id;
  if (!sync.rules.compliance) return [checkRules(sync), skip(id, 'windows.zones', `the calling-window rules are off for this sync: ${sync.rules.off}`)];
  const named: { setting: string; zones: readonly string[] }[] = [
    ...(sync.routes ?? []).flatMap((r, i) => (r.zones ? [{ setting: `routes.${i}.zones (campaign ${r.campaignId})`, zones: r.zones }] : [])),
    ...(sync.rules.compliance.zones ? [{ setting: 'compliance.zones', zones: sync.rules.compliance.zones }] : []),
  ];
  const rules = checkRules(sync);
  if (!named.length) return [rules, ok(id, 'windows.zones', 'calling-window rules on: every callee is placed by its number, state or time-zone field')];
  // A mapped time-zone field may name any IANA zone: then every zone is one a callee can be in.
  if (sync.mapping.timeZone) return [rules, ok(id, 'windows.zones', `the zones of ${named.map((n) => n.setting).join(', ')} are known (mapping.timeZone ${sync.mapping.timeZone} may place a callee in any zone)`)];
  const clocks = placeableClocks();
  const out: CheckResult[] = [];
  for (const n of named) {
    const unplaced = n.zones.filter((z) => !clocks.has(clockOf(z)));
    if (unplaced.length) {
      out.push(warn(id, 'windows.zones', `${n.setting}: no phone number or state places a callee in ${unplaced.join(', ')} (nor in a zone keeping the same clock), so no number goes there`,
        'name the zones of the callees\' numbers and states (America/New_York, America/Chicago, ...), or map a time-zone field (mapping.timeZone)'));
    }
  }
  return [rules, ...(out.length ? out : [ok(id, 'windows.zones', `the zones of ${named.map((n) => n.setting).join(', ')} are ones callees are placed in`)])];
}
