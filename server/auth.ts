// Authentication and authorisation of §5: bearer tokens to keys, keys to accounts, roles to operations.
import { NUMBER_ROLES, ROLE_OPERATIONS, type Operation, type Role } from '../api/enums.ts';
import { counted, listing } from '../api/problems.ts';
import { ApiError } from './errors.ts';
import { TOKEN_PATTERN, type KeyRecord } from './store/accounts.ts';
import type { Store } from './store/store.ts';

/** The key behind an Authorization header; 401 when the header is missing, malformed, unknown or expired. */
export function authenticate(store: Store, header: string | undefined, now: Date): KeyRecord {
  if (!header) throw unauthorized('The Authorization header is missing; send "Authorization: Bearer <API token>"');
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  if (!m) throw unauthorized('The Authorization header must be "Bearer <API token>"');
  const token = m[1]!;
  if (!TOKEN_PATTERN.test(token)) throw unauthorized('The bearer token is malformed: API tokens start with "cdk_" and have 47 characters');
  const key = store.accounts.keyForToken(token);
  if (!key) throw unauthorized('The bearer token is not the token of any API key');
  if (key.expiresAt && Date.parse(key.expiresAt) <= now.getTime()) throw unauthorized(`The API key expired at ${key.expiresAt}`);
  return key;
}

function unauthorized(detail: string): ApiError {
  return new ApiError('unauthorized', detail, { headers: { 'www-authenticate': 'Bearer realm="v1"' } });
}

/** 403 unless the key is live, of this account, and has a role that allows the operation at all. */
export function authorize(key: KeyRecord, accountPk: number | undefined, op: Operation): void {
  if (key.deletedAt) throw new ApiError('forbidden', `This API key was deleted at ${key.deletedAt}`);
  if (accountPk !== key.accountPk) throw new ApiError('forbidden', 'This API key belongs to another account');
  if (!rolesFor(key, op).length) {
    const roles = listing(key.roles, 'and');
    const refusal = key.roles.length === 1 ? `The key's role (${roles}) does not allow` : `None of the key's roles (${roles}) allows`;
    throw new ApiError('forbidden', `${refusal} ${op}; ${listing(rolesAllowing(op), 'or')} would`);
  }
}

/** 403 when every role that allows the operation is a number role restricted to other campaigns. */
export function authorizeCampaign(key: KeyRecord, op: Operation, campaignId: string): void {
  const ok = rolesFor(key, op).some((r) => !NUMBER_ROLES.includes(r) || key.campaignIds === null || key.campaignIds.includes(campaignId));
  if (!ok) {
    throw new ApiError('forbidden',
      `This API key is restricted to ${counted(key.campaignIds!.length, 'campaign')}, and campaign ${JSON.stringify(campaignId)} is not one of them`);
  }
}

function rolesFor(key: KeyRecord, op: Operation): Role[] {
  return key.roles.filter((r) => ROLE_OPERATIONS[r].includes(op));
}

function rolesAllowing(op: Operation): Role[] {
  return (Object.keys(ROLE_OPERATIONS) as Role[]).filter((r) => ROLE_OPERATIONS[r].includes(op));
}
