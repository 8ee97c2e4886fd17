// `./dev bench server-traces [--rounds 2 --adds 50000 --seconds 8 --connections 16]`: what tracing costs the reference
// server. Each run is a process of its own (tracing is set up once a process), tracing off and on alternated: JSON adds
// of 1,000 numbers one after another (numbers/s, as the daemon pushes), then autocannon on a list page (requests/s,
// latency) and the server's CPU per request. On, every request is a trace (always on, unless OTEL_TRACES_SAMPLER says
// otherwise) sent to the demo's OTLP receiver, in a process of its own.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { telemetrySettings } from '../api/telemetry-settings.ts';
import { Store } from '../server/store/store.ts';
import { startTelemetry, stopTelemetry } from '../server/telemetry.ts';
import { runAdds } from './add-client.ts';
import { runCannon } from './cannon-client.ts';
import { describeMachine, loadAverage, machine, openAccount, printFiguresHeading, readFlags, round, startServer, tableRow, writeResults } from './support.ts';

const FLAGS = {
  rounds: { def: 2, help: 'runs of each mode, alternated (off, on, off, on…)' },
  adds: { def: 50_000, help: 'numbers added through POST …/numbers, 1,000 a request, one request at a time' },
  seconds: { def: 8, help: 'length of the autocannon run on a list page' },
  connections: { def: 16, help: 'keep-alive connections of the autocannon run' },
  mode: { def: '', help: 'off or on: one run in this process, its figures as JSON (what the alternated runs start)' },
} as const;
const opts = readFlags(FLAGS, { command: 'server-traces', example: 'BENCH_ADDS=20000', width: 12 });

interface RunFigures { mode: string; addsPerSecond: number; addP50Ms: number; pageRps: number; pageP50Ms: number; pageP99Ms: number; cpuMicrosPerPage: number; spans: number }

async function oneRun(mode: 'off' | 'on'): Promise<RunFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'cds-bench-traces-'));
  // The receiver in a process of its own, as in the demo: its parsing and writing are not the server's CPU.
  const file = join(dir, 'traces.jsonl');
  const receiver = mode === 'on' ? spawn(process.execPath, [fileURLToPath(new URL('../daemon/traces/receiver.ts', import.meta.url)), '--port', '0', '--file', file],
    { stdio: ['ignore', 'pipe', 'inherit'] }) : null;
  if (receiver) {
    let said = '';
    const url = await new Promise<string>((resolve, reject) => {
      receiver.stdout!.on('data', (c: Buffer) => {
        said += c.toString();
        const m = /listening on (http:\/\/\S+)/.exec(said);
        if (m) resolve(m[1]!);
      });
      receiver.on('exit', (code) => reject(new Error(`the trace receiver exited (${code}): ${said}`)));
    });
    // OTEL_TRACES_SAMPLER(_ARG) of the environment apply: e.g. traceidratio 0.01 for the cost of sampling.
    await startTelemetry(telemetrySettings(undefined, { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: url }, 'campaign-dialing-server'));
  }
  const store = new Store(join(dir, 'bench.db'));
  const server = await startServer(store);
  let figures: RunFigures | undefined;
  try {
    const account = await openAccount(server, 'Bench', 'America/New_York');
    const campaign = await server.consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, { name: 'Bench traces', type: 'Dynamic', state: 'Active' });
    const headers = { authorization: `Bearer ${account.token}` };
    const path = `/v1/accounts/${account.id}/campaigns/${campaign.id}/numbers`;
    const varNames = encodeURIComponent(JSON.stringify(['name', 'city']));
    const adds = await runAdds({ url: `${server.base}${path}?varNames=${varNames}`, headers, from: 0, numbers: opts.adds, batch: 1000, concurrency: 1 });
    if (adds.failures.length) throw new Error(adds.failures.join('\n'));
    const cpu = process.cpuUsage();
    const page = await runCannon({ base: server.base, paths: [`${path}?range=${encodeURIComponent('[0,99]')}`], headers, connections: opts.connections, seconds: opts.seconds });
    const used = process.cpuUsage(cpu);
    if (page.not200 || page.errors) throw new Error(`the list page answered ${page.not200} times other than 200, ${page.errors} errors`);
    const sortedAdds = [...adds.batchMs].sort((a, b) => a - b);
    figures = {
      mode, addsPerSecond: Math.round(adds.created / adds.seconds), addP50Ms: round(sortedAdds[Math.floor(sortedAdds.length / 2)]!, 2),
      pageRps: Math.round(page.requestsPerSecond), pageP50Ms: page.latencyMs.p50, pageP99Ms: page.latencyMs.p99,
      // The process's CPU less autocannon's own thread, per page served.
      cpuMicrosPerPage: round((used.user + used.system) / page.requests - page.clientCpuMicros, 1),
      spans: 0,
    };
  } finally {
    await server.app.close();
    await store.close();
    await stopTelemetry();
    if (receiver) {
      receiver.kill('SIGTERM');
      await once(receiver, 'exit');
    }
  }
  const spans = receiver ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
  rmSync(dir, { recursive: true, force: true });
  return { ...figures!, spans };
}

if (opts.mode) {
  if (opts.mode !== 'off' && opts.mode !== 'on') throw new Error(`--mode takes off or on; got ${opts.mode}`);
  console.log(JSON.stringify(await oneRun(opts.mode)));
} else {
  const loadAtStart = loadAverage();
  const runs: RunFigures[] = [];
  for (let i = 0; i < opts.rounds; i++) {
    for (const mode of ['off', 'on'] as const) {
      const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--mode', mode, '--adds', String(opts.adds), '--seconds', String(opts.seconds),
        '--connections', String(opts.connections)], { encoding: 'utf8' });
      const figures = JSON.parse(out.trim().split('\n').at(-1)!) as RunFigures;
      console.log(`${mode}: ${JSON.stringify(figures)}`);
      runs.push(figures);
    }
  }
  const m = machine(loadAtStart);
  const line = printFiguresHeading(96, [`${opts.adds} numbers added, list page ${opts.seconds} s × ${opts.connections} connections`, describeMachine(m)]);
  const row = (a: string, ...cells: string[]) => console.log(tableRow(a, cells, 18, 13));
  row('run', 'adds/s', 'add p50 ms', 'page req/s', 'page p50 ms', 'page p99 ms', 'CPU µs/page');
  for (const r of runs) row(`tracing ${r.mode}`, String(r.addsPerSecond), String(r.addP50Ms), String(r.pageRps), String(r.pageP50Ms), String(r.pageP99Ms), String(r.cpuMicrosPerPage));
  const mean = (mode: string, k: keyof RunFigures) => {
    const xs = runs.filter((r) => r.mode === mode).map((r) => r[k] as number);
    return xs.reduce((a, b) => a + b, 0) / xs.length;
  };
  const pct = (k: keyof RunFigures) => `${round((mean('on', k) / mean('off', k) - 1) * 100)}%`;
  row('on vs off (means)', pct('addsPerSecond'), pct('addP50Ms'), pct('pageRps'), pct('pageP50Ms'), pct('pageP99Ms'), pct('cpuMicrosPerPage'));
  console.log(line);
  writeResults('server-traces', { options: { adds: opts.adds, seconds: opts.seconds, connections: opts.connections }, machine: m, runs });
}
