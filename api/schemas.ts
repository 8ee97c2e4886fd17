// JSON Schemas (2020-12) of the records and problems the API answers with, built from the enums and checked against records.ts.
import {
  ANSWER_TYPES, CAMPAIGN_STATES, CAMPAIGN_TYPES, DIALER_MODES, END_TYPES, NUMBER_DETAIL_STATUSES, NUMBER_STATUSES, OUTCOMES,
  RING_RESULTS,
} from './enums.ts';
import { PROBLEMS, problemType, type FieldError, type ProblemKind } from './problems.ts';
import {
  WEEKDAYS, type AddNumbersResult, type CallDetail, type Campaign, type CampaignNumber, type DialerSettings, type NumberDetail,
  type RejectionCode, type UploadResult,
} from './records.ts';

/** A JSON Schema as plain data. */
export type Schema = { readonly [keyword: string]: unknown };

type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];
type RequiredKeys<T> = Exclude<keyof T, OptionalKeys<T>>;

/**
 * An object schema with exactly T's fields. The two maps must name every field of T and nothing else, so a field added
 * to a record in records.ts does not compile until its schema is written here: the document cannot silently fall behind.
 */
function record<T>(
  description: string,
  required: { [K in RequiredKeys<T>]-?: Schema },
  optional: { [K in OptionalKeys<T>]-?: Schema },
): Schema {
  return {
    type: 'object', description, additionalProperties: false,
    required: Object.keys(required), properties: { ...required, ...optional },
  };
}

/** The named schemas (the keys of SCHEMAS; `satisfies` there keeps the two equal). */
export type SchemaName =
  | 'Campaign' | 'CampaignNumber' | 'CallDetail' | 'NumberDetail' | 'AddNumbersResult' | 'RejectedEntry' | 'UploadResult' | 'RejectedRow'
  | 'Problem' | 'FieldError';

/** `#/components/schemas/<name>`: where the document holds the named schema. */
export function schemaRef(name: SchemaName): Schema {
  return { $ref: `#/components/schemas/${name}` };
}

const text = (description: string, extra: Schema = {}): Schema => ({ type: 'string', description, ...extra });
const nullableText = (description: string, extra: Schema = {}): Schema => ({ type: ['string', 'null'], description, ...extra });
const oneOf = (values: readonly string[], description: string): Schema => ({ type: 'string', enum: [...values], description });
const nullableOneOf = (values: readonly string[], description: string): Schema => ({ enum: [...values, null], description });
const count = (description: string): Schema => ({ type: 'integer', minimum: 0, description });
const strings = (description: string, extra: Schema = {}): Schema => ({ type: 'array', items: { type: 'string' }, description, ...extra });

/** Campaign timestamps: UTC, `YYYY-MM-DDTHH:MM:SSZ`. */
const utc = (description: string): Schema => ({ type: ['string', 'null'], format: 'date-time', description: `${description} (UTC, YYYY-MM-DDTHH:MM:SSZ)` });
/** Report timestamps: the account's wall clock, no zone. */
const LOCAL_TIMESTAMP = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}$';
const local = (description: string): Schema =>
  text(`${description} (the account's local time, YYYY-MM-DDTHH:MM:SS)`, { pattern: LOCAL_TIMESTAMP, examples: ['2026-01-05T09:30:00'] });
const nullableLocal = (description: string): Schema =>
  nullableText(`${description} (the account's local time, YYYY-MM-DDTHH:MM:SS; null when it did not happen)`, { pattern: LOCAL_TIMESTAMP });

/** Exactly the members of RejectionCode: the Record type makes a missing or extra one a compile error. */
const REJECTION_CODE_SET: Record<RejectionCode, true> = { invalid_number: true, duplicate: true, wrong_column_count: true };
export const REJECTION_CODES = Object.keys(REJECTION_CODE_SET) as RejectionCode[];

const rejectionCode = oneOf(REJECTION_CODES, 'Why the entry was rejected: invalid_number, duplicate (already in the campaign or earlier in the request) or wrong_column_count (CSV)');
const seconds = (description: string): Schema => ({ type: 'number', minimum: 0, description });
const HHMM = { type: 'string', pattern: '^([01]\\d|2[0-3]):[0-5]\\d$' } as const;

const dialer = record<Campaign['dialer']>('The dialer: `mode` and how the simulated dialer runs the campaign', {
  mode: oneOf(DIALER_MODES, 'Dialer mode'),
  agents: { type: 'integer', minimum: 1, description: 'Agents taking calls' },
  linesPerAgent: { type: 'number', exclusiveMinimum: 0, description: 'Power: lines dialed per available agent; Predictive starts here and adapts' },
  talkSeconds: seconds('Average talk time'),
  wrapUpSeconds: seconds('Agent wrap-up time after a call'),
  maxAttempts: { type: 'integer', minimum: 1, description: 'Call attempts per number' },
  retryDelaySeconds: record<DialerSettings['retryDelaySeconds']>('Delay before the next attempt, by what ended the last one', {
    NoAnswer: seconds('After no answer'), Busy: seconds('After busy'), CallError: seconds('After a call error'),
    Machine: seconds('After an answering machine'), Abandoned: seconds('After an abandoned call'),
  }, {}),
  abandonRateTarget: { type: 'number', minimum: 0, maximum: 1, description: 'Predictive: abandoned calls as a share of answered human calls to stay under' },
  callingHours: record<DialerSettings['callingHours']>('When numbers may be called, in the account\'s time zone', {
    from: { ...HHMM, description: 'Start, HH:MM' },
    to: { ...HHMM, description: 'End, HH:MM' },
    days: { type: 'array', items: { type: 'string', enum: [...WEEKDAYS] }, description: 'Days of the week' },
  }, {}),
}, {});

const campaign = record<Campaign>('A campaign', {
  id: text('Campaign id (UUID)'),
  name: text('Campaign name'),
  state: oneOf(CAMPAIGN_STATES, 'Campaign state'),
  type: oneOf(CAMPAIGN_TYPES, 'Campaign type; numbers are added only to Dynamic campaigns'),
  phoneSystemId: nullableText('Phone system id'),
  extensionId: nullableText('Extension id'),
  dialer,
  tagIds: strings('Tag ids'),
  startDate: utc('Scheduled start'),
  endDate: utc('Scheduled end'),
  startedAt: utc('Actual start'),
  endedAt: utc('Actual end'),
  callflowIds: strings('Call flow ids'),
  callBehavior: record<Campaign['callBehavior']>('Call flows by who answers', {
    humanAnswerCallflowId: nullableText('Call flow used when a human answers'),
    answeringMachineCallflowId: nullableText('Call flow used when an answering machine answers'),
  }, {}),
  webhookEndpointId: nullableText('Webhook endpoint id'),
  isArchived: { type: 'boolean', description: 'Whether the campaign is archived' },
  numbersCount: count('Live (not deleted) numbers of the campaign'),
  createdAt: { type: 'string', format: 'date-time', description: 'When the campaign was created (UTC)' },
}, {});

const recordId = (description: string): Schema => text(description, { pattern: '^\\d+$', examples: ['1234'] });
const phoneNumber = (description: string): Schema => text(description, { examples: ['+12125550100'] });

const campaignNumber = record<CampaignNumber>('A number of a campaign', {
  id: recordId('Number record id: what DELETE …/numbers takes (not the phone number)'),
  number: phoneNumber('Phone number, E.164'),
  status: oneOf(NUMBER_STATUSES, 'Number status'),
  attempts: count('Call attempts so far'),
  varNames: strings('Variable names, in the order of varValues'),
  varValues: strings('Variable values for the call flow'),
}, {});

const callDetail = record<CallDetail>('A call-detail record: one call attempt', {
  id: recordId('Call-detail record id'),
  numberId: recordId('Id of the number record called'),
  number: phoneNumber('Phone number called, E.164'),
  attempt: { type: 'integer', minimum: 1, description: 'Attempt number, from 1' },
  startedAtLocal: local('When the call started'),
  answeredAtLocal: nullableLocal('When the call was answered'),
  endedAtLocal: local('When the call ended'),
  ringResult: oneOf(RING_RESULTS, 'How ringing ended'),
  answerType: nullableOneOf(ANSWER_TYPES, 'Who answered; null when nobody did'),
  sipResponseCode: { type: 'integer', description: 'SIP response code' },
  endType: nullableOneOf(END_TYPES, 'How an answered call ended; null when not answered'),
  queueId: nullableText('Queue id; null when the call reached no queue'),
  outcome: oneOf(OUTCOMES, 'Outcome of the attempt'),
}, {});

const numberDetail = record<NumberDetail>('A number-detail record: a number, deleted ones included', {
  id: recordId('Number record id'),
  number: phoneNumber('Phone number, E.164'),
  status: oneOf(NUMBER_DETAIL_STATUSES, 'Number status; Deleted for deleted numbers'),
  attempts: count('Call attempts'),
  varNames: strings('Variable names'),
  varValues: strings('Variable values'),
}, {});

const rejectedEntry = record<AddNumbersResult['rejected'][number]>('An entry of POST …/numbers that was not added', {
  index: count('Position of the entry in the request body (0-based)'),
  number: { description: 'The entry\'s number as given' },
  reason: text('Why it was rejected, for people'),
  code: rejectionCode,
}, {
  duplicateOf: count('For a duplicate within the body: the index of the entry it repeats'),
});

const addNumbersResult = record<AddNumbersResult>('What POST …/numbers added and rejected', {
  created: { type: 'array', items: schemaRef('CampaignNumber'), description: 'The numbers added' },
  rejected: { type: 'array', items: schemaRef('RejectedEntry'), description: 'The entries not added, each with why' },
}, {});

const rejectedRow = record<UploadResult['rejected'][number]>('A CSV row that was not added', {
  line: { type: 'integer', minimum: 1, description: 'Line in the file, 1-based' },
  value: text('The row or its phone number as read'),
  reason: text('Why it was rejected, for people'),
  code: rejectionCode,
}, {});

const uploadResult = record<UploadResult>('What POST …/numbers/upload read, added and rejected', {
  rows: count('Data rows read (a header row is not counted)'),
  createdCount: count('Numbers added'),
  rejectedCount: count('Rows rejected (all of them, even when not all are listed)'),
  rejected: { type: 'array', items: schemaRef('RejectedRow'), description: 'The first rejected rows, in file order (all are counted)' },
  varNames: strings('Variable names given to the added numbers'),
  firstRowIsHeader: { type: 'boolean', description: 'Whether the first row was read as a header (given, or detected)' },
  varCount: count('Variable columns after the phone number'),
}, {});

const fieldError = record<FieldError>('One bad input', {
  in: oneOf(['query', 'path', 'body', 'header'], 'Where the input is'),
  name: text('The query or path parameter, or a JSON pointer into the body (`/3/number`)'),
  detail: text('What is wrong and what is allowed'),
}, {});

const PROBLEM_KINDS = Object.keys(PROBLEMS) as ProblemKind[];

const problem: Schema = {
  type: 'object',
  description: 'An RFC 9457 problem. Operations may add extension members (listed with each response).',
  required: ['type', 'title', 'status', 'detail', 'message'],
  properties: {
    type: { type: 'string', enum: PROBLEM_KINDS.map(problemType), description: 'Problem type (a URI reference)' },
    title: { type: 'string', description: 'Short summary of the problem type' },
    status: { type: 'integer', enum: [...new Set(PROBLEM_KINDS.map((k) => PROBLEMS[k].status))], description: 'HTTP status' },
    detail: text('What went wrong in this request and how to fix it'),
    message: text('The same text as detail, for simple REST clients'),
    instance: text('The request path'),
    errors: { type: 'array', items: schemaRef('FieldError'), description: 'Every bad input, when there are several or one is named' },
  },
};

export const SCHEMAS = {
  Campaign: campaign,
  CampaignNumber: campaignNumber,
  CallDetail: callDetail,
  NumberDetail: numberDetail,
  AddNumbersResult: addNumbersResult,
  RejectedEntry: rejectedEntry,
  UploadResult: uploadResult,
  RejectedRow: rejectedRow,
  Problem: problem,
  FieldError: fieldError,
} satisfies Record<SchemaName, Schema>;
