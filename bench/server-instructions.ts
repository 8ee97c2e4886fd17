// `./dev bench server-instructions [--against DIR] [--root DIR --runs 3 --adds 200 --batch 100 --pages 500]`: the reference server's
// machine instructions per request, counted by valgrind's callgrind: a figure that repeats for the same binary and
// requests whatever else the machine is doing, where wall-clock figures on a shared machine vary 2-3x from run to run.
// The server (`DIR/server/cli.ts`, so an older checkout can be measured with this same script and Node) runs under
// valgrind with a fixed random seed, a manual clock and no OTEL_* environment (tracing off), and V8 set to repeat
// itself: `--predictable --predictable-gc-schedule --random-seed=1` (no background threads; heap growth, hash seeds and
// Math.random not taken from time or chance) and its interpreter only (`--no-sparkplug --no-maglev --no-opt`: no JIT
// tiering; not `--jitless`, which forbids the WebAssembly that Node's TypeScript stripping runs on). Its interval
// timers (the webhook outbox's poll every 100 ms, with nothing to send) are stretched so that they never fire: they
// run by wall-clock time, which valgrind slows ~50x and other work on the machine varies, and would be counted with
// the requests. This process is its client, outside valgrind, one request at a time. After a warm-up the counters
// are zeroed (callgrind_control --zero), the adds are sent and counted (--dump), then the list pages likewise.
// Start-up and shut-down are not in the figures. What still follows the wall clock (an API key's lookup remembered
// for 1 s, the Date header's cache) leaves a spread of about 1% on the adds and under 0.3% on the pages.
// `--against DIR` measures a second checkout (e.g. `git worktree add ../before <commit>`, its node_modules hard-linked
// with `cp -al`) in runs alternated with this one's, and prints the difference.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CITIES, NAMES, phone, printFiguresHeading, readFlags, round, tableRow, writeResults } from './support.ts';

const FLAGS = {
  root: { def: '', help: 'checkout whose server/cli.ts is measured (default: this one)' },
  against: { def: '', help: 'a second checkout to measure alike, runs alternated (e.g. a git worktree of an older commit)' },
  runs: { def: 3, help: 'server processes, each measured alike (the spread shows how repeatable the count is)' },
  adds: { def: 200, help: 'POST …/numbers requests, one at a time' },
  batch: { def: 100, help: 'numbers in each add' },
  pages: { def: 500, help: 'GET …/numbers?range=[0,99] requests (a list page of 100), one at a time' },
  warmup: { def: 20, help: 'adds and pages sent before the counters are zeroed (first-use compiling, caches)' },
  jit: { def: false, help: 'let V8 compile (not interpreter only): closer to production, but the count moves with timing' },
} as const;
const opts = readFlags(FLAGS, { command: 'server-instructions', example: 'BENCH_RUNS=5', width: 8 });
interface Side { root: string; commit: string; runs: RunCounts[] }
const side = (dir: string): Side => {
  const root = resolve(dir);
  return { root, commit: execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(), runs: [] };
};
const sides = [side(opts.root || fileURLToPath(new URL('..', import.meta.url))), ...(opts.against ? [side(opts.against)] : [])];
const INTERPRETER = ['--no-sparkplug', '--no-maglev', '--no-opt'];
const PREDICTABLE = ['--predictable', '--predictable-gc-schedule', '--random-seed=1'];
/** Loaded before the server: every setInterval at ~24 days (the most a timer takes), so none fires during a run. */
const NO_INTERVALS = `data:text/javascript,${encodeURIComponent('const s = globalThis.setInterval; globalThis.setInterval = (f, ms, ...a) => s(f, 2 ** 31 - 1, ...a);')}`;
const CONSOLE_TOKEN = 'console_instructions_bench_0000000000000000';

interface RunCounts { adds: number; pages: number }

/** Waits for a line of the child's stdout that matches `re`; its match. */
function awaitLine(child: ChildProcess, re: RegExp, what: string): Promise<RegExpExecArray> {
  let said = '';
  return new Promise((done, fail) => {
    const onData = (c: Buffer) => {
      said += c.toString();
      const m = re.exec(said);
      if (m) { child.stdout!.off('data', onData); done(m); }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => fail(new Error(`${what}: the server exited (${code}) before it said ${re}: ${said}`)));
  });
}

/** The instructions (Ir) of the one callgrind dump of `pid` in `dir` not in `seen` (which it joins). */
function dumpTotal(dir: string, pid: number, seen: Set<string>): number {
  const files = readdirSync(dir).filter((f) => f.startsWith(`callgrind.out.${pid}.`) && !seen.has(f));
  if (files.length !== 1) throw new Error(`expected one new callgrind dump in ${dir}; found ${files.join(', ') || 'none'}`);
  seen.add(files[0]!);
  const text = readFileSync(join(dir, files[0]!), 'utf8');
  const m = /^(?:totals|summary): (\d+)/m.exec(text);
  if (!m) throw new Error(`no totals in ${files[0]}`);
  return Number(m[1]);
}

async function oneRun(root: string): Promise<RunCounts> {
  const dir = mkdtempSync(join(tmpdir(), 'cds-bench-instr-'));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  const node = [...PREDICTABLE, ...(opts.jit ? [] : INTERPRETER), '--import', NO_INTERVALS];
  const server = spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${join(dir, 'callgrind.out.%p')}`, process.execPath, ...node,
    join(root, 'server/cli.ts'), '--port', '0', '--db', ':memory:', '--seed', '1', '--clock', 'manual', '--rate-limit', 'off'],
  { cwd: root, env: { ...env, CONSOLE_TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  server.stderr!.on('data', (c: Buffer) => { stderr += c.toString(); });
  try {
    const base = (await awaitLine(server, /listening on (http:\/\/\S+)/, 'start'))[1]!;
    const consolePost = async <T>(path: string, body: unknown): Promise<T> => {
      const res = await fetch(`${base}/console${path}`, { method: 'POST', body: JSON.stringify(body), headers: { authorization: `Bearer ${CONSOLE_TOKEN}`, 'content-type': 'application/json' } });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`POST /console${path}: ${res.status} ${text.slice(0, 500)}`);
      return JSON.parse(text) as T;
    };
    const account = await consolePost<{ id: string }>('/accounts', { name: 'Bench', timezone: 'America/New_York' });
    const { token } = await consolePost<{ token: string }>(`/accounts/${account.id}/apiKeys`, { name: 'bench', roles: ['CampaignAdmin'] });
    const campaign = await consolePost<{ id: string }>(`/accounts/${account.id}/campaigns`, { name: 'Bench instructions', type: 'Dynamic', state: 'Active' });
    const path = `/v1/accounts/${account.id}/campaigns/${campaign.id}/numbers`;
    const addUrl = `${base}${path}?varNames=${encodeURIComponent(JSON.stringify(['name', 'city']))}`;
    const pageUrl = `${base}${path}?range=${encodeURIComponent('[0,99]')}`;
    const auth = { authorization: `Bearer ${token}` };
    let next = 0;
    const add = async () => {
      const body = JSON.stringify(Array.from({ length: opts.batch }, (_, j) => {
        const i = next + j;
        return { number: phone(i), varValues: [NAMES[i % NAMES.length]!, CITIES[i % CITIES.length]!] };
      }));
      next += opts.batch;
      const res = await fetch(addUrl, { method: 'POST', body, headers: { ...auth, 'content-type': 'application/json' } });
      const text = await res.text();
      if (res.status !== 201) throw new Error(`add: ${res.status} ${text.slice(0, 300)}`);
    };
    const page = async () => {
      const res = await fetch(pageUrl, { headers: auth });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`page: ${res.status} ${text.slice(0, 300)}`);
    };
    for (let i = 0; i < opts.warmup; i++) await add();
    for (let i = 0; i < opts.warmup; i++) await page();
    const control = (flag: string) => execFileSync('callgrind_control', [flag, String(server.pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const seen = new Set<string>();
    control('--zero');
    for (let i = 0; i < opts.adds; i++) await add();
    control('--dump');
    const adds = dumpTotal(dir, server.pid!, seen);
    control('--zero');
    for (let i = 0; i < opts.pages; i++) await page();
    control('--dump');
    const pages = dumpTotal(dir, server.pid!, seen);
    return { adds, pages };
  } catch (err) {
    throw new Error(`${(err as Error).message}\nvalgrind said: ${stderr.slice(-2000)}`);
  } finally {
    server.kill('SIGTERM');
    if (server.exitCode === null) await once(server, 'exit');
    rmSync(dir, { recursive: true, force: true });
  }
}

for (let i = 0; i < opts.runs; i++) {
  for (const sd of sides) {
    const r = await oneRun(sd.root);
    console.log(`${sd.commit} run ${i + 1}: ${r.adds} instructions in ${opts.adds} adds, ${r.pages} in ${opts.pages} pages`);
    sd.runs.push(r);
  }
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const figures = sides.map((sd) => {
  const perAdd = sd.runs.map((r) => r.adds / opts.adds);
  const perPage = sd.runs.map((r) => r.pages / opts.pages);
  return { ...sd, perAdd, perPage, meanPerAdd: mean(perAdd), meanPerPage: mean(perPage) };
});
const spread = (xs: number[]) => `${round((Math.max(...xs) / Math.min(...xs) - 1) * 100, 2)}%`;
const line = printFiguresHeading(110, [`${opts.runs} runs a checkout, node --predictable${opts.jit ? '' : ', interpreter only'}, under callgrind`,
  `${opts.adds} adds of ${opts.batch} numbers, ${opts.pages} list pages of 100, one at a time`]);
const row = (a: string, ...cells: string[]) => console.log(tableRow(a, cells, 30, 14));
row('instructions per request', ...Array.from({ length: opts.runs }, (_, i) => `run ${i + 1}`), 'mean', 'spread');
for (const f of figures) {
  row(`add, ${f.commit}`, ...f.perAdd.map((x) => String(Math.round(x))), String(Math.round(f.meanPerAdd)), spread(f.perAdd));
  row(`list page, ${f.commit}`, ...f.perPage.map((x) => String(Math.round(x))), String(Math.round(f.meanPerPage)), spread(f.perPage));
}
if (figures.length === 2) {
  const [a, b] = figures as [typeof figures[0], typeof figures[0]];
  const pct = (x: number, y: number) => `${x >= y ? '+' : ''}${round((x / y - 1) * 100, 2)}%`;
  console.log(`${a.commit} against ${b.commit} (means): add ${pct(a.meanPerAdd, b.meanPerAdd)}, list page ${pct(a.meanPerPage, b.meanPerPage)}`);
}
console.log(line);
writeResults('server-instructions', { options: opts, sides: figures });
