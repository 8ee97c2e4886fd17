// `./dev bench do-not-call [--sizes 1000,20000 --share 0.1 --changes 20]`: what marking contacts Do Not Call costs,
// at selections of different sizes. A HubSpot stand-in (a share of its contacts seeded with the do_not_call checkbox)
// → the daemon (in this process) → the reference server; per size it prints the full import (marked contacts held
// out), then `changes` contacts marked one at a time by webhook (dialer and HubSpot requests each, and the time from
// the webhook to the number gone from the campaign), then `changes` more marked at once and found by one scheduled
// incremental read. The requests per change must not grow with the size.
import { performance } from 'node:perf_hooks';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { DO_NOT_CALL_PROPERTY, startHubSpotStandIn, type HubSpotEvent } from '../crm-stand-ins/hubspot.ts';
import { Daemon } from '../daemon/app.ts';
import { syncStatus } from '../daemon/sync/status.ts';
import { campaignNumbers, daemonConfig, dialerFixture, numberCount, quietLog, testPrefix, waitFor } from '../test/support/daemon.ts';
import { countedDialer, freePort, pullAndSettle, settle } from '../test/support/sync-checks.ts';
import { describeMachine, loadAverage, machine, printFiguresHeading, readFlags, round, stats, tableRow } from './support.ts';

const FLAGS = {
  sizes: { def: '1000,20000', help: 'selection sizes (contacts), comma-separated' },
  share: { def: '0.1', help: 'share of the seeded contacts marked Do Not Call' },
  changes: { def: 20, help: 'contacts marked by webhook one at a time, then as many by one scheduled read' },
} as const;
const flags = readFlags(FLAGS, { command: 'do-not-call', example: 'BENCH_SIZES=500,5000', width: 8 });
const sizes = flags.sizes.split(',').map(Number);
const share = Number(flags.share);
if (sizes.some((n) => !Number.isInteger(n) || n < flags.changes * 3) || !(share > 0 && share < 1)) {
  throw new Error(`--sizes must be whole numbers of at least 3 × changes, --share between 0 and 1; got ${flags.sizes}, ${flags.share}`);
}
const loadAtStart = loadAverage();

interface Row {
  contacts: number; importSeconds: number; marked: number; numbers: number;
  webhook: { dialer: number[]; crm: number[]; ms: ReturnType<typeof stats> };
  read: { marked: number; dialer: number; crm: number; deleted: number };
}

async function measure(contacts: number): Promise<Row> {
  const redis = testPrefix();
  const f = await dialerFixture();
  const hs = await startHubSpotStandIn({ contacts, doNotCallShare: share, searchPerSecond: 1000, requestsPer10Seconds: 1_000_000 });
  const dialer = await countedDialer(f);
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const sync = {
    id: 'hs', campaignId: f.campaignId,
    mapping: { phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'firstname' }, doNotCall: DO_NOT_CALL_PROPERTY },
    source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, clientSecret: 'hs-client-secret', searchPerSecond: 50, requestsPer10Seconds: 100_000 },
  };
  const t0 = performance.now();
  const d = await Daemon.start(daemonConfig(f, redis.prefix, [sync], { dialer: dialer.dialer, http: { host: '127.0.0.1', port, publicUrl } }), { log: quietLog });
  try {
    const marked = hs.contacts().filter((c) => c.properties[DO_NOT_CALL_PROPERTY] === 'true').length;
    await waitFor(async () => (await numberCount(f)) === contacts - marked, `${contacts - marked} numbers`, 600_000);
    await settle(d, 600_000);
    const importSeconds = (performance.now() - t0) / 1000;
    const status = await syncStatus(d.runtimes.get('hs')!);
    if (status.doNotCall !== marked) throw new Error(`status counts ${status.doNotCall} numbers held by Do Not Call, the stand-in marked ${marked} contacts of one number each`);

    const unmarked = hs.contacts().filter((c) => c.properties[DO_NOT_CALL_PROPERTY] === 'false');
    const byPhone = new Map((await campaignNumbers(f)).map((n) => [n.number, n]));
    let eventId = 1;
    const event = (id: string): HubSpotEvent => ({
      eventId: eventId++, subscriptionId: 4002, portalId: 62515, appId: 1160452, occurredAt: Date.now(), subscriptionType: 'contact.propertyChange',
      attemptNumber: 0, objectId: Number(id), propertyName: DO_NOT_CALL_PROPERTY, propertyValue: 'true', changeSource: 'CRM_UI',
    });
    const webhook = { dialer: [] as number[], crm: [] as number[], ms: [] as number[] };
    for (const c of unmarked.slice(0, flags.changes)) {
      const phone = byPhone.get(parsePhoneNumberFromString(c.properties.phone ?? '', 'US')!.number)!;
      const [dialerBefore, crmBefore] = [dialer.proxy.exchanges.length, hs.stats.requests];
      hs.updateContact(c.id, { [DO_NOT_CALL_PROPERTY]: 'true' });
      const w0 = performance.now();
      const res = await hs.sendWebhook([event(c.id)], { url: `${publicUrl}/webhooks/hs` });
      if (res.status !== 200) throw new Error(`webhook answered ${res.status} ${res.body}`);
      await waitFor(() => numberGone(f, phone.number), 'the marked number gone', 60_000);
      webhook.ms.push(performance.now() - w0);
      await settle(d);
      webhook.dialer.push(dialer.proxy.exchanges.length - dialerBefore);
      webhook.crm.push(hs.stats.requests - crmBefore);
    }

    const later = unmarked.slice(flags.changes, 2 * flags.changes);
    const [dialerBefore, crmBefore, before] = [dialer.proxy.exchanges.length, hs.stats.requests, await numberCount(f)];
    for (const c of later) hs.updateContact(c.id, { [DO_NOT_CALL_PROPERTY]: 'true' });
    await pullAndSettle(d, 'hs');
    const read = { marked: later.length, dialer: dialer.proxy.exchanges.length - dialerBefore, crm: hs.stats.requests - crmBefore, deleted: before - (await numberCount(f)) };
    return { contacts, importSeconds, marked, numbers: contacts - marked, webhook: { dialer: webhook.dialer, crm: webhook.crm, ms: stats(webhook.ms) }, read };
  } finally {
    await d.close();
    await dialer.proxy.close();
    await hs.close();
    await f.server.close();
    await redis.cleanup();
  }
}

async function numberGone(f: Awaited<ReturnType<typeof dialerFixture>>, phone: string): Promise<boolean> {
  const res = await f.server.request(`/v1/accounts/${f.accountId}/campaigns/${f.campaignId}/numbers?filter=${encodeURIComponent(JSON.stringify({ number: phone }))}`, { token: f.token });
  return ((await res.json()) as unknown[]).length === 0;
}

const rows: Row[] = [];
for (const n of sizes) rows.push(await measure(n));

const line = printFiguresHeading(118, [`do-not-call: ${flags.changes} contacts marked by webhook, then ${flags.changes} by one scheduled read, per selection size`, describeMachine(machine(loadAtStart))]);
const range = (xs: number[]) => (Math.min(...xs) === Math.max(...xs) ? String(xs[0]) : `${Math.min(...xs)}–${Math.max(...xs)}`);
console.log(tableRow('contacts', rows.map((r) => r.contacts.toLocaleString('en')), 44, 18));
console.log(tableRow('import: seconds', rows.map((r) => String(round(r.importSeconds, 1))), 44, 18));
console.log(tableRow('marked at import, never added', rows.map((r) => r.marked.toLocaleString('en')), 44, 18));
console.log(tableRow('numbers added', rows.map((r) => r.numbers.toLocaleString('en')), 44, 18));
console.log(tableRow('webhook mark: dialer requests each', rows.map((r) => range(r.webhook.dialer)), 44, 18));
console.log(tableRow('webhook mark: HubSpot requests each', rows.map((r) => range(r.webhook.crm)), 44, 18));
console.log(tableRow('webhook → number gone: ms p50 / p90', rows.map((r) => `${round(r.webhook.ms.p50, 0)} / ${round(r.webhook.ms.p90, 0)}`), 44, 18));
console.log(tableRow(`one read, ${flags.changes} marks: numbers deleted`, rows.map((r) => String(r.read.deleted)), 44, 18));
console.log(tableRow(`one read, ${flags.changes} marks: dialer requests`, rows.map((r) => String(r.read.dialer)), 44, 18));
console.log(tableRow(`one read, ${flags.changes} marks: HubSpot requests`, rows.map((r) => String(r.read.crm)), 44, 18));
console.log(line);
process.exit(0);
