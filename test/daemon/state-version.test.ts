// The Redis state's version: recorded by every process that opens it (stateOpen-1.lua), a newer one refused naming
// both versions (by Daemon.start and by the command line), an older one migrated by one process while the others wait.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Daemon } from '../../daemon/app.ts';
import { parseConfig } from '../../daemon/config.ts';
import { DaemonKeys } from '../../daemon/state/keys.ts';
import { LAYOUT } from '../../daemon/state/layout.ts';
import { withScripts } from '../../daemon/state/scripts.ts';
import { NewerStateError, openState, readStateVersion, STATE_VERSION } from '../../daemon/state/state-version.ts';
import { VERSION, versionFrom } from '../../daemon/version.ts';
import { quietLog, REDIS_URL, RULES_OFF, spawnDaemon, testPrefix, waitFor } from '../support/daemon.ts';
import { startRedisCluster, type RedisClusterUnderTest } from '../support/redis-cluster.ts';

const redis = withScripts(new Redis(REDIS_URL));
const prefixes: { cleanup(): Promise<void> }[] = [];
const fresh = (): DaemonKeys => {
  const t = testPrefix();
  prefixes.push(t);
  return new DaemonKeys(t.prefix);
};
afterAll(async () => {
  for (const t of prefixes) await t.cleanup();
  redis.disconnect();
});

/** A logger whose lines are kept, to see who migrated and who waited. */
function recordingLog(): { log: pino.Logger; lines: { msg: string }[] } {
  const lines: { msg: string }[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => { lines.push(JSON.parse(line)); } });
  return { log, lines };
}

describe('the package version', () => {
  it('is the repository\'s package.json version in a checkout, the installed package\'s own in an install', () => {
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
    const dir = mkdtempSync(join(tmpdir(), 'cds-version-'));
    try {
      // A compiled install: <app>/node_modules/campaign-sync/dist/…; the app's own package.json above is not ours.
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'app', version: '9.9.9', workspaces: ['x'] }));
      mkdirSync(join(dir, 'node_modules/campaign-sync/dist/state'), { recursive: true });
      writeFileSync(join(dir, 'node_modules/campaign-sync/package.json'), JSON.stringify({ name: 'campaign-sync', version: '1.2.3' }));
      expect(versionFrom(join(dir, 'node_modules/campaign-sync/dist/state'))).toBe('1.2.3');
      // A checkout: the workspace root's version, past the member's own package.json.
      mkdirSync(join(dir, 'daemon/state'), { recursive: true });
      writeFileSync(join(dir, 'daemon/package.json'), JSON.stringify({ name: 'member', version: '0.0.1' }));
      expect(versionFrom(join(dir, 'daemon/state'))).toBe('9.9.9');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('stateOpen', () => {
  it('records the state version, the package version and when; over an equal or older record, not over a newer one', async () => {
    const keys = fresh();
    expect(await redis.cdsStateOpen(keys.stateVersion, 2, '0.2.0', '2026-11-28T00:00:00.000Z')).toEqual([0, '']);
    expect(await redis.hgetall(keys.stateVersion)).toEqual({ version: '2', writtenBy: '0.2.0', at: '2026-11-28T00:00:00.000Z' });
    // The same state version by another package version (a rollback within it): recorded.
    expect(await redis.cdsStateOpen(keys.stateVersion, 2, '0.1.9', '2026-11-28T00:00:01.000Z')).toEqual([0, '']);
    expect(await redis.hget(keys.stateVersion, 'writtenBy')).toBe('0.1.9');
    // A newer state version was written: nothing changes, and the answer names it.
    await redis.hset(keys.stateVersion, 'version', 3, 'writtenBy', '0.3.0');
    expect(await redis.cdsStateOpen(keys.stateVersion, 2, '0.2.0', '2026-11-28T00:00:02.000Z')).toEqual([3, '0.3.0']);
    expect(await redis.hgetall(keys.stateVersion)).toMatchObject({ version: '3', writtenBy: '0.3.0' });
  });
});

describe('openState', () => {
  it('on a fresh prefix: records the current version and this package version', async () => {
    const keys = fresh();
    expect(await openState(redis, keys, [], quietLog)).toEqual({ version: 1, writtenBy: null });
    expect(await readStateVersion(redis, keys)).toEqual({ version: STATE_VERSION, writtenBy: VERSION });
    expect(await redis.get(keys.layout)).toBe(LAYOUT);
    expect(await redis.exists(keys.stateLock)).toBe(0);
  });

  it('on a state of 0.1.0 (its layout key, no version recorded): reads it as it is, moving nothing', async () => {
    const keys = fresh();
    await redis.set(keys.layout, LAYOUT);
    await redis.set(`${keys.prefix}:sync:untouched:meta`, 'x'); // an untagged name: a move would rename it
    const { log, lines } = recordingLog();
    expect(await openState(redis, keys, [{ id: 'untouched', campaign: 'c', keys: keys.sync('untouched', 'c') }], log)).toEqual({ version: 2, writtenBy: null });
    expect(await readStateVersion(redis, keys)).toEqual({ version: STATE_VERSION, writtenBy: VERSION });
    expect(await redis.get(`${keys.prefix}:sync:untouched:meta`)).toBe('x');
    expect(lines.map((l) => l.msg)).toEqual([]);
  });

  it('refuses a newer state, naming both versions, and leaves its record as it was', async () => {
    const keys = fresh();
    await redis.hset(keys.stateVersion, 'version', STATE_VERSION + 1, 'writtenBy', '7.0.0');
    const err = await openState(redis, keys, [], quietLog, { packageVersion: '0.2.0' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NewerStateError);
    const message = (err as Error).message;
    expect(message).toContain(`state version ${STATE_VERSION + 1}, written by campaign-sync 7.0.0`);
    expect(message).toContain(`this is campaign-sync 0.2.0, which reads state version ${STATE_VERSION}`);
    expect(message).toContain(`under prefix "${keys.prefix}"`);
    expect(await redis.hgetall(keys.stateVersion)).toEqual({ version: String(STATE_VERSION + 1), writtenBy: '7.0.0' });
  });

  it('migrates an older state once when processes start together: the others wait for it', async () => {
    const keys = fresh();
    // Version 1: keys without hash tags, as before 0.1.0's move.
    const sync = keys.sync('s1', 'camp');
    await redis.hset(`${keys.prefix}:sync:s1:meta`, 'fullDone', '1');
    await redis.hset(`${keys.prefix}:campaign:camp:have`, '+12125550100', '{}');
    const processes = Array.from({ length: 5 }, () => ({ redis: withScripts(new Redis(REDIS_URL)), ...recordingLog() }));
    try {
      const found = await Promise.all(processes.map((p) => openState(p.redis, keys, [{ id: 's1', campaign: 'camp', keys: sync }], p.log)));
      expect(found.every((f) => f.version === 1)).toBe(true);
      const said = processes.flatMap((p) => p.lines.map((l) => l.msg));
      expect(said.filter((m) => m.startsWith('moved the Redis state'))).toHaveLength(1);
      expect(said.filter((m) => m.startsWith('another process is migrating'))).toHaveLength(4);
      expect(await redis.hget(sync.meta, 'fullDone')).toBe('1');
      expect(await redis.hlen(sync.have)).toBe(1);
      expect(await readStateVersion(redis, keys)).toEqual({ version: STATE_VERSION, writtenBy: VERSION });
      expect(await redis.exists(keys.stateLock)).toBe(0);
    } finally {
      for (const p of processes) p.redis.disconnect();
    }
  });

  it('waits for a migrating process of 0.1.0 (its lock), then for a holder that died (its lease lapses) and migrates', async () => {
    const keys = fresh();
    await redis.hset(`${keys.prefix}:sync:s1:meta`, 'fullDone', '1');
    // 0.1.0 took its layout lock with SET NX PX and the process id; this one died holding it.
    await redis.set(keys.stateLock, '4242', 'PX', 600);
    const started = Date.now();
    const { log, lines } = recordingLog();
    await openState(redis, keys, [{ id: 's1', campaign: 'camp', keys: keys.sync('s1', 'camp') }], log);
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    expect(lines.map((l) => l.msg)).toEqual(['another process is migrating the Redis state: waiting for it', expect.stringMatching(/^moved the Redis state/)]);
    expect(await redis.hget(keys.sync('s1', 'camp').meta, 'fullDone')).toBe('1');
  });
});

describe('a process started on a newer state', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cds-state-version-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const raw = (prefix: string) => ({
    redis: { url: REDIS_URL, prefix },
    http: { host: '127.0.0.1', port: 0 },
    // Never reached: the state is checked before anything else.
    dialer: { baseUrl: 'http://127.0.0.1:9', accountId: 'a', apiToken: 'k' },
    syncs: [{ id: 'csv', campaignId: 'c', source: { type: 'csv', path: join(dir, 'none.csv') }, mapping: { phone: 'phone', defaultCountry: 'US' } }],
    log: { level: 'error' },
    compliance: RULES_OFF,
  });

  it('Daemon.start refuses it, and closes its connection', async () => {
    const keys = fresh();
    await redis.hset(keys.stateVersion, 'version', STATE_VERSION + 1, 'writtenBy', '7.0.0');
    const err = await Daemon.start(parseConfig(raw(keys.prefix), 'test', {}), { log: quietLog, http: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NewerStateError);
    expect(await redis.hget(keys.stateVersion, 'writtenBy')).toBe('7.0.0');
  });

  it('`start` exits 1 with a sentence naming both versions, and writes no state', async () => {
    const keys = fresh();
    await redis.hset(keys.stateVersion, 'version', STATE_VERSION + 1, 'writtenBy', '7.0.0');
    const p = await spawnDaemon(raw(keys.prefix), dir);
    await waitFor(() => p.child.exitCode !== null, 'the process to exit', 30_000);
    expect(p.child.exitCode).toBe(1);
    const out = p.output();
    expect(out).toContain(`is state version ${STATE_VERSION + 1}, written by campaign-sync 7.0.0; this is campaign-sync ${VERSION}, which reads state version ${STATE_VERSION}`);
    expect(out).not.toMatch(/^\s+at /m); // a sentence, not a stack
    // The record as it found it, and no state of its own (BullMQ's queue object may have written its meta).
    expect(await redis.hgetall(keys.stateVersion)).toEqual({ version: String(STATE_VERSION + 1), writtenBy: '7.0.0' });
    expect((await redis.keys(`${keys.prefix}:*`)).filter((k) => k !== keys.stateVersion && !k.endsWith(':{syncs}:meta'))).toEqual([]);
  });

  it('the one-shot commands (status, sync) exit 1 with the same sentence, not a stack', async () => {
    const keys = fresh();
    await redis.hset(keys.stateVersion, 'version', STATE_VERSION + 1, 'writtenBy', '7.0.0');
    const file = join(dir, `one-shot-${keys.prefix}.json`);
    writeFileSync(file, JSON.stringify(raw(keys.prefix)));
    const cli = join(import.meta.dirname, '../../daemon/cli.ts');
    for (const args of [['status'], ['sync', 'csv']]) {
      const done = await promisify(execFile)(process.execPath, [cli, ...args, '--config', file], { encoding: 'utf8', timeout: 60_000 }).then(() => null, (e: unknown) => e as { code: number; stderr: string });
      expect(done?.code, args.join(' ')).toBe(1);
      expect(done!.stderr).toContain(`is state version ${STATE_VERSION + 1}, written by campaign-sync 7.0.0`);
      expect(done!.stderr).not.toMatch(/^\s+at /m);
    }
  });
});

describe('on a Redis Cluster', () => {
  let cluster: RedisClusterUnderTest;
  const clients: Cluster[] = [];
  const connect = (): Cluster => {
    const c = new Cluster(cluster.urls.map((u) => ({ host: '127.0.0.1', port: Number(new URL(u).port) })), { redisOptions: { maxRetriesPerRequest: 20 } });
    clients.push(c);
    return c;
  };
  beforeAll(async () => { cluster = await startRedisCluster(); }, 120_000);
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await cluster?.stop();
  });

  it('the record is in the slot of the daemon\'s own keys, which every process reads; a newer one is refused', async () => {
    const keys = new DaemonKeys(testPrefix().prefix);
    const processes = [connect(), connect(), connect()];
    await Promise.all(processes.map((c) => openState(c, keys, [], quietLog)));
    const slot = (key: string) => processes[0]!.cluster('KEYSLOT', key);
    expect(await slot(keys.stateVersion)).toBe(await slot(keys.layout));
    expect(await slot(keys.stateLock)).toBe(await slot(keys.layout));
    for (const c of processes) expect(await readStateVersion(c, keys)).toEqual({ version: STATE_VERSION, writtenBy: VERSION });
    await processes[1]!.hset(keys.stateVersion, 'version', STATE_VERSION + 1, 'writtenBy', '7.0.0');
    for (const c of [processes[0]!, processes[2]!]) await expect(openState(c, keys, [], quietLog)).rejects.toBeInstanceOf(NewerStateError);
  }, 60_000);
});
