// A sync that `start`'s checks refuse sends nothing to its campaign: no number, no state change (the check's own probes
// change nothing: an empty add, a state change to no state). Its campaign stays as it was, and the log says so. A
// refusal that comes after the daemon opened the campaign closes it (the sync's numbers are in it, and no window
// follows them any more), keeps it Paused, and the window takes it up again when the refusal is lifted.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Daemon } from '../../daemon/app.ts';
import { parseConfig } from '../../daemon/config.ts';
import { campaignNumbers, dialerFixture, REDIS_URL, spawnDaemon, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { createCampaign, createKey } from '../support/server.ts';

interface Sent { method: string; path: string; body: string }

/** A proxy in front of the dialer that keeps every request with its body. */
async function recordingProxy(f: DialerFixture): Promise<{ proxy: Proxy; sent: Sent[] }> {
  const proxy = await startProxy(f.server.url);
  const sent: Sent[] = [];
  proxy.interceptWithBody = (req, body) => { sent.push({ method: req.method!, path: req.url!, body: body.toString() }); return undefined; };
  return { proxy, sent };
}

/** What the proxy saw that would change the campaign: numbers added (the check's empty add aside) or a state set. */
const changes = (sent: Sent[], campaignId: string) => sent.filter((r) => r.path.includes(`/campaigns/${campaignId}/`) &&
  ((r.method === 'POST' && /\/numbers/.test(r.path) && r.body !== '[]') || (r.method === 'PUT' && /\/state$/.test(r.path) && r.body !== 'null') || r.method === 'DELETE'));

async function campaignState(f: DialerFixture, admin: string, campaignId: string): Promise<string> {
  const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns?filter=${encodeURIComponent(JSON.stringify({ ids: [campaignId] }))}`, { token: admin });
  const [campaign] = (await res.json()) as { state: string }[];
  return campaign!.state;
}

let dir: string;
let f: DialerFixture;
let admin: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cds-refused-'));
  f = await dialerFixture();
  admin = await createKey(f.server, f.accountId, ['CampaignAdmin', 'CampaignNumberAdmin', 'CampaignReader']);
});
afterAll(async () => {
  await f?.server.close();
  rmSync(dir, { recursive: true, force: true });
});

function csv(name: string, header: string, rows: string[]): string {
  const path = join(dir, `${name}.csv`);
  writeFileSync(path, [header, ...rows].join('\n'));
  return path;
}

describe('start leaves a refused sync\'s campaign untouched', () => {
  const cases = [
    { name: 'a Static campaign (a key that could change its state)', type: 'Static', roles: ['CampaignAdmin', 'CampaignNumberAdmin', 'CampaignReader'] as const, fix: /fix: feed a Dynamic campaign/ },
    { name: 'a Dynamic campaign and a key without Campaign Admin', type: 'Dynamic', roles: ['CampaignNumberAdmin', 'CampaignReader'] as const, fix: /fix: give the key the Campaign Admin role/ },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const campaignId = (await createCampaign(f.server, f.accountId, { name: c.type, type: c.type, state: 'Active' })).id;
      const token = await createKey(f.server, f.accountId, [...c.roles]);
      const { proxy, sent } = await recordingProxy(f);
      const redis = testPrefix();
      const d = await spawnDaemon({
        redis: { url: REDIS_URL, prefix: redis.prefix }, http: { host: '127.0.0.1', port: 0 },
        dialer: { baseUrl: proxy.url, accountId: f.accountId, apiToken: token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: 'America/New_York' },
        syncs: [{ id: 'refused', campaignId, source: { type: 'csv', path: csv(`${c.type}-contacts`, 'id,phone', ['1,+12122345680', '2,+13055550181']) }, mapping: { phone: 'phone' },
          schedule: { every: '1h' }, compliance: { checkEvery: '1s' } }],
        log: { level: 'info' },
      }, dir);
      try {
        await d.address;
        const said = await waitFor(() => d.output().split('\n').find((l) => l.includes(`campaign ${campaignId} stays Active: its sync is refused and does not touch it`)), 'the window\'s word on the campaign', 30_000);
        expect(said).toMatch(c.fix);
        expect(d.output()).toMatch(/sync \\"refused\\" is REFUSED: it adds no numbers until this is fixed/);
        // Several window checks (every second) pass by: still nothing sent.
        await waitFor(() => sent.filter((r) => r.method === 'GET' && r.path.includes(`/campaigns?`)).length >= 3 && sent, 'window checks to pass', 30_000);
        const stopped = await d.stop();
        expect(stopped).toBe(0);
        expect(changes(sent, campaignId)).toEqual([]);
        expect(await campaignNumbers({ ...f, campaignId, token: admin })).toEqual([]);
        expect(await campaignState(f, admin, campaignId)).toBe('Active');
        expect(d.output()).not.toMatch(/stays Paused until a read succeeds|campaign paused until what it holds is judged|campaign state set/);
      } finally {
        await d.kill();
        await proxy.close();
        await redis.cleanup();
      }
    }, 90_000);
  }
});

describe('`sync <id>` on a refused sync', () => {
  it('checks it before any calling window is enforced: exits 1 naming the fix, and sends its campaign nothing', async () => {
    const campaignId = (await createCampaign(f.server, f.accountId, { name: 'Static for sync', type: 'Static', state: 'Active' })).id;
    const { proxy, sent } = await recordingProxy(f);
    const redis = testPrefix();
    const file = join(dir, 'sync-command.json');
    writeFileSync(file, JSON.stringify({
      redis: { url: REDIS_URL, prefix: redis.prefix },
      dialer: { baseUrl: proxy.url, accountId: f.accountId, apiToken: admin, rateLimit: { perSecond: 50, burst: 100 }, timeZone: 'America/New_York' },
      syncs: [{ id: 'refused', campaignId, source: { type: 'csv', path: csv('sync-command', 'id,phone', ['1,+12122345680']) }, mapping: { phone: 'phone' }, compliance: {} }],
      log: { level: 'error' },
    }));
    try {
      // Spawned, not spawnSync: the dialer and the proxy answer from this process's event loop.
      const { spawn } = await import('node:child_process');
      const child = spawn(process.execPath, [join(import.meta.dirname, '../../daemon/cli.ts'), 'sync', 'refused', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (b: Buffer) => { stderr += b.toString(); });
      const status = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      const r = { status, stderr };
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/sync "refused" is refused: it adds no numbers until this is fixed[\s\S]*fix: feed a Dynamic campaign/);
      expect(changes(sent, campaignId)).toEqual([]);
      expect(await campaignState(f, admin, campaignId)).toBe('Active');
    } finally {
      await proxy.close();
      await redis.cleanup();
    }
  }, 90_000);
});

describe('a refusal that comes after the daemon opened the campaign', () => {
  it('pauses it once, keeps it Paused while refused, and the window sets it again once the refusal is lifted', async () => {
    const campaignId = (await createCampaign(f.server, f.accountId, { name: 'Opened', type: 'Dynamic', state: 'Active' })).id;
    const { proxy, sent } = await recordingProxy(f);
    const redis = testPrefix();
    const logged: { msg: string }[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => { logged.push(JSON.parse(line)); } });
    const path = csv('opened', 'id,phone,dnc', ['1,+12122345690,']);
    const config = parseConfig({
      redis: { url: REDIS_URL, prefix: redis.prefix }, http: { host: '127.0.0.1', port: 0 },
      dialer: { baseUrl: proxy.url, accountId: f.accountId, apiToken: admin, rateLimit: { perSecond: 50, burst: 100 }, timeZone: 'America/New_York' },
      syncs: [{ id: 'opened', campaignId, source: { type: 'csv', path }, mapping: { phone: 'phone', doNotCall: 'dnc' }, schedule: { every: '1h' }, compliance: {} }],
    }, 'test config', {});
    // A Wednesday at 14:00 in New York: the callee's window is open.
    const now = () => Date.parse('2026-03-11T18:00:00Z');
    const d = await Daemon.start(config, { log, check: true, now });
    const rt = d.runtimes.get('opened')!;
    try {
      await waitFor(async () => (await campaignNumbers({ ...f, campaignId, token: admin })).length === 1, 'the sync\'s number');
      expect(await d.enforceWindow(rt, 'test')).toBe('Active');
      expect(await campaignState(f, admin, campaignId)).toBe('Active');

      // The Do Not Call column goes from the file: the sync is refused.
      writeFileSync(path, 'id,phone\n1,+12122345690\n');
      await d.refusals.check();
      const before = changes(sent, campaignId).length;
      expect(await d.enforceWindow(rt, 'test')).toBe('Paused');
      expect(changes(sent, campaignId).slice(before)).toEqual([expect.objectContaining({ method: 'PUT', body: '"Paused"' })]);
      expect(await campaignState(f, admin, campaignId)).toBe('Paused');
      expect(logged.map((l) => l.msg)).toContainEqual(expect.stringMatching(new RegExp(`^campaign ${campaignId} paused: its sync is refused, and the numbers the sync added before are held by no calling window until the refusal is lifted; it stays Paused until then \\(mapping\\.doNotCall`)));

      // While refused: no state change, however often the window checks.
      expect(await d.enforceWindow(rt, 'test')).toBe('Paused');
      expect(await d.enforceWindow(rt, 'test')).toBe('Paused');
      expect(changes(sent, campaignId).length).toBe(before + 1);
      expect(logged.map((l) => l.msg)).toContainEqual(expect.stringMatching(new RegExp(`^campaign ${campaignId} stays Paused \\(the daemon paused it for its calling window\\): the daemon does not resume it while its sync is refused; fix: `)));

      // The column is back: the refusal is lifted, and the window sets the campaign as it wants (open: Active).
      writeFileSync(path, 'id,phone,dnc\n1,+12122345690,\n');
      await d.refusals.check();
      await waitFor(async () => (await campaignState(f, admin, campaignId)) === 'Active', 'the campaign set Active again by its window');
      expect(logged.map((l) => l.msg)).toContain('sync "opened" is no longer refused: its checks pass; it adds numbers again');
    } finally {
      await d.close(2000);
      await proxy.close();
      await redis.cleanup();
    }
  }, 90_000);
});
