// The Campaign Dialing Trigger: polls a campaign's reports and emits each new call-detail record, or each number
// status change, once; its place is kept in the workflow's static data.
import type { IDataObject, INodeExecutionData, INodeType, INodeTypeDescription, IPollFunctions } from 'n8n-workflow';
import { NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';
import { campaignLocator, pageSizeOf, pageSizeOption } from '../CampaignDialing/shared/fields.ts';
import { searchCampaigns } from '../CampaignDialing/shared/search.ts';
import { campaignPath, CREDENTIAL_TYPE, listRecords, readPages } from '../CampaignDialing/shared/transport.ts';
import { readCallCursor, readNewCalls, startingCallCursor, type CallCursor } from './call-cursor.ts';

/** Records a manual test run shows: the most recent ones. */
const SAMPLE_SIZE = 10;
/** Share of n8n's poll budget spent reading; the rest is left for handing the items over. */
const BUDGET_SHARE = 0.8;
/** Statuses a number reaches without a call, watched through the number-details report. */
const CALLLESS_STATUSES = ['Blacklisted', 'Deleted'] as const;
/** How many ids per call-less status are remembered to emit each once. */
const MAX_REMEMBERED = 100_000;

type Event = 'callFinished' | 'numberStatusChanged';

/** What the node keeps in the workflow's static data (`cursor`): JSON, read back by the next poll. */
interface Cursor extends CallCursor {
  campaignId: string;
  event: Event;
  /** Number ids already emitted per call-less status, and how many the report counted then. */
  callless?: Record<string, { count: number; ids: string[] }>;
}

const EVENTS: Array<{ name: string; value: Event; description: string }> = [
  {
    name: 'New Call Detail Record',
    value: 'callFinished',
    description: 'A call attempt finished: one item per call-detail record',
  },
  {
    name: 'Number Status Changed',
    value: 'numberStatusChanged',
    description: 'A number became Success, Retry Pending or Failure after a call, or Blacklisted or Deleted',
  },
];

const OUTCOME_STATUS: Record<string, string> = {
  Success: 'Success',
  FailureWithRetryPending: 'RetryPending',
  FailureWithNoRetryLeft: 'Failure',
};

/** The number status change a finished call made. */
function statusChangeOf(call: IDataObject): IDataObject {
  return {
    id: call.numberId,
    number: call.number,
    status: OUTCOME_STATUS[String(call.outcome)] ?? null,
    attempts: call.attempt,
    changedAtLocal: call.endedAtLocal,
    cause: 'call',
    call,
  };
}

export class CampaignDialingTrigger implements INodeType {
  description: INodeTypeDescription = {
    displayName: 'Campaign Dialing Trigger',
    name: 'campaignDialingTrigger',
    icon: { light: 'file:../CampaignDialing/campaignDialing.svg', dark: 'file:../CampaignDialing/campaignDialing.dark.svg' },
    group: ['trigger'],
    version: 1,
    // The chosen event's name, as in the Trigger On list.
    subtitle: `={{ ${JSON.stringify(Object.fromEntries(EVENTS.map((e) => [e.value, e.name])))}[$parameter["event"]] }}`,
    description: 'Starts the workflow when a call of a campaign finishes or a number changes status',
    defaults: { name: 'Campaign Dialing Trigger' },
    polling: true,
    inputs: [],
    outputs: [NodeConnectionTypes.Main],
    credentials: [{ name: CREDENTIAL_TYPE, required: true }],
    properties: [
      {
        displayName: 'Trigger On',
        name: 'event',
        type: 'options',
        noDataExpression: true,
        options: EVENTS,
        default: 'callFinished',
      },
      campaignLocator(undefined, 'The campaign to watch'),
      {
        displayName: 'Options',
        name: 'options',
        type: 'collection',
        placeholder: 'Add Option',
        default: {},
        options: [pageSizeOption],
      },
    ],
  };

  methods = { listSearch: { searchCampaigns } };

  async poll(this: IPollFunctions): Promise<INodeExecutionData[][] | null> {
    const started = Date.now();
    const event = this.getNodeParameter('event') as Event;
    const campaignId = String(this.getNodeParameter('campaignId', '', { extractValue: true }) ?? '').trim();
    if (!campaignId) throw new NodeOperationError(this.getNode(), 'No campaign given: pick one, or give its ID or URL');
    const reports = `${campaignPath(campaignId)}/reports`;
    const pageSize = pageSizeOf(this.getNodeParameter('options', {}) as IDataObject);
    const toItems = (records: IDataObject[]) => records.length ? [this.helpers.returnJsonArray(records)] : null;

    if (this.getMode() === 'manual') {
      const recent = await listRecords(this, `${reports}/callDetails`, { sort: ['endedAtLocal', 'DESC'] }, SAMPLE_SIZE);
      return toItems(event === 'callFinished' ? recent : recent.map(statusChangeOf));
    }

    const staticData = this.getWorkflowStaticData('node') as { cursor?: unknown };
    const cursor = readCursor(staticData.cursor, campaignId, event);
    if (!cursor) {
      // First poll: what happened before activation is not new.
      staticData.cursor = await startingCursor(this, reports, campaignId, event, pageSize);
      return null;
    }
    // n8n before 2.41 gives no poll budget: a minute is what its scheduler tolerates comfortably.
    const budget = (typeof this.getPollBudgetMs === 'function' ? this.getPollBudgetMs() : 60_000) * BUDGET_SHARE;
    const calls = await readNewCalls(this, `${reports}/callDetails`, cursor, () => Date.now() - started > budget, pageSize);
    let records = event === 'callFinished' ? calls : calls.map(statusChangeOf);
    if (event === 'numberStatusChanged') records = [...records, ...(await calllessChanges(this, reports, cursor, true, pageSize))];
    staticData.cursor = cursor;
    return toItems(records);
  }
}

/**
 * The stored place when it is this campaign's and event's, in the current format (a place stored by an earlier
 * version is read too), else null.
 */
function readCursor(data: unknown, campaignId: string, event: Event): Cursor | null {
  const stored = (typeof data === 'object' && data !== null ? data : {}) as IDataObject;
  if (stored.campaignId !== campaignId || stored.event !== event) return null;
  const calls = readCallCursor(stored);
  if (!calls) return null;
  const callless = stored.callless as Cursor['callless'];
  return { campaignId, event, ...calls, ...(callless ? { callless } : {}) };
}

async function startingCursor(ctx: IPollFunctions, reports: string, campaignId: string, event: Event, pageSize: number): Promise<Cursor> {
  const cursor: Cursor = { campaignId, event, ...(await startingCallCursor(ctx, `${reports}/callDetails`, pageSize)) };
  if (event === 'numberStatusChanged') {
    cursor.callless = {};
    await calllessChanges(ctx, reports, cursor, false, pageSize);
  }
  return cursor;
}

/**
 * Numbers that became Blacklisted or Deleted since the last poll: one count per status each poll, and a read of
 * that status's records only when the count moved.
 */
async function calllessChanges(
  ctx: IPollFunctions, reports: string, cursor: Cursor, emit: boolean, pageSize: number,
): Promise<IDataObject[]> {
  const out: IDataObject[] = [];
  const known = (cursor.callless ??= {});
  for (const status of CALLLESS_STATUSES) {
    const state = (known[status] ??= { count: 0, ids: [] });
    const path = `${reports}/numberDetails`;
    let total: number | undefined;
    for await (const page of readPages(ctx, path, { filter: { status } }, 1)) total = page.total;
    if (total === undefined || total === state.count) continue;
    const seen = new Set(state.ids);
    for (const record of await listRecords(ctx, path, { filter: { status }, sort: ['number', 'ASC'] }, undefined, undefined, pageSize)) {
      const id = String(record.id);
      if (seen.has(id)) continue;
      seen.add(id);
      if (emit) out.push({ ...record, changedAtLocal: null, cause: status === 'Deleted' ? 'deleted' : 'blacklist' });
    }
    state.count = total;
    state.ids = [...seen].slice(-MAX_REMEMBERED);
  }
  return out;
}
