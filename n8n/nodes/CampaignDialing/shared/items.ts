// Running an operation over input items: one call per item, or the items' values batched into few requests;
// output items paired to their input, and a failure under "On Error: Continue" turned into an error item that n8n
// routes by the node's setting.
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';
import { operationError } from './errors.ts';
import { apiError, apiRequest } from './transport.ts';

type NodeError = NodeApiError | NodeOperationError;

/**
 * The item of a failure, paired to its input item. Under "Continue (using error output)" its JSON holds only `error`
 * (the message) and `details`: that sends it to the error output, where n8n adds the input item's fields to it. (An
 * error on `item.error` would send it there too, but n8n then replaces the JSON with the message alone.) Under
 * "Continue" it stays in the regular output, the reason beside the values it is about.
 */
function errorItem(ctx: IExecuteFunctions, error: NodeError, itemIndex: number, extra: IDataObject = {}): INodeExecutionData {
  const about: IDataObject = { ...extra };
  if (error.description) about.errorDescription = error.description;
  const { httpCode } = error as { httpCode?: string | null };
  if (httpCode) about.httpCode = httpCode;
  if (ctx.getNode().onError === 'continueErrorOutput') {
    const json: IDataObject = { error: error.message };
    if (Object.keys(about).length) json.details = about;
    return { json, pairedItem: { item: itemIndex } };
  }
  return { json: { ...extra, error: error.message, ...about }, pairedItem: { item: itemIndex } };
}

/** n8n's own errors as they are; anything else (a bug of ours) as a NodeOperationError on its item. */
function asNodeError(ctx: IExecuteFunctions, error: unknown, itemIndex: number): NodeError {
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
      const failure = asNodeError(ctx, error, i);
      if (!ctx.continueOnFail()) throw failure;
      out.push(errorItem(ctx, failure, i));
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
  /** The whole sentence, naming the item: the message of the item's error. */
  readonly message: string;
  /** The value and why, for a list of several rejections: `"+1…": not a valid phone number`. */
  readonly summary: string;
  /** Fields the error item carries besides the error (the value, the server's code). */
  readonly details: IDataObject;
  constructor(message: string, summary: string, details: IDataObject) {
    this.message = message;
    this.summary = summary;
    this.details = details;
  }
}

/** A rejected value and the input item it came from. */
export interface ItemRejection {
  itemIndex: number;
  rejected: Rejected;
}

export interface BatchOptions<T> {
  /** Most values in one request. */
  batchSize: number;
  /** Why an item that gives no value fails. */
  emptyMessage: (itemIndex: number) => string;
  /** Sends the values of one campaign (`key`); answers one result per value, in order: a record, or Rejected. */
  send: (key: string, values: T[], itemIndexes: number[]) => Promise<Array<IDataObject | Rejected>>;
  /** The error that stops the node, when it does not continue on error, after every value was sent. */
  rejectedError?: (rejections: ItemRejection[], sent: number) => NodeOperationError;
}

/**
 * Sends the values of all items, grouped by `key` (a campaign), in requests of at most `batchSize` values. A failed
 * request fails each of its items; a rejected value fails its item (once every value was sent, when the node stops
 * on errors, with one error naming every rejected item).
 */
export async function inBatches<T>(
  ctx: IExecuteFunctions, groups: Array<{ key: string; entries: ItemEntry<T>[] }>, options: BatchOptions<T>,
): Promise<INodeExecutionData[]> {
  const results = new Map<number, INodeExecutionData[]>();
  const push = (i: number, item: INodeExecutionData) => {
    const list = results.get(i) ?? [];
    list.push(item);
    results.set(i, list);
  };
  // Items that cannot be sent fail before anything is sent.
  for (const entry of groups.flatMap((g) => g.entries).filter((e) => e.ids.length === 0)) {
    const failure = asNodeError(ctx, entry.error ?? operationError(ctx.getNode(), options.emptyMessage(entry.itemIndex),
      { itemIndex: entry.itemIndex }), entry.itemIndex);
    if (!ctx.continueOnFail()) throw failure;
    push(entry.itemIndex, errorItem(ctx, failure, entry.itemIndex));
  }
  const rejections: ItemRejection[] = [];
  let sent = 0;
  for (const group of groups) {
    const flat = group.entries.flatMap((e) => e.ids.map((value) => ({ value, itemIndex: e.itemIndex })));
    for (let start = 0; start < flat.length; start += options.batchSize) {
      const batch = flat.slice(start, start + options.batchSize);
      let answers: Array<IDataObject | Rejected>;
      try {
        answers = await options.send(group.key, batch.map((b) => b.value), batch.map((b) => b.itemIndex));
      } catch (error) {
        const failure = asNodeError(ctx, error, batch[0]!.itemIndex);
        if (!ctx.continueOnFail()) throw failure;
        for (const i of new Set(batch.map((b) => b.itemIndex))) push(i, errorItem(ctx, failure, i));
        continue;
      }
      sent += batch.length;
      batch.forEach((b, n) => {
        const answer = answers[n];
        if (answer instanceof Rejected) {
          rejections.push({ itemIndex: b.itemIndex, rejected: answer });
          const failure = operationError(ctx.getNode(), answer.message, { itemIndex: b.itemIndex });
          push(b.itemIndex, errorItem(ctx, failure, b.itemIndex, answer.details));
        } else {
          push(b.itemIndex, { json: answer ?? {}, pairedItem: { item: b.itemIndex } });
        }
      });
    }
  }
  if (rejections.length && !ctx.continueOnFail()) {
    const first = rejections[0]!;
    throw options.rejectedError?.(rejections, sent)
      ?? operationError(ctx.getNode(), first.rejected.message, { itemIndex: first.itemIndex });
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

/** The items of a delete: the deleted records when the API answers them (200), else their IDs (204). */
export function deletedRecords(body: unknown, ids: string[]): IDataObject[] {
  const isRecord = (v: unknown): v is IDataObject => typeof v === 'object' && v !== null && !Array.isArray(v);
  const records = Array.isArray(body) ? body.filter(isRecord) : isRecord(body) ? [body] : [];
  const byId = new Map(records.map((r) => [String(r.id), r]));
  // A single deleted record answers for the single ID asked, whatever its id field says.
  const only = ids.length === 1 && records.length === 1 ? records[0] : undefined;
  return ids.map((id) => ({ id, ...(byId.get(id) ?? only ?? {}), deleted: true }));
}

/**
 * Deletes `ids` (of the items `itemIndexes`, in order) in one all-or-nothing request to `path`. A refusal names the
 * ids at fault (`missingIds`, `blockingIds`): the error points at the item of the first of them, not at the
 * batch's first item.
 */
export async function deleteIds(ctx: IExecuteFunctions, path: string, ids: string[], itemIndexes: number[]): Promise<IDataObject[]> {
  const response = await apiRequest(ctx, { method: 'DELETE', path, json: ids, itemIndex: itemIndexes[0], accept: [404, 409] });
  if (response.statusCode < 300) return deletedRecords(response.body, ids);
  const body = (typeof response.body === 'object' && response.body !== null ? response.body : {}) as IDataObject;
  const atFault = new Set([body.missingIds, body.blockingIds].flatMap((list) => (Array.isArray(list) ? list.map(String) : [])));
  const faulty = [...new Set(ids.flatMap((id, n) => (atFault.has(id) ? [itemIndexes[n]!] : [])))];
  const items = faulty.length === 1 ? `item ${faulty[0]}` : `items ${faulty.slice(0, -1).join(', ')} and ${faulty.at(-1)}`;
  const more = faulty.length ? `The IDs at fault come from ${items}; nothing was deleted, for any item.` : undefined;
  throw apiError(ctx, response, faulty[0] ?? itemIndexes[0], more);
}
