// A lease across the daemon's processes: one holder at a time (the sync's mirror run, the schedules' check), taken
// and released atomically (lease-1.lua), lapsing by itself when its holder dies. Taken durably (on a replica before
// the holder acts, see replication.ts), so a failover cannot hand it to a second holder while the first goes on.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { RedisClient } from './connection.ts';
import { ReplicaAcks } from './replication.ts';
import { withScripts } from './scripts.ts';

/** Names one holder (host and process first, for the logs). */
export const holderToken = (): string => `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

export class Lease {
  readonly token = holderToken();
  readonly key: string;
  readonly ms: number;
  private readonly redis: RedisClient;
  private readonly acks: ReplicaAcks | null;

  /** `acks`: take it durably; without, a failover may lose a fresh lease (fine for a lock that only saves work). */
  constructor(redis: RedisClient, key: string, ms: number, acks: ReplicaAcks | null = null) {
    this.redis = withScripts(redis); this.key = key; this.ms = ms; this.acks = acks;
  }

  /** Takes it if free: null when taken, else who holds it and for how much longer (ms). */
  async take(signal?: AbortSignal): Promise<{ holder: string; lapsesInMs: number } | null> {
    const answer = this.acks
      ? (await this.acks.write(this.key, (p) => p.cdsLease(this.key, this.token, this.ms), signal))[0] as [string, number]
      : await this.redis.cdsLease(this.key, this.token, this.ms);
    return answer[0] ? { holder: answer[0], lapsesInMs: Number(answer[1]) } : null;
  }

  /** Takes it, waiting while another holds it, until `signal` aborts or `giveUpMs` passes: whether it was taken. */
  async takeWaiting(giveUpMs: number, signal?: AbortSignal): Promise<boolean> {
    const until = Date.now() + giveUpMs;
    for (;;) {
      const other = await this.take();
      if (!other) return true;
      if (signal?.aborted || Date.now() >= until) return false;
      await delay(Math.min(Math.max(other.lapsesInMs, 50), 500, Math.max(until - Date.now(), 1)));
    }
  }

  /**
   * Renews it for another `ms` (durably when taken so: a renewal a failover lost would let it lapse early): false when
   * it lapsed and another took it (the holder must stop acting).
   */
  async renew(signal?: AbortSignal): Promise<boolean> { return (await this.take(signal)) === null; }

  /**
   * Renews it every third of its time until `stop`, so that a holder waiting long (a CRM's rate limit) keeps it; `lost`
   * aborts when a renewal finds another holding it. Only a fence: the holder still renews before each act that must
   * not be done twice.
   */
  keepRenewed(): { lost: AbortSignal; stop(): void } {
    const lost = new AbortController();
    // One renewal at a time: a durable one waits while no replica answers, and ticks meanwhile would pile up writes
    // that all wait for the same replica. One still waiting at `stop` gives up: sent after the release, it would take
    // the lease again for a holder that is done.
    let renewing = false;
    const stopped = new AbortController();
    const timer = setInterval(() => {
      if (renewing) return;
      renewing = true;
      this.renew(stopped.signal).then((held) => { if (!held) lost.abort(new Error(`lease ${this.key} taken by another holder`)); }, () => {})
        .finally(() => { renewing = false; });
    }, Math.max(Math.floor(this.ms / 3), 100));
    timer.unref();
    return { lost: lost.signal, stop: () => { clearInterval(timer); stopped.abort(); } };
  }

  /** Lets it go, if still held (never another's). */
  async release(): Promise<void> { await this.redis.cdsLease(this.key, this.token, 0); }
}
