// `./dev bench csv-read [--rows 1000000]`: what reading a CSV file costs the daemon's CSV source alone (no Redis, no
// dialer): rows/s and the reading process's peak memory, for a file with the faults people's files have.
//
// The file (id, phone, firstName, company; phones as people type them, crm-stand-ins/contacts.ts) is written to a
// temp dir; in every 1,000 rows one has an invalid phone number, one repeats the id of a row 10 rows before it, one
// repeats an earlier row's phone number in another spelling, and one has a field too many. A child process (so its
// memory is its own) then reads it through CsvSource.pull as a full sync run does, and reports the time from its
// first to its last page and the CPU time it took (which other processes on a shared machine disturb far less than
// the wall time), the contacts and errors of the pages, its VmHWM (peak RSS) and its largest heap between pages
// (garbage included; `--live-heap`: also the largest live heap). `--map` maps each page as the sync does after the
// read (mapContact), so that the figures are the daemon's whole cost of a row before Redis; its errors are counted too. Results go to bench/results/csv-read-<timestamp>.json.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatePeople, validPhone } from '../crm-stand-ins/contacts.ts';
import { parseConfig } from '../daemon/config.ts';
import { CsvSource } from '../daemon/sources/csv.ts';
import { mapContact } from '../daemon/sync/contacts.ts';
import { MB, loadAverage, machine, readFlags, round, writeResults } from './support.ts';

const FLAGS = {
  rows: { def: 1_000_000, help: 'rows of the generated file (in every 1,000: an invalid phone, a repeated id, a repeated phone, a field too many)' },
  read: { def: '', help: 'read this file and print the figures as JSON (what the child process does)' },
  keep: { def: false, help: 'keep the generated file (its path is printed)' },
  map: { def: false, help: 'also map each page\'s contacts as the sync does (mapContact: numbers in E.164, variables)' },
  'live-heap': { def: false, help: 'also collect garbage every 100 pages and report the largest live heap (slows the read)' },
} as const;
const opts = readFlags(FLAGS, { command: 'csv-read', example: 'BENCH_ROWS=100000', width: 6 });

/** The faults of every block of 1,000 rows, by the row's index in its block. */
const FAULT = { invalidPhone: 999, repeatedId: 998, repeatedPhone: 997, extraField: 996 } as const;

interface ReadFigures { seconds: number; cpuSeconds: number; contacts: number; errors: number; peakRssMb: number; peakHeapMb: number; liveHeapMb: number | null }

/** +1AAABBBCCCC as people type it without the country code: (AAA) BBB-CCCC. */
const national = (e164: string) => `(${e164.slice(2, 5)}) ${e164.slice(5, 8)}-${e164.slice(8)}`;

async function writeCsv(path: string, rows: number): Promise<void> {
  const out = createWriteStream(path);
  out.write('id,phone,firstName,company\n');
  for (let start = 0; start < rows; start += 10_000) {
    let text = '';
    for (const p of generatePeople(Math.min(10_000, rows - start), 1, start)) {
      const slot = p.index % 1000;
      const id = slot === FAULT.repeatedId ? p.index - 9 : p.index + 1;
      // The row 500 before it, its number written without the country code: the same number once normalized.
      const phone = slot === FAULT.invalidPhone ? 'n/a' : slot === FAULT.repeatedPhone ? national(validPhone(p.index - 500)) : p.phone;
      text += `${id},"${phone}",${p.firstName},${p.company}${slot === FAULT.extraField ? ',an extra field' : ''}\n`;
    }
    if (!out.write(text)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** The child's side: one full read of `path`, as a sync run reads it. */
async function read(path: string): Promise<ReadFigures> {
  const config = parseConfig({
    dialer: { baseUrl: 'http://127.0.0.1:1', accountId: 'bench', apiToken: 'bench-token-not-used' },
    compliance: { off: 'bench: the CSV source alone' },
    syncs: [{ id: 'csv-read', campaignId: 'c', source: { type: 'csv', path }, mapping: { phone: 'phone', defaultCountry: 'US', variables: { FirstName: 'firstName', Company: 'company' } } }],
  });
  const source = new CsvSource(config.syncs[0]!);
  let contacts = 0, errors = 0, peakHeap = 0, pages = 0, live: number | null = null;
  const collect = opts['live-heap'] ? (globalThis as { gc?: () => void }).gc : undefined;
  const started = performance.now();
  const cpu = process.cpuUsage();
  for await (const page of source.pull({ full: true, compare: false, since: null, resume: null, checkpoint: async () => {}, known: async () => new Set(), position: null, savePosition: async () => {} })) {
    contacts += page.contacts.length;
    errors += page.errors?.length ?? 0;
    if (opts.map) for (const c of page.contacts) errors += mapContact(c, config.syncs[0]!.mapping).errors.length;
    peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
    if (collect && ++pages % 100 === 0) {
      collect();
      live = Math.max(live ?? 0, process.memoryUsage().heapUsed);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) * 1024;
  return { seconds: round(seconds, 2), cpuSeconds: round((used.user + used.system) / 1e6, 2), contacts, errors, peakRssMb: round(hwm / MB), peakHeapMb: round(peakHeap / MB), liveHeapMb: live === null ? null : round(live / MB) };
}

if (opts.read) {
  console.log(JSON.stringify(await read(opts.read)));
} else {
  const load = loadAverage();
  const dir = mkdtempSync(join(tmpdir(), 'bench-csv-read-'));
  const file = join(dir, 'contacts.csv');
  try {
    await writeCsv(file, opts.rows);
    const mb = round(statSync(file).size / MB);
    console.log(`CSV file: ${opts.rows} rows, ${mb} MB (${file})`);
    const child = spawn(process.execPath, [...(opts['live-heap'] ? ['--expose-gc'] : []), fileURLToPath(import.meta.url), '--read', file, ...(opts['live-heap'] ? ['--live-heap'] : []), ...(opts.map ? ['--map'] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (b: Buffer) => { stdout += b.toString(); });
    const [code] = await once(child, 'close') as [number | null];
    if (code !== 0) throw new Error(`the reading process exited ${code}`);
    const figures = JSON.parse(stdout.trim().split('\n').at(-1)!) as ReadFigures;
    console.log(`read in ${figures.seconds} s (${Math.round(opts.rows / figures.seconds).toLocaleString('en')} rows/s; CPU ${figures.cpuSeconds} s, ` +
      `${round(figures.cpuSeconds * 1e6 / opts.rows, 2)} µs a row): ` +
      `${figures.contacts} contacts, ${figures.errors} ${opts.map ? 'record' : 'row'} errors; peak RSS ${figures.peakRssMb} MB, largest heap between pages ${figures.peakHeapMb} MB` +
      (figures.liveHeapMb === null ? '' : `, largest live heap ${figures.liveHeapMb} MB`));
    writeResults(`csv-read-${new Date().toISOString().replace(/[:.]/g, '-')}`, { rows: opts.rows, fileMb: mb, ...figures, machine: machine(load) });
  } finally {
    if (opts.keep) console.log(`kept ${file}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}
