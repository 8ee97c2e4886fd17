// `./dev server --log` as its own process: the banner names the web console's address, and no token pasted into a URL
// (an API token, the console token, a webhook secret, plain or percent-encoded, in the query or the path) reaches the log.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REDACTED, redactUrl } from '../../server/log-redaction.ts';

const ROOT = join(import.meta.dirname, '..', '..');
/** A console token with characters that a URL escapes, so both of its forms are tried. */
const CONSOLE_TOKEN = 'op+Secret/Console=Token-7f3k9q';
const API_TOKEN = `cdk_${'Ab3_-x'.repeat(7)}Z`;
const WEBHOOK_SECRET = 'whsec_c2VjcmV0IHNpZ25pbmcga2V5IGZvciB0ZXN0cw==';

describe('server CLI with --log', () => {
  let child: ChildProcess | null = null;
  afterAll(() => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  it('prints the web console address and logs every URL with its tokens redacted', async () => {
    const proc = spawn(process.execPath, ['server/cli.ts', '--port', '0', '--clock', 'manual', '--log', '--rate-limit', 'off'], {
      cwd: ROOT, env: { ...process.env, CONSOLE_TOKEN }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
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

    await until(() => /Web console: (http:\/\/\S+)\/console /.test(out), 'printing the console address');
    const base = /Web console: (http:\/\/\S+)\/console /.exec(out)![1]!;
    expect(out).toContain(`Web console: ${base}/console  (sign in with the console token)`);
    await until(() => out.includes('Console token: from CONSOLE_TOKEN'), 'saying where the console token came from');

    const paths = [
      `/v1/accounts/a/campaigns?token=${API_TOKEN}&range=[0,9]`,
      `/v1/accounts/a/campaigns?range=[0,9]&t=${API_TOKEN.replace('_', '%5F')}`,
      `/console?login=${encodeURIComponent(CONSOLE_TOKEN)}`,
      `/console?login=${CONSOLE_TOKEN}`,
      `/docs?apikey=just-a-value&secret=${encodeURIComponent(WEBHOOK_SECRET)}`,
      `/v1/accounts/${API_TOKEN}/campaigns`,
      `/console/accounts?note=prefix-${API_TOKEN}-suffix`,
    ];
    for (const path of paths) await (await fetch(base + path)).arrayBuffer();
    const logged = () => out.split('\n').filter((l) => l.includes('"incoming request"'));
    await until(() => logged().length >= paths.length, 'logging every request');

    const urls = logged().map((l) => (JSON.parse(l) as { req: { url: string } }).req.url);
    expect(urls).toHaveLength(paths.length);
    for (const secret of [API_TOKEN, API_TOKEN.slice(4), CONSOLE_TOKEN, encodeURIComponent(CONSOLE_TOKEN), 'Secret/Console', WEBHOOK_SECRET.slice(6, 30), 'just-a-value']) {
      expect(out).not.toContain(secret);
    }
    for (const url of urls) expect(url).toContain(REDACTED);
    expect(urls[0]).toBe(`/v1/accounts/a/campaigns?token=${REDACTED}&range=[0,9]`);
    expect(urls[5]).toBe(`/v1/accounts/cdk_${REDACTED}/campaigns`);

    proc.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => (proc.exitCode !== null ? r(proc.exitCode) : proc.once('exit', (c) => r(c))));
    expect(code).toBe(0);
  }, 60_000);

  it('redacts by shape, by parameter name and by the console token, and leaves other URLs alone', () => {
    expect(redactUrl('/v1/accounts/a/campaigns?range=[0,9]&filter={"name":"x"}', 'console-token-of-the-test')).toBe('/v1/accounts/a/campaigns?range=[0,9]&filter={"name":"x"}');
    expect(redactUrl('/x?access_token=abc', 'console-token-of-the-test')).toBe(`/x?access_token=${REDACTED}`);
    expect(redactUrl('/x?a=1&b=my-console-token', 'my-console-token')).toBe(`/x?a=1&b=${REDACTED}`);
    expect(redactUrl('/x?q=console_AbCdEf0123456789', 'other')).toBe(`/x?q=${REDACTED}`);
    expect(redactUrl('/x?q=a%20b', 'other')).toBe('/x?q=a%20b');
  });
});
