// Wires one daemon process: Redis, the sync queue and its schedulers, one push queue per dialer API key, the
// sources, and the HTTP side (webhooks, /health, /metrics).
import { randomBytes } from 'node:crypto';
import { DelayedError, Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { complianceOf, ConfigError, dialerOf, type Config, type DialerConfig, type SyncConfig } from './config.ts';
import { followDialerClock, type DialerClock } from './dialer-clock.ts';
import { CampaignWindow } from './compliance/campaign-window.ts';
import { routeOf } from './compliance/routes.ts';
import { rulesStatus } from './compliance/in-force.ts';
import { listenHttp, type HttpServer } from './http/server.ts';
import { stateReader } from './http/state-metrics.ts';
import type { RunningDaemon } from './http/running-daemon.ts';
import { createLogger } from './log.ts';
import { Metrics } from './metrics.ts';
import { History, inSync } from './history/history.ts';
import { PushQueue, pushQueueName, type PushTarget } from './push/push-queue.ts';
import type { CrmContext } from './crm/crm.ts';
import { crmOf } from './crm/registry.ts';
import { SourceError } from './errors.ts';
import { CsvSource } from './sources/csv.ts';
import type { Source } from './sources/source.ts';
import { WebhookSource } from './sources/webhook.ts';
import { campaignsOf, Interrupted, planDirty, resumeBatches, RunBusy, RunStopped, runSync, type SyncRuntime } from './sync/run.ts';
import { Arrivals } from './sync/arrivals.ts';
import { DialerClient, DialerError } from './dialer.ts';
import { mirrorRun, type MirrorRunResult, type MirrorRuntime } from './mirror/mirror.ts';
import { CountingSink } from './sinks/counting.ts';
import { FileSink } from './sinks/file.ts';
import type { Sink } from './sinks/sink.ts';
import { WebhookSink } from './sinks/webhook.ts';
import { connectRedis, redisWhere, serverRunIds, type RedisClient } from './state/connection.ts';
import { ReplicaAcks } from './state/replication.ts';
import { DaemonKeys, DncKeys, campaignKey, routeId } from './state/keys.ts';
import { DncGate, listHold } from './dnc/gate.ts';
import { copiesOf, loadFolder } from './dnc/folder.ts';
import { openState } from './state/state-version.ts';
import { WorkerWatchdog } from './worker-watchdog.ts';
import { inSpan, queueTelemetry } from './telemetry.ts';
import { SyncState } from './state/sync-state.ts';
import { Schedules, wantedSchedulers, type SyncJobData } from './schedules.ts';
import { checkConfig, type CheckReport } from './check/checks.ts';
import { refusalOf, Refusals } from './check/refusals.ts';
import { fail } from './check/result.ts';
import { Notifications } from './notify/notifications.ts';

/** Two mirror runs' results as one (a routed sync's campaigns). */
function sumResults(a: MirrorRunResult, b: MirrorRunResult): MirrorRunResult {
  return Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v + b[k as keyof MirrorRunResult]])) as unknown as MirrorRunResult;
}

/** How long a shutdown waits for running jobs when Redis is unreachable (they cannot finish without it). */
const REDIS_GONE_GRACE_MS = 500;
/** How long a shutdown waits for Redis to answer a PING before it counts Redis as unreachable. */
const REDIS_PROBE_MS = 500;

/**
 * The calling window's dialer client: not given up when the daemon stops, because the last process's stop pauses the
 * campaigns holding capped numbers through it (a pause given up would leave them dialing with no process to hold
 * their caps). Its requests are short, and the stop's deadline bounds them.
 */
function windowDialer(dialer: DialerConfig): DialerClient {
  return new DialerClient(dialer);
}
/** While Redis stays unreachable, its warning is repeated this often (the first at once). */
const REDIS_WARN_EVERY_MS = 30_000;

/** `close()` was called while the daemon was starting: the start ends here (not an error: the daemon was stopped). */
export class DaemonStopped extends Error {
  constructor() { super('the daemon was stopped while it was starting'); this.name = 'DaemonStopped'; }
}

export type { SyncJobData } from './schedules.ts';

/** Where a sync's call activities go. */
function createSink(sync: SyncConfig, ctx: CrmContext): Sink {
  const mirror = sync.mirror!;
  if (mirror.sink.type === 'none') return new CountingSink();
  if (mirror.sink.type === 'webhook') return new WebhookSink(mirror.sink.url, mirror.sink.secret);
  if (mirror.sink.type === 'file') return new FileSink(mirror.sink.path);
  const crm = crmOf(sync.source.type);
  if (!crm) throw new Error(`sync ${sync.id}: no sink for a ${sync.source.type} source`); // configuration refuses this
  return crm.sink(sync, ctx);
}

export interface DaemonOptions {
  log?: Logger;
  /** Run workers (a CLI command that only reads state does not). */
  workers?: boolean;
  /** Serve HTTP (webhooks, health, metrics). */
  http?: boolean;
  /** Set schedules and start first runs (the `start` command; `sync SYNC_ID` runs one sync only). */
  schedules?: boolean;
  /** The clock calling windows are judged by (tests: the reference server's simulation clock); default Date.now. */
  now?: () => number;
  /**
   * Run `check`'s checks before any work (the `start` command) and refuse the syncs they find would make a rule fail
   * open, re-checking them periodically (check/refusals.ts). Without it a refusal is still kept when the dialer
   * refuses a campaign's pause (403), and honoured whoever recorded it.
   */
  check?: boolean | readonly string[];
  /** Called with the daemon as soon as it exists, before the start waits for anything: `close()` it to stop the start. */
  created?: (d: Daemon) => void;
}

/**
 * The start log's word on a sync's calling-window rules: on (so its key must pause and resume the campaign: Campaign
 * Admin), or off and the configuration's reason.
 */
function logRules(log: Logger, sync: SyncConfig): void {
  const r = rulesStatus(sync.rules);
  const campaigns = sync.routes ? sync.routes.map((route) => route.campaignId) : [sync.campaignId];
  if (!r.on) {
    log.warn({ sync: sync.id, rules: r.summary, off: r.off }, `calling-window rules OFF for sync "${sync.id}": ${r.off}. Its campaign calls whenever the dialer does`);
    return;
  }
  log.info({ sync: sync.id, rules: r.summary, campaigns }, `calling-window rules ON for sync "${sync.id}": campaign ${campaigns.join(', ')} is paused outside its callees' windows, ` +
    'so its dialer key needs the Campaign Admin role (or turn the rules off for it with compliance: { off: "<reason>" })');
}

function createSource(sync: SyncConfig, ctx: CrmContext): Source {
  if (sync.source.type === 'webhook') return new WebhookSource(sync);
  if (sync.source.type === 'csv') return new CsvSource(sync);
  return crmOf(sync.source.type)!.source(sync, ctx);
}

export class Daemon implements RunningDaemon {
  readonly config: Config;
  readonly log: Logger;
  readonly redis: RedisClient;
  /** One for the process: it keeps each master's count of replicas. */
  readonly acks: ReplicaAcks;
  readonly metrics = new Metrics();
  readonly history: History;
  readonly syncQueue: Queue<SyncJobData>;
  readonly pushQueues = new Map<string, PushQueue>();
  readonly runtimes = new Map<string, SyncRuntime>();
  readonly mirrors = new Map<string, MirrorRuntime>();
  private readonly targets = new Map<string, PushTarget>();
  private syncWorker: WorkerWatchdog<SyncJobData> | null = null;
  private http: HttpServer | null = null;
  private readonly prefix: string;
  readonly keys: DaemonKeys;
  private closing = false;
  /** The shutdown, once close() was called (a second call waits for it). */
  private closed: Promise<void> | null = null;
  /** Set when the start has finished: the HTTP side then serves the daemon's routes. */
  private ready = false;
  /** What the start waits for (said by /health while starting). */
  private waitingFor = 'Redis';
  readonly redisWhere: string;
  /** The Redis connection's last error, to say why at shutdown. */
  private lastRedisError: string | null = null;
  /** Since when Redis has been unreachable (null: it answers), and when that was last said. */
  private redisDownSince: number | null = null;
  private redisWarnedAt = 0;
  /**
   * The Redis run id this process last saw. Redis keeps it too, but a Redis without persistence restarts empty, key
   * and all: only this copy then tells a restart from a first start.
   */
  private seenRedisRunId: string | null = null;
  /** The schedules, when this process sets them (the `start` command): it then checks them periodically and on every reconnection. */
  private schedules: Schedules | null = null;
  private clock: DialerClock | null = null;
  /** Aborted by close(): running pulls stop at the next page and their jobs go back to the queue. */
  private readonly stopping = new AbortController();
  /** The syncs refused for what would make a rule fail open (check/refusals.ts). */
  refusals!: Refusals;
  /** The report of the checks the start ran (options.check), if it ran them. */
  firstCheck: CheckReport | null = null;
  /** Alerts sent to Slack or a signed webhook (config `notify`), in a process that works and sets the schedules. */
  notifications: Notifications | null = null;

  private constructor(config: Config, log: Logger) {
    this.config = config;
    this.log = log;
    this.prefix = config.redis.prefix;
    this.keys = new DaemonKeys(this.prefix);
    this.redisWhere = `Redis at ${redisWhere(config.redis)}`;
    this.redis = connectRedis(config.redis);
    this.acks = new ReplicaAcks(this.redis, log);
    this.redis.on('error', (err) => this.redisDown(err));
    this.redis.on('ready', () => this.redisUp());
    this.history = new History(this.redis, this.keys, log);
    this.metrics.readStateWith(stateReader(this));
    // Every emitter that can see Redis go away has a listener: the error goes to the log, not to the console (a
    // connection error once, by the connection's own warning).
    this.syncQueue = new Queue<SyncJobData>(this.keys.syncQueue, {
      connection: this.redis, prefix: this.keys.queuePrefix, telemetry: queueTelemetry(),
      defaultJobOptions: { attempts: 5, backoff: { type: 'exponential', delay: 5000 }, removeOnComplete: { age: 86_400, count: 1000 }, removeOnFail: { age: 7 * 86_400 } },
    });
    this.syncQueue.on('error', (err) => { if (this.redisDownSince === null) log.warn({ err: err.message }, 'sync queue error'); });
  }

  /**
   * The connection failed: said at once with where, why and what to do, then again every REDIS_WARN_EVERY_MS while it
   * lasts (ioredis retries every 2 s at most, for ever: each retry's error is not a line of its own).
   */
  private redisDown(err: Error): void {
    this.lastRedisError = err.message;
    const now = Date.now();
    this.redisDownSince ??= now;
    if (now - this.redisWarnedAt < REDIS_WARN_EVERY_MS) return;
    this.redisWarnedAt = now;
    const setting = this.config.redis.cluster?.length ? 'redis.cluster' : 'redis.url';
    this.log.warn({ redis: redisWhere(this.config.redis), err: err.message, downForS: Math.round((now - this.redisDownSince) / 1000) },
      `${this.redisWhere} is unreachable (${err.message}): the daemon keeps trying to connect, every 2 s at most, ` +
      `${this.ready ? 'and its work waits until Redis answers' : 'and starts once Redis answers'}; /health answers 503 meanwhile. ` +
      `Is Redis running, and is ${setting} in the configuration right?`);
  }

  private redisUp(): void {
    if (this.redisDownSince === null) return;
    this.log.info({ redis: redisWhere(this.config.redis), downForS: Math.round((Date.now() - this.redisDownSince) / 1000) }, `${this.redisWhere} answers again`);
    this.redisDownSince = null;
    this.redisWarnedAt = 0;
  }

  redisProblem(): string | null {
    const down = this.redisUnreachable();
    return down && `${down}; the daemon keeps trying`;
  }

  /** Null while the Redis connection is up; else where it is and why not. */
  private redisUnreachable(): string | null {
    if (this.redis.status === 'ready' && this.redisDownSince === null) return null;
    return `${this.redisWhere} is unreachable${this.lastRedisError ? ` (${this.lastRedisError})` : ` (connection ${this.redis.status})`}`;
  }

  /** Whether the start has finished (the daemon works and serves its routes). */
  get started(): boolean { return this.ready; }

  /** `p`, unless close() is called first: then the start ends with DaemonStopped (what p does later is ignored). */
  private unlessStopped<T>(p: Promise<T>): Promise<T> {
    const { signal } = this.stopping;
    if (signal.aborted) { p.catch(() => {}); return Promise.reject(new DaemonStopped()); }
    return new Promise<T>((resolve, reject) => {
      const stopped = () => reject(new DaemonStopped());
      signal.addEventListener('abort', stopped, { once: true });
      p.then((v) => { signal.removeEventListener('abort', stopped); resolve(v); }, (err: unknown) => { signal.removeEventListener('abort', stopped); reject(err); });
    });
  }

  /**
   * Starts a daemon. Its HTTP side listens first (/health answers 503 naming what the start waits for), then it waits
   * for Redis as long as it takes; `close()` (through `options.created`) ends the start at any point with DaemonStopped.
   */
  static async start(config: Config, options: DaemonOptions = {}): Promise<Daemon> {
    const log = options.log ?? createLogger(config.log.level);
    const d = new Daemon(config, log);
    options.created?.(d);
    try {
      await Daemon.wire(d, config, options, log);
      return d;
    } catch (err) {
      if (d.closing) {
        await d.closed;
        throw new DaemonStopped();
      }
      d.clock?.stop();
      d.refusals?.stop().catch(() => {});
      await d.notifications?.close().catch(() => {});
      await d.http?.close(0).catch(() => {});
      d.redis.disconnect();
      throw err;
    }
  }

  private static async wire(d: Daemon, config: Config, options: DaemonOptions, log: Logger): Promise<void> {
    const step = <T>(p: Promise<T>) => d.unlessStopped(p);
    if (options.http !== false) {
      d.http = await step(listenHttp(config.http.host, config.http.port, () => ({ redis: d.redisProblem() ?? 'ok', waitingFor: d.waitingFor })));
      log.info({ address: d.address, redis: redisWhere(config.redis) }, `starting: /health answers at ${d.address}/health (503 until the daemon is ready)`);
    }
    const ctx: CrmContext = { redis: d.redis, keys: d.keys, log, metrics: d.metrics };
    let now = options.now;
    if (!now && config.dialerClock) {
      d.waitingFor = `the dialer's clock at ${config.dialerClock.url}`;
      now = await step(d.followClock(config.dialerClock));
    }
    d.waitingFor = d.redisWhere;
    await step(d.redis.ping());
    d.waitingFor = 'the Redis state and the checks';
    await step(d.checkRedis());
    // Before anything reads the state: a newer one is refused, an older one migrated (one process; the others wait).
    // (Routed syncs are new since the layout changed: their routes have no old keys.)
    await step(openState(d.redis, d.keys, config.syncs.filter((sync) => !sync.routes).map((sync) => {
      const dialer = dialerOf(config, sync);
      const campaign = campaignKey(dialer.baseUrl, dialer.accountId, sync.campaignId);
      return { id: sync.id, campaign, keys: d.keys.sync(sync.id, campaign) };
    }), log));
    for (const sync of config.syncs) {
      // One push queue per API key: syncs sharing a key share its queue, so its rate limit holds for all of them.
      const dialer = dialerOf(config, sync);
      const pushName = pushQueueName(dialer);
      let push = d.pushQueues.get(pushName);
      if (!push) {
        push = new PushQueue(dialer, d.redis, d.keys.queuePrefix, d.targets, log, d.metrics, d.stopping.signal);
        d.pushQueues.set(pushName, push);
      }
      const compliance = complianceOf(config, sync);
      if (options.workers !== false) logRules(log, sync);
      // What a run held for a webhook being received is released, when the last one ends, by a run of its own.
      const arrivals = new Arrivals(() => d.triggerPull(sync.id, 'webhook', false, 'inbox'));
      const source = createSource(sync, ctx);
      // The sync's Do Not Call lists: one gate, each campaign's evidence under its own id; a list that cannot vouch holds
      // the campaigns Paused through their calling window.
      const gate = new DncGate(d.redis, new DncKeys(d.prefix), sync.dnc, { now });
      const dncOf = (campaignId: string) => ({ gate, auditDays: config.doNotCallAuditDays, campaignId });
      const hold = (holdsNumbers: boolean) => listHold(gate, holdsNumbers);
      /** The mirror of one campaign of the sync (`id`: the sync's, or a route's); its plans and history are the sync's. */
      const mirrorOf = (id: string, campaignId: string, state: SyncState, sink: Sink, window: CampaignWindow | undefined): MirrorRuntime => ({
        syncId: id, campaignId, config: sync.mirror!, timeZone: dialer.timeZone, sink,
        // Its own client: the report read needs a key that may read reports, and spends the key's budget like any call.
        dialer: new DialerClient(dialer, d.stopping.signal), state, log, metrics: d.metrics, history: d.history.of(sync.id), leaseMs: config.takeoverAfter, window,
        plan: () => d.triggerPlan(sync.id),
      });
      if (sync.routes) {
        // One read (source, cursor, inbox, runs) under the sync's own keys; one campaign state, window and push target per route.
        const keys = d.keys.routedSync(sync.id);
        // One sink for the sync's activities, whichever campaign the calls were in.
        const sink = sync.mirror ? createSink(sync, ctx) : undefined;
        const rt: SyncRuntime = { config: sync, state: new SyncState(d.redis, keys, sync.id, d.acks), source, push, log, metrics: d.metrics, arrivals, leaseMs: config.takeoverAfter, routes: [] };
        for (const route of sync.routes) {
          const id = routeId(sync.id, route.campaignId);
          const routeKeys = d.keys.sync(id, campaignKey(dialer.baseUrl, dialer.accountId, route.campaignId), keys);
          const state = new SyncState(d.redis, routeKeys, id, d.acks);
          rt.routes!.push({
            config: { ...sync, id, campaignId: route.campaignId, routes: undefined }, state, source, push, log, metrics: d.metrics, arrivals, leaseMs: config.takeoverAfter,
            window: new CampaignWindow({ redis: d.redis, keys: routeKeys, dialer: windowDialer(dialer), campaignId: route.campaignId, compliance: compliance!, mapping: sync.mapping, log, now,
              refusal: () => refusalOf(d.redis, keys.meta), listHold: hold }),
            route: { of: rt, ...routeOf(route) }, dnc: dncOf(route.campaignId),
          });
          d.targets.set(id, d.pushTarget(sync, sync.id, route.campaignId, state, rt.routes!.at(-1)!.window));
          if (sync.mirror) {
            // Each campaign's call-detail records, read by its own mirror (marks, lease, cap counts under the route's keys).
            d.mirrors.set(id, mirrorOf(id, route.campaignId, state, sink!, rt.routes!.at(-1)!.window));
          }
        }
        d.runtimes.set(sync.id, rt);
        continue;
      }
      const keys = d.keys.sync(sync.id, campaignKey(dialer.baseUrl, dialer.accountId, sync.campaignId));
      const state = new SyncState(d.redis, keys, sync.id, d.acks);
      const rt: SyncRuntime = { config: sync, state, source, push, log, metrics: d.metrics, arrivals, leaseMs: config.takeoverAfter, dnc: dncOf(sync.campaignId) };
      if (compliance) {
        rt.window = new CampaignWindow({ redis: d.redis, keys, dialer: windowDialer(dialer), campaignId: sync.campaignId, compliance, mapping: sync.mapping, log, now,
          refusal: () => refusalOf(d.redis, keys.meta), listHold: hold });
      }
      d.runtimes.set(sync.id, rt);
      if (sync.mirror) {
        d.mirrors.set(sync.id, mirrorOf(sync.id, sync.campaignId, state, createSink(sync, ctx), rt.window));
      }
      d.targets.set(sync.id, d.pushTarget(sync, sync.id, sync.campaignId, state, rt.window));
    }
    await step(d.noticeRedisRestart());
    d.refusals = new Refusals({
      redis: d.redis, log, syncIds: config.syncs.map((s) => s.id), metaOf: (id) => d.runtimes.get(id)!.state.keys.meta,
      check: (ids) => checkConfig(config, { redis: d.redis, redisProblem: null, keys: d.keys, log, metrics: d.metrics }, { syncs: ids, shared: false }),
      // The window first (it stood aside while the sync was refused: its campaign is set as the window wants), then a run.
      lifted: async (id) => {
        if (d.syncWorker) await d.enforceWindow(d.runtimes.get(id)!, 'refusal lifted');
        await d.triggerPull(id, 'refusal lifted');
      },
    });
    // `start` fails closed on configuration: the checks run before any work, and again for the syncs they refuse.
    // `sync <id>` checks its one sync before any window is enforced, so a refused sync's campaign is left alone there too.
    if (options.check) {
      d.waitingFor = 'the checks of each sync';
      d.firstCheck = await step(d.refusals.check(options.check === true ? undefined : options.check));
      if (options.check === true) d.refusals.repeat();
    }
    // A window edge missed while no process ran (or that Redis forgot) is made good before any other work (by a
    // process that works: `status` and `--dry-run` change nothing).
    const works = options.workers !== false;
    d.waitingFor = 'the calling windows\' first check';
    if (works) for (const rt of d.runtimes.values()) await step(d.enforceWindow(rt, 'start'));
    d.waitingFor = 'the queues and schedules';
    d.redis.on('ready', () => {
      void (async () => {
        await d.noticeRedisRestart().catch(() => {});
        if (works) for (const rt of d.runtimes.values()) await d.enforceWindow(rt, 'reconnected');
        // A reconnection may follow a Redis that lost its last writes, a scheduler among them: check at once.
        await d.schedules?.checkLater('reconnected');
      })();
    });
    if (options.workers !== false) {
      const lockDuration = config.takeoverAfter;
      d.syncWorker = new WorkerWatchdog(() => {
        const w = new Worker<SyncJobData>(d.keys.syncQueue, (job, token) => inSync(d.history.of(job.data.syncId), () => d.process(job, token)), {
          connection: d.redis, prefix: d.keys.queuePrefix, concurrency: 4, lockDuration, telemetry: queueTelemetry(),
          stalledInterval: Math.max(1000, Math.floor(lockDuration / 2)), maxStalledCount: 100,
        });
        w.on('error', (err) => log.error({ err: err.message }, 'sync worker error'));
        return w;
      }, d.syncQueue, log);
      for (const q of d.pushQueues.values()) q.startWorker(lockDuration);
      // Batches a process wrote and died before queuing hold their numbers' claims: queue them now, not at the next run.
      for (const rt of d.runtimes.values()) await step(resumeBatches(rt));
      if (options.schedules !== false) {
        d.schedules = new Schedules(d.syncQueue, d.redis, d.keys, log, d.metrics,
          () => config.syncs.flatMap((sync) => {
            const rt = d.runtimes.get(sync.id)!;
            // A routed sync's one window check sets every route's campaign.
            return wantedSchedulers(sync, rt.source.compareEvery, campaignsOf(rt)[0]!.window?.compliance.checkEvery, config.doNotCallLoadEvery || undefined);
          }));
        const scheduled = await step(d.schedules.check(true));
        d.schedules.repeat(config.scheduleCheckEvery);
        // A sync seen for the first time starts with a full import (an `every` schedule just set fires at once itself).
        for (const sync of config.syncs) {
          if (scheduled.has(sync.id) && 'every' in sync.schedule) continue;
          if (!(await step(d.redis.hget(d.runtimes.get(sync.id)!.state.keys.meta, 'fullDone')))) await step(d.triggerPull(sync.id, 'first run'));
        }
      }
    }
    // Notifications (notify/): evaluated under a lease by one process at a time, delivered by every working one.
    if (config.notify && works && options.schedules !== false) {
      d.notifications = Notifications.start({ config: config.notify, redis: d.redis, keys: d.keys, log, metrics: d.metrics, runtimes: () => d.runtimes.values() });
    }
    if (d.http) {
      await step(d.http.serve(d));
      log.info({ address: d.address }, 'daemon listening');
    }
    d.ready = true;
  }

  /**
   * Where the push queue records a campaign's batches: the state of the sync (or route) that planned them. A route's
   * plan follow-ups are its routed sync's (`syncId`), whose plan job plans every route.
   */
  private pushTarget(sync: SyncConfig, syncId: string, campaignId: string, state: SyncState, window: CampaignWindow | undefined): PushTarget {
    const { keys } = state;
    return {
      state, campaignId, varNames: Object.keys(sync.mapping.variables), window,
      afterBatch: async () => { if (await this.redis.scard(keys.dirty)) await this.triggerPlan(syncId); },
      needsReconcile: async (reason) => { await this.redis.hset(keys.meta, 'reconcile', reason); },
      history: this.history.of(syncId),
    };
  }

  /** The mirrors of a sync: its own, or one per route of a routed sync (in route order); none without a mirror. */
  mirrorsOf(syncId: string): MirrorRuntime[] {
    const rt = this.runtimes.get(syncId);
    return rt ? campaignsOf(rt).flatMap((c) => this.mirrors.get(c.config.id) ?? []) : [];
  }

  get address(): string | null {
    const a = this.http?.server.address();
    return a && typeof a === 'object' ? `http://${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}` : null;
  }

  /**
   * Calling windows judged by the dialer's clock (config `dialerClock`: the demo's sped-up reference server). Checks
   * every `checkEvery` of real time then span `checkEvery × speed` of the dialer's: the margin before a close must be
   * longer, or a check could come after the close.
   */
  private async followClock(c: NonNullable<Config['dialerClock']>): Promise<() => number> {
    const clock = await followDialerClock(c, (err) => this.log.warn({ err: err.message }, 'dialer clock: reading failed; the last reading is carried forward'));
    this.clock = clock;
    for (const sync of this.config.syncs) {
      const compliance = complianceOf(this.config, sync);
      if (compliance && compliance.margin <= compliance.checkEvery * clock.speed) {
        clock.stop();
        throw new ConfigError('with dialerClock', [`sync "${sync.id}": compliance.margin (${compliance.margin / 1000}s of the dialer's clock) must be longer than checkEvery (${compliance.checkEvery / 1000}s) times the dialer clock's speed (${clock.speed}): ${compliance.checkEvery * clock.speed / 1000}s of its time pass between two checks`]);
      }
    }
    this.log.info({ url: c.url, now: new Date(clock.now()).toISOString(), speed: clock.speed }, 'calling windows follow the dialer\'s clock');
    return () => clock.now();
  }

  /** Warns when Redis may drop or forget BullMQ's and the daemon's keys. */
  private async checkRedis(): Promise<void> {
    try {
      const [, policy] = (await this.redis.config('GET', 'maxmemory-policy')) as [string, string];
      if (policy && policy !== 'noeviction') {
        this.log.warn({ policy }, 'Redis maxmemory-policy is not noeviction: under memory pressure Redis may evict queue and sync keys (locks, batches, claims) and the daemon could lose or duplicate work');
      }
      const info = await this.redis.info('persistence');
      const aof = /aof_enabled:1/.test(info);
      const [, save] = (await this.redis.config('GET', 'save')) as [string, string];
      if (!aof && !save) this.log.warn('Redis has no persistence (no AOF, no RDB snapshots): a Redis restart forgets queued batches and sync state; the daemon then rebuilds from the campaign and the CRM, which costs a full import');
    } catch (err) {
      this.log.info({ err: (err as Error).message }, 'could not read the Redis configuration (managed Redis?); make sure it is noeviction with persistence');
    }
  }

  /**
   * After Redis restarts, its last writes may be lost (AOF fsyncs once a second): every sync then checks the campaign
   * again before its next plan. Redis's run_id changes with every start.
   */
  private async noticeRedisRestart(): Promise<void> {
    const runId = await serverRunIds(this.redis);
    const key = this.keys.redisRunId;
    // An empty Redis (restarted without persistence) forgot the key: this process did not.
    const previous = (await this.redis.getset(key, runId)) ?? this.seenRedisRunId;
    this.seenRedisRunId = runId;
    if (previous === runId) return;
    if (previous) this.log.warn('Redis restarted since it was last seen: each sync reconciles with its campaign on its next run');
    for (const rt of this.runtimes.values()) for (const c of campaignsOf(rt)) await this.redis.hset(c.state.keys.meta, 'reconcile', 'Redis restarted');
    // The mirror's last marks may be lost too: its next run asks the CRM, a page at a time, about what it finds
    // unmarked, until a page turns out all new to the CRM. A mirror with no watermark asks too: a first start cannot
    // be told from a process started on a Redis that lost everything, and on a true first start the first page's
    // look-up finds nothing, which ends the asking.
    // (verifyFrom: how recent the writes asked about may be, for a CRM whose search index lags. After a restart this
    // process saw, its own last writes; before this process, none of its own.)
    for (const m of this.mirrors.values()) {
      const meta = m.state.keys.mirror.meta;
      if (previous) await this.redis.hset(meta, 'verify', '1', 'verifyFrom', Date.now());
      else if (!(await this.redis.hexists(meta, 'watermark'))) await this.redis.hset(meta, 'verify', '1', 'verifyFrom', 0);
    }
    // (The schedules are checked after this, on every reconnection.)
    if (previous && this.syncWorker) {
      for (const id of this.runtimes.keys()) await this.triggerPull(id, 'redis restart');
    }
  }

  /**
   * Queues a run; a storm of triggers for one sync coalesces into one running and one waiting. `read` says what the
   * run reads of the source: everything (full), changes (pull), changes and the whole selection's ids (compare), or
   * only what the inbox names (inbox: webhooks whose contacts are read by id).
   */
  async triggerPull(syncId: string, trigger: string, full = false, read: 'pull' | 'compare' | 'inbox' = 'pull'): Promise<void> {
    const meta = this.runtimes.get(syncId)!.state.keys.meta;
    if (full) await this.redis.hset(meta, 'fullRequested', '1');
    else if (read !== 'inbox') await this.redis.hset(meta, read === 'compare' ? 'compareWanted' : 'pullWanted', '1');
    await this.syncQueue.add('pull', { syncId, trigger }, { deduplication: { id: `pull-${syncId}`, keepLastIfActive: true } });
  }

  /** Queues a mirror run; call.finished events and the schedule coalesce like pulls. */
  async triggerMirror(syncId: string, trigger: string, since?: string): Promise<void> {
    if (since) await this.redis.hset(this.runtimes.get(syncId)!.state.keys.mirror.meta, 'backfillSince', since);
    await this.syncQueue.add('mirror', { syncId, trigger }, { deduplication: { id: `mirror-${syncId}`, keepLastIfActive: true } });
  }

  async triggerPlan(syncId: string): Promise<void> {
    await this.syncQueue.add('plan', { syncId, trigger: 'batch done' }, { deduplication: { id: `plan-${syncId}`, keepLastIfActive: true } });
  }

  private async process(job: Job<SyncJobData>, token?: string): Promise<unknown> {
    const rt = this.runtimes.get(job.data.syncId);
    if (!rt) return 'unknown sync (removed from the configuration)';
    // A refused sync adds no numbers: its reads and plans wait for the refusal to be lifted (its window and mirror go on).
    if (job.name === 'pull' || job.name === 'plan') {
      const refused = await refusalOf(this.redis, rt.state.keys.meta);
      if (refused) return `refused: ${refused.problems.map((p) => p.message).join('; ')}`;
    }
    // Scheduler jobs skip deduplication: they only queue a pull, which deduplicates.
    if (job.name === 'tick') {
      // A trace of its own per check (linked to the scheduler's): the runs and plans it asks for are not chained into
      // one never-ending trace of the scheduler's repeats.
      if (job.data.kind === 'window') return await inSpan('calling window', () => ({ 'cds.sync': rt.config.id }), () => this.enforceWindow(rt, 'schedule', true), { root: true });
      if (job.data.kind === 'lists') return await this.loadLists(rt);
      if (job.data.kind === 'mirror') await this.triggerMirror(rt.config.id, 'schedule');
      else if (job.data.kind === 'compare') {
        // The scheduler's first tick fires at once: a sync that has not imported yet, or compared within the
        // interval's first half (a full import compares too), has nothing to compare yet.
        const meta = await this.redis.hmget(rt.state.keys.meta, 'fullDone', 'lastCompareAt');
        if (!meta[0] || Date.now() - Number(meta[1] ?? 0) < (rt.source.compareEvery ?? 0) / 2) return 'compared recently';
        await this.triggerPull(rt.config.id, 'compare', false, 'compare');
      } else await this.triggerPull(rt.config.id, 'schedule');
      return 'queued';
    }
    if (job.name === 'mirror') {
      const mirrors = this.mirrorsOf(rt.config.id);
      if (!mirrors.length) return 'no mirror configured';
      const mk = rt.state.keys.mirror;
      const since = (await this.redis.hget(mk.meta, 'backfillSince')) ?? undefined;
      // A routed sync's campaigns one after the other (each mirror holds its own lease); the result is their sum.
      let result: MirrorRunResult | undefined;
      for (const mirror of mirrors) {
        const r = await mirrorRun(mirror, { since, signal: this.stopping.signal });
        result = result ? sumResults(result, r) : r;
      }
      if (since && !this.stopping.signal.aborted) {
        await this.redis.multi().hdel(mk.meta, 'backfillSince').hset(mk.meta, 'backfill', JSON.stringify({ since, ...result, at: new Date().toISOString() })).exec();
      }
      return result;
    }
    if (job.name === 'plan') {
      // A follow-up of the sync's latest run (what its batches left dirty): its counts belong to that run.
      // While that run still reads (or waits to resume), it plans what does not fill a batch at its end: planning it
      // now would spend a dialer request on a part of a batch.
      const [latest] = await this.redis.lrange(rt.state.keys.runs, 0, 0);
      if (!latest) return 'no run yet';
      const job = (await this.redis.hget(rt.state.keys.run(latest), 'status')) === 'running' ? await this.syncQueue.getJob(latest) : undefined;
      // A run whose job is gone (failed for good) will plan nothing more: then this plans everything.
      const reading = job ? !['completed', 'failed', 'unknown'].includes(await job.getState()) : false;
      return { planned: await planDirty(rt, latest, reading) };
    }
    if (job.data.trigger === 'webhook' && rt.source.pulls && !(await this.redis.exists(rt.state.keys.run(String(job.id))))) {
      // A pull a webhook asked for reads what changed since the last run (less the overlap): while more webhooks of the
      // sync are being received it waits for them (the last one to end queues it again), so a burst costs one read of
      // its changes, not one a run. Its pullWanted stays set. An inbox-only run (contacts read by id) never waits here.
      const [pull, full, compare] = await this.redis.hmget(rt.state.keys.meta, 'pullWanted', 'fullRequested', 'compareWanted');
      if (pull && !full && !compare && rt.arrivals.hold()) return 'held: webhooks of this sync are being received';
    }
    try {
      return await runSync(rt, String(job.id), job.data.trigger ?? 'manual', this.stopping.signal);
    } catch (err) {
      if (err instanceof Interrupted) {
        // Back to the queue without spending an attempt; the run resumes from its checkpoint wherever it is taken next.
        await job.moveToDelayed(Date.now(), token);
        throw new DelayedError();
      }
      if (err instanceof RunBusy) {
        // Another process runs the sync (this job was given to a worker again after its lock was lost, or queued beside
        // it): this one waits, without spending an attempt, and then resumes or finds its run done.
        this.log.info({ sync: rt.config.id, job: job.id, holder: err.holder }, 'another process runs this sync: the job waits for it');
        // (Moving fails when the job's lock was lost meanwhile: the job is then another worker's.)
        await job.moveToDelayed(Date.now() + Math.max(err.retryInMs, 250), token).catch(() => {});
        throw new DelayedError();
      }
      if (err instanceof RunStopped) {
        // The job is another worker's now (its lock was lost): moving it fails, and is not needed.
        await job.moveToDelayed(Date.now(), token).catch(() => {});
        throw new DelayedError();
      }
      // A CRM that refuses the request (credentials, selection, budget) will refuse it again: no retry until the next trigger.
      if (err instanceof SourceError && err.final) throw new UnrecoverableError(err.message);
      throw err;
    }
  }

  /**
   * Loads what is new in the folders of the sync's Do Not Call lists (doNotCallLoadEvery), one process per list at a
   * time (a lease); a list another sync shares is loaded by whichever asks first, the others find nothing newer. What
   * a load changed reaches the campaigns at their next run (a new copy plans their numbers again).
   */
  async loadLists(rt: SyncRuntime): Promise<string> {
    const keys = new DncKeys(this.prefix);
    const said: string[] = [];
    for (const list of rt.config.dnc.lists) {
      const token = randomBytes(8).toString('hex');
      if (await this.redis.set(keys.loadLease(list.name), token, 'PX', 15 * 60_000, 'NX') !== 'OK') { said.push(`${list.name}: being loaded by another process`); continue; }
      try {
        const r = await loadFolder(copiesOf(this.redis, keys, list), list);
        const what = { list: list.name, folder: list.folder, loaded: r.loaded?.folder ?? null, applied: r.applied.map((a) => a.folder), skipped: r.skipped, copyDate: r.copy?.date ?? null };
        if (r.failed) this.log.warn({ ...what, err: r.failed }, `Do Not Call list ${list.name}: its folder's downloads could not be loaded (${r.failed}); the copy stays as it was`);
        else if (r.loaded || r.applied.length) this.log.info(what, `Do Not Call list ${list.name}: loaded from its folder; copy of ${r.copy?.date}`);
        else if (r.skipped.length) this.log.warn(what, `Do Not Call list ${list.name}: entries of its folder left aside: ${r.skipped.join('; ')}`);
        said.push(`${list.name}: ${r.failed ? `failed: ${r.failed}` : r.loaded || r.applied.length ? `copy of ${r.copy?.date}` : 'nothing newer'}`);
      } finally {
        // Released only if still this process's (a load that outlived its lease must not release another's).
        await this.redis.eval("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0", 1, keys.loadLease(list.name), token);
      }
    }
    return said.join('; ');
  }

  /**
   * Sets the sync's campaign to the state its calling window wants; when it opens, a run plans the numbers that
   * waited (and retries batches parked while it was paused). A failure is logged (`rethrow`: and fails the job, so
   * BullMQ retries it); the next check tries again.
   */
  async enforceWindow(rt: SyncRuntime, why: string, rethrow = false): Promise<string> {
    // A routed sync: each route's campaign follows its own window (the answer lists their states in route order).
    if (rt.routes) return (await Promise.all(rt.routes.map((r) => this.enforceWindow(r, why, rethrow)))).join(',');
    if (!rt.window) return 'no calling window';
    // A route's runs and plans are its routed sync's.
    const syncId = rt.route?.of.config.id ?? rt.config.id;
    const campaignId = rt.config.campaignId;
    try {
      const r = await rt.window.enforce(why);
      // A refused sync's window stood aside (it plans nothing, so its caps have nothing to take out); a pause it sent
      // and the dialer took is the state change that lifts a refusal a 403 caused.
      if (r.refused) {
        if (r.changed) await this.refusals?.passed(syncId, 'dialer.state');
        return r.state ?? 'untouched';
      }
      // Numbers whose cap has passed are planned again (they stayed dirty, or were marked dirty when released), also
      // at an opening (its run plans them).
      const released = await rt.window.releaseCapped();
      // Numbers whose record called past what the mirror has read, at their cap: taken out (the plan deletes them).
      const taken = await rt.window.watchCaps();
      await this.refusals?.passed(syncId, 'dialer.state');
      if (r.changed && r.state === 'Active') await this.triggerPull(syncId, 'window opened');
      else if (released || taken) await this.triggerPlan(syncId);
      return r.state!;
    } catch (err) {
      const last = await rt.window.lastState().catch(() => null);
      const stays = `campaign ${campaignId} stays as the dialer has it${last ? ` (the daemon last set it ${last})` : ' (the daemon never set its state)'}`;
      if (err instanceof DialerError && err.status === 403) {
        // The key may add numbers but not pause the campaign: the window cannot hold it (the `check` issue refuses this at start).
        this.log.error({ sync: syncId, campaign: campaignId, err: err.message, why }, `sync "${syncId}" is under the calling-window rules, but its dialer key may not ` +
          `pause or resume campaign ${campaignId} (403): ${stays}, and the sync adds no numbers; fix: give the key the Campaign Admin role, or turn the rules off for the sync with compliance: { off: "<reason>" }`);
        // Its window cannot hold the campaign: the sync adds no numbers until a state change passes.
        await this.refusals?.refuseObserved(syncId, fail(syncId, 'dialer.state', `the dialer refused to pause or resume campaign ${campaignId} (403): the calling window cannot hold it`,
          'give the key the Campaign Admin role, or turn the rules off for the sync with compliance: { off: "<reason>" }', true)).catch(() => {});
      } else this.log.warn({ sync: rt.config.id, campaign: campaignId, err: (err as Error).message, why }, `calling window: could not set the state of campaign ${campaignId} (${(err as Error).message}): ${stays}; the next check tries again`);
      if (rethrow) throw err;
      return 'failed';
    }
  }

  /**
   * The last process stopping: campaigns holding numbers under a per-number cap are paused, since no process would be
   * left to take a number out at its cap before the dialer's retry (the next start sets each as its window wants).
   * Another process still working the queue watches them; a failure here is logged, never stops the shutdown.
   */
  private async pauseUnwatched(): Promise<void> {
    try {
      if (this.redis.status !== 'ready' || await this.syncQueue.getWorkersCount() > 0) return;
      const windows = [...this.runtimes.values()].flatMap((rt) => campaignsOf(rt)).map((c) => c.window).filter((w) => w !== undefined);
      await Promise.all(windows.map((w) => w.pauseUnwatched()));
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'per-number cap: could not pause the capped campaigns at the last process\'s stop; the dialer may retry their numbers past their cap until a process starts');
    }
  }

  /**
   * Stops taking work, lets running jobs finish (up to the deadline), then closes everything; also while the daemon is
   * still starting (the start then ends with DaemonStopped). A request waiting for the dialer or a CRM is given up at
   * once (its job resumes from its checkpoint, as after a crash). Without Redis no running job can finish or even
   * record where it is: the wait is then REDIS_GONE_GRACE_MS, not the deadline. A second call waits for the first.
   */
  close(deadlineMs = this.config.shutdownTimeout): Promise<void> {
    if (!this.closed) {
      this.closing = true;
      this.stopping.abort();
      this.closed = this.shutDown(deadlineMs);
    }
    return this.closed;
  }

  /** Whether Redis answers a PING within `ms` (a Redis Cluster whose nodes are gone may still look connected). */
  private async redisAnswers(ms: number): Promise<boolean> {
    if (this.redis.status !== 'ready') return false;
    let timer: NodeJS.Timeout | undefined;
    const answered = await Promise.race([this.redis.ping().then(() => true, () => false), new Promise<boolean>((r) => { timer = setTimeout(() => r(false), ms); })]);
    clearTimeout(timer);
    return answered;
  }

  private async shutDown(deadlineMs: number): Promise<void> {
    this.schedules?.stop();
    this.clock?.stop();
    const reachable = await this.redisAnswers(REDIS_PROBE_MS);
    if (!reachable) {
      this.log.error({ redis: redisWhere(this.config.redis), err: this.lastRedisError }, this.ready
        ? `stopping without waiting for running jobs: Redis is unreachable (${this.redisUnreachable() ?? `${this.redisWhere} did not answer a PING within ${REDIS_PROBE_MS} ms`}); they resume from their checkpoints when Redis is back`
        : `stopping before the daemon started: ${this.redisUnreachable() ?? `${this.redisWhere} did not answer a PING within ${REDIS_PROBE_MS} ms`}`);
      deadlineMs = Math.min(deadlineMs, REDIS_GONE_GRACE_MS);
    }
    const graceful = (async () => {
      await Promise.all([this.refusals?.stop(), this.notifications?.close(), this.http?.close(Math.min(deadlineMs, 1000))]);
      await Promise.all([this.syncWorker?.close(), ...[...this.pushQueues.values()].map((q) => q.close())]);
      // (Only a process that worked the queue can be the last one to stop.)
      if (reachable && this.syncWorker) await this.pauseUnwatched();
      await this.syncQueue.close();
    })();
    graceful.catch((err: Error) => this.log.warn({ err: err.message }, 'shutdown: closing a part failed'));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      graceful.then(() => false, () => false),
      new Promise<boolean>((r) => { timer = setTimeout(() => r(true), deadlineMs); }),
    ]);
    clearTimeout(timer);
    if (timedOut && reachable) this.log.warn({ deadlineMs }, 'shutdown deadline passed: closing with jobs still running (they resume in another process)');
    // The charts' last points are worth a second while Redis answers, nothing when it does not.
    await this.history.close(reachable ? 1000 : 0).catch(() => {});
    this.redis.disconnect();
  }
}
