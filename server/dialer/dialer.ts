// The simulated outbound dialer: Active campaigns dial their numbers on the simulation clock, and every
// attempt moves a number through its statuses and writes one call-detail record.
import type { AnswerType, EndType, NumberDetailStatus, Outcome, RingResult } from '../../api/enums.ts';
import { formatUtc } from '../../api/timestamps.ts';
import { setCampaignState } from '../campaign-states.ts';
import type { SimulationClock } from '../clock.ts';
import type { Events } from '../events.ts';
import type { Random } from '../random.ts';
import type { CampaignRow } from '../store/campaigns.ts';
import type { NumberRow } from '../store/numbers.ts';
import type { Store } from '../store/store.ts';
import { localDayTime, localWallTime } from '../time-zones.ts';
import { ChunkWrites } from './chunk-writes.ts';
import { DEFAULT_OUTCOMES, type DialerSettings, type OutcomeModel } from './model.ts';

/** Human answers the Predictive pacing looks back over. */
const PACING_WINDOW = 100;

/** Numbers read ahead per query for the next ones to dial. */
const READ_AHEAD = 512;

// The next numbers to dial, read in dialing order after a cursor (the last number read before): numbers
// taken since are not written yet. First NotContacted numbers, fewest attempts, oldest first...
const FRESH = `SELECT id, number, status, attempts, next_attempt_at FROM numbers INDEXED BY numbers_by_status
  WHERE campaign_pk = ? AND status = 'NotContacted' AND +deleted = 0 ORDER BY attempts, deleted, id LIMIT ?`;
const FRESH_SAME_ATTEMPTS = `SELECT id, number, status, attempts, next_attempt_at FROM numbers INDEXED BY numbers_by_status
  WHERE campaign_pk = ? AND status = 'NotContacted' AND attempts = ? AND deleted = 0 AND id > ? ORDER BY id LIMIT ?`;
const FRESH_MORE_ATTEMPTS = `SELECT id, number, status, attempts, next_attempt_at FROM numbers INDEXED BY numbers_by_status
  WHERE campaign_pk = ? AND status = 'NotContacted' AND attempts > ? AND +deleted = 0 ORDER BY attempts, deleted, id LIMIT ?`;
// ...then RetryPending numbers whose retry is due, soonest due first.
const RETRIES = `SELECT id, number, status, attempts, next_attempt_at FROM numbers INDEXED BY numbers_retry_due
  WHERE campaign_pk = ? AND status = 'RetryPending' AND +deleted = 0 AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?`;
const RETRIES_SAME_TIME = `SELECT id, number, status, attempts, next_attempt_at FROM numbers INDEXED BY numbers_retry_due
  WHERE campaign_pk = ? AND status = 'RetryPending' AND +deleted = 0 AND next_attempt_at = ? AND id > ? ORDER BY id LIMIT ?`;
const RETRIES_LATER = `SELECT id, number, status, attempts, next_attempt_at FROM numbers INDEXED BY numbers_retry_due
  WHERE campaign_pk = ? AND status = 'RetryPending' AND +deleted = 0 AND next_attempt_at > ? AND next_attempt_at <= ?
  ORDER BY next_attempt_at, id LIMIT ?`;
/** When the next retry not yet due falls due. */
const NEXT_RETRY_DUE = `SELECT next_attempt_at AS at FROM numbers INDEXED BY numbers_retry_due
  WHERE campaign_pk = ? AND status = 'RetryPending' AND +deleted = 0 AND next_attempt_at > ? ORDER BY next_attempt_at LIMIT 1`;

/** What the dialer reads of a number. */
interface Candidate {
  id: number;
  number: string;
  status: NumberDetailStatus;
  attempts: number;
  next_attempt_at: number | null;
}

type RetryKind = keyof DialerSettings['retryDelaySeconds'];

interface CampaignRun {
  ringing: number;
  busyAgents: number;
  wakeScheduled: boolean;
  /** The future time a wake is already scheduled for (opening hours, start date, end date). */
  timedWakes: Set<number>;
  /** Lines per available agent: fixed in Power mode, adapted in Predictive mode. */
  ratio: number | null;
  /** Recent human answers: true for each one abandoned (no agent free). */
  answers: boolean[];
  /** How many of `answers` are true. */
  abandons: number;
  /** The wake event's action (one per campaign, not one per wake). */
  fill: () => void;
  /**
   * The next numbers to dial, read ahead in dialing order. They stay right while no one but the dialer
   * writes the campaign's numbers (Numbers.version stands) and the pk still names the same campaign.
   */
  queues: Queues;
}

interface Queues {
  campaignId: string;
  version: number;
  fresh: Candidate[];
  freshAt: number;
  /** The last NotContacted number read (null: none yet). */
  freshCursor: Candidate | null;
  /** No NotContacted numbers beyond `fresh`. */
  freshDone: boolean;
  retries: Candidate[];
  retriesAt: number;
  /** The last due retry read (null: none yet). */
  retryCursor: Candidate | null;
  /** No retries due (at the last read) beyond `retries`. */
  retriesDone: boolean;
  /** With retriesDone: no retry falls due before this time. */
  retryHorizon: number;
}

/** A campaign as the events of one chunk see it (nothing else writes it meanwhile), with what derives from it. */
interface Campaign {
  row: CampaignRow;
  settings: Settings;
  tz: Zone;
  startMs: number;
  endMs: number;
  /** Whether the account has a black list at all (null: not yet asked). */
  blacklist: boolean | null;
}

interface Settings {
  s: DialerSettings;
  /** Calling hours, local seconds since midnight. */
  from: number;
  to: number;
}

interface Call {
  c: CampaignRow;
  s: DialerSettings;
  row: Candidate;
  startedAt: number;
  ringResult: RingResult;
  sip: number;
  answeredAt: number | null;
  answerType: AnswerType | null;
  endType: EndType | null;
  connected: boolean;
  retryKind: RetryKind;
  /** Numbers.version when the call started: unchanged, the number is still Contacting. */
  version: number;
}

export class Dialer {
  private readonly store: Store;
  private readonly clock: SimulationClock;
  private readonly random: Random;
  private readonly outcomes: OutcomeModel;
  private readonly events: Events;
  private readonly runs = new Map<number, CampaignRun>();
  private readonly writes: ChunkWrites;
  private readonly pickRing: Picker<RingResult>;
  private readonly pickAnswer: Picker<AnswerType>;
  private readonly pickSip: Record<'Busy' | 'NoAnswer' | 'CallError', Picker<string>>;
  /** Campaigns read in the chunk numbered `cachedChunk` (null: no such campaign). */
  private readonly cached = new Map<number, Campaign | null>();
  private cachedChunk = -1;
  private readonly settings = new Map<string, Settings>();
  private readonly zones = new Map<string, Zone>();

  constructor(store: Store, clock: SimulationClock, random: Random, events: Events, outcomes = DEFAULT_OUTCOMES) {
    this.store = store;
    this.events = events;
    this.clock = clock;
    this.random = random;
    this.outcomes = outcomes;
    this.writes = new ChunkWrites(store.numbers);
    this.pickRing = new Picker(outcomes.ringResult);
    this.pickAnswer = new Picker(outcomes.answerType);
    this.pickSip = { Busy: new Picker(outcomes.sip.Busy), NoAnswer: new Picker(outcomes.sip.NoAnswer), CallError: new Picker(outcomes.sip.CallError) };
    clock.onChunkEnd((advanceDone) => this.writes.flush(!advanceDone));
  }

  /**
   * Wakes every Active campaign (at start: campaigns that were Active when the server stopped). Numbers left
   * Contacting by a stop had their call cut off: they are due again at once, the lost attempt uncounted.
   */
  start(): void {
    for (const row of this.store.db.all<NumberRow>(
      "SELECT * FROM numbers INDEXED BY numbers_by_status WHERE status = 'Contacting' AND campaign_pk IN (SELECT pk FROM campaigns)")) {
      this.store.numbers.update(row, 'RetryPending', row.attempts, this.clock.now());
    }
    for (const { pk } of this.store.db.all<{ pk: number }>("SELECT pk FROM campaigns WHERE state = 'Active' ORDER BY pk")) this.wake(pk);
  }

  /** Asks the campaign to fill its free lines at the current time (once, however often it is asked). */
  wake(campaignPk: number): void {
    const run = this.run(campaignPk);
    if (run.wakeScheduled) return;
    run.wakeScheduled = true;
    this.clock.at(this.clock.now(), run.fill);
  }

  private run(pk: number): CampaignRun {
    let r = this.runs.get(pk);
    if (!r) {
      const run: CampaignRun = {
        ringing: 0, busyAgents: 0, wakeScheduled: false, timedWakes: new Set(), ratio: null, answers: [], abandons: 0,
        fill: () => {
          run.wakeScheduled = false;
          this.fill(pk);
        },
        queues: emptyQueues('', -1),
      };
      this.runs.set(pk, (r = run));
    }
    return r;
  }

  private wakeAt(pk: number, at: number): void {
    const run = this.run(pk);
    if (run.timedWakes.has(at)) return;
    run.timedWakes.add(at);
    this.clock.at(at, () => {
      run.timedWakes.delete(at);
      this.wake(pk);
    });
  }

  /** The campaign, read once per chunk of clock events (every time outside one). */
  private campaign(pk: number): Campaign | null {
    const chunk = this.clock.chunk;
    if (chunk === null) return this.readCampaign(pk);
    if (chunk !== this.cachedChunk) {
      this.cached.clear();
      this.cachedChunk = chunk;
    }
    let k = this.cached.get(pk);
    if (k === undefined) this.cached.set(pk, (k = this.readCampaign(pk)));
    return k;
  }

  private readCampaign(pk: number): Campaign | null {
    const row = this.store.campaigns.byPk(pk);
    if (!row) return null;
    let settings = this.settings.get(row.dialer_settings);
    if (!settings) {
      const s = JSON.parse(row.dialer_settings) as DialerSettings;
      if (this.settings.size >= 1000) this.settings.clear();
      this.settings.set(row.dialer_settings, (settings = { s, from: hhmm(s.callingHours.from), to: hhmm(s.callingHours.to) }));
    }
    const tz = this.store.accounts.byPk(row.account_pk)!.timezone;
    let zone = this.zones.get(tz);
    if (!zone) this.zones.set(tz, (zone = new Zone(tz)));
    return {
      row, settings, tz: zone, blacklist: null,
      startMs: row.start_date ? Date.parse(row.start_date) : NaN, endMs: row.end_date ? Date.parse(row.end_date) : NaN,
    };
  }

  /** After the dialer changed the campaign row itself (its state): read again when next asked. */
  private forget(pk: number): void {
    this.cached.delete(pk);
  }

  /**
   * null when the campaign may dial now; else when it may next (start date, calling hours), or 'ended'
   * once its end date has passed.
   */
  private nextOpening(k: Campaign, now: number): number | 'ended' | null {
    const c = k.row;
    if (c.end_date && now >= k.endMs) return 'ended';
    if (c.start_date && now < k.startMs) return k.startMs;
    const { s, from, to } = k.settings;
    const { weekday, seconds } = k.tz.dayTime(now);
    const today = DAYS.indexOf(weekday);
    if (s.callingHours.days.includes(weekday as never) && seconds >= from && seconds < to) return null;
    for (let d = 0; d <= 7; d++) {
      const day = DAYS[(today + d) % 7]!;
      if (!s.callingHours.days.includes(day as never)) continue;
      if (d === 0 && seconds >= from) continue;
      // Local seconds ahead, read with today's UTC offset: a DST change in between is caught by the next check.
      return now + ((d * 86_400 + from - seconds) * 1000);
    }
    return null;
  }

  private fill(campaignPk: number): void {
    const k = this.campaign(campaignPk);
    if (!k || k.row.state !== 'Active') return;
    const c = k.row;
    const s = k.settings.s;
    const now = this.clock.now();
    const opening = this.nextOpening(k, now);
    if (opening === 'ended') {
      // The campaign period is over: no new calls; calls in flight finish.
      setCampaignState(this.store, this.events, c, 'Finished', now);
      this.forget(campaignPk);
      return;
    }
    if (c.end_date) this.wakeAt(campaignPk, k.endMs);
    if (opening !== null) {
      this.wakeAt(campaignPk, opening);
      return;
    }
    const run = this.run(campaignPk);
    run.ratio ??= c.dialer_mode === 'Predictive' ? Math.max(s.linesPerAgent, 1.5) : s.linesPerAgent;
    const lines = Math.floor((s.agents - run.busyAgents) * run.ratio);
    let free = lines - run.ringing;
    while (free > 0) {
      const row = this.nextNumber(run, c, now);
      if (!row) {
        this.finishIfDone(c);
        return;
      }
      if (!c.started_at) {
        this.store.db.run('UPDATE campaigns SET started_at = ? WHERE pk = ?', formatUtc(now), campaignPk);
        c.started_at = formatUtc(now);
      }
      if (this.blacklisted(k, row.number)) {
        // never dialed: final without an attempt
        this.setStatus(c, row, row.status, row.attempts, 'Blacklisted', row.attempts);
        continue;
      }
      this.startCall(c, s, row);
      free--;
    }
  }

  private blacklisted(k: Campaign, number: string): boolean {
    const account = k.row.account_pk;
    // Most accounts have no black list: one question per chunk instead of one per number.
    k.blacklist ??= this.clock.chunk === null || this.store.db.get('SELECT 1 AS x FROM blacklist WHERE account_pk = ? LIMIT 1', account) !== undefined;
    return k.blacklist && this.store.blacklist.has(account, number);
  }

  /**
   * The next number to dial: NotContacted numbers (fewest attempts, oldest first), then RetryPending ones
   * whose retry is due (soonest first); null when there is none. Read ahead READ_AHEAD at a time.
   */
  private nextNumber(run: CampaignRun, c: CampaignRow, now: number): Candidate | null {
    const version = this.store.numbers.version(c.pk);
    let q = run.queues;
    if (q.version !== version || q.campaignId !== c.id) q = run.queues = emptyQueues(c.id, version);
    if (q.freshAt < q.fresh.length) return q.fresh[q.freshAt++]!;
    if (!q.freshDone) {
      q.fresh = this.readFresh(c.pk, q.freshCursor);
      q.freshAt = 0;
      q.freshDone = q.fresh.length < READ_AHEAD;
      if (q.fresh.length) {
        q.freshCursor = q.fresh.at(-1)!;
        return q.fresh[q.freshAt++]!;
      }
    }
    if (q.retriesAt < q.retries.length) return q.retries[q.retriesAt++]!;
    if (q.retriesDone && now < q.retryHorizon) return null;
    q.retries = this.readRetries(c.pk, q.retryCursor, now);
    q.retriesAt = 0;
    q.retriesDone = q.retries.length < READ_AHEAD;
    if (q.retries.length) q.retryCursor = q.retries.at(-1)!;
    if (q.retriesDone) q.retryHorizon = this.store.db.get<{ at: number }>(NEXT_RETRY_DUE, c.pk, now)?.at ?? Infinity;
    return q.retries.length ? q.retries[q.retriesAt++]! : null;
  }

  private readFresh(pk: number, after: Candidate | null): Candidate[] {
    if (!after) {
      // No cursor: the table must show every number already taken.
      this.writes.flush();
      return this.store.db.all<Candidate>(FRESH, pk, READ_AHEAD);
    }
    const rows = this.store.db.all<Candidate>(FRESH_SAME_ATTEMPTS, pk, after.attempts, after.id, READ_AHEAD);
    if (rows.length < READ_AHEAD) rows.push(...this.store.db.all<Candidate>(FRESH_MORE_ATTEMPTS, pk, after.attempts, READ_AHEAD - rows.length));
    return rows;
  }

  private readRetries(pk: number, after: Candidate | null, now: number): Candidate[] {
    if (!after) {
      this.writes.flush();
      return this.store.db.all<Candidate>(RETRIES, pk, now, READ_AHEAD);
    }
    // Retries set since the last read must be in the table (live calls need not be: they are behind the cursor).
    this.writes.flush(true);
    const at = after.next_attempt_at!;
    const rows = this.store.db.all<Candidate>(RETRIES_SAME_TIME, pk, at, after.id, READ_AHEAD);
    if (rows.length < READ_AHEAD) rows.push(...this.store.db.all<Candidate>(RETRIES_LATER, pk, at, now, READ_AHEAD - rows.length));
    return rows;
  }

  /** Predictive: fewer lines per agent when abandons pass the target, more while well under it. */
  private pace(c: CampaignRow, s: DialerSettings, run: CampaignRun, abandoned: boolean): void {
    if (c.dialer_mode !== 'Predictive') return;
    run.answers.push(abandoned);
    if (abandoned) run.abandons++;
    if (run.answers.length > PACING_WINDOW && run.answers.shift()) run.abandons--;
    if (run.answers.length < 20) return;
    const rate = run.abandons / run.answers.length;
    if (rate > s.abandonRateTarget) run.ratio = Math.max(1, run.ratio! * 0.9);
    else if (rate < s.abandonRateTarget / 2) run.ratio = Math.min(5, run.ratio! * 1.02);
  }

  private startCall(c: CampaignRow, s: DialerSettings, row: Candidate): void {
    const o = this.outcomes;
    const run = this.run(c.pk);
    const startedAt = this.clock.now();
    this.setStatus(c, row, row.status, row.attempts, 'Contacting', row.attempts);
    run.ringing++;
    const ringResult = this.pickRing.pick(this.random);
    const ringMs = Math.max(1000, Math.round(this.random.logNormal(o.ringSeconds[ringResult], 0.3) * 1000));
    const call: Call = {
      c, s, row, startedAt, ringResult, sip: 200, answeredAt: null, answerType: null, endType: null, connected: false,
      retryKind: 'CallError', version: this.store.numbers.version(c.pk),
    };
    if (ringResult !== 'Answer') {
      call.sip = Number(this.pickSip[ringResult].pick(this.random));
      call.retryKind = ringResult;
      this.clock.after(ringMs, () => {
        run.ringing--;
        this.endCall(call);
      });
      return;
    }
    this.clock.after(ringMs, () => this.answered(call));
  }

  private answered(call: Call): void {
    const o = this.outcomes;
    const s = call.s;
    const run = this.run(call.c.pk);
    run.ringing--;
    call.answeredAt = this.clock.now();
    call.answerType = this.pickAnswer.pick(this.random);
    if (call.answerType !== 'Human') {
      const ms = Math.round(this.random.logNormal(o.machineSeconds, 0.3) * 1000);
      call.endType = 'CallflowComplete';
      call.retryKind = 'Machine';
      this.clock.after(ms, () => this.endCall(call));
      this.wake(call.c.pk);
      return;
    }
    const abandoned = run.busyAgents >= s.agents;
    this.pace(call.c, s, run, abandoned);
    if (abandoned) {
      // answered with no agent free: an abandoned call
      call.endType = 'HangUp';
      call.retryKind = 'Abandoned';
      this.clock.after(2000, () => this.endCall(call));
      this.wake(call.c.pk);
      return;
    }
    run.busyAgents++;
    const talkMs = Math.max(5000, Math.round(this.random.logNormal(s.talkSeconds, 0.6) * 1000));
    const r = this.random.next();
    call.endType = r < o.executionErrorShare ? 'ExecutionError' : r < o.executionErrorShare + o.hangUpShare ? 'HangUp' : 'CallflowComplete';
    call.connected = true;
    this.clock.after(talkMs, () => {
      this.endCall(call);
      this.clock.after(s.wrapUpSeconds * 1000, () => {
        run.busyAgents--;
        this.wake(call.c.pk);
      });
    });
  }

  private endCall(call: Call): void {
    // A Canceled campaign may be deleted while its last calls are still live: nothing is left to report to.
    const k = this.campaign(call.c.pk);
    if (!k) return;
    const s = call.s;
    const now = this.clock.now();
    const attempt = call.row.attempts + 1;
    const current = this.liveNumber(call, k);
    const row = call.row;
    const success = call.connected && call.endType !== 'ExecutionError';
    const outcome: Outcome = success ? 'Success' : attempt < s.maxAttempts ? 'FailureWithRetryPending' : 'FailureWithNoRetryLeft';
    const tz = k.tz;
    const record = {
      numberId: call.row.id, number: call.row.number, attempt,
      startedAtLocal: tz.wallTime(call.startedAt),
      answeredAtLocal: call.answeredAt === null ? null : tz.wallTime(call.answeredAt),
      endedAtLocal: tz.wallTime(now),
      ringResult: call.ringResult, answerType: call.answerType, sipResponseCode: call.sip, endType: call.endType,
      queueId: call.connected ? `queue-${call.c.pk}` : null, outcome,
    };
    const callId = this.store.callDetails.insert(call.c.pk, record);
    if (call.c.webhook_endpoint_id) {
      this.events.emit(call.c, 'call.finished', { call: { id: String(callId), ...record, numberId: String(record.numberId) } });
    }
    // A number deleted while its call was live stays deleted; its attempt is still reported.
    if (current !== null) {
      if (outcome === 'Success') this.setStatus(call.c, row, 'Contacting', current, 'Success', attempt);
      else if (outcome === 'FailureWithRetryPending') {
        const at = now + s.retryDelaySeconds[call.retryKind] * 1000;
        this.setStatus(call.c, row, 'Contacting', current, 'RetryPending', attempt, at);
        this.clock.at(at, () => this.wake(call.c.pk));
      } else this.setStatus(call.c, row, 'Contacting', current, 'Failure', attempt);
    }
    this.wake(call.c.pk);
  }

  /**
   * The attempts of the called number if it is still Contacting, else null (deleted meanwhile). It is as the
   * dialer left it unless someone else wrote numbers since the call started.
   */
  private liveNumber(call: Call, k: Campaign): number | null {
    const row = call.row;
    if (this.store.numbers.version(call.c.pk) === call.version && k.row.id === call.c.id) return row.attempts;
    this.writes.flush();
    const current = this.store.db.get<NumberRow>('SELECT * FROM numbers WHERE id = ?', row.id);
    return current && current.status === 'Contacting' ? current.attempts : null;
  }

  /** A Static campaign is Finished once every number has a final status. */
  private finishIfDone(c: CampaignRow): void {
    if (c.type !== 'Static') return;
    const run = this.run(c.pk);
    if (run.ringing > 0 || run.busyAgents > 0) return;
    this.writes.flush();
    const counts = this.store.numbers.counts(c.pk);
    if ((counts.NotContacted ?? 0) + (counts.Contacting ?? 0) + (counts.RetryPending ?? 0) > 0) return;
    setCampaignState(this.store, this.events, c, 'Finished', this.clock.now());
    this.forget(c.pk);
  }

  /** Moves a number from a status and attempt count (what it has now) to others. */
  private setStatus(c: CampaignRow, row: Candidate, from: NumberDetailStatus, fromAttempts: number, status: NumberDetailStatus, attempts: number,
    nextAttemptAt: number | null = null): void {
    this.writes.setStatus(c.pk, row.id, from, fromAttempts, status, attempts, nextAttemptAt);
    // Outside a chunk no one flushes later: write now.
    if (this.clock.chunk === null) this.store.db.transaction(() => this.writes.flush());
    if (status === 'RetryPending') {
      const q = this.run(c.pk).queues;
      if (nextAttemptAt! < q.retryHorizon) q.retryHorizon = nextAttemptAt!;
      // Due no later than a retry already read (a zero delay): read the due retries again, from the first.
      if (q.retryCursor && nextAttemptAt! <= q.retryCursor.next_attempt_at!) {
        q.retries = [];
        q.retriesAt = 0;
        q.retryCursor = null;
        q.retriesDone = false;
      }
    }
    if (c.webhook_endpoint_id) {
      this.events.emit(c, 'number.status_changed', { numberId: String(row.id), number: row.number, from, to: status, attempts });
    }
  }
}

function emptyQueues(campaignId: string, version: number): Queues {
  return {
    campaignId, version, fresh: [], freshAt: 0, freshCursor: null, freshDone: false,
    retries: [], retriesAt: 0, retryCursor: null, retriesDone: false, retryHorizon: -Infinity,
  };
}

/** Random.pick over fixed weights with the same draw and arithmetic, the weights summed once. */
class Picker<K extends string> {
  private readonly keys: K[];
  private readonly weights: number[];
  private readonly total: number;

  constructor(weights: Readonly<Record<K, number>>) {
    const entries = Object.entries(weights) as [K, number][];
    this.keys = entries.map(([k]) => k);
    this.weights = entries.map(([, w]) => w);
    this.total = entries.reduce((s, [, w]) => s + w, 0);
  }

  pick(random: Random): K {
    let x = random.next() * this.total;
    const w = this.weights;
    for (let i = 0; i < w.length; i++) {
      if ((x -= w[i]!) < 0) return this.keys[i]!;
    }
    const last = this.keys[this.keys.length - 1];
    if (last === undefined) throw new TypeError('nothing to pick: every weight is missing');
    return last;
  }
}

/** An account time zone's local times, remembered per second (many calls start and end in the same one). */
class Zone {
  private readonly tz: string;
  private readonly walls = new Map<number, string>();
  private readonly days = new Map<number, { weekday: string; seconds: number }>();

  constructor(tz: string) {
    this.tz = tz;
  }

  wallTime(ms: number): string {
    return perSecond(this.walls, ms, this.tz, localWallTime);
  }

  dayTime(ms: number): { weekday: string; seconds: number } {
    return perSecond(this.days, ms, this.tz, localDayTime);
  }
}

/** `compute(ms, tz)` remembered per whole second; the cache starts afresh past 100,000 seconds. */
function perSecond<T>(cache: Map<number, T>, ms: number, tz: string, compute: (ms: number, tz: string) => T): T {
  const key = Math.floor(ms / 1000);
  let v = cache.get(key);
  if (v === undefined) {
    if (cache.size >= 100_000) cache.clear();
    cache.set(key, (v = compute(ms, tz)));
  }
  return v;
}

const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

function hhmm(t: string): number {
  return Number(t.slice(0, 2)) * 3600 + Number(t.slice(3, 5)) * 60;
}
