// The simulated outbound dialer: Active campaigns dial their numbers on the simulation clock, and every
// attempt moves a number through its statuses and writes one call-detail record.
import type { AnswerType, EndType, NumberDetailStatus, Outcome, RingResult } from '../../api/enums.ts';
import { formatUtc } from '../../api/timestamps.ts';
import { setCampaignState } from '../campaign-states.ts';
import type { SimulationClock } from '../clock.ts';
import type { Events } from '../events.ts';
import type { Random } from '../random.ts';
import { dialerSettings, type CampaignRow } from '../store/campaigns.ts';
import type { NumberRow } from '../store/numbers.ts';
import type { Store } from '../store/store.ts';
import { localDayTime, localWallTime } from '../time-zones.ts';
import { DEFAULT_OUTCOMES, type DialerSettings, type OutcomeModel } from './model.ts';

/** Human answers the Predictive pacing looks back over. */
const PACING_WINDOW = 100;

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
}

export class Dialer {
  private readonly store: Store;
  private readonly clock: SimulationClock;
  private readonly random: Random;
  private readonly outcomes: OutcomeModel;
  private readonly events: Events;
  private readonly runs = new Map<number, CampaignRun>();

  constructor(store: Store, clock: SimulationClock, random: Random, events: Events, outcomes = DEFAULT_OUTCOMES) {
    this.store = store;
    this.events = events;
    this.clock = clock;
    this.random = random;
    this.outcomes = outcomes;
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
    this.clock.at(this.clock.now(), () => {
      run.wakeScheduled = false;
      this.fill(campaignPk);
    });
  }

  private run(pk: number): CampaignRun {
    let r = this.runs.get(pk);
    if (!r) this.runs.set(pk, (r = { ringing: 0, busyAgents: 0, wakeScheduled: false, timedWakes: new Set(), ratio: null, answers: [] }));
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

  /**
   * null when the campaign may dial now; else when it may next (start date, calling hours), or 'ended'
   * once its end date has passed.
   */
  private nextOpening(c: CampaignRow, s: DialerSettings, tz: string, now: number): number | 'ended' | null {
    if (c.end_date && now >= Date.parse(c.end_date)) return 'ended';
    if (c.start_date && now < Date.parse(c.start_date)) return Date.parse(c.start_date);
    const { weekday, seconds } = localDayTime(now, tz);
    const from = hhmm(s.callingHours.from), to = hhmm(s.callingHours.to);
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
    const c = this.store.campaigns.byPk(campaignPk);
    if (!c || c.state !== 'Active') return;
    const s = dialerSettings(c);
    const tz = this.store.accounts.byPk(c.account_pk)!.timezone;
    const now = this.clock.now();
    const opening = this.nextOpening(c, s, tz, now);
    if (opening === 'ended') {
      // The campaign period is over: no new calls; calls in flight finish.
      setCampaignState(this.store, this.events, c, 'Finished', now);
      return;
    }
    if (c.end_date) this.wakeAt(campaignPk, Date.parse(c.end_date));
    if (opening !== null) {
      this.wakeAt(campaignPk, opening);
      return;
    }
    const run = this.run(campaignPk);
    run.ratio ??= c.dialer_mode === 'Predictive' ? Math.max(s.linesPerAgent, 1.5) : s.linesPerAgent;
    const lines = Math.floor((s.agents - run.busyAgents) * run.ratio);
    let free = lines - run.ringing;
    if (free <= 0) return;
    while (free > 0) {
      const next = this.nextNumbers(campaignPk, now, free);
      if (!next.length) {
        this.finishIfDone(c);
        return;
      }
      if (!c.started_at) {
        this.store.db.run('UPDATE campaigns SET started_at = ? WHERE pk = ?', formatUtc(now), campaignPk);
        c.started_at = formatUtc(now);
      }
      for (const row of next) {
        if (this.store.blacklist.has(c.account_pk, row.number)) {
          // never dialed: final without an attempt
          this.setStatus(c, row, 'Blacklisted', row.attempts);
          continue;
        }
        this.startCall(c, s, row);
        free--;
      }
    }
  }

  /** NotContacted numbers (fewest attempts, oldest first), then RetryPending ones whose retry is due. */
  private nextNumbers(campaignPk: number, now: number, limit: number): NumberRow[] {
    const next = this.store.db.all<NumberRow>(
      `SELECT * FROM numbers INDEXED BY numbers_by_status WHERE campaign_pk = ? AND status = 'NotContacted' AND +deleted = 0
       ORDER BY attempts, deleted, id LIMIT ?`, campaignPk, limit);
    if (next.length < limit) {
      next.push(...this.store.db.all<NumberRow>(
        `SELECT * FROM numbers INDEXED BY numbers_retry_due WHERE campaign_pk = ? AND status = 'RetryPending' AND +deleted = 0
         AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?`, campaignPk, now, limit - next.length));
    }
    return next;
  }

  /** Predictive: fewer lines per agent when abandons pass the target, more while well under it. */
  private pace(c: CampaignRow, s: DialerSettings, run: CampaignRun, abandoned: boolean): void {
    if (c.dialer_mode !== 'Predictive') return;
    run.answers.push(abandoned);
    if (run.answers.length > PACING_WINDOW) run.answers.shift();
    if (run.answers.length < 20) return;
    const rate = run.answers.filter(Boolean).length / run.answers.length;
    if (rate > s.abandonRateTarget) run.ratio = Math.max(1, run.ratio! * 0.9);
    else if (rate < s.abandonRateTarget / 2) run.ratio = Math.min(5, run.ratio! * 1.02);
  }

  private startCall(c: CampaignRow, s: DialerSettings, row: NumberRow): void {
    const o = this.outcomes;
    const run = this.run(c.pk);
    const startedAt = this.clock.now();
    this.setStatus(c, row, 'Contacting', row.attempts);
    run.ringing++;
    const ringResult = this.random.pick(o.ringResult);
    const ringMs = Math.max(1000, Math.round(this.random.logNormal(o.ringSeconds[ringResult], 0.3) * 1000));
    const call = { c, s, row: { ...row, status: 'Contacting' as NumberDetailStatus }, startedAt, ringResult };
    if (ringResult !== 'Answer') {
      const sip = Number(this.random.pick(o.sip[ringResult]));
      this.clock.after(ringMs, () => {
        run.ringing--;
        this.endCall({ ...call, sip, answeredAt: null, answerType: null, endType: null, connected: false, retryKind: ringResult });
      });
      return;
    }
    this.clock.after(ringMs, () => this.answered(call));
  }

  private answered(call: { c: CampaignRow; s: DialerSettings; row: NumberRow; startedAt: number; ringResult: RingResult }): void {
    const o = this.outcomes;
    const s = call.s;
    const run = this.run(call.c.pk);
    run.ringing--;
    const answeredAt = this.clock.now();
    const answerType = this.random.pick(o.answerType);
    const base = { ...call, sip: 200, answeredAt, answerType };
    if (answerType !== 'Human') {
      const ms = Math.round(this.random.logNormal(o.machineSeconds, 0.3) * 1000);
      this.clock.after(ms, () => this.endCall({ ...base, endType: 'CallflowComplete', connected: false, retryKind: 'Machine' }));
      this.wake(call.c.pk);
      return;
    }
    const abandoned = run.busyAgents >= s.agents;
    this.pace(call.c, s, run, abandoned);
    if (abandoned) {
      // answered with no agent free: an abandoned call
      this.clock.after(2000, () => this.endCall({ ...base, endType: 'HangUp', connected: false, retryKind: 'Abandoned' }));
      this.wake(call.c.pk);
      return;
    }
    run.busyAgents++;
    const talkMs = Math.max(5000, Math.round(this.random.logNormal(s.talkSeconds, 0.6) * 1000));
    const r = this.random.next();
    const endType: EndType = r < o.executionErrorShare ? 'ExecutionError' : r < o.executionErrorShare + o.hangUpShare ? 'HangUp' : 'CallflowComplete';
    this.clock.after(talkMs, () => {
      this.endCall({ ...base, endType, connected: true, retryKind: 'CallError' });
      this.clock.after(s.wrapUpSeconds * 1000, () => {
        run.busyAgents--;
        this.wake(call.c.pk);
      });
    });
  }

  private endCall(call: {
    c: CampaignRow; s: DialerSettings; row: NumberRow; startedAt: number; ringResult: RingResult; sip: number; answeredAt: number | null;
    answerType: AnswerType | null; endType: EndType | null; connected: boolean; retryKind: keyof DialerSettings['retryDelaySeconds'];
  }): void {
    // A Canceled campaign may be deleted while its last calls are still live: nothing is left to report to.
    if (!this.store.campaigns.byPk(call.c.pk)) return;
    const s = call.s;
    const now = this.clock.now();
    const attempt = call.row.attempts + 1;
    const current = this.store.db.get<NumberRow>('SELECT * FROM numbers WHERE id = ?', call.row.id);
    const success = call.connected && call.endType !== 'ExecutionError';
    const outcome: Outcome = success ? 'Success' : attempt < s.maxAttempts ? 'FailureWithRetryPending' : 'FailureWithNoRetryLeft';
    const tz = this.store.accounts.byPk(call.c.account_pk)!.timezone;
    const record = {
      numberId: call.row.id, number: call.row.number, attempt,
      startedAtLocal: localWallTime(call.startedAt, tz),
      answeredAtLocal: call.answeredAt === null ? null : localWallTime(call.answeredAt, tz),
      endedAtLocal: localWallTime(now, tz),
      ringResult: call.ringResult, answerType: call.answerType, sipResponseCode: call.sip, endType: call.endType,
      queueId: call.connected ? `queue-${call.c.pk}` : null, outcome,
    };
    const callId = this.store.callDetails.insert(call.c.pk, record);
    if (call.c.webhook_endpoint_id) {
      this.events.emit(call.c, 'call.finished', { call: { id: String(callId), ...record, numberId: String(record.numberId) } });
    }
    // A number deleted while its call was live stays deleted; its attempt is still reported.
    if (current && current.status === 'Contacting') {
      if (outcome === 'Success') this.setStatus(call.c, current, 'Success', attempt);
      else if (outcome === 'FailureWithRetryPending') {
        const at = now + s.retryDelaySeconds[call.retryKind] * 1000;
        this.setStatus(call.c, current, 'RetryPending', attempt, at);
        this.clock.at(at, () => this.wake(call.c.pk));
      } else this.setStatus(call.c, current, 'Failure', attempt);
    }
    this.wake(call.c.pk);
  }

  /** A Static campaign is Finished once every number has a final status. */
  private finishIfDone(c: CampaignRow): void {
    if (c.type !== 'Static') return;
    const run = this.run(c.pk);
    if (run.ringing > 0 || run.busyAgents > 0) return;
    const counts = this.store.numbers.counts(c.pk);
    if ((counts.NotContacted ?? 0) + (counts.Contacting ?? 0) + (counts.RetryPending ?? 0) > 0) return;
    setCampaignState(this.store, this.events, c, 'Finished', this.clock.now());
  }

  private setStatus(c: CampaignRow, row: NumberRow, status: NumberDetailStatus, attempts: number, nextAttemptAt: number | null = null): void {
    this.store.numbers.update(row, status, attempts, nextAttemptAt);
    this.events.emit(c, 'number.status_changed', { numberId: String(row.id), number: row.number, from: row.status, to: status, attempts });
  }
}

const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

function hhmm(t: string): number {
  return Number(t.slice(0, 2)) * 3600 + Number(t.slice(3, 5)) * 60;
}
