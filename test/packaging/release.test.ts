// The release tarballs as a user gets them: installed into an empty folder with plain npm (no repository files, no
// tsx, no dev dependencies), the server and the daemon started from there by their bins; a CSV sync fills a
// campaign, its calls are mirrored, and SIGTERM ends both with 0 (the daemon within its shutdownTimeout).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, testPrefix, waitFor } from '../support/daemon.ts';
import { activities, answers200, callCount, contactsCsv, csvSyncConfig, dialerAccount, installRelease, numberCount, startInstalled, VERSION, type DialerAccount, type Installed } from '../support/shipped.ts';

const CONTACTS = 40;
const SHUTDOWN_TIMEOUT_MS = 10_000;
const CONSOLE_TOKEN = `console_${randomBytes(16).toString('hex')}`;

let installed: Installed;
let dir: string;
const redis = testPrefix();

const start = (bin: string, args: string[], env: Record<string, string> = {}) => startInstalled(installed, [bin, ...args], env);

beforeAll(() => {
  // As the README says: npm install ./<tarball>, in an empty folder, with the Node on PATH and nothing else.
  installed = installRelease('release-test-');
  dir = installed.dir;
}, 300_000);

afterAll(async () => {
  installed?.cleanup();
  await redis.cleanup();
});

describe('the installed packages', () => {
  it('hold compiled JavaScript, their run-time dependencies and nothing of the repository', () => {
    for (const name of ['campaign-sync', 'campaign-dialing-server']) {
      const pkg = join(dir, 'node_modules', name);
      const manifest = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as { version: string; devDependencies?: unknown; private?: boolean };
      expect(manifest.version).toBe(VERSION);
      expect(manifest.devDependencies).toBeUndefined();
      const files = readdirSync(pkg, { recursive: true }).map(String);
      expect(files.filter((f) => f.endsWith('.ts') || /(^|\/)(test|bench|crm-stand-ins|demo)(\/|$)/.test(f))).toEqual([]);
    }
    // No development tools came along: no TypeScript, no vitest, no tsx.
    for (const tool of ['typescript', 'vitest', 'tsx', 'n8n-workflow']) expect(existsSync(join(dir, 'node_modules', tool)), tool).toBe(false);
    expect(execFileSync(join(dir, 'node_modules/.bin/campaign-sync'), ['--version'], { encoding: 'utf8' }).trim()).toBe(VERSION);
    expect(execFileSync(join(dir, 'node_modules/.bin/campaign-dialing-server'), ['--version'], { encoding: 'utf8' }).trim()).toBe(VERSION);
    // Their help names the installed command, not the checkout's ./dev or npm run (the environment a shell gives: no
    // npm_command, which npx would set, and then the help says npx campaign-sync).
    const shell = { encoding: 'utf8' as const, env: { PATH: process.env.PATH!, HOME: dir } };
    const help = execFileSync(join(dir, 'node_modules/.bin/campaign-sync'), ['help'], shell);
    expect(help).toContain('usage: campaign-sync <command>');
    expect(help).not.toContain('./dev daemon');
    const serverHelp = execFileSync(join(dir, 'node_modules/.bin/campaign-dialing-server'), ['--help'], shell);
    expect(serverHelp).toMatch(/^usage: campaign-dialing-server \[--port 4000\]/);
    expect(serverHelp).not.toMatch(/npm run|\.\/dev/);
  });

  it('run: a CSV sync fills the campaign, calls are mirrored, SIGTERM exits 0 within shutdownTimeout', async () => {
    // How long each step took, printed at the end: a slow run says where.
    let last = Date.now();
    const steps: string[] = [];
    const step = (what: string) => { steps.push(`${what} ${Date.now() - last} ms`); last = Date.now(); };
    // The server with a file database (its checkpoint and page-reader threads start), on a clock at 60x.
    const server = start('campaign-dialing-server', ['--port', '0', '--db', join(dir, 'server.db'), '--speed', '60'], { CONSOLE_TOKEN });
    const base = (await server.line(/^Web console: (http:\/\/\S+)\/console /m))[1]!;
    expect(await answers200(`${base}/health`)).toBe(true);
    // The /docs page (swagger-ui-dist from node_modules) and the console's files are served from the install.
    expect(await answers200(`${base}/docs/swagger-ui-bundle.js`)).toBe(true);
    expect(await answers200(`${base}/console/assets/console.js`)).toBe(true);
    const a: DialerAccount = await dialerAccount(base, CONSOLE_TOKEN);
    step('server up');

    // The server's CSV worker thread, through the console's upload, into a Static campaign of its own.
    const asConsole = { authorization: `Bearer ${CONSOLE_TOKEN}` };
    const list = await (await fetch(`${base}/console/accounts/${a.accountId}/campaigns`, { method: 'POST', headers: { ...asConsole, 'content-type': 'application/json' }, body: '{"name":"Uploaded"}' })).json() as { id: string };
    const upload = new FormData();
    upload.set('file', new Blob(['number,name\n+12125550100,Ann\n+12125550101,Bob\n']), 'numbers.csv');
    const uploaded = await fetch(`${base}/console/accounts/${a.accountId}/campaigns/${list.id}/numbers/upload`, { method: 'POST', headers: asConsole, body: upload });
    expect(uploaded.status, await uploaded.clone().text()).toBe(201);
    expect(await uploaded.json()).toMatchObject({ createdCount: 2 });
    step('upload');

    const csv = join(dir, 'contacts.csv');
    writeFileSync(csv, contactsCsv(CONTACTS));
    const sink = join(dir, 'activities.jsonl');
    const config = join(dir, 'sync.json');
    writeFileSync(config, JSON.stringify(csvSyncConfig({ redisUrl: REDIS_URL, prefix: redis.prefix, dialer: base, a, csv, activities: sink, shutdownTimeout: `${SHUTDOWN_TIMEOUT_MS / 1000}s` })));
    const env = { DIALER_API_TOKEN: a.token };

    const daemon = start('campaign-sync', ['start', '--config', config], env);
    const address = JSON.parse((await daemon.line(/^.*"msg":"daemon listening".*$/m))[0]) as { address: string };
    await waitFor(() => answers200(`${address.address}/health`), 'the daemon to be healthy');
    step('daemon healthy');

    // The one-shot command from the same install: runs the sync and waits until its numbers are pushed.
    const sync = start('campaign-sync', ['sync', 'contacts', '--config', config], env);
    const [code] = await sync.exited;
    expect(code, sync.output()).toBe(0);
    expect(await numberCount(base, a)).toBe(CONTACTS);
    step('sync');

    // Calls on the simulated dialer, mirrored by the daemon's file sink: each call-detail record once.
    await waitFor(async () => existsSync(sink) && activities(readFileSync(sink, 'utf8')).length >= 5, 'five calls mirrored', 60_000);
    const mirrored = activities(readFileSync(sink, 'utf8'));
    expect(new Set(mirrored.map((x) => x.key)).size).toBe(mirrored.length);
    expect(await callCount(base, a)).toBeGreaterThanOrEqual(mirrored.length);
    step('calls mirrored');

    const stopping = Date.now();
    daemon.child.kill('SIGTERM');
    const [daemonCode, daemonSignal] = await daemon.exited;
    expect({ code: daemonCode, signal: daemonSignal }, daemon.output().slice(-2000)).toEqual({ code: 0, signal: null });
    expect(Date.now() - stopping).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    step('daemon stopped');

    server.child.kill('SIGTERM');
    const [serverCode] = await server.exited;
    expect(serverCode, server.output()).toBe(0);
    step('server stopped');
    console.log(`release test: ${steps.join(', ')}`);
  }, 180_000);
});
