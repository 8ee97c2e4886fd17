// Validates batches of phone numbers: the cheap answers inline, the rest on worker threads.
//
// A valid number costs under a microsecond on the compiled matchers (./phone-fast.ts), less than posting it to a
// worker and back costs this thread; what only libphonenumber-js can answer (~15-30 us a number: nearly every
// rejection) goes to a worker, so a batch of bad rows does not block the event loop.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { checkPhoneNumber, checkQuickly, type PhoneCheck } from './phone-numbers.ts';

/** A worker's file has this module's extension: .ts run from the repository, .js compiled into the package. */
const SOURCE = import.meta.url.slice(import.meta.url.lastIndexOf('.'));

/** Fewer numbers than this left for libphonenumber-js (under ~0.5 ms of work) are checked inline, without a worker's round trip. */
const INLINE_BELOW = 16;

interface Slot { worker: Worker; inFlight: number }
interface Pending { slot: Slot; resolve: (c: PhoneCheck[]) => void; reject: (e: Error) => void }

export class PhoneValidator {
  private readonly slots: Slot[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private closed = false;

  constructor(threads = Math.max(1, availableParallelism() - 1)) {
    for (let i = 0; i < threads; i++) this.slots.push(this.spawn());
  }

  private spawn(): Slot {
    const worker = new Worker(new URL(`./phone-worker${SOURCE}`, import.meta.url));
    worker.unref();
    const slot: Slot = { worker, inFlight: 0 };
    worker.on('message', (msg: { id: number; checks: PhoneCheck[] }) => {
      slot.inFlight--;
      const p = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      p?.resolve(msg.checks);
    });
    worker.on('error', (err) => this.fail(slot, err));
    worker.on('exit', (code) => { if (!this.closed) this.fail(slot, new Error(`phone validation worker exited with code ${code}`)); });
    return slot;
  }

  /** A crashed worker is replaced; the batches it held fail (their request answers 500, nothing was inserted). */
  private fail(slot: Slot, err: Error): void {
    const i = this.slots.indexOf(slot);
    if (i < 0 || this.closed) return;
    for (const [id, p] of this.pending) {
      if (p.slot === slot) { this.pending.delete(id); p.reject(err); }
    }
    this.slots[i] = this.spawn();
  }

  check(raws: string[]): Promise<PhoneCheck[]> {
    const checks: PhoneCheck[] = new Array(raws.length);
    const slow: number[] = [];
    for (let i = 0; i < raws.length; i++) {
      const quick = checkQuickly(raws[i]!);
      if (quick) checks[i] = quick;
      else slow.push(i);
    }
    if (slow.length < INLINE_BELOW || this.closed) {
      for (const i of slow) checks[i] = checkPhoneNumber(raws[i]!);
      return Promise.resolve(checks);
    }
    return this.post(slow.map((i) => raws[i]!)).then((answers) => {
      for (let k = 0; k < slow.length; k++) checks[slow[k]!] = answers[k]!;
      return checks;
    });
  }

  private post(raws: string[]): Promise<PhoneCheck[]> {
    const slot = this.slots.reduce((a, b) => (b.inFlight < a.inFlight ? b : a));
    const id = this.nextId++;
    slot.inFlight++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { slot, resolve, reject });
      slot.worker.postMessage({ id, raws });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
    for (const p of this.pending.values()) p.reject(new Error('the phone validator was closed'));
    this.pending.clear();
  }
}
