// README.md's first sync as a user with only the tarballs follows it, from an empty folder: install with plain npm,
// the reference server with --seed demo, `init --source csv` (with its sample contacts), the edits the README lists,
// `check`, `sync --dry-run`, `start` until the first call is written back, SIGTERM. The commands run are the README's
// own (the test finds each in its section), and no step's output names a command a tarball user lacks (./dev, npm run).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, testPrefix, waitFor } from '../support/daemon.ts';
import { activities, installRelease, ROOT, startInstalled, VERSION, type Installed } from '../support/shipped.ts';

/** What only a checkout has. */
const CHECKOUT_ONLY = /\.\/dev\b|npm run/;
/** The daemon's shutdownTimeout as init writes it. */
const SHUTDOWN_TIMEOUT_MS = 20_000;

let installed: Installed;
const redis = testPrefix();

/** The README's section for a tarball user. */
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const SECTION = /^### From the tarballs[^\n]*\n([\s\S]*?)(?=^##)/m.exec(README)?.[1] ?? '';

/** A one-shot command run to its end: its exit code and output. */
async function run(argv: string[], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const started = startInstalled(installed, argv, env);
  const [code] = await started.exited;
  return { code, output: started.output() };
}

beforeAll(() => { installed = installRelease('first-sync-'); }, 300_000);

afterAll(async () => {
  installed?.cleanup();
  await redis.cleanup();
});

describe("README's first sync, from the tarballs", () => {
  it('the section is there and installs these tarballs', () => {
    expect(SECTION).not.toBe('');
    expect(SECTION).toContain(`npm install ./campaign-sync-${VERSION}.tgz ./campaign-dialing-server-${VERSION}.tgz`);
    expect(SECTION).not.toMatch(CHECKOUT_ONLY);
  });

  it('server, init, the edits, check, dry run, start until the first call is written back, SIGTERM', async () => {
    const readme = (text: string) => expect(SECTION, `README's first sync says ${text}`).toContain(text);
    const { dir } = installed;

    // 1. The reference server, seeded. The bin npx would run, so that SIGTERM reaches it (npx does not pass it on),
    // on a free port: tests share the machine.
    readme('npx campaign-dialing-server --seed demo');
    const server = startInstalled(installed, ['campaign-dialing-server', '--seed', 'demo', '--port', '0']);
    const base = (await server.line(/^Reference server listening on (http:\/\/\S+)/m))[1]!;
    const [, accountId, zone] = await server.line(/^Demo account: (\S+) {2}\(Demo Company, (\S+)\)$/m);
    const token = (await server.line(/^Campaign Admin API token \(shown once\): (\S+)$/m))[1]!;
    const campaignId = (await server.line(/^Dynamic Active campaign \(for campaign-sync\): (\S+) /m))[1]!;
    readme('Dynamic Active campaign (for campaign-sync)');
    expect(server.output()).not.toMatch(CHECKOUT_ONLY);
    const help = await run(['npx', 'campaign-dialing-server', '--help']);
    expect(help.output).toMatch(/^usage: npx campaign-dialing-server \[--port 4000\]/);
    expect(help.output).not.toMatch(CHECKOUT_ONLY);

    // 2. init writes the configuration and the sample contacts, and names the next command as the user runs it.
    readme('npx campaign-sync init --source csv --out sync.yaml');
    const init = await run(['npx', 'campaign-sync', 'init', '--source', 'csv', '--out', 'sync.yaml']);
    expect(init.code, init.output).toBe(0);
    expect(init.output).toContain('then: npx campaign-sync check --config sync.yaml');
    expect(init.output).not.toMatch(CHECKOUT_ONLY);
    let config = readFileSync(join(dir, 'sync.yaml'), 'utf8');
    expect(config).toContain('#   npx campaign-sync check --config sync.yaml');
    expect(config).not.toMatch(CHECKOUT_ONLY);
    const contacts = readFileSync(join(dir, 'contacts.csv'), 'utf8').trim().split('\n');
    expect(contacts).toHaveLength(6);
    const samplePhones = contacts.slice(1).map((row) => row.split(',')[1]!.replaceAll(' ', ''));

    // 3. The edits the README lists, each on the line init wrote for it.
    const edit = (from: RegExp, to: string) => {
      expect(config, `sync.yaml has ${from}`).toMatch(from);
      config = config.replace(from, to);
    };
    readme('`dialer.baseUrl`');
    edit(/^ {2}baseUrl: https:\/\/dialer\.example\.com/m, `  baseUrl: ${base}`);
    readme('`dialer.accountId`');
    edit(/your-account-id/, accountId!);
    readme('`dialer.timeZone`');
    edit(/^ {2}timeZone: UTC/m, `  timeZone: ${zone}`);
    readme('`campaignId`');
    edit(/your-campaign-id/, campaignId);
    const off = 'compliance: { off: "the reference server\'s callees are simulated" }';
    readme(off);
    edit(/^ {4}# compliance: \{ off: "the reason" \}/m, `    ${off}`);
    readme('`redis.url`');
    edit(/^ {2}url: redis:\/\/127\.0\.0\.1:6379/m, `  url: ${REDIS_URL}`);
    // The test's own: a key prefix of its own and a free port.
    edit(/^ {2}prefix: \S+/m, `  prefix: ${redis.prefix}`);
    edit(/^ {2}port: \d+/m, '  port: 0');
    writeFileSync(join(dir, 'sync.yaml'), config);
    const env = { DIALER_API_TOKEN: token };
    readme('export DIALER_API_TOKEN=');

    // 4. check passes (a warning, such as Redis without persistence, is allowed).
    readme('npx campaign-sync check --config sync.yaml');
    const check = await run(['npx', 'campaign-sync', 'check', '--config', 'sync.yaml'], env);
    expect(check.code, check.output).toBe(0);
    expect(check.output).not.toMatch(CHECKOUT_ONLY);

    // 5. The dry run would add the sample contacts' numbers, and keep the demo's own: they are not the sync's.
    const held = async () => {
      const res = await fetch(`${base}/v1/accounts/${accountId}/campaigns/${campaignId}/numbers?range=[0,99]`, { headers: { authorization: `Bearer ${token}` } });
      return (await res.json() as Array<{ number: string }>).map((n) => n.number);
    };
    const demoNumbers = await held();
    expect(demoNumbers.length).toBeGreaterThan(0);
    readme('npx campaign-sync sync csv-sync --dry-run --config sync.yaml');
    const dry = await run(['npx', 'campaign-sync', 'sync', 'csv-sync', '--dry-run', '--config', 'sync.yaml'], env);
    expect(dry.code, dry.output).toBe(0);
    expect(dry.output).toMatch(/\badd 5, replace 0, delete 0\b/);
    expect(dry.output).toContain(`in the campaign, not this sync's: ${demoNumbers.length} (kept as they are`);
    expect(dry.output).not.toMatch(CHECKOUT_ONLY);

    // 6. start (the bin, as systemd runs it: npx does not pass SIGTERM on) until the first call is written back.
    readme('npx campaign-sync start --config sync.yaml');
    const daemon = startInstalled(installed, ['campaign-sync', 'start', '--config', 'sync.yaml'], env);
    // The sample contacts' numbers reach the campaign, and the calls come back.
    await waitFor(async () => { const numbers = await held(); return samplePhones.every((p) => numbers.includes(p)); }, "the sample contacts' numbers in the campaign", 30_000)
      .catch((err: Error) => { throw new Error(`${err.message}\n${daemon.output().slice(-3000)}`); });
    // The demo's numbers are all still there: the first start deleted none of the numbers it did not add.
    expect((await held()).filter((n) => demoNumbers.includes(n)).sort()).toEqual([...demoNumbers].sort());
    const calls = join(dir, 'calls.jsonl');
    readme('calls.jsonl');
    await waitFor(() => existsSync(calls) && activities(readFileSync(calls, 'utf8')).length > 0, 'the first call written back to calls.jsonl', 120_000)
      .catch((err: Error) => { throw new Error(`${err.message}\n${daemon.output().slice(-3000)}`); });

    const stopping = Date.now();
    daemon.child.kill('SIGTERM');
    const [code, signal] = await daemon.exited;
    expect({ code, signal }, daemon.output().slice(-2000)).toEqual({ code: 0, signal: null });
    expect(Date.now() - stopping).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(daemon.output()).not.toMatch(CHECKOUT_ONLY);

    server.child.kill('SIGTERM');
    expect((await server.exited)[0], server.output()).toBe(0);
  }, 240_000);
});
