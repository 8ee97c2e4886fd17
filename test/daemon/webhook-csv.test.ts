// The sync daemon with a generic (Standard Webhooks) source and with a CSV file source, end to end against the reference server.
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signedHeaders } from '../support/standard-webhooks.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { Daemon } from '../../daemon/app.ts';
import { launchChromium } from '../support/browser.ts';
import { campaignNumbers, daemonConfig, dialerFixture, quietLog, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';
import { createCampaign } from '../support/server.ts';
import { campaignValues, counter, countedDaemon, expectRefusedForLength, held, pullAndSettle, queued, runErrors, runs, settle, type CountedDialer } from '../support/sync-checks.ts';

const MAPPING = { id: 'id', phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'first', City: 'city' } };
const OPS_TOKEN = 'csv-test-admin-token-0123456789';

const numbers = (f: DialerFixture) => campaignValues(f, ['FirstName', 'City']);

/** 555 line numbers without the country code, as people type them. */
const national = (e164: string) => `(${e164.slice(2, 5)}) ${e164.slice(5, 8)}-${e164.slice(8)}`;

describe('generic webhook source (Standard Webhooks)', () => {
  const redis = testPrefix();
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  let f: DialerFixture;
  let d: Daemon;
  let hook: string;

  const signed = (body: string, o: { id?: string; timestamp?: number; key?: string } = {}) => signedHeaders(body, o.key ?? secret, o);

  async function send(body: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
    const res = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  const deliver = async (payload: unknown) => {
    const body = JSON.stringify(payload);
    const res = await send(body, signed(body));
    expect(res).toMatchObject({ status: 200, body: { accepted: 1 } });
    await settle(d);
  };

  beforeAll(async () => {
    f = await dialerFixture();
    d = await Daemon.start(daemonConfig(f, redis.prefix, [{ id: 'wh', campaignId: f.campaignId, source: { type: 'webhook', secret }, mapping: MAPPING }]), { log: quietLog });
    hook = `${d.address}/webhooks/wh`;
    await settle(d);
  });
  afterAll(async () => {
    await d?.close();
    await f?.server.close();
    await redis.cleanup();
  });

  it('adds the contacts of a signed {contacts: [...]} body', async () => {
    await deliver({ contacts: [
      { id: 'c1', phone: validPhone(1), first: 'Ann', city: 'Boston' },
      { id: 'c2', phone: national(validPhone(2)), first: 'Ben', city: 'Chicago' },
      { id: 3, phone: validPhone(3), first: 'Cat', city: 'Denver' },
    ] });
    expect(await numbers(f)).toEqual({
      [validPhone(1)]: ['Ann', 'Boston'], [validPhone(2)]: ['Ben', 'Chicago'], [validPhone(3)]: ['Cat', 'Denver'],
    });
    const [run] = await runs(d, 'wh');
    expect(run).toMatchObject({ mode: 'plan', trigger: 'webhook', status: 'done', seen: 3, pushed: 3, rejected: 0 });
  });

  it('adds a single-contact body, and replaces a number when a later delivery changes its variables', async () => {
    await deliver({ id: 'c4', phone: validPhone(4), first: 'Dan', city: 'El Paso' });
    expect((await numbers(f))[validPhone(4)]).toEqual(['Dan', 'El Paso']);
    const before = (await campaignNumbers(f)).find((n) => n.number === validPhone(1))!;
    await deliver({ id: 'c1', phone: validPhone(1), first: 'Ann', city: 'Fresno' });
    const after = (await campaignNumbers(f)).find((n) => n.number === validPhone(1))!;
    expect(after.varValues).toEqual(['Ann', 'Fresno']);
    expect(after.id).not.toBe(before.id);
    expect(Object.keys(await numbers(f))).toHaveLength(4);
  });

  it('deletes the number of a contact delivered with deleted: true', async () => {
    await deliver({ id: 'c2', deleted: true });
    const now = await numbers(f);
    expect(now).not.toHaveProperty(validPhone(2));
    expect(Object.keys(now).sort()).toEqual([validPhone(1), validPhone(3), validPhone(4)].sort());
    expect(await held(d, 'wh', validPhone(2))).toBeNull();
    for (const r of await runs(d, 'wh')) expect(r.rejected).toBe(0);
  });

  it('refuses forged, expired, replayed and unsigned deliveries with 401 and queues nothing', async () => {
    const body = JSON.stringify({ id: 'c3', deleted: true });
    const original = signed(JSON.stringify({ id: 'c9', phone: validPhone(9), first: 'Ida', city: 'Gary' }));
    const originalBody = JSON.stringify({ id: 'c9', phone: validPhone(9), first: 'Ida', city: 'Gary' });
    expect((await send(originalBody, original)).status).toBe(200);
    await settle(d);
    const before = await queued(d, 'wh');

    const forged = await send(body, signed(body, { key: `whsec_${randomBytes(24).toString('base64')}` }));
    expect(forged.status).toBe(401);
    expect(forged.body.error).toMatch(/signature/);
    const expired = await send(body, signed(body, { timestamp: Math.floor(Date.now() / 1000) - 6 * 60 }));
    expect(expired.status).toBe(401);
    expect(expired.body.error).toMatch(/timestamp/);
    const future = await send(body, signed(body, { timestamp: Math.floor(Date.now() / 1000) + 6 * 60 }));
    expect(future.status).toBe(401);
    const replay = await send(originalBody, original);
    expect(replay.status).toBe(401);
    expect(replay.body.error).toMatch(/replay/);
    const { 'webhook-signature': _, ...unsignedHeaders } = signed(body);
    expect((await send(body, unsignedHeaders)).status).toBe(401);
    expect((await send(body, {})).status).toBe(401);
    // A signature over another body does not carry over.
    expect((await send(body, signed(originalBody))).status).toBe(401);

    expect(await queued(d, 'wh')).toEqual(before);
    expect((await numbers(f))[validPhone(3)]).toEqual(['Cat', 'Denver']);
    expect(await counter(d, 'webhooks', { sync: 'wh', result: 'refused' })).toBeGreaterThanOrEqual(6);
  });

  it('refuses every non-canonical spelling of a valid signature with 401, and a respelled replay too', async () => {
    const body = JSON.stringify({ id: 'c31', phone: validPhone(31), first: 'Kim', city: 'Lodi' });
    // A webhook-id whose signature has a character base64url spells differently (32 bytes always end in one '=').
    let headers = signed(body);
    while (!/[+/]/.test(headers['webhook-signature']!)) headers = signed(body);
    const sig = headers['webhook-signature']!.slice(3);
    expect(sig).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    const respelled = (value: string) => ({ ...headers, 'webhook-signature': value });
    await settle(d);
    const before = await queued(d, 'wh');
    const spellings: [string, string][] = [
      ['padding dropped', `v1,${sig.replace(/=+$/, '')}`],
      ['bytes after the padding', `v1,${sig}AA`],
      ['whitespace inside', `v1,${sig.slice(0, 8)} ${sig.slice(8)}`],
      ['base64url alphabet', `v1,${sig.replace(/\+/g, '-').replace(/\//g, '_')}`],
      ['another version tag', `v1a,${sig}`],
    ];
    for (const [name, value] of spellings) {
      const res = await send(body, respelled(value));
      expect({ name, status: res.status }).toEqual({ name, status: 401 });
    }
    expect(await queued(d, 'wh')).toEqual(before);
    // The spec lets a sender list several signatures (key rotation): one canonical match is accepted once ...
    const listed = respelled(`v1,${Buffer.alloc(32, 7).toString('base64')} v1,${sig}`);
    expect((await send(body, listed)).status).toBe(200);
    await settle(d);
    const after = await queued(d, 'wh');
    // ... and the same request is a replay however its header is spelled: as sent, as sent first, or reordered.
    for (const value of [listed['webhook-signature'], `v1,${sig}`, `v1,${sig} v1,bogus`, `v1, v1,${sig}`]) {
      const res = await send(body, respelled(value));
      expect({ value, status: res.status }).toEqual({ value, status: 401 });
      expect(res.body.error).toMatch(/replay/);
    }
    expect(await queued(d, 'wh')).toEqual(after);
  });

  it('answers 400 naming what is wrong for bad JSON and a contact without the id field, and queues nothing', async () => {
    await settle(d);
    const before = await queued(d, 'wh');
    const cases: [string, RegExp][] = [
      ['{"contacts": [', /JSON/],
      [JSON.stringify({ phone: validPhone(10), first: 'No', city: 'Id' }), /"id"/],
      [JSON.stringify({ contacts: [{ id: 'ok', phone: validPhone(11) }, { phone: validPhone(12) }] }), /contacts\[1\].*"id"/],
      [JSON.stringify({ id: '', phone: validPhone(13) }), /"id"/],
      [JSON.stringify([{ id: 'x' }]), /contact/],
    ];
    for (const [body, reason] of cases) {
      const res = await send(body, signed(body));
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body.error).toMatch(reason);
    }
    expect(await queued(d, 'wh')).toEqual(before);
  });

  it('answers 400 to an empty contacts list (the body must carry 1 to 10,000 contacts), and queues nothing', async () => {
    await settle(d);
    const before = await queued(d, 'wh');
    const body = JSON.stringify({ contacts: [] });
    const res = await send(body, signed(body));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/contacts/);
    expect(await queued(d, 'wh')).toEqual(before);
  });

  it('acknowledges a webhook-id it has already seen as a duplicate and queues nothing', async () => {
    const body = JSON.stringify({ id: 'c20', phone: validPhone(20), first: 'Jo', city: 'Hilo' });
    const id = `msg_dup_${randomBytes(4).toString('hex')}`;
    expect((await send(body, signed(body, { id, timestamp: Math.floor(Date.now() / 1000) - 10 }))).status).toBe(200);
    await settle(d);
    const before = await queued(d, 'wh');
    const again = await send(body, signed(body, { id }));
    expect(again).toMatchObject({ status: 200, body: { duplicate: true } });
    expect(await queued(d, 'wh')).toEqual(before);
  });

  it('records a delivered contact with an invalid number as an error of its run', async () => {
    await deliver({ contacts: [{ id: 'bad', phone: '12345', first: 'Bad', city: 'X' }, { id: 'good', phone: validPhone(30), first: 'Good', city: 'Y' }] });
    const [run] = await runs(d, 'wh');
    expect(run).toMatchObject({ status: 'done', invalid: 1 });
    expect(await runErrors(d, 'wh', run!.id)).toEqual([expect.objectContaining({ contactId: 'bad', field: 'phone', code: 'invalid_number' })]);
    expect((await numbers(f))[validPhone(30)]).toEqual(['Good', 'Y']);
  });
});

describe("the dialer's events receiver (/webhooks/<sync>/events)", () => {
  const redis = testPrefix();
  const eventsSecret = `whsec_${randomBytes(24).toString('base64')}`;
  let dir: string;
  let f: DialerFixture;
  let d: Daemon;

  beforeAll(async () => {
    f = await dialerFixture();
    dir = await mkdtemp(join(tmpdir(), 'cds-events-'));
    // No workers: what is tested is the receiver's answer and count, not the mirror run an event queues.
    d = await Daemon.start(daemonConfig(f, redis.prefix, [{ id: 'wh', campaignId: f.campaignId, source: { type: 'webhook', secret: eventsSecret }, mapping: MAPPING,
      mirror: { every: '1h', sink: { type: 'file', path: join(dir, 'activities.jsonl') }, eventsSecret } }]), { log: quietLog, workers: false });
  });
  afterAll(async () => {
    await d?.close();
    await f?.server.close();
    await redis.cleanup();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  function signed(body: string): Record<string, string> {
    const id = `evt_${randomBytes(6).toString('hex')}`;
    const ts = String(Math.floor(Date.now() / 1000));
    const sig = createHmac('sha256', Buffer.from(eventsSecret.slice('whsec_'.length), 'base64')).update(`${id}.${ts}.${body}`).digest('base64');
    return { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${sig}` };
  }

  it('answers the identical signed request again with 401 (a replay), and counts it accepted once', async () => {
    const events = `${d.address}/webhooks/wh/events`;
    const post = async (body: string, headers: Record<string, string>) => {
      const res = await fetch(events, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      return { status: res.status, body: await res.json() as Record<string, unknown> };
    };
    const body = JSON.stringify({ type: 'call.finished', data: { campaignId: f.campaignId } });
    const headers = signed(body);
    const accepted = await counter(d, 'webhooks', { sync: 'wh', result: 'accepted' });
    expect(await post(body, headers)).toEqual({ status: 200, body: { accepted: 1 } });
    const replay = await post(body, headers);
    expect(replay.status).toBe(401);
    expect(replay.body.error).toMatch(/replay/);
    // Respelled with an extra entry, it is still the same request.
    expect((await post(body, { ...headers, 'webhook-signature': `v1,bogus ${headers['webhook-signature']}` })).status).toBe(401);
    expect(await counter(d, 'webhooks', { sync: 'wh', result: 'accepted' })).toBe(accepted + 1);
    expect(await counter(d, 'webhooks', { sync: 'wh', result: 'replayed' })).toBe(2);
    // A new delivery (its own id) is accepted.
    expect((await post(body, signed(body))).status).toBe(200);
  });
});

describe('CSV file source', () => {
  const redis = testPrefix();
  let dir: string;
  let file: string;
  let f: DialerFixture;
  let d: Daemon;

  const rows = {
    header: 'id,phone,first,city',
    c1: `c1,${validPhone(1)},Ann,Boston`,
    c2: `c2,${national(validPhone(2))},Ben,Chicago`,
    c3bad: 'c3,12345,Cat,Denver',
    emptyId: `,${validPhone(4)},Dan,El Paso`,
    c5extra: `c5,${validPhone(5)},Eve,Fresno,an extra column`,
    c6: `c6,${validPhone(6).slice(2)},Fay,Gary`,
    c7: `c7,"${national(validPhone(7))}","Gil, Jr.",Hilo`,
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'daemon-csv-'));
    file = join(dir, 'contacts.csv');
    await writeFile(file, [rows.header, rows.c1, rows.c2, rows.c3bad, rows.emptyId, rows.c5extra, rows.c6, rows.c7].join('\n') + '\n');
    f = await dialerFixture();
    d = await Daemon.start(daemonConfig(f, redis.prefix, [{ id: 'csv', campaignId: f.campaignId, source: { type: 'csv', path: file }, mapping: MAPPING }]), { log: quietLog });
    await settle(d);
  });
  afterAll(async () => {
    await d?.close();
    await f?.server.close();
    await redis.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it('pushes the valid rows and reports the bad ones by line', async () => {
    expect(await numbers(f)).toEqual({
      [validPhone(1)]: ['Ann', 'Boston'], [validPhone(2)]: ['Ben', 'Chicago'],
      [validPhone(6)]: ['Fay', 'Gary'], [validPhone(7)]: ['Gil, Jr.', 'Hilo'],
    });
    const full = (await runs(d, 'csv')).at(-1)!;
    expect(full).toMatchObject({ mode: 'full', status: 'done', seen: 5, invalid: 3, pushed: 4, rejected: 0 });
    const errors = await runErrors(d, 'csv', full.id);
    expect(errors).toHaveLength(3);
    // The header is line 1.
    expect(errors).toContainEqual(expect.objectContaining({ line: 4, contactId: 'c3', field: 'phone', code: 'invalid_number' }));
    expect(errors).toContainEqual(expect.objectContaining({ line: 5, reason: expect.stringMatching(/empty "id"/) }));
    // Its fields cannot be matched to the columns: the row is refused, not guessed at.
    expect(errors).toContainEqual(expect.objectContaining({ line: 6, reason: expect.stringMatching(/^the row has 5 fields and the header 4: this row is refused/) }));
  });

  it('a later run deletes the numbers of rows removed from the file and replaces changed ones', async () => {
    await writeFile(file, [rows.header, rows.c2.replace('Chicago', 'Dallas'), rows.c3bad, rows.c5extra, rows.c7].join('\n') + '\n');
    const run = await pullAndSettle(d, 'csv');
    expect(run).toMatchObject({ mode: 'full', status: 'done', seen: 3, left: 2, rejected: 0 });
    expect(await numbers(f)).toEqual({ [validPhone(2)]: ['Ben', 'Dallas'], [validPhone(7)]: ['Gil, Jr.', 'Hilo'] });
    expect(await held(d, 'csv', validPhone(1))).toBeNull();
    expect(await held(d, 'csv', validPhone(6))).toBeNull();
  });
});

describe('CSV file source: a column the mapping names is missing', () => {
  const redis = testPrefix();
  let dir: string;
  let f: DialerFixture;
  let d: Daemon;
  let secondId: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'daemon-csv-'));
    await writeFile(join(dir, 'no-phone.csv'), `id,mobile,first,city\nc1,${validPhone(1)},Ann,Boston\n`);
    await writeFile(join(dir, 'no-city.csv'), `id,phone,first\nc1,${validPhone(1)},Ann\n`);
    f = await dialerFixture();
    secondId = (await createCampaign(f.server, f.accountId, { name: 'Other', type: 'Dynamic', state: 'Active' })).id;
    d = await Daemon.start(daemonConfig(f, redis.prefix, [
      { id: 'no-phone', campaignId: f.campaignId, source: { type: 'csv', path: join(dir, 'no-phone.csv') }, mapping: MAPPING },
      { id: 'no-city', campaignId: secondId, source: { type: 'csv', path: join(dir, 'no-city.csv') }, mapping: MAPPING },
    ]), { log: quietLog });
  });
  afterAll(async () => {
    await d?.close();
    await f?.server.close();
    await redis.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  const finishedRun = (syncId: string) => waitFor(async () => (await runs(d, syncId)).find((r) => r.status !== 'running'), `a finished run of ${syncId}`, 15_000);

  it('fails the run with an error naming the missing phone column, pushing nothing', async () => {
    const run = await finishedRun('no-phone');
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/column "phone"/);
    expect(await campaignNumbers(f)).toEqual([]);
  });

  it('fails the run with an error naming a missing variable column, pushing nothing', async () => {
    const run = await finishedRun('no-city');
    expect({ status: run.status, error: run.error }).toEqual({ status: 'failed', error: expect.stringMatching(/column "city"/) });
    expect(await campaignNumbers({ ...f, campaignId: secondId })).toEqual([]);
  });
});

describe('CSV file source: one row over the API\'s limits among 1,000', () => {
  const redis = testPrefix();
  let dir: string;
  let file: string;
  let f: DialerFixture;
  let dialer: CountedDialer;
  let d: Daemon;
  let close: () => Promise<void>;
  // Row 500 (line 502: the header is line 1) has a City of 1,100 characters; the dialer takes at most 1,000.
  const BAD = 500;
  const row = (i: number, city = `City ${i}`) => `c${i},${validPhone(i)},First${i},${city}`;
  const write = (badCity: string) => writeFile(file, ['id,phone,first,city', ...Array.from({ length: 1000 }, (_, i) => (i === BAD ? row(i, badCity) : row(i)))].join('\n') + '\n');
  const good = (except: number | null) => Object.fromEntries(Array.from({ length: 1000 }, (_, i) => i).filter((i) => i !== except).map((i) => [validPhone(i), [`First${i}`, `City ${i}`]]));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'daemon-csv-'));
    file = join(dir, 'contacts.csv');
    await write('C'.repeat(1100));
    ({ f, dialer, d, close } = await countedDaemon(redis.prefix, (f) => [{ id: 'csv', campaignId: f.campaignId, source: { type: 'csv', path: file }, mapping: MAPPING }],
      (dialer) => ({ dialer: dialer.dialer, http: { host: '127.0.0.1', port: 0, adminToken: OPS_TOKEN } })));
  });
  afterAll(async () => {
    await close?.();
    await redis.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it('adds the 999 good rows in one request and refuses the bad one alone, its reason in words on /ops', async () => {
    expect(await numbers(f)).toEqual(good(BAD));
    const [run] = await runs(d, 'csv');
    expect(run).toMatchObject({ mode: 'full', status: 'done', seen: 1000, invalid: 1, planned: 999, pushed: 999, rejected: 0 });
    await expectRefusedForLength(d, 'csv', run!, { contactId: `c${BAD}`, line: BAD + 2, variable: 'City', field: 'city', length: 1100 });
    expect(dialer.adds()).toBe(1);
    // The operations page's API shows the run's record error with its reason.
    const ops = await fetch(`${d.address}/ops/api/syncs`, { headers: { authorization: `Basic ${Buffer.from(`ops:${OPS_TOKEN}`).toString('base64')}` } });
    const csv = (await ops.json()).syncs.find((s: { sync: string }) => s.sync === 'csv');
    expect(csv).toMatchObject({ parked: 0, parkedRecords: [] });
    expect(csv.recordErrors).toEqual([expect.objectContaining({ run: run!.id, contactId: `c${BAD}`, line: BAD + 2, field: 'city', code: 'bad_record',
      reason: expect.stringMatching(/^variable City \(field city\) is 1,100 characters long; the dialer takes at most 1,000/) })]);
  });

  it('the operations page shows the refused row with its reason (Chromium)', async () => {
    const browser = await launchChromium();
    try {
      const context = await browser.newContext({ httpCredentials: { username: 'ops', password: OPS_TOKEN } });
      const page = await context.newPage();
      expect((await page.goto(`${d.address}/ops`))?.status()).toBe(200);
      const row = page.locator('[data-sync="csv"] tr[data-record-error]');
      await row.waitFor({ timeout: 10_000 });
      expect(await row.count()).toBe(1);
      expect(await row.locator('[data-field="contact"]').textContent()).toBe(`c${BAD}`);
      expect(await row.locator('[data-field="reason"]').textContent()).toMatch(/^variable City \(field city\) is 1,100 characters long/);
      expect(await page.locator('[data-sync="csv"] [data-field="parked"]').textContent()).toBe('0');
    } finally {
      await browser.close();
    }
  });

  it('the row shortened, the next run adds its number once, in one more request', async () => {
    await write(`City ${BAD}`);
    const run = await pullAndSettle(d, 'csv');
    expect(run).toMatchObject({ mode: 'full', status: 'done', seen: 1000, invalid: 0, planned: 1, pushed: 1, rejected: 0 });
    expect(await runErrors(d, 'csv', run.id)).toEqual([]);
    expect(await numbers(f)).toEqual(good(null));
    expect(dialer.adds()).toBe(2);
  });
});
