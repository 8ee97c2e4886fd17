// Two processes and a Redis Cluster agree on the Do Not Call lists: on a cluster of the test's own (three masters) the
// registry's area codes spread over the masters, a daemon sends the dialer no listed number and every unlisted one,
// and the evidence of each number added names the copy that vouched for it (its date and its area code's file); two
// daemons sharing one sync (two Daemon.start instances, each with its own connections, queues and workers, on one
// Redis server and on the cluster) end with exactly the unlisted numbers, each once, and after a change list adds
// numbers the campaign holds, the next run, whichever process runs it, takes exactly those out.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { areaCodePhone } from '../../crm-stand-ins/contacts.ts';
import { Daemon } from '../../daemon/app.ts';
import { ListCopies } from '../../daemon/dnc/copies.ts';
import { lastEvidence } from '../../daemon/dnc/evidence.ts';
import { connectRedis } from '../../daemon/state/connection.ts';
import { DncKeys } from '../../daemon/state/keys.ts';
import { campaignNumbers, daemonConfig, dialerFixture, quietLog, REDIS_URL, testPrefix, type DialerFixture } from '../support/daemon.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { startRedisCluster, type RedisClusterUnderTest } from '../support/redis-cluster.ts';
import { counter, pullAndSettle, settle } from '../support/sync-checks.ts';

const AREA_CODES = [201, 206, 212, 214, 303, 305, 312, 404, 415, 480];
const phone = (i: number) => areaCodePhone(i, AREA_CODES);
const digits = (e164: string) => e164.slice(2);
const areaOf = (e164: string) => e164.slice(2, 5);
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** Contacts the registry holds: every 9th (9 and the 10 area codes are coprime, so they spread over every area code). */
const listed = (i: number) => i % 9 === 4;

const dir = mkdtempSync(join(tmpdir(), 'cds-dnc-agree-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => { for (const c of cleanups.splice(0).reverse()) await c(); });

/** A CSV file of contacts 0..n-1, one number each. */
function contactsFile(name: string, n: number): string {
  const file = join(dir, `${name}.csv`);
  writeFileSync(file, `id,phone\n${Array.from({ length: n }, (_, i) => `c${i},${phone(i)}`).join('\n')}\n`);
  return file;
}

/** The registry's full lists, one file per area code (AAA.txt in its own folder), holding the listed contacts' numbers of the first `n`. */
function registryFiles(name: string, n: number): string[] {
  const folder = mkdtempSync(join(dir, `${name}-registry-`));
  return AREA_CODES.map((a) => {
    const file = join(folder, `${a}.txt`);
    // Exchange 200's first number (no contact's) too: a full list of an area code holds numbers whatever the contacts.
    const numbers = [`${a}2000000`];
    for (let i = 0; i < n; i++) if (listed(i) && areaOf(phone(i)) === String(a)) numbers.push(digits(phone(i)));
    writeFileSync(file, `${numbers.join('\n')}\n`);
    return file;
  });
}

/** The dialer behind a proxy that keeps every phone number the daemons ask it to add. */
async function watchedDialer(f: DialerFixture): Promise<{ proxy: Proxy; sent: string[] }> {
  const proxy = await startProxy(f.server.url);
  const sent: string[] = [];
  proxy.interceptWithBody = (req: IncomingMessage, body: Buffer) => {
    if (req.method === 'POST' && /\/numbers(\?|$)/.test(req.url!)) sent.push(...(JSON.parse(body.toString()) as { number: string }[]).map((n) => n.number));
    return undefined;
  };
  return { proxy, sent };
}

async function rig(name: string, n: number, redis: { url: string } | { cluster: string[] }) {
  const f = await dialerFixture();
  cleanups.push(() => f.server.close());
  const dialer = await watchedDialer(f);
  cleanups.push(() => dialer.proxy.close());
  const { prefix, cleanup } = testPrefix();
  // A cluster of the test's own goes with it; keys on the shared server are the test's to remove.
  if ('url' in redis) cleanups.push(cleanup);
  const client = connectRedis(redis);
  cleanups.push(async () => { client.disconnect(); });
  const copyDate = isoDay(Date.now() - 86_400_000);
  const registry = new ListCopies(client, new DncKeys(prefix), 'national');
  const record = await registry.loadFull(registryFiles(name, n), copyDate);
  const config = daemonConfig(f, prefix, [{
    id: name, campaignId: f.campaignId, source: { type: 'csv', path: contactsFile(name, n) }, schedule: { every: '1d' }, mapping: { phone: 'phone' },
  }], {
    redis: { ...redis, prefix },
    // Small add requests: one sync's import is many push jobs, for both processes' workers to take.
    dialer: { baseUrl: dialer.proxy.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 100, burst: 200 }, maxNumbersPerRequest: 40 },
    doNotCallLists: [{ name: 'national', type: 'registry', folder: dir }],
  });
  const daemons: Daemon[] = [];
  cleanups.push(async () => { for (const d of daemons) await d.close(); });
  const start = async () => {
    const d = await Daemon.start(config, { log: quietLog, http: false });
    daemons.push(d);
    return d;
  };
  const all = Array.from({ length: n }, (_, i) => phone(i));
  return {
    f, prefix, client, registry, record, copyDate, start, sent: dialer.sent,
    unlisted: all.filter((_, i) => !listed(i)), listed: all.filter((_, i) => listed(i)),
  };
}

const held = async (f: DialerFixture) => {
  const numbers = (await campaignNumbers(f)).map((x) => x.number);
  // Each number once.
  expect(new Set(numbers).size).toBe(numbers.length);
  return numbers.sort();
};
const sorted = (xs: Iterable<string>) => [...xs].sort();

describe('Do Not Call lists: two processes and a Redis Cluster agree', () => {
  let cluster: RedisClusterUnderTest;
  beforeAll(async () => { cluster = await startRedisCluster(); }, 60_000);
  afterAll(async () => { await cluster?.stop(); });

  it('on a Redis Cluster: the area codes spread over the masters, no listed number reaches the dialer, every unlisted one does, and each one added names the copy', { timeout: 90_000 }, async () => {
    const r = await rig('on-cluster', 300, { cluster: cluster.urls });
    const keys = new DncKeys(r.prefix);
    const masters = new Set(await Promise.all(AREA_CODES.map((a) => cluster.masterOf(keys.bitmap('national', String(a), r.record.areaCodes[String(a)]!.generation)))));
    expect(masters.size).toBeGreaterThanOrEqual(2);
    expect(r.record.numbers).toBe(r.listed.length + AREA_CODES.length);

    const d = await r.start();
    await pullAndSettle(d, 'on-cluster', true);
    expect(await held(r.f)).toEqual(sorted(r.unlisted));
    const listedSet = new Set(r.listed);
    expect(r.sent.filter((p) => listedSet.has(p))).toEqual([]);
    expect(sorted(r.sent)).toEqual(sorted(r.unlisted));

    const k = d.runtimes.get('on-cluster')!.state.keys;
    for (const p of r.unlisted) {
      expect(await lastEvidence(d.redis, k, p)).toMatchObject({
        phone: p, sync: 'on-cluster', campaign: r.f.campaignId,
        lists: [{ list: 'company', status: 'not-listed' }, { list: 'national', status: 'not-listed', date: r.copyDate, file: `${areaOf(p)}.txt` }],
      });
    }
    for (const p of r.listed) expect(await lastEvidence(d.redis, k, p)).toBeNull();
    // What the registry keeps out is counted under it, for status and /ops.
    expect(await d.redis.hgetall(k.dncKeptOut)).toEqual(Object.fromEntries(r.listed.map((p) => [p, 'national'])));
  });

  for (const where of ['one Redis server', 'the Redis Cluster'] as const) {
    it(`two daemons sharing a sync on ${where}: exactly the unlisted numbers, each once; a change list takes exactly the numbers it adds out at the next run, whichever process runs it`, { timeout: 120_000 }, async () => {
      const r = await rig(where === 'one Redis server' ? 'two-server' : 'two-cluster', 900, where === 'one Redis server' ? { url: REDIS_URL } : { cluster: cluster.urls });
      const sync = where === 'one Redis server' ? 'two-server' : 'two-cluster';
      const [one, two] = [await r.start(), await r.start()];
      await pullAndSettle(one, sync, true);
      await settle(two);
      expect(await held(r.f)).toEqual(sorted(r.unlisted));
      const listedSet = new Set(r.listed);
      expect(r.sent.filter((p) => listedSet.has(p))).toEqual([]);
      // Each number pushed once, by one process or the other, and both took some of the import's 20 add requests of 40 numbers.
      const pushed = await Promise.all([one, two].map((d) => counter(d, 'records', { sync, outcome: 'pushed' })));
      expect(pushed[0]! + pushed[1]!).toBe(r.unlisted.length);
      expect(Math.min(...pushed)).toBeGreaterThan(0);
      expect(r.sent).toHaveLength(r.unlisted.length);

      // The change list adds 25 numbers the campaign holds (over every area code), and deletes a listed one.
      // (Contacts next to each other: their area codes go round all ten.)
      const added = r.unlisted.slice(100, 125);
      expect(added).toHaveLength(25);
      expect(new Set(added.map(areaOf)).size).toBe(AREA_CODES.length);
      const freed = r.listed[0]!;
      const changes = join(dir, `${sync}-changes.txt`);
      writeFileSync(changes, `${added.map((p) => `${digits(p)},A`).join('\n')}\n${digits(freed)},D\n`);
      const changed = await r.registry.applyChanges(changes, isoDay(Date.now()));
      expect(changed.changes[0]).toMatchObject({ added: 25, deleted: 1, unchanged: 0 });
      // The next run is asked of the other process: whichever process's worker takes it.
      await pullAndSettle(two, sync);
      await settle(one);
      const addedSet = new Set(added);
      expect(await held(r.f)).toEqual(sorted([...r.unlisted.filter((p) => !addedSet.has(p)), freed]));
      const k = one.runtimes.get(sync)!.state.keys;
      const keptOut = await one.redis.hgetall(k.dncKeptOut);
      expect(keptOut).toEqual(Object.fromEntries([...r.listed.filter((p) => p !== freed), ...added].map((p) => [p, 'national'])));
      // The freed number's evidence names the change list it was vouched by.
      expect(await lastEvidence(one.redis, k, freed)).toMatchObject({ lists: [{ status: 'not-listed' }, { list: 'national', status: 'not-listed', changes: [`${sync}-changes.txt`] }] });
    });
  }
});
