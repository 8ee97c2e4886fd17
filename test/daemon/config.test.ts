// The daemon's configuration: defaults, ${ENV} secrets, precise problems for every kind of mistake, secrets never echoed, YAML/JSON files.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, dialerOf, loadConfig, parseConfig, complianceOf } from '../../daemon/config.ts';
import { rulesStatus } from '../../daemon/compliance/in-force.ts';

const DIALER_TOKEN = 'dlr_live_Zq81mXw0PAvT3s';
const HUBSPOT_TOKEN = 'pat-na1-7c1e2f4a-secret-hub';
const CLIENT_SECRET = 'hs-client-secret-Yt6pQ';
const PIPEDRIVE_TOKEN = 'pd-9f8e7d6c5b4a-token';
const WEBHOOK_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const PD_PASSWORD = 'pd-hook-password-77';

const ENV = { DIALER_TOKEN, HUBSPOT_TOKEN, CLIENT_SECRET, PIPEDRIVE_TOKEN, WEBHOOK_SECRET, PD_PASSWORD, DIALER_HOST: 'dialer.example.com' };

/** Every source type, only required keys besides the secrets (given as ${ENV} references). */
function fullConfig(): any {
  return {
    dialer: { baseUrl: 'https://${DIALER_HOST}/', accountId: 'acc-1', apiToken: '${DIALER_TOKEN}' },
    syncs: [
      { id: 'hubspot-leads', campaignId: 'c-1', source: { type: 'hubspot', accessToken: '${HUBSPOT_TOKEN}', clientSecret: '${CLIENT_SECRET}' }, mapping: { phone: 'phone', defaultCountry: 'US' } },
      { id: 'pd.people', campaignId: 'c-2', source: { type: 'pipedrive', apiToken: '${PIPEDRIVE_TOKEN}', webhookUser: 'pd', webhookPassword: '${PD_PASSWORD}' }, mapping: { phone: 'phones' } },
      { id: 'web_form', campaignId: 'c-3', source: { type: 'webhook', secret: '${WEBHOOK_SECRET}' }, mapping: { id: 'email', phone: ['mobile', 'phone'], variables: { name: 'firstName' } } },
      { id: 'csv-import', campaignId: 'c-4', source: { type: 'csv', path: '/data/leads.csv' }, mapping: { phone: 'Phone' }, schedule: { cron: '0 * * * *', tz: 'Europe/Berlin' }, onLeave: 'keep' },
    ],
  };
}

/** A minimal valid configuration without ${ENV} references, to break one key at a time. */
function minimalConfig(): any {
  return {
    dialer: { baseUrl: 'http://127.0.0.1:4000', accountId: 'acc-1', apiToken: DIALER_TOKEN },
    syncs: [{ id: 's1', campaignId: 'c-1', source: { type: 'webhook', secret: WEBHOOK_SECRET }, mapping: { phone: 'phone' } }],
  };
}

/** The problems parseConfig reports for `raw`; fails the test when it parses. */
function problemsOf(raw: unknown, env: Record<string, string> = ENV): { problems: string[]; message: string } {
  try {
    parseConfig(raw, 'sync.yaml', env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return { problems: (err as ConfigError).problems, message: (err as ConfigError).message };
  }
  throw new Error('expected a ConfigError, the configuration parsed');
}

/** The one problem mentioning `path`. */
function problemAt(problems: string[], path: string): string {
  const found = problems.filter((p) => p.startsWith(`${path}:`) || p.startsWith(`${path} `));
  expect(found, `a problem at ${path} in ${JSON.stringify(problems)}`).toHaveLength(1);
  return found[0]!;
}

const SECRETS = [DIALER_TOKEN, HUBSPOT_TOKEN, CLIENT_SECRET, PIPEDRIVE_TOKEN, WEBHOOK_SECRET, PD_PASSWORD];

function expectNoSecret(text: string): void {
  for (const s of SECRETS) expect(text).not.toContain(s);
  // A truncated echo would still give most of a secret away.
  for (const s of SECRETS) expect(text).not.toContain(s.slice(0, 8));
}

describe('a valid configuration', () => {
  it('parses every source type with the documented defaults', () => {
    const c = parseConfig(fullConfig(), 'sync.yaml', ENV);
    expect(c.redis).toEqual({ url: 'redis://127.0.0.1:6379', prefix: 'cds' });
    expect(c.http).toEqual({ host: '127.0.0.1', port: 4300 });
    expect(c.shutdownTimeout).toBe(20_000);
    expect(c.log).toEqual({ level: 'info' });
    expect(c.dialer).toEqual({
      baseUrl: 'https://dialer.example.com', accountId: 'acc-1', apiToken: DIALER_TOKEN,
      rateLimit: { perSecond: 10, burst: 50 }, maxNumbersPerRequest: 1000, pageSize: 1000, concurrency: 4, timeout: 30_000, attempts: 8, timeZone: 'UTC',
    });
    const [hubspot, pipedrive, webhook, csv] = c.syncs;
    expect(hubspot!.source).toEqual({
      type: 'hubspot', baseUrl: 'https://api.hubapi.com', accessToken: HUBSPOT_TOKEN, clientSecret: CLIENT_SECRET, apiVersion: '2026-09',
      searchPerSecond: 5, requestsPer10Seconds: 100, pageSize: 200, overlap: 300_000, compareEvery: 3_600_000, selection: {}, properties: [],
    });
    expect(hubspot!.schedule).toEqual({ every: 900_000 });
    expect(hubspot!.onLeave).toBe('delete');
    expect(hubspot!.mapping).toEqual({ id: 'id', phone: ['phone'], variables: {}, defaultCountry: 'US', doNotCall: [] });
    expect(pipedrive!.source).toEqual({
      type: 'pipedrive', baseUrl: 'https://api.pipedrive.com', apiToken: PIPEDRIVE_TOKEN, burstPer2Seconds: 20, dailyTokens: 30_000,
      pageSize: 500, overlap: 300_000, compareEvery: 3_600_000, selection: {}, webhookUser: 'pd', webhookPassword: PD_PASSWORD,
    });
    expect(webhook!.source).toEqual({ type: 'webhook', secret: WEBHOOK_SECRET });
    expect(webhook!.mapping).toEqual({ id: 'email', phone: ['mobile', 'phone'], variables: { name: 'firstName' }, doNotCall: [] });
    expect(csv!.source).toEqual({ type: 'csv', path: '/data/leads.csv', delimiter: ',' });
    expect(csv!.schedule).toEqual({ cron: '0 * * * *', tz: 'Europe/Berlin' });
    expect(csv!.onLeave).toBe('keep');
  });

  it('reads durations as strings with a unit or as seconds', () => {
    const raw = minimalConfig();
    raw.shutdownTimeout = '90s';
    raw.dialer.timeout = 5;
    raw.syncs[0].schedule = { every: '2h' };
    const c = parseConfig(raw, 'sync.yaml', {});
    expect(c.shutdownTimeout).toBe(90_000);
    expect(c.dialer.timeout).toBe(5000);
    expect(c.syncs[0]!.schedule).toEqual({ every: 7_200_000 });
  });

  it('accepts a HubSpot selection by list id or by filter groups', () => {
    const byList = minimalConfig();
    byList.syncs[0].source = { type: 'hubspot', accessToken: HUBSPOT_TOKEN, selection: { listId: '42' } };
    expect(parseConfig(byList, 'sync.yaml', {}).syncs[0]!.source).toMatchObject({ selection: { listId: '42' } });
    const byFilter = minimalConfig();
    const filterGroups = [{ filters: [{ propertyName: 'lifecyclestage', operator: 'EQ', value: 'lead' }] }];
    byFilter.syncs[0].source = { type: 'hubspot', accessToken: HUBSPOT_TOKEN, selection: { filterGroups } };
    expect(parseConfig(byFilter, 'sync.yaml', {}).syncs[0]!.source).toMatchObject({ selection: { filterGroups } });
  });

  it('turns numbers and booleans in HubSpot filters into the strings HubSpot\'s Filter takes', () => {
    const raw = minimalConfig();
    raw.syncs[0].source = {
      type: 'hubspot', accessToken: HUBSPOT_TOKEN,
      selection: { filterGroups: [{ filters: [
        { propertyName: 'hs_object_id', operator: 'BETWEEN', value: 1, highValue: 999_999_999 },
        { propertyName: 'hs_object_id', operator: 'IN', values: [1000, '1001'] },
        { propertyName: 'hs_is_unworked', operator: 'EQ', value: true },
      ] }] },
    };
    expect(parseConfig(raw, 'sync.yaml', {}).syncs[0]!.source).toMatchObject({ selection: { filterGroups: [{ filters: [
      { propertyName: 'hs_object_id', operator: 'BETWEEN', value: '1', highValue: '999999999' },
      { propertyName: 'hs_object_id', operator: 'IN', values: ['1000', '1001'] },
      { propertyName: 'hs_is_unworked', operator: 'EQ', value: 'true' },
    ] }] } });
  });
});

describe('${ENV} references', () => {
  it('are replaced by the environment, also inside a longer string', () => {
    const c = parseConfig(fullConfig(), 'sync.yaml', ENV);
    expect(c.dialer.apiToken).toBe(DIALER_TOKEN);
    expect(c.dialer.baseUrl).toBe('https://dialer.example.com');
    expect(c.syncs[1]!.source).toMatchObject({ apiToken: PIPEDRIVE_TOKEN, webhookPassword: PD_PASSWORD });
  });

  it('to a missing variable give a ConfigError naming the variable and the key path', () => {
    const { DIALER_TOKEN: _, ...env } = ENV;
    const { problems, message } = problemsOf(fullConfig(), env);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('DIALER_TOKEN');
    expect(problems[0]).toMatch(/^dialer\.apiToken\b/);
    expect(message).toContain('sync.yaml');
    expectNoSecret(message);
  });

  it('to an empty variable count as missing, and every missing one is listed', () => {
    const { problems } = problemsOf(fullConfig(), { ...ENV, HUBSPOT_TOKEN: '', CLIENT_SECRET: undefined as unknown as string });
    expect(problems.find((p) => p.includes('HUBSPOT_TOKEN'))).toMatch(/^syncs\.0\.source\.accessToken\b/);
    expect(problems.find((p) => p.includes('CLIENT_SECRET'))).toMatch(/^syncs\.0\.source\.clientSecret\b/);
  });
});

describe('each kind of mistake names the key path, the bad value and what is allowed', () => {
  it('an unknown key', () => {
    const raw = minimalConfig();
    raw.dialer.maxNumbers = 500;
    const p = problemAt(problemsOf(raw).problems, 'dialer.maxNumbers');
    expect(p).toContain('unknown key');
    // What is allowed: the keys the dialer section knows.
    expect(p).toContain('maxNumbersPerRequest');
    expectNoSecret(p);
  });

  it('an unknown key at the root', () => {
    const raw = minimalConfig();
    raw.sync = [];
    const p = problemsOf(raw).problems.join('\n');
    expect(p).toContain('sync');
    expect(p).toContain('syncs');
    expectNoSecret(p);
  });

  it('a wrong type', () => {
    const raw = minimalConfig();
    raw.dialer.maxNumbersPerRequest = 'many';
    const p = problemAt(problemsOf(raw).problems, 'dialer.maxNumbersPerRequest');
    expect(p).toContain('"many"');
    expect(p).toMatch(/number/);
  });

  it('a bad URL', () => {
    const raw = minimalConfig();
    raw.dialer.baseUrl = 'ftp://dialer.example.com';
    const p = problemAt(problemsOf(raw).problems, 'dialer.baseUrl');
    expect(p).toContain('ftp://dialer.example.com');
    expect(p).toMatch(/http\(s\) URL/);
  });

  it('an unknown source type', () => {
    const raw = minimalConfig();
    raw.syncs[0].source = { type: 'zoho', apiToken: 'x' };
    const p = problemAt(problemsOf(raw).problems, 'syncs.0.source.type');
    expect(p).toContain('"zoho"');
    for (const t of ['hubspot', 'pipedrive', 'salesforce', 'webhook', 'csv']) expect(p).toContain(t);
  });

  it('mapping.doNotCall: a field name or {field, marked}; Salesforce\'s own DoNotCall is always honoured besides it', () => {
    const raw = minimalConfig();
    raw.syncs[0].mapping.doNotCall = 'dnc';
    expect(parseConfig(raw, 'sync.yaml', ENV).syncs[0]!.mapping.doNotCall).toEqual([{ field: 'dnc' }]);
    raw.syncs[0].mapping.doNotCall = { field: 'a1b2c3', marked: [42, 'Yes'] };
    expect(parseConfig(raw, 'sync.yaml', ENV).syncs[0]!.mapping.doNotCall).toEqual([{ field: 'a1b2c3', marked: [42, 'Yes'] }]);
    const sf = minimalConfig();
    sf.syncs[0].source = { type: 'salesforce', clientId: 'app', auth: { flow: 'client_credentials', clientSecret: 'x' }, selection: { object: 'Contact' } };
    expect(parseConfig(sf, 'sync.yaml', ENV).syncs[0]!.mapping.doNotCall).toEqual([{ field: 'DoNotCall' }]);
    sf.syncs[0].mapping.doNotCall = 'Legal_Hold__c';
    expect(parseConfig(sf, 'sync.yaml', ENV).syncs[0]!.mapping.doNotCall).toEqual([{ field: 'DoNotCall' }, { field: 'Legal_Hold__c' }]);
  });

  it('a bad mapping.doNotCall: a number, an empty marked list, a misspelt key', () => {
    const raw = minimalConfig();
    raw.syncs[0].mapping.doNotCall = 5;
    expect(problemAt(problemsOf(raw).problems, 'syncs.0.mapping.doNotCall')).toMatch(/a field name, or \{field, marked: \[values\]\} \(got 5\)/);
    raw.syncs[0].mapping.doNotCall = { field: 'dnc', marked: [] };
    expect(problemAt(problemsOf(raw).problems, 'syncs.0.mapping.doNotCall.marked')).toMatch(/at least one value that marks a contact Do Not Call/);
    raw.syncs[0].mapping.doNotCall = { field: 'dnc', values: [1] };
    expect(problemAt(problemsOf(raw).problems, 'syncs.0.mapping.doNotCall.values')).toMatch(/unknown key; allowed here: field, marked/);
  });

  it('a bad defaultCountry', () => {
    const raw = minimalConfig();
    raw.syncs[0].mapping.defaultCountry = 'USA';
    const p = problemAt(problemsOf(raw).problems, 'syncs.0.mapping.defaultCountry');
    expect(p).toContain('"USA"');
    expect(p).toMatch(/ISO 3166/);
  });

  it('duplicate sync ids', () => {
    const raw = minimalConfig();
    raw.syncs.push({ ...raw.syncs[0], campaignId: 'c-2' });
    const p = problemAt(problemsOf(raw).problems, 'syncs.1.id');
    expect(p).toMatch(/duplicate/);
    expect(p).toContain('"s1"');
  });

  it('a bad duration string in a schedule', () => {
    const raw = minimalConfig();
    raw.syncs[0].schedule = { every: '15 minutes' };
    const p = problemsOf(raw).problems.join('\n');
    expect(p).toMatch(/^syncs\.0\.schedule/);
    expect(p).toContain('15 minutes');
    // What is allowed: a duration written like 15m.
    expect(p).toMatch(/duration/);
  });

  it('a schedule check more often than every second', () => {
    const raw: Record<string, unknown> = { ...minimalConfig(), scheduleCheckEvery: '100ms' };
    expect(problemAt(problemsOf(raw).problems, 'scheduleCheckEvery')).toMatch(/at least 1s/);
    expect(parseConfig({ ...minimalConfig(), scheduleCheckEvery: '10s' }, 'test', {}).scheduleCheckEvery).toBe(10_000);
    expect(parseConfig(minimalConfig(), 'test', {}).scheduleCheckEvery).toBe(30_000);
  });

  it('a bad compareEvery, naming the key and what a duration is', () => {
    const raw = minimalConfig();
    raw.syncs[0].source = { type: 'pipedrive', apiToken: PIPEDRIVE_TOKEN, compareEvery: 'hourly' };
    const p = problemsOf(raw).problems.join('\n');
    expect(p).toMatch(/^syncs\.0\.source\.compareEvery/);
    expect(p).toMatch(/duration/);
  });

  it('a bad duration string in shutdownTimeout', () => {
    const raw = minimalConfig();
    raw.shutdownTimeout = '20 seconds';
    const p = problemAt(problemsOf(raw).problems, 'shutdownTimeout');
    expect(p).toContain('"20 seconds"');
    expect(p).toMatch(/duration/);
  });

  it('a HubSpot API version HubSpot does not publish, naming the ones it does', () => {
    for (const apiVersion of ['2024-01', '2026-09-beta', 'v4', '2026-9']) {
      const raw = minimalConfig();
      raw.syncs[0].source = { type: 'hubspot', accessToken: HUBSPOT_TOKEN, apiVersion };
      const p = problemAt(problemsOf(raw).problems, 'syncs.0.source.apiVersion');
      expect(p).toContain(`"${apiVersion}"`);
      expect(p).toContain('2025-09, 2026-03, 2026-09, v3');
    }
    for (const apiVersion of ['2025-09', '2026-03', '2026-09', 'v3']) {
      const raw = minimalConfig();
      raw.syncs[0].source = { type: 'hubspot', accessToken: HUBSPOT_TOKEN, apiVersion };
      expect(parseConfig(raw, 'sync.yaml', {}).syncs[0]!.source).toMatchObject({ apiVersion });
    }
  });

  it('a HubSpot selection with both filterGroups and listId', () => {
    const raw = minimalConfig();
    raw.syncs[0].source = {
      type: 'hubspot', accessToken: HUBSPOT_TOKEN,
      selection: { listId: '42', filterGroups: [{ filters: [{ propertyName: 'lifecyclestage', operator: 'EQ', value: 'lead' }] }] },
    };
    const p = problemAt(problemsOf(raw).problems, 'syncs.0.source.selection');
    expect(p).toMatch(/filterGroups or listId, not both/);
    // The value, summarised: the keys that clash.
    expect(p).toContain('listId, filterGroups');
    expectNoSecret(p);
  });

  it('several mistakes are listed at once', () => {
    const raw = minimalConfig();
    raw.dialer.baseUrl = 'dialer';
    raw.http = { port: 'http' };
    raw.syncs[0].onLeave = 'archive';
    const { problems, message } = problemsOf(raw);
    expect(problems).toHaveLength(3);
    for (const path of ['dialer.baseUrl', 'http.port', 'syncs.0.onLeave']) {
      problemAt(problems, path);
      expect(message).toContain(path);
    }
    expect(problemAt(problems, 'syncs.0.onLeave')).toMatch(/delete.*keep/);
  });

  it('no syncs at all', () => {
    const raw = minimalConfig();
    raw.syncs = [];
    expect(problemAt(problemsOf(raw).problems, 'syncs')).toMatch(/at least one sync/);
  });
});

describe('secrets are never echoed', () => {
  it('not for a secret of the wrong type', () => {
    const raw = minimalConfig();
    raw.dialer.apiToken = 987654321987;
    const { problems, message } = problemsOf(raw);
    expect(problemAt(problems, 'dialer.apiToken')).toMatch(/string/);
    expect(message).not.toContain('987654321987');
  });

  it('not for a token under a misspelt key', () => {
    const raw = minimalConfig();
    raw.syncs[0].source = { type: 'hubspot', acessToken: HUBSPOT_TOKEN };
    const { problems, message } = problemsOf(raw);
    expect(problems.join('\n')).toContain('acessToken');
    expectNoSecret(message);
  });

  it('not for an unknown key beside a valid secret', () => {
    const raw = minimalConfig();
    raw.dialer.retries = 3;
    const { message } = problemsOf(raw);
    expect(message).toContain('retries');
    expectNoSecret(message);
  });

  it('not when a ${ENV} secret lands in a key that is wrong', () => {
    const raw = fullConfig();
    raw.syncs[2].source.secret = { value: '${WEBHOOK_SECRET}' };
    const { problems, message } = problemsOf(raw);
    problemAt(problems, 'syncs.2.source.secret');
    expectNoSecret(message);
  });
});

describe('configuration files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cds-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads YAML with ${ENV} references', () => {
    const file = join(dir, 'sync.yaml');
    writeFileSync(file, `# the dialer and one HubSpot sync
dialer:
  baseUrl: http://127.0.0.1:4000
  accountId: acc-1
  apiToken: \${DIALER_TOKEN}
syncs:
  - id: leads
    campaignId: c-1
    source:
      type: hubspot
      accessToken: \${HUBSPOT_TOKEN}
    mapping:
      phone: phone
      defaultCountry: GB
    schedule:
      every: 5m
shutdownTimeout: 30s
`);
    const c = loadConfig(file, ENV);
    expect(c.dialer.apiToken).toBe(DIALER_TOKEN);
    expect(c.syncs[0]!.source).toMatchObject({ type: 'hubspot', accessToken: HUBSPOT_TOKEN, apiVersion: '2026-09' });
    expect(c.syncs[0]!.schedule).toEqual({ every: 300_000 });
    expect(c.shutdownTimeout).toBe(30_000);
  });

  it('reads JSON', () => {
    const file = join(dir, 'sync.json');
    writeFileSync(file, JSON.stringify(fullConfig(), null, 2));
    const c = loadConfig(file, ENV);
    expect(c.syncs.map((s) => s.source.type)).toEqual(['hubspot', 'pipedrive', 'webhook', 'csv']);
    expect(c.dialer.rateLimit).toEqual({ perSecond: 10, burst: 50 });
  });

  it('names the file in the problems of a file', () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'dialer:\n  baseUrl: nowhere\n  accountId: a\n  apiToken: t\nsyncs: []\n');
    let error: unknown;
    try { loadConfig(file, {}); } catch (err) { error = err; }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain(file);
    expect((error as ConfigError).problems).toHaveLength(2);
  });

  it('a missing file is a clear ConfigError', () => {
    const file = join(dir, 'absent.yaml');
    let error: unknown;
    try { loadConfig(file, {}); } catch (err) { error = err; }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain(file);
    expect((error as ConfigError).problems[0]).toMatch(/cannot read the file.*ENOENT/);
  });

  it('an unreadable file is a clear ConfigError', () => {
    // root reads any file whatever its mode: then a directory stands in for what cannot be read.
    const asRoot = process.getuid?.() === 0;
    const file = asRoot ? dir : join(dir, 'locked.yaml');
    if (!asRoot) {
      writeFileSync(file, JSON.stringify(minimalConfig()));
      chmodSync(file, 0o000);
    }
    let error: unknown;
    try { loadConfig(file, {}); } catch (err) { error = err; }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain(file);
    expect((error as ConfigError).problems[0]).toMatch(asRoot ? /cannot read the file.*EISDIR/ : /cannot read the file.*EACCES/);
  });

  it('invalid YAML is a clear ConfigError', () => {
    const file = join(dir, 'broken.yaml');
    writeFileSync(file, `dialer:\n  baseUrl: "http://127.0.0.1:4000\n  accountId: [acc-1\nsyncs:\n\t- id: x\n  apiToken: ${DIALER_TOKEN}\n`);
    let error: unknown;
    try { loadConfig(file, {}); } catch (err) { error = err; }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain(file);
    expect((error as ConfigError).problems[0]).toMatch(/not valid YAML\/JSON/);
  });

  // Each mistake as an operator makes it in a filled-in file, and where and why the error says it is: the line and
  // column of the mistake itself (not of where the parser noticed it), a reason in words, and no quote of the file.
  const FILLED = [
    'dialer:', //                                                                     1
    '  baseUrl: https://api.dialer.example.com', //                                   2
    '  accountId: acc-1', //                                                          3
    `  apiToken: ${DIALER_TOKEN}`, //                                                 4
    'syncs:', //                                                                      5
    '  - id: leads', //                                                               6
    '    campaignId: cmp-1', //                                                       7
    '    source:', //                                                                 8
    '      type: hubspot', //                                                         9
    '      accessToken: pat-secret-token', //                                         10
    '      selection:', //                                                            11
    '        filterGroups:', //                                                       12
    '          - filters: [{ propertyName: lifecyclestage, operator: EQ, value: lead }]', // 13
    '    mapping:', //                                                                14
    '      phone: [phone, mobilephone]', //                                           15
    '      variables: { firstName: firstname }', //                                   16
    '      defaultCountry: US', //                                                    17
  ];
  it.each([
    ['a list left open', 13, '          - filters: [{ propertyName: lifecyclestage, operator: EQ, value: lead }', 'line 13, column 22: this "[" is never closed'],
    ['a mapping left open', 16, '      variables: { firstName: firstname', 'line 16, column 18: this "{" is never closed'],
    ['a missing colon', 7, '    campaignId cmp-1', 'line 7, column 5: this line is not "key: value" (is the colon after the key missing?)'],
    ['a tab', 9, '\ttype: hubspot', 'line 9, column 1: a tab in the indentation'],
    ['a key indented wrong', 14, '   mapping:', 'line 14, column 1: this line is indented as no block above it is'],
    ['a quote left open', 3, '  accountId: "acc-1', 'line 3, column 14: the quote (") that opens here is never closed'],
    ['a value holding ": "', 3, '  accountId: acc: 1', 'line 3, column 14: this value holds ": "'],
    ['a key given twice', 17, '      phone: x', 'line 17, column 7: this key is given twice in the same block'],
  ] as const)('a YAML error names the line and column of the mistake and why: %s', (_, line, text, said) => {
    const file = join(dir, 'mistake.yaml');
    const lines = [...FILLED];
    lines[line - 1] = text;
    writeFileSync(file, `${lines.join('\n')}\n`);
    let error: unknown;
    try { loadConfig(file, {}); } catch (err) { error = err; }
    expect(error).toBeInstanceOf(ConfigError);
    const problem = (error as ConfigError).problems[0]!;
    expect(problem).toContain(`not valid YAML/JSON: ${said}`);
    // A reason ends it, not a colon before a quote of the file (which may hold a secret).
    expect(problem).toMatch(/[\w)"]$/);
    expect((error as ConfigError).message).not.toContain(DIALER_TOKEN);
    expect((error as ConfigError).message).not.toContain('pat-secret-token');
  });
});

describe('a sync with its own dialer key', () => {
  it('takes what it leaves out from the top-level dialer', () => {
    const raw = minimalConfig();
    raw.syncs.push({ ...raw.syncs[0], id: 's2', dialer: { apiToken: 'cdk_other', rateLimit: { perSecond: 2, burst: 5 } } });
    const config = parseConfig(raw, 'sync.yaml', ENV);
    expect(dialerOf(config, config.syncs[0]!)).toEqual(config.dialer);
    expect(dialerOf(config, config.syncs[1]!)).toMatchObject({ baseUrl: 'http://127.0.0.1:4000', accountId: 'acc-1', apiToken: 'cdk_other', rateLimit: { perSecond: 2, burst: 5 }, maxNumbersPerRequest: 1000 });
  });

  it('may not give a shared key another rate limit', () => {
    const raw = minimalConfig();
    raw.syncs.push({ ...raw.syncs[0], id: 's2', dialer: { rateLimit: { perSecond: 2, burst: 5 } } });
    const p = problemAt(problemsOf(raw).problems, 'syncs.1.dialer.rateLimit');
    expect(p).toMatch(/same API key as sync "s1"/);
    expectNoSecret(p);
  });
});

describe('the configuration examples of docs/', () => {
  // test/docs.test.ts loads every marked block; these check what the two examples show.
  const docs = ['daemon-configuration.md', 'salesforce.md'].map((f) => readFileSync(join(import.meta.dirname, '../../docs', f), 'utf8')).join('\n');
  /** The first block of YAML that starts with these lines, without its fence. */
  const yamlBlock = (start: string) => new RegExp(`\`\`\`yaml\\n(${start}[\\s\\S]*?)\`\`\``).exec(docs)?.[1];

  /** Loads YAML from a file as the daemon does, every ${NAME} in it given a value of its own (an https URL for a *_URL). */
  function load(yaml: string, values: Record<string, string> = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'cds-docs-'));
    try {
      const file = join(dir, 'sync.yaml');
      writeFileSync(file, yaml);
      const names = [...yaml.matchAll(/\$\{(\w+)\}/g)].map((m) => m[1]!);
      return loadConfig(file, Object.fromEntries(names.map((n) => [n, values[n] ?? (n.endsWith('_URL') ? `https://example.com/${n}` : `value-of-${n}`)])));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('is a valid configuration using every source type', () => {
    const block = yamlBlock('redis:');
    expect(block).toBeDefined();
    const config = load(block!, { SIGNUP_WEBHOOK_SECRET: 'whsec_c2VjcmV0' });
    expect(config.syncs.map((s) => s.source.type)).toEqual(['hubspot', 'pipedrive', 'webhook', 'csv']);
    expect(config.dialer.apiToken).toBe('value-of-DIALER_API_TOKEN');
    expect(config.notify?.to).toEqual([{ type: 'slack', url: 'https://example.com/SLACK_WEBHOOK_URL' }, expect.objectContaining({ type: 'webhook' })]);
  });

  it('has a valid Salesforce example, with the schedule, onLeave and compareEvery it runs on in their places', async () => {
    // The Salesforce section's example holds only `syncs:`; the main example's top gives it the rest.
    const top = yamlBlock('redis:')?.split('\nsyncs:\n')[0];
    const block = yamlBlock('syncs:\\n {2}- id: sf-callbacks');
    expect(top).toBeDefined();
    expect(block).toBeDefined();
    const config = load(`${top}\n${block}`);
    // Written out in the example, not left to defaults a reader cannot see.
    const shown = (await import('yaml')).parse(block!).syncs[0];
    expect(Object.keys(shown)).toEqual(expect.arrayContaining(['schedule', 'onLeave', 'mirror']));
    expect(Object.keys(shown.source)).toContain('compareEvery');
    const [sf] = config.syncs;
    expect(sf!.source).toMatchObject({ type: 'salesforce', compareEvery: 3_600_000, overlap: 300_000 });
    expect(sf!.schedule).toEqual({ every: 900_000 });
    expect(sf!.onLeave).toBe('delete');
    expect(sf!.mirror).toMatchObject({ every: 60_000, statusProperty: 'Dialer_Status__c' });
  });
});

describe('a compliance rule set', () => {
  it('is on unless turned off: a configuration without any block holds every sync to the default rules', () => {
    const config = parseConfig(minimalConfig(), 'x', ENV);
    expect(complianceOf(config, config.syncs[0]!)).toEqual({ ruleSet: { stateRules: true }, evidence: 'all', checkEvery: 30_000, margin: 120_000, rescanEvery: 3_600_000 });
    expect(rulesStatus(config.syncs[0]!.rules)).toEqual({
      on: true, from: 'default', federal: { from: '08:00', to: '21:00' }, stateRules: true, window: null, evidence: 'all', zones: null,
      summary: 'on (the default: no compliance block): federal 08:00-21:00; state rows on; no operator window; evidence all, in each callee\'s local time',
    });
  });

  it('is turned off with a reason, at the top (every sync) or per sync; a sync\'s own block wins either way', () => {
    const raw = minimalConfig();
    raw.compliance = { off: 'informational calls' };
    raw.syncs.push({ ...raw.syncs[0], id: 's2', compliance: { window: { from: '09:00', to: '20:00' } } });
    let config = parseConfig(raw, 'x', ENV);
    expect(complianceOf(config, config.syncs[0]!)).toBeUndefined();
    expect(rulesStatus(config.syncs[0]!.rules)).toEqual({ on: false, off: 'informational calls', from: 'configuration', summary: 'off (the top-level compliance block): informational calls' });
    // No rules, no cap to count: no counting mirror either.
    expect(config.syncs[0]!.mirror).toBeUndefined();
    // The top says off; s2 turns them back on with its own block.
    expect(complianceOf(config, config.syncs[1]!)!.ruleSet).toEqual({ stateRules: true, operator: { hours: ['09:00', '20:00'] } });
    expect(rulesStatus(config.syncs[1]!.rules)).toMatchObject({ on: true, from: 'sync', window: { from: '09:00', to: '20:00', days: null } });
    // And the other way round: the top holds the rules, s2 turns them off (the reason is trimmed).
    raw.compliance = { evidence: 'best' };
    raw.syncs[1].compliance = { off: '  callees outside North America ' };
    config = parseConfig(raw, 'x', ENV);
    expect(rulesStatus(config.syncs[0]!.rules)).toMatchObject({ on: true, from: 'configuration', evidence: 'best' });
    expect(rulesStatus(config.syncs[1]!.rules)).toMatchObject({ on: false, from: 'sync', off: 'callees outside North America' });
    expect(complianceOf(config, config.syncs[1]!)).toBeUndefined();
  });

  it.each([
    ['compliance: off (a bare word)', (raw: any) => { raw.compliance = 'off'; }, 'compliance', /an object: the calling-window rules .*\{ off: "<reason>" \}: turning the rules off takes a reason \(got "off"\)/],
    ['compliance: false', (raw: any) => { raw.syncs[0].compliance = false; }, 'syncs.0.compliance', /turning the rules off takes a reason \(got false\)/],
    ['off without a reason', (raw: any) => { raw.compliance = { off: '' }; }, 'compliance.off', /the reason the calling-window rules are off, such as "informational calls, not telemarketing" \(got ""\)/],
    ['off with a blank reason', (raw: any) => { raw.syncs[0].compliance = { off: '   ' }; }, 'syncs.0.compliance.off', /the reason the calling-window rules are off/],
    ['off: true', (raw: any) => { raw.compliance = { off: true }; }, 'compliance.off', /the reason the calling-window rules are off.*\(got true\)/],
    ['off beside a rule', (raw: any) => { raw.compliance = { off: 'informational calls', window: { from: '09:00', to: '20:00' } }; }, 'compliance.window', /the rules are off here \(off is given\): leave this out/],
    ['an unknown key', (raw: any) => { raw.compliance = { of: 'informational calls' }; }, 'compliance.of', /unknown key; allowed here: .*rescanEvery, off$/],
    ['routes with the rules off', (raw: any) => { raw.compliance = { off: 'informational calls' }; raw.syncs[0] = { ...raw.syncs[0], campaignId: undefined, routes: [{ campaignId: 'e', zones: ['America/New_York'] }] }; },
      'syncs.0.routes', /routes need the calling-window rules \(they are off: informational calls\)/],
  ])('%s is refused at load, naming the field', (_, change, path, message) => {
    const raw = minimalConfig();
    change(raw);
    expect(problemAt(problemsOf(raw).problems, path)).toMatch(message);
  });

  it('a sync takes the daemon\'s, or its own', () => {
    const raw = minimalConfig();
    raw.compliance = {};
    raw.syncs.push({ ...raw.syncs[0], id: 's2', compliance: { window: { from: '09:00', to: '20:00', days: ['mon', 'tue'] }, stateRules: false, evidence: 'best' } });
    const config = parseConfig(raw, 'x', ENV);
    // Every piece of evidence counts unless a block says `best`.
    expect(complianceOf(config, config.syncs[0]!)).toEqual({ ruleSet: { stateRules: true }, evidence: 'all', checkEvery: 30_000, margin: 120_000, rescanEvery: 3_600_000 });
    expect(complianceOf(config, config.syncs[1]!)!.ruleSet).toEqual({ stateRules: false, operator: { hours: ['09:00', '20:00'], days: ['mon', 'tue'] } });
    expect(complianceOf(config, config.syncs[1]!)!.evidence).toBe('best');
  });

  it('gives a sync under the state rows without a mirror one that only counts calls, for the caps', () => {
    const raw = minimalConfig();
    raw.compliance = {};
    raw.syncs.push({ ...raw.syncs[0], id: 's2', compliance: { stateRules: false } });
    raw.syncs.push({ ...raw.syncs[0], id: 's3', mirror: { sink: { type: 'none' }, every: '5m' } });
    const config = parseConfig(raw, 'x', ENV);
    expect(config.syncs[0]!.mirror).toMatchObject({ sink: { type: 'none' }, every: 60_000, keepDays: 2 });
    // No state rows, no cap to count: no mirror.
    expect(config.syncs[1]!.mirror).toBeUndefined();
    expect(config.syncs[2]!.mirror).toMatchObject({ sink: { type: 'none' }, every: 300_000, keepDays: 400 });
    // The default rules hold the state rows: a sync without a block gets the counting mirror too.
    expect(parseConfig(minimalConfig(), 'x', ENV).syncs[0]!.mirror).toMatchObject({ sink: { type: 'none' }, keepDays: 2 });
    expect(problemsOf({ ...minimalConfig(), syncs: [{ ...minimalConfig().syncs[0], mirror: { sink: { type: 'nowhere' } } }] }).message).toMatch(/source, webhook, file, none/);
  });

  it.each([
    [{ window: { from: '9:00', to: '20:00' } }, 'compliance.window.from', /HH:MM/],
    [{ window: { from: '20:00', to: '09:00' } }, 'compliance.window.to', /before to/],
    [{ window: { from: '09:00', to: '20:00', days: ['monday'] } }, 'compliance.window.days.0', /mon/],
    [{ stateRules: 'yes' }, 'compliance.stateRules', /boolean/],
    [{ evidence: 'nope' }, 'compliance.evidence', /"all".*"best"/],
    [{ checkEvery: '2m', margin: '1m' }, 'compliance.margin', /longer than checkEvery/],
    [{ zones: ['Mars/Base'] }, 'compliance.zones.0', /IANA time zone/],
  ])('%j is refused, naming the key and what is allowed', (compliance, path, allowed) => {
    const raw = minimalConfig();
    raw.compliance = compliance;
    expect(problemAt(problemsOf(raw).problems, path)).toMatch(allowed);
  });

  it('an unknown key names the keys allowed', () => {
    const raw = minimalConfig();
    raw.syncs[0].compliance = { windows: {} };
    expect(problemAt(problemsOf(raw).problems, 'syncs.0.compliance.windows')).toContain('allowed here: window, stateRules, evidence, zones, checkEvery, margin');
  });
});

describe('Do Not Call lists', () => {
  const national = { name: 'national', type: 'registry', folder: '/var/dnc/national' };
  it('gives each sync every list by default, the top-level choice, or its own; off takes a reason', () => {
    const raw = minimalConfig();
    raw.doNotCallLists = [national, { name: 'texas', type: 'state', folder: '/var/dnc/tx', states: ['TX'], maxAgeDays: 92 }];
    raw.syncs.push({ ...raw.syncs[0], id: 's2', doNotCall: { lists: ['texas'] } }, { ...raw.syncs[0], id: 's3', doNotCall: { off: 'survey calls: not telemarketing' } });
    const c = parseConfig(raw, 'sync.yaml', ENV);
    expect(c.syncs.map((s) => ({ lists: s.dnc.lists.map((l) => l.name), off: s.dnc.off, from: s.dnc.from }))).toEqual([
      { lists: ['national', 'texas'], off: undefined, from: 'default' },
      { lists: ['texas'], off: undefined, from: 'sync' },
      { lists: [], off: 'survey calls: not telemarketing', from: 'sync' },
    ]);
    expect(c.syncs[0]!.dnc.lists[0]).toMatchObject({ maxAgeDays: 31, changeLayout: { number: 0, action: 1, added: ['A'], deleted: ['D'] } });
    expect(c).toMatchObject({ doNotCallLoadEvery: 3_600_000, doNotCallAuditDays: 45 });
    raw.doNotCall = { lists: ['national'] };
    expect(parseConfig(raw, 'sync.yaml', ENV).syncs[0]!.dnc).toMatchObject({ lists: [{ name: 'national' }], from: 'configuration' });
  });

  it('names what is wrong: an unknown list, a registry kept past 31 days, a state list without its age, the reserved name, off beside lists', () => {
    const raw = minimalConfig();
    raw.doNotCallLists = [national, { name: 'texas', type: 'state', folder: '/var/dnc/tx', states: ['TX'] }, { name: 'company', type: 'registry', folder: '/x' },
      { name: 'old', type: 'registry', folder: '/x', maxAgeDays: 45 }];
    raw.syncs[0].doNotCall = { lists: ['nationl'] };
    raw.doNotCall = { lists: ['national'], off: 'surveys' };
    const { problems } = problemsOf(raw);
    expect(problemAt(problems, 'doNotCallLists.1.maxAgeDays')).toContain('how many days a copy of this list vouches for');
    expect(problemAt(problems, 'doNotCallLists.2.name')).toContain('"company" is the company\'s own list');
    expect(problemAt(problems, 'doNotCallLists.3.maxAgeDays')).toContain('at most 31: the safe harbor asks for a copy of the registry no older than 31 days');
    expect(problemAt(problems, 'doNotCall.lists')).toContain('the lists are off here (off is given)');
    const bad = minimalConfig();
    bad.doNotCallLists = [national];
    bad.syncs[0].doNotCall = { lists: ['nationl'] };
    expect(problemAt(problemsOf(bad).problems, 'syncs.0.doNotCall.lists')).toContain('no Do Not Call list "nationl" in doNotCallLists (it has national)');
  });
});
