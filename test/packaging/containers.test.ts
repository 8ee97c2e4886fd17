// The container images and deploy/compose.yaml, in one file so that they run one after the other: ./dev image builds
// the images once (from release/'s tarballs; the base images are made once and kept by the engine), then
// - the images run as an operator runs them: read-only root, a non-root user, configuration from a mounted file and
//   secrets from the environment, state in the declared volumes; the same check as the installed tarballs: a CSV sync
//   fills a campaign, calls are mirrored, and stopping the containers (SIGTERM to tini, forwarded) exits 0, the daemon
//   within its shutdownTimeout. On the host network, where the machine's Redis listens (127.0.0.1 only, which the
//   default bridge does not reach);
// - deploy/compose.yaml end to end, with the commands its header and the README give a user: a copy of deploy/ with an
//   .env made from .env.example, `compose up -d redis server`, ./reference-account.sh, `compose up -d`; the daemon
//   syncs contacts.csv into the campaign by itself (at start) and mirrors the calls into its volume; Redis keeps an
//   AOF; Prometheus scrapes it with the shipped alert rules, and a sync the daemon refuses fires CampaignSyncRefused
//   within a minute; stopping exits 0; `compose down -v` takes it all away.
// With podman (./dev test installs it, and podman-compose) or docker; skipped without either.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineRun, engineTry, findEngine } from '../../packaging/engine.ts';
import { freePort, REDIS_URL, testPrefix, waitFor } from '../support/daemon.ts';
import { activities, answers200, callCount, contactsCsv, csvSyncConfig, dialerAccount, numberCount, releaseTarballs, ROOT, VERSION } from '../support/shipped.ts';

const engine = findEngine();

beforeAll(() => {
  if (!engine) return;
  releaseTarballs();
  execFileSync(process.execPath, [join(ROOT, 'packaging/image.ts')], { cwd: ROOT, stdio: 'inherit' });
}, 900_000);

const CONTACTS = 40;
const SHUTDOWN_TIMEOUT_MS = 10_000;
/** The images' user: the volumes' folders are given to it, as a named volume would be. */
const UID = 10001;
const run = randomBytes(3).toString('hex');
const names = { server: `cds-test-server-${run}`, daemon: `cds-test-daemon-${run}` };

describe.skipIf(!engine)('the container images', () => {
  const redis = testPrefix();
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'image-test-'));
  });

  afterAll(async () => {
    for (const name of Object.values(names)) engineTry(engine!, ['rm', '--force', '--time', '0', name]);
    await redis.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A folder mounted as a volume, owned by the images' user. */
  function volume(name: string): string {
    const path = join(dir, name);
    mkdirSync(path);
    chownSync(path, UID, UID);
    return path;
  }

  const exitCode = (name: string) => Number(engineRun(engine!, ['inspect', '--format', '{{.State.ExitCode}}', name]).trim());
  const healthcheck = (name: string) => engineTry(engine!, engine!.name === 'podman' ? ['healthcheck', 'run', name] : ['inspect', '--format', '{{.State.Health.Status}}', name]);

  it('carry their version, OCI labels and a non-root user', () => {
    for (const image of ['campaign-sync', 'campaign-dialing-server']) {
      const [config] = JSON.parse(engineRun(engine!, ['image', 'inspect', `${image}:${VERSION}`])) as Array<{ Config: { User: string; Labels: Record<string, string> } }>;
      expect(config!.Config.User).toBe(`${UID}:${UID}`);
      expect(config!.Config.Labels).toMatchObject({
        'org.opencontainers.image.version': VERSION, 'org.opencontainers.image.licenses': 'MIT', 'org.opencontainers.image.title': image,
        'org.opencontainers.image.source': expect.stringMatching(/^https:\/\/github\.com\//),
      });
      expect(engineRun(engine!, ['run', '--rm', `${image}:${VERSION}`, '--version']).trim()).toBe(VERSION);
    }
  });

  it('run: healthy, a CSV sync fills the campaign, calls are mirrored, stopping exits 0', async () => {
    const serverPort = await freePort();
    const consoleToken = `console_${randomBytes(16).toString('hex')}`;
    const serverData = volume('server-data');
    const started = Date.now();
    engineRun(engine!, ['run', '--detach', '--name', names.server, '--network', 'host', '--read-only',
      '-e', `PORT=${serverPort}`, '-e', `CONSOLE_TOKEN=${consoleToken}`, '-v', `${serverData}:/var/lib/campaign-dialing-server`,
      `campaign-dialing-server:${VERSION}`, '--host', '127.0.0.1', '--db', '/var/lib/campaign-dialing-server/server.db', '--speed', '60']);
    const base = `http://127.0.0.1:${serverPort}`;
    await waitFor(() => answers200(`${base}/health`), 'the server container to answer /health', 60_000);
    console.log(`image test: campaign-dialing-server answered /health ${Date.now() - started} ms after \`${engine!.name} run\``);
    expect(healthcheck(names.server).status).toBe(0);
    expect(existsSync(join(serverData, 'server.db'))).toBe(true);
    const a = await dialerAccount(base, consoleToken);

    const daemonPort = await freePort();
    const data = join(dir, 'data');
    mkdirSync(data);
    writeFileSync(join(data, 'contacts.csv'), contactsCsv(CONTACTS));
    const state = volume('daemon-state');
    const config = join(dir, 'sync.json');
    writeFileSync(config, JSON.stringify(csvSyncConfig({
      redisUrl: REDIS_URL, prefix: redis.prefix, dialer: base, a, csv: '/data/contacts.csv', activities: '/var/lib/campaign-sync/activities.jsonl',
      port: daemonPort, shutdownTimeout: `${SHUTDOWN_TIMEOUT_MS / 1000}s`,
    })));
    const daemonStarted = Date.now();
    engineRun(engine!, ['run', '--detach', '--name', names.daemon, '--network', 'host', '--read-only',
      '-e', `DIALER_API_TOKEN=${a.token}`, '-e', `HEALTH_PORT=${daemonPort}`,
      '-v', `${config}:/etc/campaign-sync/sync.yaml:ro`, '-v', `${data}:/data:ro`, '-v', `${state}:/var/lib/campaign-sync`,
      `campaign-sync:${VERSION}`]);
    await waitFor(() => answers200(`http://127.0.0.1:${daemonPort}/health`), 'the daemon container to be healthy', 60_000)
      .catch((err: Error) => { throw new Error(`${err.message}\n${engineTry(engine!, ['logs', names.daemon]).stdout}`); });
    console.log(`image test: campaign-sync answered /health 200 ${Date.now() - daemonStarted} ms after \`${engine!.name} run\``);
    expect(healthcheck(names.daemon).status).toBe(0);

    const sync = engineTry(engine!, ['exec', names.daemon, '/opt/campaign-sync/node_modules/.bin/campaign-sync', 'sync', 'contacts', '--config', '/etc/campaign-sync/sync.yaml']);
    expect(sync.status, `${sync.stdout}${sync.stderr}`).toBe(0);
    expect(await numberCount(base, a)).toBe(CONTACTS);

    const sink = join(state, 'activities.jsonl');
    await waitFor(async () => existsSync(sink) && activities(readFileSync(sink, 'utf8')).length >= 5, 'five calls mirrored', 60_000);
    const mirrored = activities(readFileSync(sink, 'utf8'));
    expect(new Set(mirrored.map((x) => x.key)).size).toBe(mirrored.length);
    expect(await callCount(base, a)).toBeGreaterThanOrEqual(mirrored.length);

    const stats = engineTry(engine!, ['stats', '--no-stream', '--format', '{{.MemUsage}}', names.daemon]);
    if (stats.status === 0) console.log(`image test: campaign-sync container memory after the sync: ${stats.stdout.trim()}`);

    const stopping = Date.now();
    engineRun(engine!, ['stop', '--time', '30', names.daemon]);
    expect(Date.now() - stopping).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(exitCode(names.daemon), engineTry(engine!, ['logs', names.daemon]).stdout.slice(-2000)).toBe(0);
    expect(engineTry(engine!, ['logs', names.daemon]).stdout).toMatch(/"msg":"stopping"/);
    engineRun(engine!, ['stop', '--time', '30', names.server]);
    expect(exitCode(names.server)).toBe(0);
  }, 300_000);
});

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
    dir = mkdtempSync(join(tmpdir(), 'compose-test-'));
    for (const f of ['compose.yaml', 'sync.yaml', '.env.example', 'contacts.csv', 'reference-account.sh', 'prometheus']) cpSync(join(ROOT, 'deploy', f), join(dir, f), { recursive: true });
    // What a user fills in: the secrets; and here ports of its own, this version's images and a dialer at 60x.
    const values: Record<string, string> = {
      VERSION, CONSOLE_TOKEN: `console_${randomBytes(16).toString('hex')}`, REDIS_PASSWORD: randomBytes(16).toString('hex'),
      SERVER_PORT: String(await freePort()), DAEMON_PORT: String(await freePort()), PROMETHEUS_PORT: String(await freePort()), SERVER_SPEED: '60',
    };
    const example = readFileSync(join(dir, '.env.example'), 'utf8');
    writeFileSync(join(dir, '.env'), example.replace(/^([A-Z_]+)=.*$/gm, (line, name: string) => (name in values ? `${name}=${values[name]}` : line)));
  });

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
    await waitFor(() => answers200(`${daemon}/health`), 'the daemon to be healthy (Redis and the dialer reached)', 90_000)
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

    // Prometheus beside it, with the shipped rules: a sync whose key lacks Campaign Admin under the calling-window
    // rules is refused at the start, and the alert fires within a minute.
    const prometheus = `http://127.0.0.1:${e.PROMETHEUS_PORT}`;
    await waitFor(async () => {
      const targets = await (await fetch(`${prometheus}/api/v1/targets`)).json() as { data: { activeTargets: { labels: { job: string }; health: string }[] } };
      return targets.data.activeTargets.some((t) => t.labels.job === 'campaign-sync' && t.health === 'up');
    }, 'Prometheus scraping the daemon', 90_000);
    writeFileSync(join(dir, 'sync.yaml'), readFileSync(join(dir, 'sync.yaml'), 'utf8').replace(/^syncs:\n/m, `syncs:
  - id: windowed
    campaignId: \${CAMPAIGN_ID}
    source: { type: csv, path: /data/contacts.csv }
    mapping: { id: id, phone: phone, defaultCountry: US }
    compliance: {}
`));
    compose(['restart', 'daemon']);
    const restarted = Date.now();
    const alerts = async () => ((await (await fetch(`${prometheus}/api/v1/alerts`)).json()) as { data: { alerts: { labels: Record<string, string>; state: string }[] } }).data.alerts;
    const fired = await waitFor(async () => (await alerts()).find((a) => a.labels.alertname === 'CampaignSyncRefused' && a.labels.sync === 'windowed' && a.state === 'firing'),
      'the CampaignSyncRefused alert firing for the refused sync', 120_000);
    const seconds = (Date.now() - restarted) / 1000;
    console.log(`compose: CampaignSyncRefused fired ${seconds.toFixed(0)} s after the daemon restarted with the refused sync (check ${fired.labels.check})`);
    expect(fired.labels).toMatchObject({ severity: 'critical', check: 'dialer.state' });
    // The daemon's start, its first scrape (15 s), the rule's 15 s and its evaluation (15 s).
    expect(seconds).toBeLessThan(60);
    // The other sync is not refused: no alert names it.
    expect((await alerts()).filter((a) => a.labels.alertname === 'CampaignSyncRefused' && a.labels.sync === 'contacts')).toEqual([]);

    compose(['stop', 'daemon', 'server']);
    for (const service of ['daemon', 'server']) {
      expect(engineRun(engine!, ['inspect', '--format', '{{.State.ExitCode}}', container(service)]).trim(), `${service} exit code`).toBe('0');
    }
    compose(['down', '-v']);
    expect(engineRun(engine!, ['ps', '-a', '--filter', `label=com.docker.compose.project=${project}`, '--format', '{{.Names}}']).trim()).toBe('');
  }, 300_000);
});
