// `check` on the configurations operators ran before 0.2.0: a8ba58f's documented files (fixtures/a8ba58f/, verbatim
// from its README). Today's loader accepts them unchanged, and `check` names every change the new version needs,
// with a key as that README asked (Campaign Number Admin and Campaign Reader): the calling-window rules now hold a
// sync without a `compliance` block (a warning saying what that changes), so the key needs Campaign Admin or the
// rules an `off` reason (start refuses the sync until one is done). Each of the CHANGELOG's two fixes clears both.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { startPipedriveStandIn, type PipedriveStandIn } from '../../crm-stand-ins/pipedrive.ts';
import { runChecks } from '../../daemon/check/command.ts';
import type { CheckReport } from '../../daemon/check/checks.ts';
import { parseConfig } from '../../daemon/config.ts';
import { quietLog, REDIS_URL, testPrefix } from '../support/daemon.ts';
import { createAccount, createCampaign, createKey, startServer, type TestServer } from '../support/server.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures/a8ba58f');
const oldFile = (name: string) => parseYaml(readFileSync(join(FIXTURES, name), 'utf8')) as Record<string, any>;
/** The environment a8ba58f's file names (`${…}`): values only, nothing the checks below read. */
const FILE_ENV = {
  CDS_ADMIN_TOKEN: 'ops-admin-token-0123456789', DIALER_API_TOKEN: 'x', OTHER_KEY: 'y', HUBSPOT_TOKEN: 'x', HUBSPOT_CLIENT_SECRET: 'x',
  DIALER_EVENTS_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}`, PIPEDRIVE_TOKEN: 'x', PIPEDRIVE_WEBHOOK_PASSWORD: 'pd-password-0123456789',
  SIGNUP_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 9).toString('base64')}`,
};
const FIX = /give the key the Campaign Admin role, or turn the rules off for this sync with compliance: \{ off: "<reason>" \}/;

let server: TestServer;
let hs: HubSpotStandIn;
let pd: PipedriveStandIn;
let accountId: string;
/** Keys as a8ba58f's README asked (Campaign Number Admin and Campaign Reader), and with Campaign Admin (the fix). */
const keys: Record<'asked' | 'admin', { main: string; other: string }> = { asked: { main: '', other: '' }, admin: { main: '', other: '' } };
const campaigns: string[] = [];
let filterId: number;
let dir: string;
const prefix = testPrefix();

beforeAll(async () => {
  server = await startServer();
  accountId = (await createAccount(server, 'Upgrade Co', 'America/New_York')).id;
  for (let i = 0; i < 4; i++) campaigns.push((await createCampaign(server, accountId, { name: `old ${i}`, type: 'Dynamic', state: 'Active' })).id);
  for (const k of ['main', 'other'] as const) {
    keys.asked[k] = await createKey(server, accountId, ['CampaignNumberAdmin', 'CampaignReader']);
    keys.admin[k] = await createKey(server, accountId, ['CampaignNumberAdmin', 'CampaignReader', 'CampaignAdmin']);
  }
  hs = await startHubSpotStandIn({ contacts: 10, doNotCallShare: 0.2 }); // a portal with the file's do_not_call property
  pd = await startPipedriveStandIn({ persons: 10 });
  filterId = pd.filters.create('Leads', () => true);
  dir = mkdtempSync(join(tmpdir(), 'cds-check-upgrade-'));
}, 60_000);

afterAll(async () => {
  await Promise.all([hs?.close(), pd?.close()]);
  await server?.close();
  await prefix.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * a8ba58f's file with only what points at the world changed (the dialer, the campaigns, the CRMs' addresses, the
 * Pipedrive filter, the CSV file, the Redis prefix): every setting it documented stays as written.
 */
function pointedHere(file: Record<string, any>, key: { main: string; other: string }): Record<string, any> {
  const csv = join(dir, 'fair.csv');
  writeFileSync(csv, 'email,phone\nann@example.com,+442079460000\n');
  const [hubspot, pipedrive, webhook, trade] = file.syncs;
  return {
    ...file,
    redis: { ...file.redis, url: REDIS_URL, prefix: prefix.prefix },
    dialer: { ...file.dialer, baseUrl: server.url, accountId, apiToken: key.main },
    syncs: [
      { ...hubspot, campaignId: campaigns[0], dialer: { apiToken: key.other }, source: { ...hubspot.source, baseUrl: hs.url, accessToken: hs.token } },
      { ...pipedrive, campaignId: campaigns[1], source: { ...pipedrive.source, baseUrl: pd.url, apiToken: pd.apiToken, selection: { filterId } } },
      { ...webhook, campaignId: campaigns[2] },
      { ...trade, campaignId: campaigns[3], source: { ...trade.source, path: csv } },
    ],
  };
}

const results = (report: CheckReport, check: string) => report.checks.filter((r) => r.check === check);

describe('check on a8ba58f\'s documented configuration', () => {
  it('loads unchanged with today\'s schema: no compliance block, so every sync is under the default rules', () => {
    const config = parseConfig(oldFile('configuration.yaml'), 'configuration.yaml', FILE_ENV);
    expect(config.syncs.map((s) => s.id)).toEqual(['hubspot-leads', 'pipedrive-people', 'shop-signups', 'trade-fair']);
    expect(config.syncs.map((s) => s.rules.from)).toEqual(['default', 'default', 'default', 'default']);
    // With its compliance block (the same README's "Calling windows"), the rules are the file's own.
    const windowed = parseConfig({ ...oldFile('configuration.yaml'), compliance: oldFile('compliance.yaml').compliance }, 'configuration.yaml', FILE_ENV);
    expect(windowed.syncs.map((s) => s.rules.from)).toEqual(['configuration', 'configuration', 'configuration', 'configuration']);
  });

  it('with the key its README asked for, names both fixes for every sync and warns that the rules now hold it', async () => {
    const report = await runChecks(parseConfig(pointedHere(oldFile('configuration.yaml'), keys.asked), 'old', FILE_ENV), quietLog);
    const ids = ['hubspot-leads', 'pipedrive-people', 'shop-signups', 'trade-fair'];
    for (const id of ids) {
      // What start refuses the sync for: only the role (every other check of the old file is as today's needs it).
      expect(report.syncs[id]!.refusals.map((r) => r.check), `${id}: ${JSON.stringify(report.syncs[id])}`).toEqual(['dialer.state']);
      expect(report.syncs[id]!.refusals[0]!.fix).toMatch(FIX);
    }
    const rules = results(report, 'windows.rules');
    expect(rules.map((r) => [r.sync, r.status])).toEqual(ids.map((id) => [id, 'warn']));
    for (const r of rules) {
      expect(r.message).toMatch(/^calling-window rules on \(the default: no compliance block\): federal 08:00-21:00; state rows on; .*A checkout from before this default \(such as a8ba58f\) held a sync without a compliance block to no window; now its campaign is paused outside its callees' windows, .*the key needs the Campaign Admin role$/);
      expect(r.fix).toBe('say which you mean in the file: compliance: {} keeps the rules (the key needs Campaign Admin), compliance: { off: "<reason>" } turns them off for calls that are not telemarketing');
    }
    expect(report.ok).toBe(false);
  }, 60_000);

  it('fixed with compliance: { off: "<reason>" }: nothing refused, the rules said to be off and why', async () => {
    const file = { ...pointedHere(oldFile('configuration.yaml'), keys.asked), compliance: { off: 'informational calls, not telemarketing' } };
    const report = await runChecks(parseConfig(file, 'fixed', FILE_ENV), quietLog);
    for (const [id, verdict] of Object.entries(report.syncs)) expect(verdict.refusals, id).toEqual([]);
    expect(results(report, 'dialer.state').every((r) => r.status === 'skip')).toBe(true);
    expect(results(report, 'windows.rules').map((r) => [r.status, r.message])).toEqual(Object.keys(report.syncs).map(() =>
      ['ok', 'calling-window rules off (the top-level compliance block): informational calls, not telemarketing']));
  }, 60_000);

  it('fixed with the Campaign Admin role and the rules kept in the file (a8ba58f\'s own compliance block): nothing refused, nothing warned', async () => {
    const file = { ...pointedHere(oldFile('configuration.yaml'), keys.admin), compliance: oldFile('compliance.yaml').compliance };
    const report = await runChecks(parseConfig(file, 'fixed', FILE_ENV), quietLog);
    for (const [id, verdict] of Object.entries(report.syncs)) expect(verdict.refusals, id).toEqual([]);
    expect(results(report, 'dialer.state').map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(results(report, 'windows.rules').map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(results(report, 'windows.rules')[0]!.message).toMatch(/^calling-window rules on \(the top-level compliance block\): .*operator window 09:00-20:00 mon,tue,wed,thu,fri/);
    // The role alone (no block): start runs the syncs, and check still says the rules came by default.
    const roleOnly = await runChecks(parseConfig(pointedHere(oldFile('configuration.yaml'), keys.admin), 'role only', FILE_ENV), quietLog);
    for (const [id, verdict] of Object.entries(roleOnly.syncs)) expect(verdict.refusals, id).toEqual([]);
    expect(results(roleOnly, 'windows.rules').map((r) => r.status)).toEqual(['warn', 'warn', 'warn', 'warn']);
  }, 60_000);
});
