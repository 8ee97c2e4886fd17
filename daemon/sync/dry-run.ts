// `sync --dry-run`: reads the whole selection and prints what a sync would change in the campaign, writing nothing;
// the decision is the real plan's own (the state's dryPlan script shares it), so the two cannot disagree. A routed
// sync's selection is read once and each number routed as a run routes it (numbers in no route enter none).
import { rulesStatus } from '../compliance/in-force.ts';
import { mapContact, redactPhone } from './contacts.ts';
import { campaignsOf, routeIndex, type SyncRuntime } from './run.ts';

type Wanted = Map<string, { contactId: string; hash: string; blocked?: boolean }>;

/** One campaign's side of a dry run: what it holds now, and what the read wants it to hold. */
interface CampaignPlan {
  rt: SyncRuntime;
  heldBy: Map<string, string | null>;
  heldOf: Map<string, [string, string][]>;
  wanted: Wanted;
}

async function campaignPlan(rt: SyncRuntime): Promise<CampaignPlan> {
  // Who holds each number now decides between two contacts sharing it, as the real plan's owner order does.
  const heldBy = new Map<string, string | null>();
  const heldOf = new Map<string, [string, string][]>();
  for await (const page of rt.state.scanHeld()) {
    for (const [phone, h] of page) {
      heldBy.set(phone, h.contactId);
      if (h.contactId) heldOf.set(h.contactId, [...heldOf.get(h.contactId) ?? [], [phone, h.hash]]);
    }
  }
  return { rt, heldBy, heldOf, wanted: new Map() };
}

/** The phone numbers of a routed sync's contact that go to each route (as the run routes them). */
function routed(rt: SyncRuntime, fields: Record<string, unknown>, phones: string[]): string[][] {
  const routes = rt.routes!;
  const out = routes.map((): string[] => []);
  for (const l of routes[0]!.window!.locate(fields, phones)) {
    const i = routeIndex(routes, l);
    if (i >= 0) out[i]!.push(l.phone);
  }
  return out;
}

export async function dryRun(rt: SyncRuntime, print: (line: string) => void, show = 20): Promise<{ add: number; replace: number; remove: number; invalid: number }> {
  const plans = await Promise.all(campaignsOf(rt).map(campaignPlan));
  // The desired state as a full read gives it; a number two contacts share goes to the one holding it now, else the first read.
  let invalid = 0;
  const examples: string[] = [];
  if (rt.source.pulls) {
    const pages = rt.source.pull({ full: true, compare: false, since: null, resume: null, checkpoint: async () => {}, known: async () => new Set(), position: null, savePosition: async () => {} });
    for await (const page of pages) {
      invalid += page.errors?.length ?? 0;
      for (const e of page.errors ?? []) if (examples.length < show) examples.push(`  invalid  line ${e.line}: ${e.reason}`);
      for (const c of page.contacts) {
        const { contact, errors } = mapContact(c, rt.config.mapping);
        invalid += errors.length;
        for (const e of errors) if (examples.length < show) examples.push(`  invalid  contact ${e.contactId}${e.line ? ` (line ${e.line})` : ''} ${e.field}=${e.value}: ${e.reason}`);
        if (!contact) {
          // Refused whole, as the real run refuses it: what the campaign holds for it stays as it is.
          for (const { heldOf, wanted } of plans) for (const [p, hash] of heldOf.get(c.id) ?? []) wanted.set(p, { contactId: c.id, hash });
          continue;
        }
        const phones = rt.routes ? routed(rt, c.fields, contact.phones) : [contact.phones];
        plans.forEach(({ heldBy, wanted }, i) => {
          for (const p of phones[i]!) {
            // Do Not Call blocks a number whoever else wants it, as the plan decides.
            if (contact.doNotCall) wanted.set(p, { contactId: contact.id, hash: '', blocked: true });
            else if (!wanted.get(p)?.blocked && (!wanted.has(p) || heldBy.get(p) === contact.id)) wanted.set(p, { contactId: contact.id, hash: contact.hash });
          }
        });
      }
    }
  }
  const lines: string[] = [];
  const count = { add: 0, replace: 0, delete: 0 };
  for (const { rt: campaign, wanted, heldBy } of plans) {
    // A source that does not pull (webhooks, a CSV run) gives no full selection: nothing can be said to have left it.
    // A number taken out at its per-number cap is blocked, as the plan decides.
    const out = campaign.window ? await campaign.window.takenOut([...wanted.keys()]) : new Set<string>();
    for (const p of out) wanted.set(p, { ...wanted.get(p)!, hash: '', blocked: true });
    const actions = await campaign.state.dryPlan(wanted, rt.source.pulls ? rt.config.onLeave : 'keep');
    const to = rt.routes ? `  (campaign ${campaign.config.campaignId})` : '';
    for (const a of actions) {
      count[a.action]++;
      if (lines.length >= show) continue;
      if (a.action === 'add') lines.push(`  add      ${redactPhone(a.phone)}  contact ${wanted.get(a.phone)!.contactId}${to}`);
      else if (a.action === 'replace') lines.push(`  replace  ${redactPhone(a.phone)}  contact ${wanted.get(a.phone)!.contactId} (variables changed)${to}`);
      else if (out.has(a.phone)) lines.push(`  delete   ${redactPhone(a.phone)}  (taken out at its per-number cap: a retry was pending)${to}`);
      else if (wanted.get(a.phone)?.blocked) lines.push(`  delete   ${redactPhone(a.phone)}  (contact ${wanted.get(a.phone)!.contactId} is marked Do Not Call)${to}`);
      else lines.push(`  delete   ${redactPhone(a.phone)}  (contact ${a.heldContact ?? '?'} left the selection)${to}`);
    }
    if (rt.routes) print(`route to campaign ${campaign.config.campaignId}: ${wanted.size} phone numbers selected, ${heldBy.size} held in the campaign`);
  }
  const { add, replace, delete: remove } = count;
  const selected = plans.reduce((n, p) => n + p.wanted.size, 0);
  const held = plans.reduce((n, p) => n + p.heldBy.size, 0);
  print(`dry run of ${rt.config.id}: ${selected} phone numbers selected, ${held} held in the campaign${plans.length > 1 ? 's' : ''}`);
  print(`would add ${add}, replace ${replace}, delete ${remove}; ${invalid} invalid records`);
  // What the campaign then does with them: held to their callees' windows (paused outside), or not, and why.
  print(`calling-window rules ${rulesStatus(rt.config.rules).summary}`);
  for (const l of [...lines, ...examples]) print(l);
  if (add + replace + remove > lines.length) print(`  … (${add + replace + remove - lines.length} more)`);
  return { add, replace, remove, invalid };
}
