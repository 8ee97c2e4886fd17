// Campaign resource: Get Many, Duplicate, Change State, Delete, Delete Many.
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { CAMPAIGN_STATES, CAMPAIGN_TYPES, DIALER_MODES, NUMBER_STATUSES, SETTABLE_STATES } from '../../../api/enums.ts';
import {
  campaignIdOf, campaignLocator, enumOptions, listRequest, filtersCollection, filtersOf, operationField, returnAllAndLimit, show, sortCollection, toIdList,
} from '../shared/fields.ts';
import { apiRequest, campaignPath, listRecords } from '../shared/transport.ts';
import { collect, deleteIds, deletedRecords, forEachItem, groupBy, inBatches } from '../shared/items.ts';

const R = 'campaign';

/** Largest list of ids in one DELETE .../campaigns request. */
const DELETE_MANY_BATCH = 10_000;

/** The four filters of a timestamp field (`<field>_gte`, `_gt`, `_lte`, `_lt`). */
const timestampFilters = (field: string, label: string, what: string): INodeProperties[] => (
  [['gte', 'At or After', 'at or after'], ['gt', 'After', 'after'], ['lte', 'At or Before', 'at or before'], ['lt', 'Before', 'before']] as const
).map(([op, words, text]) => ({
  displayName: `${label} ${words}`,
  name: `${field}_${op}`,
  type: 'dateTime' as const,
  default: '',
  description: `Only campaigns whose ${what} is ${text} this time (UTC)`,
}));

export const campaignOperations = operationField(R, [
    { name: 'Change State', value: 'changeState', description: 'Activate, pause or cancel a campaign', action: 'Change the state of a campaign' },
    { name: 'Delete', value: 'delete', description: 'Delete a Draft, Finished or Canceled campaign', action: 'Delete a campaign' },
    { name: 'Delete Many', value: 'deleteMany', description: 'Delete many campaigns in one request, all or none', action: 'Delete many campaigns' },
    { name: 'Duplicate', value: 'duplicate', description: 'Copy a campaign as a new Draft', action: 'Duplicate a campaign' },
    { name: 'Get Many', value: 'getAll', description: 'List campaigns', action: 'Get many campaigns' },
], 'getAll');

export const campaignFields: INodeProperties[] = [
  campaignLocator(show(R, ['changeState', 'delete', 'duplicate'])),
  {
    displayName: 'State',
    name: 'state',
    type: 'options',
    options: enumOptions(SETTABLE_STATES),
    default: 'Active',
    required: true,
    description: 'The state to move the campaign to. Canceled is final.',
    displayOptions: show(R, ['changeState']),
  },
  {
    displayName: 'Campaign IDs',
    name: 'campaignIds',
    type: 'string',
    default: '',
    required: true,
    placeholder: 'e.g. 3f1c2a9e-6b0d-4f7e-9a55-1d2e3f4a5b6c',
    description: 'ID of a campaign to delete, or several separated by commas (usually an expression reading the ID field of the item); the IDs of all input items are deleted in one request, all or none',
    displayOptions: show(R, ['deleteMany']),
  },
  {
    displayName: 'Options',
    name: 'duplicateOptions',
    type: 'collection',
    placeholder: 'Add Option',
    default: {},
    displayOptions: show(R, ['duplicate']),
    options: [
      {
        displayName: 'Include Numbers',
        name: 'includeNumbers',
        type: 'boolean',
        default: true,
        description: 'Whether to copy the numbers of the campaign (they start again as Not Contacted)',
      },
      {
        displayName: 'New Campaign Name',
        name: 'newCampaignName',
        type: 'string',
        default: '',
        description: 'Name of the copy; without it the copy is named like the original with a number suffix',
      },
      {
        displayName: 'Number Statuses to Copy',
        name: 'numberStatuses',
        type: 'multiOptions',
        options: enumOptions(NUMBER_STATUSES),
        default: [],
        description: 'Copy only numbers in these statuses; none selected copies all',
      },
    ],
  },
  ...returnAllAndLimit(R, 'getAll'),
  filtersCollection(R, 'getAll', [
      { displayName: 'Answering Machine Call Flow ID', name: 'answeringMachineCallflowId', type: 'string', default: '', description: 'Only campaigns using this call flow when an answering machine answers' },
      { displayName: 'Call Flow ID', name: 'callflowIds_ctn', type: 'string', default: '', description: 'Only campaigns using this call flow, for human or machine answers' },
      { displayName: 'Campaign IDs', name: 'ids', type: 'string', default: '', description: 'Only these campaigns: IDs separated by commas' },
      { displayName: 'Dialer Mode', name: 'dialerMode', type: 'options', options: enumOptions(DIALER_MODES), default: 'Power' },
      ...timestampFilters('endDate', 'End Date', 'scheduled end date'),
      ...timestampFilters('endedAt', 'Ended', 'actual end'),
      { displayName: 'Extension ID', name: 'extensionId', type: 'string', default: '' },
      { displayName: 'Human Answer Call Flow ID', name: 'humanAnswerCallflowId', type: 'string', default: '', description: 'Only campaigns using this call flow when a person answers' },
      { displayName: 'Is Archived', name: 'isArchived', type: 'boolean', default: false, description: 'Whether to return only archived campaigns (on) or only campaigns not archived (off)' },
      { displayName: 'Name', name: 'name', type: 'string', default: '', description: 'Only campaigns with exactly this name' },
      { displayName: 'Phone System ID', name: 'phoneSystemId', type: 'string', default: '' },
      ...timestampFilters('startDate', 'Start Date', 'scheduled start date'),
      ...timestampFilters('startedAt', 'Started', 'actual start'),
      { displayName: 'State', name: 'state', type: 'options', options: enumOptions(CAMPAIGN_STATES), default: 'Active' },
      { displayName: 'Tag IDs', name: 'tagIds_ovl', type: 'string', default: '', description: 'Only campaigns with at least one of these tags: IDs separated by commas' },
      { displayName: 'Type', name: 'type', type: 'options', options: enumOptions(CAMPAIGN_TYPES), default: 'Dynamic' },
      { displayName: 'Webhook Endpoint ID', name: 'webhookEndpointId', type: 'string', default: '' },
    ] as INodeProperties[]),
  sortCollection(R, 'getAll', [
      { name: 'Name', value: 'name' }, { name: 'State', value: 'state' }, { name: 'Type', value: 'type' },
      { name: 'Start Date', value: 'startDate' }, { name: 'End Date', value: 'endDate' },
      { name: 'Numbers Count', value: 'numbersCount' }, { name: 'Started At', value: 'startedAt' },
      { name: 'Ended At', value: 'endedAt' },
    ]),
];

export async function executeCampaign(ctx: IExecuteFunctions, operation: string, items: INodeExecutionData[]): Promise<INodeExecutionData[]> {
  switch (operation) {
    case 'getAll':
      return forEachItem(ctx, items, async (i) => {
        const { request, limit, pageSize } = listRequest(ctx, 'campaigns', i, filtersOf(campaignFields, 'getAll'));
        return listRecords(ctx, '/campaigns', request, limit, i, pageSize);
      });
    case 'duplicate':
      return forEachItem(ctx, items, async (i) => {
        const options = ctx.getNodeParameter('duplicateOptions', i, {}) as IDataObject;
        const query = new URLSearchParams();
        if (options.newCampaignName) query.set('newCampaignName', String(options.newCampaignName));
        if (options.includeNumbers !== undefined) query.set('includeNumbers', String(options.includeNumbers));
        const statuses = options.numberStatuses as string[] | undefined;
        if (options.includeNumbers !== false && statuses?.length) query.set('numbersFilter', JSON.stringify({ status: statuses }));
        const id = campaignIdOf(ctx, i);
        const res = await apiRequest<IDataObject>(ctx, { method: 'POST', path: `${campaignPath(id)}/duplicate`, query, itemIndex: i });
        return [res.body];
      });
    case 'changeState':
      return forEachItem(ctx, items, async (i) => {
        const state = ctx.getNodeParameter('state', i) as string;
        const id = campaignIdOf(ctx, i);
        const res = await apiRequest<IDataObject>(ctx, { method: 'PUT', path: `${campaignPath(id)}/state`, json: state, itemIndex: i });
        return [res.body];
      });
    case 'delete':
      return forEachItem(ctx, items, async (i) => {
        const id = campaignIdOf(ctx, i);
        // 204 without a body, or 200 with the deleted campaign.
        const res = await apiRequest(ctx, { method: 'DELETE', path: campaignPath(id), itemIndex: i });
        return deletedRecords(res.body, [id]);
      });
    case 'deleteMany': {
      const entries = collect(items, (i) => ({ key: '', ids: toIdList(ctx.getNodeParameter('campaignIds', i, '')) }));
      return inBatches(ctx, groupBy(entries), {
        batchSize: DELETE_MANY_BATCH,
        emptyMessage: (i) => `The Campaign IDs field is empty for item ${i}`,
        send: async (_key, ids, itemIndexes) => deleteIds(ctx, '/campaigns', ids, itemIndexes),
      });
    }
  }
  return [];
}
