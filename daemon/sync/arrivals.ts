// The webhook requests of one sync this process is receiving: while one is, more is known to be coming, so a run holds
// back what does not fill a batch (a dialer request, a CRM read) instead of sending a part of it; when the last one
// ends, whatever was held is released by queuing a run. No timer: a lone webhook is never held.
export class Arrivals {
  private receiving = 0;
  private held = false;
  private readonly release: () => Promise<void>;

  /** `release` queues the run that sends what was held (it drains the inbox and plans what is dirty). */
  constructor(release: () => Promise<void>) { this.release = release; }

  /** A webhook request of the sync has begun arriving (its headers are read; its body may still be on its way). */
  begin(): void { this.receiving++; }

  /** That request is answered, or its connection closed. */
  end(): void {
    this.receiving = Math.max(0, this.receiving - 1);
    if (this.receiving === 0 && this.held) {
      this.held = false;
      void this.release().catch(() => {}); // Redis away: the schedule (and the next webhook) queue runs too.
    }
  }

  /** Whether a request is being received; if so the caller holds back, and the last request to end releases it. */
  hold(): boolean {
    if (this.receiving === 0) return false;
    this.held = true;
    return true;
  }

  /** Requests being received now (the operations page). */
  get count(): number { return this.receiving; }
}
