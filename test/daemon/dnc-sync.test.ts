// Do Not Call lists in a sync: a number the registry holds is never added, unless its contact is exempt (consent, a
// purchase, an inquiry) and only while the exemption lasts; the company's own list wins over every exemption; a change
// list naming a number the campaign holds takes it out at the next run whoever added it; every number added has its
// evidence (which lists, which copy, which exemption); a copy too old holds the campaign and says why.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { areaCodePhone } from '../../crm-stand-ins/contacts.ts';
import { Daemon } from '../../daemon/app.ts';
import { ListCopies } from '../../daemon/dnc/copies.ts';
import { auditDay, lastEvidence } from '../../daemon/dnc/evidence.ts';
import { addMonths } from '../../daemon/dnc/exemptions.ts';
import { DncKeys } from '../../daemon/state/keys.ts';
import { OwnList } from '../../daemon/dnc/own-list.ts';
import { dryRun } from '../../daemon/sync/dry-run.ts';
import { connectRedis } from '../../daemon/state/connection.ts';
import { syncStatus } from '../../daemon/sync/status.ts';
import { campaignNumbers, daemonConfig, dialerFixture, quietLog, REDIS_URL, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { pullAndSettle } from '../support/sync-checks.ts';
import { runChecks } from '../../daemon/check/command.ts';
import { createKey } from '../support/server.ts';

const dir = mkdtempSync(join(tmpdir(), 'cds-dnc-sync-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const DAY = 86_400_000;
const phone = (i: number) => areaCodePhone(i, [212]);
const digits = (e164: string) => e164.slice(2);
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => { for (const c of cleanups.splice(0).reverse()) await c(); });

interface Row { id: string; phone: string; consent?: string; purchased?: string; inquired?: string }

function csv(name: string, rows: Row[]): string {
  const file = join(dir, `${name}.csv`);
  writeFileSync(file, ['id,phone,consent,purchased,inquired', ...rows.map((r) => [r.id, r.phone, r.consent ?? '', r.purchased ?? '', r.inquired ?? ''].join(','))].join('\n'));
  return file;
}

async function rig(name: string, rows: Row[], options: { now?: () => number; extra?: Record<string, unknown>; sync?: Record<string, unknown>; clockStart?: string } = {}) {
  const f = await dialerFixture(options.clockStart ? { clockStart: options.clockStart, clockMode: 'manual' } : {});
  cleanups.push(() => f.server.close());
  // A windowed sync's key may pause its campaign.
  if (options.extra?.compliance) f.token = await createKey(f.server, f.accountId, ['CampaignAdmin']);
  const { prefix, cleanup } = testPrefix();
  cleanups.push(cleanup);
  const redis = connectRedis({ url: REDIS_URL });
  cleanups.push(async () => { redis.disconnect(); });
  const registry = new ListCopies(redis, new DncKeys(prefix), 'national', { now: options.now });
  const file = csv(name, rows);
  const config = daemonConfig(f, prefix, [{
    id: name, campaignId: f.campaignId, source: { type: 'csv', path: file }, schedule: { every: '1d' },
    mapping: { phone: 'phone', consent: 'consent', lastPurchase: 'purchased', lastInquiry: 'inquired' },
    ...options.sync,
  }], { doNotCallLists: [{ name: 'national', type: 'registry', folder: dir }], ...options.extra });
  const start = () => Daemon.start(config, { log: quietLog, ...(options.now ? { now: options.now } : {}) });
  return { f, prefix, redis, registry, file, config, start, name };
}

/** A full list of area code 212 holding `listed`. */
function fullList(name: string, listed: string[]): string {
  const file = join(dir, `${name}-212.txt`);
  // A copy holds at least one number: one no test uses.
  writeFileSync(file, `${[...listed, phone(9999)].map(digits).join('\n')}\n`);
  return file;
}

const held = async (f: DialerFixture) => new Set((await campaignNumbers(f)).map((n) => n.number));

describe('Do Not Call lists in a sync', () => {
  it('never adds a number the registry holds; consent, a purchase and an inquiry exempt it for their periods; the company\'s list wins over consent; evidence names every list and copy', async () => {
    const now = Date.now();
    const [listed, clear, consented, bought, boughtLongAgo, asked, companyListed] = [phone(0), phone(1), phone(2), phone(3), phone(4), phone(5), phone(6)];
    const r = await rig('exempt', [
      { id: 'listed', phone: listed },
      { id: 'clear', phone: clear },
      { id: 'consented', phone: consented, consent: isoDay(now - 400 * DAY) },
      { id: 'bought', phone: bought, purchased: isoDay(addMonths(now, -17)) },
      { id: 'bought-long-ago', phone: boughtLongAgo, purchased: isoDay(addMonths(now, -19)) },
      { id: 'asked', phone: asked, inquired: isoDay(now - 30 * DAY) },
      { id: 'company', phone: companyListed, consent: isoDay(now - 10 * DAY) },
    ]);
    const copyDate = isoDay(now - 2 * DAY);
    await r.registry.loadFull([fullList('exempt', [listed, consented, bought, boughtLongAgo, asked, companyListed])], copyDate);
    await new OwnList(r.redis, new DncKeys(r.prefix), 'company').add([companyListed], { by: 'test', reason: 'asked not to be called' });
    // The dry run says what the start then does.
    const dry = await Daemon.start(r.config, { log: quietLog, workers: false, http: false, schedules: false });
    const lines: string[] = [];
    const counts = await dryRun(dry.runtimes.get(r.name)!, (l) => lines.push(l), 100);
    await dry.close();
    expect(counts).toMatchObject({ add: 4, remove: 0, doNotCall: 0, lists: { national: 2, company: 1 }, waitingForLists: 0 });
    expect(lines).toContain('held out: 0 by a Do Not Call mark, 2 by list national, 1 by list company, 0 at a per-number cap');
    const d = await r.start();
    try {
      const rt = d.runtimes.get(r.name)!;
      await pullAndSettle(d, r.name, true);
      expect(await held(r.f)).toEqual(new Set([clear, consented, bought, asked]));

      const k = rt.state.keys;
      expect(await lastEvidence(r.redis, k, clear)).toMatchObject({
        phone: clear, sync: r.name, campaign: r.f.campaignId, contact: 'clear',
        lists: [{ list: 'company', status: 'not-listed' }, { list: 'national', status: 'not-listed', date: copyDate, file: 'exempt-212.txt' }],
      });
      expect((await lastEvidence(r.redis, k, clear))!.exemption).toBeUndefined();
      expect(await lastEvidence(r.redis, k, consented)).toMatchObject({ lists: [{ status: 'not-listed' }, { list: 'national', status: 'listed' }], exemption: expect.stringMatching(/^written consent of .* \(until withdrawn\)$/) });
      expect((await lastEvidence(r.redis, k, bought))!.exemption).toMatch(/^purchase of .* \(until /);
      expect((await lastEvidence(r.redis, k, asked))!.exemption).toMatch(/^inquiry of .* \(until /);
      expect(await lastEvidence(r.redis, k, listed)).toBeNull();
      // The day's audit list holds the four adds.
      const audit = [];
      for await (const page of auditDay(r.redis, k, new Date().toISOString().slice(0, 10))) audit.push(...page);
      expect(new Set(audit.map((e) => e.phone))).toEqual(new Set([clear, consented, bought, asked]));
      // What the lists keep out, by list: counted for status and /ops.
      expect(await r.redis.hgetall(k.dncKeptOut)).toEqual({ [listed]: 'national', [boughtLongAgo]: 'national', [companyListed]: 'company' });
      const status = await syncStatus(rt);
      expect(status.doNotCallLists).toMatchObject({ off: null, waiting: 0, lists: [
        { list: 'company', type: 'company', numbers: 1, keptOut: 1, cannotVouch: null },
        { list: 'national', type: 'registry', date: copyDate, ageDays: 2, maxAgeDays: 31, areaCodes: 1, numbers: 7, keptOut: 2, cannotVouch: null },
      ] });
      // The purchase's exemption ends in 18 months: the number is planned again then.
      expect(Number(await r.redis.zscore(k.dncExemptEnds, bought))).toBe(addMonths(Date.parse(`${isoDay(addMonths(now, -17))}T00:00:00+14:00`), 18));
    } finally {
      await d.close();
    }
  });

  it('an exempt contact is called until its exemption ends, and not after: the next run takes its number out', async () => {
    let offset = 0;
    const now = () => Date.now() + offset;
    const [bought] = [phone(10)];
    // Bought 18 months ago less an hour: exempt for another hour.
    const purchased = new Date(addMonths(Date.now(), -18) + 3_600_000).toISOString();
    const r = await rig('ends', [{ id: 'bought', phone: bought, purchased }], { now });
    await r.registry.loadFull([fullList('ends', [bought])], isoDay(Date.now() - DAY));
    const d = await r.start();
    try {
      await pullAndSettle(d, r.name, true);
      expect(await held(r.f)).toEqual(new Set([bought]));
      offset = 2 * 3_600_000;
      await pullAndSettle(d, r.name);
      expect(await held(r.f)).toEqual(new Set());
      expect(await r.redis.hget(d.runtimes.get(r.name)!.state.keys.dncKeptOut, bought)).toBe('national');
    } finally {
      await d.close();
    }
  });

  it('a change list adding numbers the campaign holds takes them out at the next run, whoever added them', async () => {
    const [ours, byHand, stays] = [phone(20), phone(21), phone(22)];
    const r = await rig('changes', [{ id: 'ours', phone: ours }, { id: 'stays', phone: stays }]);
    // A number the campaign held before the sync's first run (added by another key): the operator's, kept as it is.
    const res = await r.f.server.request(`/v1/accounts/${r.f.accountId}/campaigns/${r.f.campaignId}/numbers`, {
      method: 'POST', token: r.f.token, json: [{ number: byHand }],
    });
    expect(res.status).toBeLessThan(300);
    await r.registry.loadFull([fullList('changes', [])], isoDay(Date.now() - 3 * DAY));
    const d = await r.start();
    try {
      await pullAndSettle(d, r.name, true);
      expect(await held(r.f)).toEqual(new Set([ours, byHand, stays]));
      const changes = join(dir, 'changes-list.txt');
      writeFileSync(changes, `${digits(ours)},A\n${digits(byHand)},A\n`);
      await r.registry.applyChanges(changes, isoDay(Date.now() - DAY));
      await pullAndSettle(d, r.name);
      expect(await held(r.f)).toEqual(new Set([stays]));
    } finally {
      await d.close();
    }
  });

  it('a copy older than its 31 days holds the campaign Paused and says why, adding nothing; a newer copy releases it', { timeout: 90_000 }, async () => {
    // The dialer's clock at 11:00 in New York today: the window is open.
    const [one, two] = [phone(30), phone(31)];
    const r = await rig('stale', [{ id: 'one', phone: one }, { id: 'two', phone: two }], { clockStart: `${isoDay(Date.now())}T15:00:00Z`, extra: { compliance: { checkEvery: '1s' } } });
    r.config.dialerClock = { url: `${r.f.server.url}/console/clock`, token: r.f.server.consoleToken, every: 1000 };
    await r.registry.loadFull([fullList('stale', [])], isoDay(Date.now() - 33 * DAY));
    const d = await r.start();
    try {
      const statusOf = async () => (await syncStatus(d.runtimes.get(r.name)!));
      await d.triggerPull(r.name, 'test', true, 'pull');
      const status = await waitFor(async () => {
        const s = await statusOf();
        return s.window?.heldClosedBecause?.includes('Do Not Call') && s.runs[0]?.status === 'done' ? s : null;
      }, 'the window to hold the campaign for the stale copy');
      expect(status.window!.heldClosedBecause).toMatch(/list national cannot vouch for the numbers the campaign holds: its copy of \d{4}-\d{2}-\d{2} is 3\d days old \(31 at most\): put a newer download in .* and run .* dnc load national$/);
      expect(status.window!.state).toBe('Paused');
      expect(await held(r.f)).toEqual(new Set());
      // A newer copy: the campaign is released and both numbers go in.
      await r.registry.loadFull([fullList('fresh', [])], isoDay(Date.now() - DAY));
      await waitFor(async () => (await held(r.f)).size === 2, 'both numbers added once the copy is new');
      expect((await statusOf()).window!.heldClosedBecause ?? null).toBeNull();
    } finally {
      await d.close();
    }
  });

  it('check says each list\'s age, fails for a list that cannot vouch, warns near its limit and for a sync without a registry', async () => {
    const r = await rig('checked', [{ id: 'one', phone: phone(40) }], {
      extra: { doNotCallLists: [
        { name: 'national', type: 'registry', folder: dir },
        { name: 'texas', type: 'state', folder: join(dir, 'no-such-folder'), states: ['TX'], maxAgeDays: 92 },
      ] },
    });
    await r.registry.loadFull([fullList('checked', [phone(41)])], isoDay(Date.now() - 28 * DAY));
    const bare = { ...r.config, syncs: [...r.config.syncs, { ...r.config.syncs[0]!, id: 'bare', dnc: { lists: [], from: 'default' as const } }, { ...r.config.syncs[0]!, id: 'survey', dnc: { lists: [], off: 'survey calls: not telemarketing', from: 'sync' as const } }] };
    const report = await runChecks(bare, quietLog);
    const of = (sync: string, check: string) => report.checks.find((c) => c.sync === sync && c.check === check);
    expect(of('checked', 'dnc.company')).toMatchObject({ status: 'ok', message: 'the company\'s own list holds 0 numbers' });
    expect(of('checked', 'dnc.list.national')).toMatchObject({ status: 'warn', message: expect.stringMatching(/^list national \(registry\): copy of .*, 2\d days old \(31 at most\), 1 area code, 2 numbers: it stops vouching in \d days?$/) });
    expect(of('checked', 'dnc.list.texas')).toMatchObject({ status: 'fail', message: expect.stringContaining('list texas cannot vouch for any number: no copy is loaded'), fix: expect.stringMatching(/dnc load texas/) });
    expect(of('checked', 'dnc.list.texas.folder')).toMatchObject({ status: 'warn', message: expect.stringContaining('no-such-folder cannot be read') });
    expect(of('checked', 'dnc.list.national.folder')).toBeUndefined();
    expect(of('bare', 'dnc.lists')).toMatchObject({ status: 'warn', message: expect.stringContaining('no Do Not Call registry holds this sync') });
    expect(of('survey', 'dnc.lists')).toMatchObject({ status: 'ok', message: expect.stringContaining('survey calls: not telemarketing') });
    expect(report.ok).toBe(false);
    expect(report.syncs.checked!.refusals).toEqual([]);
  });

  it('loads a download put in a list\'s folder by itself (doNotCallLoadEvery), then keeps its numbers out', async () => {
    const folder = mkdtempSync(join(dir, 'national-'));
    const day = isoDay(Date.now() - DAY);
    mkdirSync(join(folder, `full-${day}`));
    const [listed, clear] = [phone(50), phone(51)];
    writeFileSync(join(folder, `full-${day}`, '212.txt'), `${digits(listed)}\n`);
    const r = await rig('folder', [{ id: 'listed', phone: listed }, { id: 'clear', phone: clear }], {
      extra: { doNotCallLists: [{ name: 'national', type: 'registry', folder }], doNotCallLoadEvery: '1h' },
    });
    const d = await r.start();
    try {
      // The scheduler's first load runs at the start.
      const copy = await waitFor(() => r.registry.copy(), 'the folder\'s download loaded');
      expect(copy).toMatchObject({ date: day, numbers: 1 });
      await pullAndSettle(d, r.name, true);
      expect(await held(r.f)).toEqual(new Set([clear]));
    } finally {
      await d.close();
    }
  });
});

