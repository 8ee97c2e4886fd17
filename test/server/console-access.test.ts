// The web console's door over real HTTP: sign-in (wrong token, right token), the session cookie, expired and forged
// sessions, CSRF on every change (the console API and sign-out), and /console/v1 answering with the v1 API's own rules.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, createCampaign, createKey, startServer, type TestServer } from '../support/server.ts';

const TTL = 3600_000;

describe('web console: sign-in, sessions and CSRF', () => {
  let s: TestServer;
  let now = Date.parse('2026-03-01T12:00:00Z');

  beforeAll(async () => {
    s = await startServer({ consoleSessions: { ttlMs: TTL, now: () => now } });
  });
  afterAll(() => s.close());

  const signIn = (token: string) => fetch(`${s.url}/console/session`, {
    method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token }),
  });
  /** Signs in; the cookie pair to send back and the CSRF token the page carries. */
  const session = async () => {
    const res = await signIn(s.consoleToken);
    expect(res.status).toBe(303);
    const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
    const page = await (await fetch(`${s.url}/console`, { headers: { cookie } })).text();
    const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(page)![1]!;
    return { cookie, csrf };
  };
  const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) => fetch(`${s.url}${path}`, {
    method, headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const accountCount = async () => (await s.console<unknown[]>('GET', '/accounts')).length;

  it('serves the sign-in page under a strict Content-Security-Policy; a wrong token gets a clear error and no cookie', async () => {
    const page = await fetch(`${s.url}/console`);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    expect(html).toContain('<form method="post" action="/console/session">');
    expect(html).toMatch(/<label for="token">Console token<\/label>/);
    expect(html).not.toMatch(/<script>|style=/);

    const wrong = await signIn('console_not-the-token');
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    expect(await wrong.text()).toContain('That is not the console token');

    const acc = await createAccount(s, 'Keyed');
    const apiToken = await createKey(s, acc.id, ['CampaignAdmin']);
    const withKey = await signIn(apiToken);
    expect(withKey.status).toBe(401);
    expect(await withKey.text()).toContain('API keys (cdk_…) do not sign in here');

    const empty = await signIn('');
    expect(empty.status).toBe(400);
    expect(await empty.text()).toContain('Enter the console token');
  });

  it('signs in with the console token: an HttpOnly, SameSite=Strict cookie under /console, and a page with its CSRF token', async () => {
    const res = await signIn(s.consoleToken);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console');
    const cookie = res.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^cd_console_session=[A-Za-z0-9_-]{43}; /);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/console');
    expect(cookie).toContain(`Max-Age=${TTL / 1000}`);
    expect(cookie).not.toContain(s.consoleToken);

    const pair = cookie.split(';')[0]!;
    const page = await (await fetch(`${s.url}/console`, { headers: { cookie: pair } })).text();
    expect(page).toMatch(/<meta name="csrf-token" content="[A-Za-z0-9_-]{43}">/);
    expect(page).toContain('<script src="/console/assets/console.js" defer></script>');
    expect(page).not.toContain(s.consoleToken);
    const accounts = await call('GET', '/console/accounts', { cookie: pair });
    expect(accounts.status).toBe(200);
  });

  it('refuses the console API with no session, a forged one or an expired one, and changes nothing', async () => {
    const before = await accountCount();
    const none = await call('POST', '/console/accounts', {}, { name: 'Nope' });
    expect(none.status).toBe(401);
    expect((await none.json()).detail).toMatch(/^Not signed in: open \/console and sign in/);

    const forged = await call('POST', '/console/accounts', { cookie: 'cd_console_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'x-csrf-token': 'x' }, { name: 'Nope' });
    expect(forged.status).toBe(401);
    expect((await forged.json()).detail).toContain('The console session is not valid');

    const { cookie, csrf } = await session();
    now += TTL + 1;
    const expired = await call('POST', '/console/accounts', { cookie, 'x-csrf-token': csrf }, { name: 'Nope' });
    expect(expired.status).toBe(401);
    expect((await expired.json()).detail).toBe('The console session expired; sign in again at /console');
    expect(await accountCount()).toBe(before);

    // The page says so too, and clears the cookie.
    const { cookie: later } = await session();
    now += TTL;
    const page = await fetch(`${s.url}/console`, { headers: { cookie: later } });
    expect(await page.text()).toContain('The console session expired; sign in again');
    expect(page.headers.get('set-cookie')).toContain('Max-Age=0');

    const wrongBearer = await call('GET', '/console/accounts', { authorization: 'Bearer console_wrong' });
    expect(wrongBearer.status).toBe(401);
    expect((await wrongBearer.json()).detail).toContain('this is not it');
  });

  it('refuses a change with no CSRF token or a wrong one, and changes nothing; reads need none', async () => {
    const { cookie, csrf } = await session();
    const before = await accountCount();
    const missing = await call('POST', '/console/accounts', { cookie }, { name: 'Nope' });
    expect(missing.status).toBe(403);
    expect((await missing.json()).detail).toMatch(/^The request has no valid CSRF token .*nothing was changed/);
    const wrong = await call('POST', '/console/accounts', { cookie, 'x-csrf-token': [...csrf].reverse().join('') }, { name: 'Nope' });
    expect(wrong.status).toBe(403);
    expect(await accountCount()).toBe(before);

    const acc = await createAccount(s, 'Csrf');
    const c = await createCampaign(s, acc.id, { name: 'Held', type: 'Dynamic' });
    const state = await call('PUT', `/console/v1/accounts/${acc.id}/campaigns/${c.id}/state`, { cookie }, 'Active');
    expect(state.status).toBe(403);
    const list = await call('GET', `/console/accounts/${acc.id}/campaigns`, { cookie });
    expect(list.status).toBe(200);
    expect((await list.json())[0]).toMatchObject({ id: c.id, state: 'Draft', counters: { numbers: {}, calls: 0, answered: 0, answerRate: null } });

    const ok = await call('POST', '/console/accounts', { cookie, 'x-csrf-token': csrf }, { name: 'Made' });
    expect(ok.status).toBe(201);
    expect(await accountCount()).toBe(before + 2);
  });

  it('signs out only with the CSRF token; the old cookie is refused afterwards', async () => {
    const { cookie, csrf } = await session();
    const form = (body: Record<string, string>) => fetch(`${s.url}/console/session/end`, {
      method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body),
    });
    const refused = await form({});
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('no valid CSRF token; nothing was changed');
    expect((await call('GET', '/console/accounts', { cookie })).status).toBe(200);

    const out = await form({ csrf });
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/console?signedOut');
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
    const after = await call('GET', '/console/accounts', { cookie });
    expect(after.status).toBe(401);
    expect((await after.json()).detail).toContain('signed out');
  });

  it('signs out nothing for a request without the session cookie (a form on another site): no cleared cookie, the session lives', async () => {
    const { cookie, csrf } = await session();
    // What a cross-site form post looks like to the server: SameSite=Strict keeps the cookie home; the CSRF field is a guess.
    const crossSite = await fetch(`${s.url}/console/session/end`, {
      method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      body: new URLSearchParams({ csrf }),
    });
    expect(crossSite.status).toBe(403);
    expect(crossSite.headers.get('set-cookie')).toBeNull();
    expect(await crossSite.text()).toContain('carried no session cookie (a form on another site cannot send it); nothing was changed');
    expect((await call('GET', '/console/accounts', { cookie })).status).toBe(200);

    // A cookie the server no longer knows: sent back to the page, which clears it and says why.
    const stale = await fetch(`${s.url}/console/session/end`, {
      method: 'POST', redirect: 'manual', headers: { cookie: 'cd_console_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: 'x' }),
    });
    expect(stale.status).toBe(303);
    expect(stale.headers.get('location')).toBe('/console');
    expect(stale.headers.get('set-cookie')).toBeNull();
  });

  it('acts through /console/v1 with the v1 API\'s own rules and messages', async () => {
    const { cookie, csrf } = await session();
    const acc = await createAccount(s, 'Rules');
    const admin = await createKey(s, acc.id, ['CampaignAdmin']);
    const draft = await createCampaign(s, acc.id, { name: 'Still a draft' });
    const active = await createCampaign(s, acc.id, { name: 'Running', state: 'Active', type: 'Dynamic' });
    const asConsole = (method: string, path: string, body?: unknown) =>
      call(method, `/console/v1/accounts/${acc.id}${path}`, { cookie, 'x-csrf-token': csrf }, body);
    const asKey = (method: string, path: string, body?: unknown) =>
      call(method, `/v1/accounts/${acc.id}${path}`, { authorization: `Bearer ${admin}` }, body);

    for (const [method, path, body] of [
      ['PUT', `/campaigns/${draft.id}/state`, 'Paused'],
      ['DELETE', `/campaigns/${active.id}`, undefined],
      ['PUT', `/campaigns/${draft.id}/state`, 'Draft'],
    ] as const) {
      const viaConsole = await asConsole(method, path, body);
      const viaKey = await asKey(method, path, body);
      expect(viaConsole.status).toBe(viaKey.status);
      expect(viaConsole.status).toBeGreaterThanOrEqual(400);
      expect((await viaConsole.json()).detail).toBe((await viaKey.json()).detail);
    }
    const moved = await asConsole('PUT', `/campaigns/${draft.id}/state`, 'Active');
    expect(moved.status).toBe(200);
    expect((await moved.json()).state).toBe('Active');

    const unknown = await call('GET', '/console/v1/accounts/nope/campaigns', { cookie });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).detail).toBe('Account "nope" does not exist on this server');
  });

  it('slows down guessing: sign-in attempts beyond the limit get 429 with Retry-After, even with the right token', async () => {
    const strict = await startServer({ consoleSessions: { signInLimit: { rate: 1 / 60, burst: 2 } } });
    try {
      const attempt = (token: string) => fetch(`${strict.url}/console/session`, {
        method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token }),
      });
      expect((await attempt('guess-1')).status).toBe(401);
      expect((await attempt('guess-2')).status).toBe(401);
      const limited = await attempt(strict.consoleToken);
      expect(limited.status).toBe(429);
      expect(limited.headers.get('retry-after')).toBe('60');
      expect(limited.headers.get('set-cookie')).toBeNull();
      expect(await limited.text()).toContain('Too many sign-in attempts from this address; try again in 60 s.');
    } finally {
      await strict.close();
    }
  });

  it('counts wrong bearer tokens and wrong sign-ins against one limit; then even the right token waits, a session does not', async () => {
    let t = Date.parse('2026-03-01T12:00:00Z');
    const strict = await startServer({ consoleSessions: { signInLimit: { rate: 1 / 60, burst: 3 }, now: () => t } });
    try {
      const bearer = (token: string) => fetch(`${strict.url}/console/accounts`, { headers: { authorization: `Bearer ${token}` } });
      const form = (token: string) => fetch(`${strict.url}/console/session`, {
        method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token }),
      });
      const signedIn = await form(strict.consoleToken);
      expect(signedIn.status).toBe(303);
      const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
      // The right token costs nothing: a script using it is never throttled.
      for (let i = 0; i < 30; i++) expect((await bearer(strict.consoleToken)).status).toBe(200);

      expect((await bearer('console_guess-1')).status).toBe(401);
      expect((await form('console_guess-2')).status).toBe(401);
      const malformed = await fetch(`${strict.url}/console/accounts`, { headers: { authorization: 'Basic Z3Vlc3M=' } });
      expect(malformed.status).toBe(401);

      const limited = await bearer('console_guess-4');
      expect(limited.status).toBe(429);
      expect(limited.headers.get('retry-after')).toBe('60');
      expect((await limited.json()).detail).toBe('Too many wrong console tokens from this address; try again in 60 s');
      const right = await bearer(strict.consoleToken);
      expect(right.status).toBe(429);
      expect((await right.json()).detail).toMatch(/^Too many wrong console tokens/);
      const viaForm = await form(strict.consoleToken);
      expect(viaForm.status).toBe(429);
      expect(viaForm.headers.get('set-cookie')).toBeNull();
      // The operator already signed in carries on.
      expect((await fetch(`${strict.url}/console/accounts`, { headers: { cookie } })).status).toBe(200);

      t += 59_000;
      expect((await bearer(strict.consoleToken)).status).toBe(429);
      t += 1_000;
      expect((await bearer(strict.consoleToken)).status).toBe(200);
    } finally {
      await strict.close();
    }
  });

  it('serves the page\'s own script and style by name only', async () => {
    const js = await fetch(`${s.url}/console/assets/console.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await js.text()).toContain("'x-csrf-token'");
    const escape = await fetch(`${s.url}/console/assets/..%2F..%2Fapp.ts`);
    expect(escape.status).toBe(404);
  });
});
