// The one simulation clock: virtual time, the events scheduled on it, and how it moves (manual or real time).

interface Scheduled { at: number; seq: number; action: () => void }

/** Events applied per chunk (per transaction). */
const CHUNK = 2000;

/**
 * Virtual time in epoch milliseconds with a queue of timed actions. advanceTo applies every action due
 * up to the target, in time order (ties in scheduling order), with now() at each action's own time.
 */
export class SimulationClock {
  private time: number;
  private seq = 0;
  private readonly heap: Scheduled[] = [];
  /** Wraps each chunk of events (the store makes it one transaction: one commit, not one per write). */
  private chunkRunner: (run: () => void) => void = (run) => run();
  private onError: (err: unknown) => void = (err) => { throw err; };

  constructor(startMs: number) {
    this.time = startMs;
  }

  /** Runs events in chunks through `runner`; an event that throws is reported to `onError` and skipped. */
  runChunksWith(runner: (run: () => void) => void, onError: (err: unknown) => void): void {
    this.chunkRunner = runner;
    this.onError = onError;
  }

  now(): number {
    return this.time;
  }

  /** Runs `action` when the clock reaches `at` (at once on the next advance if `at` is not in the future). */
  at(at: number, action: () => void): void {
    this.push({ at: Math.max(at, this.time), seq: this.seq++, action });
  }

  after(ms: number, action: () => void): void {
    this.at(this.time + ms, action);
  }

  get pending(): number {
    return this.heap.length;
  }

  /** Applies every event up to `to` and leaves the clock there. Returns how many ran. */
  advanceTo(to: number): number {
    let ran = 0;
    while (this.heap.length && this.heap[0]!.at <= to) {
      this.chunkRunner(() => {
        for (let i = 0; i < CHUNK && this.heap.length && this.heap[0]!.at <= to; i++) {
          const next = this.pop();
          this.time = next.at;
          try {
            next.action();
          } catch (err) {
            this.onError(err);
          }
          ran++;
        }
      });
    }
    if (to > this.time) this.time = to;
    return ran;
  }

  private push(item: Scheduled): void {
    const h = this.heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  private pop(): Scheduled {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < h.length && before(h[l]!, h[m]!)) m = l;
        if (r < h.length && before(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

function before(a: Scheduled, b: Scheduled): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** Real-time mode: the clock follows the wall clock, `speed` simulated seconds per real second. */
export class RealTimeDriver {
  private timer: NodeJS.Timeout | null = null;
  private readonly clock: SimulationClock;
  private readonly speed: number;

  constructor(clock: SimulationClock, speed: number) {
    this.clock = clock;
    this.speed = speed;
  }

  start(tickMs = 50): void {
    const realStart = performance.now();
    const simStart = this.clock.now();
    this.timer = setInterval(() => {
      this.clock.advanceTo(simStart + Math.floor((performance.now() - realStart) * this.speed));
    }, tickMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
