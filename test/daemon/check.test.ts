// `check`: every connection and permission each sync needs, tried read-only against the reference server and the CRM
// stand-ins, one result each; what it costs on a healthy configuration; its --json shape and its exit codes (the CLI as
// a process).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { DO_NOT_CALL_FIELD, startPipedriveStandIn, type PipedriveStandIn } from '../../crm-stand-ins/pipedrive.ts';
import { startSalesforceStandIn, type SalesforceStandIn } from '../../crm-stand-ins/salesforce.ts';
import { runChecks } from '../../daemon/check/command.ts';
import type { CheckReport } from '../../daemon/check/checks.ts';
import type { CheckResult } from '../../daemon/check/result.ts';
import { parseConfig, type Config } from '../../daemon/config.ts';
import { quietLog, REDIS_URL } from '../support/daemon.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { createAccount, createCampaign, createKey, startServer, type TestServer } from '../support/server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TZ = 'America/New_York';
const WEBHOOK_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
/** A Pipedrive text field an account might have made for Do Not Call: not an option field. */
const TEXT_DNC = { key: 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678', name: 'Do not call (text)', field_type: 'varchar' as const };

interface Exit { code: number | null; stdout: string; stderr: string }

function cli(args: string[], env: Record<string, string> = {}): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['daemon/cli.ts', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (b: Buffer) => { stdout += b.toString(); });
    child.stderr.on('data', (b: Buffer) => { stderr += b.toString(); });
    const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => { clearTimeout(guard); resolve({ code, stdout, stderr }); });
  });
}

let server: TestServer;
let proxy: Proxy;
let hs: HubSpotStandIn;
let pd: PipedriveStandIn;
let sf: SalesforceStandIn;
let sfNoTask: SalesforceStandIn;
let dir: string;
let accountId: string;
let adminToken: string;
let readerToken: string;
const campaigns: Record<string, string> = {};
let listId: string;
let filterId: number;
let csvPath: string;

beforeAll(async () => {
  server = await startServer();
  proxy = await startProxy(server.url);
  accountId = (await createAccount(server, 'Check Co', TZ)).id;
  for (const name of ['hs', 'pd', 'sf', 'csv', 'web']) campaigns[name] = (await createCampaign(server, accountId, { name, type: 'Dynamic', state: 'Active' })).id;
  campaigns.static = (await createCampaign(server, accountId, { name: 'Static', type: 'Static', state: 'Active' })).id;
  adminToken = await createKey(server, accountId, ['CampaignAdmin']);
  // Adds, lists and deletes numbers, reads reports: everything but pausing a campaign.
  readerToken = await createKey(server, accountId, ['CampaignNumberAdmin', 'CampaignReader']);
  hs = await startHubSpotStandIn({ contacts: 30, doNotCallShare: 0.25 });
  listId = hs.lists.create('Leads', hs.contacts().slice(0, 20).map((c) => c.id));
  pd = await startPipedriveStandIn({ persons: 20, doNotCallShare: 0.25, personFields: [TEXT_DNC] });
  filterId = pd.filters.create('Leads', () => true);
  sf = await startSalesforceStandIn({ contacts: 10, leads: 10 });
  sfNoTask = await startSalesforceStandIn({ contacts: 10, leads: 10, objectAccess: { Task: 'none' } });
  dir = mkdtempSync(join(tmpdir(), 'cds-check-'));
  csvPath = join(dir, 'contacts.csv');
  writeFileSync(csvPath, 'id,phone,firstName,doNotCall\n1,+12125550100,Ann,no\n');
}, 60_000);

afterAll(async () => {
  await Promise.all([hs?.close(), pd?.close(), sf?.close(), sfNoTask?.close(), proxy?.close()]);
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const hubspotSync = (extra: Record<string, unknown> = {}) => ({
  id: 'hs', campaignId: campaigns.hs,
  source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, clientSecret: 'hs-client-secret', selection: { listId } },
  mapping: { phone: ['phone', 'mobilephone'], variables: { firstName: 'firstname' }, doNotCall: 'do_not_call', defaultCountry: 'US', timeZone: 'hs_timezone', region: 'state', postalCode: 'zip', country: 'country' },
  mirror: { sink: { type: 'source' } },
  ...extra,
});
const pipedriveSync = (extra: Record<string, unknown> = {}) => ({
  id: 'pd', campaignId: campaigns.pd,
  source: { type: 'pipedrive', baseUrl: pd.url, apiToken: pd.apiToken, webhookUser: 'pd', webhookPassword: 'pd-password', selection: { filterId } },
  mapping: { phone: 'phones', variables: { name: 'name' }, doNotCall: { field: DO_NOT_CALL_FIELD.key, marked: [101] }, defaultCountry: 'US' },
  ...extra,
});
const salesforceSync = (standIn = sf, extra: Record<string, unknown> = {}) => ({
  id: 'sf', campaignId: campaigns.sf,
  source: {
    type: 'salesforce', loginUrl: standIn.url, clientId: standIn.clientId, auth: { flow: 'client_credentials', clientSecret: 'sf-client-secret' }, orgId: standIn.orgId,
    selection: { campaignId: standIn.records('Campaign')[0]!.values.Id }, taskExternalIdField: standIn.taskExternalIdField,
  },
  mapping: { phone: ['Phone', 'MobilePhone', standIn.customPhoneField], variables: { firstName: 'FirstName' }, defaultCountry: 'US' },
  mirror: { sink: { type: 'source' } },
  ...extra,
});
const csvSync = () => ({ id: 'csv', campaignId: campaigns.csv, source: { type: 'csv', path: csvPath }, mapping: { phone: 'phone', variables: { firstName: 'firstName' }, doNotCall: 'doNotCall' } });
const webhookSync = () => ({ id: 'web', campaignId: campaigns.web, source: { type: 'webhook', secret: WEBHOOK_SECRET }, mapping: { phone: 'phone' } });

/** A raw configuration (as a file holds it): the calling-window rules on (the default) unless a sync turns them off. */
function raw(syncs: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    redis: { url: REDIS_URL, prefix: `t${randomBytes(5).toString('hex')}` },
    http: { host: '127.0.0.1', port: 0, publicUrl: 'http://127.0.0.1:4300' },
    dialer: { baseUrl: proxy.url, accountId, apiToken: adminToken, timeZone: TZ },
    syncs, log: { level: 'error' }, ...extra,
  };
}
const config = (syncs: unknown[], extra: Record<string, unknown> = {}): Config => parseConfig(raw(syncs, extra), 'test config', {});

const find = (report: CheckReport, sync: string | null, check: string): CheckResult[] => report.checks.filter((r) => r.sync === sync && r.check === check);
const problems = (report: CheckReport) => report.checks.filter((r) => r.status === 'fail' || r.status === 'error');

describe('check on a healthy configuration', () => {
  it('passes every check with a few read-only requests per sync, in seconds, and exits 0 with --json', async () => {
    const syncs = [hubspotSync(), pipedriveSync(), salesforceSync(), csvSync(), webhookSync()];
    const file = join(dir, 'healthy.json');
    writeFileSync(file, JSON.stringify(raw(syncs)));
    const before = { dialer: proxy.exchanges.length, hs: hs.stats.requests, pd: pd.stats.requests, sf: sf.stats.requests, pdTokens: pd.stats.tokensUsed };
    const started = Date.now();
    const exit = await cli(['check', '--config', file, '--json']);
    const seconds = (Date.now() - started) / 1000;
    const report = JSON.parse(exit.stdout) as CheckReport;
    expect(problems(report), JSON.stringify(problems(report), null, 2)).toEqual([]);
    expect(exit.code).toBe(0);
    expect(report.ok).toBe(true);

    // What it cost: the dialer's requests by the campaign they name (the campaigns list is one for the key), the CRMs'.
    const dialer = proxy.exchanges.slice(before.dialer);
    const writes = dialer.filter((e) => e.method !== 'GET');
    // Every write is a probe that changes nothing: an empty list of numbers, a state no request may set.
    expect(writes.every((e) => e.status === 400), JSON.stringify(writes)).toBe(true);
    const perSync = Object.fromEntries(syncs.map((s) => [s.id, dialer.filter((e) => e.path.includes(`/campaigns/${s.campaignId}/`)).length]));
    const shared = dialer.filter((e) => /\/campaigns\?/.test(e.path)).length;
    const crm = { hs: hs.stats.requests - before.hs, pd: pd.stats.requests - before.pd, sf: sf.stats.requests - before.sf, csv: 0, web: 0 };
    const table = syncs.map((s) => `${s.id.padEnd(4)} dialer ${perSync[s.id]} + CRM ${crm[s.id as keyof typeof crm]} = ${perSync[s.id]! + crm[s.id as keyof typeof crm]}`);
    console.log([`check on ${syncs.length} healthy syncs: ${seconds.toFixed(1)} s (the CLI's own start included), report ${report.durationMs} ms`,
      `requests per sync (+ ${shared} campaigns list shared by the key; Pipedrive tokens ${pd.stats.tokensUsed - before.pdTokens}):`, ...table].join('\n'));
    expect(shared).toBe(1);
    for (const s of syncs) expect(perSync[s.id]! + crm[s.id as keyof typeof crm]).toBeLessThanOrEqual(10);
    expect(report.durationMs).toBeLessThan(10_000);

    // The --json shape.
    expect(Object.keys(report).sort()).toEqual(['checks', 'durationMs', 'ok', 'syncs']);
    for (const r of report.checks) {
      expect(['ok', 'warn', 'fail', 'error', 'skip']).toContain(r.status);
      expect(typeof r.check).toBe('string');
      expect(typeof r.message).toBe('string');
      expect(r.sync === null || syncs.some((s) => s.id === r.sync)).toBe(true);
    }
    expect(Object.keys(report.syncs).sort()).toEqual(['csv', 'hs', 'pd', 'sf', 'web']);
    expect(report.syncs.hs).toMatchObject({ refusals: [], unsure: [] });
    expect(find(report, 'hs', 'dialer.state')[0]).toMatchObject({ status: 'ok' });
    expect(find(report, 'hs', 'crm.fields')[0]!.message).toContain('do_not_call');
    expect(find(report, null, 'webhooks.publicUrl')[0]).toMatchObject({ status: 'ok' });
  }, 90_000);

  it('prints one line per check in text, and exits 1 when one fails and 2 when the configuration does not load', async () => {
    const file = join(dir, 'typo.json');
    writeFileSync(file, JSON.stringify(raw([hubspotSync({ mapping: { phone: 'phone', doNotCall: 'do_not_cal', defaultCountry: 'US' } })])));
    const failing = await cli(['check', '--config', file]);
    expect(failing.code).toBe(1);
    expect(failing.stdout).toMatch(/^FAIL  hs crm\.doNotCall: mapping\.doNotCall: the HubSpot contact property "do_not_cal" does not exist; close ones that exist: do_not_call/m);
    expect(failing.stdout).toMatch(/^ {8}fix: /m);
    expect(failing.stdout).toMatch(/start would refuse hs/);

    const broken = join(dir, 'broken.json');
    writeFileSync(broken, JSON.stringify({ ...raw([webhookSync()]), dialer: { accountId } }));
    const invalid = await cli(['check', '--config', broken]);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('dialer.baseUrl');

    // Redis that does not answer is a result (and the CRM checks that need it are skipped), not a hang.
    const noRedis = join(dir, 'no-redis.json');
    writeFileSync(noRedis, JSON.stringify({ ...raw([hubspotSync()]), redis: { url: 'redis://127.0.0.1:1' } }));
    const down = await cli(['check', '--config', noRedis, '--json']);
    expect(down.code).toBe(1);
    const report = JSON.parse(down.stdout) as CheckReport;
    expect(find(report, null, 'redis.reachable')[0]).toMatchObject({ status: 'fail' });
    expect(find(report, 'hs', 'crm.login')[0]).toMatchObject({ status: 'skip' });
  }, 90_000);
});

describe('check names what is wrong, with the fix', () => {
  it('a typo in the Do Not Call field (HubSpot): named with the close property that exists, and start would refuse the sync', async () => {
    const report = await runChecks(config([hubspotSync({ mapping: { phone: 'phone', doNotCall: 'do_not_cal', defaultCountry: 'US' } })]), quietLog);
    const [r] = find(report, 'hs', 'crm.doNotCall');
    expect(r).toMatchObject({ status: 'fail', refuses: true });
    expect(r!.message).toBe('mapping.doNotCall: the HubSpot contact property "do_not_cal" does not exist; close ones that exist: do_not_call (\"Do not call\"): every contact would read as not marked Do Not Call, and be called');
    expect(r!.fix).toMatch(/^name an existing field in mapping\.doNotCall \(do_not_call\?\)/);
    expect(report.syncs.hs!.refusals).toHaveLength(1);
  }, 30_000);

  it('a key without Campaign Admin on a windowed sync: named, and start would refuse it; with the rules off it is not needed', async () => {
    const dialer = { baseUrl: proxy.url, accountId, apiToken: readerToken, timeZone: TZ };
    const report = await runChecks(config([webhookSync()], { dialer }), quietLog);
    const [state] = find(report, 'web', 'dialer.state');
    expect(state).toMatchObject({ status: 'fail', refuses: true });
    expect(state!.message).toMatch(/^the key may not change campaign \S+ \("web"\)'s state \(403: .*\): the calling window could not pause the campaign/);
    expect(state!.fix).toMatch(/Campaign Admin role, or turn the rules off for this sync with compliance: \{ off: "<reason>" \}/);
    expect(find(report, 'web', 'dialer.numbers')[0]).toMatchObject({ status: 'ok' });
    expect(find(report, 'web', 'dialer.reports')[0]).toMatchObject({ status: 'ok' });

    const off = await runChecks(config([{ ...webhookSync(), compliance: { off: 'informational calls' } }], { dialer }), quietLog);
    expect(find(off, 'web', 'dialer.state')[0]).toMatchObject({ status: 'skip' });
    expect(off.syncs.web!.refusals).toEqual([]);

    // A key that may only add numbers lacks Campaign Admin for sure (it may not even list campaigns), and cannot read
    // the report a cap counts calls from: both refuse the sync.
    const adder = await createKey(server, accountId, ['CampaignNumberAdmin']);
    const narrow = await runChecks(config([webhookSync()], { dialer: { ...dialer, apiToken: adder } }), quietLog);
    expect(find(narrow, 'web', 'dialer.state')[0]!.message).toMatch(/it may not even list campaigns .*so it lacks Campaign Admin/);
    expect(find(narrow, 'web', 'dialer.reports')[0]).toMatchObject({ status: 'fail', refuses: true });
    expect(find(narrow, 'web', 'dialer.campaign')[0]).toMatchObject({ status: 'skip' });
  }, 30_000);

  it('a Static campaign, a missing one, and a wrong key', async () => {
    const report = await runChecks(config([{ ...webhookSync(), campaignId: campaigns.static }, { ...csvSync(), campaignId: 'no-such-campaign' }]), quietLog);
    expect(find(report, 'web', 'dialer.campaign')[0]).toMatchObject({ status: 'fail' });
    expect(find(report, 'web', 'dialer.campaign')[0]!.message).toMatch(/is Static: numbers are added only to a Dynamic campaign/);
    expect(find(report, 'csv', 'dialer.campaign')[0]!.message).toBe(`campaign no-such-campaign does not exist in account ${accountId}`);

    const wrong = await runChecks(config([webhookSync()], { dialer: { baseUrl: proxy.url, accountId, apiToken: `cdk_${'x'.repeat(43)}` } }), quietLog);
    expect(find(wrong, 'web', 'dialer.key')[0]).toMatchObject({ status: 'fail' });
    expect(find(wrong, 'web', 'dialer.key')[0]!.fix).toMatch(/^set dialer.apiToken to the token of a live key/);
    // Where a key is made, true of the service's console and of the reference server's (which has no Settings menu).
    expect(find(wrong, 'web', 'dialer.key')[0]!.fix).toContain('the service\'s Settings > API Keys; the reference server\'s: the account\'s page, "API keys", and --seed demo prints one');
  }, 30_000);

  it('a HubSpot list that does not exist, a filter on a property that does not, a token without a scope', async () => {
    const report = await runChecks(config([hubspotSync({ source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, selection: { listId: '9999' } } })]), quietLog);
    expect(find(report, 'hs', 'crm.selection')[0]).toMatchObject({ status: 'fail', message: 'HubSpot has no list 9999 (source.selection.listId) that this token can read' });

    const filtered = await runChecks(config([hubspotSync({ source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token,
      selection: { filterGroups: [{ filters: [{ propertyName: 'lifecycle_stage', operator: 'EQ', value: 'lead' }] }] } } })]), quietLog);
    expect(find(filtered, 'hs', 'crm.selection')[0]!.message).toMatch(/"lifecycle_stage" does not exist; close ones that exist: lifecyclestage/);

    const narrow = await startHubSpotStandIn({ contacts: 5, doNotCallShare: 0.2, scopes: ['crm.objects.contacts.read'] });
    try {
      const scoped = await runChecks(config([hubspotSync({ source: { type: 'hubspot', baseUrl: narrow.url, accessToken: narrow.token, selection: {} } })]), quietLog);
      expect(find(scoped, 'hs', 'crm.scopes')[0]).toMatchObject({ status: 'fail' });
      expect(find(scoped, 'hs', 'crm.scopes')[0]!.message).toMatch(/lacks the scope crm\.objects\.contacts\.write \(the mirror writes calls/);
    } finally {
      await narrow.close();
    }
    const revoked = await runChecks(config([hubspotSync({ source: { type: 'hubspot', baseUrl: hs.url, accessToken: 'pat-revoked' } })]), quietLog);
    expect(find(revoked, 'hs', 'crm.login')[0]).toMatchObject({ status: 'fail' });
  }, 30_000);

  it('a Salesforce user without access to Task, for the mirror', async () => {
    const report = await runChecks(config([salesforceSync(sfNoTask)]), quietLog);
    expect(find(report, 'sf', 'crm.mirror')[0]).toMatchObject({ status: 'fail', message: 'the integration user cannot see Task (describe: NOT_FOUND): the mirror writes each call as a Task' });
    expect(find(report, 'sf', 'crm.mirror')[0]!.fix).toMatch(/Create and Edit on Task/);
    // The reads it needs are there.
    expect(find(report, 'sf', 'crm.login')[0]).toMatchObject({ status: 'ok' });
    expect(find(report, 'sf', 'crm.selection')[0]).toMatchObject({ status: 'ok' });
    const typo = await runChecks(config([salesforceSync(sf, { mapping: { phone: ['Phone', 'MobilPhone'] } })]), quietLog);
    expect(find(typo, 'sf', 'crm.field').map((r) => r.message)).toEqual([
      'mapping.phone: the Salesforce field on Contact "MobilPhone" does not exist; close ones that exist: MobilePhone, Phone',
      'mapping.phone: the Salesforce field on Lead "MobilPhone" does not exist; close ones that exist: MobilePhone, Phone',
    ]);
  }, 30_000);

  it('a Pipedrive field that is not single-option where the mapping lists option ids: refused; an option id it lacks too', async () => {
    const report = await runChecks(config([pipedriveSync({ mapping: { phone: 'phones', doNotCall: { field: TEXT_DNC.key, marked: [101] } } })]), quietLog);
    const [r] = find(report, 'pd', 'crm.doNotCall');
    expect(r).toMatchObject({ status: 'fail', refuses: true });
    expect(r!.message).toBe(`mapping.doNotCall: the Pipedrive person field "${TEXT_DNC.key} ("Do not call (text)")" (varchar) is not a single-option field: ` +
      'its values are never the option ids 101 that mapping.doNotCall.marked lists, so no contact would read as marked');
    const absent = await runChecks(config([pipedriveSync({ mapping: { phone: 'phones', doNotCall: { field: DO_NOT_CALL_FIELD.key, marked: [103] } } })]), quietLog);
    expect(find(absent, 'pd', 'crm.doNotCall')[0]!.message).toMatch(/has no option 103 \(mapping\.doNotCall\.marked\): its options are 101 \(Yes\), 102 \(No\)/);
    const filter = await runChecks(config([pipedriveSync({ source: { type: 'pipedrive', baseUrl: pd.url, apiToken: pd.apiToken, selection: { filterId: 4242 } } })]), quietLog);
    expect(find(filter, 'pd', 'crm.selection')[0]).toMatchObject({ status: 'fail' });
  }, 30_000);

  it('an http publicUrl on a public host fails; https and loopback pass; a short webhook secret fails', async () => {
    const at = (publicUrl: string) => runChecks(config([webhookSync()], { http: { host: '127.0.0.1', port: 0, publicUrl } }), quietLog)
      .then((r) => find(r, null, 'webhooks.publicUrl')[0]!);
    const plain = await at('http://sync.example.com');
    expect(plain).toMatchObject({ status: 'fail' });
    expect(plain.message).toMatch(/is http on a host that is not loopback/);
    expect(plain.fix).toMatch(/https:\/\/sync\.example\.com/);
    expect(await at('https://sync.example.com')).toMatchObject({ status: 'ok' });
    expect(await at('http://localhost:4300')).toMatchObject({ status: 'ok' });
    const weak = await runChecks(config([{ ...webhookSync(), source: { type: 'webhook', secret: 'short' } }]), quietLog);
    expect(find(weak, 'web', 'webhooks.secret')[0]).toMatchObject({ status: 'fail' });
  }, 30_000);

  it('a CSV column the mapping names that the header lacks, with the close ones', async () => {
    const report = await runChecks(config([{ ...csvSync(), mapping: { phone: 'phone', doNotCall: 'do_not_call' } }]), quietLog);
    expect(find(report, 'csv', 'crm.doNotCall')[0]).toMatchObject({ status: 'fail', refuses: true });
    expect(find(report, 'csv', 'crm.doNotCall')[0]!.message).toMatch(/"do_not_call" does not exist; close ones that exist: doNotCall/);
  }, 30_000);
});
