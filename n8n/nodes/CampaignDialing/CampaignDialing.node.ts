// The Campaign Dialing action node: every operation of the API, by resource.
import type {
  IExecuteFunctions, INodeExecutionData, INodeProperties, INodePropertyOptions, INodeType, INodeTypeDescription,
} from 'n8n-workflow';
import { NodeApiError, NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';
import { campaignFields, campaignOperations, executeCampaign } from './resources/campaign.ts';
import { executeNumber, numberFields, numberOperations } from './resources/number.ts';
import { CALLING_WINDOW } from './resources/calling-window.ts';
import { executeReport, reportFields, reportOperations } from './resources/report.ts';
import { campaignDialingApiTest } from './shared/credential-test.ts';
import { searchCampaigns } from './shared/search.ts';
import { forTheModel, operationError } from './shared/errors.ts';
import { accountUrl, baseUrlOf, CREDENTIAL_TYPE, forModel } from './shared/transport.ts';

const resources: INodePropertyOptions[] = [
  { name: 'Campaign', value: 'campaign' },
  { name: 'Campaign Number', value: 'campaignNumber' },
  { name: 'Report', value: 'report' },
];

const operationsByResource: Record<string, INodeProperties> = {
  campaign: campaignOperations, campaignNumber: numberOperations, report: reportOperations,
};

/**
 * The option n8n adds to the Resource and Operation of every node whose credential can authenticate other nodes'
 * requests (this one's adds a bearer header): n8n's editor then hides the node's fields and points to its HTTP
 * Request node, which makes the call with this credential.
 */
const CUSTOM_API_CALL = '__CUSTOM_API_CALL__';

/** What to do instead of running Custom API Call here: the HTTP Request node, and the URL of this credential's account. */
async function customApiCallError(ctx: IExecuteFunctions): Promise<NodeOperationError> {
  const credentials = await ctx.getCredentials(CREDENTIAL_TYPE);
  const base = baseUrlOf(credentials.baseUrl);
  const url = 'url' in base ? `${accountUrl(base.url, credentials.accountId)}/` : '<Base URL>/v1/accounts/<Account ID>/';
  return operationError(ctx.getNode(), 'Custom API Call is made with n8n\'s HTTP Request node, not with this node', {
    description: 'Add an HTTP Request node and set Authentication to "Predefined Credential Type", Credential Type to '
      + `"Campaign Dialing API" and the credential of this node: it sends the API token. The URL is ${url} followed by the `
      + 'path of the API operation, e.g. campaigns.',
  });
}

export class CampaignDialing implements INodeType {
  description: INodeTypeDescription = {
    displayName: 'Campaign Dialing',
    name: 'campaignDialing',
    icon: { light: 'file:campaignDialing.svg', dark: 'file:campaignDialing.dark.svg' },
    group: ['output'],
    version: 1,
    // In words, "Get Many: Campaign": the names of the operation and resource options (test/n8n/nodes.test.ts checks them).
    subtitle: '={{ {"add":"Add","callDetails":"Call Details","callingWindow":"Calling Window","changeState":"Change State","delete":"Delete","deleteMany":"Delete Many","duplicate":"Duplicate","getAll":"Get Many","numberDetails":"Number Details","upload":"Upload CSV"}[$parameter["operation"]] + ": " + {"campaign":"Campaign","campaignNumber":"Campaign Number","report":"Report"}[$parameter["resource"]] }}',
    description: 'Run outbound calling campaigns: campaigns, their numbers and their reports',
    defaults: { name: 'Campaign Dialing' },
    usableAsTool: true,
    inputs: [NodeConnectionTypes.Main],
    outputs: [NodeConnectionTypes.Main],
    // Tested by a function rather than the credential's own request, to explain a server that cannot be reached.
    // Not asked for by Calling Window, which sends no request: n8n's editor and engine require a credential entry only
    // while its displayOptions show it. Hidden by operation (the only one of that value), not shown by a list of the
    // others: a saved workflow omits parameters left at their defaults (resource campaign, operation getAll).
    credentials: [{
      name: 'campaignDialingApi', required: true, testedBy: 'campaignDialingApiTest',
      displayOptions: { hide: { operation: [CALLING_WINDOW] } },
    }],
    properties: [
      {
        displayName: 'Resource',
        name: 'resource',
        type: 'options',
        noDataExpression: true,
        options: resources,
        default: 'campaign',
      },
      campaignOperations,
      numberOperations,
      reportOperations,
      ...campaignFields,
      ...numberFields,
      ...reportFields,
    ],
  };

  methods = { listSearch: { searchCampaigns }, credentialTest: { campaignDialingApiTest } };

  async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
    try {
      return await runOperation(this);
    } catch (error) {
      // Thrown, an error reaches an AI agent's model as its message alone (AI Agent 3: `[{"error": message}]`, the
      // description dropped) or not at all (AI Agent 2: LangChain's AgentExecutor answers a tool's exception with an
      // empty observation). Answered as the tool's result, the whole text reaches both.
      if (forModel(this)) return [[{ json: { error: forTheModel(error) }, pairedItem: { item: 0 } }]];
      throw error instanceof NodeApiError || error instanceof NodeOperationError ? error : new NodeOperationError(this.getNode(), error as Error);
    }
  }
}

async function runOperation(ctx: IExecuteFunctions): Promise<INodeExecutionData[][]> {
  const items = ctx.getInputData();
  const resource = ctx.getNodeParameter('resource', 0) as string;
  // With n8n's Custom API Call as the resource no operation is shown, so none may be set.
  const operation = ctx.getNodeParameter('operation', 0, '') as string;
  if (resource === CUSTOM_API_CALL || operation === CUSTOM_API_CALL) throw await customApiCallError(ctx);
  const known = (operationsByResource[resource]?.options as INodePropertyOptions[] | undefined)?.some((o) => o.value === operation);
  if (!known) {
    throw operationError(ctx.getNode(), `This node has no operation "${operation}" for the resource "${resource}"`, {
      description: 'Pick the resource and operation again: the workflow was made for another version of this node.',
    });
  }
  if (resource === 'campaign') return [await executeCampaign(ctx, operation, items)];
  if (resource === 'campaignNumber') return [await executeNumber(ctx, operation, items)];
  return [await executeReport(ctx, operation as 'callDetails' | 'numberDetails', items)];
}
