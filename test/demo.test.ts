// `./dev start` end to end: demo/start.ts in its own process starts the server, the HubSpot stand-in and the daemon,
// the contacts (spread over the US zones, Puerto Rico and Canada, some Do Not Call) wait for their calling window, are
// synced when it opens, called and mirrored back, the progress view says what the rules held back, the phone change it
// prints is held by the window and then added (and the view says so), and a Ctrl-C (SIGINT) stops every process and
// removes what it made.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { REDIS_URL, waitFor } from './support/daemon.ts';
import { field, startDemo } from './support/demo.ts';

const ROOT = join(import.meta.dirname, '..');

const CONTACTS = 40;

/** Whether something accepts connections on the URL's port. */
function listening(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

async function keysUnder(prefix: string): Promise<number> {
  const r = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    let count = 0;
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      count += keys.length;
    } while (cursor !== '0');
    return count;
  } finally {
    r.disconnect();
  }
}

/** The area codes of the demo's contacts, by where their callees are. */
const ZONES = {
  eastern: [212, 617, 404, 305, 401], central: [312, 214], indiana: [219], mountain: [303], arizona: [602], pacific: [213, 206],
  alaska: [907], hawaii: [808], puertoRico: [787], canada: [416, 604, 902],
};

it('syncs the stand-in\'s contacts when their window opens, holds Do Not Call ones out, calls and mirrors, shows what the rules hold back and what became of the printed change, and stops on SIGINT', async () => {
  const demo = startDemo(['--contacts', String(CONTACTS), '--speed', '600', '--port-base', '0', '--interval', '0.5']);
  const { proc, exited } = demo;

  // Not a terminal: one plain progress line per refresh. First the dialer's clock stands before the window the
  // contacts share (Tuesday 1 December 2026, 08:00 in Honolulu): the daemon has read them, and the rules hold them.
  const before = await waitFor(() => {
    if (demo.gone()) return { line: null };
    const line = demo.lastProgress();
    return line && field(line, 'window') > 0 && field(line, 'dnc') > 0 ? { line } : null;
  }, 'the demo to show numbers held by the calling window and by Do Not Call', 30_000);
  expect(before.line, `the demo exited early:\n${demo.output()}`).not.toBeNull();
  expect(before.line).toContain('campaign Paused until 2026-12-01T18:00:00.000Z');
  expect(field(before.line!, 'synced')).toBe(0);
  expect(field(before.line!, 'calls')).toBe(0);
  expect(field(before.line!, 'cap')).toBe(0);
  const dnc = field(before.line!, 'dnc');

  // The "Try" line's change, made while the window is closed: a contact the CRM does not mark Do Not Call gets a new
  // phone, which the view follows.
  const printed = demo.output();
  const hubspotToken = /access token (\S+)/.exec(printed)?.[1];
  const [, hubspotUrl, tryContact, tryBody] = /-X PATCH .* (http:\/\/\S+)\/crm\/objects\/2026-09\/contacts\/(\d+) -d '([^']+)'/.exec(printed) ?? [];
  const serverUrl = /Reference server\s+(http:\/\/\S+)/.exec(printed)?.[1];
  const adminApiToken = /Campaign Admin API token (\S+)/.exec(printed)?.[1];
  const [, accountId, campaignId] = /\/v1\/accounts\/([^/]+)\/campaigns\/([^/]+)\/reports/.exec(printed) ?? [];
  for (const v of [hubspotToken, hubspotUrl, tryContact, tryBody, serverUrl, adminApiToken, accountId, campaignId]) expect(v, printed).toBeTruthy();
  const dialerHas = (phone: string) => fetch(`${serverUrl}/v1/accounts/${accountId}/campaigns/${campaignId}/numbers?filter=${encodeURIComponent(JSON.stringify({ number: phone }))}`, {
    headers: { authorization: `Bearer ${adminApiToken}` },
  }).then(async (r) => ((await r.json()) as unknown[]).length === 1);
  const hubspot = (path: string, init: RequestInit = {}) => fetch(`${hubspotUrl}/crm/objects/2026-09/${path}`, {
    ...init, headers: { authorization: `Bearer ${hubspotToken}`, 'content-type': 'application/json' },
  });
  const tried = await hubspot(`contacts/${tryContact}?properties=do_not_call`).then((r) => r.json() as Promise<{ properties: { do_not_call: string } }>);
  expect(tried.properties.do_not_call).toBe('false');
  expect((await hubspot(`contacts/${tryContact}`, { method: 'PATCH', body: tryBody! })).status).toBe(200);
  const newPhone = '+12125550199';
  expect(JSON.parse(tryBody!)).toEqual({ properties: { phone: '+1 212 555 0199' } });
  const changeLine = (outcome: RegExp) => waitFor(() => {
    if (demo.gone()) return { line: null };
    const line = demo.lastProgress();
    return line && outcome.test(line) ? { line } : null;
  }, `the demo to say what became of the change (${outcome.source})`, 30_000);
  const read = await changeLine(new RegExp(`\\| last change: contact ${tryContact} \\${newPhone} (held by the calling window|added to campaign)`));
  expect(read.line, `the demo exited early:\n${demo.output()}`).not.toBeNull();
  // The window opens 15 real seconds after the start: a change read before that waits for it, with the campaign.
  if (read.line!.includes('held by the calling window')) {
    expect(read.line).toContain(`held by the calling window (waiting for it to open at 2026-12-01T18:00:00.000Z)`);
    expect(read.line).toContain('campaign Paused until 2026-12-01T18:00:00.000Z');
    expect(await dialerHas(newPhone)).toBe(false);
  }

  // The window opens: every number not Do Not Call is synced, called and mirrored, and none waits any more.
  const progress = await waitFor(() => {
    if (demo.gone()) return { line: null };
    const line = demo.lastProgress();
    // The registry stand-in keeps some numbers out too (lists N): the rest are synced.
    return line && field(line, 'lists') > 0 && field(line, 'synced') === CONTACTS - dnc - field(line, 'lists') && field(line, 'calls') > 0 && field(line, 'activities') > 0 ? { line } : null;
  }, `the demo to report every number neither marked nor on the registry synced, calls made and activities mirrored`, 45_000);
  const out = demo.output();
  expect(progress.line, `the demo exited early:\n${out}`).not.toBeNull();
  expect(field(progress.line!, 'crm')).toBe(CONTACTS);
  expect(field(progress.line!, 'window')).toBe(0);
  expect(field(progress.line!, 'dnc')).toBe(dnc);
  expect(progress.line).toMatch(/campaign Active until 2026-12-01T2\d:\d\d:00\.000Z/);

  // Open, the campaign takes the changed contact's new number, and the view says so.
  const added = await changeLine(new RegExp(`\\| last change: contact ${tryContact} \\${newPhone} added to campaign ${campaignId}( |$)`));
  expect(added.line, `the demo exited early:\n${demo.output()}`).not.toBeNull();
  expect(await dialerHas(newPhone)).toBe(true);

  // What it printed: the three servers, the Redis prefix and the run's folder.
  expect(/HubSpot stand-in\s+(http:\/\/\S+)/.exec(out)?.[1]).toBe(hubspotUrl);
  const daemonUrl = /Sync daemon\s+(http:\/\/\S+)\/ops/.exec(out)?.[1];
  const prefix = /keys (demo-[\w-]+):\*/.exec(out)?.[1];
  const configFile = /Daemon config\s+(\S+)/.exec(out)?.[1];
  for (const v of [serverUrl, hubspotUrl, daemonUrl, prefix, configFile]) expect(v, out).toBeTruthy();
  const urls = [serverUrl!, hubspotUrl!, daemonUrl!];
  expect(out).toContain(`web console ${serverUrl}/console (sign in with the console token below)`);
  const consolePage = await fetch(`${serverUrl}/console`);
  expect(consolePage.status).toBe(200);
  expect(await consolePage.text()).toContain('<label for="token">Console token</label>');
  expect(await Promise.all(urls.map(listening))).toEqual([true, true, true]);
  expect(await keysUnder(prefix!)).toBeGreaterThan(0);
  expect(existsSync(configFile!)).toBe(true);
  // The operations page it printed answers with the admin token it printed.
  const adminToken = /password (\S+)/.exec(out)?.[1];
  const ops = await fetch(`${daemonUrl}/ops/api/syncs`, { headers: { authorization: `Basic ${Buffer.from(`x:${adminToken}`).toString('base64')}` } });
  expect(ops.status).toBe(200);
  const [sync] = ((await ops.json()) as { syncs: { sync: string; contacts: number; doNotCall: number; window: { callsInside: number; callsOutside: number } }[] }).syncs;
  expect(sync).toMatchObject({ sync: 'demo', contacts: CONTACTS, doNotCall: dnc });
  // Every call the mirror read started inside its callee's window.
  expect(sync!.window.callsOutside).toBe(0);
  expect(sync!.window.callsInside).toBeGreaterThan(0);

  // The contacts span the zones: the campaign's numbers have every area code, and the daemon placed them by it.
  const numbers = await fetch(`${serverUrl}/v1/accounts/${accountId}/campaigns/${campaignId}/numbers?range=%5B0,99%5D`, { headers: { authorization: `Bearer ${adminApiToken}` } })
    .then((r) => r.json() as Promise<{ number: string }[]>);
  const areaCodes = new Set(numbers.map((n) => Number(n.number.slice(2, 5))));
  for (const [zone, codes] of Object.entries(ZONES)) expect(codes.filter((c) => areaCodes.has(c)), zone).toEqual(codes);
  const evidence = async (code: number) => {
    const phone = numbers.find((n) => n.number.startsWith(`+1${code}`))!.number;
    const res = await fetch(`${daemonUrl}/ops/api/syncs/demo/window/${encodeURIComponent(phone)}`, { headers: { authorization: `Basic ${Buffer.from(`x:${adminToken}`).toString('base64')}` } });
    return ((await res.json()) as { evidence: string }).evidence;
  };
  expect(await evidence(808)).toMatch(/area code 808 .*Pacific\/Honolulu/);
  expect(await evidence(907)).toMatch(/area code 907 .*America\/Anchorage/);
  expect(await evidence(787)).toMatch(/America\/Puerto_Rico/);
  expect(await evidence(305)).toMatch(/FL/);

  // The Do Not Call count is the contacts the CRM marks, and none of their numbers is in the campaign.
  const marked = await hubspot('contacts/search', {
    method: 'POST', body: JSON.stringify({ limit: 100, properties: ['phone'], filterGroups: [{ filters: [{ propertyName: 'do_not_call', operator: 'EQ', value: 'true' }] }] }),
  }).then((r) => r.json() as Promise<{ total: number; results: { properties: { phone: string } }[] }>);
  expect(marked.total).toBe(dnc);
  const e164 = (typed: string) => `+${typed.replace(/\D/g, '').replace(/^(?=\d{10}$)/, '1')}`;
  const inCampaign = new Set(numbers.map((n) => n.number));
  expect(marked.results.map((r) => e164(r.properties.phone)).filter((p) => inCampaign.has(p))).toEqual([]);

  // The demo's registry stand-in holds every number ending in 1: none is in the campaign, each is counted as kept out by
  // it, and the printed `dnc why` says which copy holds the one it names.
  const onRegistry = (n: string) => /^\+1\d{3}555\d{3}1$/.test(n);
  expect(numbers.filter((n) => onRegistry(n.number))).toEqual([]);
  const status = ((await (await fetch(`${daemonUrl}/ops/api/syncs`, { headers: { authorization: `Basic ${Buffer.from(`x:${adminToken}`).toString('base64')}` } })).json()) as
    { syncs: { doNotCallLists: { lists: { list: string; keptOut: number; cannotVouch: string | null }[] } }[] }).syncs[0]!;
  const national = status.doNotCallLists.lists.find((l) => l.list === 'national')!;
  expect(national.cannotVouch).toBeNull();
  expect(national.keptOut, JSON.stringify(status.doNotCallLists)).toBeGreaterThan(0);
  const why = /^ {2}(\.\/dev daemon dnc why \S+ --config \S+)$/m.exec(out)?.[1];
  expect(why, out).toBeTruthy();
  const envFile = /secrets in (\S+)\)/.exec(out)![1]!;
  const answer = spawnSync('bash', ['-c', `set -a; . ${envFile}; set +a; ${why}`], { cwd: ROOT, encoding: 'utf8' });
  expect(answer.status, answer.stderr).toBe(0);
  expect(answer.stdout).toMatch(/national: listed/);

  proc.kill('SIGINT');
  const exit = await exited;
  expect(exit, demo.output()).toEqual({ code: 0, signal: null });
  expect(demo.output()).toMatch(/stopped; removed \d+ Redis keys/);
  expect(await Promise.all(urls.map(listening))).toEqual([false, false, false]);
  expect(await keysUnder(prefix!)).toBe(0);
  expect(existsSync(configFile!)).toBe(false);
}, 90_000);
