// `start` fails closed on configuration: it runs the checks of `check`, refuses the syncs whose configuration would
// make a rule fail open (they add no numbers; status and /ops say why, with the fix) and runs the others; `sync <id>`
// checks a refused sync again, and lifts the refusal once the check passes.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import type { SyncStatus } from '../../daemon/sync/status.ts';
import { campaignNumbers, dialerFixture, REDIS_URL, rulesOff, spawnDaemon, testPrefix, waitFor, type DaemonProcess, type DialerFixture } from '../support/daemon.ts';
import { startProxy } from '../support/proxy.ts';
import { createCampaign, createKey } from '../support/server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OPS_TOKEN = 'ops-token-0123456789abcdef';

/** Runs `node daemon/cli.ts <args> --config FILE` on this configuration (the rules off unless it says otherwise). */
function cli(config: Record<string, unknown>, dir: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const file = join(dir, `cli-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(rulesOff(config)));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['daemon/cli.ts', ...args, '--config', file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (b: Buffer) => { stdout += b.toString(); });
    child.stderr.on('data', (b: Buffer) => { stderr += b.toString(); });
    const guard = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', reject);
    child.on('close', (code) => { clearTimeout(guard); resolve({ code, stdout, stderr }); });
  });
}

const e164 = (phone: string | null | undefined) => (phone ? `+1${phone.replace(/\D/g, '').slice(-10)}` : null);

describe('start refuses a sync whose Do Not Call field the CRM does not have, and runs the others', () => {
  const redis = testPrefix();
  let f: DialerFixture;
  let hs: HubSpotStandIn;
  let dir: string;
  let daemon: DaemonProcess;
  let typoCampaign: string;
  let config: Record<string, unknown>;

  beforeAll(async () => {
    f = await dialerFixture();
    typoCampaign = (await createCampaign(f.server, f.accountId, { name: 'Typo', type: 'Dynamic', state: 'Active' })).id;
    hs = await startHubSpotStandIn({ contacts: 24, doNotCallShare: 0.25 });
    dir = mkdtempSync(join(tmpdir(), 'cds-check-start-'));
    const source = { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token };
    config = {
      redis: { url: REDIS_URL, prefix: redis.prefix },
      http: { host: '127.0.0.1', port: 0, adminToken: OPS_TOKEN },
      dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 } },
      syncs: [
        { id: 'typo', campaignId: typoCampaign, source, mapping: { phone: 'phone', doNotCall: 'do_not_cal', defaultCountry: 'US' }, schedule: { every: '1h' } },
        { id: 'good', campaignId: f.campaignId, source, mapping: { phone: 'phone', doNotCall: 'do_not_call', defaultCountry: 'US' }, schedule: { every: '1h' } },
      ],
      log: { level: 'info' },
    };
    daemon = await spawnDaemon(config, dir);
  }, 60_000);

  afterAll(async () => {
    await daemon?.stop();
    await hs?.close();
    await f?.server.close();
    await redis.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('plans no number of the refused sync, names it with the fix in status (text and --json) and on /ops; the other sync runs', async () => {
    const wanted = new Set(hs.contacts().filter((c) => c.properties.do_not_call !== 'true').map((c) => e164(c.properties.phone)).filter((p) => p !== null));
    expect(wanted.size).toBeLessThan(hs.contacts().length);
    await waitFor(async () => (await campaignNumbers(f)).length === wanted.size, 'the good sync\'s numbers, Do Not Call ones left out', 60_000);
    expect(new Set((await campaignNumbers(f)).map((n) => n.number))).toEqual(wanted);
    expect(await campaignNumbers({ ...f, campaignId: typoCampaign })).toEqual([]);

    const status = JSON.parse((await cli({ ...config, log: { level: 'error' } }, dir, ['status', '--json'])).stdout) as SyncStatus[];
    const typo = status.find((s) => s.sync === 'typo')!;
    expect(typo.runs).toEqual([]);
    expect(typo.refused?.problems).toEqual([{
      check: 'crm.doNotCall',
      message: 'mapping.doNotCall: the HubSpot contact property "do_not_cal" does not exist; close ones that exist: do_not_call ("Do not call"): every contact would read as not marked Do Not Call, and be called',
      fix: 'name an existing field in mapping.doNotCall (do_not_call?), or create "do_not_cal" (HubSpot: Settings > Properties > Contact properties)',
    }]);
    expect(status.find((s) => s.sync === 'good')!.refused).toBeNull();
    const text = (await cli({ ...config, log: { level: 'error' } }, dir, ['status'])).stdout;
    expect(text).toMatch(/^typo .*\n {2}contacts held 0.*\n {2}in the campaign, not this sync's: 0 .*\n {2}REFUSED since \S+ \(checked \S+\): it adds no numbers until this is fixed\n {4}crm\.doNotCall: mapping\.doNotCall: the HubSpot contact property "do_not_cal" does not exist/m);
    expect(text).toContain('      fix: name an existing field in mapping.doNotCall (do_not_call?)');
    // The Do Not Call lists that hold each sync: here the company's own alone, with the marks the good sync read.
    expect(text).toMatch(/\n {2}Do Not Call lists: the company's \(\d+ numbers\) keeps out 0\n/);

    const ops = await fetch(`${await daemon.address}/ops/api/syncs`, { headers: { authorization: `Basic ${Buffer.from(`ops:${OPS_TOKEN}`).toString('base64')}` } });
    const page = (await ops.json()) as { syncs: SyncStatus[] } | SyncStatus[];
    const listed = Array.isArray(page) ? page : page.syncs;
    expect(listed.find((s) => s.sync === 'typo')!.refused?.problems[0]?.check).toBe('crm.doNotCall');
    expect(daemon.output()).toMatch(/sync \\"typo\\" is REFUSED: it adds no numbers until this is fixed \(the other syncs run\)/);
  }, 120_000);

  it('sync <id> checks it again: refused while the property is missing, run once it exists', async () => {
    const refused = await cli({ ...config, log: { level: 'error' } }, dir, ['sync', 'typo']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('sync "typo" is refused: it adds no numbers until this is fixed');
    expect(refused.stderr).toMatch(/FAIL {2}typo crm\.doNotCall: mapping\.doNotCall: the HubSpot contact property "do_not_cal" does not exist/);
    expect(await campaignNumbers({ ...f, campaignId: typoCampaign })).toEqual([]);

    // Someone creates the property in HubSpot (a contact holds it): the next check passes and lifts the refusal.
    hs.updateContact(hs.contacts()[0]!.id, { do_not_cal: 'true' });
    const run = await cli({ ...config, log: { level: 'error' } }, dir, ['sync', 'typo']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'done', sync: 'typo' });
    expect((await campaignNumbers({ ...f, campaignId: typoCampaign })).length).toBeGreaterThan(0);
    const status = JSON.parse((await cli({ ...config, log: { level: 'error' } }, dir, ['status', '--json'])).stdout) as SyncStatus[];
    expect(status.find((s) => s.sync === 'typo')!.refused).toBeNull();
  }, 120_000);
});

describe('start refuses a windowed sync whose key may not pause its campaign', () => {
  it('refuses it (no run, no number) with the fix, and runs the sync with the rules off on the same key', async () => {
    const f = await dialerFixture();
    const redis = testPrefix();
    const dir = mkdtempSync(join(tmpdir(), 'cds-check-start-'));
    // Adds, lists and deletes numbers and reads reports, but may not pause a campaign (no Campaign Admin).
    const token = await createKey(f.server, f.accountId, ['CampaignNumberAdmin', 'CampaignReader']);
    const windowedCampaign = (await createCampaign(f.server, f.accountId, { name: 'Sales', type: 'Dynamic', state: 'Active' })).id;
    const csv = (name: string, phones: string[]) => {
      const path = join(dir, `${name}.csv`);
      writeFileSync(path, ['id,phone', ...phones.map((p, i) => `${i + 1},${p}`)].join('\n'));
      return path;
    };
    const config = {
      redis: { url: REDIS_URL, prefix: redis.prefix },
      http: { host: '127.0.0.1', port: 0 },
      dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: 'America/New_York' },
      syncs: [
        { id: 'windowed', campaignId: windowedCampaign, source: { type: 'csv', path: csv('windowed', ['+12122345670', '+12122345671']) }, mapping: { phone: 'phone' }, schedule: { every: '1h' }, compliance: {} },
        { id: 'plain', campaignId: f.campaignId, source: { type: 'csv', path: csv('plain', ['+12122345672', '+12122345673']) }, mapping: { phone: 'phone' }, schedule: { every: '1h' } },
      ],
      log: { level: 'info' },
    };
    const daemon = await spawnDaemon(config, dir);
    try {
      await waitFor(async () => (await campaignNumbers(f)).length === 2, 'the plain sync\'s numbers', 60_000);
      const status = JSON.parse((await cli({ ...config, log: { level: 'error' } }, dir, ['status', '--json'])).stdout) as SyncStatus[];
      const windowed = status.find((s) => s.sync === 'windowed')!;
      expect(windowed.runs).toEqual([]);
      expect(windowed.refused?.problems[0]).toMatchObject({
        check: 'dialer.state',
        fix: 'give the key the Campaign Admin role, or turn the rules off for this sync with compliance: { off: "<reason>" } (if its calls are not telemarketing)',
      });
      expect(windowed.refused?.problems[0]?.message).toMatch(/^the key may not change campaign \S+ \("Sales"\)'s state \(403: .*CampaignAdmin would\): the calling window could not pause the campaign/);
      expect(await campaignNumbers({ ...f, campaignId: windowedCampaign })).toEqual([]);
      expect(status.find((s) => s.sync === 'plain')!.refused).toBeNull();
    } finally {
      await daemon.stop();
      await f.server.close();
      await redis.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('a pause the dialer refuses though the probe passed', () => {
  it('refuses the sync at the 403, and lifts the refusal at the first state change that passes', async () => {
    // A dialer that looks at a state change's body before the key's role: the probe (a change to no state) is refused
    // for its body, the real pause for the role.
    const f = await dialerFixture();
    const admin = await createKey(f.server, f.accountId, ['CampaignAdmin']);
    const proxy = await startProxy(f.server.url);
    let refuse = true;
    proxy.interceptWithBody = (req, body) => (refuse && req.method === 'PUT' && /\/state$/.test(req.url ?? '') && body.toString() !== 'null'
      ? { status: 403, headers: { 'content-type': 'application/problem+json' }, body: JSON.stringify({ title: 'Forbidden', detail: 'The key may not change states' }) } : undefined);
    const redis = testPrefix();
    const dir = mkdtempSync(join(tmpdir(), 'cds-check-start-'));
    const path = join(dir, 'contacts.csv');
    writeFileSync(path, 'id,phone\n1,+12122345674\n');
    const config = {
      redis: { url: REDIS_URL, prefix: redis.prefix },
      http: { host: '127.0.0.1', port: 0 },
      dialer: { baseUrl: proxy.url, accountId: f.accountId, apiToken: admin, rateLimit: { perSecond: 50, burst: 100 }, timeZone: 'America/New_York' },
      syncs: [{ id: 'windowed', campaignId: f.campaignId, source: { type: 'csv', path }, mapping: { phone: 'phone' }, schedule: { every: '1h' }, compliance: { checkEvery: '1s' } }],
      log: { level: 'info' },
    };
    const daemon = await spawnDaemon(config, dir);
    const refusal = async () => (JSON.parse((await cli({ ...config, log: { level: 'error' } }, dir, ['status', '--json'])).stdout) as SyncStatus[])[0]!.refused;
    try {
      const refused = await waitFor(refusal, 'the refusal at the 403', 30_000);
      expect(refused.problems).toEqual([expect.objectContaining({ check: 'dialer.state', observed: true, message: expect.stringMatching(/^the dialer refused to pause or resume campaign \S+ \(403\)/) })]);
      expect(await campaignNumbers(f)).toEqual([]);
      refuse = false;
      await waitFor(async () => (await refusal()) === null, 'the refusal lifted by the next state change', 30_000);
      expect(daemon.output()).toMatch(/sync \\"windowed\\" is no longer refused/);
    } finally {
      await daemon.stop();
      await proxy.close();
      await f.server.close();
      await redis.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
