// POST /dnc/company over real HTTP against a running daemon (real Redis, the reference server as its dialer): a signed
// add recorded with who and why, a bad signature and a replay refused, a webhook-id handled once, a bad number refused
// alone, a body that is not JSON or names no number refused by name, the body's size limit, and the endpoint off.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { signedHeaders } from '../support/standard-webhooks.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Daemon } from '../../daemon/app.ts';
import { OwnList } from '../../daemon/dnc/own-list.ts';
import { DncKeys } from '../../daemon/state/keys.ts';
import { campaignNumbers, daemonConfig, dialerFixture, quietLog, REDIS_URL, testPrefix, waitFor, type DialerFixture } from '../support/daemon.ts';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
const sourceSecret = `whsec_${randomBytes(24).toString('base64')}`;
const SYNCS = [{ id: 'wh', campaignId: '', source: { type: 'webhook', secret: sourceSecret }, mapping: { id: 'id', phone: 'phone', defaultCountry: 'US' } }];

const signed = (body: string, o: { id?: string; timestamp?: number; key?: string } = {}) => signedHeaders(body, o.key ?? secret, o);

describe('POST /dnc/company', () => {
  const redisPrefix = testPrefix();
  const offPrefix = testPrefix();
  const redis = new Redis(REDIS_URL);
  let f: DialerFixture;
  let d: Daemon;
  let off: Daemon;
  let own: OwnList;

  async function post(body: string, headers: Record<string, string>, daemon = d): Promise<{ status: number; body: any }> {
    const res = await fetch(`${daemon.address}/dnc/company`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }
  const send = (payload: unknown) => {
    const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
    return post(body, signed(body));
  };

  beforeAll(async () => {
    f = await dialerFixture();
    const syncs = SYNCS.map((s) => ({ ...s, campaignId: f.campaignId }));
    d = await Daemon.start(daemonConfig(f, redisPrefix.prefix, syncs, { doNotCallEndpoint: { secret } }), { log: quietLog });
    off = await Daemon.start(daemonConfig(f, offPrefix.prefix, syncs), { log: quietLog });
    own = new OwnList(redis, new DncKeys(redisPrefix.prefix), 'company');
  });
  afterAll(async () => {
    await d?.close();
    await off?.close();
    await f?.server.close();
    await redisPrefix.cleanup();
    await offPrefix.cleanup();
    redis.disconnect();
  });

  it('adds signed numbers to the company list, recorded as the endpoint\'s with who and why; a number on it already is counted so', async () => {
    const res = await send({ numbers: ['+12015550123', '(201) 555-0124'], reason: 'opted out on the web form', by: 'web form' });
    expect(res).toEqual({ status: 200, body: { added: 2, already: 0, refused: [] } });
    const [a, b, c] = await own.lookup(['+12015550123', '+12015550124', '+12015550125']);
    expect(a).toMatchObject({ status: 'listed', entry: { by: 'endpoint:web form', reason: 'opted out on the web form' } });
    expect(b).toMatchObject({ status: 'listed', entry: { by: 'endpoint:web form' } });
    expect(c!.status).toBe('not-listed');

    // One number, no `by`, a national number of another country.
    expect(await send({ number: '020 7946 0958', country: 'GB' })).toEqual({ status: 200, body: { added: 1, already: 0, refused: [] } });
    expect((await own.lookup(['+442079460958']))[0]).toMatchObject({ status: 'listed', entry: { by: 'endpoint' } });
    expect(await send({ numbers: ['+12015550123', '2015550123'] })).toEqual({ status: 200, body: { added: 0, already: 1, refused: [] } });
  });

  it('refuses a request whose signature does not match, or is missing, and adds nothing', async () => {
    const body = JSON.stringify({ number: '+12015550140' });
    const wrongKey = await post(body, signed(body, { key: `whsec_${randomBytes(24).toString('base64')}` }));
    expect(wrongKey).toEqual({ status: 401, body: { error: 'no webhook-signature matches (v1,<standard base64 with padding> of the HMAC expected)' } });
    // Signed for another body.
    const other = await post(body, signed(JSON.stringify({ number: '+12015550141' })));
    expect(other.status).toBe(401);
    expect(await post(body, {})).toEqual({ status: 401, body: { error: 'missing webhook-id, webhook-timestamp or webhook-signature' } });
    const old = await post(body, signed(body, { timestamp: Math.floor(Date.now() / 1000) - 3600 }));
    expect(old).toEqual({ status: 401, body: { error: 'webhook-timestamp is more than 5 minutes away from now' } });
    expect((await own.lookup(['+12015550140']))[0]!.status).toBe('not-listed');
  });

  it('refuses a replayed request, and does nothing again for a webhook-id already handled', async () => {
    const body = JSON.stringify({ number: '+12015550150' });
    const headers = signed(body, { id: 'msg_replay' });
    expect(await post(body, headers)).toEqual({ status: 200, body: { added: 1, already: 0, refused: [] } });
    expect(await post(body, headers)).toEqual({ status: 401, body: { error: 'replayed: this exact signed request was already received' } });

    // The sender's retry of the same id, signed anew (another timestamp): handled once already.
    const retry = JSON.stringify({ number: '+12015550151' });
    expect(await post(retry, signed(retry, { id: 'msg_replay', timestamp: Math.floor(Date.now() / 1000) - 60 }))).toEqual({
      status: 200, body: { added: 0, already: 0, refused: [], duplicate: true },
    });
    expect((await own.lookup(['+12015550151']))[0]!.status).toBe('not-listed');
    expect((await own.log()).filter((l) => l.number === '+12015550150')).toHaveLength(1);
  });

  it('refuses a number that cannot be read alone, adding the others', async () => {
    const res = await send({ numbers: ['+12015550160', 'call me maybe', 2015550161, '12', '+12015550162'] });
    expect(res).toEqual({ status: 200, body: { added: 2, already: 0, refused: [
      { number: 'call me maybe', reason: 'not a phone number' },
      { number: '2015550161', reason: 'not a text: give the number as a string' },
      { number: '12', reason: 'not a valid number for US' },
    ] } });
    expect((await own.lookup(['+12015550160', '+12015550162'])).map((a) => a.status)).toEqual(['listed', 'listed']);
    // Every number refused: still the sender's answer, not an error.
    expect(await send({ number: 'nope' })).toEqual({ status: 200, body: { added: 0, already: 0, refused: [{ number: 'nope', reason: 'not a phone number' }] } });
  });

  it('answers 400 naming the problem for a body that is not JSON or names no number, and 413 above its size limit', async () => {
    const shape = 'send {"numbers": ["+12015550123", ...]} or {"number": "+12015550123"}, with "reason", "by" and "country" (of numbers without their country code; default US) if wanted';
    expect(await send('number=+12015550170')).toEqual({ status: 400, body: { error: `the body is not JSON: ${shape}` } });
    expect(await send({})).toEqual({ status: 400, body: { error: `the body names no number: ${shape}` } });
    expect(await send({ numbers: [] })).toEqual({ status: 400, body: { error: `numbers: the list is empty: ${shape}` } });
    expect(await send({ numbers: '+12015550170' })).toEqual({ status: 400, body: { error: `numbers: a list of phone numbers (texts): ${shape}` } });
    expect(await send({ phone: '+12015550170' })).toEqual({ status: 400, body: { error: `unknown key "phone": ${shape}` } });
    expect(await send({ number: '+12015550170', numbers: ['+12015550171'] })).toEqual({ status: 400, body: { error: `both "numbers" and "number": ${shape}` } });
    expect(await send({ number: '2015550170', country: 'USA' })).toEqual({ status: 400, body: { error: 'country: "USA" is not a two-letter country code (such as US)' } });
    expect(await send([1, 2])).toMatchObject({ status: 400 });
    const many = Array.from({ length: 10_001 }, (_, i) => `+1201555${String(i % 10_000).padStart(4, '0')}`);
    expect(await send({ numbers: many })).toEqual({ status: 400, body: { error: `numbers: at most 10,000 a request: ${shape}` } });
    const big = JSON.stringify({ numbers: Array.from({ length: 80_000 }, (_, i) => `+1201555${String(i % 10_000).padStart(4, '0')}`) });
    expect(big.length).toBeGreaterThan(1024 * 1024);
    expect(await send(big)).toEqual({ status: 413, body: { error: 'the body is larger than 1,048,576 bytes (1 MiB): send at most 10,000 numbers a request' } });
    expect((await own.lookup(['+12015550170', '+12015550171'])).map((a) => a.status)).toEqual(['not-listed', 'not-listed']);
  });

  it('takes a number the campaign holds out of it at once', async () => {
    const phone = '+12015550190';
    const contact = JSON.stringify({ id: 'held', phone });
    const res = await fetch(`${d.address}/webhooks/wh`, { method: 'POST', headers: { 'content-type': 'application/json', ...signed(contact, { key: sourceSecret }) }, body: contact });
    expect(res.status).toBe(200);
    await waitFor(async () => (await campaignNumbers(f)).some((n) => n.number === phone), 'the contact\'s number in the campaign');
    expect(await send({ number: phone, reason: 'opted out on the IVR' })).toMatchObject({ status: 200, body: { added: 1 } });
    await waitFor(async () => !(await campaignNumbers(f)).some((n) => n.number === phone), 'the number out of the campaign');
    expect(await redis.hget(d.runtimes.get('wh')!.state.keys.dncKeptOut, phone)).toBe('company');
  });

  it('answers 404 with a sentence when doNotCallEndpoint is not configured', async () => {
    const body = JSON.stringify({ number: '+12015550180' });
    expect(await post(body, signed(body), off)).toEqual({ status: 404, body: {
      error: 'POST /dnc/company is off: set doNotCallEndpoint.secret in the daemon\'s configuration to take numbers for the company\'s Do Not Call list',
    } });
    expect((await new OwnList(redis, new DncKeys(offPrefix.prefix), 'company').lookup(['+12015550180']))[0]!.status).toBe('not-listed');
  });
});
