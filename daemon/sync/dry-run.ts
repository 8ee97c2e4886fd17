// `sync --dry-run`: the plan the start will carry out, writing nothing. It reads the whole selection and what the
// campaign holds, as a start does (a first start reads the campaign before its plan), places every number as a run
// places it (the calling window, the routes), and decides each through the real plan's own decision (the state's
// dryPlan script shares it): add, replace, delete, keep (in the campaign, not this sync's), held out by a Do Not Call
// mark or a per-number cap, and the record errors the run would report.
import { rulesStatus } from '../compliance/in-force.ts';
import { redactPhone, type RecordError } from './contacts.ts';
import { campaignsOf, heldHash, mapPage, placeContact, reconcileDue, routeContact, type SyncRuntime } from './run.ts';
import type { KnownHeld } from '../state/sync-state.ts';
import { exemptAt } from '../dnc/exemptions.ts';

/** `list`: the Do Not Call list that blocks it (none: a contact's mark or a cap); `exempt`: the wanting contact's exemption's end. */
type Wanted = Map<string, { contactId: string; hash: string; blocked?: boolean; list?: string; exempt?: number }>;

/** One campaign's side of a dry run: what it holds now, as the start will know it, and what the read wants it to hold. */
interface CampaignPlan {
  rt: SyncRuntime;
  heldBy: Map<string, string | null>;
  heldOf: Map<string, [string, string][]>;
  /** What the campaign holds, where the start will know it otherwise than Redis does now (see KnownHeld). */
  known: Map<string, KnownHeld>;
  /** Phone numbers the campaign holds. */
  inCampaign: number;
  wanted: Wanted;
}

export interface DryRunCounts {
  add: number; replace: number; remove: number; invalid: number;
  /** Numbers the campaign holds that no sync of the daemon added, kept as they are (ownsCampaign off). */
  others: number;
  /** Wanted numbers kept out of the campaign because a contact holding them is marked Do Not Call. */
  doNotCall: number;
  /** Wanted numbers each Do Not Call list keeps out (the company's, the registry, state lists), by list. */
  lists: Record<string, number>;
  /** Wanted numbers kept out because a list cannot vouch for them (they go in once a copy can). */
  waitingForLists: number;
}

async function campaignPlan(rt: SyncRuntime, reader: SyncRuntime): Promise<CampaignPlan> {
  // Who holds each number now decides between two contacts sharing it, as the real plan's owner order does.
  const heldBy = new Map<string, string | null>();
  const heldOf = new Map<string, [string, string][]>();
  const mine = new Map<string, { numberId: string; foreign: boolean; recordedAt: number; syncId: string }>();
  for await (const page of rt.state.scanHeld()) {
    for (const [phone, h] of page) {
      heldBy.set(phone, h.contactId);
      mine.set(phone, h);
      if (h.contactId) heldOf.set(h.contactId, [...heldOf.get(h.contactId) ?? [], [phone, h.hash]]);
    }
  }
  // The campaign as the start will see it: a number the daemon has no record of (or whose record id changed outside
  // it) is not the sync's unless an open add batch of the sync claims it, as reconcile-5.lua records it. A start that
  // does not read the campaign sends such a number if wanted, and the dialer's "duplicate" records it the same way.
  const known = new Map<string, KnownHeld>();
  const seen = new Set<string>();
  for await (const page of rt.push.scanNumbers(rt.config.campaignId)) {
    const unknown = page.filter((n) => { const h = mine.get(n.number); return !h || (h.numberId !== String(n.id) && !h.foreign); });
    const ours = await rt.state.pushedBySync(unknown.map((n) => n.number));
    unknown.forEach((n, i) => known.set(n.number, { numberId: String(n.id), hash: heldHash(n), foreign: !ours[i] }));
    for (const n of page) seen.add(n.number);
  }
  // Numbers the daemon holds that left the campaign: a start that reads the campaign forgets them (and adds them again
  // if wanted); one that does not still takes them as held.
  if (await reconcileDue(reader, rt)) {
    for (const [phone, h] of mine) if (!seen.has(phone) && h.syncId === rt.config.id) known.set(phone, null);
  }
  return { rt, heldBy, heldOf, known, inCampaign: seen.size, wanted: new Map() };
}

export async function dryRun(rt: SyncRuntime, print: (line: string) => void, show = 20): Promise<DryRunCounts> {
  const plans = await Promise.all(campaignsOf(rt).map((c) => campaignPlan(c, rt)));
  // The desired state as a full read gives it; a number two contacts share goes to the one holding it now, else the first read.
  let invalid = 0;
  const examples: string[] = [];
  /** `bySource`: rows the source refused whole (a CSV line), named by their line; their reasons say the rest. */
  const refuse = (errors: RecordError[], bySource = false) => {
    invalid += errors.length;
    for (const e of errors) {
      if (examples.length >= show) continue;
      const where = bySource && e.line ? `line ${e.line}` : `contact ${e.contactId}${e.line ? ` (line ${e.line})` : ''} ${e.field}=${e.value}`;
      examples.push(`  invalid  ${where}: ${e.reason}`);
    }
  };
  if (rt.source.pulls) {
    const pages = rt.source.pull({ full: true, compare: false, since: null, resume: null, checkpoint: async () => {}, known: async () => new Set(), position: null, savePosition: async () => {} });
    for await (const page of pages) {
      const { mapped, errors } = mapPage(rt, page);
      // mapPage puts the source's own errors first.
      const bySource = page.errors?.length ?? 0;
      refuse(errors.slice(0, bySource), true);
      refuse(errors.slice(bySource));
      const mappedIds = new Set(mapped.map(([c]) => c.id));
      for (const c of page.contacts) {
        if (mappedIds.has(c.id)) continue;
        // Refused whole, as the real run refuses it: what the campaign holds for it stays as it is.
        for (const { heldOf, wanted } of plans) for (const [p, hash] of heldOf.get(c.id) ?? []) wanted.set(p, { contactId: c.id, hash });
      }
      for (const [c, contact] of mapped) {
        let phones: string[][];
        if (rt.routes) {
          const routed = routeContact(rt, rt.routes, c, contact);
          refuse(routed.errors);
          phones = routed.located.map((ls) => ls.map((l) => l.phone));
        } else {
          const placed = placeContact(rt, c, contact);
          refuse(placed.errors);
          phones = [placed.phones];
        }
        plans.forEach(({ heldBy, wanted }, i) => {
          for (const p of phones[i]!) {
            // Do Not Call blocks a number whoever else wants it, as the plan decides.
            if (contact.doNotCall) wanted.set(p, { contactId: contact.id, hash: '', blocked: true });
            else if (!wanted.get(p)?.blocked && (!wanted.has(p) || heldBy.get(p) === contact.id)) wanted.set(p, { contactId: contact.id, hash: contact.hash, ...(contact.exempt ? { exempt: contact.exempt.until } : {}) });
          }
        });
      }
    }
  }
  const { lists, waitingForLists } = await judgeLists(plans);
  const lines: string[] = [];
  const others: string[] = [];
  const count = { add: 0, replace: 0, delete: 0, others: 0 };
  let doNotCall = 0, capped = 0, waiting = 0;
  for (const { rt: campaign, wanted, heldBy, known } of plans) {
    // A source that does not pull (webhooks, a CSV run) gives no full selection: nothing can be said to have left it.
    // A number taken out at its per-number cap is blocked, as the plan decides.
    const out = campaign.window ? await campaign.window.takenOut([...wanted.keys()]) : new Set<string>();
    for (const p of out) wanted.set(p, { ...wanted.get(p)!, hash: '', blocked: true });
    capped += out.size;
    const actions = await campaign.state.dryPlan(wanted, rt.source.pulls ? rt.config.onLeave : 'keep', rt.config.ownsCampaign, known);
    const deleted = new Set(actions.filter((a) => a.action === 'delete').map((a) => a.phone));
    for (const [p, w] of wanted) if (w.blocked && !w.list && !out.has(p) && !deleted.has(p)) doNotCall++;
    const to = rt.routes ? `  (campaign ${campaign.config.campaignId})` : '';
    let adds = 0;
    for (const a of actions) {
      count[a.action === 'delete' ? 'delete' : a.action]++;
      if (a.action === 'add') adds++;
      if (a.action === 'others') {
        if (others.length < show) others.push(`  keep     ${redactPhone(a.phone)}  (in the campaign, not this sync's${wanted.has(a.phone) ? `; contact ${wanted.get(a.phone)!.contactId} wants it` : ''})${to}`);
        continue;
      }
      if (lines.length >= show) continue;
      if (a.action === 'add') lines.push(`  add      ${redactPhone(a.phone)}  contact ${wanted.get(a.phone)!.contactId}${to}`);
      else if (a.action === 'replace') lines.push(`  replace  ${redactPhone(a.phone)}  contact ${wanted.get(a.phone)!.contactId} (variables changed)${to}`);
      else if (out.has(a.phone)) lines.push(`  delete   ${redactPhone(a.phone)}  (taken out at its per-number cap: a retry was pending)${to}`);
      else if (wanted.get(a.phone)?.list) lines.push(`  delete   ${redactPhone(a.phone)}  (on Do Not Call list ${wanted.get(a.phone)!.list})${to}`);
      else if (wanted.get(a.phone)?.blocked) lines.push(`  delete   ${redactPhone(a.phone)}  (contact ${wanted.get(a.phone)!.contactId} is marked Do Not Call)${to}`);
      else lines.push(`  delete   ${redactPhone(a.phone)}  (contact ${a.heldContact ?? '?'} left the selection)${to}`);
    }
    // A campaign its window holds Paused takes no numbers: the adds wait for it to open (the start says so too).
    if (adds && campaign.window && await campaign.window.closed()) waiting += adds;
    if (rt.routes) print(`route to campaign ${campaign.config.campaignId}: ${wanted.size} phone numbers selected, ${heldBy.size} held in the campaign`);
  }
  const { add, replace, delete: remove } = count;
  const selected = plans.reduce((n, p) => n + p.wanted.size, 0);
  const inCampaigns = plans.reduce((n, p) => n + p.inCampaign, 0);
  const s = plans.length > 1 ? 's' : '';
  print(`dry run of ${rt.config.id}: ${selected} phone numbers selected, ${inCampaigns} in the campaign${s} now`);
  print(`would add ${add}, replace ${replace}, delete ${remove}; ${invalid} invalid records`);
  print(`in the campaign${s}, not this sync's: ${count.others} (${rt.config.ownsCampaign ? 'taken as its own: ownsCampaign' : 'kept as they are; a sync deletes and replaces only the numbers it added'})`);
  const byList = Object.entries(lists).map(([l, n]) => `${n} by list ${l}`);
  print(`held out: ${doNotCall} by a Do Not Call mark, ${[...byList, ''].join(', ')}${capped} at a per-number cap${waitingForLists ? `; ${waitingForLists} wait for a Do Not Call list that can vouch for them` : ''}`);
  if (waiting) print(`the calling window holds the campaign${s} Paused now: ${waiting} of the adds wait until it opens`);
  // What the campaign then does with them: held to their callees' windows (paused outside), or not, and why.
  print(`calling-window rules ${rulesStatus(rt.config.rules).summary}`);
  for (const l of [...lines, ...others, ...examples]) print(l);
  const listed = lines.length + others.length;
  if (add + replace + remove + count.others > listed) print(`  … (${add + replace + remove + count.others - listed} more)`);
  return { add, replace, remove, invalid, others: count.others, doNotCall, lists, waitingForLists };
}

/**
 * The Do Not Call lists' verdicts on every number the campaigns want or hold, as the start's plans will judge them (a
 * start after a new copy plans every number held again): a listed number is blocked, unless a registry or state list
 * lists it and its contact is exempt; a number no list can vouch for is not added (it waits) and, held, stays.
 */
async function judgeLists(plans: CampaignPlan[]): Promise<{ lists: Record<string, number>; waitingForLists: number }> {
  const lists: Record<string, number> = {};
  let waitingForLists = 0;
  for (const plan of plans) {
    const gate = plan.rt.dnc?.gate;
    if (!gate) continue;
    const now = gate.now();
    const phones = [...new Set([...plan.wanted.keys(), ...plan.heldBy.keys()])];
    for (let i = 0; i < phones.length; i += 1000) {
      for (const j of await gate.judge(phones.slice(i, i + 1000))) {
        const w = plan.wanted.get(j.phone);
        if (j.verdict === 'clear' || w?.blocked) continue;
        if (j.verdict !== 'listed' && exemptAt(w?.exempt, now)) continue;
        if (j.verdict === 'unvouched') {
          if (w && !plan.heldBy.has(j.phone)) { plan.wanted.delete(j.phone); waitingForLists++; }
          continue;
        }
        const list = j.answers.find((a) => a.status === 'listed')!.list;
        plan.wanted.set(j.phone, { contactId: w?.contactId ?? plan.heldBy.get(j.phone) ?? '', hash: '', blocked: true, list });
        if (w) lists[list] = (lists[list] ?? 0) + 1;
      }
    }
  }
  return { lists, waitingForLists };
}

