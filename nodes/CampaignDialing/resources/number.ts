// Campaign Number resource: Get Many, Add (batched), Upload CSV (from binary data), Delete (batched).
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import { NUMBER_STATUSES } from '../../../api/enums.ts';
import type { AddNumbersResult } from '../../../api/records.ts';
import {
  campaignIdOf, campaignLocator, enumOptions, listRequest, filtersCollection, operationField, returnAllAndLimit, show, sortCollection, toIdList,
} from '../shared/fields.ts';
import { collect, forEachItem, groupBy, inBatches, Rejected } from '../shared/items.ts';
import { apiRequest, campaignPath, listRecords } from '../shared/transport.ts';

const R = 'campaignNumber';

/** Largest batch the reference server takes in one JSON request (the real service states none). */
const MAX_ADD_BATCH = 10_000;
const DELETE_BATCH = 10_000;

export const numberOperations = operationField(R, [
    { name: 'Add', value: 'add', description: 'Add phone numbers to an active Dynamic campaign, many items per request', action: 'Add numbers to a campaign' },
    { name: 'Delete', value: 'delete', description: 'Delete numbers that are Not Contacted or Retry Pending', action: 'Delete numbers from a campaign' },
    { name: 'Get Many', value: 'getAll', description: 'List the numbers of a campaign', action: 'Get many numbers of a campaign' },
    { name: 'Upload CSV', value: 'upload', description: 'Upload a CSV file of phone numbers from binary data', action: 'Upload a CSV file of numbers' },
], 'getAll');

export const numberFields: INodeProperties[] = [
  campaignLocator(show(R, ['add', 'delete', 'getAll', 'upload'])),
  {
    displayName: 'Phone Number',
    name: 'phoneNumber',
    type: 'string',
    default: '',
    required: true,
    placeholder: 'e.g. {{ $json.phone }}',
    description: 'The phone number to dial, in international format (+14155550100); usually an expression reading a field of the item',
    displayOptions: show(R, ['add']),
  },
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
];

interface NumberEntry {
  number: string;
  vars: Map<string, string>;
}

async function addNumbers(ctx: IExecuteFunctions, items: INodeExecutionData[]): Promise<INodeExecutionData[]> {
  const varNamesByCampaign = new Map<string, string[]>();
  const entries = collect<NumberEntry>(items, (i) => {
    const key = campaignIdOf(ctx, i);
    const number = String(ctx.getNodeParameter('phoneNumber', i, '') ?? '').trim();
    const variables = ctx.getNodeParameter('variables.variable', i, []) as Array<{ name: string; value: unknown }>;
    const vars = new Map<string, string>();
    for (const { name, value } of variables) {
      const trimmed = String(name ?? '').trim();
      if (!trimmed) throw new NodeOperationError(ctx.getNode(), 'A variable has no name', { itemIndex: i });
      vars.set(trimmed, value === null || value === undefined ? '' : String(value));
    }
    const names = varNamesByCampaign.get(key) ?? [];
    for (const name of vars.keys()) if (!names.includes(name)) names.push(name);
    varNamesByCampaign.set(key, names);
    return { key, ids: number ? [{ number, vars }] : [] };
  });
  const batchSize = Math.min(MAX_ADD_BATCH, Math.max(1, Number((ctx.getNodeParameter('addOptions', 0, {}) as IDataObject).batchSize ?? 1000)));
  return inBatches(ctx, groupBy(entries), batchSize, 'No phone number given', async (campaignId, values, itemIndex) => {
    const varNames = varNamesByCampaign.get(campaignId) ?? [];
    const body = values.map((v) => (varNames.length ? { number: v.number, varValues: varNames.map((n) => v.vars.get(n) ?? '') } : { number: v.number }));
    const query = new URLSearchParams();
    if (varNames.length) query.set('varNames', JSON.stringify(varNames));
    const result = (await apiRequest<AddNumbersResult>(ctx, {
      method: 'POST', path: `${campaignPath(campaignId)}/numbers`, query, json: body, itemIndex, accept: [422],
    })).body;
    const rejectedAt = new Map((result.rejected ?? []).map((r) => [r.index, r]));
    // The created records come in request order, without the rejected entries.
    const created = result.created ?? [];
    let next = 0;
    return values.map((v, n) => {
      const rejection = rejectedAt.get(n);
      if (rejection) return new Rejected(`Phone number "${v.number}" was rejected: ${rejection.reason}`, { number: v.number, code: rejection.code });
      return (created[next++] ?? {}) as unknown as IDataObject;
    });
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
        const { request, limit } = listRequest(ctx, 'numbers', i);
        return listRecords(ctx, `${campaignPath(campaignIdOf(ctx, i))}/numbers`, request, limit, i);
      });
    case 'add':
      return addNumbers(ctx, items);
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
      return inBatches(ctx, groupBy(entries), DELETE_BATCH, 'No number ID given', async (campaignId, ids, itemIndex) => {
        await apiRequest(ctx, { method: 'DELETE', path: `${campaignPath(campaignId)}/numbers`, json: ids, itemIndex });
        return ids.map((id) => ({ id, deleted: true }));
      });
    }
  }
  return [];
}
