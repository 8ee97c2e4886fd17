// The error types the daemon's steps and CRMs share (the dialer's own is DialerError, in dialer.ts).

/** A source failure a run cannot get past (bad credentials, a bad selection, a spent budget): the run fails with it. */
export class SourceError extends Error {
  readonly status: number | null;
  /** Trying again will not help before something changes (credentials, configuration, a new day's budget). */
  readonly final: boolean;
  /**
   * A request that creates records failed in a way that does not say whether the CRM created them (a 5xx, a timeout,
   * a connection cut after the request was sent). It is never sent again blindly: what it may have written is looked
   * up first (the mirror's pending attempts).
   */
  readonly uncertain: boolean;
  constructor(message: string, status: number | null = null, final = status !== null && status < 500, uncertain = false) {
    super(message);
    this.status = status;
    this.final = final;
    this.uncertain = uncertain;
  }
}

/**
 * The same failure told in words that name what to fix (which setting, which value), when it has this status; its
 * status and flags are kept. Anything else is returned as it is.
 */
export function reword(err: unknown, status: number, sentence: (detail: string) => string): unknown {
  if (!(err instanceof SourceError) || err.status !== status) return err;
  return new SourceError(sentence(err.message), err.status, err.final, err.uncertain);
}
