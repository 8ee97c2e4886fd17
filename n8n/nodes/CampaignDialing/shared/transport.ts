// The one way the nodes talk to the API: authenticated requests, problem details as n8n errors, 429 waits, paging.
import type {
  IDataObject, IExecuteFunctions, IHttpRequestMethods, IHttpRequestOptions, ILoadOptionsFunctions, IPollFunctions,
  JsonObject,
} from 'n8n-workflow';
import { NodeApiError, sleep } from 'n8n-workflow';
import { parseContentRange } from '../../../api/content-range.ts';
import { encodeListQuery, MAX_PAGE_SIZE, type ListRequest } from '../../../api/list-query.ts';
import { apiTextInWords, keepMessage, operationError } from './errors.ts';

export const CREDENTIAL_TYPE = 'campaignDialingApi';

export type ApiContext = IExecuteFunctions | ILoadOptionsFunctions | IPollFunctions;

export interface ApiRequest {
  method: IHttpRequestMethods;
  /** Path below /v1/accounts/{accountId}, e.g. `/campaigns`. */
  path: string;
  query?: URLSearchParams;
  /** A JSON body. */
  json?: unknown;
  /** A body sent as is, with its content type. */
  raw?: { body: Buffer; contentType: string };
  /** The input item the request is for, so errors point at it. */
  itemIndex?: number;
  /** Error statuses whose body the caller reads instead of failing (422: nothing added, with the reasons). */
  accept?: number[];
}

export interface ApiResponse<T> {
  body: T;
  headers: Record<string, string | undefined>;
  statusCode: number;
}

/** A 429 is waited out at most this many times in a row, each wait at most MAX_WAIT_SECONDS. */
const MAX_RATE_LIMIT_RETRIES = 5;
const MAX_WAIT_SECONDS = 60;

/** The credential's Base URL without trailing slashes, or why it is not one. */
export function baseUrlOf(value: unknown): { url: string } | { problem: string } {
  const url = String(value ?? '').trim().replace(/\/+$/, '');
  if (!/^https?:\/\/[^/?#\s]+/i.test(url)) {
    return { problem: `The Base URL "${url}" of the credential is not a web address: give it as http(s)://host[:port], without /v1` };
  }
  return { url };
}

/** The requests of one account: `<Base URL>/v1/accounts/<Account ID>`. */
export function accountUrl(baseUrl: string, accountId: unknown): string {
  return `${baseUrl}/v1/accounts/${encodeURIComponent(String(accountId ?? '').trim())}`;
}

async function accountBase(ctx: ApiContext, itemIndex: number | undefined): Promise<{ baseUrl: string; account: string }> {
  const credentials = await ctx.getCredentials(CREDENTIAL_TYPE);
  const base = baseUrlOf(credentials.baseUrl);
  if ('problem' in base) throw operationError(ctx.getNode(), base.problem, { itemIndex });
  return { baseUrl: base.url, account: accountUrl(base.url, credentials.accountId) };
}

// Node's and undici's codes for a request that got no HTTP answer, in words.
const CONNECTION_FAILURES: Array<[RegExp, string]> = [
  [/^ECONNREFUSED$/, 'the connection was refused: no server is listening at that host and port'],
  [/^(ENOTFOUND|EAI_AGAIN|EAI_NONAME)$/, 'the host name could not be found'],
  [/^(ETIMEDOUT|ECONNABORTED|ESOCKETTIMEDOUT|UND_ERR_CONNECT_TIMEOUT|UND_ERR_HEADERS_TIMEOUT)$/, 'the connection timed out'],
  [/^(ECONNRESET|EPIPE|UND_ERR_SOCKET)$/, 'the server closed the connection without answering'],
  [/^(EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL)$/, 'the host cannot be reached from n8n\'s network'],
  [/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/, 'its TLS certificate was not accepted'],
];

/** The system code of a failed request (ECONNREFUSED, ...), wherever n8n's request helpers put it. */
function failureCode(error: unknown): string | undefined {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(e.code)) return e.code;
  }
  return undefined;
}

/**
 * What a user reads when the API could not be reached at all (no HTTP answer): what was tried, why it failed, what to
 * check. The node's requests and the credential test both say it this way.
 */
export function unreachable(baseUrl: string, error: unknown): { message: string; description: string } {
  const code = failureCode(error);
  const known = code ? CONNECTION_FAILURES.find(([pattern]) => pattern.test(code)) : undefined;
  const why = known ? `${known[1]} (${code})` : (error as Error)?.message || String(error);
  return {
    message: `Could not reach the Campaign Dialing API at ${baseUrl}: ${why}`,
    description: 'Check that the Base URL of the credential is the address of the API (without /v1), that the Campaign Dialing '
      + 'server is running, and that no firewall or proxy stops n8n from reaching it.',
  };
}

export async function apiRequest<T = unknown>(ctx: ApiContext, req: ApiRequest): Promise<ApiResponse<T>> {
  const { baseUrl, account } = await accountBase(ctx, req.itemIndex);
  const query = req.query?.toString();
  const options: IHttpRequestOptions = {
    method: req.method,
    url: `${account}${req.path}${query ? `?${query}` : ''}`,
    json: true,
    returnFullResponse: true,
    ignoreHttpStatusErrors: true,
    headers: { Accept: 'application/json' },
  };
  if (req.raw) {
    options.body = req.raw.body;
    options.headers = { ...options.headers, 'Content-Type': req.raw.contentType };
  } else if (req.json !== undefined) {
    // Sent as text so that a bare JSON string (the state change body) keeps its quotes.
    options.body = JSON.stringify(req.json);
    options.headers = { ...options.headers, 'Content-Type': 'application/json' };
  }
  for (let retries = 0; ; retries++) {
    let response: ApiResponse<unknown>;
    try {
      response = (await ctx.helpers.httpRequestWithAuthentication.call(ctx, CREDENTIAL_TYPE, options)) as ApiResponse<unknown>;
    } catch (error) {
      const { message, description } = unreachable(baseUrl, error);
      throw operationError(ctx.getNode(), message, { description, itemIndex: req.itemIndex });
    }
    const { statusCode } = response;
    if (statusCode === 429 && retries < MAX_RATE_LIMIT_RETRIES) {
      const wait = retryAfterSeconds(response.headers['retry-after']);
      if (wait <= MAX_WAIT_SECONDS) {
        await sleep(wait * 1000);
        continue;
      }
    }
    if ((statusCode >= 200 && statusCode < 300) || req.accept?.includes(statusCode)) return response as ApiResponse<T>;
    throw apiError(ctx, response, req.itemIndex);
  }
}

function retryAfterSeconds(header: string | undefined): number {
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.max(seconds, 0.05);
  const date = header ? Date.parse(header) : NaN;
  return Number.isFinite(date) ? Math.max((date - Date.now()) / 1000, 0.05) : 1;
}

/** What a user of the editor can do about each refusal. */
const HINTS: Record<number, string> = {
  401: 'Check the API token of the credential: it may be mistyped, expired or not a token of this service.',
  403: 'The API key was deleted, belongs to another account than the Account ID of the credential, or lacks a role that allows this operation (see Settings > API Keys in the web console).',
  404: 'Check the ID of the campaign or number record, and that the Base URL of the credential does not end in /v1.',
  409: 'The campaign or number is in a state that does not allow this operation.',
  429: 'The rate limit of the API was still exceeded after waiting: lower the Limit, or spread the work over time.',
};

/** The same for an AI agent calling the node as a tool: what was wrong with its input, and whether calling again helps. */
const TOOL_HINTS: Record<number, string> = {
  401: 'The credential of this tool was refused: calling again will not help; tell the user to check the API token.',
  403: 'This tool\'s API key may not do this operation: do not call it again for this; tell the user which operation was refused.',
  404: 'An ID in the input does not exist: get campaign IDs with the Get Many operation of campaigns, and number IDs with the Get Many operation of a campaign\'s numbers, then call again with one of them.',
  409: 'The campaign or number is in a state that does not allow this operation: read its current state with Get Many before choosing what to do.',
  429: 'The API is busy: call again later with fewer records (a lower Limit).',
};

/** The API's detail of a 403 for a key of a number role restricted to other campaigns (spec §5.3). */
export const RESTRICTED_TO_CAMPAIGNS = /\brestricted to\b.*\bcampaigns?\b/i;

/**
 * Refusals the API's detail tells apart from the rest of their status: a key of a number role restricted to other
 * campaigns (403, spec §5.3: "This API key is restricted to 2 campaigns, and campaign … is not one of them"), and a
 * record that does not exist (404, "Campaign … does not exist in this account"): the API answered, so the Base URL
 * is right.
 */
const DETAIL_HINTS: Array<{ status: number; detail: RegExp; hint: string; toolHint: string }> = [
  {
    status: 403, detail: RESTRICTED_TO_CAMPAIGNS,
    hint: 'The API key is restricted to certain campaigns, and this is not one of them: pick one of the key\'s campaigns, '
      + 'or add this campaign to the key, or use a key that is not restricted (see Settings > API Keys in the web console).',
    toolHint: 'This tool\'s API key is restricted to certain campaigns, and this is not one of them: do not call again for this '
      + 'campaign; use a campaign the user named for this key, or tell the user that the key does not cover this campaign.',
  },
  {
    status: 404, detail: /\bdoes not exist\b/i,
    hint: 'Check the ID of the campaign or number record: pick the campaign From List to see those of this account.',
    toolHint: TOOL_HINTS[404]!,
  },
];

/** What to do about a refusal, for the user of the editor or for a model. */
function hintFor(status: number, detail: string, model: boolean): string {
  const special = DETAIL_HINTS.find((h) => h.status === status && h.detail.test(detail));
  if (special) return model ? special.toolHint : special.hint;
  return (model ? TOOL_HINTS : HINTS)[status] ?? '';
}

/** Whether an AI agent runs the node as a tool: errors then tell the model what was wrong with its input. */
export function forModel(ctx: ApiContext): boolean {
  if ('isToolExecution' in ctx && typeof ctx.isToolExecution === 'function' && ctx.isToolExecution()) return true;
  // n8n names the tool variant it makes of a usableAsTool node `<type>Tool`, and some of its paths run it as a node.
  return ctx.getNode().type.endsWith('Tool');
}

/**
 * The server's problem details (RFC 9457) as an n8n error carrying its detail message and each bad field, the API's
 * spellings said in words.
 */
export function apiError(ctx: ApiContext, response: ApiResponse<unknown>, itemIndex: number | undefined, more?: string): NodeApiError {
  const body = (typeof response.body === 'object' && response.body !== null ? response.body : { body: response.body }) as IDataObject;
  const text = apiTextInWords(typeof body.detail === 'string' ? body.detail : typeof body.message === 'string' ? body.message : '');
  const detail = text.charAt(0).toUpperCase() + text.slice(1);
  const fields = Array.isArray(body.errors)
    ? (body.errors as IDataObject[]).map((e) => `${String(e.name)}: ${apiTextInWords(String(e.detail))}`)
    : [];
  const hint = hintFor(response.statusCode, text, forModel(ctx));
  const description = [...fields, more ?? '', hint].filter(Boolean).join('\n');
  const message = detail || `The Campaign Dialing API answered with HTTP status ${response.statusCode}`;
  return keepMessage(new NodeApiError(ctx.getNode(), body as JsonObject, { message, description, httpCode: String(response.statusCode), itemIndex }), message);
}

export interface Page {
  records: IDataObject[];
  /** X-Total-Count, or Content-Range's total when only that is sent. */
  total: number | undefined;
}

/**
 * Records asked for per page when the node's Page Size option is not set. Pages as large as the API serves
 * (MAX_PAGE_SIZE): a list is read in as few requests as the rate limit counts, and the records of a page cost n8n no
 * more memory than the items it outputs anyway (`./dev bench n8n`, docs/benchmarks.md).
 */
export const DEFAULT_PAGE_SIZE = MAX_PAGE_SIZE;

/**
 * Reads a list endpoint page by page with `range`, keeping `sort` and `filter` on every page, until `limit` records
 * (all when undefined) or the end. Once the answer's size is known (X-Total-Count or Content-Range), no page past it
 * is asked for, and a page shorter than asked (a server that caps pages lower) is read on from where it ended;
 * without a size, a short page is the end.
 */
export async function* readPages(
  ctx: ApiContext, path: string, request: Omit<ListRequest, 'range'>, limit?: number, itemIndex?: number,
  pageSize: number = DEFAULT_PAGE_SIZE,
): AsyncGenerator<Page> {
  let first = 0;
  let total: number | undefined;
  for (;;) {
    const size = Math.min(pageSize, limit === undefined ? pageSize : limit - first, total === undefined ? pageSize : total - first);
    if (size <= 0) return;
    const query = encodeListQuery({ ...request, range: [first, first + size - 1] });
    const response = await apiRequest<IDataObject[]>(ctx, { method: 'GET', path, query, itemIndex });
    const records = Array.isArray(response.body) ? response.body : [];
    total = totalOf(response.headers);
    yield { records, total };
    first += records.length;
    if (records.length === 0 || (total === undefined && records.length < size)) return;
  }
}

function totalOf(headers: Record<string, string | undefined>): number | undefined {
  const count = Number(headers['x-total-count']);
  if (headers['x-total-count'] !== undefined && Number.isSafeInteger(count)) return count;
  const range = headers['content-range'] ? parseContentRange(headers['content-range']) : null;
  return range?.total;
}

export async function listRecords(
  ctx: ApiContext, path: string, request: Omit<ListRequest, 'range'>, limit?: number, itemIndex?: number, pageSize?: number,
): Promise<IDataObject[]> {
  const out: IDataObject[] = [];
  for await (const page of readPages(ctx, path, request, limit, itemIndex, pageSize)) {
    for (const record of page.records) out.push(record);
  }
  return out;
}

export function campaignPath(campaignId: string): string {
  return `/campaigns/${encodeURIComponent(campaignId)}`;
}
