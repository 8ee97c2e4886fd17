// Do Not Call lists in the configuration: the catalog of lists the daemon keeps (`doNotCallLists`, top level), and
// which of them hold each sync (`doNotCall`, top level for every sync or per sync, the sync's own winning as
// `compliance` does; `{ off: "<reason>" }` for a sync that makes no sales calls). The company's own list is not in the
// catalog: it holds every sync, always (a person who asked not to be called is not called, whatever the call is for).
import { z } from 'zod/v4';
import { US_REGION_ZONES } from '../../api/calling-window/regions.ts';
import { DEFAULT_CHANGE_LAYOUT } from './files.ts';

/** The company's own list: its name in answers, records and commands. */
export const COMPANY_LIST = 'company';
/** The safe harbor's age (16 CFR 310.4(b)(3)(iv)): a registry copy older than this vouches for nothing. */
export const REGISTRY_MAX_AGE_DAYS = 31;


const changeLayout = z.strictObject({
  number: z.number().int().min(0),
  areaCode: z.number().int().min(0).optional(),
  action: z.number().int().min(0),
  added: z.array(z.string().min(1)).min(1),
  deleted: z.array(z.string().min(1)).min(1),
});

const listName = z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, '1-63 lower-case letters, digits and dashes, starting with a letter or digit')
  .refine((n) => n !== COMPANY_LIST, `"${COMPANY_LIST}" is the company's own list, kept by the daemon: name a registry or state list otherwise`);

/**
 * A list the daemon keeps a copy of, loaded from the files the operator downloads into `folder`:
 * - `registry`: the National Do Not Call Registry. Its full lists are per area code: a number of an area code the copy
 *   has no file for cannot be vouched for. At most 31 days old.
 * - `state`: a state's (or another body's) list, one file of every number it holds: an area code absent from it holds
 *   none. It holds the numbers of `states` (placed by area code) or of `countries`, or every +1 number when neither is
 *   given. Its age limit is `maxAgeDays` (its publisher's update cycle: Texas publishes quarterly).
 * Exemptions (consent, a purchase, an inquiry) lift both kinds; nothing lifts the company's own list.
 */
export const dncListSchema = z.strictObject({
  name: listName,
  type: z.enum(['registry', 'state'], { error: 'registry (the national registry) or state (a list of its shape with the states it holds)' }),
  folder: z.string().min(1, 'the folder the list\'s downloaded files are put in'),
  states: z.array(z.string().refine((s) => s in US_REGION_ZONES, 'a USPS state code such as TX')).min(1).optional(),
  countries: z.array(z.enum(['US', 'CA'], { error: 'US or CA: a list of NANP (+1) numbers' })).min(1).optional(),
  maxAgeDays: z.number().int().min(1).max(366).optional(),
  changeLayout: changeLayout.optional(),
}).superRefine((l, ctx) => {
  if (l.type === 'registry') {
    for (const key of ['states', 'countries'] as const) {
      if (l[key]) ctx.addIssue({ code: 'custom', path: [key], input: undefined, message: 'the national registry holds every area code it has files for: leave this out' });
    }
    if (l.maxAgeDays !== undefined && l.maxAgeDays > REGISTRY_MAX_AGE_DAYS) {
      ctx.addIssue({ code: 'custom', path: ['maxAgeDays'], input: l.maxAgeDays, message: `at most ${REGISTRY_MAX_AGE_DAYS}: the safe harbor asks for a copy of the registry no older than ${REGISTRY_MAX_AGE_DAYS} days` });
    }
  }
  if (l.states && l.countries) ctx.addIssue({ code: 'custom', path: ['countries'], input: undefined, message: 'give states or countries, not both' });
  if (l.type === 'state' && l.maxAgeDays === undefined) {
    ctx.addIssue({ code: 'custom', path: ['maxAgeDays'], input: undefined, message: 'how many days a copy of this list vouches for (its publisher\'s update cycle, e.g. 92 for a quarterly list)' });
  }
}).transform((l) => ({ ...l, maxAgeDays: l.maxAgeDays ?? REGISTRY_MAX_AGE_DAYS, changeLayout: l.changeLayout ?? DEFAULT_CHANGE_LAYOUT }));

export type DncListConfig = z.output<typeof dncListSchema>;

export const dncListsSchema = z.array(dncListSchema).superRefine((lists, ctx) => {
  const seen = new Set<string>();
  lists.forEach((l, i) => {
    if (seen.has(l.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], input: l.name, message: `duplicate list name "${l.name}"` });
    seen.add(l.name);
  });
});

const OFF_REASON = 'the reason no registry or state list holds the sync, such as "survey calls: not telemarketing"';

/** `doNotCall`: which catalog lists hold the sync's numbers (default: every one), or off with a reason. */
export const dncChoiceSchema = z.strictObject({
  lists: z.array(z.string().min(1)).optional(),
  off: z.string({ error: OFF_REASON }).trim().min(1, OFF_REASON).optional(),
}, { error: 'an object: { lists: [names] } (default: every list of doNotCallLists), or { off: "<reason>" }' })
  .refine((c) => !(c.lists && c.off !== undefined), { message: 'the lists are off here (off is given): leave lists out, or leave off out', path: ['lists'] });

export type DncChoice = z.output<typeof dncChoiceSchema>;

/** The lists that hold a sync, and where that comes from (said in check, status and /ops). */
export interface DncInForce {
  /** The catalog lists (registry and state) that hold the sync's numbers; the company's list always does. */
  lists: DncListConfig[];
  /** Set when the sync makes no sales calls: the reason, as the configuration gives it. */
  off?: string;
  from: 'sync' | 'configuration' | 'default';
}

export function dncInForce(own: DncChoice | undefined, top: DncChoice | undefined, catalog: readonly DncListConfig[]): DncInForce {
  const [choice, from] = own ? [own, 'sync' as const] : top ? [top, 'configuration' as const] : [{}, 'default' as const];
  if (choice.off !== undefined) return { lists: [], off: choice.off, from };
  const lists = choice.lists ? choice.lists.map((n) => catalog.find((l) => l.name === n)!).filter(Boolean) : [...catalog];
  return { lists, from };
}

/** Names a choice gives that the catalog does not hold (a problem of the configuration). */
export function unknownLists(choice: DncChoice | undefined, catalog: readonly DncListConfig[]): string[] {
  return (choice?.lists ?? []).filter((n) => n === COMPANY_LIST ? false : !catalog.some((l) => l.name === n));
}
