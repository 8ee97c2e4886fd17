// The operations page's brute-force throttle: a token bucket of wrong admin tokens per client address (the console's
// sign-in limit, 20 tries then one per 6 s), and a log line per client once a minute instead of one per guess.

export interface SignInPolicy {
  /** Wrong tokens a client may send at once. */
  burst: number;
  /** Wrong tokens a second it gets back. */
  rate: number;
}

/** As the reference server's console: 20 tries, then one every 6 seconds. */
export const OPS_SIGN_IN: SignInPolicy = { burst: 20, rate: 1 / 6 };
/** A client's wrong tokens are logged at most once in this long (with how many since the last line). */
const LOG_EVERY_MS = 60_000;
/** Clients remembered before full buckets are forgotten (a flood of addresses cannot grow the map for ever). */
const SWEEP_AT = 10_000;

interface Client { tokens: number; at: number; loggedAt: number; unlogged: number }

export class SignInLimit {
  private readonly clients = new Map<string, Client>();
  private readonly policy: SignInPolicy;
  private readonly now: () => number;

  constructor(policy: SignInPolicy = OPS_SIGN_IN, now: () => number = () => performance.now()) {
    this.policy = policy;
    this.now = now;
  }

  /** The seconds this client must wait before a token it sends is even checked; 0 when it may try. */
  wait(who: string): number {
    const c = this.refill(who);
    return c.tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - c.tokens) / this.policy.rate));
  }

  /**
   * Counts a wrong token (or a refused try). Returns how many went unlogged, this one included, when it is time to
   * log them; null when the client's line of this minute was already written.
   */
  wrong(who: string): number | null {
    const c = this.refill(who);
    c.tokens = Math.max(0, c.tokens - 1);
    c.unlogged += 1;
    const t = this.now();
    if (c.loggedAt >= 0 && t - c.loggedAt < LOG_EVERY_MS) return null;
    const n = c.unlogged;
    c.loggedAt = t;
    c.unlogged = 0;
    return n;
  }

  private refill(who: string): Client {
    const t = this.now();
    let c = this.clients.get(who);
    if (!c) {
      if (this.clients.size >= SWEEP_AT) this.sweep(t);
      c = { tokens: this.policy.burst, at: t, loggedAt: -1, unlogged: 0 };
      this.clients.set(who, c);
    }
    c.tokens = Math.min(this.policy.burst, c.tokens + ((t - c.at) / 1000) * this.policy.rate);
    c.at = t;
    return c;
  }

  /** Forgets clients whose bucket is full again and whose last line is old: they hold nothing a new entry would not. */
  private sweep(t: number): void {
    for (const [who, c] of this.clients) {
      if (c.tokens + ((t - c.at) / 1000) * this.policy.rate >= this.policy.burst && t - c.loggedAt >= LOG_EVERY_MS) this.clients.delete(who);
    }
  }
}
