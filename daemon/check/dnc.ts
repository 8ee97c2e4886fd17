// `check` of the Do Not Call lists: which lists hold each sync (or why none does), and each list's copy, its date and
// age against its limit. A list that cannot vouch fails (the numbers it would judge are kept out and the campaigns it
// can no longer vouch for are held Paused); one close to its limit, or a sync with no registry, warns.
import { access } from 'node:fs/promises';
import { commandName } from '../../api/command-name.ts';
import type { Config, SyncConfig } from '../config.ts';
import { DncGate, type ListHealth } from '../dnc/gate.ts';
import type { RedisClient } from '../state/connection.ts';
import { DncKeys } from '../state/keys.ts';
import { fail, ok, skip, warn, type CheckResult } from './result.ts';

const CMD = commandName('campaign-sync', './dev daemon', process.env);
/** Days before a copy's limit that check warns (an alert fires at 25 of 31). */
export const AGE_WARNING_DAYS = 6;

function describe(h: ListHealth): string {
  if (h.type === 'company') return `the company's own list holds ${h.numbers.toLocaleString('en')} number${h.numbers === 1 ? '' : 's'}`;
  const scope = h.states ? ` for ${h.states.join(', ')}` : h.countries ? ` for ${h.countries.join(', ')}` : '';
  return `list ${h.list} (${h.type}${scope}): copy of ${h.date}, ${h.ageDays} day${h.ageDays === 1 ? '' : 's'} old (${h.maxAgeDays} at most), ${h.areaCodes} area code${h.areaCodes === 1 ? '' : 's'}, ${h.numbers.toLocaleString('en')} numbers`;
}

export async function checkDnc(config: Config, syncs: readonly SyncConfig[], redis: RedisClient | null, redisProblem: string | null, now = Date.now()): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  const keys = new DncKeys(config.redis.prefix);
  const folders = new Map<string, boolean>();
  for (const l of config.doNotCallLists) folders.set(l.name, await access(l.folder).then(() => true, () => false));
  for (const sync of syncs) {
    if (sync.dnc.off !== undefined) {
      out.push(ok(sync.id, 'dnc.lists', `no registry or state list holds this sync (doNotCall off: ${sync.dnc.off}); the company's own list does`));
    } else if (!sync.dnc.lists.length) {
      out.push(warn(sync.id, 'dnc.lists', 'no Do Not Call registry holds this sync: its numbers are checked against the company\'s own list and the CRM\'s mark only',
        'name the national registry in doNotCallLists (with the folder its downloads go in), or say why the sync needs none with doNotCall: { off: "<reason>" } (calls that are not sales calls)'));
    }
    if (!redis) {
      out.push(skip(sync.id, 'dnc.copies', `not checked: the lists' copies are kept in Redis, which did not answer (${redisProblem})`));
      continue;
    }
    const gate = new DncGate(redis, keys, sync.dnc, { now: () => now });
    let health: ListHealth[];
    try {
      health = await gate.health();
    } catch (err) {
      out.push(fail(sync.id, 'dnc.copies', `the Do Not Call lists could not be read: ${(err as Error).message}`, 'check Redis, then run check again'));
      continue;
    }
    for (const h of health) {
      const check = h.type === 'company' ? 'dnc.company' : `dnc.list.${h.list}`;
      if (h.type !== 'company' && folders.get(h.list) === false) {
        const folder = config.doNotCallLists.find((l) => l.name === h.list)!.folder;
        out.push(warn(sync.id, `${check}.folder`, `list ${h.list}'s folder ${folder} cannot be read: its next download cannot be loaded`, `create ${folder} (readable by the daemon) and put each download in it as full-<date> or changes-<date>`));
      }
      if (h.cannotVouch) {
        out.push(fail(sync.id, check, `list ${h.list} cannot vouch for any number: ${h.cannotVouch}; the numbers it would judge are not added and the sync's campaigns that hold numbers are held Paused`,
          `${CMD} dnc load ${h.list} once its download is in its folder`));
        continue;
      }
      const left = h.staleAt !== null ? Math.floor((h.staleAt - now) / 86_400_000) : null;
      if (left !== null && left < AGE_WARNING_DAYS) {
        out.push(warn(sync.id, check, `${describe(h)}: it stops vouching in ${left} day${left === 1 ? '' : 's'}`, `download a newer copy or change list into its folder and run ${CMD} dnc load ${h.list}`));
      } else out.push(ok(sync.id, check, describe(h)));
    }
  }
  return out;
}
