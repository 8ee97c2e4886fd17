// The one simulation clock: virtual time, the events scheduled on it, and how it moves (manual or real time).

interface Scheduled { at: number; seq: number; action: () => void }

/**
 * A chunk (one transaction) ends after CHUNK events or CHUNK_MS of wall time, whichever comes first. Each
 * commit costs milliseconds on a large store whatever it carries, so chunks are as long as they can be while
 * a transaction (events, the writes flushed at its end, the commit) still holds the event loop under ~50 ms.
 */
const CHUNK = 3000;
const CHUNK_MS = 25;
/** Events between two looks at the wall clock. */
const CHUNK_CHECK = 128;

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
  private readonly chunkEnds: ((advanceDone: boolean) => void)[] = [];
  private chunks = 0;
  private inChunk = false;

  constructor(startMs: number) {
    this.time = startMs;
  }

  /** Runs events in chunks through `runner`; an event that throws is reported to `onError` and skipped. */
  runChunksWith(runner: (run: () => void) => void, onError: (err: unknown) => void): void {
    this.chunkRunner = runner;
    this.onError = onError;
  }

  /**
   * Runs `hook(false)` at the end of every chunk, inside its transaction, and `hook(true)` once at the end of
   * an advance that applied events, in a transaction of its own: where writes batched in memory are flushed.
   * Until an advance returns nothing but its events touches the store, so a hook may hold writes back from
   * one chunk to the next as long as it writes them all at the end of the advance.
   */
  onChunkEnd(hook: (advanceDone: boolean) => void): void {
    this.chunkEnds.push(hook);
  }

  /**
   * The number of the chunk of events being applied, or null outside one. Within a chunk nothing but its
   * events touches the store, so what an event read earlier in the same chunk is still true.
   */
  get chunk(): number | null {
    return this.inChunk ? this.chunks : null;
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
    let flushed = false;
    while (this.heap.length && this.heap[0]!.at <= to) {
      this.chunkRunner(() => this.inside(() => {
        const start = performance.now();
        for (let i = 0; i < CHUNK && this.heap.length && this.heap[0]!.at <= to; i++) {
          if (i % CHUNK_CHECK === CHUNK_CHECK - 1 && performance.now() - start > CHUNK_MS) break;
          const next = this.pop();
          this.time = next.at;
          try {
            next.action();
          } catch (err) {
            this.onError(err);
          }
          ran++;
        }
        // A short last chunk takes the end of the advance too: one commit fewer.
        flushed = !(this.heap.length && this.heap[0]!.at <= to) && performance.now() - start < CHUNK_MS / 3;
        this.endChunk(flushed);
      }));
    }
    if (ran && !flushed && this.chunkEnds.length) this.chunkRunner(() => this.inside(() => this.endChunk(true)));
    if (to > this.time) this.time = to;
    return ran;
  }

  private inside(run: () => void): void {
    this.chunks++;
    this.inChunk = true;
    try {
      run();
    } finally {
      this.inChunk = false;
    }
  }

  private endChunk(advanceDone: boolean): void {
    for (const hook of this.chunkEnds) {
      try {
        hook(advanceDone);
      } catch (err) {
        this.onError(err);
      }
    }
  }

  // Both sift with a hole (one write per level) rather than swapping pairs.
  private push(item: Scheduled): void {
    const h = this.heap;
    let i = h.length;
    h.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = h[parent]!;
      if (!before(item, p)) break;
      h[i] = p;
      i = parent;
    }
    h[i] = item;
  }

  private pop(): Scheduled {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    const n = h.length;
    if (n) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const m = r < n && before(h[r]!, h[l]!) ? r : l;
        if (!before(h[m]!, last)) break;
        h[i] = h[m]!;
        i = m;
      }
      h[i] = last;
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
