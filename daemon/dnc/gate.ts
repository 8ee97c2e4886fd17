// The one place that answers "may this number be added, against which copy, under which exemption": every list that
// holds a sync (the company's own list always, and the registry and state lists its configuration names) is asked for
// a batch of numbers at once, and each number gets a verdict the plan acts on. An exemption is a contact's, so the plan
// (which knows the contact wanting a number) applies it to the verdicts that allow one.
import type { RedisClient } from '../state/connection.ts';
import { DncKeys } from '../state/keys.ts';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { lookupAll, type ListAnswer } from './answers.ts';
import { ListCopies, type CopyRecord } from './copies.ts';
import { OwnList } from './own-list.ts';
import { COMPANY_LIST, type DncInForce, type DncListConfig } from './config.ts';
import { commandName } from '../../api/command-name.ts';

/** The command as the user runs it: campaign-sync installed, ./dev daemon in a checkout. */
const CMD = commandName('campaign-sync', './dev daemon', process.env);

/**
 * - `clear`: no list holds the number, and every list that covers it vouches for that.
 * - `listed`: the company's own list holds it (or its record there cannot be read): no exemption lifts it.
 * - `exemptable`: a registry or state list holds it: only a contact's exemption lets it in.
 * - `unvouched`: no list holds it, but a registry or state list cannot vouch for it (no copy, a copy too old, no file
 *   for its area code): it is not added unless its contact is exempt, and a number already in stays (the campaign is
 *   held instead, see DncGate.health).
 */
export type Verdict = 'clear' | 'listed' | 'exemptable' | 'unvouched';

export interface Judged { phone: string; verdict: Verdict; answers: ListAnswer[] }

/** The plan's marker of a verdict (plan-10.lua reads it before the number): none for clear. */
export const VERDICT_MARK: Record<Verdict, string> = { clear: '', listed: '!', exemptable: '~', unvouched: '?' };

/** A list's state for check, status, /ops and the window's hold. */
export interface ListHealth {
  list: string;
  type: 'company' | DncListConfig['type'];
  /** The copy's date and age in days (null: none loaded, or the company's list). */
  date: string | null;
  ageDays: number | null;
  maxAgeDays: number | null;
  /** Area codes the copy has files for, and its numbers. */
  areaCodes: number;
  numbers: number;
  /** Why the list vouches for nothing now (no copy, too old, its record unreadable), with the fix; null: it vouches. */
  cannotVouch: string | null;
  /** When it stops vouching (ms): its copy's date plus maxAgeDays. */
  staleAt: number | null;
  states?: string[];
  countries?: string[];
}

interface CatalogList { config: DncListConfig; copies: ListCopies }

const DAY_MS = 86_400_000;

function countryOf(phone: string): string | undefined {
  return parsePhoneNumberFromString(phone)?.country;
}

export class DncGate {
  readonly company: OwnList;
  private readonly lists: CatalogList[];
  readonly off?: string;
  /** The clock copies' ages and exemptions are judged by (the daemon's: the real one, or the demo's dialer clock). */
  readonly now: () => number;
  constructor(redis: RedisClient, keys: DncKeys, inForce: DncInForce, options: { now?: () => number } = {}) {
    this.now = options.now ?? Date.now;
    this.company = new OwnList(redis, keys, COMPANY_LIST, { now: this.now });
    this.lists = (inForce?.lists ?? []).map((config) => ({
      config,
      copies: new ListCopies(redis, keys, config.name, { now: this.now, maxAgeDays: config.maxAgeDays, whole: config.type === 'state' }),
    }));
    this.off = inForce?.off;
  }

  /** The names of the lists asked, the company's first. */
  get names(): string[] { return [COMPANY_LIST, ...this.lists.map((l) => l.config.name)]; }

  /**
   * Every list's answer for each number and the verdict it leads to. One round trip for the company's list, two per
   * registry or state list (its record, then its area codes' bits together), the lists asked at once.
   */
  async judge(phones: readonly string[]): Promise<Judged[]> {
    if (!phones.length) return [];
    // A list of `countries` is asked only for numbers of those countries; the others are outside it.
    const scoped = this.lists.map((l) => ({
      list: l.config.name,
      async lookup(ps: readonly string[]): Promise<ListAnswer[]> {
        const countries = l.config.countries;
        if (!countries) return l.copies.lookup(ps);
        const inside = ps.map((p) => { const c = countryOf(p); return c !== undefined && countries.includes(c as 'US'); });
        const asked = ps.filter((_, i) => inside[i]);
        const answers = asked.length ? await l.copies.lookup(asked) : [];
        let k = 0;
        return ps.map((_, i) => (inside[i] ? answers[k++]! : { list: l.config.name, status: 'outside' as const, reason: `the list holds numbers of ${countries.join(', ')}` }));
      },
    }));
    const all = await lookupAll(phones, [this.company, ...scoped]);
    return all.map(({ phone, answers }) => ({ phone, answers, verdict: verdictOf(answers) }));
  }

  /** Each list's state now (the company's first), for check, status, /ops and the calling window's hold. */
  async health(): Promise<ListHealth[]> {
    const now = this.now();
    const company: ListHealth = { list: COMPANY_LIST, type: 'company', date: null, ageDays: null, maxAgeDays: null, areaCodes: 0, numbers: await this.company.size(), cannotVouch: null, staleAt: null };
    const rest = await Promise.all(this.lists.map(async ({ config, copies }): Promise<ListHealth> => {
      const base = {
        list: config.name, type: config.type, maxAgeDays: config.maxAgeDays,
        ...(config.states ? { states: config.states } : {}), ...(config.countries ? { countries: config.countries } : {}),
      };
      let record: CopyRecord | null;
      try {
        record = await copies.copy();
      } catch (err) {
        return { ...base, date: null, ageDays: null, areaCodes: 0, numbers: 0, staleAt: null, cannotVouch: `${(err as Error).message}: load the list again (${CMD} dnc load ${config.name})` };
      }
      if (!record) {
        return { ...base, date: null, ageDays: null, areaCodes: 0, numbers: 0, staleAt: null, cannotVouch: `no copy is loaded: put its full download in ${config.folder}/full-<download date> and run ${CMD} dnc load ${config.name}` };
      }
      const from = Date.parse(record.countsFrom);
      const ageDays = Math.floor((now - from) / DAY_MS);
      const staleAt = from + config.maxAgeDays * DAY_MS;
      return {
        ...base, date: record.date, ageDays, areaCodes: Object.keys(record.areaCodes).length, numbers: record.numbers, staleAt,
        cannotVouch: now > staleAt ? `its copy of ${record.date} is ${ageDays} days old (${config.maxAgeDays} at most): put a newer download in ${config.folder} (full-<date> or changes-<date>) and run ${CMD} dnc load ${config.name}` : null,
      };
    }));
    return [company, ...rest];
  }

  /**
   * A fingerprint of the copies the lists answer from now (their generations), or null when one cannot be read: a
   * campaign whose numbers were checked under another fingerprint has them checked again (a new copy or change list).
   */
  async fingerprint(): Promise<string | null> {
    try {
      const copies = await Promise.all(this.lists.map(async (l) => `${l.config.name}=${(await l.copies.copy())?.generation ?? '-'}`));
      return copies.join(',');
    } catch {
      return null;
    }
  }
}

/** The verdict a number's answers lead to (the company's list first, as judge asks it). */
export function verdictOf(answers: readonly ListAnswer[]): Verdict {
  let verdict: Verdict = 'clear';
  for (const a of answers) {
    if (a.status === 'listed' && a.list === COMPANY_LIST) return 'listed';
    if (a.status === 'listed') verdict = 'exemptable';
    else if (a.status === 'cannot-vouch' && verdict === 'clear') verdict = 'unvouched';
  }
  return verdict;
}

/**
 * Whether a campaign is held Paused for its Do Not Call lists (the calling window's hold): while it holds numbers and a
 * list that holds the sync cannot vouch for anything (no copy, a copy too old, its record unreadable), with the list and
 * the fix in words; otherwise when the first list stops vouching (its copy's age limit), so the window pauses it then.
 */
export async function listHold(gate: DncGate, holdsNumbers: boolean): Promise<{ reason: string | null; at: number | null }> {
  const health = await gate.health();
  const bad = health.filter((h) => h.cannotVouch);
  if (bad.length && holdsNumbers) {
    return { reason: `Do Not Call ${bad.map((h) => `list ${h.list} cannot vouch for the numbers the campaign holds: ${h.cannotVouch}`).join('; ')}`, at: null };
  }
  const ats = health.map((h) => h.staleAt).filter((t): t is number => t !== null);
  return { reason: null, at: ats.length ? Math.min(...ats) + 1 : null };
}
