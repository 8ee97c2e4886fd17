// Campaign Number resource: Get Many, Add (batched), Upload CSV (from binary data), Delete (batched), and Calling
// Window (computed here, before a number is added; no request, no credential).
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties, NodeOperationError } from 'n8n-workflow';
import { NUMBER_STATUSES } from '../../../api/enums.ts';
import type { AddNumbersResult } from '../../../api/records.ts';
import {
  campaignIdOf, campaignLocator, enumOptions, listRequest, filtersCollection, filtersOf, operationField, returnAllAndLimit, show, sortCollection, toIdList,
} from '../shared/fields.ts';
import { collect, deleteIds, forEachItem, groupBy, inBatches, Rejected, type ItemRejection } from '../shared/items.ts';
import { apiError, apiRequest, campaignPath, forModel, listRecords } from '../shared/transport.ts';
import { apiTextInWords, operationError } from '../shared/errors.ts';
import { callingWindowFields, executeCallingWindow } from './calling-window.ts';
import { phoneNumberField } from '../shared/phone-number.ts';

const R = 'campaignNumber';

/** Largest batch the reference server takes in one JSON request (the real service states none). */
const MAX_ADD_BATCH = 10_000;
const DELETE_BATCH = 10_000;

export const numberOperations = operationField(R, [
    { name: 'Add', value: 'add', description: 'Add phone numbers to an active Dynamic campaign, many items per request', action: 'Add numbers to a campaign' },
    {
      name: 'Calling Window',
      value: 'callingWindow',
      description: 'Check whether a phone number\'s callee may be called now under the daemon\'s calling-time rules, and when that changes, in UTC and the callee\'s own time; it dials nothing and needs no credential',
      action: 'Check whether a phone number may be called now',
    },
    { name: 'Delete', value: 'delete', description: 'Delete numbers that are Not Contacted or Retry Pending', action: 'Delete numbers from a campaign' },
    { name: 'Get Many', value: 'getAll', description: 'List the numbers of a campaign', action: 'Get many numbers of a campaign' },
    { name: 'Upload CSV', value: 'upload', description: 'Upload a CSV file of phone numbers from binary data', action: 'Upload a CSV file of numbers' },
], 'getAll');

export const numberFields: INodeProperties[] = [
  campaignLocator(show(R, ['add', 'delete', 'getAll', 'upload'])),
  phoneNumberField('to add to the campaign, in international format (+14155550100); usually an expression reading a field of the item', show(R, ['add'])),
  {
    displayName: 'Variables',
    name: 'variables',
    type: 'fixedCollection',
    typeOptions: { multipleValues: true },
    placeholder: 'Add Variable',
    default: {},
    description: 'Values for the call flow, by name; names become the varNames of the request',
    displayOptions: show(R, ['add']),
    options: [
      {
        displayName: 'Variable',
        name: 'variable',
        values: [
          { displayName: 'Name', name: 'name', type: 'string', default: '', placeholder: 'e.g. firstName' },
          { displayName: 'Value', name: 'value', type: 'string', default: '', placeholder: 'e.g. {{ $json.firstName }}' },
        ],
      },
    ],
  },
  {
    displayName: 'Options',
    name: 'addOptions',
    type: 'collection',
    placeholder: 'Add Option',
    default: {},
    displayOptions: show(R, ['add']),
    options: [
      {
        displayName: 'Batch Size',
        name: 'batchSize',
        type: 'number',
        typeOptions: { minValue: 1, maxValue: MAX_ADD_BATCH },
        default: 1000,
        description: 'Most numbers sent in one request; input items are sent together in as few requests as this allows',
      },
    ],
  },
  {
    displayName: 'Input Binary Field',
    name: 'binaryPropertyName',
    type: 'string',
    default: 'data',
    required: true,
    hint: 'The name of the input binary field containing the CSV file',
    description: 'CSV layout: the phone number in the first column, one variable value in each further column',
    displayOptions: show(R, ['upload']),
  },
  {
    displayName: 'Options',
    name: 'uploadOptions',
    type: 'collection',
    placeholder: 'Add Option',
    default: {},
    displayOptions: show(R, ['upload']),
    options: [
      {
        displayName: 'First Row Is Header',
        name: 'firstRowIsHeader',
        type: 'boolean',
        default: true,
        description: 'Whether the first row names the variables instead of holding a number; without this option the service decides',
      },
      {
        displayName: 'Variable Count',
        name: 'varCount',
        type: 'number',
        typeOptions: { minValue: 0, maxValue: 50 },
        default: 0,
        description: 'Number of variable columns after the phone number; without this option the first row decides',
      },
    ],
  },
  {
    displayName: 'Number IDs',
    name: 'numberIds',
    type: 'string',
    default: '',
    required: true,
    placeholder: 'e.g. 1234',
    description: 'ID of a number record (not the phone number), or several separated by commas (usually an expression reading the ID field of the item); the IDs of all input items are deleted in one request, all or none',
    displayOptions: show(R, ['delete']),
  },
  ...returnAllAndLimit(R, 'getAll'),
  filtersCollection(R, 'getAll', [
      { displayName: 'Attempts Greater Than', name: 'attempts_gt', type: 'number', typeOptions: { minValue: 0 }, default: 0, description: 'Only numbers called more than this many times' },
      { displayName: 'Attempts Less Than', name: 'attempts_lt', type: 'number', typeOptions: { minValue: 1 }, default: 1, description: 'Only numbers called fewer than this many times' },
      { displayName: 'Phone Number Contains', name: 'number', type: 'string', default: '', description: 'Only phone numbers containing this text (a partial lookup)' },
      { displayName: 'Statuses', name: 'status', type: 'multiOptions', options: enumOptions(NUMBER_STATUSES), default: [], description: 'Only numbers in one of these statuses' },
    ]),
  sortCollection(R, 'getAll', [{ name: 'Phone Number', value: 'number' }, { name: 'Attempts', value: 'attempts' }]),
  ...callingWindowFields,
];

interface NumberEntry {
  number: string;
  vars: Map<string, string>;
}

/** A rejection in the add answer (201 or 422); `duplicateOf`, when sent, is the body index of the entry it repeats. */
type ServerRejection = AddNumbersResult['rejected'][number];

/** Most rejected items one error names before it says how many more there are. */
const REJECTIONS_NAMED = 10;

/** A phone number as written, without the separators people type: the same digits are the same number. */
const digitsOf = (number: string) => number.replace(/[\s().-]/g, '');

/**
 * The body index of the earlier entry a duplicate repeats: the server's `duplicateOf`, or, from a server that does
 * not send it, the first earlier entry written with the same digits.
 */
function duplicateOf(r: ServerRejection, body: string[]): number | undefined {
  if (typeof r.duplicateOf === 'number' && Number.isInteger(r.duplicateOf) && r.duplicateOf >= 0 && r.duplicateOf < r.index) return r.duplicateOf;
  if (r.code !== 'duplicate') return undefined;
  const digits = digitsOf(body[r.index] ?? '');
  const earlier = body.findIndex((number, n) => n < r.index && digitsOf(number) === digits);
  return earlier >= 0 ? earlier : undefined;
}

/** A rejected phone number, told in terms of input items: a body index means nothing in n8n. */
function rejection(number: string, itemIndex: number, r: ServerRejection, itemIndexes: number[], body: string[]): Rejected {
  const shown = JSON.stringify(number);
  const at = duplicateOf(r, body);
  const earlier = at === undefined ? undefined : itemIndexes[at];
  if (earlier !== undefined && earlier !== itemIndex) {
    const why = `duplicates the phone number of item ${earlier}`;
    return new Rejected(`The phone number ${shown} of item ${itemIndex} ${why}`, `${shown}: ${why}`,
      { number, code: r.code, duplicateOfItem: earlier });
  }
  const reason = apiTextInWords(String(r.reason ?? r.code).trim().replace(/\.$/, ''));
  return new Rejected(`The phone number ${shown} of item ${itemIndex} was rejected: ${reason}`, `${shown}: ${reason}`,
    { number, code: r.code });
}

/** The error that stops the node: how many phone numbers were rejected, and which items gave them. */
function rejectedError(ctx: IExecuteFunctions, rejections: ItemRejection[], sent: number): NodeOperationError {
  const named = rejections.slice(0, REJECTIONS_NAMED).map((r) => `item ${r.itemIndex} (${r.rejected.summary})`);
  const more = rejections.length - named.length;
  const list = more > 0 ? `${named.join(', ')} and ${more} more` : named.length > 1
    ? `${named.slice(0, -1).join(', ')} and ${named.at(-1)}` : named[0];
  const added = sent - rejections.length;
  const message = rejections.length === 1 && sent === 1
    ? rejections[0]!.rejected.message
    : `${rejections.length} of ${sent} phone numbers ${rejections.length === 1 ? 'was' : 'were'} rejected: ${list}`;
  const addedText = added === 0 ? 'No phone number was added.'
    : added === 1 ? 'The other phone number was added to the campaign.' : `The other ${added} phone numbers were added to the campaign.`;
  // A model cannot change the node's settings: it is told what to send instead.
  const next = forModel(ctx)
    ? 'Call again with only the rejected phone numbers, corrected: each in international format (such as +14155550100), '
      + 'given once, and not already in the campaign.'
    : 'To get each rejected phone number as an item instead of this error, set the node\'s Settings > On Error to "Continue" or "Continue (using error output)".';
  return operationError(ctx.getNode(), message, { itemIndex: rejections[0]!.itemIndex, description: `${addedText} ${next}` });
}

async function addNumbers(ctx: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[]> {
  const varNamesByCampaign = new Map<string, string[]>();
  const entries = collect<NumberEntry>(items, (i) => {
    const key = campaignIdOf(ctx, i);
    const number = String(ctx.getNodeParameter('phoneNumber', i, '') ?? '').trim();
    const variables = ctx.getNodeParameter('variables.variable', i, []) as Array<{ name: string; value: unknown }>;
    const vars = new Map<string, string>();
    variables.forEach(({ name, value }, n) => {
      const trimmed = String(name ?? '').trim();
      if (!trimmed) {
        throw operationError(ctx.getNode(), `Variable ${n + 1} of item ${i} has no name`, {
          itemIndex: i, description: 'Give every variable under Variables a name: the call flow reads its value by that name.',
        });
      }
      vars.set(trimmed, value === null || value === undefined ? '' : String(value));
    });
    const names = varNamesByCampaign.get(key) ?? [];
    for (const name of vars.keys()) if (!names.includes(name)) names.push(name);
    varNamesByCampaign.set(key, names);
    return { key, ids: number ? [{ number, vars }] : [] };
  });
  const batchSize = Math.min(MAX_ADD_BATCH, Math.max(1, Number((ctx.getNodeParameter('addOptions', 0, {}) as IDataObject).batchSize ?? 1000)));
  return inBatches(ctx, groupBy(entries), {
    batchSize,
    emptyMessage: (i) => `The Phone Number field is empty for item ${i}`,
    rejectedError: (rejections, sent) => rejectedError(ctx, rejections, sent),
    send: async (campaignId, values, itemIndexes) => {
      const varNames = varNamesByCampaign.get(campaignId) ?? [];
      const body = values.map((v) => (varNames.length ? { number: v.number, varValues: varNames.map((n) => v.vars.get(n) ?? '') } : { number: v.number }));
      const query = new URLSearchParams();
      if (varNames.length) query.set('varNames', JSON.stringify(varNames));
      const response = await apiRequest<AddNumbersResult>(ctx, {
        method: 'POST', path: `${campaignPath(campaignId)}/numbers`, query, json: body, itemIndex: itemIndexes[0], accept: [422],
      });
      const result = response.body;
      // A 422 is read only when it lists the rejected numbers (none was added); any other is an error.
      if (response.statusCode === 422 && !Array.isArray(result?.rejected)) throw apiError(ctx, response, itemIndexes[0]);
      const rejectedAt = new Map(((result.rejected ?? []) as ServerRejection[]).map((r) => [r.index, r]));
      // The created records come in request order, without the rejected entries.
      const created = result.created ?? [];
      let next = 0;
      return values.map((v, n) => {
        const r = rejectedAt.get(n);
        if (r) return rejection(v.number, itemIndexes[n]!, r, itemIndexes, values.map((e) => e.number));
        return (created[next++] ?? {}) as unknown as IDataObject;
      });
    },
  });
}

/** A multipart/form-data body with one file part named `file`. */
function multipartFile(data: Buffer, fileName: string, mimeType: string): { body: Buffer; contentType: string } {
  const boundary = `----n8nCampaignDialing${Math.random().toString(16).slice(2)}${Date.now().toString(16)}`;
  const safeName = fileName.replace(/["\r\n]/g, '_');
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${safeName}"\r\nContent-Type: ${mimeType}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return { body: Buffer.concat([head, data, tail]), contentType: `multipart/form-data; boundary=${boundary}` };
}

export async function executeNumber(ctx: IExecuteFunctions, operation: string, items: INodeExecutionData[]): Promise<INodeExecutionData[]> {
  switch (operation) {
    case 'getAll':
      return forEachItem(ctx, items, async (i) => {
        const { request, limit, pageSize } = listRequest(ctx, 'numbers', i, filtersOf(numberFields, 'getAll'));
        return listRecords(ctx, `${campaignPath(campaignIdOf(ctx, i))}/numbers`, request, limit, i, pageSize);
      });
    case 'add':
      return addNumbers(ctx, items);
    case 'callingWindow':
      return executeCallingWindow(ctx, items);
    case 'upload':
      return forEachItem(ctx, items, async (i) => {
        const property = ctx.getNodeParameter('binaryPropertyName', i) as string;
        const binary = ctx.helpers.assertBinaryData(i, property);
        const data = await ctx.helpers.getBinaryDataBuffer(i, property);
        const options = ctx.getNodeParameter('uploadOptions', i, {}) as IDataObject;
        const query = new URLSearchParams();
        if (options.firstRowIsHeader !== undefined) query.set('firstRowIsHeader', String(options.firstRowIsHeader));
        if (options.varCount !== undefined) query.set('varCount', String(options.varCount));
        const raw = multipartFile(data, binary.fileName ?? 'numbers.csv', binary.mimeType || 'text/csv');
        const id = campaignIdOf(ctx, i);
        const res = await apiRequest<IDataObject>(ctx, { method: 'POST', path: `${campaignPath(id)}/numbers/upload`, query, raw, itemIndex: i });
        return [res.body];
      });
    case 'delete': {
      const entries = collect(items, (i) => ({ key: campaignIdOf(ctx, i), ids: toIdList(ctx.getNodeParameter('numberIds', i, '')) }));
      return inBatches(ctx, groupBy(entries), {
        batchSize: DELETE_BATCH,
        emptyMessage: (i) => `The Number IDs field is empty for item ${i}`,
        send: async (campaignId, ids, itemIndexes) => deleteIds(ctx, `${campaignPath(campaignId)}/numbers`, ids, itemIndexes),
      });
    }
  }
  return [];
}
