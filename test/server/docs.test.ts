// /docs: the API reference page. Over HTTP its headers and files; in a real browser (Debian's Chromium via playwright-core)
// swagger-ui renders every operation of /v1/openapi.json from the server's own files, under the page's CSP, offline.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenApiDocument } from '../../api/openapi.ts';
import { launchChromium } from '../support/browser.ts';
import { documentedOperations } from '../support/openapi.ts';
import { startServer, type TestServer } from '../support/server.ts';

const SWAGGER_UI = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

let s: TestServer;
let browser: Browser;
let doc: OpenApiDocument;

beforeAll(async () => {
  [s, browser] = await Promise.all([startServer(), launchChromium()]);
  doc = await (await fetch(`${s.url}/v1/openapi.json`)).json() as OpenApiDocument;
});

afterAll(async () => {
  await browser?.close();
  await s?.close();
});

describe('/docs over HTTP', () => {
  it('serves the page with a CSP that allows no inline script and nothing from elsewhere', async () => {
    const res = await fetch(`${s.url}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    const html = await res.text();
    // Every script is a file of this server.
    expect([...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)].map((m) => [m[1]!.trim(), m[2]!.trim()]))
      .toEqual([['src="/docs/swagger-ui-bundle.js"', ''], ['src="/docs/init.js"', '']]);
    expect(html).not.toMatch(/https?:\/\//);
  });

  it('serves swagger-ui\'s files from node_modules, and nothing else under /docs/', async () => {
    const bundle = await fetch(`${s.url}/docs/swagger-ui-bundle.js`);
    expect(bundle.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(Buffer.from(await bundle.arrayBuffer()).equals(await readFile(join(SWAGGER_UI, 'swagger-ui-bundle.js')))).toBe(true);
    expect((await fetch(`${s.url}/docs/init.js`)).status).toBe(200);
    for (const path of ['/docs/package.json', '/docs/..%2Fpackage.json', '/docs/index.html', '/docs/swagger-initializer.js']) {
      const res = await fetch(`${s.url}${path}`);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    const slash = await fetch(`${s.url}/docs/`, { redirect: 'manual' });
    expect(slash.status).toBe(308);
    expect(slash.headers.get('location')).toBe('/docs');
  });
});

describe('the start-up banner', () => {
  it('links the reference page, and the link works', async () => {
    const child = spawn(process.execPath, [join(import.meta.dirname, '../../server/cli.ts'), '--port', '0', '--clock', 'manual'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const link = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          out += chunk;
          const m = /^API reference: (http:\/\/\S+\/docs)\s/m.exec(out);
          if (m) resolve(m[1]!);
        });
        child.on('exit', (code) => reject(new Error(`the server exited (${code}) before printing its banner:\n${out}`)));
      });
      const res = await fetch(link);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('/docs/swagger-ui-bundle.js');
    } finally {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    }
  });
});

describe('/docs in Chromium', () => {
  it('renders every operation of the document, with no request leaving the server and no CSP violation', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const requests: string[] = [];
      const problems: string[] = [];
      page.on('request', (r) => requests.push(r.url()));
      page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text()); });
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`${s.url}/docs`);

      const operations = documentedOperations(doc);
      await expect.poll(() => page.locator('.opblock').count(), { timeout: 20_000 }).toBe(operations.length);
      // Each block shows the operation's method, path, summary and operationId (displayOperationId), under its tag.
      const rendered = await page.locator('.opblock').evaluateAll((blocks) => blocks.map((b) => ({
        id: b.id,
        method: b.querySelector('.opblock-summary-method')?.textContent,
        path: b.querySelector('.opblock-summary-path')?.getAttribute('data-path'),
        summary: b.querySelector('.opblock-summary-description')?.textContent,
        operationId: b.querySelector('.opblock-summary-operation-id')?.textContent,
      })));
      expect(new Set(rendered)).toEqual(new Set(operations.map(({ method, path, op }) => ({
        id: `operations-${(op.tags as string[])[0]}-${op.operationId}`, method, path, summary: op.summary, operationId: op.operationId,
      }))));

      // Opening one shows its documented parameters and answers, filter keys included.
      const list = page.locator('#operations-Campaigns-listCampaigns');
      await list.locator('.opblock-summary-control').click();
      await list.locator('.responses-table').first().waitFor();
      const text = await list.textContent();
      for (const word of ['range', 'sort', 'filter', 'X-Total-Count', 'Content-Range', '429', 'callflowIds_ctn']) expect(text).toContain(word);

      const origin = new URL(s.url).origin;
      expect(requests.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith('data:'))).toEqual([]);
      expect(requests).toContain(`${origin}/v1/openapi.json`);
      expect(requests).toContain(`${origin}/docs/swagger-ui-bundle.js`);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
