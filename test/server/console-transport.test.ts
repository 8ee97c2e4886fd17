// The console's session cookie is Secure whenever the browser's request came over HTTPS: on the server's own TLS
// listener (--tls-cert, --tls-key), or through a reverse proxy named by --trust-proxy / TRUST_PROXY whose
// X-Forwarded-Proto says https. Anyone else's X-Forwarded-Proto is ignored, and the guessing limit stays per client.
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.ts';
import { refusedServerCli, startServerCli } from '../support/server-cli.ts';

const CONSOLE_TOKEN = 'console_transport-test-token';

/** Posts the sign-in form; the answer's status and Set-Cookie. */
async function signIn(base: string, token: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/console/session`, {
    method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams({ token }),
  });
  return { status: res.status, cookie: res.headers.get('set-cookie') };
}

describe('the console cookie behind a trusted proxy', () => {
  const servers: TestServer[] = [];
  afterAll(() => Promise.all(servers.map((s) => s.close())));
  const start = async (options: Parameters<typeof startServer>[0]) => {
    const s = await startServer(options);
    servers.push(s);
    return s;
  };

  it('is Secure when the trusted proxy says https, and only then', async () => {
    const proxied = await start({ trustProxy: ['127.0.0.1'] });
    const viaHttps = await signIn(proxied.url, proxied.consoleToken, { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.7' });
    expect(viaHttps.status).toBe(303);
    expect(viaHttps.cookie).toMatch(/; HttpOnly; SameSite=Strict; Secure$/);
    const viaHttp = await signIn(proxied.url, proxied.consoleToken, { 'x-forwarded-proto': 'http' });
    expect(viaHttp.cookie).not.toContain('Secure');

    // No proxy configured, or a request that did not come from the configured one: the header is anyone's word.
    for (const s of [await start({}), await start({ trustProxy: ['10.9.8.7'] })]) {
      const claimed = await signIn(s.url, s.consoleToken, { 'x-forwarded-proto': 'https' });
      expect(claimed.status).toBe(303);
      expect(claimed.cookie).not.toContain('Secure');
    }
  });

  it('keeps counting wrong tokens per client: the address the trusted proxy forwards', async () => {
    const s = await start({ trustProxy: ['127.0.0.1'], consoleSessions: { signInLimit: { rate: 1 / 60, burst: 1 } } });
    const from = (client: string) => ({ authorization: 'Bearer console_guess', 'x-forwarded-for': client });
    expect((await fetch(`${s.url}/console/accounts`, { headers: from('203.0.113.1') })).status).toBe(401);
    expect((await fetch(`${s.url}/console/accounts`, { headers: from('203.0.113.1') })).status).toBe(429);
    expect((await fetch(`${s.url}/console/accounts`, { headers: from('203.0.113.2') })).status).toBe(401);
  });
});

describe('the server CLI: --tls-cert/--tls-key and --trust-proxy', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'console-tls-'));
    // A throwaway self-signed certificate for 127.0.0.1, made here so that no key lives in the repository.
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('listens over TLS, and the session cookie it sets there is Secure', async () => {
    const server = await startServerCli(['--port', '0', '--clock', 'manual', '--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem')],
      { CONSOLE_TOKEN });
    try {
      expect(server.base).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const ca = await readFile(join(dir, 'cert.pem'));
      const answer = await new Promise<{ status: number; cookie: string | undefined }>((resolve, reject) => {
        const req = httpsRequest(`${server.base}/console/session`, {
          method: 'POST', ca, headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }, (res) => {
          res.resume();
          resolve({ status: res.statusCode!, cookie: res.headers['set-cookie']?.[0] });
        });
        req.on('error', reject);
        req.end(new URLSearchParams({ token: CONSOLE_TOKEN }).toString());
      });
      expect(answer.status).toBe(303);
      expect(answer.cookie).toMatch(/^cd_console_session=[A-Za-z0-9_-]{43}; .*; Secure$/);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, 60_000);

  it('takes the trusted proxy from TRUST_PROXY, and refuses what is not an address', async () => {
    const server = await startServerCli(['--port', '0', '--clock', 'manual'], { CONSOLE_TOKEN, TRUST_PROXY: '127.0.0.1, ::1' });
    try {
      expect(server.output()).toContain('Trusted proxies (X-Forwarded-Proto, X-Forwarded-For): 127.0.0.1, ::1');
      expect((await signIn(server.base, CONSOLE_TOKEN, { 'x-forwarded-proto': 'https' })).cookie).toContain('; Secure');
    } finally {
      expect(await server.stop()).toBe(0);
    }

    const [bad, half, wrong] = await Promise.all([
      refusedServerCli(['--port', '0', '--trust-proxy', '127.0.0.1,proxy.example,10.0.0.0/40']),
      refusedServerCli(['--port', '0', '--tls-cert', join(dir, 'cert.pem')]),
      refusedServerCli(['--port', '0', '--tls-cert', join(dir, 'key.pem'), '--tls-key', join(dir, 'cert.pem')]),
    ]);
    expect(bad.code).toBe(2);
    expect(bad.output).toContain('--trust-proxy (or TRUST_PROXY) takes the proxies\' IP addresses or CIDR ranges, comma-separated (or loopback); not proxy.example, 10.0.0.0/40');
    expect(half.code).toBe(2);
    expect(half.output).toContain('--tls-cert and --tls-key go together');
    expect(wrong.code).toBe(2);
    expect(wrong.output).toMatch(/^--tls-cert\/--tls-key: /m);
  }, 60_000);
});
