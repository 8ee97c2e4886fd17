// Notifications without Prometheus (`notify:`): a refused sync, a campaign held Paused and runs failing in a row are
// sent to a Slack incoming webhook and to a signed generic webhook (small loopback servers here), once per event
// however many processes run, repeated every repeatEvery while it fires, with one message when it ends; a receiver
// that is down gets the message once it is back, and the syncs go on meanwhile.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Daemon } from '../../daemon/app.ts';
import { ConfigError, parseConfig, type Config } from '../../daemon/config.ts';
import { Metrics } from '../../daemon/metrics.ts';
import { DOCS_SECTIONS } from '../../daemon/notify/alerts.ts';
import { DOCS_URL, notifySchema, type Destination } from '../../daemon/notify/config.ts';
import { Deliveries, destinationId } from '../../daemon/notify/delivery.ts';
import type { Notification, NotificationBody } from '../../daemon/notify/messages.ts';
import { connectRedis } from '../../daemon/state/connection.ts';
import { DaemonKeys } from '../../daemon/state/keys.ts';
import { NotifyState, type FoundAlert } from '../../daemon/state/notify-state.ts';
import { campaignNumbers, daemonConfig, dialerFixture, quietLog, REDIS_URL, testPrefix, waitFor } from '../support/daemon.ts';
import { addByHand, governedConfig, governedDialer } from '../support/governed.ts';
import { startProxy } from '../support/proxy.ts';
import { createCampaign, createKey } from '../support/server.ts';

/** The secret part of the Slack URL (its path): it must never reach a log line or an error. */
const SLACK_TOKEN = 'T0NOTIFY/B0NOTIFY/slackSecretPathToken42';
const SECRET = `whsec_${Buffer.from('a signing key for the notify tests').toString('base64')}`;

interface Received { at: number; headers: IncomingHttpHeaders; body: string; status: number }

/** A loopback receiver keeping every request; `answer` gives each one's status and headers (200 unless it says otherwise). */
async function receiver(answer: (n: number) => number | { status: number; headers: Record<string, string> } = () => 200) {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const a = answer(got.length);
      const { status, headers } = typeof a === 'number' ? { status: a, headers: {} } : a;
      got.push({ at: Date.now(), headers: req.headers, body: Buffer.concat(chunks).toString(), status });
      res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(status === 200 ? 'ok' : 'down');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base, got,
    /** The requests answered 200. */
    delivered: () => got.filter((r) => r.status === 200),
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
type Receiver = Awaited<ReturnType<typeof receiver>>;

/** Checks a request's Standard Webhooks signature with node:crypto (not the daemon's helper), in constant time. */
function verify(r: Received): NotificationBody {
  const id = r.headers['webhook-id'] as string;
  const ts = r.headers['webhook-timestamp'] as string;
  const sig = r.headers['webhook-signature'] as string;
  expect(id).toMatch(/^msg_[0-9a-f]+_\d+$/);
  expect(Math.abs(Number(ts) * 1000 - r.at)).toBeLessThan(60_000);
  const expected = Buffer.from(`v1,${createHmac('sha256', Buffer.from(SECRET.slice(6), 'base64')).update(`${id}.${ts}.${r.body}`).digest('base64')}`);
  expect(sig.length === expected.length && timingSafeEqual(Buffer.from(sig), expected), 'the signature verifies').toBe(true);
  return JSON.parse(r.body) as NotificationBody;
}

const slackText = (r: Received) => (JSON.parse(r.body) as { text: string }).text;

/** A log that keeps every line (JSON) for the test to read. */
function keptLog() {
  const lines: string[] = [];
  return { lines, log: pino({ level: 'debug' }, { write: (line: string) => { lines.push(line); } }) };
}

function notify(slack: Receiver, webhook: Receiver, extra: Record<string, unknown> = {}) {
  return { to: [{ type: 'slack', url: `${slack.base}/services/${SLACK_TOKEN}` }, { type: 'webhook', url: `${webhook.base}/hooks/cds`, secret: SECRET }], checkEvery: '1s', ...extra };
}

let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'cds-notify-')); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function csv(name: string, rows: string[]): string {
  const path = join(dir, `${name}.csv`);
  writeFileSync(path, ['id,phone', ...rows].join('\n'));
  return path;
}

describe('the notify configuration', () => {
  const base = { dialer: { baseUrl: 'http://127.0.0.1:4000', accountId: 'a', apiToken: 't' }, syncs: [{ id: 's', campaignId: 'c', source: { type: 'csv', path: 'x.csv' }, mapping: { phone: 'phone' } }] };
  const problems = (notify: unknown) => {
    try {
      parseConfig({ ...base, notify }, 'test', {});
    } catch (err) {
      if (err instanceof ConfigError) return err.message;
      throw err;
    }
    throw new Error('the configuration was accepted');
  };

  it('has the defaults the docs give, and takes the Slack URL from the environment', () => {
    const c = parseConfig({ ...base, notify: { to: [{ type: 'slack', url: '${SLACK_WEBHOOK_URL}' }] } }, 'test', { SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/T1/B1/x' });
    expect(c.notify).toEqual({ to: [{ type: 'slack', url: 'https://hooks.slack.com/services/T1/B1/x' }], repeatEvery: 4 * 3_600_000, runsFailing: 3, checkEvery: 30_000,
      docsUrl: 'https://github.com/campaign-dialing/n8n-nodes-campaign-dialing/blob/main/docs' });
  });

  it('says what is wrong without showing a URL or a secret', () => {
    const bad = problems({ to: [{ type: 'slack', url: `hooks.slack.com/services/${SLACK_TOKEN}` }] });
    expect(bad).toMatch(/notify\.to\.0\.url: an http\(s\) URL \(got \(secret, not shown\)\)/);
    expect(bad).not.toContain('slackSecretPathToken42');
    const secret = problems({ to: [{ type: 'webhook', url: 'https://example.com/h', secret: 'whsec_not base64: secretValue' }] });
    expect(secret).toMatch(/notify\.to\.0\.secret: a Standard Webhooks secret: whsec_/);
    expect(secret).not.toContain('secretValue');
    expect(problems({ to: [{ type: 'email', url: 'https://example.com' }] })).toMatch(/notify\.to\.0\.type: type must be one of slack, webhook/);
    expect(problems({ to: [] })).toMatch(/notify\.to: at least one destination/);
    const limits = problems({ to: [{ type: 'slack', url: 'https://example.com' }], checkEvery: '100ms', runsFailing: 0 });
    expect(limits).toMatch(/notify\.checkEvery: at least 1s/);
    expect(limits).toMatch(/notify\.runsFailing: Too small/);
  });
});

describe('the docs each message links to', () => {
  it('are sections of the docs (the default address is the repository\'s docs folder)', () => {
    const slug = (heading: string) => heading.toLowerCase().replace(/[^\p{L}\p{N}\- ]/gu, '').replace(/ /g, '-');
    for (const section of Object.values(DOCS_SECTIONS)) {
      const [page, anchor] = section.split('#') as [string, string];
      const headings = readFileSync(join(import.meta.dirname, '../../docs', page), 'utf8').split('\n').filter((l) => /^#{1,6} /.test(l)).map((l) => slug(l.replace(/^#+ /, '')));
      expect(headings, section).toContain(anchor);
    }
    expect(DOCS_URL).toBe(`${(JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { repository: { url: string } }).repository.url
      .replace(/^git\+/, '').replace(/\.git$/, '')}/blob/main/docs`);
  });
});

describe('deliveries', () => {
  it('wait out a 429\'s Retry-After when it is longer than the backoff, and do not retry a receiver that refuses (404)', async () => {
    const { prefix, cleanup } = testPrefix();
    // 429 asking for 2 s (the backoff alone would wait 1 s), then 200.
    const limited = await receiver((n) => (n === 0 ? { status: 429, headers: { 'retry-after': '2' } } : 200));
    const gone = await receiver(() => 404);
    const redis = connectRedis({ url: REDIS_URL });
    const metrics = new Metrics();
    const to: Destination[] = [{ type: 'webhook', url: `${limited.base}/h`, secret: SECRET }, { type: 'slack', url: `${gone.base}/services/${SLACK_TOKEN}` }];
    const deliveries = new Deliveries({ connection: redis, prefix, name: '{notify}', destinations: to, log: quietLog, metrics });
    const queue = new Queue('{notify}', { connection: redis, prefix });
    const n: Notification = { id: 'msg_test_1', repeat: false, body: { event: 'runs.failing', status: 'firing', sync: 's', reason: 'r', since: new Date().toISOString(), at: new Date().toISOString(), docs: 'https://docs/x' } };
    try {
      await deliveries.send(n);
      // Queuing the same message again adds nothing.
      await deliveries.send(n);
      await waitFor(() => limited.delivered().length === 1, 'the delivery after the 429', 30_000);
      expect(limited.got.map((r) => r.status)).toEqual([429, 200]);
      expect(limited.got[1]!.at - limited.got[0]!.at).toBeGreaterThanOrEqual(1900);
      await waitFor(async () => (await queue.getJobState(`${n.id}-${destinationId(to[1]!)}`)) === 'failed', 'the refused delivery to fail', 30_000);
      expect(gone.got).toHaveLength(1);
      const counted = await metrics.registry.getSingleMetricAsString('cds_notifications_total');
      expect(counted).toContain(`cds_notifications_total{to="slack:${new URL(gone.base).host}",result="failed"} 1`);
      expect(counted).toContain(`cds_notifications_total{to="webhook:${new URL(limited.base).host}",result="retry"} 1`);
      expect(counted).toContain(`cds_notifications_total{to="webhook:${new URL(limited.base).host}",result="delivered"} 1`);
    } finally {
      await deliveries.close();
      await queue.close();
      redis.disconnect();
      await limited.close();
      await gone.close();
      await cleanup();
    }
  }, 60_000);
});

describe('an alert\'s record (notifyAlert)', () => {
  const { prefix, cleanup } = testPrefix();
  const redis = new Redis(REDIS_URL);
  const other = new Redis(REDIS_URL);
  afterAll(async () => { await cleanup(); redis.disconnect(); other.disconnect(); });
  const alert: FoundAlert = { kind: 'refused', sync: 's1', campaign: '', reason: 'the key may not pause', fix: 'give it Campaign Admin', docs: 'https://docs/x', since: 1000 };

  it('pends, fires once whichever process steps it, repeats only after repeatEvery, resolves once; a pending one that clears sends nothing', async () => {
    const keys = new DaemonKeys(prefix);
    const a = new NotifyState(redis, keys);
    const b = new NotifyState(other, keys);
    const fp = 'refused|s1|';
    expect(await a.firing(alert, 10_000, 5000)).toBeNull();
    expect((await a.all()).get(fp)).toMatchObject({ status: 'pending', first: 10_000, seq: 0 });
    // Two processes step it at the next evaluation: one message.
    const [x, y] = await Promise.all([a.firing(alert, 11_000, 5000), b.firing(alert, 11_000, 5000)]);
    const fired = [x, y].filter((r) => r !== null);
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({ status: 'firing', since: 1000, seq: 1, send: { seq: 1, status: 'firing', at: 11_000, repeat: false }, reason: 'the key may not pause' });
    await a.queued(fp, 1);
    expect((await a.all()).get(fp)!.send).toBeUndefined();
    // Before repeatEvery: nothing; the reason as found last is kept.
    expect(await a.firing({ ...alert, reason: 'the key may not pause (again)' }, 15_999, 5000)).toBeNull();
    expect(await b.firing(alert, 16_000, 5000)).toMatchObject({ seq: 2, send: { seq: 2, status: 'firing', repeat: true } });
    expect(await a.firing(alert, 16_001, 5000)).toBeNull();
    // A message decided and not queued stays in the record for the next evaluation.
    expect((await a.all()).get(fp)!.send).toMatchObject({ seq: 2 });
    await b.queued(fp, 2);
    // Cleared: one resolution, forgotten once queued.
    const [r1, r2] = await Promise.all([a.clear(fp, 17_000), b.clear(fp, 17_000)]);
    expect([r1, r2].filter((r) => r !== null)).toEqual([expect.objectContaining({ status: 'resolved', send: { seq: 3, status: 'resolved', at: 17_000, repeat: false } })]);
    await a.queued(fp, 3);
    expect((await a.all()).has(fp)).toBe(false);
    // Seen once and gone: never sent.
    expect(await a.firing({ ...alert, kind: 'runs' }, 20_000, 5000)).toBeNull();
    expect(await a.clear('runs|s1|', 21_000)).toBeNull();
    expect((await a.all()).size).toBe(0);
  });
});

describe('a refused sync, with two daemon processes', () => {
  it('sends one message, no repeat before repeatEvery, one after it, and one recovery message when it is fixed', async () => {
    const f = await dialerFixture();
    const admin = await createKey(f.server, f.accountId, ['CampaignAdmin', 'CampaignNumberAdmin', 'CampaignReader']);
    // The dialer refuses the calling window's pause (403) while `refuse`: the sync is refused at the first one.
    const proxy = await startProxy(f.server.url);
    let refuse = true;
    proxy.interceptWithBody = (req, body) => (refuse && req.method === 'PUT' && /\/state$/.test(req.url ?? '') && body.toString() !== 'null'
      ? { status: 403, headers: { 'content-type': 'application/problem+json' }, body: JSON.stringify({ title: 'Forbidden', detail: 'The key may not change states' }) } : undefined);
    const slack = await receiver();
    const webhook = await receiver();
    const { prefix, cleanup } = testPrefix();
    const logs = keptLog();
    const config = daemonConfig(f, prefix, [{ id: 'windowed', campaignId: f.campaignId, source: { type: 'csv', path: csv('refused', ['1,+12122345674']) }, mapping: { phone: 'phone' },
      schedule: { every: '1h' }, compliance: { checkEvery: '1s' } }], {
      dialer: { baseUrl: proxy.url, accountId: f.accountId, apiToken: admin, rateLimit: { perSecond: 50, burst: 100 }, timeZone: 'America/New_York' },
      notify: notify(slack, webhook, { repeatEvery: '8s' }),
    });
    // A Wednesday at 14:00 in New York: the callee's window is open.
    const now = () => Date.parse('2026-03-11T18:00:00Z');
    const a = await Daemon.start(config, { log: logs.log, now });
    const b = await Daemon.start(config, { log: logs.log, now });
    const evaluations = () => (a.notifications?.evaluations ?? 0) + b.notifications!.evaluations;
    try {
      await waitFor(() => slack.got.length >= 1 && webhook.delivered().length >= 1, 'the first message', 30_000);
      const text = slackText(slack.got[0]!);
      expect(text).toMatch(/^:red_circle: \*Sync "windowed" is refused: it adds no numbers until this is fixed\*/);
      expect(text).toMatch(/\*Why:\* the dialer refused to pause or resume campaign \S+ \(403\)/);
      expect(text).toMatch(/\*Fix:\* give the key the Campaign Admin role/);
      expect(text).toMatch(/<https:\/\/github\.com\/campaign-dialing\/n8n-nodes-campaign-dialing\/blob\/main\/docs\/daemon\.md#before-the-first-start-init-and-check\|What this means>$/);
      const first = verify(webhook.delivered()[0]!);
      expect(first).toEqual({
        event: 'sync.refused', status: 'firing', sync: 'windowed', reason: expect.stringMatching(/^the dialer refused to pause or resume campaign/),
        fix: expect.stringMatching(/^give the key the Campaign Admin role/), since: expect.any(String), at: expect.any(String),
        docs: 'https://github.com/campaign-dialing/n8n-nodes-campaign-dialing/blob/main/docs/daemon.md#before-the-first-start-init-and-check',
      });
      expect(Date.parse(first.since)).toBeLessThanOrEqual(Date.parse(first.at));

      // One process stops (whichever evaluated): the other goes on alone. Still refused: the evaluations that pass
      // before repeatEvery decide nothing more.
      await a.close(2000);
      const seen = evaluations();
      await waitFor(() => evaluations() >= seen + 2, 'two more evaluations', 30_000);
      const state = new NotifyState(b.redis, b.keys);
      const record = (await state.all()).get('refused|windowed|')!;
      expect(record).toMatchObject({ status: 'firing', seq: 1 });
      expect(Date.now() - Date.parse(first.at)).toBeLessThan(8000);
      expect(slack.got).toHaveLength(1);
      expect(webhook.got).toHaveLength(1);

      // After repeatEvery: one repeat, of the same event, since the same time.
      await waitFor(() => slack.got.length >= 2 && webhook.delivered().length >= 2, 'the repeat', 30_000);
      expect(slackText(slack.got[1]!)).toMatch(/^:red_circle: Still: \*Sync "windowed" is refused/);
      const repeat = verify(webhook.delivered()[1]!);
      expect(repeat).toMatchObject({ event: 'sync.refused', status: 'firing', since: first.since });
      expect(Date.parse(repeat.at) - Date.parse(first.at)).toBeGreaterThanOrEqual(8000);

      // Fixed: the next window check's pause passes, the refusal is lifted, and one recovery message goes out.
      refuse = false;
      await waitFor(() => slack.got.some((r) => slackText(r).includes('Resolved')) && webhook.delivered().some((r) => r.body.includes('"resolved"')), 'the recovery message', 30_000);
      const recovered = await waitFor(() => webhook.delivered().map(verify).find((m) => m.status === 'resolved'), 'the resolution');
      expect(recovered).toMatchObject({ event: 'sync.refused', sync: 'windowed', since: first.since, reason: first.reason });
      expect(slackText(slack.got.find((r) => slackText(r).includes('Resolved'))!)).toMatch(/^:large_green_circle: Resolved: \*Sync "windowed" is no longer refused: it adds numbers again\*\n\*It was:\* the dialer refused/);
      // Its numbers go in now, and nothing more is sent about it.
      await waitFor(async () => (await campaignNumbers(f)).length === 1, 'the sync\'s number, once lifted', 30_000);
      const after = evaluations();
      await waitFor(() => evaluations() >= after + 2, 'two more evaluations', 30_000);
      const refusedMessages = webhook.delivered().map(verify).filter((m) => m.event === 'sync.refused');
      expect(refusedMessages.map((m) => m.status)).toEqual(['firing', 'firing', 'resolved']);
      // Each message once, whichever process sent it.
      const ids = webhook.delivered().map((r) => r.headers['webhook-id']);
      expect(new Set(ids).size).toBe(ids.length);
      expect(slack.got.filter((r) => /refused/.test(slackText(r).split('\n')[0]!))).toHaveLength(3);
      expect((await state.all()).has('refused|windowed|')).toBe(false);
      // The Slack URL's secret path is in no log line; its host is.
      expect(logs.lines.join('\n')).not.toContain('slackSecretPathToken42');
      expect(logs.lines.some((l) => l.includes(`slack:${new URL(slack.base).host}`))).toBe(true);
    } finally {
      await a.close(2000);
      await b.close(2000);
      await proxy.close();
      await slack.close();
      await webhook.close();
      await f.server.close();
      await cleanup();
    }
  }, 120_000);
});

describe('runs failing in a row, while the webhook is down', () => {
  it('retries the delivery until the webhook is back, sends Slack one message, and the syncs run meanwhile', async () => {
    const f = await dialerFixture();
    const other = (await createCampaign(f.server, f.accountId, { name: 'Healthy', type: 'Dynamic', state: 'Active' })).id;
    const slack = await receiver();
    // Down (500) for its first two requests, then back.
    const webhook = await receiver((n) => (n < 2 ? 500 : 200));
    const { prefix, cleanup } = testPrefix();
    const logs = keptLog();
    const broken = csv('broken', ['1,+12122345675']);
    renameSync(broken, `${broken}.away`);
    const config = daemonConfig(f, prefix, [
      { id: 'broken', campaignId: f.campaignId, source: { type: 'csv', path: broken }, mapping: { phone: 'phone' }, schedule: { every: '1s' } },
      { id: 'healthy', campaignId: other, source: { type: 'csv', path: csv('healthy', ['1,+12122345676']) }, mapping: { phone: 'phone' }, schedule: { every: '1s' } },
    ], { notify: notify(slack, webhook, { runsFailing: 2 }) });
    const d = await Daemon.start(config, { log: logs.log });
    const runsDone = async (sync: string) => {
      const rt = d.runtimes.get(sync)!;
      const ids = await d.redis.lrange(rt.state.keys.runs, 0, -1);
      const runs = await Promise.all(ids.map((id) => d.redis.hmget(rt.state.keys.run(id), 'status', 'endedAt')));
      return runs.filter(([s]) => s === 'done').map(([, e]) => Date.parse(e!));
    };
    try {
      await waitFor(() => webhook.delivered().length === 1, 'the message, delivered once the webhook is back', 60_000);
      expect(webhook.got.map((r) => r.status)).toEqual([500, 500, 200]);
      // The same message each time (one id), signed again at each try.
      expect(new Set(webhook.got.map((r) => r.headers['webhook-id'])).size).toBe(1);
      const message = verify(webhook.got[2]!);
      webhook.got.slice(0, 2).forEach(verify);
      expect(message).toMatchObject({ event: 'runs.failing', status: 'firing', sync: 'broken', reason: expect.stringMatching(/its last \d+ runs failed; the latest: csv .*broken\.csv: ENOENT/),
        docs: 'https://github.com/campaign-dialing/n8n-nodes-campaign-dialing/blob/main/docs/operations.md#when-things-go-wrong' });
      expect(message.campaign).toBeUndefined();
      // Backoff: a second, then two.
      expect(webhook.got[1]!.at - webhook.got[0]!.at).toBeGreaterThanOrEqual(900);
      expect(webhook.got[2]!.at - webhook.got[1]!.at).toBeGreaterThanOrEqual(1900);
      // Slack got it once, without waiting for the webhook's retries.
      expect(slack.got).toHaveLength(1);
      expect(slack.got[0]!.at).toBeLessThan(webhook.got[1]!.at);
      expect(slackText(slack.got[0]!)).toMatch(/^:red_circle: \*Sync "broken": its runs keep failing\*\n\*Why:\* its last \d+ runs failed; the latest: csv \S+broken\.csv: ENOENT/);
      // The syncs ran while the webhook was down: the healthy one's runs finished between its first 500 and its 200.
      const done = await runsDone('healthy');
      expect(done.filter((t) => t > webhook.got[0]!.at && t < webhook.got[2]!.at).length).toBeGreaterThan(0);
      expect(await campaignNumbers({ ...f, campaignId: other })).toHaveLength(1);
      // Logged at warn with the host and the status, counted by destination and result.
      const warned = logs.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.level === 40 && l.httpStatus === 500);
      expect(warned).toMatchObject({ host: new URL(webhook.base).host, to: `webhook:${new URL(webhook.base).host}`, msg: expect.stringMatching(/retried with backoff/) });
      const metrics = await d.metrics.registry.getSingleMetricAsString('cds_notifications_total');
      expect(metrics).toContain(`cds_notifications_total{to="webhook:${new URL(webhook.base).host}",result="retry"} 2`);
      expect(metrics).toContain(`cds_notifications_total{to="webhook:${new URL(webhook.base).host}",result="delivered"} 1`);
      expect(metrics).toContain(`cds_notifications_total{to="slack:${new URL(slack.base).host}",result="delivered"} 1`);

      // The file is back: the next run succeeds, and one recovery message goes to each.
      renameSync(`${broken}.away`, broken);
      await waitFor(() => webhook.delivered().length === 2 && slack.got.length === 2, 'the recovery message', 30_000);
      expect(verify(webhook.delivered()[1]!)).toMatchObject({ event: 'runs.failing', status: 'resolved', sync: 'broken', since: message.since });
      expect(slackText(slack.got[1]!)).toMatch(/^:large_green_circle: Resolved: \*Sync "broken": a run succeeded again\*/);
      expect(logs.lines.join('\n')).not.toContain('slackSecretPathToken42');
    } finally {
      await d.close(2000);
      await slack.close();
      await webhook.close();
      await f.server.close();
      await cleanup();
    }
  }, 120_000);
});

describe('a campaign held Paused for a number with no zone', () => {
  it('is sent with the campaign, the reason and the fix, and released once the number is deleted', async () => {
    const f = await governedDialer('2026-07-01T16:00:00Z');
    const slack = await receiver();
    const webhook = await receiver();
    const { prefix, cleanup } = testPrefix();
    const base = governedConfig(f, { dir, prefix, id: 'nozone', rows: 'c1,+12122345670' });
    const config: Config = { ...base, notify: notifySchema.parse(notify(slack, webhook)) };
    const d = await Daemon.start(config, { log: keptLog().log, now: () => Date.parse('2026-07-01T16:00:00Z') });
    const rt = d.runtimes.get('nozone')!;
    try {
      await waitFor(async () => (await campaignNumbers(f)).length === 1, 'the daemon\'s number in the open campaign');
      await addByHand(f, ['+80012345678']);
      expect(await d.enforceWindow(rt, 'test', true)).toBe('Paused');
      const held = await waitFor(() => webhook.delivered().map(verify).find((m) => m.event === 'campaign.held'), 'the held message', 30_000);
      expect(held).toMatchObject({ status: 'firing', sync: 'nozone', campaign: f.campaignId, reason: expect.stringMatching(/1 number whose callee's zone is unknown/),
        fix: expect.stringMatching(/^delete the numbers with no zone from the campaign/), docs: expect.stringMatching(/calling-windows\.md#holding-the-dialer-to-the-window$/) });
      expect(slackText(slack.got.find((r) => slackText(r).includes('held'))!)).toMatch(new RegExp(`^:red_circle: \\*Campaign ${f.campaignId} of sync "nozone" is held Paused by the daemon: it makes no calls\\*`));
      const number = (await campaignNumbers(f)).find((n) => n.number === '+80012345678')!;
      const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/numbers`, { method: 'DELETE', token: f.otherToken, json: [number.id] });
      await res.arrayBuffer();
      expect(await d.enforceWindow(rt, 'test', true)).toBe('Active');
      const released = await waitFor(() => webhook.delivered().map(verify).find((m) => m.event === 'campaign.held' && m.status === 'resolved'), 'the release message', 30_000);
      expect(released).toMatchObject({ campaign: f.campaignId, since: held.since });
      expect(webhook.delivered().map(verify).filter((m) => m.event === 'campaign.held').map((m) => m.status)).toEqual(['firing', 'resolved']);
    } finally {
      await d.close(2000);
      await slack.close();
      await webhook.close();
      await f.server.close();
      await cleanup();
    }
  }, 90_000);
});
