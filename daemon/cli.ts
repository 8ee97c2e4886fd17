#!/usr/bin/env node
// `campaign-sync start|sync|status|check|dnc … --config FILE`, `init --source TYPE` (`./dev daemon …` in a checkout): the
// sync daemon's command line.
// Each command imports what it needs when it runs (`trace` reads a file and loads no queue, Redis or HTTP code), and
// the daemon's modules load after tracing has started, as the OpenTelemetry SDK wants.
import { parseArgs } from 'node:util';
import { commandName } from '../api/command-name.ts';
import type { Daemon } from './app.ts';
import type { Config } from './config.ts';

/** This command as the user runs it: campaign-sync when installed, ./dev daemon in a checkout. */
const CMD = commandName('campaign-sync', './dev daemon', process.env);

const HELP: Record<string, string> = {
  main: `usage: ${CMD} <command> --config FILE [options]

commands:
  init --source TYPE    write a commented configuration for a source (hubspot, pipedrive, salesforce, webhook, csv)  [--out FILE]
  check                 try every connection and permission each sync needs, read-only; exit 1 when anything fails  [--json]
  start                 run the daemon: workers, schedules, webhooks, /health, /metrics (SIGTERM stops it gracefully)
  sync SYNC_ID          run one sync now and wait until its numbers are pushed  [--full] [--compare] [--dry-run]
  status                each sync: last runs with counts, contacts and numbers held, parked records
  backfill SYNC_ID      mirror every call-detail record since a time again, adding only what the CRM lacks  --since ISO-TIME
  trace PHONE           a phone number's traces as timelines, from a trace receiver's file (no --config)  [--file traces.jsonl]
  dnc SUBCOMMAND        the Do Not Call lists: load the registry and state lists, add to and remove from the company's
                        own list, list them, why a number is held, export a day's audit records (${CMD} dnc --help)

${CMD} <command> --help shows the command's options; --version prints the version.`,
  start: `usage: ${CMD} start --config FILE
  Runs until SIGTERM/SIGINT; then finishes running jobs within shutdownTimeout. Several processes may run on one
  Redis with the same configuration: they share the queues.
  Runs the checks of \`check\` first: a sync they find would make a rule fail open (a Do Not Call field the CRM does
  not have, a windowed sync whose key cannot pause its campaign, a cap with no way to count calls), or whose campaign
  cannot take numbers, is refused (it adds no numbers and changes no campaign state; status and /ops say why) while
  the others run; refused syncs are checked again every 5 minutes.`,
  check: `usage: ${CMD} check --config FILE [--json]
  Every connection and permission each sync needs, tried read-only and cheaply (a few requests a sync): Redis, the
  dialer key's roles and campaigns, the CRM's login, permissions, selection and mapped fields, webhooks, calling
  windows. One line each, with what is wrong and how to fix it. Exit code 0 when nothing failed (warnings allowed), 1
  when something did, 2 when the configuration does not load.
  --json      the results as JSON: { ok, durationMs, checks: [{ sync, check, status, message, fix?, refuses? }], syncs }`,
  init: `usage: ${CMD} init --source hubspot|pipedrive|salesforce|webhook|csv [--out FILE]
  Writes a commented configuration (to stdout, or to FILE, never over an existing file) with a \${ENV} reference for
  every secret and every default spelled out; then fill in the values marked "your-" and run check on it.
  --source csv --out FILE also writes contacts.csv beside FILE (unless one exists): 5 sample contacts with fictional
  numbers, in the columns the configuration maps (id, phone, firstName); its calls go to calls.jsonl there.`,
  sync: `usage: ${CMD} sync SYNC_ID --config FILE [--full] [--compare] [--dry-run]
  --full      read the whole selection (not only what changed) and compare with the campaign
  --compare   read what changed and the whole selection's ids: contacts gone without a webhook leave (the comparison
              its compareEvery schedule runs)
  --dry-run   read the source and print the changes a sync would push; changes nothing`,
  status: `usage: ${CMD} status --config FILE [--json]
  --json      the same as JSON`,
  backfill: `usage: ${CMD} backfill SYNC_ID --since ISO-TIME --config FILE
  --since     where to start: 2026-11-01T00:00:00 (the dialer account's wall clock, as reports give it),
              a date (its midnight), or an instant with Z or an offset (converted to the account's time zone).
  Attempts already mirrored are skipped; older than mirror.keepDays, each is looked up in the CRM first.`,
  trace: `usage: ${CMD} trace PHONE [--file traces.jsonl] [--since 30m|ISO-TIME] [--country US]
  Prints every trace whose spans carry the number (cds.phone, cds.phones), and the traces linked to them, as
  indented timelines. Reads the JSON lines a trace receiver writes (in a checkout, the demo's: ./dev start --traces).
  --file      the receiver's file (default traces.jsonl in the folder it runs in; ./dev runs in the repository's root)
  --since     only spans of the number that started since then: a duration back from now (30m, 2h) or an ISO time
  --country   the country of a number given without its country code (default US)`,
  dnc: `usage: ${CMD} dnc <subcommand> --config FILE [options]
  The Do Not Call lists: the registry and state lists of doNotCallLists, loaded from the folder each names, and the
  company's own list. A number without its country code takes --country (default US).

  load [LIST...]        load each list's downloads newer than its copy from its folder (default: every list of
                        doNotCallLists): the newest full-YYYY-MM-DD subfolder, then every changes-YYYY-MM-DD after
                        it in date order; prints what it loaded, what it skipped and why, and each list's age after.
                        Exit 1 when a list's load failed (a refused file is named with its line).
  add NUMBER... [--file F] [--reason TEXT] [--by WHO] [--country US]
                        put numbers on the company's own list (F: one number a line); --by defaults to
                        cli:<your user name>. A number that cannot be read is refused (with its line in F), the
                        others are added; exit 1 when any was refused.
  remove NUMBER... --by WHO [--reason TEXT] [--file F] [--country US]
                        take numbers off the company's own list. --by is required (no default): a number removed
                        may be called again, so the record names who decided it.
  list [--json] [--numbers]
                        the company's own list (its size; with --numbers every entry: who added it, when, why) and
                        each registry and state list: its copy's date, age and area codes, or why it cannot vouch.
  why NUMBER [--json] [--country US]
                        for each sync: whether the number may be added (the verdict of the lists in force for it)
                        and every list's answer (which copy answered, or why it cannot vouch), whether its campaign
                        holds the number, and the check recorded when it was last added.
  export --sync SYNC_ID --day YYYY-MM-DD [--out FILE]
                        the audit records of the numbers added on that day (UTC) to the sync's campaign (a routed
                        sync: each route's campaign), whichever sync added them, as CSV with a header, to stdout
                        or FILE (replaced if it exists). Records are kept doNotCallAuditDays days (default 45).`,
};

function fail(message: string, code = 2): never {
  console.error(message);
  process.exit(code);
}

// A Redis state of a newer version ends every command with its sentence (which names both versions), not a stack.
process.on('uncaughtException', (err) => {
  if (err.name === 'NewerStateError') fail(err.message, 1);
  console.error(err);
  process.exit(1);
});

const argv = process.argv.slice(2);
if (argv[0] === '--version') {
  // The repository's version (one for every part) in a checkout, the installed package's in an install.
  console.log((await import('./version.ts')).VERSION);
  process.exit(0);
}
const command = argv[0] && !argv[0].startsWith('-') ? argv[0] : 'help';
let values: { config?: string; full?: boolean; compare?: boolean; 'dry-run'?: boolean; json?: boolean; help?: boolean; since?: string; file?: string; country?: string; source?: string; out?: string;
  numbers?: boolean; reason?: string; by?: string; sync?: string; day?: string };
let positionals: string[];
try {
  ({ values, positionals } = parseArgs({
    args: argv.slice(command === 'help' ? 0 : 1), allowPositionals: true,
    options: { config: { type: 'string', short: 'c' }, full: { type: 'boolean' }, compare: { type: 'boolean' }, 'dry-run': { type: 'boolean' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' }, since: { type: 'string' }, file: { type: 'string' }, country: { type: 'string' }, source: { type: 'string' }, out: { type: 'string' },
      numbers: { type: 'boolean' }, reason: { type: 'string' }, by: { type: 'string' }, sync: { type: 'string' }, day: { type: 'string' } },
  }));
} catch (err) {
  fail(`${(err as Error).message}\n\n${HELP[command] ?? HELP.main}`);
}
if (command === 'help' || !(command in HELP)) {
  console.log(HELP.main);
  process.exit(command === 'help' ? 0 : 2);
}
if (values.help) { console.log(HELP[command]); process.exit(0); }
if (command === 'trace') {
  // Reads a file only: no configuration, no Redis.
  if (!positionals[0]) fail(`which phone number?\n\n${HELP.trace}`);
  const { traceNumber } = await import('./traces/timeline.ts');
  // `trace +1 212 555 0199` unquoted is one number in four arguments.
  const answer = await traceNumber({ phone: positionals.join(' '), file: values.file ?? 'traces.jsonl', since: values.since, country: values.country });
  (answer.code === 0 ? console.log : console.error)(answer.text);
  process.exit(answer.code);
}
if (command === 'init') {
  // Writes files only: no configuration, no Redis.
  const { configTemplate, INIT_SOURCES, SAMPLE_CONTACTS, sampleContactsPath } = await import('./config-template.ts');
  if (!values.source || !(INIT_SOURCES as readonly string[]).includes(values.source)) fail(`--source is one of ${INIT_SOURCES.join(', ')}\n\n${HELP.init}`);
  const { text, env } = configTemplate(values.source, { command: CMD, file: values.out });
  const said: string[] = [];
  if (values.out) {
    const { writeFileSync } = await import('node:fs');
    const write = (file: string, content: string): boolean => {
      try {
        writeFileSync(file, content, { flag: 'wx', mode: 0o600 });
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
        return fail(`cannot write ${file}: ${(err as Error).message}`, 1);
      }
    };
    if (!write(values.out, text)) fail(`${values.out} exists: init never writes over a file (remove it, or give another --out)`, 1);
    said.push(`wrote ${values.out}`);
    if (values.source === 'csv') {
      const sample = sampleContactsPath(values.out);
      said.push(write(sample, SAMPLE_CONTACTS)
        ? `wrote ${sample}, which its source.path names: 5 sample contacts with fictional numbers (replace them with yours)`
        : `kept ${sample}, which its source.path names (it exists)`);
    }
  } else {
    process.stdout.write(text);
    if (values.source === 'csv') said.push(`its source.path is contacts.csv (with --out FILE, init writes a sample contacts.csv beside FILE)`);
  }
  console.error([...said.map((line) => `${line};`), `set these in the daemon's environment:`, ...Object.entries(env).map(([k, v]) => `  ${k}  ${v}`),
    `then: ${CMD} check --config ${values.out ?? 'FILE'}`].join('\n'));
  process.exit(0);
}
if (command === 'dnc') {
  // The subcommand is asked right before the configuration is read.
  const { DNC_SUBCOMMANDS } = await import('./dnc/command.ts');
  if (!(DNC_SUBCOMMANDS as readonly string[]).includes(positionals[0] ?? '')) {
    fail(`${positionals[0] ? `no dnc subcommand "${positionals[0]}"` : 'which dnc subcommand?'} (one of ${DNC_SUBCOMMANDS.join(', ')})\n\n${HELP.dnc}`);
  }
}
if (!values.config) fail(`--config FILE is required\n\n${HELP[command]}`);

const [{ ConfigError, dialerOf, loadConfig }, { startTelemetry, stopTelemetry, telemetrySettings }] = await Promise.all([import('./config.ts'), import('./telemetry.ts')]);
let config: Config;
try {
  config = loadConfig(values.config);
  // Tracing (off unless configured) starts before anything makes a span: queues, workers and connections read it.
  await startTelemetry(telemetrySettings(config.telemetry, process.env, 'campaign-sync'));
} catch (err) {
  if (err instanceof ConfigError) fail(err.message);
  if ((err as Error).message.startsWith('OTEL_')) fail(`${values.config}: ${(err as Error).message}`);
  throw err;
}
// Logs of the one-shot commands go to stderr, so their output (JSON for `status --json`) stays clean on stdout; written
// synchronously, so a log line can never land after the sentence a failing command ends with.
const [{ pino }, { createLogger }, { redisUnreachable }, { Daemon: DaemonClass }] = await Promise.all([
  import('pino'), import('./log.ts'), import('./state/connection.ts'), import('./app.ts')]);
const log = command === 'start' ? createLogger(config.log.level) : createLogger(config.log.level, pino.destination({ dest: 2, sync: true }));

if (command === 'check') {
  // Redis is one of the checks: an unreachable one is a result, not the end of the command.
  const { checkCommand } = await import('./check/command.ts');
  process.exit(await checkCommand(config, log, values.json ?? false));
}

/** How long a one-shot command waits for Redis before it says so and exits. */
const REDIS_WAIT_MS = 5000;

// The one-shot commands need Redis now: one that does not answer ends them with a sentence, not a silent wait.
if (command !== 'start') {
  const why = await redisUnreachable(config.redis, REDIS_WAIT_MS);
  if (why) fail(`${command}: ${why}. Is Redis running, and is redis.${config.redis.cluster?.length ? 'cluster' : 'url'} in ${values.config} right?`, 1);
}

if (command === 'dnc') {
  const [{ dncCommand, isUsageError }, { connectRedis }] = await Promise.all([import('./dnc/command.ts'), import('./state/connection.ts')]);
  const [sub, ...args] = positionals as [import('./dnc/command.ts').DncSubcommand, ...string[]];
  let code: number;
  try {
    code = await dncCommand(sub, args, values, {
      config, configFile: values.config, command: CMD,
      connect: () => {
        const redis = connectRedis(config.redis);
        redis.on('error', (err) => log.warn({ err: err.message }, 'redis connection error'));
        return redis;
      },
      // The syncs' keys as the daemon builds them (as `status` reads them): no workers, no HTTP.
      openDaemon: () => DaemonClass.start(config, { log, workers: false, http: false }),
    });
  } catch (err) {
    if (isUsageError(err)) fail(`dnc ${sub}: ${err.message}\n\n${HELP.dnc}`);
    throw err;
  }
  await stopTelemetry();
  process.exit(code);
}

function syncArg(): string {
  const id = positionals[0];
  if (!id) fail(`which sync? one of: ${config.syncs.map((s) => s.id).join(', ')}\n\n${HELP[command]}`);
  if (!config.syncs.some((s) => s.id === id)) fail(`no sync "${id}" in ${values.config}; the syncs are: ${config.syncs.map((s) => s.id).join(', ')}`);
  return id;
}

if (command === 'start') {
  // The signals are handled from the first moment, also while the start waits (for Redis, the checks): SIGTERM then
  // stops the start. The stop says so in the log, and a second signal, or a stop that overruns, ends the process.
  let daemon: Daemon | null = null;
  let starting: Promise<Daemon | null> | null = null;
  let stopped: Promise<void> | null = null;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopped) {
      log.warn({ signal }, 'stopping at once: a second signal');
      process.exit(1);
    }
    const started = Date.now();
    log.info({ signal, starting: !daemon?.started }, 'stopping');
    setTimeout(() => {
      log.error({ signal }, `the stop did not end within shutdownTimeout (${config.shutdownTimeout / 1000} s) and 3 s more: exiting without it`);
      process.exit(1);
    }, config.shutdownTimeout + 3000).unref();
    // Traces still buffered get a second, no more: an unreachable exporter must not hold the exit.
    const flushTraces = () => Promise.race([stopTelemetry(), new Promise((r) => setTimeout(r, 1000).unref())]);
    // (Closing a daemon that is starting ends its start; the start's end is then awaited.)
    const closing = daemon?.close();
    stopped = Promise.all([closing, starting]).then(() => daemon?.close()).then(flushTraces).then(() => {
      log.info({ signal, ms: Date.now() - started }, 'stopped');
      process.exit(0);
    });
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => stop(signal));
  const { DaemonStopped } = await import('./app.ts');
  starting = DaemonClass.start(config, {
    log, check: true,
    // From here on a signal closes the daemon being started, which ends the start.
    created: (d) => { daemon = d; if (stopped) void d.close(); },
  }).catch((err: Error) => {
    if (err instanceof DaemonStopped) return null;
    // A dialer clock that cannot be read or is too fast for the window's checks, a Redis state of a newer version, an
    // HTTP port in use: a sentence, not a stack.
    if (err instanceof ConfigError || err.message.startsWith('dialerClock:') || err.name === 'NewerStateError') fail(err.message, 1);
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE' || (err as NodeJS.ErrnoException).code === 'EACCES') {
      fail(`http: cannot listen on ${config.http.host}:${config.http.port}: ${err.message} (set http.port to a free port)`, 1);
    }
    throw err;
  });
  await starting;
} else if (command === 'sync' && values['dry-run']) {
  const id = syncArg();
  const [{ dryRun }, { SourceError }, { DialerError }] = await Promise.all([import('./sync/dry-run.ts'), import('./errors.ts'), import('./dialer.ts')]);
  const daemon = await DaemonClass.start(config, { log, workers: false, http: false });
  try {
    await dryRun(daemon.runtimes.get(id)!, (line) => console.log(line));
  } catch (err) {
    await daemon.close();
    // What the CRM or the dialer refused is the operator's to fix: said in a sentence, not a stack trace.
    if (!(err instanceof SourceError || err instanceof DialerError)) throw err;
    fail(`sync "${id}": the dry run stopped: ${err.message}`, 1);
  }
  await daemon.close();
} else if (command === 'sync') {
  const id = syncArg();
  const { readRun } = await import('./sync/run.ts');
  // The sync's checks first, before any calling window is enforced: a refused sync is checked again here, and one that
  // is (still) refused runs nothing and leaves its campaign as it is.
  const daemon = await DaemonClass.start(config, { log, http: false, schedules: false, check: [id] });
  const rt = daemon.runtimes.get(id)!;
  const [{ refusalOf }, { resultLine }] = await Promise.all([import('./check/refusals.ts'), import('./check/report.ts')]);
  const checked = daemon.firstCheck!;
  const refusal = await refusalOf(daemon.redis, rt.state.keys.meta);
  if (refusal) {
    await daemon.close();
    fail([`sync "${id}" is refused: it adds no numbers until this is fixed`, ...checked.syncs[id]!.refusals.map(resultLine),
      ...refusal.problems.filter((p) => p.observed).map((p) => `FAIL  ${id} ${p.check}: ${p.message}\n        fix: ${p.fix ?? ''}`)].join('\n'), 1);
  }
  await daemon.triggerPull(id, 'command line', values.full ?? false, values.compare ? 'compare' : 'pull');
  // Waits for a run of this sync that started after the trigger, then for its batches to be pushed.
  const since = Date.now();
  let run = null;
  for (;;) {
    const [latest] = await daemon.redis.lrange(rt.state.keys.runs, 0, 0);
    run = latest ? await readRun(daemon.redis, rt.state.keys.run(latest)) : null;
    let open = 0;
    for (const c of rt.routes ?? [rt]) open += await daemon.redis.hlen(c.state.keys.batches);
    if (run && Date.parse(run.startedAt) >= since - 1000 && run.status !== 'running' && open === 0) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  run = await readRun(daemon.redis, rt.state.keys.run(run.id));
  console.log(JSON.stringify(run, null, 2));
  await daemon.close();
  await stopTelemetry(); // the run's spans leave before the process does
  if (run?.status !== 'done') fail(`sync "${id}": run ${run?.id ?? '?'} ${run?.status ?? 'vanished'}: ${run?.error ?? 'no error recorded'}`, 1);
  process.exit(0);
} else if (command === 'backfill') {
  const id = syncArg();
  const sync = config.syncs.find((s) => s.id === id)!;
  if (!sync.mirror) fail(`sync "${id}" has no mirror configured (add a mirror block to it)`);
  if (!values.since) fail(`--since ISO-TIME is required\n\n${HELP.backfill}`);
  const { backfillStart } = await import('./mirror/mirror.ts');
  let since: string;
  try {
    since = backfillStart(values.since, dialerOf(config, sync).timeZone);
  } catch (err) {
    fail((err as Error).message);
  }
  const daemon = await DaemonClass.start(config, { log, http: false, schedules: false });
  const meta = daemon.runtimes.get(id)!.state.keys.mirror.meta;
  const asked = Date.now();
  await daemon.triggerMirror(id, 'backfill', since);
  let done: { at: string } | null = null;
  while (!done || Date.parse(done.at) < asked) {
    await new Promise((r) => setTimeout(r, 200));
    const raw = await daemon.redis.hget(meta, 'backfill');
    done = raw ? JSON.parse(raw) : null;
  }
  console.log(JSON.stringify(done, null, 2));
  await daemon.close();
  await stopTelemetry();
  process.exit(0);
} else if (command === 'status') {
  const daemon = await DaemonClass.start(config, { log, workers: false, http: false });
  const { syncStatus } = await import('./sync/status.ts');
  const all = [];
  for (const rt of daemon.runtimes.values()) all.push(await syncStatus(rt));
  if (values.json) console.log(JSON.stringify(all, null, 2));
  else for (const s of all) console.log(formatStatus(s));
  await daemon.close();
}

function formatStatus(s: Awaited<ReturnType<typeof import('./sync/status.ts').syncStatus>>): string {
  const to = s.routes ? `${s.routes.length} campaigns by zone: ${s.routes.map((r) => r.campaignId).join(', ')}` : `campaign ${s.campaignId}`;
  const lines = [`${s.sync}  (${s.source} → ${to})`,
    `  contacts held ${s.contacts}, numbers in the campaign ${s.numbers}, webhook deliveries waiting ${s.inbox}, dirty ${s.dirty}, open batches ${s.openBatches}, parked ${s.parked} (waiting for the window: ${s.waitingForWindow}), held by Do Not Call ${s.doNotCall}`,

    `  in the campaign, not this sync's: ${s.notThisSyncs} (${s.ownsCampaign ? 'taken as its own: ownsCampaign' : 'kept as they are: a sync deletes and replaces only the numbers it added'})`];
  if (s.refused) {
    lines.push(`  REFUSED since ${s.refused.at} (checked ${s.refused.checkedAt}): it adds no numbers until this is fixed`);
    for (const p of s.refused.problems) lines.push(`    ${p.check}: ${p.message}${p.fix ? `\n      fix: ${p.fix}` : ''}`);
  }
  const dl = s.doNotCallLists;
  lines.push(`  Do Not Call lists${dl.off ? ` (no registry or state list: ${dl.off})` : ''}: ${dl.lists.map((l) => `${l.type === 'company' ? `the company's (${l.numbers} numbers)` : `${l.list}: ${l.cannotVouch ? `CANNOT VOUCH (${l.cannotVouch})` : `copy of ${l.date}, ${l.ageDays} days old (${l.maxAgeDays} at most)`}`} keeps out ${l.keptOut}`).join('; ')}` +
    (dl.waiting ? `; waiting for a list that can vouch: ${dl.waiting}` : ''));
  if (s.compareEvery !== null) lines.push(`  last comparison with the whole selection ${s.lastCompareAt ?? 'never'} (every ${Math.round(s.compareEvery / 60_000)} min)`);
  for (const r of s.runs.slice(0, 5)) {
    lines.push(`  run ${r.id} ${r.mode} ${r.status} ${r.startedAt} ${r.durationMs ?? '-'} ms  seen ${r.seen} changed ${r.changed} left ${r.left} ` +
      `invalid ${r.invalid} planned ${r.planned} pushed ${r.pushed} deleted ${r.deleted} rejected ${r.rejected}${r.error ? `  error: ${r.error}` : ''}`);
  }
  for (const e of s.recordErrors) {
    lines.push(`  record error (run ${e.run}) contact ${e.contactId || '?'}${e.line ? ` line ${e.line}` : ''} ${e.field}${e.value ? `=${e.value}` : ''}: ${e.reason}`);
  }
  for (const p of s.parkedRecords) lines.push(`  parked ${p.phone} (contact ${p.contactId ?? '?'}): ${p.reason}`);
  const windowLine = (w: NonNullable<typeof s.window>, indent: string) => `${indent}calling window: campaign ${w.state ?? 'not set yet'}, next edge ${w.nextEdgeAt ?? 'none within 15 days'}; ` +
    `held by the window ${w.heldByWindow}, by a cap ${w.heldByCap}; calls inside their window ${w.callsInside}, outside ${w.callsOutside}; ${w.groups.length} window groups; ` +
    `numbers not added by the daemon ${w.holdings.foreign}${w.holdings.unjudged ? ` (${w.holdings.unjudged} with no zone)` : ''}, judged ${w.holdings.judgedAt ?? 'not yet'}${w.holdings.current ? '' : ' (not current)'}` +
    (w.heldClosedBecause ? `\n${indent}  held Paused: ${w.heldClosedBecause}` : '');
  lines.push(`  calling-window rules ${s.rules.summary}`);
  if (s.window) lines.push(windowLine(s.window, '  '));
  for (const r of s.routes ?? []) {
    lines.push(`  route → campaign ${r.campaignId} (${[...r.states, ...r.zones].join(', ')}): contacts ${r.contacts}, numbers ${r.numbers}, dirty ${r.dirty}, open batches ${r.openBatches}, parked ${r.parked} (waiting for the window: ${r.waitingForWindow}), held by Do Not Call ${r.doNotCall}, not this sync's ${r.notThisSyncs}`);
    if (r.window) lines.push(windowLine(r.window, '    '));
  }
  return lines.join('\n');
}
