// The campaign picker's list: campaigns by name, searchable, paged with the API's range.
import type { IDataObject, ILoadOptionsFunctions, INodeListSearchResult } from 'n8n-workflow';
import { encodeListQuery } from '../../../api/list-query.ts';
import { apiRequest } from './transport.ts';

const PAGE = 100;

export async function searchCampaigns(
  this: ILoadOptionsFunctions, filter?: string, paginationToken?: string,
): Promise<INodeListSearchResult> {
  const first = Number(paginationToken ?? 0) || 0;
  const query = encodeListQuery({ range: [first, first + PAGE - 1], sort: ['name', 'ASC'] });
  const { body } = await apiRequest<IDataObject[]>(this, { method: 'GET', path: '/campaigns', query });
  const records = Array.isArray(body) ? body : [];
  const needle = filter?.trim().toLowerCase();
  const results = records
    .filter((c) => !needle || String(c.name).toLowerCase().includes(needle) || String(c.id).toLowerCase() === needle)
    .map((c) => ({ name: `${String(c.name)} (${String(c.state)}, ${String(c.type)})`, value: String(c.id) }));
  return { results, paginationToken: records.length === PAGE ? String(first + PAGE) : undefined };
}
