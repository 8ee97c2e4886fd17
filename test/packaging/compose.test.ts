// deploy/compose.yaml end to end, with the commands its header and the README give a user: a copy of deploy/ with an
// .env made from .env.example, `compose up -d redis server`, ./reference-account.sh, `compose up -d`; the daemon syncs
// contacts.csv into the campaign by itself (at start) and mirrors the calls into its volume; Redis keeps an AOF;
// stopping exits 0; `compose down -v` takes it all away. With podman-compose (./dev test installs it) or docker
// compose; skipped without either. The images are ./dev image's (image.test.ts builds them; built here if missing).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineRun, engineTry, findEngine, imageExists, IMAGES, REDIS_IMAGE } from '../../packaging/engine.ts';
import { freePort, waitFor } from '../support/daemon.ts';
import { activities, callCount, numberCount, releaseTarballs, ROOT, VERSION } from '../support/shipped.ts';

const engine = findEngine();
const project = `cds-compose-${randomBytes(3).toString('hex')}`;

describe.skipIf(!engine?.compose)('deploy/compose.yaml', () => {
  let dir: string;
  const compose = (args: string[]) => execFileSync(engine!.compose![0]!, [...engine!.compose!.slice(1), '-p', project, ...args], {
    cwd: dir, env: engine!.env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
  });
  /** A service's container, by the labels both podman-compose and docker compose put on it. */
  const container = (service: string) => engineRun(engine!, ['ps', '-a', '--filter', `label=com.docker.compose.project=${project}`,
    '--filter', `label=com.docker.compose.service=${service}`, '--format', '{{.Names}}']).trim().split('\n')[0]!;
  const env = () => Object.fromEntries(readFileSync(join(dir, '.env'), 'utf8').split('\n').filter((l) => /^[A-Z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

  beforeAll(async () => {
    releaseTarballs();
    if (![...IMAGES.map((i) => `${i}:${VERSION}`), REDIS_IMAGE].every((i) => imageExists(engine!, i))) {
      execFileSync(process.execPath, [join(ROOT, 'packaging/image.ts')], { cwd: ROOT, stdio: 'inherit' });
    }
    dir = mkdtempSync(join(tmpdir(), 'compose-test-'));
    for (const f of ['compose.yaml', 'sync.yaml', '.env.example', 'contacts.csv', 'reference-account.sh']) cpSync(join(ROOT, 'deploy', f), join(dir, f));
    // What a user fills in: the secrets; and here ports of its own, this version's images and a dialer at 60x.
    const values: Record<string, string> = {
      VERSION, CONSOLE_TOKEN: `console_${randomBytes(16).toString('hex')}`, REDIS_PASSWORD: randomBytes(16).toString('hex'),
      SERVER_PORT: String(await freePort()), DAEMON_PORT: String(await freePort()), SERVER_SPEED: '60',
    };
    const example = readFileSync(join(dir, '.env.example'), 'utf8');
    writeFileSync(join(dir, '.env'), example.replace(/^([A-Z_]+)=.*$/gm, (line, name: string) => (name in values ? `${name}=${values[name]}` : line)));
  }, 900_000);

  afterAll(() => {
    if (!dir) return;
    try {
      compose(['down', '-v']);
    } catch { /* already down */ }
    // podman-compose 1.0.3 leaves the project's network behind.
    if (engine!.name === 'podman') engineTry(engine!, ['network', 'rm', '--force', `${project}_default`]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('syncs contacts.csv into the campaign and mirrors the calls, then goes down', async () => {
    compose(['up', '-d', 'redis', 'server']);
    execFileSync(join(dir, 'reference-account.sh'), { cwd: dir, stdio: 'pipe' });
    const e = env();
    expect(e.DIALER_API_TOKEN).toMatch(/^cdk_/);
    compose(['up', '-d']);

    const daemon = `http://127.0.0.1:${e.DAEMON_PORT}`;
    await waitFor(async () => (await fetch(`${daemon}/health`)).status === 200, 'the daemon to be healthy (Redis and the dialer reached)', 90_000)
      .catch((err: Error) => { throw new Error(`${err.message}\n${engineTry(engine!, ['logs', container('daemon')]).stdout.slice(-3000)}`); });

    const server = `http://127.0.0.1:${e.SERVER_PORT}`;
    const a = { accountId: e.DIALER_ACCOUNT_ID!, campaignId: e.CAMPAIGN_ID!, token: e.DIALER_API_TOKEN! };
    const contacts = readFileSync(join(dir, 'contacts.csv'), 'utf8').trim().split('\n').length - 1;
    // No command: the sync's schedule runs it once at start.
    await waitFor(async () => (await numberCount(server, a)) === contacts, `the campaign to hold contacts.csv's ${contacts} numbers`, 60_000);

    const read = () => activities(engineRun(engine!, ['exec', container('daemon'), 'sh', '-c', 'cat /var/lib/campaign-sync/activities.jsonl 2>/dev/null || true']));
    await waitFor(() => read().length >= 5, 'five calls mirrored into the daemon\'s volume', 90_000);
    const mirrored = read();
    expect(new Set(mirrored.map((x) => x.key)).size).toBe(mirrored.length);
    expect(await callCount(server, a)).toBeGreaterThanOrEqual(mirrored.length);

    const aof = engineRun(engine!, ['exec', container('redis'), 'redis-cli', '--no-auth-warning', '-a', e.REDIS_PASSWORD!, 'config', 'get', 'appendonly']);
    expect(aof.split('\n').map((l) => l.trim())).toContain('yes');

    compose(['stop', 'daemon', 'server']);
    for (const service of ['daemon', 'server']) {
      expect(engineRun(engine!, ['inspect', '--format', '{{.State.ExitCode}}', container(service)]).trim(), `${service} exit code`).toBe('0');
    }
    compose(['down', '-v']);
    expect(engineRun(engine!, ['ps', '-a', '--filter', `label=com.docker.compose.project=${project}`, '--format', '{{.Names}}']).trim()).toBe('');
  }, 300_000);
});
