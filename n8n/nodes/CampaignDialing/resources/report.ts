// Report resource: the call-details and number-details reports of a campaign.
import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { ANSWER_TYPES, END_TYPES, NUMBER_DETAIL_STATUSES, OUTCOMES, RING_RESULTS } from '../../../api/enums.ts';
import { campaignIdOf, campaignLocator, enumOptions, listRequest, filtersCollection, filtersOf, operationField, returnAllAndLimit, show, sortCollection } from '../shared/fields.ts';
import { forEachItem } from '../shared/items.ts';
import { campaignPath, listRecords } from '../shared/transport.ts';

const R = 'report';

export const reportOperations = operationField(R, [
    { name: 'Call Details', value: 'callDetails', description: 'One record per call attempt', action: 'Get the call details report of a campaign' },
    { name: 'Number Details', value: 'numberDetails', description: 'One record per number, deleted ones included', action: 'Get the number details report of a campaign' },
], 'callDetails');

/** The four filters of a local timestamp field (`<field>_gte`, `_gt`, `_lte`, `_lt`). */
const localTimeFilters = (field: string, label: string): INodeProperties[] => (
  [['gte', 'At or After', 'at or after'], ['gt', 'After', 'after'], ['lte', 'At or Before', 'at or before'], ['lt', 'Before', 'before']] as const
).map(([op, words, text]) => ({
  displayName: `${label} ${words}`,
  name: `${field}_${op}`,
  type: 'dateTime',
  default: '',
  description: `Only calls ${label.toLowerCase()} ${text} this time, on the account's local clock`,
}));

/**
 * The four filters of the attempts count (`attempts_gte`, `_gt`, `_lte`, `_lt`). Each starts at the least value that
 * matches a number (no number is called fewer than 0 times), as the Numbers list's filters do.
 */
const attemptsFilters = (): INodeProperties[] => (
  [['gte', 'At Least', 'at least', 0], ['gt', 'Greater Than', 'more than', 0], ['lte', 'At Most', 'at most', 0], ['lt', 'Less Than', 'fewer than', 1]] as const
).map(([op, words, text, least]) => ({
  displayName: `Attempts ${words}`,
  name: `attempts_${op}`,
  type: 'number',
  typeOptions: { minValue: least },
  default: least,
  description: `Only numbers called ${text} this many times`,
}));

export const reportFields: INodeProperties[] = [
  campaignLocator(show(R, ['callDetails', 'numberDetails'])),
  ...returnAllAndLimit(R, 'callDetails'),
  ...returnAllAndLimit(R, 'numberDetails'),
  filtersCollection(R, 'callDetails', [
      { displayName: 'Answer Type', name: 'answerType', type: 'options', options: enumOptions(ANSWER_TYPES), default: 'Human', description: 'Who or what answered (answering-machine detection)' },
      { displayName: 'Attempt', name: 'attempt', type: 'number', typeOptions: { minValue: 1 }, default: 1, description: 'Only calls that were this attempt of their number' },
      { displayName: 'End Type', name: 'endType', type: 'options', options: enumOptions(END_TYPES), default: 'HangUp' },
      ...localTimeFilters('answeredAtLocal', 'Answered'),
      ...localTimeFilters('endedAtLocal', 'Ended'),
      ...localTimeFilters('startedAtLocal', 'Started'),
      { displayName: 'Outcome', name: 'outcome', type: 'options', options: enumOptions(OUTCOMES), default: 'Success' },
      { displayName: 'Phone Number', name: 'number', type: 'string', default: '', description: 'Only calls to exactly this phone number' },
      { displayName: 'Phone Number Prefix', name: 'numberPrefix', type: 'string', default: '', placeholder: 'e.g. +4930', description: 'Only calls to phone numbers starting with this' },
      { displayName: 'Queue ID', name: 'queueId', type: 'string', default: '' },
      { displayName: 'Ring Result', name: 'ringResult', type: 'options', options: enumOptions(RING_RESULTS), default: 'Answer' },
      { displayName: 'SIP Response Code', name: 'sipResponseCode', type: 'number', typeOptions: { minValue: 100, maxValue: 699 }, default: 200 },
    ] as INodeProperties[]),
  filtersCollection(R, 'numberDetails', [
      ...attemptsFilters(),
      { displayName: 'Phone Number', name: 'number', type: 'string', default: '', description: 'Only this phone number' },
      { displayName: 'Status', name: 'status', type: 'options', options: enumOptions(NUMBER_DETAIL_STATUSES), default: 'Success', description: 'Only numbers in this status; Deleted shows numbers removed from the campaign' },
    ] as INodeProperties[]),
  sortCollection(R, 'callDetails', [
      { name: 'Phone Number', value: 'number' }, { name: 'Attempt', value: 'attempt' },
      { name: 'Started At', value: 'startedAtLocal' }, { name: 'Answered At', value: 'answeredAtLocal' },
      { name: 'Ended At', value: 'endedAtLocal' }, { name: 'Ring Result', value: 'ringResult' },
      { name: 'Answer Type', value: 'answerType' }, { name: 'SIP Response Code', value: 'sipResponseCode' },
      { name: 'End Type', value: 'endType' }, { name: 'Outcome', value: 'outcome' },
    ]),
  sortCollection(R, 'numberDetails', [{ name: 'Phone Number', value: 'number' }, { name: 'Attempts', value: 'attempts' }]),
];

export async function executeReport(ctx: IExecuteFunctions, operation: 'callDetails' | 'numberDetails', items: INodeExecutionData[]): Promise<INodeExecutionData[]> {
  return forEachItem(ctx, items, async (i) => {
    const { request, limit, pageSize } = listRequest(ctx, operation, i, filtersOf(reportFields, operation));
    return listRecords(ctx, `${campaignPath(campaignIdOf(ctx, i))}/reports/${operation}`, request, limit, i, pageSize);
  });
}
