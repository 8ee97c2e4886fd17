// The Campaign Dialing action node: every operation of the API, by resource.
import type { IExecuteFunctions, INodeExecutionData, INodeType, INodeTypeDescription } from 'n8n-workflow';
import { NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';
import { campaignFields, campaignOperations, executeCampaign } from './resources/campaign.ts';
import { executeNumber, numberFields, numberOperations } from './resources/number.ts';
import { executeReport, reportFields, reportOperations } from './resources/report.ts';
import { searchCampaigns } from './shared/search.ts';
import { CREDENTIAL_TYPE } from './shared/transport.ts';

export class CampaignDialing implements INodeType {
  description: INodeTypeDescription = {
    displayName: 'Campaign Dialing',
    name: 'campaignDialing',
    icon: { light: 'file:campaignDialing.svg', dark: 'file:campaignDialing.dark.svg' },
    group: ['output'],
    version: 1,
    subtitle: '={{$parameter["operation"] + ": " + $parameter["resource"]}}',
    description: 'Run outbound calling campaigns: campaigns, their numbers and their reports',
    defaults: { name: 'Campaign Dialing' },
    usableAsTool: true,
    inputs: [NodeConnectionTypes.Main],
    outputs: [NodeConnectionTypes.Main],
    credentials: [{ name: CREDENTIAL_TYPE, required: true }],
    properties: [
      {
        displayName: 'Resource',
        name: 'resource',
        type: 'options',
        noDataExpression: true,
        options: [
          { name: 'Campaign', value: 'campaign' },
          { name: 'Campaign Number', value: 'campaignNumber' },
          { name: 'Report', value: 'report' },
        ],
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

  methods = { listSearch: { searchCampaigns } };

  async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
    const items = this.getInputData();
    const resource = this.getNodeParameter('resource', 0) as string;
    const operation = this.getNodeParameter('operation', 0) as string;
    let out: INodeExecutionData[];
    if (resource === 'campaign') out = await executeCampaign(this, operation, items);
    else if (resource === 'campaignNumber') out = await executeNumber(this, operation, items);
    else if (resource === 'report' && (operation === 'callDetails' || operation === 'numberDetails')) out = await executeReport(this, operation, items);
    else throw new NodeOperationError(this.getNode(), `The operation "${operation}" of "${resource}" is not known`);
    return [out];
  }
}
