// The demo's OTLP/HTTP trace receiver over real HTTP on loopback: OTLP/JSON requests become span lines in its file
// (which `daemon trace` reads), and every bad request gets the status OTLP names with a sentence saying what was
// wrong, while the receiver goes on serving.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTraceReceiver, type TraceReceiver } from '../../daemon/traces/receiver.ts';
import { traceNumber } from '../../daemon/traces/timeline.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'cds-receiver-'));
const TRACE = '5B8EFFF798038103D269B633813FC60C';
const T0 = 1795680000000n * 1_000_000n;
const nanos = (ms: number) => String(T0 + BigInt(ms) * 1_000_000n);

/** A span in OTLP/JSON as an SDK exports it (JS writes intValue as a number, the Collector as a string). */
function otlpSpan(spanId: string, name: string, startMs: number, endMs: number, extra: Record<string, unknown> = {}) {
  return { traceId: TRACE, spanId, name, kind: 1, startTimeUnixNano: nanos(startMs), endTimeUnixNano: nanos(endMs), ...extra };
}

function request1(service: string, spans: unknown[]) {
  return { resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] }, scopeSpans: [{ scope: { name: 'cds' }, spans }] }] };
}

const post = (url: string, body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  fetch(`${url}/v1/traces`, { method: 'POST', headers, body });

const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);

describe('trace receiver', () => {
  let receiver: TraceReceiver;
  const file = join(dir, 'traces.jsonl');
  beforeAll(async () => { receiver = await startTraceReceiver({ file, maxBodyBytes: 64 * 1024 }); });
  afterAll(async () => {
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('appends one flattened line per span and answers as OTLP/HTTP JSON, which `daemon trace` then reads', async () => {
    const daemon = request1('campaign-sync', [
      otlpSpan('00F067AA0BA902B7', 'webhook hubspot', 0, 212, {
        kind: 2,
        attributes: [
          { key: 'cds.sync', value: { stringValue: 's0' } },
          { key: 'cds.run', value: { intValue: '12' } },
          { key: 'http.response.status_code', value: { intValue: 204 } },
          { key: 'cds.dry', value: { boolValue: false } },
          { key: 'cds.share', value: { doubleValue: 0.5 } },
          { key: 'cds.phones', value: { arrayValue: { values: [{ stringValue: '+12125550199' }, { stringValue: '+13125550123' }] } } },
          { key: 'cds.map', value: { kvlistValue: { values: [{ key: 'a', value: { intValue: '1' } }] } } },
          { key: 'cds.big', value: { intValue: '9007199254740993' } },
          { key: '__proto__', value: { stringValue: 'kept' } },
        ],
        events: [{ timeUnixNano: nanos(3), name: 'rate-limit wait', attributes: [{ key: 'wait_ms', value: { intValue: 300 } }] }],
        links: [{ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b8', attributes: [] }],
        status: { code: 2, message: 'boom' },
        unknownFutureField: { ignored: true },
      }),
      otlpSpan('1a2b3c4d5e6f7081', 'sync run', 3, 183, { parentSpanId: '00f067aa0ba902b7', attributes: [{ key: 'cds.phone', value: { stringValue: '+12125550199' } }] }),
    ]);
    const res = await post(receiver.url, JSON.stringify(daemon));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual({ partialSuccess: {} });
    // Times as JSON numbers, as older JS SDKs wrote them (past 2^53, so not exact).
    const server = request1('campaign-dialing-server', [otlpSpan('2b3c4d5e6f708192', 'POST /v1/accounts/:accountId/campaigns/:campaignId/numbers', 100, 140,
      { parentSpanId: '1a2b3c4d5e6f7081', kind: 2, startTimeUnixNano: Number(nanos(100)), endTimeUnixNano: Number(nanos(140)) })]);
    expect((await post(receiver.url, gzipSync(JSON.stringify(server)), { 'content-type': 'application/json; charset=utf-8', 'content-encoding': 'gzip' })).status).toBe(200);

    const written = lines(file);
    expect(written).toHaveLength(3);
    expect(written[0]).toEqual({
      traceId: TRACE.toLowerCase(), spanId: '00f067aa0ba902b7', name: 'webhook hubspot', kind: 'server', service: 'campaign-sync',
      startMs: 1795680000000, endMs: 1795680000212,
      attributes: {
        'cds.sync': 's0', 'cds.run': 12, 'http.response.status_code': 204, 'cds.dry': false, 'cds.share': 0.5,
        'cds.phones': ['+12125550199', '+13125550123'], 'cds.map': { a: 1 },
        // Past 2^53 an integer stays a string: exact rather than rounded.
        'cds.big': '9007199254740993',
        ['__proto__']: 'kept',
      },
      events: [{ name: 'rate-limit wait', atMs: 1795680000003, attributes: { wait_ms: 300 } }],
      links: [{ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b8', attributes: {} }],
      status: { code: 'error', message: 'boom' },
    });
    expect(written[1]).toMatchObject({ parentSpanId: '00f067aa0ba902b7', service: 'campaign-sync', kind: 'internal' });
    expect(written[2]).toMatchObject({ parentSpanId: '1a2b3c4d5e6f7081', service: 'campaign-dialing-server', startMs: 1795680000100 });
    expect(receiver.written()).toBe(3);

    const timeline = await traceNumber({ phone: '+12125550199', file });
    expect(timeline.code).toBe(0);
    expect(timeline.text).toContain(`trace ${TRACE.toLowerCase()} (2 services, 212 ms, from 2026-11-26T08:00:00.000Z)`);
    expect(timeline.text).toMatch(/\+100 ms +40 ms {2}campaign-dialing-server {6}POST \/v1\/accounts/);
    expect(timeline.text).toContain('webhook hubspot   cds.sync=s0 cds.run=12 cds.dry=false cds.share=0.5 cds.phones=[+12125550199,+13125550123] cds.map={"a":1} cds.big=9007199254740993 http=204  error: boom');
  });

  it('keeps the good spans of a request and names the bad ones (OTLP partial success)', async () => {
    const before = lines(file).length;
    const res = await post(receiver.url, JSON.stringify(request1('campaign-sync', [
      otlpSpan('3c4d5e6f708192a3', 'plan', 0, 1),
      // Base64, as protobuf's own JSON mapping would write it: OTLP/JSON wants hex.
      { ...otlpSpan('4d5e6f708192a3b4', 'push batch', 0, 1), traceId: 'W47/95gDgQPSabYzgT/GDA==' },
      { ...otlpSpan('5e6f708192a3b4c5', 'mirror run', 0, 1), startTimeUnixNano: undefined },
    ])));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      partialSuccess: {
        rejectedSpans: '2',
        errorMessage: '2 spans rejected: resourceSpans[0].scopeSpans[0].spans[1].traceId: 32 hex digits (OTLP/JSON writes a trace id as hex, not base64); ' +
          'resourceSpans[0].scopeSpans[0].spans[2].startTimeUnixNano: required',
      },
    });
    expect(lines(file).slice(before).map((l) => l.name)).toEqual(['plan']);
  });

  it('refuses protobuf with 415 in protobuf, telling to use http/json; other media types with 415 in JSON', async () => {
    const proto = await post(receiver.url, Buffer.from([0x0a, 0x00]), { 'content-type': 'application/x-protobuf' });
    expect(proto.status).toBe(415);
    expect(proto.headers.get('content-type')).toBe('application/x-protobuf');
    const status = Buffer.from(await proto.arrayBuffer());
    const message = 'this receiver reads OTLP/HTTP JSON only: set OTEL_EXPORTER_OTLP_PROTOCOL=http/json (or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)';
    // google.rpc.Status: code 3 (field 1), then the message (field 2, length-delimited).
    expect([...status.subarray(0, 4)]).toEqual([0x08, 3, 0x12, message.length]);
    expect(status.subarray(4).toString()).toBe(message);

    const text = await post(receiver.url, 'hello', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(await text.json()).toEqual({ code: 3, message: 'Content-Type text/plain is not supported: send application/json (OTLP/HTTP JSON)' });
    const brotli = await post(receiver.url, '{}', { 'content-type': 'application/json', 'content-encoding': 'br' });
    expect(brotli.status).toBe(415);
    expect(((await brotli.json()) as { message: string }).message).toBe('Content-Encoding br is not supported; send gzip or no encoding');
  });

  it('answers 400 naming what is wrong with a body that is not an OTLP request', async () => {
    const notJson = await post(receiver.url, '{"resourceSpans": [');
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { message: string }).message).toMatch(/^the body is not JSON: /);
    const wrong = await post(receiver.url, JSON.stringify({ resourceSpans: [{ scopeSpans: 'x' }] }));
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { message: string }).message).toMatch(/^not an OTLP ExportTraceServiceRequest: request\.resourceSpans\[0\]\.scopeSpans: /);
    const array = await post(receiver.url, '[1]');
    expect(((await array.json()) as { message: string }).message).toMatch(/^not an OTLP ExportTraceServiceRequest: request: /);
    const badGzip = await post(receiver.url, 'not gzip', { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect(badGzip.status).toBe(400);
    expect(((await badGzip.json()) as { message: string }).message).toMatch(/^the body is not valid gzip: /);
    // Attribute values nested past any use are refused, not recursed into.
    const deep = `${'{"arrayValue":{"values":['.repeat(1500)}{"stringValue":"x"}${']}}'.repeat(1500)}`;
    const nested = await post(receiver.url, JSON.stringify(request1('campaign-sync', [otlpSpan('8192a3b4c5d6e7f8', 'plan', 0, 1, { attributes: [{ key: 'deep', value: 'DEEP' }] })])).replace('"DEEP"', deep));
    expect(nested.status).toBe(200);
    expect(((await nested.json()) as { partialSuccess: { errorMessage: string } }).partialSuccess.errorMessage).toMatch(/^1 span rejected: resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.attributes(\[0\]\.value)(\.arrayValue\.values\[0\])+: attribute values nested deeper than 32 levels$/);
    // An empty request carries no spans: a success, as OTLP says.
    expect((await post(receiver.url, '{}')).status).toBe(200);
    expect((await post(receiver.url, '')).status).toBe(200);
  });

  it('caps the body at its limit (413), declared, streamed or after gzip', async () => {
    const big = JSON.stringify({ resourceSpans: [], pad: 'x'.repeat(70 * 1024) });
    const declared = await post(receiver.url, big);
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as { message: string }).message).toBe(`the body is larger than ${64 * 1024} bytes; send smaller batches (the exporter's OTEL_BSP_MAX_EXPORT_BATCH_SIZE)`);
    // Chunked, with no Content-Length: counted as it arrives.
    const streamed = await new Promise<number>((resolve, reject) => {
      const req = request(`${receiver.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => { res.resume(); resolve(res.statusCode!); });
      req.on('error', reject);
      for (let i = 0; i < 10; i++) req.write('x'.repeat(8 * 1024));
      req.end();
    });
    expect(streamed).toBe(413);
    // A small gzip that inflates past the limit.
    const bomb = await post(receiver.url, gzipSync(big), { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect(bomb.status).toBe(413);
  });

  it('answers 404 off /v1/traces and 405 to other methods, 503 when the file cannot be written, and keeps serving', async () => {
    const metrics = await fetch(`${receiver.url}/v1/metrics`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(metrics.status).toBe(404);
    expect(((await metrics.json()) as { message: string }).message).toContain('set OTEL_METRICS_EXPORTER=none and OTEL_LOGS_EXPORTER=none');
    const get = await fetch(`${receiver.url}/v1/traces`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');

    const nowhere = await startTraceReceiver({ file: join(dir, 'no-such-dir', 'traces.jsonl') });
    try {
      const res = await post(nowhere.url, JSON.stringify(request1('campaign-sync', [otlpSpan('6f708192a3b4c5d6', 'plan', 0, 1)])));
      // Retryable: the exporter sends the batch again.
      expect(res.status).toBe(503);
      expect(((await res.json()) as { message: string }).message).toMatch(/^could not write .*no-such-dir\/traces\.jsonl: ENOENT/);
    } finally {
      await nowhere.close();
    }

    // After all of the above, 20 requests at once: every line whole, none lost.
    const before = lines(file).length;
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(receiver.url, JSON.stringify(request1('campaign-sync',
      Array.from({ length: 50 }, (_, j) => otlpSpan((i * 100 + j + 1).toString(16).padStart(16, '0'), `span ${i}/${j}`, 0, 1, { attributes: [{ key: 'pad', value: { stringValue: 'y'.repeat(200) } }] })))))));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(lines(file).length - before).toBe(1000);
  });
});

it('runs alone from its entry point, and stops on SIGTERM after its writes', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'cds-receiver-cli-')), 'spans.jsonl');
  const child = spawn(process.execPath, ['daemon/traces/receiver.ts', '--port', '0', '--file', file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (b: Buffer) => { out += b.toString(); });
  child.stderr.on('data', (b: Buffer) => { out += b.toString(); });
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const check = () => { const m = /listening on (http:\/\/\S+) /.exec(out); if (m) resolve(m[1]!); };
      child.stdout.on('data', check);
      void exited.then(() => reject(new Error(`the receiver exited:\n${out}`)));
    });
    expect(out).toContain(`(POST /v1/traces, OTLP/HTTP JSON), writing ${file}`);
    expect((await post(url, JSON.stringify(request1('campaign-sync', [otlpSpan('708192a3b4c5d6e7', 'plan', 0, 1)])))).status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out).toContain('trace receiver stopped; 1 spans written');
    expect(lines(file).map((l) => l.name)).toEqual(['plan']);
  } finally {
    child.kill('SIGKILL');
    rmSync(join(file, '..'), { recursive: true, force: true });
  }
});
