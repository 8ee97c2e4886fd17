// `init --source <type>`: the commented configuration it writes loads through the configuration schema (with its
// ${ENV} secrets set) with every default spelled out as the schema has it, never overwrites a file, and once its
// "your-" values name the stand-ins' account, campaign and selection, `check` passes on it.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { startPipedriveStandIn, type PipedriveStandIn } from '../../crm-stand-ins/pipedrive.ts';
import { startSalesforceStandIn, type SalesforceStandIn } from '../../crm-stand-ins/salesforce.ts';
import { DEFAULT_COMPLIANCE } from '../../daemon/compliance/in-force.ts';
import { parseConfig } from '../../daemon/config.ts';
import { REDIS_URL } from '../support/daemon.ts';
import { createAccount, createCampaign, createKey, startServer, type TestServer } from '../support/server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SOURCES = ['hubspot', 'pipedrive', 'salesforce', 'webhook', 'csv'] as const;

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
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

/** Every ${NAME} the text references, with a value (the secrets' stand-ins). */
function envOf(text: string, values: Record<string, string> = {}): Record<string, string> {
  const names = [...text.matchAll(/^[^#\n]*\$\{([A-Z_]+)\}/gm)].map((m) => m[1]!);
  return Object.fromEntries(names.map((n) => [n, values[n] ?? `${n.toLowerCase()}-${randomBytes(12).toString('hex')}`]));
}

let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'cds-init-')); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('init --source', () => {
  it.each(SOURCES)('%s: loads through the schema with its secrets set, every default spelled out as the schema has it', async (source) => {
    const { code, stdout, stderr } = await cli(['init', '--source', source]);
    expect(code).toBe(0);
    // The environment variables to set are said on stderr; stdout is the file alone.
    expect(stderr).toMatch(/^(its source\.path is contacts\.csv \(with --out FILE, init writes a sample contacts\.csv beside FILE\);\n)?set these in the daemon's environment:\n {2}DIALER_API_TOKEN/);
    // From a checkout the next step is the checkout's command (installed, campaign-sync's: test/packaging/first-sync.test.ts).
    expect(stderr).toMatch(/\nthen: \.\/dev daemon check --config FILE$/m);
    expect(stdout).toContain('#   ./dev daemon check --config THIS_FILE');
    expect(stdout).toMatch(/^# The sync daemon's configuration, written by `init --source /);
    // Every secret is an ${ENV} reference: no key that names a secret holds a literal value.
    for (const line of stdout.split('\n').filter((l) => !l.trimStart().startsWith('#'))) {
      if (/^\s*(apiToken|accessToken|clientSecret|secret|webhookPassword|password|privateKey|adminToken|eventsSecret):/.test(line)) expect(line).toMatch(/: \$\{[A-Z_]+\}/);
    }
    const env = envOf(stdout, { WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}` });
    const raw = parseDocument(stdout).toJS() as Record<string, any>;
    const config = parseConfig(raw, 'generated', env);
    expect(config.syncs[0]!.source.type).toBe(source);

    // The defaults: the same file with everything the schema fills in left out loads the same.
    const sync = raw.syncs[0];
    const required: Record<string, unknown> = { hubspot: { type: 'hubspot', accessToken: sync.source.accessToken, clientSecret: sync.source.clientSecret, selection: {} },
      pipedrive: { type: 'pipedrive', apiToken: sync.source.apiToken, webhookUser: sync.source.webhookUser, webhookPassword: sync.source.webhookPassword, selection: {} },
      salesforce: { type: 'salesforce', clientId: sync.source.clientId, auth: sync.source.auth, selection: sync.source.selection },
      webhook: { type: 'webhook', secret: sync.source.secret }, csv: { type: 'csv', path: sync.source.path } }[source];
    const bare = parseConfig({
      dialer: { baseUrl: raw.dialer.baseUrl, accountId: raw.dialer.accountId, apiToken: raw.dialer.apiToken },
      syncs: [{ id: sync.id, campaignId: sync.campaignId, source: required, mapping: { ...sync.mapping, id: undefined }, ...(sync.mirror ? { mirror: { sink: sync.mirror.sink } } : {}) }],
    }, 'bare', env);
    for (const key of ['redis', 'http', 'dialer', 'takeoverAfter', 'scheduleCheckEvery', 'shutdownTimeout', 'log'] as const) expect(config[key], key).toEqual(bare[key]);
    const [full, least] = [config.syncs[0]!, bare.syncs[0]!];
    expect(full.source).toEqual(least.source);
    expect([full.schedule, full.onLeave, full.mirror, full.mapping.id]).toEqual([least.schedule, least.onLeave, least.mirror, least.mapping.id]);
    expect(full.rules.compliance).toEqual(DEFAULT_COMPLIANCE);
  }, 30_000);

  it('writes --out FILE, and never over a file that exists', async () => {
    const out = join(dir, 'daemon.yaml');
    expect((await cli(['init', '--source', 'csv', '--out', out])).code).toBe(0);
    const written = readFileSync(out, 'utf8');
    expect(written).toContain('type: csv');
    const again = await cli(['init', '--source', 'hubspot', '--out', out]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`${out} exists: init never writes over a file`);
    expect(readFileSync(out, 'utf8')).toBe(written);
    // A CSV source gets sample contacts beside the file, named by its source.path, and its calls a file there too.
    const sub = join(dir, 'csv-first');
    mkdirSync(sub);
    const csvOut = join(sub, 'sync.yaml');
    const first = await cli(['init', '--source', 'csv', '--out', csvOut]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain(`wrote ${join(sub, 'contacts.csv')}, which its source.path names: 5 sample contacts`);
    expect(first.stderr).toContain(`then: ./dev daemon check --config ${csvOut}`);
    const csvConfig = parseDocument(readFileSync(csvOut, 'utf8')).toJS() as Record<string, any>;
    expect(csvConfig.syncs[0].source.path).toBe(join(sub, 'contacts.csv'));
    expect(csvConfig.syncs[0].mirror.sink).toEqual({ type: 'file', path: join(sub, 'calls.jsonl') });
    const sample = readFileSync(join(sub, 'contacts.csv'), 'utf8').trim().split('\n');
    expect(sample[0]).toBe('id,phone,firstName');
    expect(sample.length).toBe(6);
    // A contacts.csv of the operator's is never written over: kept, and said.
    writeFileSync(join(sub, 'contacts.csv'), 'id,phone,firstName\nmine,+12125550100,Me\n');
    const second = await cli(['init', '--source', 'csv', '--out', join(sub, 'other.yaml')]);
    expect(second.code).toBe(0);
    expect(second.stderr).toContain(`kept ${join(sub, 'contacts.csv')}, which its source.path names (it exists)`);
    expect(readFileSync(join(sub, 'contacts.csv'), 'utf8')).toContain('mine,');
    const unknown = await cli(['init', '--source', 'zoho']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--source is one of hubspot, pipedrive, salesforce, webhook, csv');
  }, 30_000);
});

describe('check on what init wrote', () => {
  let server: TestServer;
  let hs: HubSpotStandIn;
  let pd: PipedriveStandIn;
  let sf: SalesforceStandIn;
  let accountId: string;
  let campaignId: string;
  let token: string;

  beforeAll(async () => {
    server = await startServer();
    accountId = (await createAccount(server, 'Init Co', 'UTC')).id;
    campaignId = (await createCampaign(server, accountId, { name: 'Leads', type: 'Dynamic', state: 'Active' })).id;
    token = await createKey(server, accountId, ['CampaignAdmin']);
    [hs, pd, sf] = await Promise.all([startHubSpotStandIn({ contacts: 5 }), startPipedriveStandIn({ persons: 5 }), startSalesforceStandIn({ contacts: 5, leads: 5 })]);
  }, 30_000);
  afterAll(async () => {
    await Promise.all([hs?.close(), pd?.close(), sf?.close()]);
    await server?.close();
  });

  it.each(SOURCES)('%s: passes once its "your-" values name the account, the campaign and the selection (comments kept)', async (source) => {
    const text = (await cli(['init', '--source', source])).stdout;
    // What an operator does next: fill in the values marked "your-", with an editor that keeps the comments.
    const doc = parseDocument(text);
    doc.setIn(['redis', 'url'], REDIS_URL);
    doc.setIn(['redis', 'prefix'], `t${randomBytes(5).toString('hex')}`);
    doc.setIn(['dialer', 'baseUrl'], server.url);
    doc.setIn(['dialer', 'accountId'], accountId);
    doc.setIn(['syncs', 0, 'campaignId'], campaignId);
    const csv = join(dir, 'contacts.csv');
    writeFileSync(csv, 'id,phone,firstName\n1,+12125550100,Ann\n');
    const sourcePath = ['syncs', 0, 'source'];
    if (source === 'hubspot') doc.setIn([...sourcePath, 'baseUrl'], hs.url);
    if (source === 'pipedrive') doc.setIn([...sourcePath, 'baseUrl'], pd.url);
    if (source === 'salesforce') {
      doc.setIn([...sourcePath, 'loginUrl'], sf.url);
      doc.setIn([...sourcePath, 'clientId'], sf.clientId);
      doc.setIn([...sourcePath, 'selection', 'campaignId'], sf.records('Campaign')[0]!.values.Id);
    }
    if (source === 'csv') doc.setIn([...sourcePath, 'path'], csv);
    const file = join(dir, `${source}.yaml`);
    writeFileSync(file, doc.toString());
    expect(doc.toString()).toContain('# Secrets are ${ENV} references');
    const env = envOf(text, {
      DIALER_API_TOKEN: token, HUBSPOT_ACCESS_TOKEN: hs.token, PIPEDRIVE_API_TOKEN: pd.apiToken, SALESFORCE_CLIENT_SECRET: 'sf-client-secret',
      WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    });
    const check = await cli(['check', '--config', file], env);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).not.toMatch(/^(FAIL|ERROR)/m);
  }, 60_000);
});
