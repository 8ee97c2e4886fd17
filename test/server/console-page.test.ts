// The web console in a real browser (Debian's Chromium via playwright-core) against a real server on the manual
// clock: sign in, create an account, a webhook endpoint and a Dynamic campaign, add numbers (pasted and from a CSV
// file), activate it, advance the clock and watch calls and deliveries appear, create an API key, use it against /v1,
// revoke it and see /v1 refuse it, and sign out. Screenshots land in a temporary folder whose path is printed.
import { createServer, type Server } from 'node:http';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { launchChromium } from '../support/browser.ts';
import { startServer, type TestServer } from '../support/server.ts';

describe('web console in Chromium', () => {
  let s: TestServer;
  let browser: Browser;
  let receiver: Server;
  let receiverUrl: string;
  const received: { type: string }[] = [];
  let shots: string;

  beforeAll(async () => {
    s = await startServer({ clockStart: '2026-01-05T09:00:00Z', seed: 7 });
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => { body += c.toString(); });
      req.on('end', () => {
        received.push(JSON.parse(body) as { type: string });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`;
    browser = await launchChromium();
    shots = await mkdtemp(join(tmpdir(), 'console-page-'));
    console.log(`console screenshots: ${shots}`);
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => receiver?.close(r));
    await s?.close();
  });

  /** The text of a campaign summary field (dt/dd) on the campaign page. */
  const summary = (page: Page, name: string) => page.locator(`dd[data-field="${name}"]`);

  it('walks an operator from sign-in to calls, a key used and revoked, and sign-out', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.url });
    const page = await context.newPage();
    const problems: string[] = [];
    // The server's refusals (409, 403) are logged by Chromium as failed loads: expected here, unlike script errors.
    page.on('console', (m) => { if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text()); });
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('dialog', (d) => void d.accept());
    try {
      // Sign in by keyboard: the token field has the focus, Tab reaches the button; a wrong token is refused clearly.
      await page.goto(`${s.url}/console`);
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('token');
      await page.keyboard.type('console_wrong');
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Sign in');
      await page.keyboard.press('Enter');
      await page.getByRole('alert').filter({ hasText: 'That is not the console token' }).waitFor();
      await page.getByLabel('Console token').fill(s.consoleToken);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Accounts', level: 2 }).waitFor();
      const cookie = (await context.cookies()).find((c) => c.name === 'cd_console_session')!;
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
      expect(await page.evaluate(() => document.cookie)).toBe('');
      await page.getByText('Manual clock').waitFor();
      // The first Tab reaches the skip link, which moves the focus to the content and leaves the view as it is.
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
      await page.keyboard.press('Enter');
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
      await page.getByRole('heading', { name: 'Accounts', level: 2 }).waitFor();
      // The list page has no breadcrumb: nothing stands in its place (it once printed "null").
      expect(await page.locator('main').evaluate((m) => [...m.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent!.trim() !== ''))).toBe(false);
      expect(await page.locator('#clock-now').textContent()).toBe('2026-01-05 09:00:00Z');

      // An account, then a webhook endpoint (its secret shown once) and a Dynamic campaign that uses it.
      await page.getByLabel('Name').fill('Acme');
      await page.getByLabel('Time zone').fill('UTC');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.getByRole('heading', { name: 'Acme', level: 2 }).waitFor();
      const accountId = /#\/accounts\/(.+)$/.exec(page.url())![1]!;

      const endpointForm = page.locator('form', { has: page.getByRole('heading', { name: 'New webhook endpoint' }) });
      await endpointForm.getByLabel('URL').fill(receiverUrl);
      await endpointForm.getByRole('button', { name: 'Create endpoint' }).click();
      const secret = page.getByRole('group', { name: `Signing secret of ${receiverUrl}` }).locator('input');
      expect(await secret.inputValue()).toMatch(/^whsec_/);

      const campaignForm = page.locator('form', { has: page.getByRole('heading', { name: 'New campaign' }) });
      await campaignForm.getByLabel('Name').fill('Spring leads');
      await campaignForm.getByLabel('Type').selectOption('Dynamic');
      await campaignForm.getByLabel('Webhook endpoint').selectOption({ label: receiverUrl });
      await campaignForm.getByRole('button', { name: 'Create campaign' }).click();
      const row = page.getByRole('row', { name: /Spring leads/ });
      await row.getByRole('cell', { name: 'Draft' }).waitFor();
      await row.getByRole('cell', { name: 'Dynamic' }).waitFor();

      // Its page: numbers pasted, more from a CSV file (one line rejected, with the server's reason), one deleted.
      await row.getByRole('link', { name: 'Spring leads' }).click();
      await page.getByRole('heading', { name: 'Spring leads', level: 2 }).waitFor();
      const pasted = [0, 1, 2, 3, 4, 5].map(validPhone);
      await page.getByLabel('Phone numbers, one per line').fill(pasted.join('\n'));
      await page.getByRole('button', { name: 'Add numbers' }).click();
      await page.getByText('6 added, 0 rejected.').waitFor();
      await page.getByLabel('CSV file (phone number first').setInputFiles({
        name: 'more.csv', mimeType: 'text/csv', buffer: Buffer.from(`phone,name\n${validPhone(6)},Ann\n${validPhone(7)},Bob\nnot a phone,Eve\n`),
      });
      await page.getByLabel('First row is a header').check();
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.getByText('2 added, 1 rejected.').waitFor();
      await page.locator('.intake li', { hasText: 'not a phone (line 4)' }).waitFor();
      await page.locator('.page-info', { hasText: '1–8 of 8' }).waitFor();

      const numbersFilter = page.getByRole('form', { name: 'Filter numbers' });
      await numbersFilter.getByLabel('Phone number contains').fill(pasted[2]!.slice(2, 8));
      await numbersFilter.getByRole('button', { name: 'Filter' }).click();
      await page.locator('.page-info', { hasText: /of [1-7]$/ }).waitFor();
      await page.getByLabel(`Select ${pasted[2]}`).check();
      await page.getByRole('button', { name: 'Delete selected' }).click();
      await page.getByRole('status').filter({ hasText: '1 number deleted.' }).waitFor();
      await numbersFilter.getByLabel('Phone number contains').fill('');
      await numbersFilter.getByRole('button', { name: 'Filter' }).click();
      await page.locator('.page-info', { hasText: '1–7 of 7' }).waitFor();
      expect(await summary(page, 'By status').textContent()).toBe('NotContacted 7');

      // The API's own refusal, as the API words it; then Active.
      await page.getByRole('button', { name: 'Pause Spring leads' }).click();
      await page.getByRole('alert').filter({ hasText: 'Campaign "Spring leads" is Draft and cannot become Paused; it can become Active or Canceled' }).waitFor();
      await page.getByRole('button', { name: 'Activate Spring leads' }).click();
      await summary(page, 'State').filter({ hasText: 'Active' }).waitFor();
      expect(await page.getByRole('button', { name: 'Activate Spring leads' }).isHidden()).toBe(true);
      await page.getByRole('button', { name: 'Delete Spring leads' }).click();
      await page.getByRole('alert').filter({ hasText: 'is Active and cannot be deleted' }).waitFor();

      // The manual clock: an hour on, and the calls appear in the log and the counters.
      await page.getByRole('button', { name: '+1 hour' }).click();
      await page.getByRole('status').filter({ hasText: 'Clock advanced to 2026-01-05T10:00:00.000Z' }).waitFor();
      const callRows = page.getByRole('region', { name: 'Call log' }).locator('tbody tr:not(.empty)');
      await callRows.first().waitFor();
      const calls = Number(await summary(page, 'Calls made').textContent());
      expect(calls).toBeGreaterThan(0);
      const apiCalls = await s.console<{ id: string }[]>('GET', `/v1/accounts/${accountId}/campaigns/${/campaigns\/(.+)$/.exec(page.url())![1]}/reports/callDetails?range=[0,999]`);
      expect(calls).toBe(apiCalls.length);
      expect(await callRows.count()).toBe(Math.min(50, calls));
      expect(await summary(page, 'Answer rate').textContent()).toMatch(/^\d+\.\d%$/);
      await page.screenshot({ path: join(shots, 'campaign.png'), fullPage: true });

      // Back on the account: the counters in the campaigns table, the deliveries of the events the endpoint received.
      await page.getByRole('link', { name: 'Acme' }).click();
      await page.getByRole('heading', { name: 'Acme', level: 2 }).waitFor();
      await page.getByRole('row', { name: /Spring leads/ }).getByRole('cell', { name: String(calls), exact: true }).waitFor();
      expect(received.some((e) => e.type === 'campaign.state_changed')).toBe(true);
      await page.getByRole('button', { name: `Deliveries to ${receiverUrl}` }).click();
      await page.getByRole('region', { name: 'Recent deliveries' }).getByRole('cell', { name: 'delivered' }).first().waitFor();

      // An API key: its token shown once, copied, used against /v1, revoked, then refused with 403.
      const keyForm = page.locator('form', { has: page.getByRole('heading', { name: 'New API key' }) });
      await keyForm.getByLabel('Name').fill('CI');
      await keyForm.getByRole('button', { name: 'Create key' }).click();
      const tokenBox = page.getByRole('group', { name: 'API token of "CI"' });
      const token = await tokenBox.locator('input').inputValue();
      expect(token).toMatch(/^cdk_[A-Za-z0-9_-]{43}$/);
      await tokenBox.getByRole('button', { name: 'Copy' }).click();
      await page.getByRole('status').filter({ hasText: 'copied to the clipboard' }).waitFor();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(token);
      await page.screenshot({ path: join(shots, 'account.png'), fullPage: true });

      const campaignsUrl = `${s.url}/v1/accounts/${accountId}/campaigns`;
      const used = await fetch(campaignsUrl, { headers: { authorization: `Bearer ${token}` } });
      expect(used.status).toBe(200);
      expect((await used.json() as { name: string }[]).map((c) => c.name)).toEqual(['Spring leads']);
      await page.getByRole('button', { name: 'Revoke key CI' }).click();
      await page.getByRole('row', { name: /CI/ }).getByRole('cell', { name: /^revoked / }).waitFor();
      const refused = await fetch(campaignsUrl, { headers: { authorization: `Bearer ${token}` } });
      expect(refused.status).toBe(403);
      expect((await refused.json() as { detail: string }).detail).toMatch(/^This API key was deleted at /);

      // The endpoint deleted: gone from the list.
      await page.getByRole('button', { name: `Delete endpoint ${receiverUrl}` }).click();
      await page.getByRole('status').filter({ hasText: `Webhook endpoint ${receiverUrl} deleted.` }).waitFor();
      // The list is drawn again after the message: wait for it, then it holds only the empty note.
      const endpoints = page.getByRole('region', { name: 'Webhook endpoints' });
      await endpoints.getByText('No webhook endpoints yet.').waitFor();
      expect(await endpoints.getByText(receiverUrl).count()).toBe(0);

      // Readable on a phone: no sideways scrolling of the page itself.
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      await page.screenshot({ path: join(shots, 'phone.png'), fullPage: true });

      // Sign out: back to the sign-in page, and the old session is gone.
      await page.setViewportSize({ width: 1280, height: 900 });
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByText('You are signed out.').waitFor();
      const after = await fetch(`${s.url}/console/accounts`, { headers: { cookie: `${cookie.name}=${cookie.value}` } });
      expect(after.status).toBe(401);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  /** A signed-in page on server `t`, and the script errors it meets. */
  const signedIn = async (t: TestServer) => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${t.url}/console`);
    await page.getByLabel('Console token').fill(t.consoleToken);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Accounts', level: 2 }).waitFor();
    return { context, page, problems };
  };

  it('says which clock runs, and how fast', async () => {
    for (const [speed, label, title] of [[60, 'Virtual clock ×60', '60 simulated seconds per real second'], [1, 'Real-time clock', 'One simulated second per real second']] as const) {
      const t = await startServer({ clockMode: 'realtime', clockSpeed: speed });
      const { context, page, problems } = await signedIn(t);
      try {
        await page.locator('#clock-mode', { hasText: label }).waitFor();
        expect(await page.locator('#clock-mode').textContent()).toBe(label);
        expect(await page.locator('#clock-mode').getAttribute('title')).toBe(title);
        expect(await page.locator('#clock-advance').isHidden()).toBe(true);
        expect(problems).toEqual([]);
      } finally {
        await context.close();
        await t.close();
      }
    }
  }, 60_000);

  it('shows a not-found view for an address it cannot read, a route it does not have, or an account the server does not know', async () => {
    const { context, page, problems } = await signedIn(s);
    try {
      const notFound = page.getByRole('heading', { name: 'Not found', level: 2 });
      for (const [hash, text] of [
        ['#/accounts/%E0%A4%A', 'The console has no page at the address #/accounts/%E0%A4%A.'],
        ['#/accounts/x/keys', 'The console has no page at the address #/accounts/x/keys.'],
        ['#/accounts/no-such-account', 'Account "no-such-account" does not exist on this server'],
        ['#/accounts/no-such-account/campaigns/%ZZ', 'The console has no page at the address #/accounts/no-such-account/campaigns/%ZZ.'],
      ] as const) {
        await page.goto(`${s.url}/console${hash}`);
        await notFound.waitFor();
        await page.getByRole('main').getByText(text, { exact: true }).waitFor();
        // The way back is a link to the accounts; the same hash typed while on a page is handled the same way.
        await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Accounts' }).click();
        await page.getByRole('heading', { name: 'Accounts', level: 2 }).waitFor();
        await page.evaluate((h) => { location.hash = h; }, hash);
        await notFound.waitFor();
        expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Not found');
      }
      expect(await page.getByRole('alert').isHidden()).toBe(true);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
