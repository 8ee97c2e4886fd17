// The 401/403 matrix of spec §5: every v1 operation × every way a request can fail or pass authentication and authorisation.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NUMBER_ROLES, OPERATIONS, ROLE_OPERATIONS, ROLES, type Operation, type Role } from '../../api/enums.ts';
import { addNumbers, createAccount, createCampaign, createKey, phoneNumbers, startServer, type TestServer } from '../support/server.ts';

/** Shifts the server's clock, so a key can expire between two requests without waiting. */
let clockOffsetMs = 0;

let s: TestServer;
/** The account whose paths every request names. */
let own: { id: string; pk: number };
/** Another account: its keys must not work on `own`'s paths. */
let other: { id: string };
/** A campaign of `own` that restricted keys list when they should *not* reach the fixture campaign. */
let decoyCampaignId: string;
/** An unrestricted CampaignAdmin key of `own`, for warm-up requests. */
let adminToken: string;

beforeAll(async () => {
  s = await startServer({ now: () => new Date(Date.now() + clockOffsetMs) });
  const a = await createAccount(s, 'Own');
  own = { id: a.id, pk: s.store.accounts.byId(a.id)!.pk };
  other = await createAccount(s, 'Other');
  decoyCampaignId = (await createCampaign(s, own.id, { name: 'Decoy' })).id;
  adminToken = await createKey(s, own.id, ['CampaignAdmin']);
});

afterAll(async () => {
  await s?.close();
});

// ---------------------------------------------------------------------------------------------
// One ready-to-send request per operation, on fresh fixtures of `own`, and a way to see its effect.

interface Prepared {
  method: string;
  /** Path under /v1/accounts/{accountId}. */
  path: string;
  /** A fresh body per send (a FormData or JSON body cannot be sent twice). */
  body(): { json?: unknown; body?: BodyInit };
  /** The campaign named in the path, for campaign-scoped operations. */
  campaignId?: string;
  /** What the operation changes; equal before and after when it did nothing. */
  snapshot(): unknown;
}

interface OperationSpec {
  /** Status of a successful request. */
  success: number;
  /** Whether a success must change `snapshot()`. */
  mutates: boolean;
  prepare(): Promise<Prepared>;
  /** What a successful response body must look like. */
  checkBody(body: unknown): void;
}

let phoneCounter = 0;
const nextPhone = (): string => phoneNumbers(1, phoneCounter++)[0]!;
let nameCounter = 0;
const uniqueName = (base: string): string => `${base} ${++nameCounter}`;

const campaignRow = (id: string) => s.store.campaigns.byId(own.pk, id);

async function campaignWithOneNumber(fields: Record<string, unknown> = {}): Promise<{ campaignId: string; numberId: string }> {
  const c = await createCampaign(s, own.id, { name: uniqueName('With number'), ...fields });
  const added = await addNumbers(s, own.id, c.id, [nextPhone()]);
  const numberId = (added as { created: { id: string }[] }).created[0]?.id;
  if (!numberId) throw new Error(`fixture: no number was added to ${c.id}`);
  return { campaignId: c.id, numberId };
}

const isListOf = (length?: number) => (body: unknown): void => {
  expect(Array.isArray(body)).toBe(true);
  if (length !== undefined) expect(body).toHaveLength(length);
};

const SPECS: Record<Operation, OperationSpec> = {
  'campaigns.list': {
    success: 200, mutates: false,
    async prepare() {
      return { method: 'GET', path: '/campaigns', body: () => ({}), snapshot: () => null };
    },
    checkBody: (body) => {
      isListOf()(body);
      expect((body as unknown[]).length).toBeGreaterThan(0);
    },
  },
  'campaigns.duplicate': {
    success: 201, mutates: true,
    async prepare() {
      const name = uniqueName('Source');
      const c = await createCampaign(s, own.id, { name });
      return {
        method: 'POST', path: `/campaigns/${c.id}/duplicate`, body: () => ({}), campaignId: c.id,
        // The copy is named `${name} (1)`: count the campaigns named like a copy of this one.
        snapshot: () => s.store.campaigns.namesLike(own.pk, name).length,
      };
    },
    checkBody: (body) => expect(body).toMatchObject({ id: expect.any(String), state: 'Draft' }),
  },
  'campaigns.changeState': {
    success: 200, mutates: true,
    async prepare() {
      const c = await createCampaign(s, own.id, { name: uniqueName('Running'), state: 'Active' });
      return {
        method: 'PUT', path: `/campaigns/${c.id}/state`, body: () => ({ json: 'Paused' }), campaignId: c.id,
        snapshot: () => campaignRow(c.id)?.state,
      };
    },
    checkBody: (body) => expect(body).toMatchObject({ state: 'Paused' }),
  },
  'campaigns.delete': {
    success: 200, mutates: true,
    async prepare() {
      const c = await createCampaign(s, own.id, { name: uniqueName('Doomed') });
      return {
        method: 'DELETE', path: `/campaigns/${c.id}`, body: () => ({}), campaignId: c.id,
        snapshot: () => campaignRow(c.id) !== undefined,
      };
    },
    // The campaign as it was before the deletion.
    checkBody: (body) => expect(body).toMatchObject({ id: expect.any(String), name: expect.stringMatching(/^Doomed \d+$/), state: 'Draft' }),
  },
  'campaigns.deleteMany': {
    success: 204, mutates: true,
    async prepare() {
      const c1 = await createCampaign(s, own.id, { name: uniqueName('Doomed') });
      const c2 = await createCampaign(s, own.id, { name: uniqueName('Doomed'), state: 'Canceled' });
      return {
        method: 'DELETE', path: '/campaigns', body: () => ({ json: [c1.id, c2.id] }),
        snapshot: () => [campaignRow(c1.id) !== undefined, campaignRow(c2.id) !== undefined],
      };
    },
    checkBody: (body) => expect(body).toBe(''),
  },
  'numbers.list': {
    success: 200, mutates: false,
    async prepare() {
      const { campaignId } = await campaignWithOneNumber();
      return { method: 'GET', path: `/campaigns/${campaignId}/numbers`, body: () => ({}), campaignId, snapshot: () => null };
    },
    checkBody: isListOf(1),
  },
  'numbers.add': {
    success: 201, mutates: true,
    async prepare() {
      const c = await createCampaign(s, own.id, { name: uniqueName('Dynamic'), type: 'Dynamic', state: 'Active' });
      const phone = nextPhone();
      return {
        method: 'POST', path: `/campaigns/${c.id}/numbers`, body: () => ({ json: [{ number: phone }] }), campaignId: c.id,
        snapshot: () => campaignRow(c.id)?.numbers_count,
      };
    },
    checkBody: (body) => {
      expect(body).toMatchObject({ rejected: [] });
      expect((body as { created: unknown[] }).created).toHaveLength(1);
    },
  },
  'numbers.upload': {
    success: 201, mutates: true,
    async prepare() {
      const c = await createCampaign(s, own.id, { name: uniqueName('Dynamic'), type: 'Dynamic', state: 'Active' });
      const phone = nextPhone();
      return {
        method: 'POST', path: `/campaigns/${c.id}/numbers/upload`, campaignId: c.id,
        body: () => {
          const form = new FormData();
          form.append('file', new Blob([`${phone}\n`], { type: 'text/csv' }), 'numbers.csv');
          return { body: form };
        },
        snapshot: () => campaignRow(c.id)?.numbers_count,
      };
    },
    checkBody: (body) => expect(body).toMatchObject({ createdCount: 1, rejectedCount: 0 }),
  },
  'numbers.delete': {
    success: 204, mutates: true,
    async prepare() {
      const { campaignId, numberId } = await campaignWithOneNumber();
      const campaignPk = campaignRow(campaignId)!.pk;
      return {
        method: 'DELETE', path: `/campaigns/${campaignId}/numbers`, body: () => ({ json: [numberId] }), campaignId,
        snapshot: () => s.store.numbers.byIds(campaignPk, [Number(numberId)]).map((n) => n.status),
      };
    },
    checkBody: (body) => expect(body).toBe(''),
  },
  'reports.callDetails': {
    success: 200, mutates: false,
    async prepare() {
      const { campaignId } = await campaignWithOneNumber();
      return { method: 'GET', path: `/campaigns/${campaignId}/reports/callDetails`, body: () => ({}), campaignId, snapshot: () => null };
    },
    checkBody: isListOf(0),
  },
  'reports.numberDetails': {
    success: 200, mutates: false,
    async prepare() {
      const { campaignId } = await campaignWithOneNumber();
      return { method: 'GET', path: `/campaigns/${campaignId}/reports/numberDetails`, body: () => ({}), campaignId, snapshot: () => null };
    },
    checkBody: isListOf(1),
  },
};

/** Operations whose path names a campaign (the ones a campaign restriction can apply to). */
const CAMPAIGN_OPERATIONS = OPERATIONS.filter((op) => op !== 'campaigns.list' && op !== 'campaigns.deleteMany');

// ---------------------------------------------------------------------------------------------
// Sending and judging.

type Auth = { token: string } | { authorization: string } | { none: true };

function send(p: Prepared, auth: Auth, accountId = own.id): Promise<Response> {
  const headers: Record<string, string> = 'authorization' in auth ? { authorization: auth.authorization } : {};
  return s.request(`/v1/accounts/${accountId}${p.path}`, {
    method: p.method, headers, ...('token' in auth ? { token: auth.token } : {}), ...p.body(),
  });
}

interface ProblemBody { type: string; title: string; status: number; detail: string; message: string }

async function expectProblem(res: Response, status: 401 | 403): Promise<ProblemBody> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json\b/);
  const body = JSON.parse(text) as ProblemBody;
  expect(body).toMatchObject({ type: expect.any(String), title: expect.any(String), status, detail: expect.any(String) });
  expect(body.detail.length).toBeGreaterThan(0);
  expect(body.message).toBe(body.detail);
  if (status === 401) expect(res.headers.get('www-authenticate') ?? '').toMatch(/^Bearer\b/i);
  return body;
}

/** Sends the prepared request and checks it was refused with `status` and changed nothing. */
async function expectRefused(op: Operation, p: Prepared, auth: Auth, status: 401 | 403, accountId = own.id): Promise<ProblemBody> {
  const before = p.snapshot();
  const problem = await expectProblem(await send(p, auth, accountId), status);
  expect(p.snapshot(), `${op} must have no effect when refused`).toEqual(before);
  return problem;
}

/** Sends the prepared request and checks it succeeded with the operation's real status and effect. */
async function expectSuccess(op: Operation, p: Prepared, auth: Auth): Promise<void> {
  const spec = SPECS[op];
  const before = p.snapshot();
  const res = await send(p, auth);
  const text = await res.text();
  expect(res.status, text).toBe(spec.success);
  spec.checkBody(spec.success === 204 ? text : JSON.parse(text));
  if (spec.mutates) expect(p.snapshot(), `${op} must take effect`).not.toEqual(before);
}

const allows = (role: Role, op: Operation): boolean => ROLE_OPERATIONS[role].includes(op);
const isNumberRole = (role: Role): boolean => NUMBER_ROLES.includes(role);
const outcome = (ok: boolean, op: Operation): string => (ok ? String(SPECS[op].success) : '403');

/** A 403 for missing roles names the key's roles and the roles that would do. */
function expectRolesNamed(problem: ProblemBody, keyRoles: Role[], op: Operation): void {
  for (const role of keyRoles) expect(problem.detail).toContain(role);
  for (const role of ROLES.filter((r) => allows(r, op))) expect(problem.detail).toContain(role);
}

async function createKeyRecord(accountId: string, body: Record<string, unknown>): Promise<{ id: string; token: string }> {
  return s.console('POST', `/accounts/${accountId}/apiKeys`, { name: 'key', ...body });
}

/** `YYYY-MM-DDTHH:MM:SSZ`, the console's timestamp form. */
const stamp = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

// ---------------------------------------------------------------------------------------------

describe('401: the request is not authenticated', () => {
  type Kind = { name: string; auth: () => Promise<Auth> };
  const tokenWith = (f: (token: string) => string) => async (): Promise<Auth> =>
    ({ authorization: `Bearer ${f(await createKey(s, own.id, ['CampaignAdmin']))}` });
  const kinds: Kind[] = [
    { name: 'no Authorization header', auth: async () => ({ none: true }) },
    { name: 'Basic scheme', auth: async () => ({ authorization: `Basic ${Buffer.from(`${adminToken}:`).toString('base64')}` }) },
    { name: 'a valid token under a non-Bearer scheme', auth: async () => ({ authorization: `Token ${adminToken}` }) },
    { name: 'Bearer without a token', auth: async () => ({ authorization: 'Bearer' }) },
    { name: 'malformed token: wrong prefix', auth: tokenWith((t) => `cdx_${t.slice(4)}`) },
    { name: 'malformed token: one character short', auth: tokenWith((t) => t.slice(0, -1)) },
    { name: 'malformed token: one character long', auth: tokenWith((t) => `${t}A`) },
    { name: 'malformed token: a character outside base64url', auth: tokenWith((t) => `${t.slice(0, 10)}+${t.slice(11)}`) },
    { name: 'well-formed but unknown token', auth: async () => ({ token: `cdk_${randomBytes(32).toString('base64url')}` }) },
    {
      name: 'expired key',
      auth: async () => ({ token: (await createKeyRecord(own.id, { roles: [...ROLES], expiresAt: stamp(Date.now() - 3_600_000) })).token }),
    },
  ];
  describe.each(OPERATIONS)('%s', (op) => {
    it.each(kinds.map((k) => [k.name, k] as const))('%s → 401', async (_name, kind) => {
      const p = await SPECS[op].prepare();
      await expectRefused(op, p, await kind.auth(), 401);
    });
  });

  it('the Bearer scheme is case-insensitive (RFC 9110 §11.1): "bearer <token>" is accepted', async () => {
    const res = await s.request(`/v1/accounts/${own.id}/campaigns`, { headers: { authorization: `bearer ${adminToken}` } });
    expect(res.status).toBe(200);
  });

  it('a key with an expiry in the future works until that moment and answers 401 from then on', async () => {
    const key = await createKeyRecord(own.id, { roles: ['CampaignReader'], expiresAt: stamp(Date.now() + 3_600_000) });
    const list = () => s.request(`/v1/accounts/${own.id}/campaigns`, { token: key.token });
    expect((await list()).status).toBe(200);
    clockOffsetMs = 2 * 3_600_000;
    try {
      const problem = await expectProblem(await list(), 401);
      expect(problem.detail).toMatch(/expire/i);
    } finally {
      clockOffsetMs = 0;
    }
    // Back at real time the key is valid again: the 401 came from the clock, not from anything else.
    expect((await list()).status).toBe(200);
  });
});

describe('403: a deleted key', () => {
  it.each(OPERATIONS)('%s → 403 from the request after the deletion on', async (op) => {
    const p = await SPECS[op].prepare();
    const key = await createKeyRecord(own.id, { roles: [...ROLES] });
    expect((await s.request(`/v1/accounts/${own.id}/campaigns`, { token: key.token })).status).toBe(200);
    const del = await s.request(`/console/accounts/${own.id}/apiKeys/${key.id}`, { method: 'DELETE', token: s.consoleToken });
    expect(del.status).toBe(204);
    await expectRefused(op, p, { token: key.token }, 403);
  });
});

describe('403: a key of another account', () => {
  const keyRoleSets: Role[][] = [...ROLES.map((r) => [r]), [...ROLES]];
  describe.each(OPERATIONS)('%s', (op) => {
    it.each(keyRoleSets.map((roles) => [roles.join('+'), roles] as const))('%s key of the other account → 403', async (_name, roles) => {
      const p = await SPECS[op].prepare();
      const token = await createKey(s, other.id, roles);
      await expectRefused(op, p, { token }, 403);
    });

    it('an all-roles key on an account that does not exist → 403', async () => {
      const p = await SPECS[op].prepare();
      const token = await createKey(s, own.id, [...ROLES]);
      await expectRefused(op, p, { token }, 403, `no-such-account-${randomBytes(4).toString('hex')}`);
    });
  });
});

describe('role table (ROLE_OPERATIONS): one role, own account, no campaign restriction', () => {
  describe.each(OPERATIONS)('%s', (op) => {
    it.each(ROLES.map((role) => [role, outcome(allows(role, op), op), role] as const))('%s → %s', async (_name, _outcome, role) => {
      const p = await SPECS[op].prepare();
      const token = await createKey(s, own.id, [role]);
      if (allows(role, op)) {
        await expectSuccess(op, p, { token });
      } else {
        expectRolesNamed(await expectRefused(op, p, { token }, 403), [role], op);
      }
    });
  });
});

describe('several roles: the key gets the union of their permissions', () => {
  const combos: Role[][] = [
    ['CampaignReader', 'CampaignNumberProvider'],
    ['CampaignReader', 'CampaignNumberAdmin'],
    ['CampaignNumberAdmin', 'CampaignNumberProvider'],
    ['CampaignReader', 'CampaignNumberAdmin', 'CampaignNumberProvider'],
    [...ROLES],
  ];
  describe.each(OPERATIONS)('%s', (op) => {
    it.each(combos.map((roles) => {
      const ok = roles.some((r) => allows(r, op));
      return [roles.join('+'), outcome(ok, op), roles, ok] as const;
    }))('%s → %s', async (_name, _outcome, roles, ok) => {
      const p = await SPECS[op].prepare();
      const token = await createKey(s, own.id, roles);
      if (ok) await expectSuccess(op, p, { token });
      else expectRolesNamed(await expectRefused(op, p, { token }, 403), roles, op);
    });
  });
});

describe('campaign restriction (campaignIds): number roles reach only the listed campaigns', () => {
  const roleSets: Role[][] = [
    ['CampaignNumberAdmin'],
    ['CampaignNumberProvider'],
    ['CampaignNumberAdmin', 'CampaignNumberProvider'],
    // CampaignAdmin and CampaignReader are not restricted, even on a key that lists campaigns.
    ['CampaignAdmin'],
    ['CampaignReader'],
    // Mixed keys: an unrestricted role still allows what it allows; the number role only its campaigns.
    ['CampaignReader', 'CampaignNumberAdmin'],
    ['CampaignAdmin', 'CampaignNumberProvider'],
  ];
  const cases = CAMPAIGN_OPERATIONS.flatMap((op) => roleSets.flatMap((roles) => (['listed', 'not listed'] as const).map((where) => {
    const ok = roles.some((r) => allows(r, op) && (where === 'listed' || !isNumberRole(r)));
    return { op, roles, where, ok, name: `${op} · ${roles.join('+')} · campaign ${where} → ${outcome(ok, op)}` };
  })));

  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const p = await SPECS[c.op].prepare();
    const campaignIds = c.where === 'listed' ? [p.campaignId!] : [decoyCampaignId];
    const token = await createKey(s, own.id, c.roles, campaignIds);
    if (c.ok) {
      await expectSuccess(c.op, p, { token });
    } else {
      const problem = await expectRefused(c.op, p, { token }, 403);
      if (!c.roles.some((r) => allows(r, c.op))) expectRolesNamed(problem, c.roles, c.op);
    }
  });

  it('a key that lists several campaigns reaches each of them', async () => {
    const a = await SPECS['numbers.add'].prepare();
    const b = await SPECS['numbers.add'].prepare();
    const token = await createKey(s, own.id, ['CampaignNumberProvider'], [decoyCampaignId, a.campaignId!, b.campaignId!]);
    await expectSuccess('numbers.add', a, { token });
    await expectSuccess('numbers.add', b, { token });
  });

  it('a restricted number role on a campaign that does not exist → 403, not 404 (nothing is revealed)', async () => {
    const token = await createKey(s, own.id, ['CampaignNumberAdmin'], [decoyCampaignId]);
    const res = await s.request(`/v1/accounts/${own.id}/campaigns/no-such-campaign/numbers`, { token });
    await expectProblem(res, 403);
  });
});
