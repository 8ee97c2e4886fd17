// `dnc load|add|remove|list|why|export`, the real command line run as a child process against a real Redis (a test
// prefix), with registry files written by hand in a temp folder and the reference server as the syncs' dialer. The
// evidence `why` and `export` read is written with recordEvidence into the keys of a daemon started on the same
// configuration (the plan's own writing of it is tested with the plan).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Daemon } from '../../daemon/app.ts';
import { parseConfig } from '../../daemon/config.ts';
import { ListCopies } from '../../daemon/dnc/copies.ts';
import { recordEvidence, type Evidence } from '../../daemon/dnc/evidence.ts';
import { OwnList } from '../../daemon/dnc/own-list.ts';
import { DncKeys } from '../../daemon/state/keys.ts';
import { daemonCli } from '../support/cli.ts';
import { dialerFixture, quietLog, REDIS_URL, testPrefix, type DialerFixture } from '../support/daemon.ts';
import { createCampaign } from '../support/server.ts';

const DAY_MS = 86_400_000;
/** A UTC day `offset` days from the day the file started (the command runs on the real clock). */
const START = Date.now();
const day = (offset: number) => new Date(START + offset * DAY_MS).toISOString().slice(0, 10);
const TODAY = day(0);

describe('campaign-sync dnc', () => {
  const { prefix, cleanup } = testPrefix();
  const redis = new Redis(REDIS_URL);
  const keys = new DncKeys(prefix);
  const own = new OwnList(redis, keys, 'company');
  const dir = mkdtempSync(join(tmpdir(), 'dnc-command-'));
  const national = join(dir, 'national');
  const texas = join(dir, 'texas');
  const configFile = join(dir, 'sync.json');
  let f: DialerFixture;
  let raw: Record<string, unknown>;
  let east: string, west: string;

  const dnc = (...args: string[]) => daemonCli(['dnc', ...args, '--config', configFile]);
  const put = (folder: string, sub: string, name: string, lines: string[]) => {
    mkdirSync(join(folder, sub), { recursive: true });
    writeFileSync(join(folder, sub, name), lines.map((l) => `${l}\n`).join(''));
    return join(folder, sub, name);
  };

  beforeAll(async () => {
    f = await dialerFixture();
    east = (await createCampaign(f.server, f.accountId, { name: 'East', type: 'Dynamic', state: 'Active' })).id;
    west = (await createCampaign(f.server, f.accountId, { name: 'West', type: 'Dynamic', state: 'Active' })).id;
    raw = {
      redis: { url: REDIS_URL, prefix },
      http: { host: '127.0.0.1', port: 0 },
      dialer: { baseUrl: f.server.url, accountId: f.accountId, apiToken: f.token, timeZone: 'America/New_York' },
      log: { level: 'error' },
      doNotCallLists: [
        { name: 'national', type: 'registry', folder: national },
        { name: 'texas', type: 'state', states: ['TX'], maxAgeDays: 92, folder: texas },
      ],
      syncs: [
        { id: 'leads', campaignId: f.campaignId, source: { type: 'csv', path: join(dir, 'contacts.csv') }, mapping: { id: 'id', phone: 'phone', defaultCountry: 'US' },
          compliance: { off: 'test: not about calling windows' } },
        // Routed by the callee's clock: the calling-window rules on (nothing here enforces them: no process works).
        { id: 'surveys', source: { type: 'webhook', secret: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=' }, mapping: { id: 'id', phone: 'phone', defaultCountry: 'US' },
          doNotCall: { off: 'survey calls: not telemarketing' },
          routes: [{ campaignId: east, zones: ['America/New_York'] }, { campaignId: west, zones: ['America/Los_Angeles'] }] },
      ],
    };
    writeFileSync(configFile, JSON.stringify(raw, null, 2));
  });
  afterAll(async () => {
    await f?.server.close();
    await cleanup();
    redis.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });

  it('load: takes each list\'s downloads from its folder, says what it loaded, skipped and refused, and each list\'s age', async () => {
    put(national, `full-${day(-3)}`, '201.txt', ['2015550123', '2015550124']);
    put(national, `changes-${day(-1)}`, 'changes.txt', ['2015550125,A', '2015550124,D']);
    put(national, 'latest', '201.txt', ['2015550199']);
    put(texas, `full-${day(-2)}`, 'tx.txt', ['2145550123', '214555012x']);

    const r = await dnc('load');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`national: loaded full-${day(-3)} (1 file: 201.txt); applied changes-${day(-1)} (1 file: changes.txt)\n`);
    expect(r.stdout).toContain('  skipped latest: not a download (each download goes in a subfolder named full-YYYY-MM-DD or changes-YYYY-MM-DD, the download\'s date)\n');
    expect(r.stdout).toMatch(new RegExp(`  registry list: copy of ${day(-1)}, [12] days? old \\(31 at most\\), 1 area code, 2 numbers; vouches until `));
    expect(r.stdout).toContain('texas: nothing loaded\n  FAILED: tx.txt, line 2: "214555012x" is not a 10-digit number (2015550123 or 201,5550123)\n');
    expect(r.stdout).toContain('  state list, states TX: no copy; CANNOT VOUCH: no copy is loaded');
    const copies = new ListCopies(redis, keys, 'national');
    expect((await copies.lookup(['+12015550123', '+12015550124', '+12015550125'])).map((a) => a.status)).toEqual(['listed', 'not-listed', 'listed']);

    // Fixed, and only that list asked: the other has nothing newer.
    put(texas, `full-${day(-2)}`, 'tx.txt', ['2145550123']);
    const again = await dnc('load', 'texas');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`texas: loaded full-${day(-2)} (1 file: tx.txt)\n`);
    const nothing = await dnc('load', 'national');
    expect(nothing.code).toBe(0);
    expect(nothing.stdout).toContain(`national: nothing newer than its copy of ${day(-1)} in ${national}\n`);

    const unknown = await dnc('load', 'florida');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(`dnc load: no Do Not Call list "florida" in ${configFile}'s doNotCallLists (it has national, texas)`);
  });

  it('add and remove: the company\'s list, a number that cannot be read refused alone with its line, remove naming who', async () => {
    const file = join(dir, 'opt-outs.txt');
    writeFileSync(file, '(201) 555-0130\nphone\n\n+1 201 555 0131\n');
    const added = await daemonCli(['dnc', 'add', '2015550132', '020 7946 0958', '--file', file, '--reason', 'asked on the call', '--config', configFile]);
    expect(added.code).toBe(1);
    expect(added.stdout).toContain(`added 3 numbers to the company's Do Not Call list by cli:${userInfo().username} (asked on the call); it holds 3 numbers`);
    expect(added.stderr).toContain('refused 2 numbers that cannot be read (the others were added):\n');
    expect(added.stderr).toContain('  argument 2: "020 7946 0958": not a valid number for US\n');
    expect(added.stderr).toContain(`  ${file}, line 2: "phone": not a phone number\n`);
    expect((await own.lookup(['+12015550130', '+12015550131', '+12015550132'])).map((a) => [a.status, a.entry?.by, a.entry?.reason])).toEqual([
      ['listed', `cli:${userInfo().username}`, 'asked on the call'], ['listed', `cli:${userInfo().username}`, 'asked on the call'], ['listed', `cli:${userInfo().username}`, 'asked on the call'],
    ]);

    const gb = await dnc('add', '020 7946 0958', '--country', 'GB', '--by', 'agent 7');
    expect(gb.code).toBe(0);
    expect((await own.lookup(['+442079460958']))[0]).toMatchObject({ status: 'listed', entry: { by: 'agent 7' } });

    const noBy = await dnc('remove', '2015550132');
    expect(noBy.code).toBe(2);
    expect(noBy.stderr).toContain('dnc remove: --by WHO is required: a number removed from the company\'s Do Not Call list may be called again, so the record names who decided it');
    const removed = await dnc('remove', '2015550132', '2015550133', '--by', 'compliance officer', '--reason', 'entered by mistake');
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain('removed 1 number from the company\'s Do Not Call list by compliance officer (entered by mistake); 1 was not on it; it holds 3 numbers');
    expect((await own.log()).at(-1)).toMatchObject({ op: 'remove', number: '+12015550133', by: 'compliance officer', reason: 'entered by mistake' });

    const badCountry = await dnc('add', '2015550134', '--country', 'XX');
    expect(badCountry.code).toBe(2);
    expect(badCountry.stderr).toContain('--country "XX": a two-letter country code such as US');
  });

  it('list: the company\'s list with its entries, and each list\'s health, as text and as JSON', async () => {
    const json = await dnc('list', '--json', '--numbers');
    expect(json.code).toBe(0);
    const out = JSON.parse(json.stdout) as { lists: Array<Record<string, unknown>>; company: Array<{ number: string; by: string }> };
    expect(out.lists.map((l) => [l.list, l.type, l.numbers, l.date, l.cannotVouch])).toEqual([
      ['company', 'company', 3, null, null], ['national', 'registry', 2, day(-1), null], ['texas', 'state', 1, day(-2), null],
    ]);
    expect(out.company.map((e) => `${e.number} ${e.by}`)).toEqual([
      `+12015550130 cli:${userInfo().username}`, `+12015550131 cli:${userInfo().username}`, '+442079460958 agent 7',
    ]);

    const text = await dnc('list', '--numbers');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^company: the company's own list, 3 numbers \(\.\/dev daemon dnc add\|remove\)\n {2}\+12015550130 {2}added \S+ by cli:/);
    expect(text.stdout).toContain('\n  +442079460958  added ');
    expect(text.stdout).toContain(`\ntexas: state list, states TX: copy of ${day(-2)}, `);
    expect((await dnc('list')).stdout).not.toContain('+12015550130');
  });

  it('why and export: a number\'s answers for every sync and campaign, with the evidence recorded when it was added, and a day\'s audit CSV', async () => {
    // The syncs' keys as the daemon builds them.
    const d = await Daemon.start(parseConfig(raw, configFile, {}), { log: quietLog, workers: false, http: false });
    const leads = d.runtimes.get('leads')!.state.keys;
    const [eastKeys, westKeys] = d.runtimes.get('surveys')!.routes!.map((r) => r.state.keys);
    const evidence = (phone: string, campaign: string, sync: string, contact: string, at: string): Evidence => ({
      at, phone, campaign, sync, contact, lists: [
        { list: 'company', status: 'not-listed' },
        { list: 'national', status: 'not-listed', date: day(-1), file: '201.txt', changes: ['changes.txt'] },
      ],
    });
    await recordEvidence(redis, leads, [
      evidence('+12015550150', f.campaignId, 'leads', 'c1', `${TODAY}T08:00:00.000Z`),
      { ...evidence('+12015550125', f.campaignId, 'leads', 'c2, "the second"', `${TODAY}T08:01:00.000Z`), exemption: `written consent of ${day(-10)} (until withdrawn)` },
    ]);
    await redis.hset(leads.have, '+12015550150', '{}');
    await recordEvidence(redis, eastKeys!, [evidence('+12015550160', east, 'surveys@' + east, 'e1', `${TODAY}T09:00:00.000Z`)]);
    await recordEvidence(redis, westKeys!, [evidence('+13105550170', west, 'surveys@' + west, 'w1', `${TODAY}T09:30:00.000Z`)]);
    await recordEvidence(redis, leads, [evidence('+12015550151', f.campaignId, 'leads', 'c3', `${day(-1)}T23:59:00.000Z`)]);
    await d.close();

    const why = await dnc('why', '201', '555', '0150', '--json');
    expect(why.code).toBe(0);
    const answer = JSON.parse(why.stdout) as { phone: string; syncs: any[] };
    expect(answer.phone).toBe('+12015550150');
    // (What a state list answers for a number of another state is the gate's to say: only that it is asked here.)
    expect(answer.syncs.map((s) => [s.sync, s.verdict, s.off, s.answers.map((a: { list: string; status: string }) => (a.list === 'texas' ? a.list : `${a.list} ${a.status}`))])).toEqual([
      ['leads', 'clear', undefined, ['company not-listed', 'national not-listed', 'texas']],
      ['surveys', 'clear', 'survey calls: not telemarketing', ['company not-listed']],
    ]);
    expect(answer.syncs[0].answers[1].copy).toEqual({ file: '201.txt', changes: ['changes.txt'], date: day(-1) });
    expect(answer.syncs[0].campaigns).toEqual([{ campaignId: f.campaignId, held: true, evidence: evidence('+12015550150', f.campaignId, 'leads', 'c1', `${TODAY}T08:00:00.000Z`) }]);
    expect(answer.syncs[1].campaigns).toEqual([
      { campaignId: east, route: `surveys@${east}`, held: false, evidence: null },
      { campaignId: west, route: `surveys@${west}`, held: false, evidence: null },
    ]);

    // On the registry (a change list added it) and on the company list.
    const listed = await dnc('why', '+12015550125');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('  sync leads: exemptable, added only under an exemption of its contact (consent, a purchase, an inquiry): a registry or state list holds it\n');
    expect(listed.stdout).toContain(`    national: listed (copy of ${day(-1)}, 201.txt, changes changes.txt)\n`);
    expect(listed.stdout).toContain(`    campaign ${f.campaignId} does not hold it; last added ${TODAY}T08:01:00.000Z by sync leads for contact c2, "the second", checked against: company not-listed; national not-listed (copy of ${day(-1)}, 201.txt, changes changes.txt); let in by written consent of ${day(-10)} (until withdrawn)\n`);
    const company = await dnc('why', '2015550130');
    expect(company.stdout).toContain('  sync surveys: listed, never added: the company\'s own list holds it (no exemption lifts it)\n    registry and state lists off for this sync: survey calls: not telemarketing (the company\'s own list holds it still)\n');
    expect((await dnc('why', 'call me')).code).toBe(1);

    const csv = join(dir, 'audit.csv');
    const exported = await dnc('export', '--sync', 'leads', '--day', TODAY, '--out', csv);
    expect(exported.code).toBe(0);
    expect(exported.stderr).toContain(`2 records of ${TODAY} (UTC) for sync leads written to ${csv}`);
    expect(readFileSync(csv, 'utf8')).toBe([
      'at,phone,campaign,sync,contact,lists,exemption',
      `${TODAY}T08:00:00.000Z,+12015550150,${f.campaignId},leads,c1,"company: not-listed; national: not-listed (copy ${day(-1)}, 201.txt, changes changes.txt)",`,
      `${TODAY}T08:01:00.000Z,+12015550125,${f.campaignId},leads,"c2, ""the second""","company: not-listed; national: not-listed (copy ${day(-1)}, 201.txt, changes changes.txt)",written consent of ${day(-10)} (until withdrawn)`,
      '',
    ].join('\n'));
    // A routed sync: each route's campaign; to stdout.
    const routed = await dnc('export', '--sync', 'surveys', '--day', TODAY);
    expect(routed.code).toBe(0);
    expect(routed.stdout.split('\n').map((l) => l.split(',').slice(0, 2).join(','))).toEqual(['at,phone', `${TODAY}T09:00:00.000Z,+12015550160`, `${TODAY}T09:30:00.000Z,+13105550170`, '']);
    const yesterday = await dnc('export', '--sync', 'leads', '--day', day(-1));
    expect(yesterday.stdout.split('\n')).toHaveLength(3);

    const badDay = await dnc('export', '--sync', 'leads', '--day', '2026-02-30');
    expect(badDay.code).toBe(2);
    expect(badDay.stderr).toContain('dnc export: --day "2026-02-30": a calendar day written YYYY-MM-DD (UTC), such as 2026-11-29');
    const badSync = await dnc('export', '--sync', 'nope', '--day', TODAY);
    expect(badSync.code).toBe(2);
    expect(badSync.stderr).toContain(`dnc export: no sync "nope" in ${configFile}; the syncs are: leads, surveys`);
  });

  it('says which subcommands there are, and shows its help with the command\'s name', async () => {
    const bad = await dnc('purge');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('no dnc subcommand "purge" (one of load, add, remove, list, why, export)');
    const help = await daemonCli(['dnc', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: \.\/dev daemon dnc <subcommand> --config FILE/);
    const main = await daemonCli(['help']);
    expect(main.stdout).toContain('  dnc SUBCOMMAND        the Do Not Call lists');
  });
});
