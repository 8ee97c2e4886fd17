// Routes of §4.10–§4.11: the call-details and number-details reports of a campaign.
import type { FastifyInstance } from 'fastify';
import { LIST_SPECS } from '../../api/list-query.ts';
import type { Deps } from '../deps.ts';
import { listQuery, sendList, sendListJson } from '../http.ts';
import { callDetailRecord } from '../store/call-details.ts';
import { campaignFor } from './campaigns.ts';

export function reportRoutes(app: FastifyInstance, deps: Deps): void {
  const { store } = deps;

  app.get('/campaigns/:campaignId/reports/callDetails', async (request, reply) => {
    const { row, timeZone } = campaignFor(deps, request, 'reports.callDetails');
    const query = listQuery(request, LIST_SPECS.callDetails);
    const { rows, total } = store.callDetails.list(row.pk, query, timeZone);
    return sendList(reply, 'callDetails', query.range, rows.map(callDetailRecord), total);
  });

  app.get('/campaigns/:campaignId/reports/numberDetails', async (request, reply) => {
    const { row, timeZone } = campaignFor(deps, request, 'reports.numberDetails');
    const query = listQuery(request, LIST_SPECS.numberDetails);
    return sendListJson(reply, 'numberDetails', query.range, await store.pages.numbers({ campaignPk: row.pk, query, timeZone, includeDeleted: true }));
  });
}
