// `campaign-sync dnc load|add|remove|list|why|export --config FILE`: the operator's commands for the Do Not Call lists
// (the registry and state lists loaded from their folders, the company's own list, one number's answers and the
// auditor's export). cli.ts parses the arguments; the work is here. Each returns the exit code: 0, 1 when something
// failed or was refused, 2 when the command was asked wrongly.
import { replanHeld } from './replan.ts';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { basename } from 'node:path';
import type { Writable } from 'node:stream';
import type { Config, SyncConfig } from '../config.ts';
import { countryCode, toE164 } from '../phone.ts';
import type { RedisClient } from '../state/connection.ts';
import { DncKeys, type SyncKeys } from '../state/keys.ts';
import type { ListAnswer } from './answers.ts';
import { COMPANY_LIST, type DncListConfig } from './config.ts';
import { AUDIT_CSV_COLUMNS, auditCsvLine, auditDay, lastEvidence, type Evidence } from './evidence.ts';
import { copiesOf, loadFolder, type FolderLoad } from './folder.ts';
import { DncGate, type ListHealth, type Verdict } from './gate.ts';
import { OwnList } from './own-list.ts';

export const DNC_SUBCOMMANDS = ['load', 'add', 'remove', 'list', 'why', 'export'] as const;
export type DncSubcommand = (typeof DNC_SUBCOMMANDS)[number];

export interface DncOptions {
  json?: boolean;
  numbers?: boolean;
  file?: string;
  reason?: string;
  by?: string;
  country?: string;
  sync?: string;
  day?: string;
  out?: string;
}

/** What these commands read of a sync's runtime (sync/run.ts's SyncRuntime): its configuration, keys and routes. */
export interface SyncCampaigns { config: SyncConfig; state: { keys: SyncKeys }; routes?: SyncCampaigns[]; route?: unknown }

/** A daemon started without workers or HTTP (as `status` starts one): its syncs' runtimes hold their keys. */
export interface OpenedDaemon { redis: RedisClient; runtimes: Map<string, SyncCampaigns>; close(): Promise<void> }

/** The runtimes holding a sync's campaigns: a routed sync's routes, or the sync itself. */
const campaignsOf = (rt: SyncCampaigns): SyncCampaigns[] => rt.routes ?? [rt];

export interface DncContext {
  config: Config;
  /** The configuration file, for messages. */
  configFile: string;
  /** This command as the user runs it (commandName), for messages. */
  command: string;
  /** A Redis connection of the command's own (load, add, remove, list: they read and write the lists' keys only). */
  connect(): RedisClient;
  /** The daemon's syncs (why, export: they read a sync's campaign keys, built as the daemon builds them). */
  openDaemon(): Promise<OpenedDaemon>;
  stdout?: Writable;
  now?: () => number;
}

/** Numbers given to one add or remove, at most this many a transaction. */
const CHUNK = 1000;

const say = (line: string) => console.log(line);
const warn = (line: string) => console.error(line);

/** Runs `dnc <sub> <args...>`. */
export async function dncCommand(sub: DncSubcommand, args: string[], options: DncOptions, ctx: DncContext): Promise<number> {
  if (sub === 'why' || sub === 'export') {
    // What is asked is checked before the daemon's syncs are opened.
    const phone = sub === 'why' ? whyNumber(args, options) : null;
    if (typeof phone === 'number') return phone;
    const asked = sub === 'export' ? exportAsked(options, ctx) : null;
    const d = await ctx.openDaemon();
    try {
      return phone !== null ? await why(d, phone, options, ctx) : await exportDay(d, asked!, options, ctx);
    } finally {
      await d.close();
    }
  }
  const redis = ctx.connect();
  try {
    const keys = new DncKeys(ctx.config.redis.prefix);
    if (sub === 'load') return await load(redis, keys, args, ctx);
    if (sub === 'list') return await list(redis, keys, options, ctx);
    const changed = await change(redis, keys, sub, args, options, ctx);
    if (changed.phones.length) {
      // The syncs whose contacts hold these numbers plan them again at their next run: an added number leaves its
      // campaign, a removed one goes back unless something else keeps it out.
      const d = await ctx.openDaemon();
      try {
        const syncs = await replanHeld(d.redis, d.runtimes.values(), changed.phones);
        if (syncs.length) say(`the syncs holding ${changed.phones.length === 1 ? 'it' : 'them'} (${syncs.join(', ')}) plan ${changed.phones.length === 1 ? 'it' : 'them'} again at their next run (${sub === 'add' ? 'out of' : 'back into'} their campaigns)`);
      } finally {
        await d.close();
      }
    }
    return changed.code;
  } finally {
    redis.disconnect();
  }
}

/** A usage problem: said with the way to ask, exit code 2. */
class UsageError extends Error {}

export function isUsageError(err: unknown): err is Error { return err instanceof UsageError; }

// ---- load ------------------------------------------------------------------------------------------------------

async function load(redis: RedisClient, keys: DncKeys, names: string[], ctx: DncContext): Promise<number> {
  const catalog = ctx.config.doNotCallLists;
  if (!catalog.length) throw new UsageError(`${ctx.configFile} names no Do Not Call list to load (doNotCallLists: the registry and state lists, each with the folder its downloads go in)`);
  const unknown = names.filter((n) => !catalog.some((l) => l.name === n));
  if (unknown.length) throw new UsageError(`no Do Not Call list ${unknown.map((n) => `"${n}"`).join(', ')} in ${ctx.configFile}'s doNotCallLists (it has ${catalog.map((l) => l.name).join(', ')})${unknown.includes(COMPANY_LIST) ? `; the company's own list takes numbers from ${ctx.command} dnc add` : ''}`);
  const lists = names.length ? catalog.filter((l) => names.includes(l.name)) : catalog;
  let failed = 0;
  for (const config of lists) {
    const result = await loadFolder(copiesOf(redis, keys, config, ctx.now), config, { now: ctx.now });
    const [, health] = await new DncGate(redis, keys, { lists: [config], from: 'configuration' }, { now: ctx.now }).health();
    for (const line of loadLines(result, health!, ctx.command)) say(line);
    if (result.failed) failed++;
  }
  return failed ? 1 : 0;
}

const fileNames = (files: string[]) => files.map((f) => basename(f)).join(', ');
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function loadLines(r: FolderLoad, health: ListHealth, command: string): string[] {
  const did: string[] = [];
  if (r.loaded) did.push(`loaded ${r.loaded.folder} (${plural(r.loaded.files.length, 'file')}: ${fileNames(r.loaded.files)})`);
  for (const a of r.applied) did.push(`applied ${a.folder} (${plural(a.files.length, 'file')}: ${fileNames(a.files)})`);
  const lines = [`${r.list}: ${did.length ? did.join('; ') : r.failed ? 'nothing loaded' : `nothing newer than its copy${r.copy ? ` of ${r.copy.date}` : ''} in ${r.folder}`}`];
  for (const s of r.skipped) lines.push(`  skipped ${s}`);
  if (r.failed) lines.push(`  FAILED: ${r.failed}`);
  lines.push(`  ${healthLine(health, command)}`);
  return lines;
}

function healthLine(h: ListHealth, command: string): string {
  if (h.type === 'company') return `the company's own list, ${plural(h.numbers, 'number')} (${command} dnc add|remove)`;
  const scope = h.states ? `, states ${h.states.join(' ')}` : h.countries ? `, countries ${h.countries.join(' ')}` : '';
  const copy = h.date === null ? 'no copy' : `copy of ${h.date}, ${plural(h.ageDays!, 'day')} old (${h.maxAgeDays} at most), ${plural(h.areaCodes, 'area code')}, ${plural(h.numbers, 'number')}`;
  return `${h.type} list${scope}: ${copy}; ${h.cannotVouch ? `CANNOT VOUCH: ${h.cannotVouch}` : `vouches until ${new Date(h.staleAt!).toISOString()}`}`;
}

// ---- add, remove -----------------------------------------------------------------------------------------------

interface Given { text: string; where: string }

async function change(redis: RedisClient, keys: DncKeys, op: 'add' | 'remove', args: string[], options: DncOptions, ctx: DncContext): Promise<{ code: number; phones: string[] }> {
  const country = countryCode(options.country ?? 'US');
  if (!country) throw new UsageError(`--country ${JSON.stringify(options.country)}: a two-letter country code such as US (the country of numbers given without their country code)`);
  let by = options.by?.trim();
  if (!by && op === 'remove') throw new UsageError(`--by WHO is required: a number removed from the company's Do Not Call list may be called again, so the record names who decided it`);
  by ||= `cli:${userInfo().username}`;
  const given: Given[] = args.map((text, i) => ({ text, where: `argument ${i + 1}` }));
  if (options.file) {
    let text: string;
    try {
      text = await readFile(options.file, 'utf8');
    } catch (err) {
      throw new UsageError(`--file ${options.file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    text.split(/\r?\n/).forEach((line, i) => { if (line.trim()) given.push({ text: line, where: `${options.file}, line ${i + 1}` }); });
  }
  if (!given.length) throw new UsageError(`which numbers? give them as arguments (quoted when they hold spaces) or one a line in --file FILE`);

  const phones = new Set<string>();
  const refused: string[] = [];
  for (const g of given) {
    const r = toE164(g.text, country);
    if (r.ok) phones.add(r.e164);
    else refused.push(`  ${g.where}: ${JSON.stringify(g.text.trim().slice(0, 60))}: ${r.reason}`);
  }
  const own = new OwnList(redis, keys, COMPANY_LIST, { now: ctx.now });
  const all = [...phones];
  let changed = 0;
  for (let i = 0; i < all.length; i += CHUNK) {
    const chunk = all.slice(i, i + CHUNK);
    changed += op === 'add' ? await own.add(chunk, { by, reason: options.reason }) : await own.remove(chunk, { by, reason: options.reason });
  }
  const as = `by ${by}${options.reason?.trim() ? ` (${options.reason.trim()})` : ''}`;
  say(op === 'add'
    ? `added ${plural(changed, 'number')} to the company's Do Not Call list ${as}${all.length > changed ? `; ${all.length - changed} ${all.length - changed === 1 ? 'was' : 'were'} on it already` : ''}; it holds ${plural(await own.size(), 'number')}`
    : `removed ${plural(changed, 'number')} from the company's Do Not Call list ${as}${all.length > changed ? `; ${all.length - changed} ${all.length - changed === 1 ? 'was' : 'were'} not on it` : ''}; it holds ${plural(await own.size(), 'number')}`);
  if (refused.length) {
    warn(`refused ${plural(refused.length, 'number')} that cannot be read (the others were ${op === 'add' ? 'added' : 'removed'}):`);
    for (const line of refused) warn(line);
    return { code: 1, phones: all };
  }
  return { code: 0, phones: all };
}

// ---- list ------------------------------------------------------------------------------------------------------

async function list(redis: RedisClient, keys: DncKeys, options: DncOptions, ctx: DncContext): Promise<number> {
  const gate = new DncGate(redis, keys, { lists: ctx.config.doNotCallLists, from: 'configuration' }, { now: ctx.now });
  const health = await gate.health();
  const entries: Array<{ number: string; at: string; by: string; reason?: string }> = [];
  if (options.numbers) {
    // HSCAN may give a number twice (while the hash is resized): each is shown once.
    const seen = new Set<string>();
    let cursor = '0';
    do {
      const page = await gate.company.page(cursor);
      cursor = page.cursor;
      for (const e of page.entries) if (!seen.has(e.number)) { seen.add(e.number); entries.push(e); }
    } while (cursor !== '0');
    entries.sort((a, b) => (a.number < b.number ? -1 : a.number > b.number ? 1 : 0));
  }
  if (options.json) {
    say(JSON.stringify({ lists: health, ...(options.numbers ? { company: entries } : {}) }, null, 2));
    return 0;
  }
  for (const h of health) {
    say(`${h.list}: ${healthLine(h, ctx.command)}`);
    if (h.type === 'company') for (const e of entries) say(`  ${e.number}  added ${e.at} by ${e.by}${e.reason ? `: ${e.reason}` : ''}`);
  }
  if (!ctx.config.doNotCallLists.length) say(`(no registry or state list: ${ctx.configFile} has no doNotCallLists)`);
  return 0;
}

// ---- why -------------------------------------------------------------------------------------------------------

const VERDICT_WORDS: Record<Verdict, string> = {
  clear: 'may be added: no list holds it, and every list that covers it vouches for that',
  listed: 'never added: the company\'s own list holds it (no exemption lifts it)',
  exemptable: 'added only under an exemption of its contact (consent, a purchase, an inquiry): a registry or state list holds it',
  unvouched: 'not added unless its contact is exempt: a list cannot vouch for it (below)',
};

/** One sync's answer for a number: the verdict of the lists in force for it, and each of its campaigns' records. */
export interface WhySync {
  sync: string;
  verdict: Verdict;
  /** The registry and state lists are off for the sync (it makes no sales calls): why. */
  off?: string;
  /** Every list's answer (the company's first): which copy answered, or why it cannot vouch. */
  answers: ListAnswer[];
  /** The sync's campaign, or a routed sync's routes' campaigns. */
  campaigns: WhyCampaign[];
}

export interface WhyCampaign {
  campaignId: string;
  /** A route's id (`sync@campaign`), for a routed sync's campaign. */
  route?: string;
  /** Whether the campaign holds the number (the daemon's record of what it holds). */
  held: boolean;
  /** The check recorded when the number was last added to the campaign. */
  evidence: Evidence | null;
}

function answerLine(a: ListAnswer): string {
  const copy = a.copy ? ` (copy of ${a.copy.date}, ${a.copy.file}${a.copy.changes.length ? `, changes ${a.copy.changes.join(' ')}` : ''})` : '';
  const entry = a.entry ? ` (added ${a.entry.at} by ${a.entry.by}${a.entry.reason ? `: ${a.entry.reason}` : ''})` : '';
  return `${a.list}: ${a.status}${copy}${entry}${a.reason ? `: ${a.reason}` : ''}`;
}

function evidenceLine(e: Evidence): string {
  const lists = e.lists.map((l) => `${l.list} ${l.status}${l.date ? ` (copy of ${l.date}${l.file ? `, ${l.file}` : ''}${l.changes?.length ? `, changes ${l.changes.join(' ')}` : ''})` : ''}${l.note ? ` [${l.note}]` : ''}`).join('; ');
  return `last added ${e.at} by sync ${e.sync} for contact ${e.contact}, checked against: ${lists}${e.exemption ? `; let in by ${e.exemption}` : ''}`;
}

/** The number `why` asks about, in E.164, or the exit code when it cannot be read. */
function whyNumber(args: string[], options: DncOptions): string | number {
  const country = countryCode(options.country ?? 'US');
  if (!country) throw new UsageError(`--country ${JSON.stringify(options.country)}: a two-letter country code such as US (the country of a number given without its country code)`);
  // `why +1 201 555 0123` unquoted is one number in four arguments.
  const text = args.join(' ');
  if (!text.trim()) throw new UsageError('which phone number?');
  const read = toE164(text, country);
  if (read.ok) return read.e164;
  warn(`${JSON.stringify(text)} cannot be read as a phone number: ${read.reason}`);
  return 1;
}

async function why(d: OpenedDaemon, phone: string, options: DncOptions, ctx: DncContext): Promise<number> {
  const keys = new DncKeys(ctx.config.redis.prefix);
  const syncs: WhySync[] = [];
  for (const rt of d.runtimes.values()) {
    const sync = rt.config;
    const [judged] = await new DncGate(d.redis, keys, sync.dnc, { now: ctx.now }).judge([phone]);
    const campaigns = await Promise.all(campaignsOf(rt).map(async (c): Promise<WhyCampaign> => {
      const [held, evidence] = await Promise.all([d.redis.hexists(c.state.keys.have, phone), lastEvidence(d.redis, c.state.keys, phone)]);
      return { campaignId: c.config.campaignId, ...(c.route ? { route: c.config.id } : {}), held: held === 1, evidence };
    }));
    syncs.push({ sync: sync.id, verdict: judged!.verdict, ...(sync.dnc.off !== undefined ? { off: sync.dnc.off } : {}), answers: judged!.answers, campaigns });
  }
  if (options.json) {
    say(JSON.stringify({ phone, syncs }, null, 2));
    return 0;
  }
  const lines = [phone];
  for (const s of syncs) {
    lines.push(`  sync ${s.sync}: ${s.verdict}, ${VERDICT_WORDS[s.verdict]}`);
    if (s.off !== undefined) lines.push(`    registry and state lists off for this sync: ${s.off} (the company's own list holds it still)`);
    for (const a of s.answers) lines.push(`    ${answerLine(a)}`);
    for (const c of s.campaigns) {
      lines.push(`    campaign ${c.campaignId}${c.route ? ` (route ${c.route})` : ''} ${c.held ? 'holds it' : 'does not hold it'}; ` +
        (c.evidence ? evidenceLine(c.evidence) : 'no check recorded for it (not added since the lists were on, or its record expired)'));
    }
  }
  if (!syncs.length) lines.push(`  no sync in ${ctx.configFile}`);
  say(lines.join('\n'));
  return 0;
}

// ---- export ----------------------------------------------------------------------------------------------------

/** Whether `day` is a calendar day written YYYY-MM-DD. */
function isDay(day: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!m) return false;
  const at = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return at.getUTCMonth() === Number(m[2]) - 1 && at.getUTCDate() === Number(m[3]);
}

async function write(out: Writable, text: string): Promise<void> {
  if (!out.write(text)) await once(out, 'drain');
}

/** The sync and day `export` asks for (the sync one of the configuration's). */
function exportAsked(options: DncOptions, ctx: DncContext): { sync: string; day: string } {
  const ids = ctx.config.syncs.map((s) => s.id);
  if (!options.sync) throw new UsageError(`--sync SYNC_ID is required: one of ${ids.join(', ')}`);
  if (!ids.includes(options.sync)) throw new UsageError(`no sync "${options.sync}" in ${ctx.configFile}; the syncs are: ${ids.join(', ')}`);
  if (!options.day) throw new UsageError('--day YYYY-MM-DD is required: the day (UTC) whose records to export');
  if (!isDay(options.day)) throw new UsageError(`--day ${JSON.stringify(options.day)}: a calendar day written YYYY-MM-DD (UTC), such as 2026-11-29`);
  return { sync: options.sync, day: options.day };
}

async function exportDay(d: OpenedDaemon, { sync, day }: { sync: string; day: string }, options: DncOptions, ctx: DncContext): Promise<number> {
  const rt = d.runtimes.get(sync)!;
  let out: Writable = ctx.stdout ?? process.stdout;
  let file: ReturnType<typeof createWriteStream> | null = null;
  if (options.out) {
    file = createWriteStream(options.out);
    await new Promise<void>((resolve, reject) => { file!.once('open', () => resolve()); file!.once('error', reject); }).catch((err: NodeJS.ErrnoException) => {
      throw new UsageError(`--out ${options.out} cannot be written (${err.code ?? err.message})`);
    });
    out = file;
  }
  let count = 0;
  try {
    await write(out, `${AUDIT_CSV_COLUMNS.join(',')}\n`);
    // A routed sync's records are its routes' campaigns'; a campaign fed by several syncs holds all of theirs.
    const seen = new Set<string>();
    for (const c of campaignsOf(rt)) {
      const key = c.state.keys.dncAudit(day);
      if (seen.has(key)) continue;
      seen.add(key);
      for await (const page of auditDay(d.redis, c.state.keys, day)) {
        await write(out, page.map((e) => `${auditCsvLine(e)}\n`).join(''));
        count += page.length;
      }
    }
  } finally {
    if (file) await new Promise<void>((resolve, reject) => file!.end((err?: Error | null) => (err ? reject(err) : resolve())));
  }
  const kept = ctx.config.doNotCallAuditDays;
  warn(`${plural(count, 'record')} of ${day} (UTC) for sync ${rt.config.id}${options.out ? ` written to ${options.out}` : ''}` +
    (count ? '' : ` (records are kept ${kept} days after their day: doNotCallAuditDays)`));
  return 0;
}
