// The daemon's Prometheus metrics: our counters beside BullMQ's own queue gauges.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'cds_' });
  }
}
