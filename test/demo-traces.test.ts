// `./dev start --traces`: the demo starts the OTLP/HTTP trace receiver on a free loopback port, names its file in the
// banner, hands the server and the daemon the standard OTEL_* settings that point at it, and stops it last, keeping
// the file.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startDemo } from './support/demo.ts';
import { waitFor } from './support/daemon.ts';
import { traceNumber } from '../daemon/traces/timeline.ts';

const dir = mkdtempSync(join(tmpdir(), 'cds-demo-traces-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The processes the demo started: each one's script and environment, read from /proc (Linux). */
function childrenOf(pid: number): { script: string; env: Record<string, string> }[] {
  const pids = readdirSync(`/proc/${pid}/task`).flatMap((task) => readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean));
  return pids.flatMap((child) => {
    try {
      const args = readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0');
      const env = Object.fromEntries(readFileSync(`/proc/${child}/environ`, 'utf8').split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
      return [{ script: args[1] ?? '', env }];
    } catch {
      return [];
    }
  });
}

it('starts a trace receiver, points the server and the daemon at it with OTEL_* settings, and keeps its file on exit', async () => {
  const file = join(dir, 'spans.jsonl');
  // --traces-file implies --traces.
  const demo = startDemo(['--traces-file', file, '--contacts', '5', '--speed', '600', '--port-base', '0', '--interval', '0.5']);
  await waitFor(() => demo.gone() || /^Try$/m.test(demo.output()), 'the demo\'s banner', 45_000);
  const out = demo.output();
  expect(demo.gone(), out).toBe(false);
  const [, url, named] = /Traces\s+(http:\/\/127\.0\.0\.1:\d+)\/v1\/traces \(OTLP\/HTTP JSON\) → (\S+) \(kept on exit\)/.exec(out) ?? [];
  expect(url, out).toBeTruthy();
  expect(named).toBe(file);
  expect(out).toContain(`./dev daemon trace +12125550199 --file ${file}`);
  expect(out).toMatch(/Logs\s+\S+\/\{server,hubspot,daemon,receiver\}\.log/);

  // The server and the daemon got the standard settings, each with its own service name; the stand-in none.
  const children = childrenOf(demo.proc.pid!);
  const env = (script: string) => children.find((c) => c.script === script)?.env ?? {};
  const otel = (e: Record<string, string>) => Object.fromEntries(Object.entries(e).filter(([k]) => k.startsWith('OTEL_')));
  const common = { OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_METRICS_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none' };
  expect(otel(env('server/cli.ts'))).toEqual({ ...common, OTEL_SERVICE_NAME: 'campaign-dialing-server' });
  expect(otel(env('daemon/cli.ts'))).toEqual({ ...common, OTEL_SERVICE_NAME: 'campaign-sync' });
  expect(otel(env('crm-stand-ins/hubspot.ts'))).toEqual({});
  expect(children.map((c) => c.script)).toContain('daemon/traces/receiver.ts');

  // What an SDK would send with those settings lands in the named file.
  const span = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', name: 'webhook hubspot', kind: 2, startTimeUnixNano: '1795680000000000000', endTimeUnixNano: '1795680000212000000' };
  const res = await fetch(`${url}/v1/traces`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'campaign-sync' } }] }, scopeSpans: [{ spans: [span] }] }] }),
  });
  expect(res.status).toBe(200);
  const names = () => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { name: string; service: string }));
  expect(names()).toContainEqual(expect.objectContaining({ name: 'webhook hubspot', service: 'campaign-sync' }));

  // The daemon's import pushes the contacts to the server: the server's span of that add is a child of the daemon's
  // dialer request, and `daemon trace` shows it beneath that request.
  type Line = { name: string; service: string; spanId: string; parentSpanId?: string; attributes: Record<string, unknown> };
  const lines = () => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line);
  const ADD = 'POST /v1/accounts/:accountId/campaigns/:campaignId/numbers';
  const [dialer, served] = await waitFor(() => {
    const all = lines();
    const server = all.find((l) => l.service === 'campaign-dialing-server' && l.name === ADD && all.some((d) => d.spanId === l.parentSpanId));
    return server ? [all.find((d) => d.spanId === server.parentSpanId)!, server] as const : null;
  }, "the server's span of the daemon's add", 45_000);
  expect(dialer).toMatchObject({ service: 'campaign-sync', name: 'dialer POST /campaigns/{campaignId}/numbers' });
  expect(served.attributes['http.response.status_code']).toBe(201);
  const batch = lines().find((l) => l.spanId === dialer.parentSpanId)!;
  const [phone] = batch.attributes['cds.phones'] as string[];
  const timeline = (await traceNumber({ phone: phone!, file })).text.split('\n');
  const at = (re: RegExp) => timeline.findIndex((l) => re.test(l));
  const request = at(/campaign-sync +dialer POST \/campaigns\/\{campaignId\}\/numbers/);
  const answer = at(/campaign-dialing-server +POST \/v1\/accounts\/:accountId\/campaigns\/:campaignId\/numbers +http=201/);
  expect(request, timeline.join('\n')).toBeGreaterThan(0);
  expect(answer).toBeGreaterThan(request);
  // A child is indented two columns past its parent (the service column is as wide on every line).
  expect(timeline[answer]!.indexOf(ADD)).toBe(timeline[request]!.indexOf('dialer POST') + 2);

  demo.proc.kill('SIGINT');
  expect(await demo.exited, demo.output()).toEqual({ code: 0, signal: null });
  expect(demo.output()).toContain(`; the traces stay in ${file}`);
  expect(existsSync(file)).toBe(true);
  expect(names()).toContainEqual(expect.objectContaining({ name: 'webhook hubspot' }));
  expect(await fetch(`${url}/v1/traces`, { method: 'POST' }).then(() => 'answered', () => 'closed')).toBe('closed');
}, 60_000);
