// "Waiting for the window: N". Batches planned while the calling window was open reach the dialer after the window
// paused the campaign (held at a proxy until the pause is seen): the dialer refuses them with 409. Each refused batch
// is one info line that says why and when its numbers go (not one line per number, not debug); the numbers are counted
// in `status` (text and --json) and /ops; when the window opens they are sent and the count is 0 again.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { SyncStatus } from '../../daemon/sync/status.ts';
import { campaignNumbers, REDIS_URL, spawnDaemon, testPrefix, waitFor, type DaemonProcess } from '../support/daemon.ts';
import { startProxy } from '../support/proxy.ts';
import { createAccount, createCampaign, createKey, startServer } from '../support/server.ts';

const TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
// 19:00 in New York (EDT): the federal window closes at 21:00 (01:00Z), so with a 2-minute margin the daemon pauses at 00:58Z.
const START = '2026-07-01T23:00:00Z';
const PHONES = Array.from({ length: 50 }, (_, i) => `+1212234${String(6000 + i)}`);
const BATCH = 10;
const ADMIN = 'ops-admin-token-0123456789';
const dir = mkdtempSync(join(tmpdir(), 'cds-window-waiting-'));
const CSV = join(dir, 'evening.csv');
writeFileSync(CSV, ['id,phone', ...PHONES.map((p, i) => `c${i},${p}`)].join('\n'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(import.meta.dirname, '../../daemon/cli.ts'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (b: Buffer) => { stdout += b.toString(); });
    child.stderr.on('data', (b: Buffer) => { stderr += b.toString(); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

it('numbers the dialer refuses because the window paused the campaign are counted, said once per batch at info, and sent when it opens', async () => {
  const server = await startServer({ seed: 4308, clockStart: START, clockMode: 'manual' });
  const proxy = await startProxy(server.url);
  const account = await createAccount(server, 'Evening Co', TZ);
  const campaign = await createCampaign(server, account.id, { name: 'Evening', type: 'Dynamic', state: 'Active', dialer: { mode: 'Power', agents: 1, maxAttempts: 1, callingHours: ALL_DAY } });
  const f = { server, accountId: account.id, campaignId: campaign.id, token: await createKey(server, account.id, ['CampaignAdmin']) };
  const { token } = f;
  const { prefix, cleanup } = testPrefix();
  const config = {
    redis: { url: REDIS_URL, prefix },
    http: { host: '127.0.0.1', port: 0, adminToken: ADMIN },
    dialer: { baseUrl: proxy.url, accountId: account.id, apiToken: token, timeZone: TZ, maxNumbersPerRequest: BATCH, rateLimit: { perSecond: 50, burst: 100 } },
    dialerClock: { url: `${server.url}/console/clock`, token: server.consoleToken, every: '1s' },
    compliance: { checkEvery: '1s', margin: '2m' },
    log: { level: 'info' },
    syncs: [{ id: 'evening', campaignId: campaign.id, source: { type: 'csv', path: CSV }, mapping: { phone: 'phone' }, schedule: { every: '1d' } }],
  };
  const file = join(dir, 'evening.json');
  writeFileSync(file, JSON.stringify(config));
  const campaignState = async () => {
    const res = await server.request(`/v1/accounts/${account.id}/campaigns?filter=${encodeURIComponent(JSON.stringify({ ids: [campaign.id] }))}`, { token });
    return ((await res.json()) as { state: string }[])[0]!.state;
  };
  // Every add waits here until the campaign is Paused: planned in the window, it reaches the dialer after the pause.
  let release!: () => void;
  const released = new Promise<void>((r) => { release = r; });
  let adds = 0;
  proxy.hold = (req) => (req.method === 'POST' && /\/numbers(\?|$)/.test(req.url!) ? (adds++, { before: released }) : undefined);
  let d: DaemonProcess | null = null;
  try {
    d = await spawnDaemon(config, dir);
    const address = await d.address;
    await waitFor(() => adds > 0, 'the first batch at the dialer');
    await server.advance(2 * 3600); // 01:00Z: 21:00 in New York, past the pause
    await waitFor(async () => (await campaignState()) === 'Paused', 'the window pausing the campaign', 30_000);
    release();
    proxy.hold = null;

    const ops = async () => {
      const res = await fetch(`${address}/ops/api/syncs`, { headers: { authorization: `Basic ${Buffer.from(`ops:${ADMIN}`).toString('base64')}` } });
      expect(res.status).toBe(200);
      return ((await res.json()) as { syncs: SyncStatus[] } | SyncStatus[]);
    };
    const opsSync = async () => { const body = await ops(); return (Array.isArray(body) ? body : body.syncs).find((s) => s.sync === 'evening')!; };
    await waitFor(async () => (await opsSync()).waitingForWindow === PHONES.length, `${PHONES.length} numbers waiting for the window on /ops`, 30_000);
    expect(await campaignNumbers(f)).toEqual([]);

    // Once per batch, at info, with why and when; never a line per number.
    const lines = d.output().split('\n').filter((l) => l.includes('waiting for the window: the dialer refused'));
    expect(lines).toHaveLength(PHONES.length / BATCH);
    for (const l of lines) {
      const line = JSON.parse(l) as { level: number; msg: string; numbers: number; nextEdgeAt: string | null };
      expect(line.level).toBe(30);
      expect(line.numbers).toBe(BATCH);
      expect(line.msg).toMatch(new RegExp(`^waiting for the window: the dialer refused ${BATCH} numbers \\(409\\) because the calling window paused campaign ${campaign.id} \\(.+\\); ` +
        'they wait in Redis and are sent when the window opens and the campaign is Active again, next at 2026-07-02T'));
    }

    const json = await cli(['status', '--config', file, '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect((JSON.parse(json.stdout) as SyncStatus[])[0]!.waitingForWindow).toBe(PHONES.length);
    const text = await cli(['status', '--config', file]);
    expect(text.stdout).toContain(`parked ${PHONES.length} (waiting for the window: ${PHONES.length})`);

    // 08:00 in New York: the window opens, the campaign is Active and the numbers go.
    await server.advance(11 * 3600 + 60);
    await waitFor(async () => (await campaignNumbers(f)).length === PHONES.length, 'the numbers added when the window opened', 60_000);
    await waitFor(async () => (await opsSync()).waitingForWindow === 0, 'nothing waiting for the window', 30_000);
    expect((await campaignNumbers(f)).map((n) => n.number).sort()).toEqual([...PHONES].sort());
  } finally {
    release();
    await d?.stop();
    await cleanup();
    await proxy.close();
    await server.close();
  }
}, 180_000);
