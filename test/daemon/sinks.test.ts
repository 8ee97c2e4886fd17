// The generic webhook sink (signed with the Standard Webhooks headers, the attempt's key as webhook-id, a failed
// delivery retried whole), the outcome rules (defaults a sales team expects; configured rules first match wins), and
// one bad record among good ones in a write to each sink: the good ones written once, the bad one refused alone with
// the CRM's reason, in a bounded number of requests.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHubSpotStandIn, type BatchFailureAnswer, type HubSpotStandIn } from '../../crm-stand-ins/hubspot.ts';
import { startPipedriveStandIn, type PipedriveStandIn } from '../../crm-stand-ins/pipedrive.ts';
import { startSalesforceStandIn, type SalesforceStandIn } from '../../crm-stand-ins/salesforce.ts';
import { parseConfig } from '../../daemon/config.ts';
import { crmOf } from '../../daemon/crm/registry.ts';
import { Metrics } from '../../daemon/metrics.ts';
import { DEFAULT_RULES, outcomeOf, ruleSchema, type CallDetail } from '../../daemon/outcomes.ts';
import { ActivityIndex, describesCall, describeRecord, writeIsolating, type Activity, type Sink, type WriteResult } from '../../daemon/sinks/sink.ts';
import { DaemonKeys } from '../../daemon/state/keys.ts';
import { WebhookSink } from '../../daemon/sinks/webhook.ts';
import { verifyStandardWebhook } from '../../daemon/signing.ts';
import { quietLog, REDIS_URL, testPrefix } from '../support/daemon.ts';
import { proxied, salesforceSync } from '../support/salesforce.ts';

const SECRET = `whsec_${Buffer.from('a sink secret of enough bytes').toString('base64')}`;

function call(fields: Partial<CallDetail>): CallDetail {
  return {
    number: '+12125550100', attempt: 1, startedAtLocal: '2026-11-02T10:00:00', answeredAtLocal: null, endedAtLocal: '2026-11-02T10:00:30',
    ringResult: 'NoAnswer', answerType: null, sipResponseCode: 480, endType: null, queueId: null, outcome: 'FailureWithRetryPending', ...fields,
  };
}

function activity(key: string, contactId = '42', i = 0): Activity {
  const startedAt = Date.parse('2026-11-02T15:00:00Z') + i * 60_000;
  const number = `+1212555${String(100 + i).padStart(4, '0')}`;
  return { key, record: call({ number }), outcome: 'no_answer', contactId, startedAt, answeredAt: null, endedAt: startedAt + 30_000, durationMs: 0, campaignId: 'c-1' };
}

describe('the webhook sink', () => {
  const received: { headers: IncomingMessage['headers']; body: string }[] = [];
  let failNext = 0;
  let url = '';
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(failNext-- > 0 ? 503 : 204).end();
    });
  });
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/calls`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('signs each activity so the receiver can verify it, with the attempt key as webhook-id', async () => {
    const sink = new WebhookSink(url, SECRET);
    const results = await sink.write([activity('k1'), activity('k2')]);
    expect(results).toEqual([{ key: 'k1', ok: true, id: 'k1' }, { key: 'k2', ok: true, id: 'k2' }]);
    for (const [i, r] of received.entries()) {
      const verdict = verifyStandardWebhook(SECRET, { method: 'POST', url, headers: r.headers, rawBody: Buffer.from(r.body), now: Date.now() });
      expect(verdict).toMatchObject({ ok: true, id: `k${i + 1}` });
      expect(JSON.parse(r.body)).toMatchObject({ type: 'call.attempt', key: `k${i + 1}`, contactId: '42', outcome: 'no_answer', record: { number: '+12125550100' } });
    }
    // Signed with another secret, it would not verify.
    const other = verifyStandardWebhook(`whsec_${Buffer.from('another').toString('base64')}`, { method: 'POST', url, headers: received[0]!.headers, rawBody: Buffer.from(received[0]!.body), now: Date.now() });
    expect(other.ok).toBe(false);
  });

  it('throws when the receiver fails, so the write is tried again whole (the receiver drops ids it has seen)', async () => {
    failNext = 1;
    await expect(new WebhookSink(url, SECRET).write([activity('k3')])).rejects.toThrow(/503/);
    expect((await new WebhookSink(url, SECRET).findWritten()).ids.size).toBe(0);
  });
});

describe("a look-up's index of the activities it asks about", () => {
  // The same number's first call and its call after it was added again: the same attempt's key.
  const earlier = { ...activity('k-earlier'), record: call({ startedAtLocal: '2026-11-02T10:00:00' }) };
  const later = { ...activity('k-later'), legacyKey: 'attempt-1', record: call({ startedAtLocal: '2026-11-02T11:00:00' }) };
  const index = new ActivityIndex([later]);

  it('finds an activity by its own key, and by its attempt key only where the CRM record is the same call', () => {
    expect(index.find('k-later', () => false)).toBe(later);
    // A CRM record carrying the attempt's key, written for the earlier call (its body names that call's start).
    const earlierBody = describeRecord({ ...earlier, key: 'attempt-1' });
    expect(index.find('attempt-1', (a) => describesCall(earlierBody, a))).toBeUndefined();
    // The later call written under the attempt's key (by a version before per-call keys): found.
    const laterBody = describeRecord({ ...later, key: 'attempt-1' });
    expect(index.find('attempt-1', (a) => describesCall(laterBody, a))).toBe(later);
    expect(index.find('k-earlier', () => true)).toBeUndefined();
    expect(index.keys().sort()).toEqual(['attempt-1', 'k-later']);
  });
});

describe('outcome rules', () => {
  it('default to what a sales team expects', () => {
    const cases: [Partial<CallDetail>, string][] = [
      [{ ringResult: 'Answer', answerType: 'Human', sipResponseCode: 200 }, 'connected'],
      [{ ringResult: 'Answer', answerType: 'Unknown', sipResponseCode: 200 }, 'connected'],
      [{ ringResult: 'Answer', answerType: 'Machine', sipResponseCode: 200 }, 'left_voicemail'],
      [{ ringResult: 'Busy', sipResponseCode: 600 }, 'busy'],
      [{ ringResult: 'CallError', sipResponseCode: 486 }, 'busy'],
      [{ ringResult: 'NoAnswer', sipResponseCode: 480 }, 'no_answer'],
      [{ ringResult: 'CallError', sipResponseCode: 404 }, 'wrong_number'],
      [{ ringResult: 'CallError', sipResponseCode: 484 }, 'wrong_number'],
      [{ ringResult: 'CallError', sipResponseCode: 604 }, 'wrong_number'],
      [{ ringResult: 'CallError', sipResponseCode: 503 }, 'failed'],
    ];
    for (const [fields, expected] of cases) expect([fields, outcomeOf(call(fields), DEFAULT_RULES)]).toEqual([fields, expected]);
  });

  it('can be configured: the first matching rule wins, and a value may be a list', () => {
    const rules = [
      { when: { ringResult: 'Answer', endType: ['HangUp', 'ExecutionError'] }, then: 'failed' },
      { when: { outcome: 'Success' }, then: 'connected' },
      { when: {}, then: 'no_answer' },
    ].map((r) => ruleSchema.parse(r));
    expect(outcomeOf(call({ ringResult: 'Answer', endType: 'HangUp', outcome: 'Success' }), rules)).toBe('failed');
    expect(outcomeOf(call({ ringResult: 'Answer', endType: 'CallflowComplete', outcome: 'Success' }), rules)).toBe('connected');
    expect(outcomeOf(call({ ringResult: 'Busy' }), rules)).toBe('no_answer');
    expect(ruleSchema.safeParse({ when: { ringResult: 'Ringing' }, then: 'connected' }).success).toBe(false);
  });
});

/** `n` activities on these contacts, the i-th calling +1 212 555 0100+i. */
function activities(n: number, contactOf: (i: number) => string): Activity[] {
  return Array.from({ length: n }, (_, i) => activity(`key${String(i).padStart(4, '0')}`, contactOf(i), i));
}

/** Writes through writeIsolating, as the mirror does, and gathers what each record came to. */
async function isolate(sink: Sink, batch: Activity[]): Promise<{ written: string[]; refused: { key: string; reason: string }[] }> {
  const results: WriteResult[] = [];
  await writeIsolating(sink, batch, async (r) => { results.push(...r); });
  return {
    written: results.flatMap((r) => (r.ok ? [r.key] : [])),
    refused: results.flatMap((r) => (r.ok ? [] : [{ key: r.key, reason: r.reason }])),
  };
}

describe('one record a CRM refuses among good ones: refused alone, the rest of its batch written once', () => {
  const { prefix, cleanup } = testPrefix();
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  afterAll(async () => { await cleanup(); redis.disconnect(); });

  /** The sink the daemon builds for this sync. */
  function sinkOf(sync: Record<string, unknown>): Sink {
    const config = parseConfig({
      redis: { url: REDIS_URL, prefix }, dialer: { baseUrl: 'http://127.0.0.1:9', accountId: 'a-1', apiToken: 'unused' },
      syncs: [{ id: 's', campaignId: 'c-1', mapping: { phone: 'phone' }, mirror: { every: '1h' }, ...sync }], log: { level: 'error' },
    }, 'test config', {});
    const s = config.syncs[0]!;
    return crmOf(s.source.type)!.sink(s, { redis, keys: new DaemonKeys(prefix), log: quietLog, metrics: new Metrics() });
  }

  describe('HubSpot (batch create of 100)', () => {
    let hs: HubSpotStandIn;
    let sink: Sink;
    beforeAll(async () => {
      hs = await startHubSpotStandIn({ contacts: 100, requestsPer10Seconds: 1000 });
      sink = sinkOf({ source: { type: 'hubspot', baseUrl: hs.url, accessToken: hs.token, requestsPer10Seconds: 1000 } });
    });
    afterAll(() => hs?.close());

    /** 100 calls, the 38th refused as HubSpot answers it: returns what each came to and the batch creates sent. */
    async function oneBad(answer: BatchFailureAnswer, round: number) {
      const ids = hs.contacts().map((c) => c.id);
      const batch = activities(100, (i) => ids[i]!).map((a) => ({ ...a, key: `r${round}${a.key}` }));
      const bad = batch[37]!;
      hs.failCalls((p) => (p.hs_call_to_number === bad.record.number ? 'hs_call_body: refused by a validation rule of this portal' : false), answer);
      const before = hs.calls().length;
      const sent = hs.stats.byRoute['POST calls/batch/create'] ?? 0;
      const outcome = await isolate(sink, batch);
      hs.failCalls(null);
      const created = hs.calls().slice(before).map((c) => /\[cds:([^\]]+)\]/.exec(String(c.properties.hs_call_title))![1]);
      return { batch, bad, outcome, created, requests: (hs.stats.byRoute['POST calls/batch/create'] ?? 0) - sent };
    }

    function expectOneRefused({ batch, bad, outcome, created }: Awaited<ReturnType<typeof oneBad>>) {
      const good = batch.filter((a) => a !== bad).map((a) => a.key).sort();
      expect(created.sort()).toEqual(good); // each good call once
      expect(outcome.written.sort()).toEqual(good);
      expect(outcome.refused).toEqual([{ key: bad.key, reason: expect.stringMatching(/VALIDATION_ERROR.*refused by a validation rule/) }]);
    }

    it('a 207 names the refused input: one request', async () => {
      const r = await oneBad('multi-status', 1);
      expectOneRefused(r);
      expect(r.requests).toBe(1);
    });

    it('a 400 for the whole batch naming the input by its objectWriteTraceId: that one dropped, the rest sent again at once', async () => {
      const r = await oneBad('whole-batch-traced', 2);
      expectOneRefused(r);
      expect(r.requests).toBe(2);
    });

    it('a 400 for the whole batch naming none: halved until the refused call is alone, 2·log2(100) more requests, not 100', async () => {
      const r = await oneBad('whole-batch', 3);
      expectOneRefused(r);
      expect(r.requests).toBeLessThanOrEqual(1 + 2 * Math.ceil(Math.log2(100)));
      expect(hs.refusals()).toEqual([]);
    });
  });

  it('Salesforce (sObject Collections of 200, allOrNone false): a Task on a deleted Lead and one too long refused in the answer, 198 written by the same request', async () => {
    const sf: SalesforceStandIn = await startSalesforceStandIn({ contacts: 0, leads: 200, seed: 7 });
    const proxy = await proxied(sf);
    try {
      const leads = sf.records('Lead').map((l) => l.values.Id as string);
      const sink = sinkOf(salesforceSync(sf, 'c-1', { campaignId: sf.records('Campaign')[0]!.values.Id }, { loginUrl: proxy.url, taskExternalIdField: sf.taskExternalIdField }));
      const batch = activities(200, (i) => leads[i]!);
      const bad = batch[123]!;
      // The Lead was deleted after its number was dialed: Salesforce refuses that record (ENTITY_IS_DELETED) alone.
      sf.deleteRecord(bad.contactId!);
      // A record whose raw fields make the Description longer than its 32,000 characters: STRING_TOO_LONG.
      const long = batch[17]!;
      long.record = { ...long.record, queueId: 'q'.repeat(33_000) };
      const outcome = await isolate(sink, batch);
      const good = batch.filter((a) => a !== bad && a !== long).map((a) => a.key).sort();
      expect(outcome.written.sort()).toEqual(good);
      expect(outcome.refused).toEqual([
        { key: long.key, reason: expect.stringMatching(/^STRING_TOO_LONG: Description: data value too large: .*\(max length=32000\) \(Description\)$/s) },
        { key: bad.key, reason: expect.stringMatching(/ENTITY_IS_DELETED.*WhoId/) },
      ]);
      expect(sf.records('Task').map((t) => t.values[sf.taskExternalIdField]).sort()).toEqual(good);
      expect(proxy.exchanges.filter((e) => e.path.includes('/composite/sobjects')).length).toBe(1);
    } finally {
      await proxy.close(); await sf.close();
    }
  });

  it('Pipedrive (a call log a request): the refused log costs its own request only, the 19 others written once', async () => {
    const pd: PipedriveStandIn = await startPipedriveStandIn({ persons: 20 });
    try {
      const persons = pd.persons().map((p) => String(p.id));
      const sink = sinkOf({ source: { type: 'pipedrive', baseUrl: pd.url, apiToken: pd.apiToken, burstPer2Seconds: 100 } });
      const batch = activities(20, (i) => persons[i]!);
      const bad = batch[6]!;
      pd.failCallLogs((l) => (l.to_phone_number === bad.record.number ? 'note: refused by a validation rule of this company' : false));
      const before = pd.stats.requests;
      // The mirror hands Pipedrive's sink one activity a write (maxBatch 1), as here.
      expect(sink.maxBatch).toBe(1);
      const outcome = { written: [] as string[], refused: [] as { key: string; reason: string }[] };
      for (const a of batch) {
        const r = await isolate(sink, [a]);
        outcome.written.push(...r.written); outcome.refused.push(...r.refused);
      }
      const good = batch.filter((a) => a !== bad).map((a) => a.key);
      expect(outcome.written).toEqual(good);
      expect(outcome.refused).toEqual([{ key: bad.key, reason: expect.stringMatching(/400.*refused by a validation rule/) }]);
      expect(pd.callLogs().map((l) => /\[cds:([^\]]+)\]/.exec(l.subject ?? '')![1])).toEqual(good);
      expect(pd.stats.requests - before).toBe(20);
    } finally {
      await pd.close();
    }
  });

  describe('the webhook sink (an activity a request)', () => {
    const received: string[] = [];
    let answer: (key: string) => [number, string] = () => [204, ''];
    let url = '';
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const key = String(req.headers['webhook-id']);
        received.push(key);
        const [status, body] = answer(key);
        res.writeHead(status, { 'content-type': 'application/json' }).end(body);
      });
    });
    beforeAll(async () => {
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/calls`;
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    it('a 422 for one activity refuses that one, with the receiver\'s words; the others are delivered once', async () => {
      const sink = new WebhookSink(url, SECRET);
      const batch = activities(10, () => '42');
      const bad = batch[4]!;
      answer = (key) => (key === bad.key ? [422, '{"error":"record.number is not on our list"}'] : [204, '']);
      received.length = 0;
      const outcome = await isolate(sink, batch);
      const good = batch.filter((a) => a !== bad).map((a) => a.key);
      expect(outcome.written).toEqual(good);
      expect(outcome.refused).toEqual([{ key: bad.key, reason: expect.stringMatching(/422 \{"error":"record.number is not on our list"\}/) }]);
      expect(received).toEqual(batch.map((a) => a.key));
    });

    it('a 401, 404, 429 or 5xx is the receiver\'s trouble: thrown, nothing refused', async () => {
      for (const status of [401, 404, 429, 503]) {
        answer = () => [status, ''];
        await expect(isolate(new WebhookSink(url, SECRET), activities(2, () => '42'))).rejects.toThrow(new RegExp(`: ${status}`));
      }
    });
  });

  // The file sink cannot refuse one record: a write appends whole JSON lines of plain data, which JSON.stringify
  // always encodes; what fails is the file (a full disk, a missing directory, no permission), every record alike, and
  // that failure is thrown for the run to be tried again.
});
