// `./dev node bench/profile-summary.ts DIR [results.json] [--run N]`: where a request's time goes, from the CPU
// profiles of a benchmark run under `node --cpu-prof --cpu-prof-dir=DIR` (one file per thread).
//
// Each sample is charged to the first frame, from the leaf up, that has a source: builtins and native bindings
// (JSON.parse, SQLite's statement calls, hashing) count for the code that called them. A frame of the project counts
// as its file and function, one of node_modules as its package, one of Node's own modules as "node internals".
// With the results of `./dev bench server` beside it, only the samples inside the N-th autocannon run against the
// server are counted (default the first), and each thread's time is also given in µs per request answered then.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

interface CallFrame { functionName: string; url: string; lineNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
interface Profile { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] }

function readRun(path: string, n: number): { connections: number; requests: number; seconds: number; requestsPerSecond: number; window: [number, number] } {
  const results = JSON.parse(readFileSync(path, 'utf8')) as { cannon?: { server: { connections: number; requests: number; seconds: number; requestsPerSecond: number; window: [number, number] }[] } };
  const r = results.cannon?.server[n];
  if (!r) throw new Error(`${path} has no autocannon run number ${n} against the server`);
  return r;
}

/**
 * Sampled time (µs) within the window (the whole profile without one) by the name `classify` gives each sample's
 * stack (its frames from the leaf down to the root).
 */
function tally(profile: Profile, window: [number, number] | undefined, classify: (stack: CallFrame[]) => string): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const names = new Map<number, string>();
  const nameOf = (id: number): string => {
    let name = names.get(id);
    if (name === undefined) {
      const stack: CallFrame[] = [];
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) stack.push(byId.get(at)!.callFrame);
      name = classify(stack);
      names.set(id, name);
    }
    return name;
  };
  const out = new Map<string, number>();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!;
    const next = profile.timeDeltas[i + 1] ?? 0; // a sample stands for the time until the next one
    if (window && (t < window[0] || t > window[1])) continue;
    const name = nameOf(profile.samples[i]!);
    out.set(name, (out.get(name) ?? 0) + next);
  }
  return out;
}

/** Sampled time per category of the code that ran (see frameCategory), all of it, and all but idle. */
function charge(profile: Profile, window?: [number, number]) {
  const byCategory = tally(profile, window, (stack) => {
    for (const f of stack) {
      const found = frameCategory(f);
      if (found) return found;
    }
    return '(native, no caller with a source)';
  });
  const total = [...byCategory.values()].reduce((a, b) => a + b, 0);
  return { byCategory, total, busy: total - (byCategory.get('(idle)') ?? 0) };
}

/**
 * The steps of a page request, each a function of the project (file and name); a sample counts for the innermost
 * step on its stack. Fastify's own work, Node's HTTP parsing and socket writes are what remains outside them.
 */
// file '' is a builtin or native binding (no source).
const STAGES: { name: string; file: string; fn: RegExp }[] = [
  { name: 'authentication: token to key (hash, lookup, key record)', file: 'server/auth.ts', fn: /^authenticate$/ },
  { name: 'rate limiter and its headers', file: 'server/rate-limit.ts', fn: /^take$/ },
  { name: 'account lookup and role check (guard)', file: 'server/app.ts', fn: /^guard$/ },
  { name: 'campaign lookup', file: 'server/store/campaigns.ts', fn: /^byId$/ },
  { name: 'list-query decode (params, range, sort, filter)', file: 'server/http.ts', fn: /^listQuery$/ },
  { name: 'page handed to the reader thread', file: 'server/store/page-reader.ts', fn: /^numbers$/ },
  { name: 'page answer received from the reader', file: 'server/store/page-reader.ts', fn: /^(observed|)$/ },
  { name: 'reply: headers and send (fastify serialisation, socket write)', file: 'server/http.ts', fn: /^sendListJson$/ },
  { name: 'postMessage (the server thread: a request to the reader; the reader: a page back)', file: '', fn: /^postMessage$/ },
  { name: 'reader: BEGIN, COMMIT and the rest of its message handler', file: 'server/store/page-worker.ts', fn: /^$/ },
  { name: 'SQLite: the page statement', file: 'server/store/db.ts', fn: /^arrays$/ },
  { name: 'SQLite: counters (X-Total-Count)', file: 'server/store/number-pages.ts', fn: /^countFromCounters$/ },
  { name: 'page JSON joined', file: 'server/store/number-pages.ts', fn: /^pageJson$/ },
];

function chargeStages(profile: Profile, window?: [number, number]): Map<string, number> {
  return tally(profile, window, (stack) => {
    for (const f of stack) {
      const found = STAGES.find((st) => (st.file ? f.url.endsWith(`/${st.file}`) : f.url === '') && st.fn.test(f.functionName));
      if (found) return found.name;
    }
    const leaf = stack[0]!;
    return leaf.url === '' && leaf.functionName.startsWith('(') ? leaf.functionName : 'outside these steps (fastify, Node HTTP, sockets, messages)';
  });
}

/** The category of a frame; undefined for one without a source (a builtin or a native binding), which its caller is charged for. */
function frameCategory(f: CallFrame): string | undefined {
  if (f.functionName.startsWith('(') && f.url === '') {
    // (root) is the bottom of every stack: a sample that reaches it found no frame with a source.
    return f.functionName === '(root)' ? undefined : f.functionName;
  }
  if (!f.url) return undefined;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f.url);
  if (pkg) return `npm ${pkg[1]}`;
  if (f.url.startsWith('node:')) return `node internals (${nodeArea(f.url)})`;
  const own = /\/((?:server|api|bench)\/.+?)$/.exec(f.url);
  if (own) return `${own[1]} ${f.functionName || '(anonymous)'}`;
  return f.url;
}

/** Node's modules grouped by what they do for a request. */
function nodeArea(url: string): string {
  if (/_http_|internal\/http|node:http/.test(url)) return 'HTTP';
  if (/net|stream|tcp/.test(url)) return 'sockets, streams';
  if (/worker|message|per_context/.test(url)) return 'worker messages';
  if (/crypto/.test(url)) return 'crypto';
  if (/timers|process\/task_queues|async_hooks/.test(url)) return 'timers, ticks';
  return url.replace(/^node:(internal\/)?/, '');
}

/** The thread a profile is of, by the module it was started with (a worker's file, or the benchmark's on the main thread). */
function threadName(profile: Profile): string {
  const urls = new Set(profile.nodes.map((n) => n.callFrame.url));
  const entries = ['bench/server.ts', 'server/store/page-worker.ts', 'bench/cannon-client.ts', 'bench/page-client.ts', 'bench/add-client.ts',
    'bench/upload-client.ts', 'server/csv-worker.ts', 'server/phone-worker.ts', 'server/store/checkpoint-worker.ts'];
  const entry = entries.find((e) => [...urls].some((u) => u.endsWith(`/${e}`)));
  return entry === 'bench/server.ts' ? 'main thread (the server\'s event loop)' : entry ? `thread of ${entry}` : 'a thread of no known module';
}

function ms(us: number): string { return (us / 1000).toFixed(1); }
function pct(part: number, whole: number): string { return whole ? `${((100 * part) / whole).toFixed(1)}%` : '-'; }
function perRequest(us: number, requests: number): string { return requests ? (us / requests).toFixed(1) : '-'; }

function main(): void {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { run: { type: 'string', default: '0' }, top: { type: 'string', default: '14' } } });
  const [dir, resultsPath] = positionals;
  if (!dir) {
    console.error('usage: ./dev node bench/profile-summary.ts DIR-of-.cpuprofile-files [bench/results/server.json] [--run N] [--top N]');
    process.exit(2);
  }
  const run = resultsPath ? readRun(resultsPath, Number(values.run)) : null;
  if (run) console.log(`autocannon run at ${run.connections} connections: ${run.requests} requests in ${run.seconds} s (${run.requestsPerSecond} req/s)`);

  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort()) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    const { byCategory, total, busy } = charge(profile, run?.window);
    if (busy < 1_000) continue; // a thread that did (almost) nothing in the window
    console.log(`\n${file}: ${threadName(profile)}; ${ms(total)} ms sampled, ${ms(busy)} ms busy (${pct(busy, total)} of the window)` +
      (run ? `, ${perRequest(busy, run.requests)} µs a request` : ''));
    const line = (name: string, us: number) =>
      console.log(`  ${pct(us, busy).padStart(6)} ${ms(us).padStart(9)} ms${run ? `${perRequest(us, run.requests).padStart(8)} µs/req` : ''}  ${name}`);
    console.log('  by the code that ran (self time):');
    for (const [name, us] of [...byCategory].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) if (name !== '(idle)') line(name, us);
    const stages = chargeStages(profile, run?.window);
    if (stages.size > 1) {
      console.log('  by step of a request (time inside the step, callees included; a step inside another counts only for itself):');
      for (const [name, us] of [...stages].sort((a, b) => b[1] - a[1])) if (name !== '(idle)') line(name, us);
    }
  }
}

main();
