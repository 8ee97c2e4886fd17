// The n8n credential of the Campaign Dialing API: base URL, account and a bearer token, with a test request.
import type {
  IAuthenticateGeneric, Icon, ICredentialTestRequest, ICredentialType, INodeProperties,
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

  // Lists one campaign: every answer but 2xx is a wrong URL, token or account, told apart by its status code.
  test: ICredentialTestRequest = {
    request: {
      baseURL: '={{$credentials.baseUrl.replace(/\\/+$/, "")}}',
      url: '=/v1/accounts/{{encodeURIComponent($credentials.accountId)}}/campaigns',
      qs: { range: '[0,0]' },
      method: 'GET',
    },
    rules: [
      {
        type: 'responseCode',
        properties: {
          value: 401,
          message: 'The API token was not accepted (401): it is mistyped, expired, or not a token of this service',
        },
      },
      {
        type: 'responseCode',
        properties: {
          value: 403,
          message:
            'The token is valid but was refused for this account (403): check the Account ID, whether the key was deleted, and that it has the Campaign Admin or Campaign Reader role (the test lists campaigns)',
        },
      },
      {
        type: 'responseCode',
        properties: {
          value: 404,
          message: 'No Campaign Dialing API answers at this Base URL (404): give the address without /v1',
        },
      },
    ],
  };
}
