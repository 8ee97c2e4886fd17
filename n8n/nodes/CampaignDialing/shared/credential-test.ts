// The credential's "Test" button: lists one campaign of the account (or, for a key whose roles cannot, asks to add no
// numbers to a campaign that does not exist) and says what is wrong when that fails, an unreachable server included
// (a declarative test request would answer that with a bare "ECONNREFUSED").
import type { ICredentialsDecrypted, ICredentialTestFunctions, IDataObject, INodeCredentialTestResult } from 'n8n-workflow';
import { apiTextInWords } from './errors.ts';
import { accountUrl, baseUrlOf, RESTRICTED_TO_CAMPAIGNS, unreachable } from './transport.ts';

/** What each refusal means for this request (GET .../campaigns with a range of one). */
const REFUSALS: Record<number, string> = {
  401: 'The API token was not accepted (401): it is mistyped, expired, or not a token of this service',
  403: 'The API token is valid but was refused for this account (403): check the Account ID and whether the API key was deleted',
  404: 'No Campaign Dialing API answers at this Base URL (404): give the address without /v1',
};

/**
 * A campaign ID that no campaign has. A key whose roles cannot list campaigns (Campaign Number Admin or Provider) is
 * tried by adding no numbers to it: a 404 (no such campaign) says that the key was let through.
 */
const NO_CAMPAIGN = '00000000-0000-4000-8000-000000000000';

/** Said when only the number roles' probe passed: the test's answer, and what the key can be used for. */
export const NUMBERS_ONLY = 'Connection successful. This API key cannot list campaigns: it works for the numbers of campaigns only '
  + '(adding numbers; listing and deleting them too with the Campaign Number Admin role), so pick its campaigns By ID or By URL';

/**
 * Said when the probe was refused because the key's number roles are restricted to some campaigns: the token and the
 * Account ID were accepted, but no request can be tried without one of the key's campaigns, which the test does not know.
 */
export const RESTRICTED = 'Connection successful: the API token and the Account ID were accepted. This API key is restricted to '
  + 'certain campaigns, so it cannot be tested further without one of them; it works for the numbers of its campaigns only: pick '
  + 'them By ID or By URL';

interface Answer {
  body?: unknown;
  statusCode: number;
}

const detailOf = (body: unknown): string => {
  const detail = typeof body === 'object' && body !== null ? (body as IDataObject).detail : undefined;
  return typeof detail === 'string' ? apiTextInWords(detail) : '';
};

export async function campaignDialingApiTest(
  this: ICredentialTestFunctions, credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
  const data = credential.data ?? {};
  const base = baseUrlOf(data.baseUrl);
  if ('problem' in base) return { status: 'Error', message: base.problem };
  // A credential test gets only the legacy `request` helper: ICredentialTestFunctions has no httpRequest. The community
  // lint rule no-deprecated-workflow-functions (also run by n8n's package scan) flags `this.helpers.request`, not this
  // call; it is deliberate and the only way to word an unreachable server (docs/n8n-nodes.md, "Credentials"). n8n 2.41 serves it
  // through its own HTTP client.
  const { helpers } = this;
  const send = async (method: 'GET' | 'POST', path: string, qs: IDataObject, body?: unknown): Promise<Answer> => (await helpers.request({
    method,
    uri: `${accountUrl(base.url, data.accountId)}${path}`,
    qs,
    headers: { Accept: 'application/json', Authorization: `Bearer ${String(data.apiToken ?? '')}` },
    ...(body === undefined ? {} : { body }),
    json: true,
    simple: false,
    resolveWithFullResponse: true,
  })) as Answer;
  let answer: Answer;
  let probe: Answer | undefined;
  try {
    answer = await send('GET', '/campaigns', { range: '[0,0]' });
    if (answer.statusCode === 403) probe = await send('POST', `/campaigns/${NO_CAMPAIGN}/numbers`, {}, []);
  } catch (error) {
    const { message, description } = unreachable(base.url, error);
    return { status: 'Error', message: `${message}. ${description}` };
  }
  const { statusCode, body } = answer;
  if (statusCode >= 200 && statusCode < 300) {
    if (Array.isArray(body)) return { status: 'OK', message: 'Connection successful' };
    return { status: 'Error', message: `The server at ${base.url} answered, but not as the Campaign Dialing API (no list of campaigns): check the Base URL` };
  }
  if (probe?.statusCode === 404) return { status: 'OK', message: NUMBERS_ONLY };
  // Its detail names the made-up campaign of the probe, which would only puzzle the user.
  if (probe?.statusCode === 403 && RESTRICTED_TO_CAMPAIGNS.test(detailOf(probe.body))) return { status: 'OK', message: RESTRICTED };
  const refusal = REFUSALS[statusCode];
  const detail = detailOf(probe?.body) || detailOf(body);
  if (refusal) return { status: 'Error', message: statusCode === 403 && detail ? `${refusal}. The API said: ${detail}` : refusal };
  return {
    status: 'Error',
    message: `The Campaign Dialing API answered with HTTP status ${statusCode}${detail ? `: ${detail}` : ''}`,
  };
}
