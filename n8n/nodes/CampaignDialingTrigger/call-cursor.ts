// The trigger's place in a campaign's call-details report, kept in static data: the newest endedAtLocal read and the
// ids of the records read in the hour before it, so that records ending in a repeated hour are still found, once.
import type { IDataObject, IPollFunctions } from 'n8n-workflow';
import { readPages } from '../CampaignDialing/shared/transport.ts';

/**
 * How far behind the newest endedAtLocal read a new record may still end. endedAtLocal is the account's wall clock
 * without offset: when the clock falls back (01:00-02:00 twice in New York), the second pass's records sort behind
 * records already read. Every time zone falls back by at most an hour, except Antarctica/Troll's research station.
 */
const LOOK_BACK_MS = 3_600_000;
/**
 * Most ids remembered. Past it the oldest minutes are forgotten first and the look-back shortens to what is left:
 * only a campaign ending more calls than this in an hour could then miss records of a repeated hour (it still never
 * emits one twice). At most about 16 KB of static data with the reference server's ids (80 KB were they UUIDs).
 */
const MAX_REMEMBERED_CALLS = 2_000;

/** The call-details part of the trigger's static data. */
export interface CallCursor {
  /** 2 since the look-back; the format before it had `ids` (the ids read at `endedAt`) and no `since` or `seen`. */
  version: 2;
  /** The newest endedAtLocal read (`YYYY-MM-DDTHH:MM:SS`); null before the report had any record. */
  endedAt: string | null;
  /** Every record read that ended at or after this time, up to endedAt, has its id in `seen`; null with endedAt. */
  since: string | null;
  /** Those ids, by the minute they ended in (`YYYY-MM-DDTHH:MM`). */
  seen: Record<string, string[]>;
}

/** The place the trigger kept before the look-back (version 1). */
interface LegacyCallCursor {
  endedAt: string | null;
  ids: string[];
}

/**
 * The call-details place of stored static data in either format, or null when it holds neither. A place of the
 * old format knows only the ids read at its newest second: its look-back starts there and grows to an hour.
 */
export function readCallCursor(stored: IDataObject): CallCursor | null {
  const endedAt = typeof stored.endedAt === 'string' ? stored.endedAt : null;
  if (stored.version === 2 && typeof stored.seen === 'object' && stored.seen !== null) {
    const since = typeof stored.since === 'string' ? stored.since : null;
    const seen = Object.entries(stored.seen as IDataObject).filter((entry): entry is [string, string[]] => Array.isArray(entry[1]));
    return { version: 2, endedAt, since, seen: Object.fromEntries(seen.map(([minute, ids]) => [minute, ids.map(String)])) };
  }
  if (!Array.isArray(stored.ids)) return null;
  const legacy = stored as unknown as LegacyCallCursor;
  return { version: 2, endedAt, since: endedAt, seen: endedAt ? { [minuteOf(endedAt)]: legacy.ids.map(String) } : {} };
}

/**
 * The place at activation: the newest record, and the ids of every record of the hour before it, so that none of
 * them is taken for new when the clock falls back. What happened before activation is not emitted.
 */
export async function startingCallCursor(ctx: IPollFunctions, path: string, pageSize: number): Promise<CallCursor> {
  const cursor: CallCursor = { version: 2, endedAt: null, since: null, seen: {} };
  // A page may repeat the end of the one before when a record is written between the two.
  const read = new Set<string>();
  let cut = false;
  // No more records are kept than MAX_REMEMBERED_CALLS, and the one after them tells that some were cut.
  const size = Math.min(pageSize, MAX_REMEMBERED_CALLS + 1);
  reading: for await (const page of readPages(ctx, path, { sort: ['endedAtLocal', 'DESC'] }, undefined, undefined, size)) {
    for (const call of page.records) {
      const [endedAt, id] = [endedAtOf(call), String(call.id)];
      if (!endedAt || read.has(id)) continue;
      if (!cursor.endedAt) {
        cursor.endedAt = endedAt;
        cursor.since = lookBackFrom(endedAt);
      }
      if (endedAt < cursor.since!) break reading;
      if (read.size === MAX_REMEMBERED_CALLS) {
        cut = true;
        break reading;
      }
      read.add(id);
      remember(cursor, endedAt, id);
    }
  }
  // The oldest minute read may be missing records read no further: it is forgotten whole.
  if (cut) forgetOldestMinute(cursor);
  return cursor;
}

/**
 * The call-detail records new since the last poll, in the order found, with the place moved past them: first the
 * records that ended behind the newest read (a clock that fell back), found by counting the remembered window and
 * read only when the count moved; then the records from the newest read on, sorted by endedAtLocal, until the poll's
 * reading budget is spent (the rest comes next poll).
 */
export async function readNewCalls(
  ctx: IPollFunctions, path: string, cursor: CallCursor, overBudget: () => boolean, pageSize: number,
): Promise<IDataObject[]> {
  const known = new Set(Object.values(cursor.seen).flat());
  const calls: IDataObject[] = [];
  const take = (call: IDataObject, endedAt: string) => {
    const id = String(call.id);
    if (known.has(id)) return;
    known.add(id);
    calls.push(call);
    remember(cursor, endedAt, id);
  };

  if (cursor.endedAt && cursor.since) {
    const window = { endedAtLocal_gte: cursor.since, endedAtLocal_lte: cursor.endedAt };
    let total: number | undefined;
    for await (const page of readPages(ctx, path, { filter: window }, 1)) total = page.total;
    if (total !== known.size) {
      const fresh: Record<string, string[]> = {};
      const inWindow = new Set<string>();
      let whole = true;
      for await (const page of readPages(ctx, path, { sort: ['endedAtLocal', 'ASC'], filter: window }, undefined, undefined, pageSize)) {
        for (const call of page.records) {
          const [endedAt, id] = [endedAtOf(call), String(call.id)];
          if (!endedAt || inWindow.has(id)) continue;
          take(call, endedAt);
          inWindow.add(id);
          (fresh[minuteOf(endedAt)] ??= []).push(id);
        }
        if (overBudget()) {
          whole = false;
          break;
        }
      }
      // Read whole, the window is what the report holds now (were records removed, the count would never match).
      if (whole) cursor.seen = fresh;
    }
  }

  const from = cursor.endedAt ? { endedAtLocal_gte: cursor.endedAt } : {};
  for await (const page of readPages(ctx, path, { sort: ['endedAtLocal', 'ASC'], filter: from }, undefined, undefined, pageSize)) {
    for (const call of page.records) {
      const endedAt = endedAtOf(call);
      if (!endedAt) continue;
      take(call, endedAt);
      if (!cursor.endedAt || endedAt > cursor.endedAt) cursor.endedAt = endedAt;
    }
    if (overBudget()) break;
  }
  prune(cursor);
  return calls;
}

function endedAtOf(call: IDataObject): string | null {
  return typeof call.endedAtLocal === 'string' ? call.endedAtLocal : null;
}

function minuteOf(endedAt: string): string {
  return endedAt.slice(0, 16);
}

/** The start of the minute an hour of wall-clock time before `endedAt`. */
function lookBackFrom(endedAt: string): string {
  const millis = Date.parse(`${endedAt.slice(0, 19)}Z`);
  if (Number.isNaN(millis)) return endedAt;
  return `${new Date(millis - LOOK_BACK_MS).toISOString().slice(0, 16)}:00`;
}

function remember(cursor: CallCursor, endedAt: string, id: string): void {
  if (cursor.since !== null && endedAt < cursor.since) return;
  (cursor.seen[minuteOf(endedAt)] ??= []).push(id);
}

/** Forgets the oldest remembered minute: the look-back then starts at the next one. */
function forgetOldestMinute(cursor: CallCursor): void {
  const minutes = Object.keys(cursor.seen).sort();
  if (minutes.length < 2) return;
  delete cursor.seen[minutes[0]!];
  cursor.since = `${minutes[1]}:00`;
}

/** Keeps the ids of the look-back behind the newest record read, at most MAX_REMEMBERED_CALLS of them. */
function prune(cursor: CallCursor): void {
  if (!cursor.endedAt) return;
  const from = lookBackFrom(cursor.endedAt);
  if (cursor.since === null || cursor.since < from) cursor.since = from;
  const seen: Record<string, string[]> = {};
  let count = 0;
  for (const minute of Object.keys(cursor.seen).sort()) {
    if (`${minute}:59` < cursor.since) continue;
    seen[minute] = cursor.seen[minute]!;
    count += seen[minute].length;
  }
  cursor.seen = seen;
  while (count > MAX_REMEMBERED_CALLS && Object.keys(cursor.seen).length > 1) {
    const oldest = Object.keys(cursor.seen).sort()[0]!;
    count -= cursor.seen[oldest]!.length;
    forgetOldestMinute(cursor);
  }
}
