// `./dev server` as its own process: the banner names the web console's address; with --log no token pasted into a URL
// (an API token, the console token, a webhook secret, plain or percent-encoded, in the query or the path) reaches the
// log; without it (as `./dev start` runs it) a 500 is still logged, with its stack, and redacted too.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { REDACTED, redactSecrets, redactUrl } from '../../server/log-redaction.ts';

const ROOT = join(import.meta.dirname, '..', '..');
/** A console token with characters that a URL escapes, so both of its forms are tried. */
const CONSOLE_TOKEN = 'op+Secret/Console=Token-7f3k9q';
const API_TOKEN = `cdk_${'Ab3_-x'.repeat(7)}Z`;
const WEBHOOK_SECRET = 'whsec_c2VjcmV0IHNpZ25pbmcga2V5IGZvciB0ZXN0cw==';

const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** `server/cli.ts ARGS` with the test's console token: its output so far, and a wait for what it should say. */
function startCli(args: string[]) {
  const proc = spawn(process.execPath, ['server/cli.ts', ...args], {
    cwd: ROOT, env: { ...process.env, CONSOLE_TOKEN }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(proc);
  let out = '';
  const waiters: (() => void)[] = [];
  const onData = (c: Buffer) => {
    out += c.toString();
    for (const w of waiters.splice(0)) w();
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  const until = async (test: () => boolean, what: string) => {
    while (!test()) {
      if (proc.exitCode !== null) throw new Error(`the server exited (${proc.exitCode}) before ${what}:\n${out}`);
      await new Promise<void>((r) => waiters.push(r));
    }
  };
  const stop = async () => {
    proc.kill('SIGTERM');
    return new Promise<number | null>((r) => (proc.exitCode !== null ? r(proc.exitCode) : proc.once('exit', (c) => r(c))));
  };
  return { proc, out: () => out, until, stop };
}

describe('server CLI with --log', () => {
  it('prints the web console address and logs every URL with its tokens redacted', async () => {
    const cli = startCli(['--port', '0', '--clock', 'manual', '--log', '--rate-limit', 'off']);
    await cli.until(() => /Web console: (http:\/\/\S+)\/console /.test(cli.out()), 'printing the console address');
    const base = /Web console: (http:\/\/\S+)\/console /.exec(cli.out())![1]!;
    expect(cli.out()).toContain(`Web console: ${base}/console  (sign in with the console token)`);
    await cli.until(() => cli.out().includes('Console token: from CONSOLE_TOKEN'), 'saying where the console token came from');

    const paths = [
      `/v1/accounts/a/campaigns?token=${API_TOKEN}&range=[0,9]`,
      `/v1/accounts/a/campaigns?range=[0,9]&t=${API_TOKEN.replace('_', '%5F')}`,
      `/console?login=${encodeURIComponent(CONSOLE_TOKEN)}`,
      `/console?login=${CONSOLE_TOKEN}`,
      `/docs?apikey=just-a-value&secret=${encodeURIComponent(WEBHOOK_SECRET)}`,
      `/v1/accounts/${API_TOKEN}/campaigns`,
      `/console/accounts?note=prefix-${API_TOKEN}-suffix`,
      // one letter percent-encoded, in the path and in a query name
      `/v1/accounts/%63dk_${API_TOKEN.slice(4)}/campaigns`,
      `/console/%63onsole_${API_TOKEN.slice(4)}`,
      `/console/accounts?%63dk_${API_TOKEN.slice(4)}=1`,
      // the console token with one character escaped and another not
      `/console/${CONSOLE_TOKEN.replace('+', '%2B')}`,
    ];
    for (const path of paths) await (await fetch(base + path)).arrayBuffer();
    const logged = () => cli.out().split('\n').filter((l) => l.includes('"incoming request"'));
    await cli.until(() => logged().length >= paths.length, 'logging every request');
    // A request carrying a W3C traceparent (the sync daemon sends one while tracing) logs under the caller's trace.
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    await (await fetch(`${base}/v1/accounts/a/campaigns?range=[0,0]`, { headers: { traceparent } })).arrayBuffer();
    await (await fetch(`${base}/v1/accounts/a/campaigns?range=[0,1]`, { headers: { traceparent: 'not-a-traceparent' } })).arrayBuffer();
    await cli.until(() => logged().length >= paths.length + 2, 'logging the traced requests');
    const traced = logged().slice(paths.length).map((l) => JSON.parse(l) as { trace_id?: string; span_id?: string });
    expect(traced[0]).toMatchObject({ trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7' });
    expect(traced[1]!.trace_id).toBeUndefined();
    expect(logged().slice(0, paths.length).every((l) => !l.includes('trace_id'))).toBe(true);

    const urls = logged().slice(0, paths.length).map((l) => (JSON.parse(l) as { req: { url: string } }).req.url);
    expect(urls).toHaveLength(paths.length);
    for (const secret of [API_TOKEN, API_TOKEN.slice(4), CONSOLE_TOKEN, encodeURIComponent(CONSOLE_TOKEN), 'Secret/Console', WEBHOOK_SECRET.slice(6, 30), 'just-a-value']) {
      expect(cli.out()).not.toContain(secret);
    }
    for (const url of urls) expect(url).toContain(REDACTED);
    expect(urls[0]).toBe(`/v1/accounts/a/campaigns?token=${REDACTED}&range=[0,9]`);
    expect(urls[5]).toBe(`/v1/accounts/cdk_${REDACTED}/campaigns`);
    expect(urls[7]).toBe(`/v1/accounts/cdk_${REDACTED}/campaigns`);
    expect(urls[8]).toBe(`/console/console_${REDACTED}`);
    expect(urls[10]).toBe(`/console/${REDACTED}`);

    expect(await cli.stop()).toBe(0);
  }, 60_000);

  it('redacts by shape, by parameter name and by the console token, and leaves other URLs alone', () => {
    expect(redactUrl('/v1/accounts/a/campaigns?range=[0,9]&filter={"name":"x"}', 'console-token-of-the-test')).toBe('/v1/accounts/a/campaigns?range=[0,9]&filter={"name":"x"}');
    expect(redactUrl('/x?access_token=abc', 'console-token-of-the-test')).toBe(`/x?access_token=${REDACTED}`);
    expect(redactUrl('/x?a=1&b=my-console-token', 'my-console-token')).toBe(`/x?a=1&b=${REDACTED}`);
    expect(redactUrl('/x?q=console_AbCdEf0123456789', 'other')).toBe(`/x?q=${REDACTED}`);
    expect(redactUrl('/x?q=a%20b', 'other')).toBe('/x?q=a%20b');
    // percent-encoded letters, also beside an escape that is not UTF-8
    expect(redactUrl('/campaigns/%63dk_AbC%2d9', 'other')).toBe(`/campaigns/cdk_${REDACTED}`);
    expect(redactUrl('/campaigns/%FF%63dk_AbC', 'other')).toBe(`/campaigns/%FFcdk_${REDACTED}`);
    expect(redactUrl('/x?q=%77hsec_YWJj%2B', 'other')).toBe(`/x?q=${REDACTED}`);
    expect(redactUrl('/x/%6dy-console-token/y', 'my-console-token')).toBe(`/x/${REDACTED}/y`);
    expect(redactUrl('/x/a%20b?c=d%2Fe', 'other')).toBe('/x/a%20b?c=d%2Fe');
    // free text: an error's message or stack
    expect(redactSecrets(`Error: no key cdk_AbC in /x?t=%63onsole_Zz9\n    at f (file.ts:1:2)`, 'other'))
      .toBe(`Error: no key cdk_${REDACTED} in /x?t=console_${REDACTED}\n    at f (file.ts:1:2)`);
  });
});

describe('server CLI without --log, as ./dev start runs it', () => {
  it('logs a 500 with its stack and its request, redacted, and nothing else', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdk-log-'));
    const db = join(dir, 'server.db');
    try {
      const cli = startCli(['--port', '0', '--clock', 'manual', '--db', db]);
      await cli.until(() => /listening on (http:\/\/\S+)/.test(cli.out()), 'listening');
      const base = /listening on (http:\/\/\S+)/.exec(cli.out())![1]!;
      const consoleCall = async (path: string, body: unknown) => {
        const res = await fetch(`${base}/console${path}`, {
          method: 'POST', headers: { authorization: `Bearer ${CONSOLE_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
        });
        expect(res.status, path).toBe(201);
        return res.json() as Promise<{ id: string; token: string }>;
      };
      const account = await consoleCall('/accounts', { name: 'Acme', timezone: 'Europe/Berlin' });
      const campaign = await consoleCall(`/accounts/${account.id}/campaigns`, { name: 'C' });
      const key = await consoleCall(`/accounts/${account.id}/apiKeys`, { name: 'k', roles: ['CampaignAdmin'] });

      // Another process holds the database's write lock: the server's write fails after its busy timeout (5 s).
      const other = new DatabaseSync(db);
      other.exec('PRAGMA busy_timeout=5000; BEGIN IMMEDIATE');
      let res: Response;
      try {
        res = await fetch(`${base}/v1/accounts/${account.id}/campaigns/${campaign.id}/duplicate?newCampaignName=${API_TOKEN}`,
          { method: 'POST', headers: { authorization: `Bearer ${key.token}` } });
      } finally {
        other.exec('ROLLBACK');
        other.close();
      }
      expect(res.status).toBe(500);
      expect((await res.json()).detail).toBe('The server failed to handle this request; the error has been logged');

      const lines = () => cli.out().split('\n').filter((l) => l.startsWith('{'));
      await cli.until(() => lines().some((l) => l.includes('"unhandled error"')), 'logging the 500');
      expect(lines()).toHaveLength(1);
      const entry = JSON.parse(lines()[0]!) as { level: number; msg: string; req: { method: string; url: string }; err: { message: string; stack: string } };
      expect(entry.level).toBe(50);
      expect(entry.req).toMatchObject({ method: 'POST', url: `/v1/accounts/${account.id}/campaigns/${campaign.id}/duplicate?newCampaignName=${REDACTED}` });
      expect(entry.err.message).toBe('database is locked');
      expect(entry.err.stack).toMatch(/^Error: database is locked\n\s+at /);
      expect(cli.out()).not.toContain(API_TOKEN.slice(4));
      expect(cli.out()).not.toContain(key.token);
      expect(await cli.stop()).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
