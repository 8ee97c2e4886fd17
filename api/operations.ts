// Every v1 operation as data: method, path, role-table name, parameters, bodies, success and the failures particular to it.
import { NUMBER_STATUSES, SETTABLE_STATES, type Operation } from './enums.ts';
import { MAX_VAR_NAME, MAX_VAR_VALUE } from './limits.ts';
import type { ListResource } from './content-range.ts';
import type { ProblemKind } from './problems.ts';
import { schemaRef, type Schema, type SchemaName } from './schemas.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Limits a server is configured with (server/app.ts `Limits` and friends); the document states them. */
export interface DocumentLimits {
  jsonBodyBytes: number;
  uploadBytes: number;
  numbersPerRequest: number;
  idsPerDelete: number;
  /** Variables per number (varNames, varValues, varCount). */
  variables: number;
  /** Rejected CSV rows listed in an upload's answer. */
  uploadRejectionsShown: number;
  /** Largest url-encoded GET body. */
  getBodyBytes: number;
  /** Deepest nesting of arrays and objects in a JSON body. */
  jsonDepth: number;
  /** Longest path parameter. */
  pathParameterChars: number;
  /** Largest request line plus headers. */
  headerBytes: number;
}

export interface ParameterSpec {
  name: string;
  description: string;
  /** The value's schema; for `json` parameters, the schema of the decoded JSON. */
  schema: Schema;
  /** The value is url-encoded JSON (`range=[0,9]`), not a plain string. */
  json?: boolean;
  /** Capped by the variables limit: an array's maxItems, an integer's maximum. */
  limit?: 'variables';
}

export interface MediaSpec {
  schema?: Schema;
  /** Form fields that carry these parameters, as the query string would (form bodies only). */
  params?: readonly ParameterSpec[];
}

export interface BodySpec {
  description: string;
  required: boolean;
  content: Record<string, MediaSpec>;
  /** Which limit caps the entries of a JSON array body. */
  itemLimit?: 'numbersPerRequest' | 'idsPerDelete';
}

export interface ProblemAnswer {
  kind: ProblemKind;
  /** When the operation answers it. */
  when: string;
  /** Extension members the problem carries then. */
  extensions?: Record<string, Schema>;
}

export type Tag = 'Campaigns' | 'Numbers' | 'Reports' | 'Documentation';

export interface ApiOperation {
  operationId: string;
  /** The operation's name in the role table (api/enums.ts ROLE_OPERATIONS); null: public, no key needed. */
  operation: Operation | null;
  method: HttpMethod;
  /** OpenAPI path template; placeholders as the spec names them. */
  path: string;
  tag: Tag;
  summary: string;
  description: string;
  /**
   * A list endpoint (§4.1): takes `range`, `sort` and `filter` as LIST_SPECS[resource] allows, also url-encoded in a GET
   * body, and answers a bare array of `record` with X-Total-Count and Content-Range.
   */
  list?: { resource: ListResource; record: SchemaName };
  query?: readonly ParameterSpec[];
  body?: BodySpec;
  success: { status: 200 | 201 | 204; description: string; schema?: Schema };
  /** What the server's limits mean for this operation, beyond the body's item limit and the variables limit. */
  limitNote?: (limits: DocumentLimits) => string;
  /** Failures particular to this operation; the generator adds those every operation shares (400, 401, 403, 413, 414, 415, 429, 431, 500). */
  problems: readonly ProblemAnswer[];
}

export const ACCOUNT_PATH = '/v1/accounts/{account_id}';
const CAMPAIGN_PATH = `${ACCOUNT_PATH}/campaigns/{campaign_id}`;

/** What each path placeholder names. */
export const PATH_PARAMETERS: Record<string, string> = {
  account_id: 'Account id (from the web console); must be the account of the API key',
  campaign_id: 'Campaign id',
  number_id: 'Number record id (the `id` of the numbers list, not the phone number)',
};

const unknownCampaign: ProblemAnswer = { kind: 'not-found', when: 'the campaign does not exist in this account' };
const acceptsNumbers: ProblemAnswer = {
  kind: 'conflict', when: 'the campaign is not Dynamic and Active: numbers are added only to an Active Dynamic campaign',
  extensions: {
    campaignType: { type: 'string', description: 'The campaign\'s type' },
    state: { type: 'string', description: 'The campaign\'s state' },
  },
};
const idArray = (what: string): Schema => ({
  type: 'array', minItems: 1, items: { type: ['string', 'integer'] },
  description: `${what} ids (strings; integers are read as their decimal text); duplicates count once`,
});
const idsMissing = { missingIds: { type: 'array', items: { type: 'string' }, description: 'The ids that do not exist' } };
const blockingIds = (what: string) => ({
  blockingIds: { type: 'array', items: { type: 'string' }, description: `The ${what} that block the deletion` },
});
const numbersBlocking = {
  ...blockingIds('numbers'),
  blocking: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, status: { type: 'string' } } }, description: 'Each blocking number with its status' },
};
const variableValues: Schema = { type: 'array', items: { type: 'string', maxLength: MAX_VAR_VALUE }, description: 'Variable values, in the order of varNames' };
const numberEntry: Schema = {
  type: 'object', additionalProperties: false, required: ['number'],
  properties: {
    number: { type: 'string', description: 'Phone number: +…, 00… or international digits without the plus', examples: ['+12125550100'] },
    varValues: variableValues,
  },
};
const settable: Schema = { type: 'string', enum: [...SETTABLE_STATES] };
const booleanText = (description: string): Schema => ({ type: 'boolean', description: `${description} (true or false; 1 and 0 are read the same)` });

const duplicateQuery: readonly ParameterSpec[] = [
  { name: 'newCampaignName', description: 'Name of the copy; default: the original\'s name with ` (n)`, n one more than the highest copy number', schema: { type: 'string', minLength: 1 } },
  { name: 'includeNumbers', description: 'Whether numbers are copied (default true); copies start afresh: NotContacted, 0 attempts', schema: booleanText('Copy numbers') },
  {
    name: 'numbersFilter', json: true, description: 'Which numbers are copied, by status (with includeNumbers); default: all',
    schema: {
      type: 'object', additionalProperties: false, required: ['status'],
      properties: {
        status: {
          description: 'Statuses to copy: one or an array',
          oneOf: [{ type: 'string', enum: [...NUMBER_STATUSES] }, { type: 'array', minItems: 1, items: { type: 'string', enum: [...NUMBER_STATUSES] } }],
        },
      },
    },
  },
];

const varNamesParameter: ParameterSpec = {
  name: 'varNames', json: true, limit: 'variables',
  description: 'Names of the variables, in the order of each entry\'s varValues; default var1…varN. An entry may not carry more values than there are names.',
  schema: { type: 'array', uniqueItems: true, items: { type: 'string', minLength: 1, maxLength: MAX_VAR_NAME } },
};

const uploadQuery: readonly ParameterSpec[] = [
  { name: 'firstRowIsHeader', description: 'Whether the first row is a header naming the variables; default: it is when its first cell has no digit', schema: booleanText('First row is a header') },
  { name: 'varCount', description: 'Variable columns after the phone number; default: the columns of the first row after the number', schema: { type: 'integer', minimum: 0 }, limit: 'variables' },
];

export const API_OPERATIONS: readonly ApiOperation[] = [
  {
    operationId: 'getOpenApiDocument', operation: null, method: 'GET', path: '/v1/openapi.json', tag: 'Documentation',
    summary: 'This document',
    description: 'The OpenAPI 3.1 description of every v1 operation, generated from the contract in api/. Public: no key, no rate limit.',
    success: { status: 200, description: 'The OpenAPI document', schema: {
        type: 'object', required: ['openapi', 'info', 'paths'],
        properties: { openapi: { type: 'string', pattern: '^3\\.1\\.' }, info: { type: 'object' }, paths: { type: 'object' } },
      },
    },
    problems: [],
  },
  {
    operationId: 'listCampaigns', operation: 'campaigns.list', method: 'GET', path: `${ACCOUNT_PATH}/campaigns`, tag: 'Campaigns',
    summary: 'List campaigns', description: 'A page of the account\'s campaigns.',
    list: { resource: 'campaigns', record: 'Campaign' },
    success: { status: 200, description: 'The page: a bare array of campaigns' },
    problems: [],
  },
  {
    operationId: 'duplicateCampaign', operation: 'campaigns.duplicate', method: 'POST', path: `${CAMPAIGN_PATH}/duplicate`, tag: 'Campaigns',
    summary: 'Duplicate a campaign',
    description: 'Copies the campaign as a new Draft with the same settings, a new id and no startedAt/endedAt. No body; the parameters may also come in a form-encoded body.',
    query: duplicateQuery,
    body: {
      description: 'No body, or the parameters form-encoded', required: false,
      content: { 'application/x-www-form-urlencoded': { params: duplicateQuery } },
    },
    success: { status: 201, description: 'The copy', schema: schemaRef('Campaign') },
    problems: [unknownCampaign],
  },
  {
    operationId: 'changeCampaignState', operation: 'campaigns.changeState', method: 'PUT', path: `${CAMPAIGN_PATH}/state`, tag: 'Campaigns',
    summary: 'Change the state of a campaign',
    description: 'Moves the campaign to Active, Paused or Canceled. Asking for the current state changes nothing and answers 200, so a retry is safe. Finished and Canceled are final; Draft cannot be paused.',
    body: {
      description: 'The target state as a JSON string (`"Active"`, with the quotes); a text/plain body `Active` is read the same',
      required: true,
      content: { 'application/json': { schema: settable }, 'text/plain': { schema: settable } },
    },
    success: { status: 200, description: 'The campaign after the change', schema: schemaRef('Campaign') },
    problems: [
      { kind: 'invalid-request', when: 'the body is not one of "Active", "Paused", "Canceled"' },
      unknownCampaign,
      {
        kind: 'conflict', when: 'the campaign cannot move from its state to the one asked for',
        extensions: {
          state: { type: 'string', description: 'The campaign\'s state' },
          allowedStates: { type: 'array', items: { type: 'string' }, description: 'States it can be moved to' },
        },
      },
    ],
  },
  {
    operationId: 'deleteCampaign', operation: 'campaigns.delete', method: 'DELETE', path: CAMPAIGN_PATH, tag: 'Campaigns',
    summary: 'Delete a campaign',
    description: 'Deletes a Draft, Finished or Canceled campaign with its numbers and reports.',
    success: { status: 200, description: 'The deleted campaign, as it was', schema: schemaRef('Campaign') },
    problems: [
      unknownCampaign,
      { kind: 'conflict', when: 'the campaign is not Draft, Finished or Canceled', extensions: { state: { type: 'string', description: 'The campaign\'s state' } } },
    ],
  },
  {
    operationId: 'deleteCampaigns', operation: 'campaigns.deleteMany', method: 'DELETE', path: `${ACCOUNT_PATH}/campaigns`, tag: 'Campaigns',
    summary: 'Delete campaigns',
    description: 'Deletes the listed campaigns, all or nothing: if one is unknown or in a state that forbids deletion, none is deleted.',
    body: { description: 'A JSON array of campaign ids', required: true, content: { 'application/json': { schema: idArray('Campaign') } }, itemLimit: 'idsPerDelete' },
    success: { status: 204, description: 'All of them were deleted' },
    problems: [
      { kind: 'invalid-request', when: 'the body is not a non-empty JSON array of ids' },
      { kind: 'not-found', when: 'ids that do not exist in the account (nothing is deleted)', extensions: idsMissing },
      {
        kind: 'conflict', when: 'campaigns that are not Draft, Finished or Canceled (nothing is deleted)',
        extensions: {
          ...blockingIds('campaigns'),
          blocking: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, state: { type: 'string' } } }, description: 'Each blocking campaign with its state' },
        },
      },
      { kind: 'payload-too-large', when: 'the body lists more ids than a request may' },
    ],
  },
  {
    operationId: 'listNumbers', operation: 'numbers.list', method: 'GET', path: `${CAMPAIGN_PATH}/numbers`, tag: 'Numbers',
    summary: 'List the numbers of a campaign', description: 'A page of the campaign\'s live numbers.',
    list: { resource: 'numbers', record: 'CampaignNumber' },
    success: { status: 200, description: 'The page: a bare array of numbers' },
    problems: [unknownCampaign],
  },
  {
    operationId: 'addNumbers', operation: 'numbers.add', method: 'POST', path: `${CAMPAIGN_PATH}/numbers`, tag: 'Numbers',
    summary: 'Add numbers to a dynamic campaign',
    description: 'Validates each phone number, normalises it to E.164 and adds it. Invalid and duplicate entries do not fail the request: the others are added and each rejected one is reported.',
    query: [varNamesParameter],
    body: {
      description: 'A JSON array of `{number, varValues?}` entries, or one such entry', required: true,
      content: { 'application/json': { schema: { oneOf: [{ type: 'array', minItems: 1, items: numberEntry }, numberEntry] } } },
      itemLimit: 'numbersPerRequest',
    },
    success: { status: 201, description: 'What was added and what was rejected', schema: schemaRef('AddNumbersResult') },
    problems: [
      { kind: 'invalid-request', when: 'the body is malformed: not an array or entry, unknown fields, non-string values (nothing is added)' },
      unknownCampaign,
      acceptsNumbers,
      { kind: 'payload-too-large', when: 'the body lists more numbers than a request may' },
      {
        kind: 'unprocessable', when: 'no entry could be added (all invalid or duplicates)',
        extensions: {
          created: { type: 'array', maxItems: 0, description: 'Empty' },
          rejected: { type: 'array', items: schemaRef('RejectedEntry') },
        },
      },
    ],
  },
  {
    operationId: 'uploadNumbers', operation: 'numbers.upload', method: 'POST', path: `${CAMPAIGN_PATH}/numbers/upload`, tag: 'Numbers',
    summary: 'Upload a CSV file of numbers',
    description: 'Streams a CSV file (one number per row: the phone number, then one column per variable) into the campaign in batches. The parameters may also come as form fields before the file.',
    query: uploadQuery,
    limitNote: (l) => `At most ${l.uploadBytes} bytes per upload; the answer lists the first ${l.uploadRejectionsShown} rejected rows and counts all.`,
    body: {
      description: 'multipart/form-data with one file part named `file`', required: true,
      content: {
        'multipart/form-data': {
          schema: {
            type: 'object', required: ['file'],
            properties: { file: { type: 'string', contentMediaType: 'text/csv', description: 'The CSV file (UTF-8, comma-separated, RFC 4180 quoting)' } },
          },
          params: uploadQuery,
        },
      },
    },
    success: { status: 201, description: 'What was read, added and rejected', schema: schemaRef('UploadResult') },
    problems: [
      { kind: 'invalid-request', when: 'no file part named `file`, an empty file, or an unknown form field' },
      { kind: 'not-found', when: 'the campaign does not exist in this account, or was deleted during the upload' },
      {
        ...acceptsNumbers, when: `${acceptsNumbers.when}; or it stopped being so during the upload (the rows before stay added)`,
        extensions: { ...acceptsNumbers.extensions, createdCount: { type: 'integer' }, rejectedCount: { type: 'integer' } },
      },
      {
        kind: 'payload-too-large', when: 'the upload is larger than allowed (rows read before the limit stay added)',
        extensions: { createdCount: { type: 'integer', description: 'Numbers added before the limit' }, rejectedCount: { type: 'integer' } },
      },
      { kind: 'unsupported-media-type', when: 'the body is not multipart/form-data' },
      {
        kind: 'unprocessable', when: 'no row could be added',
        extensions: { createdCount: { type: 'integer', const: 0 }, rejectedCount: { type: 'integer' }, rejected: { type: 'array', items: schemaRef('RejectedRow') } },
      },
    ],
  },
  {
    operationId: 'deleteNumbers', operation: 'numbers.delete', method: 'DELETE', path: `${CAMPAIGN_PATH}/numbers`, tag: 'Numbers',
    summary: 'Delete numbers of a campaign',
    description: 'Deletes the listed number records, all or nothing. Only NotContacted and RetryPending numbers can be deleted; a pending retry is canceled. Deleted numbers stay in the number-details report as Deleted.',
    body: { description: 'A JSON array of number record ids (never phone numbers)', required: true, content: { 'application/json': { schema: idArray('Number record') } }, itemLimit: 'idsPerDelete' },
    success: { status: 204, description: 'All of them were deleted' },
    problems: [
      { kind: 'invalid-request', when: 'the body is not a non-empty JSON array of ids' },
      { kind: 'not-found', when: 'the campaign does not exist, or ids that are not live numbers of it (nothing is deleted)', extensions: idsMissing },
      { kind: 'conflict', when: 'numbers in a status that forbids deletion (nothing is deleted)', extensions: numbersBlocking },
      { kind: 'payload-too-large', when: 'the body lists more ids than a request may' },
    ],
  },
  {
    operationId: 'deleteNumber', operation: 'numbers.delete', method: 'DELETE', path: `${CAMPAIGN_PATH}/numbers/{number_id}`, tag: 'Numbers',
    summary: 'Delete a number of a campaign',
    description: 'Deletes one number record. Only a NotContacted or RetryPending number can be deleted; a pending retry is canceled.',
    success: { status: 200, description: 'The deleted number, as it was', schema: schemaRef('CampaignNumber') },
    problems: [
      { kind: 'not-found', when: 'the campaign does not exist, or the id is not a live number of it', extensions: idsMissing },
      { kind: 'conflict', when: 'the number is in a status that forbids deletion', extensions: numbersBlocking },
    ],
  },
  {
    operationId: 'listCallDetails', operation: 'reports.callDetails', method: 'GET', path: `${CAMPAIGN_PATH}/reports/callDetails`, tag: 'Reports',
    summary: 'Call-details report', description: 'A page of the campaign\'s call-detail records: one per call attempt.',
    list: { resource: 'callDetails', record: 'CallDetail' },
    success: { status: 200, description: 'The page: a bare array of call-detail records' },
    problems: [unknownCampaign],
  },
  {
    operationId: 'listNumberDetails', operation: 'reports.numberDetails', method: 'GET', path: `${CAMPAIGN_PATH}/reports/numberDetails`, tag: 'Reports',
    summary: 'Number-details report', description: 'A page of the campaign\'s numbers, deleted ones included.',
    list: { resource: 'numberDetails', record: 'NumberDetail' },
    success: { status: 200, description: 'The page: a bare array of number-detail records' },
    problems: [unknownCampaign],
  },
];

