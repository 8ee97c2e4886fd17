// The `compliance` block of the configuration (the daemon's, or a sync's own): which rule set holds its numbers to
// their callees' calling windows, and how closely the daemon watches the edges, validated at the door.
import { z } from 'zod/v4';
import { duration } from '../config-fields.ts';
import { isTimeZone } from '../local-time.ts';
import { EVIDENCE, type Evidence } from '../../api/calling-window/locate.ts';
import { WEEKDAYS, type Weekday } from '../../api/calling-window/rules.ts';
import type { RuleSet } from '../../api/calling-window/window.ts';

const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'a local time HH:MM such as 09:00');

export interface Compliance {
  ruleSet: RuleSet;
  /** Which evidence places a callee: every piece (`all`) or the strongest alone (`best`). */
  evidence: Evidence;
  /** How often the campaign's state is compared with its window (a job scheduler), in ms. */
  checkEvery: number;
  /** The campaign is paused this long before its window closes, in ms. */
  margin: number;
  /** Only numbers whose zones are all among these belong to the sync (absent: all). */
  zones?: string[];
  /** How often the numbers the campaign holds are read whole even when their count says nothing changed, in ms. */
  rescanEvery: number;
}

/** `compliance: { off: "<reason>" }`: the sync (top level: every sync without a block of its own) runs without the rules. */
export interface ComplianceOff {
  /** Why, in the operator's words: repeated in the start log, `status` and `/ops`. */
  off: string;
}

const NOT_AN_OBJECT = 'an object: the calling-window rules ({} for the defaults), or { off: "<reason>" }: turning the rules off takes a reason';
const OFF_REASON = 'the reason the calling-window rules are off, such as "informational calls, not telemarketing"';

/** `off` stands alone: a rule beside it would be read and then ignored. */
function offAlone(input: unknown, ctx: z.RefinementCtx): unknown {
  if (input && typeof input === 'object' && !Array.isArray(input) && 'off' in input) {
    for (const key of Object.keys(input).filter((k) => k !== 'off')) {
      ctx.addIssue({ code: 'custom', path: [key], input: undefined, message: 'the rules are off here (off is given): leave this out, or leave off out to keep the rules' });
    }
  }
  return input;
}

/**
 * The block as written: the rules (every key has a default: `{}` is the federal window with the state rows, which is
 * also what a sync without any block gets), or `{ off: "<reason>" }`.
 */
export const complianceSchema = z.preprocess(offAlone, z.strictObject({
  /** The operator's own window, callee-local, inside the law's (08:00–21:00 and the state rows). */
  window: z.strictObject({
    from: hhmm,
    to: z.union([hhmm, z.literal('24:00')]),
    days: z.array(z.enum(WEEKDAYS as [Weekday, ...Weekday[]])).min(1, 'at least one weekday (sun, mon, …, sat)').optional(),
  }).refine((w) => w.from < w.to, { message: 'from must be before to (a window does not span midnight)', path: ['to'] }).optional(),
  /** Apply the stricter state rows shipped as data (Florida, Rhode Island); default true. */
  stateRules: z.boolean().default(true),
  /**
   * `all` (default): a callee's zones are those of every piece of evidence (time zone field, address, number), so a
   * call waits until each allows it; `best`: the first piece that names zones decides, as dialers' "best" setting.
   */
  evidence: z.enum(EVIDENCE as [Evidence, ...Evidence[]]).default('all'),
  /**
   * Only numbers whose callee is in these zones (every zone of its evidence among them) belong to this sync: one
   * selection split over several syncs, one campaign per window group. Absent: every number.
   */
  zones: z.array(z.string().refine(isTimeZone, 'an IANA time zone such as America/New_York')).min(1).optional(),
  checkEvery: duration.refine((ms) => ms >= 1000, 'at least 1s').default(30_000),
  margin: duration.default(120_000),
  /**
   * Every check counts the campaign's number records (one request) and reads them whole only when records appear that
   * the daemon does not account for; this reads them whole anyway, as often as this, for what a count cannot tell (a
   * number of ours deleted by another key while it added one).
   */
  rescanEvery: duration.refine((ms) => ms >= 60_000, 'at least 1m').default(3_600_000),
  /** Turns the rules off, with the reason (alone in the block). */
  off: z.string({ error: OFF_REASON }).trim().min(1, OFF_REASON).optional(),
}, { error: (issue) => (issue.code === 'invalid_type' ? NOT_AN_OBJECT : undefined) }).refine((c) => c.margin > c.checkEvery, { message: 'margin must be longer than checkEvery: a check may come that late before a close', path: ['margin'] })
  .transform((c): Compliance | ComplianceOff => (c.off !== undefined ? { off: c.off } : {
    ruleSet: {
      stateRules: c.stateRules,
      ...(c.window ? { operator: { hours: [c.window.from, c.window.to] as const, ...(c.window.days ? { days: c.window.days } : {}) } } : {}),
    },
    evidence: c.evidence,
    checkEvery: c.checkEvery,
    margin: c.margin,
    rescanEvery: c.rescanEvery,
    ...(c.zones ? { zones: c.zones } : {}),
  })));
