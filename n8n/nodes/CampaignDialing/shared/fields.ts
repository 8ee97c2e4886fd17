// Fields every resource shares (campaign picker, Return All / Limit, sort) and the reading of filters into the API's.
import type { IDataObject, IDisplayOptions, IExecuteFunctions, INodeProperties, INodePropertyOptions } from 'n8n-workflow';
import { LIST_SPECS, MAX_PAGE_SIZE, type ListRequest, type ListSpec, type SortDirection } from '../../../api/list-query.ts';
import { DEFAULT_PAGE_SIZE } from './transport.ts';
import { inWords, operationError } from './errors.ts';

type Shown = { resource: string[]; operation: string[] };

export const show = (resource: string, operation: string[]): { show: Shown } => ({ show: { resource: [resource], operation } });

/** The campaign picker: from a searchable list, by ID, or by an API URL that contains `/campaigns/<id>`. */
export function campaignLocator(displayOptions?: IDisplayOptions, description = 'The campaign to work on'): INodeProperties {
  return {
    displayName: 'Campaign',
    name: 'campaignId',
    type: 'resourceLocator',
    default: { mode: 'list', value: '' },
    required: true,
    description,
    ...(displayOptions ? { displayOptions } : {}),
    modes: [
      {
        displayName: 'From List',
        name: 'list',
        type: 'list',
        typeOptions: { searchListMethod: 'searchCampaigns', searchable: true },
      },
      {
        displayName: 'By ID',
        name: 'id',
        type: 'string',
        placeholder: 'e.g. 3f1c2a9e-6b0d-4f7e-9a55-1d2e3f4a5b6c',
        validation: [
          { type: 'regex', properties: { regex: '^[^/?#\\s]+$', errorMessage: 'A campaign ID contains no spaces, slashes, "?" or "#"' } },
        ],
      },
      {
        displayName: 'By URL',
        name: 'url',
        type: 'string',
        placeholder: 'e.g. https://api.example.com/v1/accounts/acc-1/campaigns/3f1c2a9e-…',
        extractValue: { type: 'regex', regex: '/campaigns/([^/?#\\s]+)' },
        validation: [
          {
            type: 'regex',
            properties: { regex: '.*/campaigns/[^/?#\\s]+.*', errorMessage: 'The URL must contain /campaigns/ followed by the campaign ID' },
          },
        ],
      },
    ],
  };
}

export function returnAllAndLimit(resource: string, operation: string): INodeProperties[] {
  return [
    {
      displayName: 'Return All',
      name: 'returnAll',
      type: 'boolean',
      default: false,
      description: 'Whether to return all results or only up to a given limit',
      displayOptions: show(resource, [operation]),
    },
    {
      displayName: 'Limit',
      name: 'limit',
      type: 'number',
      typeOptions: { minValue: 1 },
      default: 50,
      description: 'Max number of results to return',
      displayOptions: { show: { resource: [resource], operation: [operation], returnAll: [false] } },
    },
  ];
}

/** The Operation field of a resource. */
export function operationField(resource: string, options: INodePropertyOptions[], defaultOperation: string): INodeProperties {
  return {
    displayName: 'Operation',
    name: 'operation',
    type: 'options',
    noDataExpression: true,
    displayOptions: { show: { resource: [resource] } },
    options,
    default: defaultOperation,
  };
}

/** The Filters collection of a list operation; each field is named as the API's filter key (see toApiFilter). */
export function filtersCollection(resource: string, operation: string, filters: INodeProperties[]): INodeProperties {
  return {
    displayName: 'Filters',
    name: 'filters',
    type: 'collection',
    placeholder: 'Add Filter',
    default: {},
    displayOptions: show(resource, [operation]),
    options: [...filters].sort((a, b) => a.displayName.localeCompare(b.displayName)),
  };
}

/** The Filters collection of an operation among a resource's fields. */
export function filtersOf(fields: INodeProperties[], operation: string): INodeProperties | undefined {
  return fields.find((p) => p.name === 'filters' && p.displayOptions?.show?.operation?.includes(operation));
}

/** Page Size, an option of every list the nodes read (the Options collection of a list operation, the trigger's). */
export const pageSizeOption: INodeProperties = {
  displayName: 'Page Size',
  name: 'pageSize',
  type: 'number',
  typeOptions: { minValue: 1, maxValue: MAX_PAGE_SIZE },
  default: DEFAULT_PAGE_SIZE,
  description: `Most records asked for in one request. The default is the most the API serves; lower it only for a server that caps pages lower (at most ${MAX_PAGE_SIZE.toLocaleString('en-US')}).`,
};

/** The Page Size option as set, or the default. */
export function pageSizeOf(options: IDataObject): number {
  const size = Number(options.pageSize);
  return Number.isInteger(size) && size >= 1 ? Math.min(size, MAX_PAGE_SIZE) : DEFAULT_PAGE_SIZE;
}

/** The Options collection of a list operation: Sort By (the endpoint's sort fields), Sort Direction and Page Size. */
export function sortCollection(resource: string, operation: string, fields: Array<{ name: string; value: string }>): INodeProperties {
  const first = fields[0]!.value;
  return {
    displayName: 'Options',
    name: 'options',
    type: 'collection',
    placeholder: 'Add Option',
    default: {},
    displayOptions: show(resource, [operation]),
    options: [
      {
        displayName: 'Sort By',
        name: 'sortBy',
        type: 'options',
        options: [...fields].sort((a, b) => a.name.localeCompare(b.name)),
        default: first,
        description: 'Field to order the records by; with a sort, pages stay consistent while the data changes',
      },
      {
        displayName: 'Sort Direction',
        name: 'sortDirection',
        type: 'options',
        options: [
          { name: 'Ascending', value: 'ASC' },
          { name: 'Descending', value: 'DESC' },
        ],
        default: 'ASC',
      },
      pageSizeOption,
    ],
  };
}

/** The API's enum values as options, labelled in words ("RetryPending" as "Retry Pending", "Callflow" as "Call Flow"). */
export const enumOptions = (values: readonly string[]) => [...values].sort().map((value) => ({ name: inWords(value), value }));

/** Node fields that stand for one key of a nested API filter object. */
const NESTED: Record<string, [string, string]> = {
  dialerMode: ['dialer', 'mode'],
  humanAnswerCallflowId: ['callBehavior', 'humanAnswerCallflowId'],
  answeringMachineCallflowId: ['callBehavior', 'answeringMachineCallflowId'],
};

/**
 * The Filters collection of a list operation as the API's filter object. Field names are the API's filter keys, so
 * the key's kind in api/ says how to read the value: integers as numbers, timestamps without zone or fraction.
 */
export function toApiFilter(
  ctx: IExecuteFunctions, spec: ListSpec, filters: IDataObject, itemIndex: number, labels: Record<string, string> = {},
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(filters)) {
    if (value === '' || value === null || value === undefined || (Array.isArray(value) && value.length === 0)) continue;
    const nested = NESTED[name];
    if (nested) {
      const [outer, inner] = nested;
      out[outer] = { ...(out[outer] as IDataObject | undefined), [inner]: value };
      continue;
    }
    const key = spec.filters[name as keyof typeof spec.filters] as ListSpec['filters'][string] | undefined;
    if (!key) {
      throw operationError(ctx.getNode(), `This list has no filter "${labels[name] ?? name}"`, {
        itemIndex, description: 'Remove the filter from Filters: the workflow was made for another version of this node.',
      });
    }
    switch (key.kind) {
      case 'timestamp':
        out[name] = toApiTimestamp(ctx, labels[name] ?? name, value, itemIndex);
        break;
      case 'integer':
        out[name] = Number(value);
        break;
      case 'ids':
      case 'overlaps':
        out[name] = toIdList(value);
        break;
      default:
        out[name] = value;
    }
  }
  return out;
}

/** The spec's timestamp shape, `YYYY-MM-DDTHH:MM:SS`: n8n's date pickers and expressions give ISO strings or DateTimes. */
function toApiTimestamp(ctx: IExecuteFunctions, label: string, value: unknown, itemIndex: number): string {
  const text = typeof value === 'string' ? value : typeof (value as { toISO?: unknown })?.toISO === 'function'
    ? String((value as { toISO: () => string }).toISO()) : value instanceof Date ? value.toISOString() : String(value);
  const m = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2})?))?/.exec(text.trim());
  if (!m) {
    throw operationError(ctx.getNode(), `The filter "${label}" needs a date and time, not "${text}"`, {
      itemIndex, description: 'Use the date picker, or an ISO 8601 value such as 2024-12-01T09:00:00.',
    });
  }
  const time = m[2] ?? '00:00:00';
  return `${m[1]}T${time.length === 5 ? `${time}:00` : time}`;
}

/** One ID, a comma-separated list, or an array (from an expression). */
export function toIdList(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  const parts = Array.isArray(value) ? value : String(value).split(',');
  return parts.map((v) => String(v).trim()).filter(Boolean);
}

/** Sort, filter, limit and page size of a list operation, read from its fields; `filtersField` names the filters in errors. */
export function listRequest(
  ctx: IExecuteFunctions, resource: keyof typeof LIST_SPECS, itemIndex: number, filtersField?: INodeProperties,
): { request: Omit<ListRequest, 'range'>; limit: number | undefined; pageSize: number } {
  const returnAll = ctx.getNodeParameter('returnAll', itemIndex, false) as boolean;
  const limit = returnAll ? undefined : (ctx.getNodeParameter('limit', itemIndex, 50) as number);
  const filters = ctx.getNodeParameter('filters', itemIndex, {}) as IDataObject;
  const options = ctx.getNodeParameter('options', itemIndex, {}) as IDataObject;
  const labels = Object.fromEntries(((filtersField?.options ?? []) as INodeProperties[]).map((o) => [o.name, o.displayName]));
  const request: Omit<ListRequest, 'range'> = { filter: toApiFilter(ctx, LIST_SPECS[resource], filters, itemIndex, labels) };
  if (typeof options.sortBy === 'string' && options.sortBy) {
    request.sort = [options.sortBy, (options.sortDirection as SortDirection | undefined) ?? 'ASC'];
  }
  return { request, limit, pageSize: pageSizeOf(options) };
}

export function campaignIdOf(ctx: IExecuteFunctions, itemIndex: number): string {
  const id = String(ctx.getNodeParameter('campaignId', itemIndex, '', { extractValue: true }) ?? '').trim();
  if (!id) {
    throw operationError(ctx.getNode(), `No campaign is selected for item ${itemIndex}`, {
      itemIndex, description: 'Under Campaign, pick a campaign from the list, or give its ID or URL.',
    });
  }
  return id;
}
