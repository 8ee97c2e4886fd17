// The error types the daemon's steps and CRMs share (the dialer's own is DialerError, in dialer.ts).

/** A source failure a run cannot get past (bad credentials, a bad selection, a spent budget): the run fails with it. */
export class SourceError extends Error {
  readonly status: number | null;
  /** Trying again will not help before something changes (credentials, configuration, a new day's budget). */
  readonly final: boolean;
  constructor(message: string, status: number | null = null, final = status !== null && status < 500) {
    super(message);
    this.status = status;
    this.final = final;
  }
}
