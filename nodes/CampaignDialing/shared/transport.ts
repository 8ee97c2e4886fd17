// The one way the nodes talk to the API: authenticated requests, problem details as n8n errors, 429 waits, paging.
import type {
  IDataObject, IExecuteFunctions, IHttpRequestMethods, IHttpRequestOptions, ILoadOptionsFunctions, IPollFunctions,
  JsonObject,
} from 'n8n-workflow';
import { NodeApiError, NodeOperationError, sleep } from 'n8n-workflow';
import { parseContentRange } from '../../../api/content-range.ts';
import { encodeListQuery, RECOMMENDED_PAGE_SIZE, type ListRequest } from '../../../api/list-query.ts';

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

async function accountBase(ctx: ApiContext): Promise<string> {
  const credentials = await ctx.getCredentials(CREDENTIAL_TYPE);
  const baseUrl = String(credentials.baseUrl ?? '').replace(/\/+$/, '');
  return `${baseUrl}/v1/accounts/${encodeURIComponent(String(credentials.accountId ?? ''))}`;
}

export async function apiRequest<T = unknown>(ctx: ApiContext, req: ApiRequest): Promise<ApiResponse<T>> {
  const base = await accountBase(ctx);
  const query = req.query?.toString();
  const options: IHttpRequestOptions = {
    method: req.method,
    url: `${base}${req.path}${query ? `?${query}` : ''}`,
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
      throw new NodeOperationError(ctx.getNode(), `Could not reach the Campaign Dialing API at ${base}`, {
        description: `${(error as Error).message}. Check the Base URL of the credential.`,
        itemIndex: req.itemIndex,
      });
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

const HINTS: Record<number, string> = {
  401: 'Check the API token of the credential: it may be mistyped, expired or not a token of this service.',
  403: 'The key was deleted, belongs to another account than the credential\'s Account ID, or lacks a role for this operation.',
  404: 'Check the campaign or record ID, and that the Base URL has no /v1.',
  409: 'The campaign or number is in a state that does not allow this operation.',
  429: 'The API\'s rate limit was still exceeded after waiting; lower the Limit or spread the work over time.',
};

/** The server's problem details (RFC 9457) as an n8n error carrying its detail message and each bad field. */
function apiError(ctx: ApiContext, response: ApiResponse<unknown>, itemIndex: number | undefined): NodeApiError {
  const body = (typeof response.body === 'object' && response.body !== null ? response.body : { body: response.body }) as IDataObject;
  const detail = typeof body.detail === 'string' ? body.detail : typeof body.message === 'string' ? body.message : '';
  const fields = Array.isArray(body.errors)
    ? (body.errors as IDataObject[]).map((e) => `${String(e.name)}: ${String(e.detail)}`)
    : [];
  const description = [...fields, HINTS[response.statusCode] ?? ''].filter(Boolean).join('\n');
  return new NodeApiError(ctx.getNode(), body as JsonObject, {
    message: detail || `The API answered HTTP ${response.statusCode}`,
    description,
    httpCode: String(response.statusCode),
    itemIndex,
  });
}

export interface Page {
  records: IDataObject[];
  /** X-Total-Count, or Content-Range's total when only that is sent. */
  total: number | undefined;
}

/**
 * Reads a list endpoint page by page with `range`, keeping `sort` and `filter` on every page, until `limit` records
 * (all when undefined) or the end: a short page, or as many records as the total announced.
 */
export async function* readPages(
  ctx: ApiContext, path: string, request: Omit<ListRequest, 'range'>, limit?: number, itemIndex?: number,
  pageSize: number = RECOMMENDED_PAGE_SIZE,
): AsyncGenerator<Page> {
  let first = 0;
  for (;;) {
    const size = Math.min(pageSize, limit === undefined ? pageSize : limit - first);
    if (size <= 0) return;
    const query = encodeListQuery({ ...request, range: [first, first + size - 1] });
    const response = await apiRequest<IDataObject[]>(ctx, { method: 'GET', path, query, itemIndex });
    const records = Array.isArray(response.body) ? response.body : [];
    const total = totalOf(response.headers);
    yield { records, total };
    first += records.length;
    if (records.length < size || (total !== undefined && first >= total)) return;
  }
}

function totalOf(headers: Record<string, string | undefined>): number | undefined {
  const count = Number(headers['x-total-count']);
  if (headers['x-total-count'] !== undefined && Number.isSafeInteger(count)) return count;
  const range = headers['content-range'] ? parseContentRange(headers['content-range']) : null;
  return range?.total;
}

export async function listRecords(
  ctx: ApiContext, path: string, request: Omit<ListRequest, 'range'>, limit?: number, itemIndex?: number,
): Promise<IDataObject[]> {
  const out: IDataObject[] = [];
  for await (const page of readPages(ctx, path, request, limit, itemIndex)) out.push(...page.records);
  return out;
}

export function campaignPath(campaignId: string): string {
  return `/campaigns/${encodeURIComponent(campaignId)}`;
}
