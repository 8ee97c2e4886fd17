// `sync --dry-run`: reads the whole selection and prints what a sync would change in the campaign, writing nothing;
// the decision is the real plan's own (the state's dryPlan script shares it), so the two cannot disagree.
import { mapContact, redactPhone } from './contacts.ts';
import type { SyncRuntime } from './run.ts';

export async function dryRun(rt: SyncRuntime, print: (line: string) => void, show = 20): Promise<{ add: number; replace: number; remove: number; invalid: number }> {
  // Who holds each number now decides between two contacts sharing it, as the real plan's owner order does.
  const heldBy = new Map<string, string | null>();
  const heldOf = new Map<string, [string, string][]>();
  for await (const page of rt.state.scanHeld()) {
    for (const [phone, h] of page) {
      heldBy.set(phone, h.contactId);
      if (h.contactId) heldOf.set(h.contactId, [...heldOf.get(h.contactId) ?? [], [phone, h.hash]]);
    }
  }
  // The desired state as a full read gives it; a number two contacts share goes to the one holding it now, else the first read.
  const wanted = new Map<string, { contactId: string; hash: string; blocked?: boolean }>();
  let invalid = 0;
  const examples: string[] = [];
  if (rt.source.pulls) {
    const pages = rt.source.pull({ full: true, compare: false, since: null, resume: null, checkpoint: async () => {}, known: async () => new Set(), position: null, savePosition: async () => {} });
    for await (const page of pages) {
      invalid += page.errors?.length ?? 0;
      for (const c of page.contacts) {
        const { contact, errors } = mapContact(c, rt.config.mapping);
        invalid += errors.length;
        for (const e of errors) if (examples.length < show) examples.push(`  invalid  contact ${e.contactId}${e.line ? ` (line ${e.line})` : ''} ${e.field}=${e.value}: ${e.reason}`);
        if (!contact) {
          // Refused whole, as the real run refuses it: what the campaign holds for it stays as it is.
          for (const [p, hash] of heldOf.get(c.id) ?? []) wanted.set(p, { contactId: c.id, hash });
          continue;
        }
        for (const p of contact.phones) {
          // Do Not Call blocks a number whoever else wants it, as the plan decides.
          if (contact.doNotCall) wanted.set(p, { contactId: contact.id, hash: '', blocked: true });
          else if (!wanted.get(p)?.blocked && (!wanted.has(p) || heldBy.get(p) === contact.id)) wanted.set(p, { contactId: contact.id, hash: contact.hash });
        }
      }
    }
  }
  // A source that does not pull (webhooks, a CSV run) gives no full selection: nothing can be said to have left it.
  const actions = await rt.state.dryPlan(wanted, rt.source.pulls ? rt.config.onLeave : 'keep');
  const lines: string[] = [];
  const count = { add: 0, replace: 0, delete: 0 };
  for (const a of actions) {
    count[a.action]++;
    if (lines.length >= show) continue;
    if (a.action === 'add') lines.push(`  add      ${redactPhone(a.phone)}  contact ${wanted.get(a.phone)!.contactId}`);
    else if (a.action === 'replace') lines.push(`  replace  ${redactPhone(a.phone)}  contact ${wanted.get(a.phone)!.contactId} (variables changed)`);
    else if (wanted.get(a.phone)?.blocked) lines.push(`  delete   ${redactPhone(a.phone)}  (contact ${wanted.get(a.phone)!.contactId} is marked Do Not Call)`);
    else lines.push(`  delete   ${redactPhone(a.phone)}  (contact ${a.heldContact ?? '?'} left the selection)`);
  }
  const { add, replace, delete: remove } = count;
  print(`dry run of ${rt.config.id}: ${wanted.size} phone numbers selected, ${heldBy.size} held in the campaign`);
  print(`would add ${add}, replace ${replace}, delete ${remove}; ${invalid} invalid records`);
  for (const l of [...lines, ...examples]) print(l);
  if (add + replace + remove > lines.length) print(`  … (${add + replace + remove - lines.length} more)`);
  return { add, replace, remove, invalid };
}
