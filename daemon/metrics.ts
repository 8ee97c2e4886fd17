// The daemon's Prometheus metrics: our counters beside BullMQ's own queue gauges, and the state gauges (what stops
// calls or work: refused syncs, held campaigns, numbers held out, parked records), read from Redis at each scrape.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const DOCS = 'docs/operations.md: State metrics';

/**
 * The state gauges: each one's name, labels and help. Every process reports the same values (they come from Redis), so
 * rules aggregate them with max by (...); a series that does not apply is absent, not 0, unless its help says so.
 */
export const STATE_GAUGES = {
  syncRefused: { name: 'cds_sync_refused', labelNames: ['sync', 'check'],
    help: `1 for each check that refuses the sync: it adds no numbers until that is fixed; no series while it is not refused (${DOCS})` },
  syncRefusedSince: { name: 'cds_sync_refused_since_timestamp_seconds', labelNames: ['sync'],
    help: `When the sync's refusal started (Unix time); absent while it is not refused (${DOCS})` },
  campaignHeld: { name: 'cds_campaign_held', labelNames: ['sync', 'campaign', 'reason'],
    help: `1 while the calling window holds the campaign Paused, and why: window_closed, not_judged, no_zone, do_not_call_list or refused; no series while Active (${DOCS})` },
  campaignNextOpen: { name: 'cds_campaign_next_open_timestamp_seconds', labelNames: ['sync', 'campaign'],
    help: `When the callees' window next opens (Unix time, by the clock the windows follow), while the campaign is held for a closed window only (${DOCS})` },
  campaignHeldSince: { name: 'cds_campaign_held_since_timestamp_seconds', labelNames: ['sync', 'campaign'],
    help: `Since when the daemon has held the campaign Paused (Unix time, by the clock the windows follow); absent while it is not Paused (${DOCS})` },
  numbersHeld: { name: 'cds_numbers_held', labelNames: ['sync', 'rule'],
    help: `Numbers held out of the campaign now, by rule: do_not_call (a contact's Do Not Call mark), window (waiting for the calling window), cap (a per-number cap) (${DOCS})` },
  numbersKeptOut: { name: 'cds_numbers_kept_out', labelNames: ['sync', 'list'],
    help: `Numbers a contact wants that a Do Not Call list keeps out of the campaign, by list; list="(waiting)": those waiting for a list that cannot vouch for them (${DOCS})` },
  recordsParked: { name: 'cds_records_parked', labelNames: ['sync', 'kind'],
    help: `Records set aside until a later run: kind push (numbers the dialer refused), mirror (calls the CRM refused) (${DOCS})` },
  mirrorLagLast: { name: 'cds_mirror_lag_seconds_last', labelNames: ['sync'],
    help: `The last mirror run's lag: how far the CRM's activities were behind the dialer's call-detail records (docs/operations.md: Mirror lag); absent before the first run` },
  runsFailed: { name: 'cds_runs_failed_consecutive', labelNames: ['sync'],
    help: `How many of the sync's latest runs in a row ended failed (0: the last one that ended did not) (${DOCS})` },
  dncListAge: { name: 'cds_dnc_list_age_seconds', labelNames: ['list'],
    help: `Age of the Do Not Call list's copy (the daemon's clock less the copy's date); absent without a copy (${DOCS})` },
  dncListMaxAge: { name: 'cds_dnc_list_max_age_seconds', labelNames: ['list'],
    help: `The age at which the list's copy stops vouching (its maxAgeDays), after which the campaigns it holds are paused (${DOCS})` },
  dncListCanVouch: { name: 'cds_dnc_list_can_vouch', labelNames: ['list'],
    help: `1 while the Do Not Call list can vouch for numbers, 0 when it cannot (no copy, a copy too old, its record unreadable) (${DOCS})` },
  redisUp: { name: 'cds_redis_up', labelNames: [],
    help: `1 while the daemon's Redis answers, else 0 (and the other state gauges are absent) (${DOCS})` },
} as const;

export type StateGauge = keyof typeof STATE_GAUGES;
export interface StateSample { labels: Record<string, string>; value: number }
/** One scrape's reading of the state: each gauge's series (a gauge missing has none). */
export type StateReading = Partial<Record<StateGauge, StateSample[]>>;

/** Reads the state gauges (state-metrics.ts): `read` answers within a scrape and never throws. */
export interface StateReader {
  read(): Promise<StateReading>;
  /** False while Redis is unreachable or a reading it did not answer in time still waits: nothing else should read it now. */
  redisAnswers(): boolean;
}

export class Metrics {
  readonly registry = new Registry();
  readonly contactsSeen = new Counter({ name: 'cds_contacts_seen_total', help: 'Contacts read from sources', labelNames: ['sync'], registers: [this.registry] });
  readonly contactsChanged = new Counter({ name: 'cds_contacts_changed_total', help: 'Contacts new or changed since the last run', labelNames: ['sync'], registers: [this.registry] });
  readonly records = new Counter({ name: 'cds_numbers_total', help: 'Numbers pushed to, deleted from or rejected by the dialer', labelNames: ['sync', 'outcome'], registers: [this.registry] });
  readonly invalid = new Counter({ name: 'cds_records_invalid_total', help: 'Contact records rejected before pushing (bad or missing phone numbers)', labelNames: ['sync'], registers: [this.registry] });
  readonly rateLimited = new Counter({ name: 'cds_rate_limited_total', help: '429 answers, by service', labelNames: ['service'], registers: [this.registry] });
  readonly webhooks = new Counter({ name: 'cds_webhooks_total', help: 'Webhook deliveries by result', labelNames: ['sync', 'result'], registers: [this.registry] });
  readonly runSeconds = new Histogram({ name: 'cds_run_duration_seconds', help: 'Sync run durations', labelNames: ['sync', 'mode'], buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 1800], registers: [this.registry] });
  readonly mirrored = new Counter({ name: 'cds_activities_mirrored_total', help: 'Call attempts written to the CRM (or sink) as activities', labelNames: ['sync'], registers: [this.registry] });
  readonly mirrorLag = new Histogram({ name: 'cds_mirror_lag_seconds', help: 'Each mirror run\'s lag: its oldest call written behind the newest in the report, plus the write (docs/operations.md: Mirror lag)', labelNames: ['sync'], buckets: [0.1, 0.5, 1, 5, 30, 60, 300, 3600], registers: [this.registry] });
  readonly schedulesRestored = new Counter({ name: 'cds_schedules_restored_total', help: 'Job schedulers found missing or broken in Redis and set again (docs/operations.md: When things go wrong)', labelNames: ['sync'], registers: [this.registry] });
  readonly schedulesChecked = new Gauge({ name: 'cds_schedules_checked_timestamp_seconds', help: 'When this process last compared the job schedulers with the configuration (Unix time)', registers: [this.registry] });
  readonly notifications = new Counter({ name: 'cds_notifications_total', help: 'Notification deliveries (notify:) by destination (type:host) and result: delivered, retry (a try failed, tried again), failed (given up)', labelNames: ['to', 'result'], registers: [this.registry] });
  readonly pushSeconds = new Histogram({ name: 'cds_push_duration_seconds', help: 'Dialer push job durations', labelNames: ['kind'], buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30], registers: [this.registry] });

  /** A CRM's daily API allowance as its answers report it (Salesforce's Sforce-Limit-Info), by org. */
  readonly crmApiUsed = new Gauge({ name: 'cds_crm_api_requests_used', help: 'API requests the CRM org has used in its current daily window', labelNames: ['crm', 'account'], registers: [this.registry] });
  readonly crmApiAllowance = new Gauge({ name: 'cds_crm_api_requests_allowed', help: 'API requests the CRM org may make in its daily window', labelNames: ['crm', 'account'], registers: [this.registry] });

  /** What reads the state gauges (set once by the daemon: readStateWith); one reading serves every gauge of a scrape. */
  private stateReader: StateReader | null = null;
  private stateReading: Promise<StateReading> | null = null;
  readonly stateGauges: Record<StateGauge, Gauge> = Object.fromEntries(Object.entries(STATE_GAUGES).map(([key, g]) => {
    const metrics = this;
    return [key, new Gauge({
      name: g.name, help: g.help, labelNames: [...g.labelNames], registers: [this.registry],
      async collect() { await metrics.collectState(this, key as StateGauge); },
    })];
  })) as Record<StateGauge, Gauge>;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'cds_' });
  }

  /** Where the state gauges' values come from (state-metrics.ts). */
  readStateWith(reader: StateReader): void {
    this.stateReader = reader;
  }

  /** Whether a scrape may read Redis now (see StateReader.redisAnswers; no reader: yes). */
  redisAnswers(): boolean {
    return this.stateReader?.redisAnswers() ?? true;
  }

  /**
   * Sets the gauge's series from this scrape's reading: the registry collects every gauge at once, so the first one
   * starts the reading and the others wait for the same one.
   */
  private async collectState(gauge: Gauge, key: StateGauge): Promise<void> {
    const reader = this.stateReader;
    let reading: StateReading = {};
    if (reader) {
      this.stateReading ??= reader.read().catch(() => ({})).finally(() => { this.stateReading = null; });
      reading = await this.stateReading;
    }
    gauge.reset();
    for (const s of reading[key] ?? []) gauge.set(s.labels, s.value);
  }
}
