// Delivers notifications: one BullMQ job per message and destination, so a receiver that is down is retried with
// backoff (network errors, 408, 429 with its Retry-After, 5xx) without holding up the others, a sync or the
// evaluation. A destination is named by its type and host only: its URL may hold a secret (Slack's path is its token).
import { createHash } from 'node:crypto';
import got, { RequestError } from 'got';
import { Queue, UnrecoverableError, Worker, type ConnectionOptions, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.ts';
import { queueTelemetry } from '../telemetry.ts';
import { WorkerWatchdog } from '../worker-watchdog.ts';
import type { Destination } from './config.ts';
import { signedWebhook, slackMessage, type Notification } from './messages.ts';

/** Tries of a delivery, and the first backoff (doubled at each try): about 2.3 hours in all, well within repeatEvery's default. */
export const ATTEMPTS = 13;
export const FIRST_BACKOFF_MS = 1000;
/** The longest Retry-After a 429 is waited for (a longer one waits this long and tries). */
const MAX_RETRY_AFTER_MS = 3_600_000;
const TIMEOUT_MS = 10_000;

export interface NotifyJobData { destination: string; to: string; notification: Notification }

/** A destination's id in a job (never its URL): a hash of its type and URL. */
export function destinationId(d: Destination): string {
  return createHash('sha256').update(`${d.type}\n${d.url}`).digest('hex').slice(0, 16);
}

/** How the logs and the metric name a destination: its type and host (`slack:hooks.slack.com`). */
export function destinationLabel(d: Destination): string {
  return `${d.type}:${new URL(d.url).host}`;
}

/** A delivery that may succeed if tried again (`retryAfterMs`: what a 429 asked for). */
class DeliveryFailed extends Error {
  readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs = 0) { super(message); this.name = 'DeliveryFailed'; this.retryAfterMs = retryAfterMs; }
}

/** The wait before try `attemptsMade + 1`: doubling from FIRST_BACKOFF_MS, or a 429's Retry-After when longer. */
export function backoffMs(attemptsMade: number, err?: Error): number {
  const doubling = FIRST_BACKOFF_MS * 2 ** Math.max(0, attemptsMade - 1);
  const asked = err instanceof DeliveryFailed ? Math.min(err.retryAfterMs, MAX_RETRY_AFTER_MS) : 0;
  return Math.max(doubling, asked);
}

function retryAfter(value: string | string[] | undefined): number {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return 0;
  const s = Number(v);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : 0;
}

/** Why a delivery failed (`status` null: no answer), and whether trying again may help. */
interface Failure { status: number | null; said: string; retry: boolean; retryAfterMs: number }

/** Sends one message to one destination: null when it took it (2xx). */
async function post(d: Destination, n: Notification): Promise<Failure | null> {
  const request = d.type === 'slack'
    ? { body: JSON.stringify(slackMessage(n)), headers: { 'content-type': 'application/json' } }
    : signedWebhook(n, d.secret);
  try {
    const res = await got.post(d.url, { ...request, throwHttpErrors: false, retry: { limit: 0 }, timeout: { request: TIMEOUT_MS }, followRedirect: false });
    const s = res.statusCode;
    if (s >= 200 && s < 300) return null;
    return { status: s, said: res.body.replace(/\s+/g, ' ').trim().slice(0, 200), retry: s === 408 || s === 429 || s >= 500, retryAfterMs: s === 429 ? retryAfter(res.headers['retry-after']) : 0 };
  } catch (err) {
    // (Never the error's whole text: it may carry the URL.)
    const code = err instanceof RequestError ? err.code : (err as NodeJS.ErrnoException).code;
    return { status: null, said: `no answer (${code ?? 'network error'})`, retry: true, retryAfterMs: 0 };
  }
}

export class Deliveries {
  private readonly queue: Queue<NotifyJobData>;
  private readonly worker: WorkerWatchdog<NotifyJobData>;
  private readonly destinations: Map<string, Destination>;
  private readonly log: Logger;
  private readonly metrics: Metrics;

  constructor(o: { connection: ConnectionOptions; prefix: string; name: string; destinations: readonly Destination[]; log: Logger; metrics: Metrics }) {
    this.destinations = new Map(o.destinations.map((d) => [destinationId(d), d]));
    this.log = o.log;
    this.metrics = o.metrics;
    this.queue = new Queue<NotifyJobData>(o.name, {
      connection: o.connection, prefix: o.prefix, telemetry: queueTelemetry(),
      // Kept a day once sent: queuing the same message again (an evaluation that died before it said so) adds nothing.
      defaultJobOptions: { attempts: ATTEMPTS, backoff: { type: 'notify' }, removeOnComplete: { age: 86_400, count: 1000 }, removeOnFail: { age: 7 * 86_400 } },
    });
    this.queue.on('error', (err) => o.log.warn({ err: err.message, queue: o.name }, 'notification queue error'));
    this.worker = new WorkerWatchdog(() => {
      const w = new Worker<NotifyJobData>(o.name, (job) => this.deliver(job), {
        connection: o.connection, prefix: o.prefix, telemetry: queueTelemetry(), concurrency: 4,
        settings: { backoffStrategy: (attemptsMade: number, _type?: string, err?: Error) => backoffMs(attemptsMade, err) },
      });
      w.on('error', (err) => o.log.error({ err: err.message, queue: o.name }, 'notification worker error'));
      return w;
    }, this.queue, o.log);
  }

  /** Queues one message for every destination; queuing the same message again adds nothing (its id is the job's). */
  async send(n: Notification): Promise<void> {
    await this.queue.addBulk([...this.destinations].map(([id, d]) => ({
      name: 'notify', data: { destination: id, to: destinationLabel(d), notification: n }, opts: { jobId: `${n.id}-${id}` },
    })));
  }

  private async deliver(job: Job<NotifyJobData>): Promise<string> {
    const { to, notification: n } = job.data;
    const d = this.destinations.get(job.data.destination);
    const what = { to, event: n.body.event, status: n.body.status, sync: n.body.sync, ...(n.body.campaign ? { campaign: n.body.campaign } : {}), id: n.id, attempt: job.attemptsMade + 1 };
    // Queued by a process with another configuration (a rolling deploy): left to a process that has the destination.
    const failure = d ? await post(d, n) : { status: null, said: 'the destination is not in this process\'s configuration (processes of two configurations are running)', retry: true, retryAfterMs: 0 };
    if (!failure) {
      this.metrics.notifications.inc({ to, result: 'delivered' });
      this.log.info(what, `notification delivered to ${to}`);
      return 'delivered';
    }
    const last = !failure.retry || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    const answer = failure.status === null ? failure.said : `${failure.status}${failure.said ? ` ${failure.said}` : ''}`;
    this.metrics.notifications.inc({ to, result: last ? 'failed' : 'retry' });
    const fields = { ...what, host: to.slice(to.indexOf(':') + 1), httpStatus: failure.status };
    if (last) {
      this.log.warn(fields, `notification to ${to} NOT delivered: ${answer}; ${failure.retry ? `given up after ${job.attemptsMade + 1} tries` : 'not retried (the receiver refuses it)'}`);
      throw new UnrecoverableError(`notification to ${to}: ${answer}`);
    }
    const wait = backoffMs(job.attemptsMade + 1, new DeliveryFailed('', failure.retryAfterMs));
    if (job.attemptsMade === 0) this.log.warn(fields, `notification to ${to} failed: ${answer}; retried with backoff (next in ${Math.round(wait / 1000)} s, ${ATTEMPTS} tries in all)`);
    else this.log.debug(fields, `notification to ${to} failed again: ${answer}`);
    throw new DeliveryFailed(`notification to ${to}: ${answer}`, failure.retryAfterMs);
  }

  async close(): Promise<void> {
    await this.worker.close();
    await this.queue.close();
  }
}
