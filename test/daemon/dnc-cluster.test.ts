// Do Not Call list copies on a real Redis Cluster of the test's own (three masters): the area codes' bitmaps spread
// over the masters by their hash tags, a full load and a change list switch the record there as on one server, and a
// lookup of a batch across area codes answers from every master.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListCopies } from '../../daemon/dnc/copies.ts';
import { OwnList } from '../../daemon/dnc/own-list.ts';
import { connectRedis, type RedisClient } from '../../daemon/state/connection.ts';
import { DncKeys } from '../../daemon/state/keys.ts';
import { testPrefix } from '../support/daemon.ts';
import { startRedisCluster, type RedisClusterUnderTest } from '../support/redis-cluster.ts';

describe('Do Not Call lists on a Redis Cluster', () => {
  let cluster: RedisClusterUnderTest;
  let redis: RedisClient;
  const dir = mkdtempSync(join(tmpdir(), 'dnc-cluster-'));
  const { prefix } = testPrefix();

  beforeAll(async () => {
    cluster = await startRedisCluster();
    redis = connectRedis({ cluster: cluster.urls });
  }, 60_000);
  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('spreads the area codes over the masters, loads, changes and answers as on one server', async () => {
    const keys = new DncKeys(prefix);
    const copies = new ListCopies(redis, keys, 'national');
    const own = new OwnList(redis, keys);
    const areaCodes = ['201', '212', '303', '415', '512', '617', '646', '702', '818', '917'];
    const full = join(dir, 'full.txt');
    writeFileSync(full, areaCodes.map((a) => `${a}5550100\n${a}5550101\n`).join(''));
    const today = new Date().toISOString().slice(0, 10);
    const record = await copies.loadFull([full], today);
    expect(record.numbers).toBe(20);
    const masters = new Set(await Promise.all(areaCodes.map((a) => cluster.masterOf(keys.bitmap('national', a, record.generation)))));
    expect(masters.size).toBe(3);

    const changes = join(dir, 'changes.txt');
    writeFileSync(changes, areaCodes.map((a) => `${a}5550100,D\n${a}5550102,A\n`).join(''));
    const changed = await copies.applyChanges(changes, today);
    expect(changed.changes[0]).toMatchObject({ added: 10, deleted: 10, unchanged: 0 });
    await own.add(['+12015550103'], { by: 'test' });

    const phones = areaCodes.flatMap((a) => [`+1${a}5550100`, `+1${a}5550101`, `+1${a}5550102`, `+1${a}5550103`]);
    const answers = await copies.lookup(phones);
    expect(answers.map((x) => x.status)).toEqual(areaCodes.flatMap(() => ['not-listed', 'listed', 'listed', 'not-listed']));
    expect((await own.lookup(['+12015550103', '+12015550104'])).map((x) => x.status)).toEqual(['listed', 'not-listed']);
  });
});
