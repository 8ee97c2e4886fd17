// What a Do Not Call list answers for a phone number, the same shape for a registry copy and the company's own list.

/**
 * `listed`: the list holds the number; `not-listed`: it does not, and the copy can vouch for it; `cannot-vouch`: the list
 * cannot say (no copy, a copy older than 31 days, no file for the number's area code, a bitmap gone from Redis): fail
 * closed, a caller treats it as listed until the cause is fixed; `outside`: the list does not cover such numbers
 * (a registry of NANP numbers asked about +44…).
 */
export type ListStatus = 'listed' | 'not-listed' | 'cannot-vouch' | 'outside';

export interface ListAnswer {
  list: string;
  status: ListStatus;
  /** Which copy answered: its file for the number's area code (and the change lists applied since), and its date. */
  copy?: { file: string; changes: string[]; date: string };
  /** The company's own list: who added the number, when and why. */
  entry?: OwnEntry;
  /** Why the list cannot vouch, or is outside, in words with the fix. */
  reason?: string;
}

export interface OwnEntry { at: string; by: string; reason?: string }

/** A list name is a key part: lower-case letters, digits and dashes, as config ids are. */
export function checkListName(name: string): string {
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(name)) {
    throw new Error(`Do Not Call list name ${JSON.stringify(name)}: use 1-63 lower-case letters, digits and dashes, starting with a letter or digit`);
  }
  return name;
}

/** A list that answers for phone numbers: a registry copy (copies.ts) or the company's own list (own-list.ts). */
export interface DncList { readonly list: string; lookup(phones: readonly string[]): Promise<ListAnswer[]> }

/** Every list's answer for each phone number, the lists asked at once. */
export async function lookupAll(phones: readonly string[], lists: readonly DncList[]): Promise<Array<{ phone: string; answers: ListAnswer[] }>> {
  const byList = await Promise.all(lists.map((l) => l.lookup(phones)));
  return phones.map((phone, i) => ({ phone, answers: byList.map((a) => a[i]!) }));
}
