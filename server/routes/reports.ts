// Routes of §4.10–§4.11: the call-details and number-details reports of a campaign.
import type { FastifyInstance } from 'fastify';
import { LIST_SPECS, decodeListQuery } from '../../api/list-query.ts';
import type { Deps } from '../app.ts';
import { invalid } from '../errors.ts';
import { onlyParams, params, sendList } from '../http.ts';
import { callDetailRecord } from '../store/call-details.ts';
import { numberDetailRecord } from '../store/numbers.ts';
import { campaignFor } from './campaigns.ts';

export function reportRoutes(app: FastifyInstance, deps: Deps): void {
  const { store } = deps;

  app.get('/campaigns/:campaignId/reports/callDetails', async (request, reply) => {
    const { row, timeZone } = campaignFor(deps, request, 'reports.callDetails');
    const p = params(request);
    onlyParams(p, ['range', 'sort', 'filter']);
    const q = decodeListQuery(LIST_SPECS.callDetails, p);
    if (!q.ok) throw invalid(q.errors);
    const { rows, total } = store.callDetails.list(row.pk, q.value, timeZone);
    return sendList(reply, 'callDetails', q.value.range, rows.map(callDetailRecord), total);
  });

  app.get('/campaigns/:campaignId/reports/numberDetails', async (request, reply) => {
    const { row, timeZone } = campaignFor(deps, request, 'reports.numberDetails');
    const p = params(request);
    onlyParams(p, ['range', 'sort', 'filter']);
    const q = decodeListQuery(LIST_SPECS.numberDetails, p);
    if (!q.ok) throw invalid(q.errors);
    const { rows, total } = store.numbers.list(row.pk, q.value, timeZone, true);
    return sendList(reply, 'numberDetails', q.value.range, rows.map(numberDetailRecord), total);
  });
}
