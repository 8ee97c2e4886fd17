// Running an operation over input items: one call per item, or the items' values batched into few requests;
// output items paired to their input, and Continue On Fail turning a failure into an error item.
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

function errorItem(error: unknown, itemIndex: number, extra: IDataObject = {}): INodeExecutionData {
  const e = error as { message?: string; description?: string; httpCode?: string };
  const json: IDataObject = { ...extra, error: e.message ?? String(error) };
  if (e.description) json.errorDescription = e.description;
  if (e.httpCode) json.httpCode = e.httpCode;
  return { json, pairedItem: { item: itemIndex } };
}

/** n8n's own errors as they are; anything else (a bug of ours) as a NodeOperationError on its item. */
function asNodeError(ctx: IExecuteFunctions, error: unknown, itemIndex: number): NodeApiError | NodeOperationError {
  if (error instanceof NodeApiError || error instanceof NodeOperationError) return error;
  return new NodeOperationError(ctx.getNode(), error as Error, { itemIndex });
}

/** Runs `run` for each input item; its records become output items paired to that item. */
export async function forEachItem(
  ctx: IExecuteFunctions, items: INodeExecutionData[], run: (itemIndex: number) => Promise<IDataObject[]>,
): Promise<INodeExecutionData[]> {
  const out: INodeExecutionData[] = [];
  for (let i = 0; i < items.length; i++) {
    try {
      for (const json of await run(i)) out.push({ json, pairedItem: { item: i } });
    } catch (error) {
      if (!ctx.continueOnFail()) throw asNodeError(ctx, error, i);
      out.push(errorItem(error, i));
    }
  }
  return out;
}

/** The values one input item contributes to a batched request (ids, numbers). */
export interface ItemEntry<T = string> {
  itemIndex: number;
  ids: T[];
  /** Reading the item's parameters failed: the item answers this error and sends nothing. */
  error?: unknown;
}

/** Reads each item's campaign (the batch key) and values; an item whose parameters fail keeps its error. */
export function collect<T>(
  items: INodeExecutionData[], read: (itemIndex: number) => { key: string; ids: T[] },
): Array<ItemEntry<T> & { key: string }> {
  return items.map((_, itemIndex) => {
    try {
      return { itemIndex, ...read(itemIndex) };
    } catch (error) {
      return { itemIndex, key: '', ids: [], error };
    }
  });
}

/** A value the server refused while it accepted the rest of its request. */
export class Rejected {
  readonly reason: string;
  readonly details: IDataObject;
  constructor(reason: string, details: IDataObject) {
    this.reason = reason;
    this.details = details;
  }
}

/**
 * Sends the values of all items, grouped by `key` (a campaign), in requests of at most `batchSize` values. `send`
 * answers one result per value, in order: a record, or Rejected. A failed request fails each of its items.
 */
export async function inBatches<T>(
  ctx: IExecuteFunctions,
  groups: Array<{ key: string; entries: ItemEntry<T>[] }>,
  batchSize: number,
  /** What is wrong with an item that gives no value. */
  emptyMessage: string,
  send: (key: string, values: T[], firstItemIndex: number) => Promise<Array<IDataObject | Rejected>>,
): Promise<INodeExecutionData[]> {
  const results = new Map<number, INodeExecutionData[]>();
  const push = (i: number, item: INodeExecutionData) => {
    const list = results.get(i) ?? [];
    list.push(item);
    results.set(i, list);
  };
  // Items that cannot be sent fail before anything is sent.
  for (const entry of groups.flatMap((g) => g.entries).filter((e) => e.ids.length === 0)) {
    const error = entry.error ?? new NodeOperationError(ctx.getNode(), emptyMessage, { itemIndex: entry.itemIndex });
    if (!ctx.continueOnFail()) throw asNodeError(ctx, error, entry.itemIndex);
    push(entry.itemIndex, errorItem(error, entry.itemIndex));
  }
  for (const group of groups) {
    const flat = group.entries.flatMap((e) => e.ids.map((value) => ({ value, itemIndex: e.itemIndex })));
    for (let start = 0; start < flat.length; start += batchSize) {
      const batch = flat.slice(start, start + batchSize);
      let answers: Array<IDataObject | Rejected>;
      try {
        answers = await send(group.key, batch.map((b) => b.value), batch[0]!.itemIndex);
      } catch (error) {
        if (!ctx.continueOnFail()) throw asNodeError(ctx, error, batch[0]!.itemIndex);
        for (const i of new Set(batch.map((b) => b.itemIndex))) push(i, errorItem(error, i));
        continue;
      }
      batch.forEach((b, n) => {
        const answer = answers[n];
        if (answer instanceof Rejected) {
          if (!ctx.continueOnFail()) {
            const added = answers.filter((a) => !(a instanceof Rejected)).length;
            throw new NodeOperationError(ctx.getNode(), answer.reason, {
              itemIndex: b.itemIndex,
              description: `${added} other value(s) of the same request were accepted. Turn on Continue On Fail (Settings > On Error) to get rejected values as items instead.`,
            });
          }
          push(b.itemIndex, errorItem(new Error(answer.reason), b.itemIndex, answer.details));
        } else {
          push(b.itemIndex, { json: answer ?? {}, pairedItem: { item: b.itemIndex } });
        }
      });
    }
  }
  const out: INodeExecutionData[] = [];
  const indexes = new Set(groups.flatMap((g) => g.entries.map((e) => e.itemIndex)));
  for (const i of [...indexes].sort((a, b) => a - b)) out.push(...(results.get(i) ?? []));
  return out;
}

export function groupBy<T>(entries: Array<ItemEntry<T> & { key: string }>): Array<{ key: string; entries: ItemEntry<T>[] }> {
  const groups = new Map<string, ItemEntry<T>[]>();
  for (const { key, ...entry } of entries) {
    const list = groups.get(key) ?? [];
    list.push(entry);
    groups.set(key, list);
  }
  return [...groups].map(([key, list]) => ({ key, entries: list }));
}
