// Reading a running daemon in tests: waiting until its syncs are idle, its runs and record errors, what it holds
// per phone number, its counters, snapshots that show whether a request queued anything, and a dialer behind a proxy
// that counts the add requests.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { Daemon } from '../../daemon/app.ts';
import type { RecordError } from '../../daemon/sync/contacts.ts';
import { campaignsOf, readRun } from '../../daemon/sync/run.ts';
import { decodeHeld, type HeldNumber, type RunRecord } from '../../daemon/state/sync-state.ts';
import { campaignNumbers, daemonConfig, dialerFixture, quietLog, waitFor, type DialerFixture } from './daemon.ts';
import { startProxy, type Proxy } from './proxy.ts';

/** A free loopback port, so that a daemon's `http.publicUrl` can be known before it starts. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

function keysOf(d: Daemon, syncId: string) {
  const rt = d.runtimes.get(syncId);
  if (!rt) throw new Error(`no sync ${syncId} in this daemon`);
  return rt.state.keys;
}

/** No sync or push job waiting or running (the scheduler's next tick aside), nothing dirty, open or in the inbox. */
export async function idle(d: Daemon): Promise<boolean> {
  const s = await d.syncQueue.getJobCounts('active', 'wait', 'prioritized', 'waiting-children');
  if (Object.values(s).some((n) => n > 0)) return false;
  if ((await d.syncQueue.getDelayed()).some((j) => j.name !== 'tick')) return false;
  for (const q of d.pushQueues.values()) {
    const c = await q.queue.getJobCounts('active', 'wait', 'delayed', 'prioritized');
    if (Object.values(c).some((n) => n > 0)) return false;
  }
  for (const rt of d.runtimes.values()) {
    if (await d.redis.llen(rt.state.keys.inbox)) return false;
    // A routed sync's batches and dirty numbers are its routes'.
    for (const { state: { keys: k } } of campaignsOf(rt)) {
      const [batches, dirty] = await Promise.all([d.redis.hlen(k.batches), d.redis.scard(k.dirty)]);
      if (batches || dirty) return false;
    }
  }
  return true;
}

/** Waits until every sync of the daemon is idle. */
export function settle(d: Daemon, timeoutMs = 30_000): Promise<boolean> {
  return waitFor(() => idle(d), 'the daemon to settle', timeoutMs);
}

/** Triggers a pull (or a comparison) and waits until it ran and everything it planned was pushed. */
export async function pullAndSettle(d: Daemon, syncId: string, full = false, read: 'pull' | 'compare' = 'pull'): Promise<RunRecord> {
  const before = await d.redis.llen(keysOf(d, syncId).runs);
  await d.triggerPull(syncId, 'test', full, read);
  await waitFor(async () => (await d.redis.llen(keysOf(d, syncId).runs)) > before, `a new run of ${syncId}`);
  await settle(d);
  return (await runs(d, syncId))[0]!;
}

/** The sync's runs, newest first. */
export async function runs(d: Daemon, syncId: string): Promise<RunRecord[]> {
  const k = keysOf(d, syncId);
  const ids = await d.redis.lrange(k.runs, 0, -1);
  const all = await Promise.all(ids.map((id) => readRun(d.redis, k.run(id))));
  return all.filter((r): r is RunRecord => r !== null);
}

export async function runErrors(d: Daemon, syncId: string, runId: string): Promise<RecordError[]> {
  const raw = await d.redis.lrange(keysOf(d, syncId).runErrors(runId), 0, -1);
  return raw.map((r) => JSON.parse(r) as RecordError);
}

/** Every run's record errors, oldest run first. */
export async function allRunErrors(d: Daemon, syncId: string): Promise<RecordError[]> {
  const all: RecordError[] = [];
  for (const r of (await runs(d, syncId)).reverse()) all.push(...await runErrors(d, syncId, r.id));
  return all;
}

export async function held(d: Daemon, syncId: string, e164: string): Promise<HeldNumber | null> {
  const raw = await d.redis.hget(keysOf(d, syncId).have, e164);
  return raw ? decodeHeld(raw) : null;
}

/** A counter's value for the given labels (0 when never incremented). */
export async function counter(d: Daemon, name: 'rateLimited' | 'webhooks' | 'records' | 'invalid', labels: Record<string, string>): Promise<number> {
  const metric = await d.metrics[name].get();
  const match = metric.values.filter((v) => Object.entries(labels).every(([k, val]) => (v.labels as Record<string, unknown>)[k] === val));
  return match.reduce((sum, v) => sum + v.value, 0);
}

/**
 * What a webhook could have queued: sync jobs ever added (completed ones are kept), the inbox's length and the
 * number of runs. Equal before and after a request means it queued nothing.
 */
export async function queued(d: Daemon, syncId: string): Promise<{ jobs: number; inbox: number; runs: number }> {
  const c = await d.syncQueue.getJobCounts('completed', 'failed', 'active', 'wait', 'delayed', 'prioritized');
  const k = keysOf(d, syncId);
  return {
    jobs: Object.values(c).reduce((a, b) => a + b, 0),
    inbox: await d.redis.llen(k.inbox),
    runs: await d.redis.llen(k.runs),
  };
}

/** The sync's own state in Redis, read whole: equal snapshots mean nothing was written. */
export async function stateSnapshot(d: Daemon, syncId: string): Promise<Record<string, unknown>> {
  const k = keysOf(d, syncId);
  const out: Record<string, unknown> = {};
  for (const key of [k.contacts, k.phones, k.parked, k.meta, k.have, k.claims, k.batches, k.inflight]) out[key] = await d.redis.hgetall(key);
  for (const key of [k.dirty]) out[key] = (await d.redis.smembers(key)).sort();
  for (const key of [k.runs, k.inbox]) out[key] = await d.redis.lrange(key, 0, -1);
  return out;
}

/** Phone number → variable values of the campaign's numbers, read through the API: each number once, each with these varNames. */
export async function campaignValues(f: DialerFixture, varNames: string[]): Promise<Record<string, string[]>> {
  const list = await campaignNumbers(f);
  const out = Object.fromEntries(list.map((n) => [n.number, n.varValues]));
  expect(Object.keys(out)).toHaveLength(list.length);
  for (const n of list) expect(n.varNames).toEqual(varNames);
  return out;
}

/** A dialer behind a proxy that counts the daemon's add requests: the `dialer` block of a daemon configuration points at it. */
export interface CountedDialer {
  proxy: Proxy;
  /** The configuration's `dialer` block: the proxy, the fixture's account and key, whole batches of 1,000. */
  dialer: Record<string, unknown>;
  /** Add requests (`POST …/numbers`) the dialer answered so far. */
  adds(): number;
}

export async function countedDialer(f: DialerFixture): Promise<CountedDialer> {
  const proxy = await startProxy(f.server.url);
  return {
    proxy,
    dialer: { baseUrl: proxy.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, maxNumbersPerRequest: 1000 },
    adds: () => proxy.exchanges.filter((e) => e.method === 'POST' && /\/numbers(\?|$)/.test(e.path)).length,
  };
}

/** A reference server with a campaign, a counting dialer proxy before it and a settled daemon on both; `close` stops all three. */
export async function countedDaemon(prefix: string, syncs: (f: DialerFixture) => unknown[], extra: (dialer: CountedDialer) => Record<string, unknown>):
  Promise<{ f: DialerFixture; dialer: CountedDialer; d: Daemon; close(): Promise<void> }> {
  const f = await dialerFixture();
  const dialer = await countedDialer(f);
  const d = await Daemon.start(daemonConfig(f, prefix, syncs(f), extra(dialer)), { log: quietLog });
  await settle(d);
  return { f, dialer, d, async close() { await d.close(); await dialer.proxy.close(); await f.server.close(); } };
}

/**
 * The run refused one contact alone for a variable over the API's limit of 1,000 characters: its only record error,
 * the reason naming the variable, the field and the length, and nothing parked (nothing of it reached the dialer).
 */
export async function expectRefusedForLength(d: Daemon, syncId: string, run: RunRecord, who: { contactId: string; line?: number; variable: string; field: string; length: number }): Promise<void> {
  expect(await runErrors(d, syncId, run.id)).toEqual([{
    contactId: who.contactId, ...(who.line ? { line: who.line } : {}), field: who.field, value: '', code: 'bad_record',
    reason: `variable ${who.variable} (field ${who.field}) is ${who.length.toLocaleString('en')} characters long; the dialer takes at most 1,000, so the contact is not sent until the field is shortened`,
  }]);
  expect(await d.redis.hlen(keysOf(d, syncId).parked)).toBe(0);
}
