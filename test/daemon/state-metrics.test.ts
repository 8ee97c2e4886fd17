// The state gauges of /metrics (daemon/http/state-metrics.ts): each series appears with its labels and value in the
// state that makes it and is gone when that state ends, read over HTTP from a real daemon on real Redis and the
// reference server: a refused sync and its fix, a campaign held by its closed window, a number with no zone, a read
// that failed and its refusal, numbers held by each rule, parked records, failed runs in a row, the mirror's lag, Do
// Not Call lists' copies, and Redis going away (cds_redis_up 0 at once, no other state series, never a hang).
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Daemon } from '../../daemon/app.ts';
import { parseConfig } from '../../daemon/config.ts';
import { ListCopies } from '../../daemon/dnc/copies.ts';
import { OwnList } from '../../daemon/dnc/own-list.ts';
import { connectRedis } from '../../daemon/state/connection.ts';
import { DncKeys } from '../../daemon/state/keys.ts';
import { campaignNumbers, dialerFixture, freePort, quietLog, REDIS_URL, RULES_OFF, startRedisServer, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { startProxy, type Proxy } from '../support/proxy.ts';
import { createCampaign, createKey } from '../support/server.ts';
import { runs } from '../support/sync-checks.ts';

interface Sample { name: string; labels: Record<string, string>; value: number }

/** One scrape of /metrics: its samples, parsed from the text format, and how long it took. */
async function scrape(address: string | null): Promise<{ status: number; ms: number; samples: Sample[] }> {
  const started = performance.now();
  const res = await fetch(`${address}/metrics`);
  const text = await res.text();
  const ms = performance.now() - started;
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { status: res.status, ms, samples };
}

/** The samples of a metric whose labels include these. */
function series(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

const STATE = /^cds_(sync_|campaign_|numbers_|records_parked|mirror_lag_seconds_last|runs_failed|dnc_list|redis_up)/;

/** Scrapes until `check` holds (it returns a value to keep, or a falsy one to scrape again); else says what it saw last. */
async function scrapeUntil<T>(d: Daemon, what: string, check: (samples: Sample[]) => T | null | undefined | false, timeoutMs = 30_000): Promise<T> {
  let last: Sample[] = [];
  try {
    return await waitFor(async () => {
      const r = await scrape(d.address);
      expect(r.status).toBe(200);
      last = r.samples;
      return check(r.samples);
    }, what, timeoutMs);
  } catch (err) {
    const seen = last.filter((x) => STATE.test(x.name)).map((x) => `${x.name}${JSON.stringify(x.labels)} ${x.value}`);
    throw new Error(`${(err as Error).message}; the last scrape's state series:\n${seen.join('\n')}`);
  }
}

const TZ = 'America/New_York';
const DAY_S = 86_400;
const ALL_DAY = { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] };
// Wednesday 11 March 2026 (EDT), 12:00 in New York and 06:00 in Honolulu, whose window opens at 08:00 (18:00Z).
const OPEN = Date.parse('2026-03-11T16:00:00Z');
// 23:00 in New York: closed until 08:00 (12:00Z).
const NIGHT = Date.parse('2026-03-12T03:00:00Z');
const NEXT_OPEN = Date.parse('2026-03-12T12:00:00Z');
// Thursday, 10:00 in New York.
const MORNING = Date.parse('2026-03-12T14:00:00Z');

describe('a windowed sync and a routed one', () => {
  const redis = testPrefix();
  const dir = mkdtempSync(join(tmpdir(), 'cds-state-metrics-'));
  const csvPath = join(dir, 'calls.csv');
  let f: DialerFixture;
  let proxy: Proxy;
  let d: Daemon;
  let now = OPEN;
  let east: string, pacific: string;
  const rows = ['1,+12122345601,', '2,+12122345602,true'];
  const writeCsv = (header = 'id,phone,dnc') => writeFileSync(csvPath, [header, ...rows.map((r) => (header.includes('dnc') ? r : r.split(',').slice(0, 2).join(',')))].join('\n'));
  const rt = () => d.runtimes.get('calls')!;
  const labels = () => ({ sync: 'calls', campaign: f.campaignId });

  beforeAll(async () => {
    f = await dialerFixture({ clockStart: new Date(OPEN).toISOString(), clockMode: 'manual' });
    // Pauses campaigns (the window), adds numbers and reads reports (the mirror).
    f.token = await createKey(f.server, f.accountId, ['CampaignAdmin', 'CampaignNumberAdmin', 'CampaignReader']);
    east = (await createCampaign(f.server, f.accountId, { name: 'East', type: 'Dynamic', state: 'Active', dialer: { callingHours: ALL_DAY } })).id;
    pacific = (await createCampaign(f.server, f.accountId, { name: 'Pacific', type: 'Dynamic', state: 'Active', dialer: { callingHours: ALL_DAY } })).id;
    proxy = await startProxy(f.server.url);
    writeCsv();
    const routedCsv = join(dir, 'routed.csv');
    writeFileSync(routedCsv, 'id,phone\n1,+12122345611\n2,+18082345612\n');
    const config = parseConfig({
      redis: { url: REDIS_URL, prefix: redis.prefix }, http: { host: '127.0.0.1', port: 0 },
      dialer: { baseUrl: proxy.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
      syncs: [
        { id: 'calls', campaignId: f.campaignId, source: { type: 'csv', path: csvPath }, mapping: { phone: 'phone', doNotCall: 'dnc' }, schedule: { every: '1h' },
          compliance: {}, mirror: { sink: { type: 'none' } } },
        { id: 'routed', routes: [{ campaignId: east, zones: ['America/New_York'] }, { campaignId: pacific, zones: ['Pacific/Honolulu'] }],
          source: { type: 'csv', path: routedCsv }, mapping: { phone: 'phone' }, schedule: { every: '1h' }, compliance: {} },
      ],
    }, 'test config', {});
    d = await Daemon.start(config, { log: quietLog, check: true, now: () => now });
    await waitFor(async () => (await campaignNumbers(f)).length === 1, 'the sync\'s number (the other is marked Do Not Call)');
    await waitFor(async () => (await campaignNumbers({ ...f, campaignId: east })).length === 1, 'the routed sync\'s New York number');
  }, 60_000);

  afterAll(async () => {
    await d?.close(2000);
    await proxy?.close();
    await f?.server.close();
    await redis.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a sync that stops nothing: Redis up, numbers held by each rule, nothing parked, refused or held', async () => {
    const s = await scrapeUntil(d, 'the first run\'s counts', (s) => (series(s, 'cds_runs_failed_consecutive', { sync: 'calls' }).length ? s : null));
    expect(series(s, 'cds_redis_up')).toEqual([{ name: 'cds_redis_up', labels: {}, value: 1 }]);
    expect(series(s, 'cds_numbers_held', { sync: 'calls' }).map((x) => [x.labels.rule, x.value]).sort()).toEqual([['cap', 0], ['do_not_call', 1], ['window', 0]]);
    expect(series(s, 'cds_records_parked', { sync: 'calls' }).map((x) => [x.labels.kind, x.value]).sort()).toEqual([['mirror', 0], ['push', 0]]);
    expect(series(s, 'cds_runs_failed_consecutive', { sync: 'calls' })[0]!.value).toBe(0);
    expect(series(s, 'cds_numbers_kept_out', { sync: 'calls' }).map((x) => [x.labels.list, x.value])).toEqual([['company', 0], ['(waiting)', 0]]);
    expect(series(s, 'cds_dnc_list_can_vouch')).toEqual([{ name: 'cds_dnc_list_can_vouch', labels: { list: 'company' }, value: 1 }]);
    // The company's list has no copy and no age limit.
    expect(series(s, 'cds_dnc_list_age_seconds')).toEqual([]);
    expect(series(s, 'cds_dnc_list_max_age_seconds')).toEqual([]);
    expect(series(s, 'cds_sync_refused')).toEqual([]);
    expect(series(s, 'cds_sync_refused_since_timestamp_seconds')).toEqual([]);
    expect(series(s, 'cds_campaign_held', { sync: 'calls' })).toEqual([]);
    expect(series(s, 'cds_mirror_lag_seconds_last')).toEqual([]);
    // Each process answers the same: BullMQ's queue gauges are still there.
    expect(series(s, 'bullmq_job_count').length).toBeGreaterThan(0);
  });

  it('a routed sync: one series per route\'s campaign, named by the routed sync', async () => {
    const s = await scrapeUntil(d, 'the Pacific campaign held', (s) => (series(s, 'cds_campaign_held', { sync: 'routed' }).length ? s : null));
    // 06:00 in Honolulu: its window opens at 08:00; New York's is open.
    expect(series(s, 'cds_campaign_held', { sync: 'routed' })).toEqual([{ name: 'cds_campaign_held', labels: { sync: 'routed', campaign: pacific, reason: 'window_closed' }, value: 1 }]);
    expect(series(s, 'cds_campaign_next_open_timestamp_seconds', { sync: 'routed' })).toEqual([
      { name: 'cds_campaign_next_open_timestamp_seconds', labels: { sync: 'routed', campaign: pacific }, value: Date.parse('2026-03-11T18:00:00Z') / 1000 },
    ]);
    expect(series(s, 'cds_campaign_held_since_timestamp_seconds', { sync: 'routed' })).toEqual([
      { name: 'cds_campaign_held_since_timestamp_seconds', labels: { sync: 'routed', campaign: pacific }, value: OPEN / 1000 },
    ]);
    expect(series(s, 'cds_numbers_held', { sync: 'routed', rule: 'do_not_call' })[0]!.value).toBe(0);
  });

  it('the mirror\'s last lag, once a mirror run wrote a call', async () => {
    // The dialer calls the number on its clock; the mirror reads the call.
    await f.server.advance(1800);
    await waitFor(async () => {
      await d.triggerMirror('calls', 'test');
      return series((await scrape(d.address)).samples, 'cds_mirror_lag_seconds_last', { sync: 'calls' }).length > 0;
    }, 'a mirror run that wrote a call');
    const s = (await scrape(d.address)).samples;
    const [lag] = series(s, 'cds_mirror_lag_seconds_last', { sync: 'calls' });
    expect(lag!.value).toBeGreaterThanOrEqual(0);
    expect(lag!.value).toBe(Number(await d.redis.hget(rt().state.keys.mirror.meta, 'lagMs')) / 1000);
    expect(series(s, 'cds_records_parked', { sync: 'calls', kind: 'mirror' })[0]!.value).toBe(0);
  });

  it('a closed window: the campaign held, since when and until when; a contact added meanwhile waits for the window', async () => {
    now = NIGHT;
    expect(await d.enforceWindow(rt(), 'test')).toBe('Paused');
    let s = await scrapeUntil(d, 'the campaign held', (s) => (series(s, 'cds_campaign_held', { sync: 'calls' }).length ? s : null));
    expect(series(s, 'cds_campaign_held', { sync: 'calls' })).toEqual([{ name: 'cds_campaign_held', labels: { ...labels(), reason: 'window_closed' }, value: 1 }]);
    expect(series(s, 'cds_campaign_held_since_timestamp_seconds', { sync: 'calls' })).toEqual([{ name: 'cds_campaign_held_since_timestamp_seconds', labels: labels(), value: NIGHT / 1000 }]);
    expect(series(s, 'cds_campaign_next_open_timestamp_seconds', { sync: 'calls' })).toEqual([{ name: 'cds_campaign_next_open_timestamp_seconds', labels: labels(), value: NEXT_OPEN / 1000 }]);

    rows.push('3,+12122345603,');
    writeCsv();
    await d.triggerPull('calls', 'test');
    s = await scrapeUntil(d, 'the new contact\'s number held by the window', (s) => series(s, 'cds_numbers_held', { sync: 'calls', rule: 'window' })[0]?.value === 1 && s);
    expect(await campaignNumbers(f)).toHaveLength(1);
  });

  it('the window opens: the held series are gone and the number goes in', async () => {
    now = MORNING;
    expect(await d.enforceWindow(rt(), 'test')).toBe('Active');
    const s = await scrapeUntil(d, 'nothing held by the window', (s) => series(s, 'cds_numbers_held', { sync: 'calls', rule: 'window' })[0]?.value === 0 && s);
    expect(series(s, 'cds_campaign_held', { sync: 'calls' })).toEqual([]);
    expect(series(s, 'cds_campaign_held_since_timestamp_seconds', { sync: 'calls' })).toEqual([]);
    expect(series(s, 'cds_campaign_next_open_timestamp_seconds', { sync: 'calls' })).toEqual([]);
    await waitFor(async () => (await campaignNumbers(f)).length === 2, 'the waiting number added');
  });

  it('a refused sync: one series per refusing check and since when; its campaign held for the refusal; gone once fixed', async () => {
    // The Do Not Call column goes from the file: the check refuses the sync.
    writeCsv('id,phone');
    const before = Date.now();
    await d.refusals.check(['calls']);
    let s = await scrapeUntil(d, 'the refusal', (s) => (series(s, 'cds_sync_refused').length ? s : null));
    expect(series(s, 'cds_sync_refused')).toEqual([{ name: 'cds_sync_refused', labels: { sync: 'calls', check: 'crm.doNotCall' }, value: 1 }]);
    const [since] = series(s, 'cds_sync_refused_since_timestamp_seconds');
    expect(since!.labels).toEqual({ sync: 'calls' });
    expect(since!.value * 1000).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(since!.value * 1000).toBeLessThanOrEqual(Date.now());

    // The campaign the daemon had opened is paused while the sync is refused.
    now = MORNING + 60_000;
    expect(await d.enforceWindow(rt(), 'test')).toBe('Paused');
    s = await scrapeUntil(d, 'the campaign held for the refusal', (s) => (series(s, 'cds_campaign_held', { sync: 'calls' }).length ? s : null));
    expect(series(s, 'cds_campaign_held', { sync: 'calls' })).toEqual([{ name: 'cds_campaign_held', labels: { ...labels(), reason: 'refused' }, value: 1 }]);
    expect(series(s, 'cds_campaign_held_since_timestamp_seconds', { sync: 'calls' })[0]!.value).toBe((MORNING + 60_000) / 1000);
    expect(series(s, 'cds_campaign_next_open_timestamp_seconds', { sync: 'calls' })).toEqual([]);

    // The column is back: the refusal is lifted, and the window opens the campaign again.
    writeCsv();
    await d.refusals.check(['calls']);
    s = await scrapeUntil(d, 'the refusal and the hold gone', (s) => !series(s, 'cds_sync_refused').length && !series(s, 'cds_campaign_held', { sync: 'calls' }).length && s);
    expect(series(s, 'cds_sync_refused_since_timestamp_seconds')).toEqual([]);
  });

  it('a number with no zone holds the campaign until it is deleted', async () => {
    const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/numbers`, { method: 'POST', token: f.token, json: [{ number: '+80012345678' }] });
    expect(res.status).toBeLessThan(300);
    await res.arrayBuffer();
    expect(await d.enforceWindow(rt(), 'test')).toBe('Paused');
    await scrapeUntil(d, 'the campaign held for the number with no zone', (s) => series(s, 'cds_campaign_held', { ...labels(), reason: 'no_zone' }).length);
    const noZone = (await campaignNumbers(f)).find((n) => n.number === '+80012345678')!;
    const del = await f.server.request(`/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/numbers`, { method: 'DELETE', token: f.token, json: [noZone.id] });
    expect(del.status).toBeLessThan(300);
    await del.arrayBuffer();
    expect(await d.enforceWindow(rt(), 'test')).toBe('Active');
    await scrapeUntil(d, 'the hold gone', (s) => !series(s, 'cds_campaign_held', { sync: 'calls' }).length);
  });

  it('a read of what the campaign holds that fails: held as not judged until a read succeeds', async () => {
    proxy.intercept = (req) => (req.method === 'GET' && req.url!.includes(`/campaigns/${f.campaignId}/numbers`)
      ? { status: 503, headers: { 'content-type': 'application/problem+json' }, body: JSON.stringify({ title: 'Service Unavailable', status: 503 }) } : undefined);
    try {
      expect(await d.enforceWindow(rt(), 'test')).toBe('Paused');
      await scrapeUntil(d, 'the campaign held as not judged', (s) => series(s, 'cds_campaign_held', { ...labels(), reason: 'not_judged' }).length);
    } finally {
      proxy.intercept = null;
    }
    expect(await d.enforceWindow(rt(), 'test')).toBe('Active');
    await scrapeUntil(d, 'the hold gone', (s) => !series(s, 'cds_campaign_held', { sync: 'calls' }).length);
  });

  it('a number the dialer refuses is parked, and counted until a run sends it', async () => {
    const bad = '+12122345604';
    proxy.interceptWithBody = (req, body) => {
      if (req.method !== 'POST' || !/\/numbers(\?|$)/.test(req.url!)) return undefined;
      const i = (JSON.parse(body.toString()) as { number: string }[]).findIndex((e) => e.number === bad);
      return i < 0 ? undefined : {
        status: 400, headers: { 'content-type': 'application/problem+json' },
        body: JSON.stringify({ type: '/problems/invalid-request', title: 'Invalid request', status: 400, detail: 'The request is invalid', errors: [{ in: 'body', name: `/${i}/number`, detail: `Entry ${i} is a number this dialer will not call` }] }),
      };
    };
    rows.push(`4,${bad},`);
    writeCsv();
    await d.triggerPull('calls', 'test');
    await scrapeUntil(d, 'the parked number', (s) => series(s, 'cds_records_parked', { sync: 'calls', kind: 'push' })[0]?.value === 1);
    proxy.interceptWithBody = null;
    await d.triggerPull('calls', 'test');
    await scrapeUntil(d, 'nothing parked', (s) => series(s, 'cds_records_parked', { sync: 'calls', kind: 'push' })[0]?.value === 0);
    await waitFor(async () => (await campaignNumbers(f)).some((n) => n.number === bad), 'the parked number sent');
  });

  it('failed runs in a row, back to 0 after a run that does not fail', async () => {
    const gone = `${csvPath}.gone`;
    renameSync(csvPath, gone);
    try {
      for (const n of [1, 2]) {
        await d.triggerPull('calls', 'test');
        await scrapeUntil(d, `${n} failed runs in a row`, (s) => series(s, 'cds_runs_failed_consecutive', { sync: 'calls' })[0]?.value === n);
      }
      // (The missing file fails the run, in words; the process goes on.)
      expect((await runs(d, 'calls'))[0]).toMatchObject({ status: 'failed', error: expect.stringContaining(`csv ${csvPath}: ENOENT`) });
    } finally {
      renameSync(gone, csvPath);
    }
    await d.triggerPull('calls', 'test');
    await scrapeUntil(d, 'no failed run in a row', (s) => series(s, 'cds_runs_failed_consecutive', { sync: 'calls' })[0]?.value === 0);
  });
});

describe('Do Not Call lists', () => {
  it('each list once (its age, limit and whether it vouches), what each keeps out of each sync, a campaign held for a copy too old and released by a newer one', async () => {
    const now = OPEN;
    const f = await dialerFixture();
    f.token = await createKey(f.server, f.accountId, ['CampaignAdmin', 'CampaignNumberAdmin', 'CampaignReader']);
    const other = (await createCampaign(f.server, f.accountId, { name: 'Survey', type: 'Dynamic', state: 'Active' })).id;
    const { prefix, cleanup } = testPrefix();
    const dir = mkdtempSync(join(tmpdir(), 'cds-state-metrics-dnc-'));
    const redis = connectRedis({ url: REDIS_URL });
    const [listed, clear, ours] = ['+12122345621', '+12122345622', '+12122345623'];
    const csv = join(dir, 'contacts.csv');
    writeFileSync(csv, `id,phone\n1,${listed}\n2,${clear}\n3,${ours}\n`);
    const registry = new ListCopies(redis, new DncKeys(prefix), 'national', { now: () => now });
    const file = (name: string, phones: string[]) => {
      const path = join(dir, `${name}.txt`);
      // A copy holds at least one number: one no contact has.
      writeFileSync(path, `${[...phones, '+12122349999'].map((p) => p.slice(2)).join('\n')}\n`);
      return path;
    };
    // 33 days old: past the registry's 31.
    await registry.loadFull([file('old', [listed])], new Date(now - 33 * DAY_S * 1000).toISOString());
    await new OwnList(redis, new DncKeys(prefix), 'company').add([ours], { by: 'test', reason: 'asked not to be called' });
    const config = parseConfig({
      redis: { url: REDIS_URL, prefix }, http: { host: '127.0.0.1', port: 0 },
      dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 }, timeZone: TZ },
      doNotCallLists: [{ name: 'national', type: 'registry', folder: dir }],
      syncs: [
        // Under the calling window: a list that cannot vouch holds its campaign Paused (its numbers wait, dirty).
        { id: 'windowed', campaignId: f.campaignId, source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, schedule: { every: '1h' }, compliance: {} },
        // Without: the numbers the list cannot vouch for wait, kept out.
        { id: 'plain', campaignId: other, source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, schedule: { every: '1h' }, compliance: RULES_OFF },
      ],
    }, 'test config', {});
    const d = await Daemon.start(config, { log: quietLog, now: () => now });
    const keptOut = (s: Sample[], sync: string) => series(s, 'cds_numbers_kept_out', { sync }).map((x) => [x.labels.list, x.value]);
    try {
      let s = await scrapeUntil(d, 'the campaign held for the old copy, the other sync\'s numbers waiting', (s) => (series(s, 'cds_campaign_held', { sync: 'windowed' }).length > 0
        && series(s, 'cds_numbers_held', { sync: 'windowed', rule: 'window' })[0]?.value === 3 && series(s, 'cds_numbers_kept_out', { sync: 'plain', list: '(waiting)' })[0]?.value === 2 ? s : null));
      expect(series(s, 'cds_campaign_held', { sync: 'windowed' })).toEqual([{ name: 'cds_campaign_held', labels: { sync: 'windowed', campaign: f.campaignId, reason: 'do_not_call_list' }, value: 1 }]);
      expect(series(s, 'cds_campaign_next_open_timestamp_seconds')).toEqual([]);
      expect(series(s, 'cds_campaign_held', { sync: 'plain' })).toEqual([]);
      // One series per list, whichever syncs it holds.
      expect(series(s, 'cds_dnc_list_can_vouch').map((x) => [x.labels.list, x.value])).toEqual([['company', 1], ['national', 0]]);
      expect(series(s, 'cds_dnc_list_age_seconds')).toEqual([{ name: 'cds_dnc_list_age_seconds', labels: { list: 'national' }, value: 33 * DAY_S }]);
      expect(series(s, 'cds_dnc_list_max_age_seconds')).toEqual([{ name: 'cds_dnc_list_max_age_seconds', labels: { list: 'national' }, value: 31 * DAY_S }]);
      // The company's list keeps its number out; the two others wait for a copy that can vouch for them.
      expect(keptOut(s, 'plain')).toEqual([['company', 1], ['national', 0], ['(waiting)', 2]]);
      // The held campaign's numbers wait for the window, not yet judged by the lists.
      expect(keptOut(s, 'windowed')).toEqual([['company', 0], ['national', 0], ['(waiting)', 0]]);
      expect(series(s, 'cds_numbers_held', { sync: 'plain' }).map((x) => x.labels.rule)).toEqual(['do_not_call']);
      expect(await campaignNumbers(f)).toEqual([]);

      // A copy of yesterday: the list vouches again, keeps its number out and lets the other in.
      await registry.loadFull([file('new', [listed])], new Date(now - DAY_S * 1000).toISOString());
      expect(await d.enforceWindow(d.runtimes.get('windowed')!, 'test')).toBe('Active');
      await d.triggerPull('plain', 'test');
      s = await scrapeUntil(d, 'the list vouching and the campaign released', (s) => (!series(s, 'cds_campaign_held').length
        && series(s, 'cds_numbers_kept_out', { sync: 'windowed', list: 'national' })[0]?.value === 1 && series(s, 'cds_numbers_kept_out', { sync: 'plain', list: 'national' })[0]?.value === 1 ? s : null));
      expect(keptOut(s, 'windowed')).toEqual([['company', 1], ['national', 1], ['(waiting)', 0]]);
      expect(keptOut(s, 'plain')).toEqual([['company', 1], ['national', 1], ['(waiting)', 0]]);
      expect(series(s, 'cds_numbers_held', { sync: 'windowed', rule: 'window' })[0]!.value).toBe(0);
      expect(series(s, 'cds_dnc_list_can_vouch').map((x) => [x.labels.list, x.value])).toEqual([['company', 1], ['national', 1]]);
      expect(series(s, 'cds_dnc_list_age_seconds')).toEqual([{ name: 'cds_dnc_list_age_seconds', labels: { list: 'national' }, value: DAY_S }]);
      await waitFor(async () => (await campaignNumbers(f)).map((n) => n.number).join() === clear, 'the clear number added');
    } finally {
      await d.close(2000);
      redis.disconnect();
      await f.server.close();
      await cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('Redis goes away', () => {
  it('/metrics answers at once with cds_redis_up 0 and no other state series, and 1 again once Redis is back', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'cds-state-metrics-redis-'));
    let server = await startRedisServer(port, dir);
    const f = await dialerFixture();
    const csv = join(dir, 'contacts.csv');
    writeFileSync(csv, 'id,phone\n1,+12122345631\n');
    const config = parseConfig({
      redis: { url: `redis://127.0.0.1:${port}`, prefix: 'metrics' }, http: { host: '127.0.0.1', port: 0 },
      dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, rateLimit: { perSecond: 50, burst: 100 } },
      syncs: [{ id: 'plain', campaignId: f.campaignId, source: { type: 'csv', path: csv }, mapping: { phone: 'phone' }, schedule: { every: '1h' } }],
      compliance: RULES_OFF,
    }, 'test config', {});
    const d = await Daemon.start(config, { log: quietLog });
    try {
      await waitFor(async () => (await campaignNumbers(f)).length === 1, 'the sync\'s number');
      const up = await scrape(d.address);
      expect(series(up.samples, 'cds_redis_up')[0]!.value).toBe(1);
      expect(series(up.samples, 'cds_runs_failed_consecutive', { sync: 'plain' })).toHaveLength(1);

      // Redis stops answering, its connection open: the reading is given up after its timeout.
      server.kill('SIGSTOP');
      try {
        const stalled = await scrape(d.address);
        expect(stalled.status).toBe(200);
        expect(stalled.ms).toBeLessThan(4000);
        expect(series(stalled.samples, 'cds_redis_up')[0]!.value).toBe(0);
        expect(series(stalled.samples, 'cds_runs_failed_consecutive')).toEqual([]);
        expect(series(stalled.samples, 'bullmq_job_count')).toEqual([]);
        // While that reading waits, the next scrape starts none: it answers at once.
        const again = await scrape(d.address);
        expect(series(again.samples, 'cds_redis_up')[0]!.value).toBe(0);
        expect(again.ms).toBeLessThan(1000);
        expect(series(again.samples, 'bullmq_job_count')).toEqual([]);
      } finally {
        server.kill('SIGCONT');
      }
      await scrapeUntil(d, 'cds_redis_up 1 once Redis answers', (s) => series(s, 'cds_redis_up')[0]?.value === 1 && series(s, 'cds_runs_failed_consecutive', { sync: 'plain' }).length === 1);

      // Redis gone.
      const exited = new Promise((r) => server.once('exit', r));
      server.kill('SIGKILL');
      await exited;
      const scrapes: number[] = [];
      const down = await waitFor(async () => {
        const r = await scrape(d.address);
        scrapes.push(r.ms);
        expect(r.status).toBe(200);
        return series(r.samples, 'cds_redis_up')[0]?.value === 0 && r;
      }, 'cds_redis_up 0', 15_000);
      // Never a hang: each scrape is bounded by the reading's timeout (2 s), and once the connection is known to be
      // down nothing waits for Redis at all.
      expect(Math.max(...scrapes)).toBeLessThan(4000);
      for (const name of ['cds_runs_failed_consecutive', 'cds_numbers_held', 'cds_records_parked', 'cds_numbers_kept_out', 'cds_dnc_list_can_vouch', 'bullmq_job_count']) {
        expect(series(down.samples, name), name).toEqual([]);
      }
      // The process's own metrics are still served.
      expect(series(down.samples, 'cds_process_cpu_seconds_total').length).toBe(1);
      await waitFor(() => d.redisProblem() !== null, 'the daemon to see Redis gone');
      const known = await scrape(d.address);
      expect(known.ms).toBeLessThan(1000);
      expect(series(known.samples, 'cds_redis_up')[0]!.value).toBe(0);

      server = await startRedisServer(port, dir);
      await scrapeUntil(d, 'cds_redis_up 1 again', (s) => series(s, 'cds_redis_up')[0]?.value === 1 && series(s, 'cds_runs_failed_consecutive', { sync: 'plain' }).length === 1);
    } finally {
      await d.close(2000);
      server.kill('SIGKILL');
      await f.server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
