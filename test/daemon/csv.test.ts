// The CSV source loses no row silently: a repeated contact id, a repeated phone number and a row with the wrong
// number of fields are record errors naming their lines, the rest of the file is taken, and `sync --dry-run` says
// what a start then pushes to the reference server.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validPhone } from '../../crm-stand-ins/contacts.ts';
import { Daemon } from '../../daemon/app.ts';
import { parseConfig } from '../../daemon/config.ts';
import { CsvSource } from '../../daemon/sources/csv.ts';
import type { PullPage } from '../../daemon/sources/source.ts';
import { redactPhone } from '../../daemon/sync/contacts.ts';
import { daemonCli as cli } from '../support/cli.ts';
import { REDIS_URL, RULES_OFF, campaignNumbers, dialerFixture, quietLog, testPrefix, type DialerFixture } from '../support/daemon.ts';
import { campaignValues, held, pullAndSettle, runErrors, runs, settle } from '../support/sync-checks.ts';

const OPS_TOKEN = 'csv-rows-admin-token-0123456789';
const MAPPING = { phone: ['phone', 'mobile'], defaultCountry: 'US', doNotCall: 'dnc', variables: { FirstName: 'first', City: 'city' } };

/** 555 line numbers without the country code, as people type them. */
const national = (e164: string) => `(${e164.slice(2, 5)}) ${e164.slice(5, 8)}-${e164.slice(8)}`;
const P = (i: number) => validPhone(i);
const SF = '+14155550100';

/** A file with every fault, each on a line of its own; the header is line 1. */
const FILE = [
  'id,phone,mobile,first,city,dnc',
  `c1,${P(1)},,Ann,Boston,no`, // 2
  `c2,${P(2)},${P(3)},Ben,Chicago,`, // 3
  `c3,${P(4)},,Cat,Denver,`, // 4
  `c1,${P(5)},,Ann,Austin,`, // 5: c1 again, refused
  `c4,"${national(P(1))}",,Dan,El Paso,`, // 6: line 2's number in another spelling, refused (no other number)
  `c5,${P(6)},"${national(P(3))}",Eve,Fresno,`, // 7: its mobile is line 3's: left out, its phone taken
  `c6,${P(7)},Fay,Gary,`, // 8: 5 fields, refused
  `c7,${P(8)},,Gil,Hilo,,an extra field`, // 9: 7 fields, refused
  `c8,${P(4)},,Hal,Ithaca,yes`, // 10: line 4's number, marked Do Not Call: taken, the mark keeps it out
  `c9,${P(5)},,Ivy,Juneau,`, // 11: line 5's number, but line 5 was refused: taken
  `c10,${P(9)},,"Jo`, // 12: a quoted value over two lines
  `Ann",Kent,`, // 13
  '', // 14
  `c11,+1 415-555-0100,,Kim,Lodi,`, // 15
  `c12,4155550100,,Lee,Mesa,`, // 16: line 15's number, refused
  `c6,${P(7)},,Fay,Gary,`, // 17: c6's line 8 was refused: this one is c6
].join('\n') + '\n';

/** What the campaign holds once the file is synced: the first row's, never a later one's. */
const EXPECTED: Record<string, string[]> = {
  [P(1)]: ['Ann', 'Boston'], [P(2)]: ['Ben', 'Chicago'], [P(3)]: ['Ben', 'Chicago'], [P(5)]: ['Ivy', 'Juneau'],
  [P(6)]: ['Eve', 'Fresno'], [P(7)]: ['Fay', 'Gary'], [P(9)]: ['Jo\nAnn', 'Kent'], [SF]: ['Kim', 'Lodi'],
};

/** The record errors the file gives, as the run stores them. */
const ERRORS = [
  { line: 5, contactId: 'c1', field: 'id', reason: 'contact id c1 is already on line 2: this row is refused' },
  { line: 6, contactId: 'c4', field: 'phone', value: redactPhone(P(1)), reason: `phone number ${redactPhone(P(1))} is already on line 2 (contact c1): this row has no other number and is refused` },
  { line: 7, contactId: 'c5', field: 'mobile', value: redactPhone(P(3)), reason: `phone number ${redactPhone(P(3))} is already on line 3 (contact c2): it is left out of this row, whose other numbers are taken` },
  { line: 8, contactId: '', field: '', reason: 'the row has 5 fields and the header 6: this row is refused (a value holding the delimiter needs quotes)' },
  { line: 9, contactId: '', field: '', reason: 'the row has 7 fields and the header 6: this row is refused (a value holding the delimiter needs quotes)' },
  { line: 16, contactId: 'c12', field: 'phone', value: redactPhone(SF), reason: `phone number ${redactPhone(SF)} is already on line 15 (contact c11): this row has no other number and is refused` },
];

function csvSync(path: string, campaignId = 'c') {
  return { id: 'csv', campaignId, source: { type: 'csv', path }, mapping: MAPPING };
}

async function readAll(path: string): Promise<PullPage[]> {
  const config = parseConfig({ dialer: { baseUrl: 'http://127.0.0.1:1', accountId: 'a', apiToken: 'not-used-0000' }, compliance: RULES_OFF, syncs: [csvSync(path)] }, 'test config', {});
  const pages: PullPage[] = [];
  for await (const page of new CsvSource(config.syncs[0]!).pull({ full: true, compare: false, since: null, resume: null, checkpoint: async () => {}, known: async () => new Set(), position: null, savePosition: async () => {} })) pages.push(page);
  return pages;
}

/** The counts `sync --dry-run` printed. */
function dryCounts(stdout: string): { add: number; replace: number; delete: number; invalid: number } {
  const m = /would add (\d+), replace (\d+), delete (\d+); (\d+) invalid records/.exec(stdout);
  if (!m) throw new Error(`no counts in the dry run's output:\n${stdout}`);
  return { add: Number(m[1]), replace: Number(m[2]), delete: Number(m[3]), invalid: Number(m[4]) };
}

describe('CSV source: which rows a read takes', () => {
  let dir: string;
  beforeAll(async () => { dir = await mkdtemp(join(tmpdir(), 'daemon-csv-rows-')); });
  afterAll(async () => { await rm(dir, { recursive: true, force: true }); });

  it('takes the first row of each id and number, and refuses the others by line, reading on to the end', async () => {
    const path = join(dir, 'contacts.csv');
    await writeFile(path, FILE);
    const pages = await readAll(path);
    const contacts = pages.flatMap((p) => p.contacts);
    expect(contacts.map((c) => [c.id, c.line])).toEqual([
      ['c1', 2], ['c2', 3], ['c3', 4], ['c5', 7], ['c8', 10], ['c9', 11], ['c10', 12], ['c11', 15], ['c6', 17],
    ]);
    // The repeated mobile is blanked; the row's own phone and values stay.
    expect(contacts.find((c) => c.id === 'c5')!.fields).toMatchObject({ phone: P(6), mobile: '', first: 'Eve' });
    expect(contacts.find((c) => c.id === 'c1')!.fields).toMatchObject({ phone: P(1), city: 'Boston' });
    // A number marked Do Not Call reaches the sync whoever else holds it: the mark must keep it out.
    expect(contacts.find((c) => c.id === 'c8')!.fields).toMatchObject({ phone: P(4), dnc: 'yes' });
    expect(pages.flatMap((p) => p.errors ?? [])).toEqual(ERRORS.map((e) => (e.contactId ? e : { line: e.line, reason: e.reason })));
  });

  it('says a refused duplicate carried a Do Not Call mark the first row lacks', async () => {
    const path = join(dir, 'marked-twice.csv');
    await writeFile(path, `id,phone,mobile,first,city,dnc\nc1,${P(1)},,Ann,Boston,\nc1,${P(1)},,Ann,Boston,yes\n`);
    const errors = (await readAll(path)).flatMap((p) => p.errors ?? []);
    expect(errors).toEqual([expect.objectContaining({ line: 3, reason: 'contact id c1 is already on line 2: this row is refused (its Do Not Call mark too: mark the row on that line)' })]);
  });

  it('reads 100,000 rows whose ids all repeat one row into one contact and 99,999 errors, in pages', async () => {
    const path = join(dir, 'same-id.csv');
    await writeFile(path, `id,phone,mobile,first,city,dnc\n${Array.from({ length: 100_000 }, (_, i) => `c1,${P(i)},,Ann,Boston,`).join('\n')}\n`);
    const pages = await readAll(path);
    expect(pages.flatMap((p) => p.contacts).map((c) => c.id)).toEqual(['c1']);
    expect(pages.reduce((n, p) => n + (p.errors?.length ?? 0), 0)).toBe(99_999);
    // No page holds more than a page's worth of rows, errors included.
    expect(Math.max(...pages.map((p) => p.contacts.length + (p.errors?.length ?? 0)))).toBeLessThanOrEqual(1000);
  });

  it('fails the read of a file that is not there with a final source error (not an uncaught error that ends the process)', async () => {
    const path = join(dir, 'gone.csv');
    await expect(readAll(path)).rejects.toMatchObject({ final: true, message: expect.stringMatching(/^csv .*gone\.csv: ENOENT: no such file or directory/) });
  });
});

describe('CSV source: the dry run says what the start pushes, for a file with every fault', () => {
  const redis = testPrefix();
  let dir: string;
  let file: string;
  let configFile: string;
  let f: DialerFixture;
  let d: Daemon | undefined;
  const env = () => ({ DIALER_TOKEN: f.token, OPS_TOKEN });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'daemon-csv-rows-'));
    file = join(dir, 'contacts.csv');
    configFile = join(dir, 'sync.yaml');
    await writeFile(file, FILE);
    f = await dialerFixture();
    // JSON is YAML; the token stays in the environment.
    await writeFile(configFile, JSON.stringify({
      redis: { url: REDIS_URL, prefix: redis.prefix },
      http: { host: '127.0.0.1', port: 0, adminToken: '${OPS_TOKEN}' },
      dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: '${DIALER_TOKEN}', rateLimit: { perSecond: 50, burst: 100 } },
      syncs: [csvSync(file, f.campaignId)],
      compliance: RULES_OFF,
      log: { level: 'error' },
    }, null, 2));
  });
  afterAll(async () => {
    await d?.close();
    await f?.server.close();
    await redis.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it('the dry run counts the file\'s adds and its refused rows, naming their lines', async () => {
    const dry = await cli(['sync', 'csv', '--dry-run', '--config', configFile], env());
    expect(dry.stderr).toBe('');
    expect(dry.code).toBe(0);
    expect(dryCounts(dry.stdout)).toEqual({ add: Object.keys(EXPECTED).length, replace: 0, delete: 0, invalid: ERRORS.length });
    for (const e of ERRORS) expect(dry.stdout).toContain(`  invalid  line ${e.line}: ${e.reason}\n`);
    expect(await campaignNumbers(f)).toEqual([]);
  });

  it('the start pushes what the dry run said, the first row of each, and records every refused row by line', async () => {
    const dry = dryCounts((await cli(['sync', 'csv', '--dry-run', '--config', configFile], env())).stdout);
    d = await Daemon.start(parseConfig(JSON.parse(await readFile(configFile, 'utf8')), configFile, env()), { log: quietLog });
    await settle(d);
    const [run] = await runs(d, 'csv');
    expect(run).toMatchObject({ mode: 'full', status: 'done', seen: 9, invalid: dry.invalid, pushed: dry.add, rejected: 0 });
    expect(await campaignValues(f, ['FirstName', 'City'])).toEqual(EXPECTED);
    expect((await held(d, 'csv', P(4)))).toBeNull();
    const stored = ERRORS.map((e) => expect.objectContaining({ ...e, value: e.value ?? '', code: 'bad_record' }));
    expect(await runErrors(d, 'csv', run!.id)).toEqual(stored);
    // The operations page and `status` read them the same way.
    const ops = await fetch(`${d.address}/ops/api/syncs`, { headers: { authorization: `Basic ${Buffer.from(`ops:${OPS_TOKEN}`).toString('base64')}` } });
    const csv = (await ops.json()).syncs.find((s: { sync: string }) => s.sync === 'csv');
    expect(csv.recordErrors).toEqual(expect.arrayContaining(ERRORS.map((e) => expect.objectContaining({ run: run!.id, line: e.line, reason: e.reason }))));
    const status = await cli(['status', '--config', configFile], env());
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`contact c1 line 5 id: ${ERRORS[0]!.reason}`);
    expect(status.stdout).toContain(`contact c4 line 6 phone=${redactPhone(P(1))}: ${ERRORS[1]!.reason}`);
  });

  it('the first row wins a number a later row held before: the dry run and the next run agree on the change', async () => {
    // A new first row has c1's number: c1's row (now line 3) is refused, so its row on line 6 is c1's now, and
    // takes c9's number from it (c9's row is refused in turn). Two numbers change hands, nothing else changes.
    await writeFile(file, FILE.replace('\n', `\nc20,"${national(P(1))}",,Zoe,Yuma,\n`));
    const dry = await cli(['sync', 'csv', '--dry-run', '--config', configFile], env());
    expect(dry.code).toBe(0);
    const counts = dryCounts(dry.stdout);
    expect(counts).toEqual({ add: 0, replace: 2, delete: 0, invalid: ERRORS.length + 1 });
    const run = await pullAndSettle(d!, 'csv');
    expect(run).toMatchObject({ status: 'done', invalid: counts.invalid, rejected: 0 });
    expect(await campaignValues(f, ['FirstName', 'City'])).toEqual({ ...EXPECTED, [P(1)]: ['Zoe', 'Yuma'], [P(5)]: ['Ann', 'Austin'] });
    const errors = await runErrors(d!, 'csv', run.id);
    expect(errors).toContainEqual(expect.objectContaining({
      line: 3, contactId: 'c1', reason: `phone number ${redactPhone(P(1))} is already on line 2 (contact c20): this row has no other number and is refused`,
    }));
    expect(errors).toContainEqual(expect.objectContaining({
      line: 12, contactId: 'c9', reason: `phone number ${redactPhone(P(5))} is already on line 6 (contact c1): this row has no other number and is refused`,
    }));
    // The refused rows' contacts left the file: what they held is the new rows' now.
    expect(await held(d!, 'csv', P(1))).toMatchObject({ contactId: 'c20' });
  });
});
