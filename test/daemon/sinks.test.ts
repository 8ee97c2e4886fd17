// The generic webhook sink (signed with the Standard Webhooks headers, the attempt's key as webhook-id, a failed
// delivery retried whole) and the outcome rules (defaults a sales team expects; configured rules first match wins).
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_RULES, outcomeOf, ruleSchema, type CallDetail } from '../../daemon/outcomes.ts';
import type { Activity } from '../../daemon/sinks/sink.ts';
import { WebhookSink } from '../../daemon/sinks/webhook.ts';
import { verifyStandardWebhook } from '../../daemon/signing.ts';

const SECRET = `whsec_${Buffer.from('a sink secret of enough bytes').toString('base64')}`;

function call(fields: Partial<CallDetail>): CallDetail {
  return {
    number: '+12125550100', attempt: 1, startedAtLocal: '2026-11-02T10:00:00', answeredAtLocal: null, endedAtLocal: '2026-11-02T10:00:30',
    ringResult: 'NoAnswer', answerType: null, sipResponseCode: 480, endType: null, queueId: null, outcome: 'FailureWithRetryPending', ...fields,
  };
}

function activity(key: string): Activity {
  return { key, record: call({}), outcome: 'no_answer', contactId: '42', startedAt: 0, answeredAt: null, endedAt: 30_000, durationMs: 0, campaignId: 'c-1' };
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
    expect(await new WebhookSink(url, SECRET).find()).toBeNull();
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
