// The reference server's traces: with the standard OTEL_* environment each request is a SERVER span named by its
// route, continuing the caller's traceparent, the store write of an add its child; spans POSTed as OTLP JSON to a real
// receiver on loopback. Off (no endpoint, or OTEL_SDK_DISABLED), no SDK module is loaded and nothing is sent.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/daemon.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp.ts';
import { refusedServerCli, startServerCli, type ServerProcess } from '../support/server-cli.ts';

const CONSOLE_TOKEN = 'console_telemetry-test-token';
const SERVER = 2; // OTLP's SPAN_KIND_SERVER
const ADD_ROUTE = 'POST /v1/accounts/:accountId/campaigns/:campaignId/numbers';

/** An account, an Active campaign and a key that may add numbers to it, made through the console API. */
async function campaignOf(base: string): Promise<{ path: string; token: string }> {
  const call = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${base}/console${path}`, { method, headers: { authorization: `Bearer ${CONSOLE_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status, await res.clone().text()).toBeLessThan(300);
    return res.json() as Promise<any>;
  };
  const account = await call('POST', '/accounts', { name: 'Trace Co', timezone: 'America/New_York' });
  const campaign = await call('POST', `/accounts/${account.id}/campaigns`, { name: 'Traced', type: 'Dynamic', state: 'Active',
    dialer: { mode: 'Power', agents: 3, maxAttempts: 1, callingHours: { from: '00:00', to: '23:59', days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] } } });
  const key = await call('POST', `/accounts/${account.id}/apiKeys`, { name: 'adder', roles: ['CampaignNumberAdmin'] });
  return { path: `/v1/accounts/${account.id}/campaigns/${campaign.id}/numbers`, token: key.token };
}

const add = (base: string, c: { path: string; token: string }, numbers: string[], headers: Record<string, string> = {}) =>
  fetch(`${base}${c.path}`, { method: 'POST', headers: { authorization: `Bearer ${c.token}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(numbers.map((number) => ({ number }))) });

describe('tracing on: the standard environment', () => {
  let otlp: OtlpReceiver;
  let server: ServerProcess;
  let c: { path: string; token: string };
  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    server = await startServerCli(['--port', '0', '--clock', 'manual', '--rate-limit', 'off'], {
      CONSOLE_TOKEN, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    c = await campaignOf(server.base);
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await otlp?.close();
  });

  it('says so in its banner, under the default service name', () => {
    expect(server.output()).toContain(`Traces: ${otlp.url}/v1/traces as campaign-dialing-server (OTLP/HTTP JSON, sampler parentbased_always_on)`);
  });

  it("a request carrying a traceparent is a SERVER span of the caller's trace, named by its route, with its status; the store write its child", async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const callerSpan = 'b7ad6b7169203331';
    const res = await add(server.base, c, ['+12125550101', '+12125550102'], { traceparent: `00-${traceId}-${callerSpan}-01` });
    expect(res.status).toBe(201);
    const span = await waitFor(() => otlp.spans().find((s) => s.traceId === traceId && s.kind === SERVER), 'the server span');
    expect(span).toMatchObject({ service: 'campaign-dialing-server', name: ADD_ROUTE, parentSpanId: callerSpan });
    expect(span.attributes).toMatchObject({ 'http.response.status_code': 201, 'http.route': '/v1/accounts/:accountId/campaigns/:campaignId/numbers', 'http.request.method': 'POST' });
    const store = await waitFor(() => otlp.spans().find((s) => s.traceId === traceId && s.name === 'store add numbers'), 'the store span');
    expect(store.parentSpanId).toBe(span.spanId);
    expect(store.attributes).toMatchObject({ 'db.system.name': 'sqlite', 'cds.numbers': 2 });
  });

  it('a refused request is a span too, with its status; a request without a traceparent begins a trace of its own', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await add(server.base, { ...c, token: 'cdk_not-a-key' }, ['+12125550103'], { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    expect(res.status).toBe(401);
    const refused = await waitFor(() => otlp.spans().find((s) => s.traceId === traceId), 'the 401 span');
    expect(refused).toMatchObject({ name: ADD_ROUTE, kind: SERVER, attributes: { 'http.response.status_code': 401 } });

    const known = new Set(otlp.spans().map((s) => s.traceId));
    expect((await fetch(`${server.base}/v1/openapi.json?token=cdk_pasted-by-mistake`)).status).toBe(200);
    const own = await waitFor(() => otlp.spans().find((s) => s.name === 'GET /v1/openapi.json' && !known.has(s.traceId)), 'the root span');
    expect(own).toMatchObject({ parentSpanId: '', kind: SERVER, attributes: { 'http.response.status_code': 200 } });
    // The query (where a token may have been pasted) stays out of the span, as it stays out of the log.
    expect(own.attributes['url.path']).toBe('/v1/openapi.json');
    expect(JSON.stringify(otlp.spans())).not.toContain('cdk_pasted-by-mistake');
  });
});

describe('tracing off', () => {
  it('loads no tracing SDK: the server and its telemetry module import only the OpenTelemetry API', () => {
    // A child process records every module specifier the server's module graph resolves.
    const script = `
      import { registerHooks } from 'node:module';
      const seen = [];
      registerHooks({ resolve(spec, ctx, next) { seen.push(spec); return next(spec, ctx); } });
      await import(${JSON.stringify(join(import.meta.dirname, '../../server/app.ts'))});
      await import(${JSON.stringify(join(import.meta.dirname, '../../server/telemetry.ts'))});
      console.log(JSON.stringify(seen));`;
    const seen = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as string[];
    expect(seen).toContain('@opentelemetry/api');
    expect(seen.filter((s) => /^@opentelemetry\/(sdk-|exporter-|context-|core|resources)|^@fastify\/otel/.test(s))).toEqual([]);
  });

  it('OTEL_SDK_DISABLED=true beside an endpoint: requests are answered and nothing reaches the receiver, even at stop', async () => {
    const otlp = await startOtlpReceiver();
    const server = await startServerCli(['--port', '0', '--clock', 'manual', '--rate-limit', 'off'], {
      CONSOLE_TOKEN, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SDK_DISABLED: 'true', OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    try {
      expect(server.output()).not.toContain('Traces:');
      const c = await campaignOf(server.base);
      expect((await add(server.base, c, ['+12125550104'], { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' })).status).toBe(201);
    } finally {
      // A stop sends what is buffered (tracing on): after it, an empty receiver means nothing was ever sent.
      expect(await server.stop()).toBe(0);
      expect(otlp.spans()).toEqual([]);
      await otlp.close();
    }
  });

  it('a bad OTEL_* value stops the server, naming the variable', async () => {
    const { code, output } = await refusedServerCli(['--port', '0'], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_TRACES_SAMPLER: 'sometimes' });
    expect(code).toBe(2);
    expect(output).toMatch(/OTEL_TRACES_SAMPLER: "sometimes" is not one of always_on/);
  });
});
