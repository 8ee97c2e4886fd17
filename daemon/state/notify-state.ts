// The alerts' records in Redis (notify/ decides what fires, this stores): one hash, fingerprint -> record, each step
// of an alert one script (notifyAlert-1.lua), so that several processes evaluating send one message per event.
import type { RedisClient } from './connection.ts';
import type { DaemonKeys } from './keys.ts';
import { withScripts } from './scripts.ts';

export type AlertKind = 'refused' | 'held' | 'runs';

/** An alert as one evaluation finds it firing. */
export interface FoundAlert {
  kind: AlertKind;
  sync: string;
  /** The campaign it is about ('' when it is the sync's). */
  campaign: string;
  /** Why, in the daemon's words. */
  reason: string;
  fix?: string;
  /** The docs' section that explains it (a URL). */
  docs: string;
  /** When the state began, when the daemon recorded it (a refusal's `at`); else the first evaluation that saw it. */
  since?: number;
}

/** A message an alert's step left to send. */
export interface AlertSend { seq: number; status: 'firing' | 'resolved'; at: number; repeat: boolean }

/** An alert's record (ms times). */
export interface AlertRecord {
  kind: AlertKind; sync: string; campaign: string; reason: string; fix?: string; docs: string;
  status: 'pending' | 'firing' | 'resolved';
  /** The first evaluation that saw it, the last, when it began (firing), when its last message was sent. */
  first: number; seen: number; since?: number; sent?: number;
  /** Messages sent so far (the next one's seq is this plus one). */
  seq: number;
  send?: AlertSend;
}

/** An alert's fingerprint: what makes it one alert (its kind, sync and campaign), never its reason. */
export function fingerprintOf(a: { kind: AlertKind; sync: string; campaign: string }): string {
  return `${a.kind}|${a.sync}|${a.campaign}`;
}

function decode(raw: string): AlertRecord {
  const r = JSON.parse(raw) as AlertRecord & { fix?: string | null; send?: AlertSend | unknown[] };
  // (cjson writes an empty table as [], and a missing value may come back as null.)
  if (r.fix === null) delete r.fix;
  if (!r.send || Array.isArray(r.send)) delete r.send;
  r.campaign ??= '';
  return r;
}

export class NotifyState {
  private readonly redis: RedisClient;
  private readonly key: string;

  constructor(redis: RedisClient, keys: DaemonKeys) {
    this.redis = withScripts(redis);
    this.key = keys.notifyAlerts;
  }

  /** Every alert recorded: pending, firing, or resolved with its message still to be queued. */
  async all(): Promise<Map<string, AlertRecord>> {
    const raw = await this.redis.hgetall(this.key);
    return new Map(Object.entries(raw).map(([fp, json]) => [fp, decode(json)]));
  }

  /** The evaluation found the alert firing: the record after the step when it holds a message to send. */
  async firing(alert: FoundAlert, now: number, repeatEveryMs: number): Promise<AlertRecord | null> {
    const json = JSON.stringify({ kind: alert.kind, sync: alert.sync, campaign: alert.campaign, reason: alert.reason, docs: alert.docs,
      ...(alert.fix ? { fix: alert.fix } : {}), ...(alert.since !== undefined ? { since: alert.since } : {}) });
    const out = await this.redis.cdsNotifyAlert(this.key, fingerprintOf(alert), 'firing', now, repeatEveryMs, json);
    return out ? decode(out) : null;
  }

  /** The evaluation no longer finds the alert: the record after the step when it holds its resolution to send. */
  async clear(fingerprint: string, now: number): Promise<AlertRecord | null> {
    const out = await this.redis.cdsNotifyAlert(this.key, fingerprint, 'clear', now, 0, '');
    return out ? decode(out) : null;
  }

  /** The message `seq` of the alert was queued: the record no longer holds it (a resolved alert is forgotten). */
  async queued(fingerprint: string, seq: number): Promise<void> {
    await this.redis.cdsNotifyAlert(this.key, fingerprint, 'queued', 0, seq, '');
  }
}
