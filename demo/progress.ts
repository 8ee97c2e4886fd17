// The demo's progress view: counts read over HTTP from the CRM stand-in, the dialer's API and the daemon's operations
// API, drawn as a few lines redrawn in place on a terminal, or as one plain line per refresh otherwise.

export const STATUSES = ['NotContacted', 'Contacting', 'RetryPending', 'Success', 'Failure'] as const;
type Status = (typeof STATUSES)[number];

/** The CRM stand-in the demo reads counts from; `phones`: the fields the daemon's mapping reads phone numbers from. */
export type CrmSource =
  | { kind: 'hubspot'; url: string; token: string; apiVersion: string; phones: readonly string[] }
  | { kind: 'salesforce'; url: string; token: () => Promise<string>; campaignId: string; phones: readonly string[] };

export interface ProgressSources {
  crm: CrmSource;
  serverUrl: string;
  accountId: string;
  campaignId: string;
  /** A Campaign Reader key of its own. */
  viewToken: string;
  daemonUrl: string;
  adminToken: string;
  syncId: string;
  /** The dialer's clock (the server's GET /console/clock, with the console token): the windows run by it. */
  consoleToken: string;
  /** When the demo started (ms): a contact the CRM modified since is a change someone made, not one of the seeded ones. */
  changesSince: number;
}

/** One reading; a count that could not be read this time is null (the view keeps showing the last one it had). */
export interface Counts {
  crmContacts: number | null;
  synced: number | null;
  byStatus: Record<Status, number | null>;
  calls: number | null;
  activities: number | null;
  /** The dialer's time (its clock runs `speed` times faster than the real one), which the calling windows follow. */
  dialerClock: { now: string; speed: number | null } | null;
  daemon: {
    contacts: number; numbers: number; parked: number; mirrorParked: number | null; lastRun: string | null;
    /** Numbers held out because a contact holding them is marked Do Not Call. */
    doNotCall: number;
    /** Numbers a contact wants that a Do Not Call list (the registry, the company's own list) keeps out. */
    listed: number;
    /** What the calling window holds back (null: no compliance rules). */
    rules: Held | null;
  } | null;
  /** What became of the contact changed last in the CRM (null: none changed yet, or not read this time). */
  lastChange: LastChange | null;
}

/** The most recently changed contact and what the daemon did with its new number. */
export interface LastChange {
  contactId: string;
  /** The number followed (E.164): the first of the contact's the campaign does not have yet, else its first; null: none. */
  phone: string | null;
  outcome:
    | { is: 'added'; campaignId: string }
    | { is: 'do-not-call' }
    /** `opensAt`: dialer time. */
    | { is: 'window'; opensAt: string | null }
    | { is: 'refused'; reason: string }
    /** Anything else: the daemon's word for the number (unknown: it has not read the change yet). */
    | { is: 'pending'; state: string }
    | { is: 'no-number' };
}

/** What the calling-window rules hold back now, as the daemon's /ops API says. */
export interface Held {
  /** The campaign state the daemon set for the window. */
  state: 'Active' | 'Paused' | null;
  /** When that state changes next (Paused: the opening; Active: the pause before the close), dialer time. */
  nextEdgeAt: string | null;
  /** Numbers waiting while the window is closed. */
  window: number;
  /** Numbers at their call cap (Florida: 3 in 24 h), and when the first is released. */
  cap: number;
  nextCapReleaseAt: string | null;
}

const TIMEOUT_MS = 3000;

/** A contact the CRM modified, with the values of its phone fields. */
interface Modified { id: string; modifiedAt: number; phones: string[] }

const phonesOf = (fields: Record<string, unknown>, names: readonly string[]) =>
  names.map((f) => fields[f]).filter((v): v is string => typeof v === 'string' && v.trim() !== '');

async function hubspotSearch(crm: Extract<CrmSource, { kind: 'hubspot' }>, object: 'contacts' | 'calls', body: Record<string, unknown>) {
  const res = await fetch(`${crm.url}/crm/objects/${crm.apiVersion}/${object}/search`, {
    method: 'POST', headers: { authorization: `Bearer ${crm.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ limit: 1, ...body }), signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  if (res.status !== 200) throw new Error(`HubSpot ${object} search: ${res.status}`);
  return (await res.json()) as { total: number; results: { id: string; updatedAt: string; properties: Record<string, string | null> }[] };
}

async function salesforceQuery(crm: Extract<CrmSource, { kind: 'salesforce' }>, soql: string, what: string) {
  const res = await fetch(`${crm.url}/services/data/v62.0/query?q=${encodeURIComponent(soql)}`, {
    headers: { authorization: `Bearer ${await crm.token()}`, 'sforce-query-options': 'batchSize=200' }, signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  if (res.status !== 200) throw new Error(`Salesforce ${what} query: ${res.status}`);
  return (await res.json()) as { totalSize: number; records: Record<string, unknown>[] };
}

/** The selection's size and the contact in it modified last. */
async function crmContacts(crm: CrmSource): Promise<{ total: number; newest: Modified | null }> {
  if (crm.kind === 'salesforce') {
    const total = (await salesforceQuery(crm, `SELECT Id FROM CampaignMember WHERE CampaignId = '${crm.campaignId}'`, 'contacts')).totalSize;
    // A member is a Contact or a Lead, and one query orders by only one of them.
    const newest = await Promise.all((['Contact', 'Lead'] as const).map(async (rel) => {
      const fields = ['Id', 'SystemModstamp', ...crm.phones].map((f) => `${rel}.${f}`).join(', ');
      const { records } = await salesforceQuery(crm, `SELECT ${fields} FROM CampaignMember WHERE CampaignId = '${crm.campaignId}' ORDER BY ${rel}.SystemModstamp DESC LIMIT 1`, rel);
      const person = records[0]?.[rel] as Record<string, unknown> | null | undefined;
      return person ? { id: String(person.Id), modifiedAt: Date.parse(String(person.SystemModstamp)), phones: phonesOf(person, crm.phones) } : null;
    }));
    return { total, newest: newest.reduce<Modified | null>((a, b) => (!a || (b && b.modifiedAt > a.modifiedAt) ? b : a), null) };
  }
  // Sorted by modification, the one result a total takes anyway is the contact changed last: no search of its own.
  const { total, results: [last] } = await hubspotSearch(crm, 'contacts', { sorts: [{ propertyName: 'lastmodifieddate', direction: 'DESCENDING' }], properties: crm.phones });
  return { total, newest: last ? { id: last.id, modifiedAt: Date.parse(last.updatedAt), phones: phonesOf(last.properties, crm.phones) } : null };
}

async function crmCalls(crm: CrmSource): Promise<number> {
  // A query's totalSize, or an empty search's total: the calls the daemon wrote.
  if (crm.kind === 'salesforce') return (await salesforceQuery(crm, 'SELECT Id FROM Task', 'calls')).totalSize;
  return (await hubspotSearch(crm, 'calls', {})).total;
}

async function dialerTotal(s: ProgressSources, path: string, filter?: Record<string, unknown>): Promise<number> {
  const q = new URLSearchParams({ range: '[0,0]' });
  if (filter) q.set('filter', JSON.stringify(filter));
  const res = await fetch(`${s.serverUrl}/v1/accounts/${s.accountId}/campaigns/${s.campaignId}/${path}?${q}`, {
    headers: { authorization: `Bearer ${s.viewToken}` }, signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  await res.arrayBuffer();
  const total = Number(res.headers.get('x-total-count'));
  if (res.status !== 200 || !Number.isFinite(total)) throw new Error(`dialer ${path}: ${res.status}`);
  return total;
}

interface OpsSync {
  sync: string; contacts: number; numbers: number; parked: number;
  runs: { mode: string; status: string; seen: number; pushed: number }[];
  mirror: { mirrored: number | null; parked: number | null } | null;
  doNotCall: number;
  doNotCallLists?: { lists: { keptOut: number }[]; waiting: number };
  window: { state: 'Active' | 'Paused' | null; nextEdgeAt: string | null; heldByWindow: number; heldByCap: number; nextCapReleaseAt: string | null } | null;
}

const opsGet = (s: ProgressSources, path: string) => fetch(`${s.daemonUrl}/ops/api/${path}`, {
  headers: { authorization: `Basic ${Buffer.from(`demo:${s.adminToken}`).toString('base64')}` }, signal: AbortSignal.timeout(TIMEOUT_MS),
});

async function daemonStatus(s: ProgressSources): Promise<Counts['daemon']> {
  const res = await opsGet(s, 'syncs');
  if (res.status !== 200) throw new Error(`daemon /ops/api/syncs: ${res.status}`);
  const sync = ((await res.json()) as { syncs: OpsSync[] }).syncs.find((x) => x.sync === s.syncId);
  if (!sync) return null;
  const run = sync.runs[0];
  return {
    contacts: sync.contacts, numbers: sync.numbers, parked: sync.parked, mirrorParked: sync.mirror?.parked ?? null,
    lastRun: run ? `${run.mode} ${run.status}, ${run.seen} seen, ${run.pushed} pushed` : null,
    doNotCall: sync.doNotCall,
    listed: (sync.doNotCallLists?.lists ?? []).reduce((n, l) => n + l.keptOut, 0) + (sync.doNotCallLists?.waiting ?? 0),
    rules: sync.window && { state: sync.window.state, nextEdgeAt: sync.window.nextEdgeAt, window: sync.window.heldByWindow,
      cap: sync.window.heldByCap, nextCapReleaseAt: sync.window.nextCapReleaseAt },
  };
}

/** What the daemon's per-number view (GET /ops/api/numbers/<phone>) says of a number, the parts the view reads. */
export interface OpsNumber {
  campaignId: string; phone: string; state: string;
  /** Contacts holding it marked Do Not Call. */
  doNotCall: number;
  parked: { reason: string } | null;
  window?: { open: boolean; opensAt: string | null } | null;
}

/** A number as the sync normalises it (typed as in the CRM); null: the daemon takes it for no phone number. */
async function daemonNumber(s: ProgressSources, typed: string): Promise<OpsNumber | null> {
  const res = await opsGet(s, `numbers/${encodeURIComponent(typed)}?sync=${encodeURIComponent(s.syncId)}`);
  if (res.status === 400) return null;
  if (res.status !== 200) throw new Error(`daemon /ops/api/numbers: ${res.status}`);
  return ((await res.json()) as { syncs: OpsNumber[] }).syncs[0] ?? null;
}

/**
 * What became of a changed contact, from the daemon's answers for its numbers: the first the campaign does not hold
 * (the new one; the others were there before), else the first. Held back while the campaign is paused for the
 * window, though the number's own window may be open: planning waits for the campaign's.
 */
export function lastChangeOf(contactId: string, numbers: OpsNumber[], rules: Held | null): LastChange {
  const n = numbers.find((x) => x.state !== 'held') ?? numbers[0];
  if (!n) return { contactId, phone: null, outcome: { is: 'no-number' } };
  const outcome = ((): LastChange['outcome'] => {
    if (n.state === 'held') return { is: 'added', campaignId: n.campaignId };
    if (n.doNotCall > 0) return { is: 'do-not-call' };
    if (n.parked) return { is: 'refused', reason: n.parked.reason };
    if (n.state !== 'unknown' && rules?.state === 'Paused') return { is: 'window', opensAt: rules.nextEdgeAt };
    if (n.state !== 'unknown' && n.window?.open === false) return { is: 'window', opensAt: n.window.opensAt };
    return { is: 'pending', state: n.state };
  })();
  return { contactId, phone: n.phone, outcome };
}

async function dialerClock(s: ProgressSources): Promise<Counts['dialerClock']> {
  const res = await fetch(`${s.serverUrl}/console/clock`, { headers: { authorization: `Bearer ${s.consoleToken}` }, signal: AbortSignal.timeout(TIMEOUT_MS) });
  if (res.status !== 200) throw new Error(`dialer clock: ${res.status}`);
  const { now, speed } = (await res.json()) as { now: string; speed: number | null };
  return { now, speed };
}

const settle = <T>(p: Promise<T>): Promise<T | null> => p.catch(() => null);

export async function readCounts(s: ProgressSources): Promise<Counts> {
  const [crm, activities, synced, calls, daemon, clockNow, ...statuses] = await Promise.all([
    settle(crmContacts(s.crm)), settle(crmCalls(s.crm)),
    settle(dialerTotal(s, 'numbers')), settle(dialerTotal(s, 'reports/callDetails')), settle(daemonStatus(s)), settle(dialerClock(s)),
    ...STATUSES.map((status) => settle(dialerTotal(s, 'numbers', { status }))),
  ]);
  const changed = crm?.newest && crm.newest.modifiedAt >= s.changesSince ? crm.newest : null;
  const numbers = changed && await settle(Promise.all(changed.phones.map((p) => daemonNumber(s, p))));
  return {
    crmContacts: crm?.total ?? null, activities, synced, calls, daemon, dialerClock: clockNow,
    lastChange: changed && numbers ? lastChangeOf(changed.id, numbers.filter((n) => n !== null), daemon?.rules ?? null) : null,
    byStatus: Object.fromEntries(STATUSES.map((st, i) => [st, statuses[i] ?? null])) as Record<Status, number | null>,
  };
}

/** Fills what this reading lacks from the previous one. */
export function merge(previous: Counts | null, next: Counts): Counts {
  if (!previous) return next;
  const pick = <T>(a: T | null, b: T | null) => (a ?? b);
  return {
    crmContacts: pick(next.crmContacts, previous.crmContacts), synced: pick(next.synced, previous.synced),
    calls: pick(next.calls, previous.calls), activities: pick(next.activities, previous.activities),
    daemon: pick(next.daemon, previous.daemon), dialerClock: pick(next.dialerClock, previous.dialerClock),
    lastChange: pick(next.lastChange, previous.lastChange),
    byStatus: Object.fromEntries(STATUSES.map((st) => [st, pick(next.byStatus[st], previous.byStatus[st])])) as Record<Status, number | null>,
  };
}

/** Every number has a final status and every call is in the CRM: nothing more will happen until the CRM changes. */
export function settled(c: Counts): boolean {
  // At least one number a contact (a contact whose number changed keeps its called old number beside the new one),
  // besides the contacts Do Not Call holds out; none waiting for the calling window.
  const held = c.daemon ? c.daemon.doNotCall + c.daemon.listed : 0;
  return c.synced !== null && c.crmContacts !== null && c.synced > 0 && c.synced + held >= c.crmContacts && !c.daemon?.rules?.window &&
    c.byStatus.NotContacted === 0 && c.byStatus.Contacting === 0 && c.byStatus.RetryPending === 0 &&
    c.calls !== null && c.calls > 0 && c.activities === c.calls;
}

const n = (v: number | null) => (v === null ? '?' : String(v));

function clock(ms: number): string {
  const s = Math.floor(ms / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/** One line, stable field names: for logs and for whatever reads the demo's output. */
export function plainLine(c: Counts, elapsedMs: number): string {
  return `[${clock(elapsedMs)}] crm ${n(c.crmContacts)} contacts | synced ${n(c.synced)} | ` +
    `${STATUSES.map((st) => `${st} ${n(c.byStatus[st])}`).join(' ')} | calls ${n(c.calls)} | activities ${n(c.activities)}` +
    (c.daemon ? ` | parked ${c.daemon.parked}, mirror parked ${n(c.daemon.mirrorParked)} | ${heldPlain(c.daemon)}` : '') +
    (c.lastChange ? ` | last change: ${changeText(c.lastChange, (iso) => iso)}` : '') + (settled(c) ? ' | settled' : '');
}

/** `contact 1002 +12125550199 added to campaign …`; `at` writes a dialer time. */
function changeText(l: LastChange, at: (iso: string) => string): string {
  const o = l.outcome;
  const what = o.is === 'added' ? `added to campaign ${o.campaignId}`
    : o.is === 'do-not-call' ? 'held by Do Not Call'
    : o.is === 'window' ? `held by the calling window (waiting for it to open${o.opensAt ? ` at ${at(o.opensAt)}` : ''})`
    : o.is === 'refused' ? `refused by the dialer: ${o.reason}`
    : o.is === 'no-number' ? 'no phone number the daemon takes'
    : o.state === 'unknown' ? 'not read by the daemon yet' : `not added yet (daemon: ${o.state})`;
  return `contact ${l.contactId}${l.phone ? ` ${l.phone}` : ''} ${what}`;
}

/** `held: window 270 cap 0 dnc 30, campaign Paused until 2026-12-01T18:00:00.000Z` (what the rules hold back). */
function heldPlain(d: NonNullable<Counts['daemon']>): string {
  const r = d.rules;
  return `held: ${r ? `window ${r.window} cap ${r.cap} ` : ''}dnc ${d.doNotCall} lists ${d.listed}` +
    (r?.state ? `, campaign ${r.state}${r.nextEdgeAt ? ` until ${r.nextEdgeAt}` : ''}` : '');
}

/** A dialer time as the view shows it: the weekday and time in UTC. */
function when(iso: string): string {
  const d = new Date(iso);
  return `${d.toLocaleDateString('en-US', { weekday: 'short', timeZone: 'UTC' })} ${d.toISOString().slice(11, 16)} UTC`;
}

/** How long until a dialer time, in real time at the dialer clock's speed (` in 9 s`), when known. */
function realIn(iso: string, clock: Counts['dialerClock']): string {
  if (!clock?.speed) return '';
  const s = Math.max(0, Math.round((Date.parse(iso) - Date.parse(clock.now)) / 1000 / clock.speed));
  return s < 120 ? `, in ${s} s` : `, in ${Math.round(s / 60)} min`;
}

/** The view's line of what the rules hold back. */
function heldLine(d: NonNullable<Counts['daemon']>, clock: Counts['dialerClock'], bold: (s: string) => string): string {
  const r = d.rules;
  const window = !r ? '' : r.state === 'Paused'
    ? `window ${bold(String(r.window))} (campaign paused: the callees' calling window is closed${r.nextEdgeAt ? `; opens ${when(r.nextEdgeAt)}${realIn(r.nextEdgeAt, clock)}` : ''})  `
    : `window ${bold(String(r.window))} (open${r.nextEdgeAt ? `; the campaign pauses ${when(r.nextEdgeAt)}${realIn(r.nextEdgeAt, clock)}` : ''})  `;
  const cap = r ? `call cap ${bold(String(r.cap))}${r.cap && r.nextCapReleaseAt ? ` (next released ${when(r.nextCapReleaseAt)})` : ''}  ` : '';
  return `  Held back by the rules     ${window}${cap}Do Not Call ${bold(String(d.doNotCall))}  Do Not Call lists ${bold(String(d.listed))}`;
}

/** The terminal view. */
export function viewLines(c: Counts, elapsedMs: number, firstActivityMs: number | null = null): string[] {
  const bold = (s: string) => `\x1b[1m${s}\x1b[22m`;
  const backlog = c.calls !== null && c.activities !== null ? Math.max(0, c.calls - c.activities) : null;
  return [
    `${bold('Progress')} ${clock(elapsedMs)}` + (c.dialerClock ? `   dialer's clock ${when(c.dialerClock.now)}${c.dialerClock.speed ? ` (${c.dialerClock.speed}x)` : ''}` : '') + (firstActivityMs !== null ? `   (first activity in the CRM ${(firstActivityMs / 1000).toFixed(1)} s after start)` : ''),
    `  Contacts in the CRM        ${bold(n(c.crmContacts))}`,
    `  Synced into the campaign   ${bold(n(c.synced))} numbers` +
      (c.daemon ? `   (daemon: ${c.daemon.contacts} contacts held, ${c.daemon.parked} parked${c.daemon.lastRun ? `; last run ${c.daemon.lastRun}` : ''})` : ''),
    `  Numbers by status          ${STATUSES.map((st) => `${st} ${bold(n(c.byStatus[st]))}`).join('  ')}`,
    ...(c.daemon ? [heldLine(c.daemon, c.dialerClock, bold)] : []),
    ...(c.lastChange ? [`  Last change                ${changeText(c.lastChange, (iso) => `${when(iso)}${realIn(iso, c.dialerClock)}`)}`] : []),
    `  Calls made                 ${bold(n(c.calls))}`,
    `  Activities in the CRM      ${bold(n(c.activities))}` +
      (backlog !== null ? `   (${backlog} call${backlog === 1 ? '' : 's'} not mirrored yet${c.daemon?.mirrorParked ? `, ${c.daemon.mirrorParked} parked` : ''})` : ''),
    settled(c) ? '  Every number is settled and every call is in the CRM. Change a contact (see "Try") or press Ctrl-C.' : '  Ctrl-C stops everything.',
  ];
}

/** Redraws the previous view in place: up to its first line, then each line cleared and written again. */
export class TerminalView {
  private drawn = 0;
  private readonly out: NodeJS.WriteStream;
  constructor(out: NodeJS.WriteStream) {
    this.out = out;
  }
  draw(lines: string[]): void {
    const width = this.out.columns || 200;
    // A line wider than the terminal wraps and would break the count of lines to go back up.
    const fit = lines.map((l) => (visibleLength(l) > width - 1 ? truncate(l, width - 1) : l));
    let text = this.drawn > 0 ? `\x1b[${this.drawn}F` : '';
    for (const l of fit) text += `\x1b[2K${l}\n`;
    for (let i = fit.length; i < this.drawn; i++) text += '\x1b[2K\n';
    this.out.write(text);
    this.drawn = Math.max(fit.length, this.drawn);
  }
  /** Leaves the last view on screen; what is written next goes below it. */
  release(): void {
    this.drawn = 0;
  }
}

const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;
const visibleLength = (s: string) => s.replace(ANSI, '').length;

function truncate(s: string, width: number): string {
  let out = '';
  let visible = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\x1b') {
      const m = /^\x1b\[[0-9;]*[A-Za-z]/.exec(s.slice(i));
      if (m) { out += m[0]; i += m[0].length - 1; continue; }
    }
    if (visible >= width - 1) { out += '…'; break; }
    out += s[i];
    visible++;
  }
  return `${out}\x1b[22m`;
}
