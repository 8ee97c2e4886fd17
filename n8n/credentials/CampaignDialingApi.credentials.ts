// The n8n credential of the Campaign Dialing API: base URL, account and a bearer token. Its test is the action node's
// campaignDialingApiTest (testedBy), which can explain a server that cannot be reached.
import type {
  IAuthenticateGeneric, Icon, ICredentialType, INodeProperties,
} from 'n8n-workflow';

export class CampaignDialingApi implements ICredentialType {
  name = 'campaignDialingApi';

  displayName = 'Campaign Dialing API';

  icon: Icon = { light: 'file:../nodes/CampaignDialing/campaignDialing.svg', dark: 'file:../nodes/CampaignDialing/campaignDialing.dark.svg' };

  documentationUrl = 'https://github.com/campaign-dialing/n8n-nodes-campaign-dialing#credentials';

  properties: INodeProperties[] = [
    {
      displayName: 'Base URL',
      name: 'baseUrl',
      type: 'string',
      default: 'http://127.0.0.1:4000',
      required: true,
      placeholder: 'https://api.example.com',
      description: 'Address of the API, without /v1. The default is the local reference server started by ./dev start.',
    },
    {
      displayName: 'Account ID',
      name: 'accountId',
      type: 'string',
      default: '',
      required: true,
      description: 'The account the API key was created in (web console, Settings)',
    },
    {
      displayName: 'API Token',
      name: 'apiToken',
      type: 'string',
      typeOptions: { password: true },
      default: '',
      required: true,
      description: 'The token shown once when the API key was created (Settings > API Keys)',
    },
  ];

  authenticate: IAuthenticateGeneric = {
    type: 'generic',
    properties: {
      headers: { Authorization: '=Bearer {{$credentials.apiToken}}' },
    },
  };
}
