// `sync --dry-run`: reads the whole selection and prints what a sync would change in the campaign, writing nothing.
import { mapContact, redactPhone } from './contacts.ts';
import type { SyncRuntime } from './run.ts';
import type { HeldNumber } from './state.ts';

export async function dryRun(rt: SyncRuntime, print: (line: string) => void, show = 20): Promise<{ add: number; replace: number; remove: number; invalid: number }> {
  const { redis, keys } = rt.state;
  const held = new Map<string, HeldNumber>();
  let cursor = '0';
  do {
    const [next, flat] = await redis.hscan(keys.have, cursor, 'COUNT', 1000);
    cursor = next;
    for (let i = 0; i < flat.length; i += 2) held.set(flat[i]!, JSON.parse(flat[i + 1]!));
  } while (cursor !== '0');
  // The desired state as a full read gives it; a number two contacts share goes to the one holding it now, else the first read.
  const wanted = new Map<string, { contact: string; hash: string }>();
  let invalid = 0;
  const examples: string[] = [];
  if (rt.source.pulls) {
    const pages = rt.source.pull({ full: true, since: null, resume: null, checkpoint: async () => {}, known: async () => new Set() });
    for await (const page of pages) {
      invalid += page.errors?.length ?? 0;
      for (const c of page.contacts) {
        const { contact, errors } = mapContact(c, rt.config.mapping);
        invalid += errors.length;
        for (const e of errors) if (examples.length < show) examples.push(`  invalid  contact ${e.contactId}${e.line ? ` (line ${e.line})` : ''} ${e.field}=${e.value}: ${e.reason}`);
        for (const p of contact.phones) {
          const current = wanted.get(p);
          if (!current || held.get(p)?.c === contact.id) wanted.set(p, { contact: contact.id, hash: contact.hash });
        }
      }
    }
  }
  const lines: string[] = [];
  let add = 0, replace = 0, remove = 0;
  for (const [phone, w] of wanted) {
    const h = held.get(phone);
    if (h && h.s !== rt.config.id) continue;
    if (!h) { add++; if (lines.length < show) lines.push(`  add      ${redactPhone(phone)}  contact ${w.contact}`); }
    else if (h.h !== w.hash && h.h !== '?' && h.x !== w.hash) { replace++; if (lines.length < show) lines.push(`  replace  ${redactPhone(phone)}  contact ${w.contact} (variables changed)`); }
  }
  if (rt.source.pulls && rt.config.onLeave === 'delete') {
    for (const [phone, h] of held) {
      if (h.s === rt.config.id && !wanted.has(phone) && !h.k) { remove++; if (lines.length < show) lines.push(`  delete   ${redactPhone(phone)}  (contact ${h.c ?? '?'} left the selection)`); }
    }
  }
  print(`dry run of ${rt.config.id}: ${wanted.size} phone numbers selected, ${held.size} held in the campaign`);
  print(`would add ${add}, replace ${replace}, delete ${remove}; ${invalid} invalid records`);
  for (const l of [...lines, ...examples]) print(l);
  if (add + replace + remove > lines.length) print(`  … (${add + replace + remove - lines.length} more)`);
  return { add, replace, remove, invalid };
}
