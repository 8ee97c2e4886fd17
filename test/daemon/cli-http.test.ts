// The daemon from outside: its CLI as a child process, its HTTP side (health, metrics, webhooks under garbage), what its logs never hold, SIGTERM.
import type { RedisClient } from '../../daemon/state/connection.ts';
import { spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePeople, validPhone } from '../../crm-stand-ins/contacts.ts';
import { signHubSpotV3, startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { startPipedriveStandIn, type PipedriveStandIn } from '../../crm-stand-ins/pipedrive.ts';
import { Daemon } from '../../daemon/app.ts';
import { parseConfig, type Config } from '../../daemon/config.ts';
import { createLogger } from '../../daemon/log.ts';
import { readRun } from '../../daemon/sync/run.ts';
import { SyncKeys, campaignKey } from '../../daemon/state/keys.ts';
import type { RunRecord } from '../../daemon/state/sync-state.ts';
import { REDIS_URL, campaignNumbers, daemonConfig, dialerFixture, freePort, quietLog, RULES_OFF, startRedisServer, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { createCampaign } from '../support/server.ts';
import { daemonCli as cli, type CliExit as Exit } from '../support/cli.ts';

/** This checkout's root: the CLI under test is the one beside these tests. */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONTACTS = 20;
const HS_TOKEN = `pat-na1-${randomBytes(8).toString('hex')}`;
const HS_CLIENT_SECRET = `hs-secret-${randomBytes(8).toString('hex')}`;
const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('base64')}`;

/** The JSON document a command printed (starting at a line that opens it), beside any log lines. */
function printedJson(stdout: string): any {
  const start = stdout.search(/^[[{]$/m);
  if (start < 0) throw new Error(`no JSON in the output:\n${stdout}`);
  const opener = stdout[start]!;
  const end = stdout.indexOf(`\n${opener === '{' ? '}' : ']'}`, start);
  return JSON.parse(stdout.slice(start, end + 2));
}

/** A port nothing listens on (a server had it a moment ago). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

function hubspotSync(hs: HubSpotStandIn, campaignId: string, accessToken = hs.token): Record<string, unknown> {
  return {
    id: 'hs', campaignId,
    source: { type: 'hubspot', baseUrl: hs.url, accessToken, clientSecret: HS_CLIENT_SECRET },
    mapping: { phone: 'phone', defaultCountry: 'US' },
  };
}

const webhookSync = (campaignId: string) => ({ id: 'web', campaignId, source: { type: 'webhook', secret: WEBHOOK_SECRET }, mapping: { phone: 'phone' } });

function syncKeys(f: DialerFixture, prefix: string, syncId: string, campaignId = f.campaignId): SyncKeys {
  return new SyncKeys(prefix, syncId, campaignKey(f.server.url.replace(/\/+$/, ''), f.accountId, campaignId));
}

/** Waits until the sync holds `count` numbers, no run is running and no batch is open; returns its runs, newest first. */
async function importDone(redis: RedisClient, keys: SyncKeys, count: number, what: string): Promise<RunRecord[]> {
  return waitFor(async () => {
    if ((await redis.hlen(keys.have)) !== count || (await redis.hlen(keys.batches)) > 0) return null;
    const runs = await Promise.all((await redis.lrange(keys.runs, 0, -1)).map((id) => readRun(redis, keys.run(id))));
    if (!runs.length || runs.some((r) => !r || r.status === 'running')) return null;
    return runs as RunRecord[];
  }, what, 25_000);
}

const total = (runs: RunRecord[], count: 'pushed' | 'rejected') => runs.reduce((n, r) => n + r[count], 0);

/** Standard Webhooks headers for `body`, signed with `secret`. */
function standardSigned(body: string | Buffer, secret = WEBHOOK_SECRET): Record<string, string> {
  const id = `msg_${randomBytes(8).toString('hex')}`;
  const ts = String(Math.floor(Date.now() / 1000));
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const sig = createHmac('sha256', key).update(Buffer.concat([Buffer.from(`${id}.${ts}.`), Buffer.from(body)])).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${sig}` };
}

function hubspotSigned(url: string, body: string, secret = HS_CLIENT_SECRET): Record<string, string> {
  const ts = Date.now();
  return { 'x-hubspot-signature-v3': signHubSpotV3(secret, 'POST', url, body, ts), 'x-hubspot-request-timestamp': String(ts) };
}

describe('the command line', () => {
  let f: DialerFixture;
  let hs: HubSpotStandIn;
  let redis: Redis;
  let dir: string;
  let configFile: string;
  const t = testPrefix();
  const env = () => ({ DIALER_TOKEN: f.token, HUBSPOT_TOKEN: hs.token });

  beforeAll(async () => {
    f = await dialerFixture();
    hs = await startHubSpotStandIn({ contacts: CONTACTS, token: HS_TOKEN });
    redis = new Redis(REDIS_URL);
    dir = mkdtempSync(join(tmpdir(), 'cds-cli-'));
    configFile = join(dir, 'sync.yaml');
    // Secrets stay in the environment: the file only names them.
    writeFileSync(configFile, `redis:
  url: ${REDIS_URL}
  prefix: ${t.prefix}
http:
  port: 0
dialer:
  baseUrl: ${f.server.url}
  accountId: ${f.accountId}
  apiToken: \${DIALER_TOKEN}
  rateLimit: { perSecond: 50, burst: 100 }
syncs:
  - id: hs
    campaignId: ${f.campaignId}
    source:
      type: hubspot
      baseUrl: ${hs.url}
      accessToken: \${HUBSPOT_TOKEN}
    mapping:
      phone: phone
      defaultCountry: US
compliance:
  off: "test: the command line, not calling windows"
log:
  level: error
`);
  });

  afterAll(async () => {
    redis?.disconnect();
    await t.cleanup();
    await hs?.close();
    await f?.server.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('--help and <command> --help exit 0 with the usage', async () => {
    const main = await cli(['--help']);
    expect(main.code).toBe(0);
    expect(main.stdout).toContain('usage: ./dev daemon <command> --config FILE');
    for (const [command, option] of [['start', 'SIGTERM'], ['sync', '--dry-run'], ['status', '--json']] as const) {
      const r = await cli([command, '--help']);
      expect(r.code, `${command} --help`).toBe(0);
      expect(r.stdout).toContain(`usage: ./dev daemon ${command}`);
      expect(r.stdout).toContain(option);
    }
  });

  it('an unknown command exits 2 with the usage', async () => {
    const r = await cli(['frobnicate', '--config', configFile], env());
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).toContain('usage: ./dev daemon <command>');
  });

  it('a missing --config exits 2 saying so', async () => {
    const r = await cli(['status'], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--config FILE is required');
  });

  it('a bad configuration file exits 2 listing its problems, without a stack trace or a secret', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, `dialer:
  baseUrl: dialer.example.com
  accountId: a
  apiToken: \${DIALER_TOKEN}
  retries: 3
syncs:
  - id: hs
    campaignId: c
    source: { type: zoho }
    mapping: { phone: phone }
`);
    const r = await cli(['status', '--config', bad], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(bad);
    expect(r.stderr).toContain('dialer.baseUrl');
    expect(r.stderr).toContain('retries');
    expect(r.stderr).toContain('syncs.0.source.type');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stderr).not.toContain(f.token);
  });

  it('a secret missing from the environment exits 2 naming the variable', async () => {
    const r = await cli(['status', '--config', configFile], { HUBSPOT_TOKEN: hs.token, DIALER_TOKEN: '' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('dialer.apiToken');
    expect(r.stderr).toContain('DIALER_TOKEN');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('status against a Redis nobody answers on exits 1 within seconds, naming Redis and why', async () => {
    const port = await closedPort();
    const file = join(dir, 'no-redis.yaml');
    const yaml = readFileSync(configFile, 'utf8').replace(`url: ${REDIS_URL}`, `url: redis://127.0.0.1:${port}`);
    writeFileSync(file, yaml);
    for (const args of [['status'], ['sync', 'hs', '--dry-run']]) {
      // The guard kills a command that hangs (as status did, waiting for Redis for ever): it then has no exit code.
      const r = await cli([...args, '--config', file], env(), 30_000);
      expect({ args, code: r.code, signal: r.signal }).toEqual({ args, code: 1, signal: null });
      const last = r.stderr.trimEnd().split('\n').at(-1)!;
      expect(last).toMatch(new RegExp(`^${args[0]}: Redis at redis://127\\.0\\.0\\.1:${port} is unreachable: connect ECONNREFUSED .*\\. Is Redis running, and is redis\\.url in .*no-redis\\.yaml right\\?$`));
      expect(r.stdout).toBe('');
    }
  }, 70_000);

  it('sync of an unknown id exits 2 naming the configured syncs', async () => {
    const r = await cli(['sync', 'unknown-id', '--config', configFile], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown-id');
    expect(r.stderr).toMatch(/the syncs are: hs\b/);
  });

  it('sync --dry-run prints what it would add and changes nothing', async () => {
    const r = await cli(['sync', 'hs', '--dry-run', '--config', configFile], env());
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`would add ${CONTACTS}, replace 0, delete 0`);
    expect(r.stdout).toContain('calling-window rules off (the top-level compliance block): test: the command line, not calling windows');
    const keys = syncKeys(f, t.prefix, 'hs');
    expect(await redis.hlen(keys.contacts)).toBe(0);
    expect(await redis.hlen(keys.phones)).toBe(0);
    expect(await redis.hlen(keys.have)).toBe(0);
    expect(await redis.llen(keys.runs)).toBe(0);
    expect(await campaignNumbers(f)).toHaveLength(0);
  });

  it('sync SYNC_ID pushes the contacts and prints its run; status --json then lists the sync with its runs', async () => {
    const r = await cli(['sync', 'hs', '--config', configFile], env());
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const run = printedJson(r.stdout);
    expect(run).toMatchObject({ sync: 'hs', status: 'done', seen: CONTACTS, pushed: CONTACTS, rejected: 0, invalid: 0 });
    const numbers = await campaignNumbers(f);
    expect(numbers.map((n) => n.number).sort()).toEqual(Array.from({ length: CONTACTS }, (_, i) => validPhone(i)).sort());

    const s = await cli(['status', '--json', '--config', configFile], env());
    expect(s.code).toBe(0);
    const status = printedJson(s.stdout);
    expect(status).toHaveLength(1);
    expect(status[0]).toMatchObject({ sync: 'hs', source: 'hubspot', campaignId: f.campaignId, contacts: CONTACTS, numbers: CONTACTS, openBatches: 0, parked: 0 });
    // The sync's full import compared the whole selection: status says when, and how often it compares.
    expect(status[0]).toMatchObject({ compareEvery: 3_600_000, lastCompareAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    const text = await cli(['status', '--config', configFile], env());
    expect(text.stdout).toContain(`last comparison with the whole selection ${status[0].lastCompareAt} (every 60 min)`);
    // The rules are off here, and status says so, with the reason the file gives.
    expect(status[0].rules).toMatchObject({ on: false, off: 'test: the command line, not calling windows', from: 'configuration' });
    expect(text.stdout).toContain('calling-window rules off (the top-level compliance block): test: the command line, not calling windows');
    expect(status[0].runs.map((x: RunRecord) => x.id)).toContain(run.id);
    expect(status[0].runs.find((x: RunRecord) => x.id === run.id)).toMatchObject({ status: 'done', pushed: CONTACTS });
    // No secret reaches the operator's terminal.
    expect(s.stdout + r.stdout).not.toContain(f.token);
    expect(s.stdout + r.stdout).not.toContain(hs.token);

    // Once synced, a dry run has nothing left to add.
    const again = await cli(['sync', 'hs', '--dry-run', '--config', configFile], env());
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('would add 0, replace 0, delete 0');

    // A contact deleted without a webhook: no incremental run sees it, the comparison does.
    hs.deleteContact(hs.contacts()[3]!.id);
    const compared = await cli(['sync', 'hs', '--compare', '--config', configFile], env());
    expect(compared.code).toBe(0);
    expect(printedJson(compared.stdout)).toMatchObject({ sync: 'hs', mode: 'compare', status: 'done', left: 1, rejected: 0 });
    expect((await campaignNumbers(f)).map((n) => n.number).sort()).toEqual(Array.from({ length: CONTACTS }, (_, i) => validPhone(i)).filter((_, i) => i !== 3).sort());
  }, 60_000);
});

describe('the command line against a CRM that refuses the sync', () => {
  let f: DialerFixture;
  let hs: HubSpotStandIn;
  let pd: PipedriveStandIn;
  let dir: string;
  let configFile: string;
  const t = testPrefix();
  const REVOKED = 'revoked-token-0000';
  const env = () => ({ DIALER_TOKEN: f.token, HS_GOOD: hs.token, PD_GOOD: pd.apiToken, REVOKED });

  beforeAll(async () => {
    f = await dialerFixture();
    hs = await startHubSpotStandIn({ contacts: 5, token: HS_TOKEN });
    pd = await startPipedriveStandIn({ persons: 5 });
    dir = mkdtempSync(join(tmpdir(), 'cds-cli-crm-'));
    configFile = join(dir, 'sync.json');
    const sync = (id: string, source: Record<string, unknown>) => ({
      id, campaignId: f.campaignId, source, mapping: { phone: source.type === 'pipedrive' ? 'phones' : 'phone', defaultCountry: 'US' },
    });
    // Secrets stay in the environment: the file only names them.
    writeFileSync(configFile, JSON.stringify({
      redis: { url: REDIS_URL, prefix: t.prefix },
      http: { port: 0 },
      dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: '${DIALER_TOKEN}', rateLimit: { perSecond: 50, burst: 100 } },
      syncs: [
        sync('pd-revoked', { type: 'pipedrive', baseUrl: pd.url, apiToken: '${REVOKED}' }),
        sync('pd-filter', { type: 'pipedrive', baseUrl: pd.url, apiToken: '${PD_GOOD}', selection: { filterId: 4242 } }),
        sync('hs-revoked', { type: 'hubspot', baseUrl: hs.url, accessToken: '${REVOKED}' }),
        sync('hs-list', { type: 'hubspot', baseUrl: hs.url, accessToken: '${HS_GOOD}', selection: { listId: '4242' } }),
      ],
      log: { level: 'error' },
      compliance: RULES_OFF,
    }));
  });

  afterAll(async () => {
    await t.cleanup();
    await hs?.close();
    await pd?.close();
    await f?.server.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Exit 1, the last line a sentence naming the sync and the problem: no stack trace, no secret. */
  function expectSentence(r: Exit, ...words: RegExp[]): void {
    expect(r.code).toBe(1);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stderr + r.stdout).not.toContain(REVOKED);
    const last = r.stderr.trimEnd().split('\n').at(-1)!;
    expect(last).toMatch(/^sync "/);
    for (const w of words) expect(last).toMatch(w);
  }

  for (const dry of [true, false]) {
    const args = (id: string) => ['sync', id, ...(dry ? ['--dry-run'] : []), '--config', configFile];
    const name = dry ? 'sync --dry-run' : 'sync';

    it(`${name} with a revoked Pipedrive token ends in a sentence naming the token`, async () => {
      expectSentence(await cli(args('pd-revoked'), env()), /pd-revoked/, /pipedrive/i, /401/, /apiToken/);
    });

    it(`${name} with a Pipedrive filter that does not exist ends in a sentence naming the filter`, async () => {
      expectSentence(await cli(args('pd-filter'), env()), /pd-filter/, /404/, /filterId 4242/);
    });

    it(`${name} with a revoked HubSpot token ends in a sentence naming the token`, async () => {
      expectSentence(await cli(args('hs-revoked'), env()), /hs-revoked/, /hubspot/i, /401/, /accessToken/);
    });

    it(`${name} with a HubSpot list that does not exist ends in a sentence naming the list`, async () => {
      expectSentence(await cli(args('hs-list'), env()), /hs-list/, /404/, /listId 4242/);
    });
  }
});

describe('the HTTP side of a running daemon', () => {
  let f: DialerFixture;
  let hs: HubSpotStandIn;
  let daemon: Daemon;
  let base: string;
  const t = testPrefix();

  beforeAll(async () => {
    f = await dialerFixture();
    hs = await startHubSpotStandIn({ contacts: CONTACTS, token: HS_TOKEN });
    const second = await createCampaign(f.server, f.accountId, { name: 'Web leads', type: 'Dynamic', state: 'Active' });
    daemon = await Daemon.start(daemonConfig(f, t.prefix, [hubspotSync(hs, f.campaignId), webhookSync(second.id)]), { log: quietLog });
    base = daemon.address!;
    // The first start imports the HubSpot selection in full.
    const runs = await importDone(daemon.redis, daemon.runtimes.get('hs')!.state.keys, CONTACTS, 'the first full import');
    expect(total(runs, 'pushed')).toBe(CONTACTS);
    expect(total(runs, 'rejected')).toBe(0);
  });

  afterAll(async () => {
    await daemon?.close();
    await t.cleanup();
    await hs?.close();
    await f?.server.close();
  });

  it('/health answers 200 with redis ok and dialer ok', async () => {
    const res = await fetch(`${base}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', redis: 'ok', dialer: 'ok' });
  });

  it('/health answers 503 when the dialer is unreachable', async () => {
    const t2 = testPrefix();
    const config = daemonConfig(f, t2.prefix, [webhookSync(f.campaignId)]);
    const broken: Config = { ...config, dialer: { ...config.dialer, baseUrl: `http://127.0.0.1:${await closedPort()}`, timeout: 5000 } };
    const d = await Daemon.start(broken, { log: quietLog, workers: false });
    try {
      const res = await fetch(`${d.address}/health`);
      expect(res.status).toBe(503);
      const body = await res.json() as Record<string, string>;
      expect(body.status).toBe('unhealthy');
      expect(body.redis).toBe('ok');
      expect(body.dialer).not.toBe('ok');
    } finally {
      await d.close();
      await t2.cleanup();
    }
  });

  it('/metrics is Prometheus text with our counters and BullMQ gauges', async () => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain('# TYPE cds_contacts_seen_total counter');
    expect(text).toMatch(new RegExp(`^cds_contacts_seen_total\\{sync="hs"\\} ${CONTACTS}$`, 'm'));
    expect(text).toMatch(/^bullmq_job_count\{.*queue="\{syncs\}".*\} \d+$/m);
  });

  it('a webhook for an unknown sync is 404', async () => {
    const body = JSON.stringify({ id: 'x', phone: validPhone(500) });
    const res = await fetch(`${base}/webhooks/nope`, { method: 'POST', headers: { 'content-type': 'application/json', ...standardSigned(body) }, body });
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('nope');
  });

  it('garbage bodies get a 4xx, never a 5xx, nothing is queued, and the daemon keeps serving', async () => {
    const web = daemon.runtimes.get('web')!.state.keys;
    const hsKeys = daemon.runtimes.get('hs')!.state.keys;
    const deep = `{"contacts":[${'['.repeat(200_000)}`;
    const huge = Buffer.alloc(11 * 1024 * 1024, 'a');
    const cases: { name: string; path: string; headers: Record<string, string>; body?: string | Buffer; expected: number }[] = [
      { name: 'unsigned text', path: '/webhooks/web', headers: { 'content-type': 'text/plain' }, body: 'hello', expected: 401 },
      { name: 'signed non-JSON', path: '/webhooks/web', headers: { 'content-type': 'application/json', ...standardSigned('{"contacts": [') }, body: '{"contacts": [', expected: 400 },
      { name: 'signed empty body', path: '/webhooks/web', headers: { 'content-type': 'application/json', ...standardSigned('') }, body: '', expected: 400 },
      { name: 'signed, no body, no content type', path: '/webhooks/web', headers: standardSigned(''), expected: 400 },
      { name: 'signed XML', path: '/webhooks/web', headers: { 'content-type': 'application/xml', ...standardSigned('<contacts><c/></contacts>') }, body: '<contacts><c/></contacts>', expected: 400 },
      { name: 'signed form data', path: '/webhooks/web', headers: { 'content-type': 'application/x-www-form-urlencoded', ...standardSigned('id=1&phone=2') }, body: 'id=1&phone=2', expected: 400 },
      { name: 'signed JSON of the wrong shape', path: '/webhooks/web', headers: { 'content-type': 'application/json', ...standardSigned('{"contacts":"all"}') }, body: '{"contacts":"all"}', expected: 400 },
      { name: 'signed JSON without an id', path: '/webhooks/web', headers: { 'content-type': 'application/json', ...standardSigned('[1,2,3]') }, body: '[1,2,3]', expected: 400 },
      { name: 'signed deeply nested JSON', path: '/webhooks/web', headers: { 'content-type': 'application/json', ...standardSigned(deep) }, body: deep, expected: 400 },
      { name: 'signed binary', path: '/webhooks/web', headers: { 'content-type': 'application/octet-stream', ...standardSigned(Buffer.from([0, 255, 1, 254])) }, body: Buffer.from([0, 255, 1, 254]), expected: 400 },
      { name: '11 MB body', path: '/webhooks/web', headers: { 'content-type': 'application/json' }, body: huge, expected: 413 },
      { name: 'HubSpot unsigned garbage', path: '/webhooks/hs', headers: { 'content-type': 'application/json' }, body: 'not json', expected: 401 },
      { name: 'HubSpot signed non-JSON', path: '/webhooks/hs', headers: { 'content-type': 'application/json', ...hubspotSigned(`${base}/webhooks/hs`, 'not json') }, body: 'not json', expected: 400 },
      { name: 'HubSpot signed object instead of event array', path: '/webhooks/hs', headers: { 'content-type': 'application/json', ...hubspotSigned(`${base}/webhooks/hs`, '{"a":1}') }, body: '{"a":1}', expected: 400 },
    ];
    const results: string[] = [];
    for (const c of cases) {
      const res = await fetch(`${base}${c.path}`, { method: 'POST', headers: c.headers, body: typeof c.body === 'string' || c.body === undefined ? c.body : new Uint8Array(c.body) });
      results.push(`${c.name}: ${res.status}`);
      await res.arrayBuffer();
    }
    expect(results).toEqual(cases.map((c) => `${c.name}: ${c.expected}`));
    expect(await daemon.redis.llen(web.inbox)).toBe(0);
    expect(await daemon.redis.llen(hsKeys.inbox)).toBe(0);

    const health = await fetch(`${base}/health`);
    expect(health.status).toBe(200);
    // A well-formed delivery after all that is still accepted.
    const good = JSON.stringify({ id: 'c-1', phone: validPhone(900) });
    const ok = await fetch(`${base}/webhooks/web`, { method: 'POST', headers: { 'content-type': 'application/json', ...standardSigned(good) }, body: good });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ accepted: 1 });
  });
});

describe('logs', () => {
  let f: DialerFixture;
  let hs: HubSpotStandIn;
  const t = testPrefix();

  beforeAll(async () => {
    f = await dialerFixture();
    hs = await startHubSpotStandIn({ contacts: CONTACTS, token: HS_TOKEN, clientSecret: HS_CLIENT_SECRET });
  });

  afterAll(async () => {
    await t.cleanup();
    await hs?.close();
    await f?.server.close();
  });

  it('hold no API token, client secret or full phone number of a synced contact, through a sync and refused webhooks', async () => {
    let text = '';
    const sink = new Writable({ write(chunk: Buffer, _enc, done) { text += chunk.toString(); done(); } });
    const second = await createCampaign(f.server, f.accountId, { name: 'Web leads', type: 'Dynamic', state: 'Active' });
    const config = daemonConfig(f, t.prefix, [hubspotSync(hs, f.campaignId), webhookSync(second.id)], { log: { level: 'trace' } });
    const daemon = await Daemon.start(config, { log: createLogger('trace', sink) });
    try {
      const runs = await importDone(daemon.redis, daemon.runtimes.get('hs')!.state.keys, CONTACTS, 'the first full import');
      expect(total(runs, 'pushed')).toBe(CONTACTS);
      const people = generatePeople(CONTACTS);
      // Refused: a HubSpot delivery signed with the wrong secret, and a generic one carrying contacts with a bad signature.
      const events = JSON.stringify([{ eventId: 1, subscriptionId: 4002, portalId: 62515, appId: 1, occurredAt: Date.now(), subscriptionType: 'contact.propertyChange', attemptNumber: 0, objectId: 1001, propertyName: 'phone', propertyValue: people[0]!.phone, changeSource: 'CRM' }]);
      const url = `${daemon.address}/webhooks/hs`;
      const refusedHs = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...hubspotSigned(url, events, 'wrong-secret') }, body: events });
      expect(refusedHs.status).toBe(401);
      const contacts = JSON.stringify({ contacts: people.map((p) => ({ id: p.email, phone: p.phone, token: HS_TOKEN })) });
      const refusedWeb = await fetch(`${daemon.address}/webhooks/web`, { method: 'POST', headers: { 'content-type': 'application/json', ...standardSigned(contacts, `whsec_${randomBytes(24).toString('base64')}`) }, body: contacts });
      expect(refusedWeb.status).toBe(401);
      await waitFor(() => (text.match(/webhook refused/g) ?? []).length >= 2, 'both refusals logged', 5000);
    } finally {
      await daemon.close();
    }
    expect(text).toContain('"sync":"hs"');
    for (const secret of [f.token, HS_TOKEN, HS_CLIENT_SECRET, WEBHOOK_SECRET, WEBHOOK_SECRET.slice('whsec_'.length)]) expect(text).not.toContain(secret);
    const leaked = generatePeople(CONTACTS).flatMap((p, i) => {
      const e164 = validPhone(i);
      return [e164, e164.slice(2), p.phone].filter((form) => text.includes(form));
    });
    expect(leaked).toEqual([]);
  }, 40_000);
});

describe('SIGTERM', () => {
  let f: DialerFixture;
  let hs: HubSpotStandIn;
  let dir: string;
  const t = testPrefix();

  beforeAll(async () => {
    f = await dialerFixture();
    hs = await startHubSpotStandIn({ contacts: CONTACTS, token: HS_TOKEN });
    dir = mkdtempSync(join(tmpdir(), 'cds-start-'));
  });

  afterAll(async () => {
    await t.cleanup();
    await hs?.close();
    await f?.server.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('stops `start` within seconds when its Redis is gone, saying why', async () => {
    const port = await closedPort();
    const redisPort = await freePort();
    const redisDir = mkdtempSync(join(tmpdir(), 'cds-redis-gone-'));
    const server = await startRedisServer(redisPort, redisDir, 'none');
    const file = join(dir, 'redis-gone.json');
    // The deadline is long: a shutdown that waited for it would be late.
    const raw = {
      redis: { url: `redis://127.0.0.1:${redisPort}`, prefix: t.prefix }, http: { host: '127.0.0.1', port },
      dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: '${DIALER_TOKEN}', rateLimit: { perSecond: 50, burst: 100 } },
      syncs: [hubspotSync(hs, f.campaignId, '${HUBSPOT_TOKEN}')], shutdownTimeout: '30s', log: { level: 'error' }, compliance: RULES_OFF,
    };
    const env = { DIALER_TOKEN: f.token, HUBSPOT_TOKEN: hs.token };
    parseConfig(raw, file, env);
    writeFileSync(file, JSON.stringify(raw));
    const child = spawn(process.execPath, ['daemon/cli.ts', 'start', '--config', file], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (b: Buffer) => { output += b.toString(); });
    child.stderr.on('data', (b: Buffer) => { output += b.toString(); });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
    try {
      await waitFor(async () => child.exitCode === null && (await fetch(`http://127.0.0.1:${port}/health`)).status === 200, `/health of the started daemon (output: ${output})`, 20_000);
      const gone = new Promise((r) => server.once('exit', r));
      server.kill('SIGKILL');
      await gone;
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`)).status === 503, 'the daemon to see Redis gone', 10_000);
      child.kill('SIGTERM');
      const deadline = new Promise<'late'>((r) => setTimeout(() => r('late'), 5000).unref());
      expect(await Promise.race([exited, deadline]), output).toEqual({ code: 0, signal: null });
      expect(output).toMatch(/stopping without waiting for running jobs: Redis is unreachable/);
      expect(output).not.toMatch(/\n\s+at /);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
      rmSync(redisDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('stops `start` gracefully: exit 0 within shutdownTimeout', async () => {
    const port = await closedPort();
    const shutdownMs = 5000;
    const file = join(dir, 'sync.json');
    // Validated here first, so a mistake in this file shows as a config error rather than a daemon that never answers.
    const raw = {
      redis: { url: REDIS_URL, prefix: t.prefix }, http: { host: '127.0.0.1', port },
      dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: '${DIALER_TOKEN}', rateLimit: { perSecond: 50, burst: 100 } },
      syncs: [hubspotSync(hs, f.campaignId, '${HUBSPOT_TOKEN}')], shutdownTimeout: `${shutdownMs}ms`, log: { level: 'error' }, compliance: RULES_OFF,
    };
    const env = { DIALER_TOKEN: f.token, HUBSPOT_TOKEN: hs.token };
    parseConfig(raw, file, env);
    writeFileSync(file, JSON.stringify(raw));

    const child = spawn(process.execPath, ['daemon/cli.ts', 'start', '--config', file], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (b: Buffer) => { output += b.toString(); });
    child.stderr.on('data', (b: Buffer) => { output += b.toString(); });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
    try {
      await waitFor(async () => child.exitCode === null && (await fetch(`http://127.0.0.1:${port}/health`)).status === 200, `/health of the started daemon (output: ${output})`, 20_000);
      child.kill('SIGTERM');
      // The deadline is the configured one plus a little for the process to end after closing.
      const deadline = new Promise<'late'>((r) => setTimeout(() => r('late'), shutdownMs + 2000).unref());
      const result = await Promise.race([exited, deadline]);
      expect(result, output).toEqual({ code: 0, signal: null });
      expect(output).not.toMatch(/\n\s+at /);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }, 40_000);
});
