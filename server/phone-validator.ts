// Validates phone numbers on worker threads: libphonenumber's regular expressions cost ~15 us a number,
// which would block the event loop during a large upload and leave the second core idle.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { checkPhoneNumber, type PhoneCheck } from './phone-numbers.ts';

/** Below this many numbers, a round trip to a worker costs more than it saves. */
const INLINE_BELOW = 200;

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
    const worker = new Worker(new URL('./phone-worker.ts', import.meta.url));
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
    if (raws.length < INLINE_BELOW || this.closed) return Promise.resolve(raws.map(checkPhoneNumber));
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
