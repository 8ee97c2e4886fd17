// Calling windows on by default (issue 39), on the reference server's simulation clock: a configuration with no
// `compliance` block holds every sync to the default rules (federal window, state rows, every piece of evidence), no
// call starts outside its callee's window and `status --json` shows each sync's window and rules; a configuration
// that turns them off (`compliance: { off: "<reason>" }`) dials at night and says why in the start log, `status`
// (text and --json) and /ops, while a sync that turns them back on with its own block, on a key without Campaign
// Admin, is named loudly in the start log.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { Daemon } from '../../daemon/app.ts';
import type { WindowStatus } from '../../daemon/compliance/campaign-window.ts';
import type { RulesStatus } from '../../daemon/compliance/in-force.ts';
import { locate } from '../../daemon/compliance/locate.ts';
import { callingWindow, DEFAULT_RULE_SET } from '../../api/calling-window/window.ts';
import { toUtc } from '../../daemon/local-time.ts';
import { createLogger } from '../../daemon/log.ts';
import { launchChromium } from '../support/browser.ts';
import { callDetailRecords, campaignNumbers, daemonConfig, quietLog, REDIS_URL, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { createAccount, createCampaign, createKey, startServer, type TestServer } from '../support/server.ts';

const ROOT = join(import.meta.dirname, '../..');
const TZ = 'America/New_York';
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
/** The longest step of the simulation clock between two checks (a check also comes at every edge the daemon names). */
const MAX_STEP_S = 900;
const OPS_TOKEN = 'an operations token for the default rules';
const dir = mkdtempSync(join(tmpdir(), 'cds-default-rules-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Call { number: string; attempt: number; startedAtLocal: string }
interface StatusJson { sync: string; rules: RulesStatus; window: (WindowStatus & { heldByWindow: number }) | null }

/** A campaign the server dials all day: only the daemon's window (if any) holds its calls. */
async function campaign(server: TestServer, accountId: string, name: string): Promise<string> {
  const c = await createCampaign(server, accountId, { name, type: 'Dynamic', state: 'Active', dialer: { mode: 'Power', agents: 2, maxAttempts: 1, callingHours: ALL_DAY } });
  return c.id;
}

function csv(name: string, phones: string[]): string {
  const file = join(dir, `${name}.csv`);
  writeFileSync(file, `id,phone\n${phones.map((p, i) => `c${i},${p}`).join('\n')}\n`);
  return file;
}

/** `daemon/cli.ts <args> --config <raw as a file>`, as an operator runs it. */
async function cli(raw: Record<string, unknown>, args: string[]): Promise<string> {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(raw));
  const { stdout } = await promisify(execFile)(process.execPath, ['daemon/cli.ts', ...args, '--config', file], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  return stdout;
}

const f = (server: TestServer, accountId: string, token: string, campaignId: string): DialerFixture => ({ server, accountId, token, campaignId });

describe('a configuration without a compliance block', () => {
  it('holds every sync to its callees\' windows: no call starts outside one, and status --json shows each sync\'s window and rules', async () => {
    // 08:00 UTC on Wednesday 1 July 2026: 04:00 in New York, 01:00 in Los Angeles, 22:00 the day before in Honolulu.
    const start = '2026-07-01T08:00:00Z';
    const server = await startServer({ seed: 39, clockStart: start });
    const account = await createAccount(server, 'Default Co', TZ);
    // Pausing and resuming a campaign takes Campaign Admin: the key a governed sync needs.
    const token = await createKey(server, account.id, ['CampaignAdmin']);
    const east = f(server, account.id, token, await campaign(server, account.id, 'East'));
    const west = f(server, account.id, token, await campaign(server, account.id, 'West'));
    const phones = { east: ['+12122345670', '+12122345671', '+13052345670'], west: ['+12132345670', '+18082345670'] };
    const { prefix, cleanup } = testPrefix();
    const syncs = [
      { id: 'east', campaignId: east.campaignId, source: { type: 'csv', path: csv('east', phones.east) }, mapping: { phone: 'phone' }, schedule: { every: '1d' } },
      { id: 'west', campaignId: west.campaignId, source: { type: 'csv', path: csv('west', phones.west) }, mapping: { phone: 'phone' }, schedule: { every: '1d' } },
    ];
    const dialer = { baseUrl: server.url, accountId: account.id, apiToken: token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ };
    // `compliance: undefined`: the test helper's own default (rules off) left out, as a file without the block is.
    const config = daemonConfig(east, prefix, syncs, { dialer, compliance: undefined });
    expect(config.compliance).toBeUndefined();
    let now = Date.parse(start);
    const d = await Daemon.start(config, { log: quietLog, now: () => now });
    try {
      const rts = (['east', 'west'] as const).map((id) => d.runtimes.get(id)!);
      // Closed for every callee: the import holds every number back and the campaigns are paused.
      for (const rt of rts) {
        expect(rt.window, `${rt.config.id} is governed`).toBeDefined();
        await waitFor(async () => (await d.redis.scard(rt.state.keys.dirty)) === phones[rt.config.id as 'east' | 'west'].length, `${rt.config.id}'s numbers waiting for the window`);
      }
      const states: Record<string, string[]> = { east: [], west: [] };
      const end = now + 86_400_000;
      while (now < end) {
        let next = now + MAX_STEP_S * 1000;
        for (const rt of rts) {
          // The check its scheduler runs every checkEvery; the edge it names is the clock's next stop at the latest.
          const state = await d.enforceWindow(rt, 'test', true);
          const list = states[rt.config.id]!;
          if (state !== list.at(-1)) {
            list.push(state);
            const fx = rt.config.id === 'east' ? east : west;
            if (state === 'Active' && list.length === 2) await waitFor(async () => (await campaignNumbers(fx)).length === phones[rt.config.id as 'east' | 'west'].length, `${rt.config.id}'s numbers added when its window opened`);
          }
          const edge = (await rt.window!.status()).nextEdgeAt;
          if (edge && Date.parse(edge) > now) next = Math.min(next, Date.parse(edge));
        }
        await server.advance((next - now) / 1000);
        now = next;
      }
      // Each campaign opened with its callees' shared window and closed a margin before it ended.
      expect(states).toEqual({ east: ['Paused', 'Active', 'Paused'], west: ['Paused', 'Active', 'Paused'] });
      const calls = [...await callDetailRecords<Call>(east), ...await callDetailRecords<Call>(west)];
      expect(new Set(calls.map((c) => c.number))).toEqual(new Set([...phones.east, ...phones.west]));
      expect(calls.filter((c) => !callingWindow(locate(c.number), DEFAULT_RULE_SET, toUtc(c.startedAtLocal, TZ)).open)).toEqual([]);

      // The state rows' caps are counted by the mirror a governed sync gets: it reads the calls and judges them too.
      for (const id of ['east', 'west']) await d.triggerMirror(id, 'test');
      await waitFor(async () => {
        const w = await Promise.all(rts.map(async (rt) => (await rt.window!.status()).callsInside));
        return w[0]! + w[1]! === calls.length;
      }, 'every call counted by the mirrors');

      // `status --json` on the same file (tokens and all, no block): the rules and the window of every sync.
      const status = JSON.parse(await cli({ redis: { url: REDIS_URL, prefix }, http: { port: 0 }, dialer, syncs, log: { level: 'error' } }, ['status', '--json'])) as StatusJson[];
      expect(status.map((s) => s.sync)).toEqual(['east', 'west']);
      for (const s of status) {
        expect(s.rules).toEqual({
          on: true, from: 'default', federal: { from: '08:00', to: '21:00' }, stateRules: true, window: null, evidence: 'all', zones: null,
          summary: 'on (the default: no compliance block): federal 08:00-21:00; state rows on; no operator window; evidence all, in each callee\'s local time',
        });
        expect(s.window).toMatchObject({ state: 'Paused', callsOutside: 0, heldByCap: 0 });
        expect(s.window!.callsInside).toBeGreaterThan(0);
        expect(Date.parse(s.window!.nextEdgeAt!)).toBeGreaterThan(now);
      }
      // New York and Florida (its own 20:00 row); Los Angeles and Honolulu.
      expect(status[0]!.window!.groups).toHaveLength(2);
      expect(status[1]!.window!.groups).toHaveLength(2);
    } finally {
      await d.close(2000);
      await server.close();
      await cleanup();
    }
  }, 240_000);
});

describe('compliance: { off: "<reason>" }', () => {
  it('dials without windows and says why in the start log, status (text and --json) and /ops; a sync that turns them back on without Campaign Admin is named loudly', async () => {
    // 07:00 UTC: 03:00 in New York, long before its window.
    const server = await startServer({ seed: 39, clockStart: '2026-07-01T07:00:00Z' });
    const account = await createAccount(server, 'Informational Co', TZ);
    // A key that adds, lists and deletes numbers and reads reports, but may not pause a campaign (no Campaign Admin).
    const token = await createKey(server, account.id, ['CampaignNumberAdmin', 'CampaignReader']);
    const info = f(server, account.id, token, await campaign(server, account.id, 'Reminders'));
    const governedCampaign = await campaign(server, account.id, 'Sales');
    const phones = ['+12122345670', '+12122345671'];
    const { prefix, cleanup } = testPrefix();
    const dialer = { baseUrl: server.url, accountId: account.id, apiToken: token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ };
    const syncs = [
      { id: 'info', campaignId: info.campaignId, source: { type: 'csv', path: csv('info', phones) }, mapping: { phone: 'phone' }, schedule: { every: '1d' } },
      // Its own block turns the rules back on for it alone; its CSV is empty, so only its window's checks use the key.
      { id: 'governed', campaignId: governedCampaign, source: { type: 'csv', path: csv('governed', []) }, mapping: { phone: 'phone' }, schedule: { every: '1d' }, compliance: {} },
    ];
    const raw = { redis: { url: REDIS_URL, prefix }, http: { host: '127.0.0.1', port: 0, adminToken: OPS_TOKEN }, dialer, syncs, compliance: { off: 'informational calls' }, log: { level: 'info' } };
    let log = '';
    const sink = new Writable({ write(chunk: Buffer, _enc, done) { log += chunk.toString(); done(); } });
    const d = await Daemon.start(daemonConfig(info, prefix, syncs, raw), { log: createLogger('info', sink) });
    try {
      expect(d.runtimes.get('info')!.window).toBeUndefined();
      await waitFor(async () => (await campaignNumbers(info)).length === phones.length, 'the numbers in the campaign at 03:00 their time');
      await server.advance(3600);
      const calls = await callDetailRecords<Call>(info);
      expect(calls.length).toBeGreaterThan(0);
      // Every call started at night where its callee lives: nothing held them.
      expect(calls.every((c) => !callingWindow(locate(c.number), DEFAULT_RULE_SET, toUtc(c.startedAtLocal, TZ)).open)).toBe(true);

      // The start log: the reason for the sync without rules; the governed sync, and that its key needs Campaign Admin.
      const lines = log.trim().split('\n').map((l) => JSON.parse(l) as { level: number; msg: string; sync?: string });
      expect(lines.find((l) => l.sync === 'info' && /rules OFF/.test(l.msg))).toMatchObject({ level: 40, msg: 'calling-window rules OFF for sync "info": informational calls. Its campaign calls whenever the dialer does' });
      expect(lines.find((l) => l.sync === 'governed' && /rules ON/.test(l.msg))?.msg).toMatch(/^calling-window rules ON for sync "governed": campaign \S+ is paused outside its callees' windows, so its dialer key needs the Campaign Admin role/);
      const refused = lines.find((l) => l.sync === 'governed' && l.level === 50);
      expect(refused?.msg).toBe(`sync "governed" is under the calling-window rules, but its dialer key may not pause or resume campaign ${governedCampaign} (403): ` +
        `campaign ${governedCampaign} stays as the dialer has it (the daemon never set its state), and the sync adds no numbers; ` +
        'fix: give the key the Campaign Admin role, or turn the rules off for the sync with compliance: { off: "<reason>" }');

      // status --json and the text.
      const status = JSON.parse(await cli({ ...raw, log: { level: 'error' } }, ['status', '--json'])) as StatusJson[];
      expect(status.find((s) => s.sync === 'info')).toMatchObject({ rules: { on: false, off: 'informational calls', from: 'configuration', summary: 'off (the top-level compliance block): informational calls' }, window: null });
      expect(status.find((s) => s.sync === 'governed')!.rules).toMatchObject({ on: true, from: 'sync', stateRules: true, evidence: 'all' });
      const text = await cli({ ...raw, log: { level: 'error' } }, ['status']);
      expect(text).toContain('  calling-window rules off (the top-level compliance block): informational calls');
      expect(text).toContain('  calling-window rules on (the sync\'s compliance block): federal 08:00-21:00; state rows on');

      // /ops, as an operator's browser renders it.
      const browser = await launchChromium();
      try {
        const context = await browser.newContext({ httpCredentials: { username: 'ops', password: OPS_TOKEN } });
        const page = await context.newPage();
        expect((await page.goto(`${d.address}/ops`))?.status()).toBe(200);
        const rules = (id: string) => page.locator(`[data-sync="${id}"] [data-field="rules"]`);
        await rules('info').waitFor();
        expect(await rules('info').textContent()).toBe('Calling-window rules off (the top-level compliance block): informational calls');
        expect(await rules('governed').textContent()).toMatch(/^Calling-window rules on \(the sync's compliance block\): federal 08:00-21:00/);
      } finally {
        await browser.close();
      }
    } finally {
      await d.close(2000);
      await server.close();
      await cleanup();
    }
  }, 120_000);
});
