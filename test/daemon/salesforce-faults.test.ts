// The Salesforce mirror through a Redis loss: the test's own redis-server is SIGKILLed while the mirror writes Tasks
// and restarted, with its AOF (fsync always) or with no persistence at all (every mark, the watermark and the
// contact sync's state gone). Afterwards every call attempt must be exactly one Task, found by its key, and the Tasks
// written before the kill must not have been sent again one request per record.
import { mkdtempSync, rmSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSalesforceStandIn } from '../../crm-stand-ins/salesforce.ts';
import { Daemon } from '../../daemon/app.ts';
import { callKey } from '../../daemon/mirror/mirror.ts';
import { callDetailRecords, daemonConfig, numberCount, quietLog, startRedisServer, waitFor } from '../support/daemon.ts';
import { dialingFixture, members, numbersOf, proxied, salesforceSync, TZ } from '../support/salesforce.ts';
import { freePort } from '../support/sync-checks.ts';

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

/** sObject Collections writes (insert: POST /composite/sobjects; upsert: PATCH /composite/sobjects/Task/<field>). */
const COLLECTIONS = /^\/services\/data\/v[\d.]+\/composite\/sobjects(\/|$|\?)/;

type Persistence = 'aof' | 'none';
type Mode = 'upsert' | 'insert';

async function throughRedisLoss(persistence: Persistence, mode: Mode, seed: number, restartDaemon = false): Promise<void> {
  const port = await freePort();
  const redisDir = mkdtempSync(join(tmpdir(), 'cds-sffault-redis-'));
  dirs.push(redisDir);
  let redisServer: ChildProcess = await startRedisServer(port, redisDir, persistence);
  // 24 agents for three hours: well over a thousand attempts, several collections writes of 200.
  const f = await dialingFixture(seed, 24);
  const sf = await startSalesforceStandIn({ contacts: 600, leads: 400, seed });
  const proxy = await proxied(sf);
  const tokenRewrite = proxy.onAnswer!;
  const sfCampaign = sf.records('Campaign')[0]!.values.Id as string;
  const field = mode === 'upsert' ? sf.taskExternalIdField : 'CallObject';
  let d: Daemon | null = null;
  try {
    const config = daemonConfig(f, 'sff', [salesforceSync(sf, f.campaignId, { campaignId: sfCampaign },
      { loginUrl: proxy.url, ...(mode === 'upsert' ? { taskExternalIdField: sf.taskExternalIdField } : {}) }, { mirror: { every: '1h' } })], {
      redis: { url: `redis://127.0.0.1:${port}`, prefix: 'sff' },
      dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
    });
    d = await Daemon.start(config, { log: quietLog, http: false });
    const want = numbersOf(members(sf, sfCampaign));
    await waitFor(async () => (await numberCount(f)) === want.length, 'the members in the campaign');
    await f.server.advance(3 * 3600);
    const all = await callDetailRecords<{ number: string; attempt: number; startedAtLocal: string }>(f);
    const keys = new Set(all.map((r) => callKey(f.campaignId, r)));
    const batches = Math.ceil(all.length / 200);
    expect(batches).toBeGreaterThanOrEqual(6);

    // The third collections write reaches Salesforce (its Tasks are stored) and Redis dies before the daemon hears
    // the answer, so the marks of that write, and with no persistence every mark, are lost.
    let writes = 0;
    let killed: Promise<unknown> | null = null;
    proxy.onAnswer = (ex, body) => {
      if (COLLECTIONS.test(ex.path) && ++writes === 3 && !killed) {
        killed = new Promise((r) => redisServer.once('exit', r));
        redisServer.kill('SIGKILL');
      }
      return tokenRewrite(ex, body);
    };
    await d.triggerMirror('sf', 'test');
    await waitFor(() => killed !== null, 'Redis killed in the middle of a mirror run');
    await killed;
    const before = new Set(sf.records('Task').map((t) => t.values[field]));
    expect(before.size).toBe(3 * 200);
    // Counted from the kill: the daemon writes nothing to Salesforce while Redis is down (each write renews its lease
    // first), and it may reconnect and write before startRedisServer has returned.
    const fromRestart = proxy.exchanges.length;
    redisServer = await startRedisServer(port, redisDir, persistence);
    if (restartDaemon) {
      // The operator restarts the daemon too: it starts on an empty Redis, as on its first day.
      await d.close(2000);
      d = await Daemon.start(config, { log: quietLog, http: false });
    }

    // Mirror runs until every attempt is a Task and nothing is pending or parked.
    const daemon = d;
    const mk = daemon.runtimes.get('sf')!.state.keys.mirror;
    await waitFor(async () => {
      const held = new Set(sf.records('Task').map((t) => t.values[field]));
      if ([...keys].every((k) => held.has(k)) && (await daemon.redis.hlen(mk.pending)) === 0 && (await daemon.redis.hlen(mk.parked)) === 0) return true;
      await daemon.triggerMirror('sf', 'test');
      return false;
    }, `${all.length} Tasks after the restart`, 120_000);
    // Runs of a sync never overlap: once a run that started after this point wrote nothing, none is left writing.
    const from = Date.now();
    await waitFor(async () => {
      const last = JSON.parse(await daemon.redis.hget(mk.meta, 'lastRun') ?? 'null') as { at: string; written: number; resolved: number } | null;
      if (last && Date.parse(last.at) >= from && last.written === 0 && last.resolved === 0) return true;
      await daemon.triggerMirror('sf', 'test');
      return false;
    }, 'a mirror run with nothing left to write', 60_000);

    // Every attempt exactly one Task, found by its key; none of no attempt.
    const tasks = sf.records('Task').map((t) => t.values[field]);
    expect(tasks.length).toBe(all.length);
    expect(new Set(tasks)).toEqual(keys);
    // What was written before the kill was not sent again one request per record: the collections writes after the
    // restart are about one per 200 records (the rest of the records, and at most a re-send of the lost pages).
    const after = proxy.exchanges.slice(fromRestart).filter((e) => COLLECTIONS.test(e.path));
    expect(after.length).toBeGreaterThan(0);
    expect(after.length).toBeLessThanOrEqual(batches + 2);
  } finally {
    await d?.close(2000);
    redisServer.kill('SIGKILL');
    await proxy.close();
    await sf.close();
    await f.server.close();
  }
}

describe('Salesforce: Redis SIGKILLed in the middle of mirroring, and restarted', () => {
  it('upsert on the external-ID field, Redis with its AOF: every attempt one Task by its key, nothing re-sent record by record', async () => {
    await throughRedisLoss('aof', 'upsert', 61);
  }, 180_000);

  it('insert, found again by CallObject, Redis with its AOF: every attempt one Task', async () => {
    await throughRedisLoss('aof', 'insert', 63);
  }, 180_000);

  it('upsert, Redis with no persistence (every mark lost) and the daemon restarted: every attempt one Task by its key', async () => {
    await throughRedisLoss('none', 'upsert', 62, true);
  }, 180_000);

  it('insert, Redis with no persistence (every mark lost) and the daemon restarted: every attempt one Task', async () => {
    await throughRedisLoss('none', 'insert', 64, true);
  }, 180_000);

  it('upsert, Redis with no persistence (every mark lost), the same daemon going on: every attempt one Task by its key', async () => {
    await throughRedisLoss('none', 'upsert', 65);
  }, 180_000);
});
