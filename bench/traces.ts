// `./dev bench traces [--traces 7000 --batch 512]`: the demo's trace tooling. The receiver: spans/s it takes in
// over loopback as an SDK sends them (OTLP/JSON batches of --batch spans, one request at a time). `daemon trace`: the
// time and memory to find one number in the file those requests wrote (15 spans a trace, as the test fixture's shape:
// webhook → sync → plan → push → dialer → server, a resumed push, a mirror run with two writes), as the command runs.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTraceReceiver } from '../daemon/traces/receiver.ts';
import type { SpanLine } from '../daemon/traces/spans.ts';
import { loadAverage, machine, MB, printFiguresHeading, readFlags, round, writeResults } from './support.ts';

const FLAGS = {
  traces: { def: 7000, help: 'traces written (15 spans each); one of them carries the number looked up' },
  batch: { def: 512, help: 'spans per request (the SDKs\' default OTEL_BSP_MAX_EXPORT_BATCH_SIZE)' },
} as const;
const { traces, batch } = readFlags(FLAGS, { command: 'traces', example: 'BENCH_TRACES=20000', width: 8 });
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FIXTURE = join(ROOT, 'test/daemon/fixtures/traces.jsonl');
const loadAtStart = loadAverage();

/** The fixture's spans back in OTLP/JSON, with trace ids (and other numbers) of trace `i`. */
function otlpSpans(i: number, shape: SpanLine[]): { service: string; span: unknown }[] {
  const prefix = i.toString(16).padStart(8, '0');
  const anyValue = (v: unknown): unknown => (Array.isArray(v) ? { arrayValue: { values: v.map(anyValue) } }
    : typeof v === 'number' ? { intValue: String(v) } : { stringValue: String(v) });
  const attrs = (a: Record<string, unknown>) => Object.entries(a).map(([key, v]) => {
    // Every trace but the looked-up one is about other numbers.
    const other = (p: unknown) => (i === 0 ? p : `+1646555${String(i % 10_000).padStart(4, '0')}`);
    const value = key === 'cds.phone' ? other(v) : key === 'cds.phones' ? (v as unknown[]).map(other) : v;
    return { key, value: anyValue(value) };
  });
  const nanos = (ms: number) => String(BigInt(Math.round(ms * 1000)) * 1000n);
  return shape.map((s) => ({
    service: s.service,
    span: {
      traceId: prefix + s.traceId.slice(8), spanId: s.spanId, parentSpanId: s.parentSpanId, name: s.name, kind: 1,
      startTimeUnixNano: nanos(s.startMs), endTimeUnixNano: nanos(s.endMs), attributes: attrs(s.attributes),
      events: s.events.map((e) => ({ name: e.name, timeUnixNano: nanos(e.atMs), attributes: attrs(e.attributes) })),
      links: s.links.map((l) => ({ traceId: prefix + l.traceId.slice(8), spanId: l.spanId })),
    },
  }));
}

const shape = readFileSync(FIXTURE, 'utf8').split('\n').filter((l) => l.endsWith('}')).map((l) => JSON.parse(l) as SpanLine);
const dir = mkdtempSync(join(tmpdir(), 'cds-bench-traces-'));
const file = join(dir, 'traces.jsonl');
try {
  const receiver = await startTraceReceiver({ file });
  const all = Array.from({ length: traces }, (_, i) => otlpSpans(i, shape)).flat();
  const bodies: string[] = [];
  for (let i = 0; i < all.length; i += batch) {
    const part = all.slice(i, i + batch);
    const services = [...new Set(part.map((p) => p.service))];
    bodies.push(JSON.stringify({ resourceSpans: services.map((service) => ({
      resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
      scopeSpans: [{ spans: part.filter((p) => p.service === service).map((p) => p.span) }],
    })) }));
  }
  const started = performance.now();
  for (const body of bodies) {
    const res = await fetch(`${receiver.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    if (res.status !== 200) throw new Error(`the receiver answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
  }
  const receiveMs = performance.now() - started;
  await receiver.close();

  // As the command runs: its own process, timed from outside, its peak memory from the kernel; over the 15-line
  // fixture first, which is its start-up (loading the daemon's modules) and nothing else.
  const run = (over: string) => {
    const t = performance.now();
    const out = execFileSync('/usr/bin/env', ['bash', '-c', `command time -f '%M' ${process.execPath} daemon/cli.ts trace +12125550199 --file ${over} 2>&1 >/dev/null | tail -1`], { cwd: ROOT, encoding: 'utf8' });
    const kb = Number(out.trim());
    return { ms: performance.now() - t, rss: Number.isFinite(kb) ? `${Math.round(kb / 1024)} MB` : 'unknown' };
  };
  const bare = run(FIXTURE);
  const full = run(file);

  const line = printFiguresHeading(72, [`${traces} traces`, `${all.length} spans`, `load ${loadAtStart.join(' ')} → ${loadAverage().join(' ')}`]);
  console.log(`receiver, batches of ${batch}, one at a time   ${Math.round(all.length / (receiveMs / 1000))} spans/s (${bodies.length} requests, ${round(receiveMs / bodies.length)} ms each)`);
  console.log(`file written                                 ${round(statSync(file).size / MB)} MB, ${receiver.written()} lines`);
  console.log(`daemon trace over it (its own process)       ${Math.round(full.ms)} ms, peak RSS ${full.rss}`);
  console.log(`  of which start-up (over the 15-line fixture) ${Math.round(bare.ms)} ms, peak RSS ${bare.rss}`);
  console.log(line);
  writeResults('traces', {
    traces, spans: all.length, batch, machine: machine(loadAtStart),
    receiver: { spansPerSecond: Math.round(all.length / (receiveMs / 1000)), requests: bodies.length, msPerRequest: round(receiveMs / bodies.length), fileMb: round(statSync(file).size / MB) },
    lookup: { ms: Math.round(full.ms), peakRss: full.rss }, startUp: { ms: Math.round(bare.ms), peakRss: bare.rss },
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
