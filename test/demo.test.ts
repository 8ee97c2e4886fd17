// `./dev start` end to end: demo/start.ts in its own process starts the server, the HubSpot stand-in and the daemon,
// the contacts are synced, called and mirrored back, and a Ctrl-C (SIGINT) stops every process and removes what it made.
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { REDIS_URL, waitFor } from './support/daemon.ts';
import { field, startDemo } from './support/demo.ts';

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

it('syncs the stand-in\'s contacts, calls them, mirrors the calls back, and stops everything on SIGINT', async () => {
  const demo = startDemo(['--contacts', String(CONTACTS), '--speed', '600', '--port-base', '0', '--interval', '0.5']);
  const { proc, exited } = demo;

  // Not a terminal: one plain progress line per refresh.
  const progress = await waitFor(() => {
    if (demo.gone()) return { line: null };
    const line = demo.lastProgress();
    return line && field(line, 'synced') === CONTACTS && field(line, 'calls') > 0 && field(line, 'activities') > 0 ? { line } : null;
  }, `the demo to report ${CONTACTS} contacts synced, calls made and activities mirrored`, 45_000);
  const out = demo.output();
  expect(progress.line, `the demo exited early:\n${out}`).not.toBeNull();
  expect(field(progress.line!, 'crm')).toBe(CONTACTS);

  // What it printed: the three servers, the Redis prefix and the run's folder.
  const serverUrl = /Reference server\s+(http:\/\/\S+)/.exec(out)?.[1];
  const hubspotUrl = /HubSpot stand-in\s+(http:\/\/\S+)/.exec(out)?.[1];
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
  expect(((await ops.json()) as { syncs: { sync: string; contacts: number }[] }).syncs).toMatchObject([{ sync: 'demo', contacts: CONTACTS }]);

  proc.kill('SIGINT');
  const exit = await exited;
  expect(exit, demo.output()).toEqual({ code: 0, signal: null });
  expect(demo.output()).toMatch(/stopped; removed \d+ Redis keys/);
  expect(await Promise.all(urls.map(listening))).toEqual([false, false, false]);
  expect(await keysUnder(prefix!)).toBe(0);
  expect(existsSync(configFile!)).toBe(false);
}, 60_000);
