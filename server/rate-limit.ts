// Per-key token buckets (§8) and the RateLimit / RateLimit-Policy headers of the IETF draft (-10).

export interface RateLimitPolicy {
  /** Tokens added per second. */
  rate: number;
  /** Bucket size: the largest burst. */
  burst: number;
}

export const DEFAULT_RATE_LIMIT: RateLimitPolicy = { rate: 10, burst: 50 };

export interface RateDecision {
  allowed: boolean;
  headers: Record<string, string>;
  retryAfterSeconds: number;
}

interface Bucket { tokens: number; at: number }

export class RateLimiter {
  readonly policy: RateLimitPolicy;
  private readonly buckets = new Map<string, Bucket>();
  private readonly now: () => number;

  constructor(policy: RateLimitPolicy, now: () => number = () => performance.now()) {
    this.policy = policy;
    this.now = now;
  }

  /** Takes one token from the bucket of `who` (a key id, or an address for requests without a valid key). */
  take(who: string): RateDecision {
    const { rate, burst } = this.policy;
    const b = this.refilled(who);
    const allowed = b.tokens >= 1;
    if (allowed) b.tokens -= 1;
    const retryAfterSeconds = allowed ? 0 : this.secondsToToken(b);
    const window = Math.max(1, Math.ceil(burst / rate));
    const resetSeconds = Math.ceil((burst - b.tokens) / rate);
    return {
      allowed,
      retryAfterSeconds,
      headers: {
        'ratelimit-policy': `"default";q=${burst};w=${window}`,
        ratelimit: `"default";r=${Math.floor(b.tokens)};t=${resetSeconds}`,
      },
    };
  }

  /** The seconds until `who` has a token, taking none: 0 when it has one now. For limits that charge only failures. */
  wait(who: string): number {
    const b = this.refilled(who);
    return b.tokens >= 1 ? 0 : this.secondsToToken(b);
  }

  /** The bucket of `who`, topped up for the time since it was last seen (a new one is full). */
  private refilled(who: string): Bucket {
    const { rate, burst } = this.policy;
    const t = this.now();
    let b = this.buckets.get(who);
    if (!b) {
      if (this.buckets.size > 100_000) this.sweep(t);
      b = { tokens: burst, at: t };
      this.buckets.set(who, b);
    }
    b.tokens = Math.min(burst, b.tokens + ((t - b.at) / 1000) * rate);
    b.at = t;
    return b;
  }

  private secondsToToken(b: Bucket): number {
    return Math.max(1, Math.ceil((1 - b.tokens) / this.policy.rate));
  }

  /** Forgets full buckets: they hold nothing a new bucket would not. */
  private sweep(t: number): void {
    for (const [who, b] of this.buckets) {
      if (b.tokens + ((t - b.at) / 1000) * this.policy.rate >= this.policy.burst) this.buckets.delete(who);
    }
  }
}

/** `10/s`, `600/min`, optionally `,burst=50`; or `off`. */
export function parseRateLimit(text: string): RateLimitPolicy | null {
  if (text === 'off') return { rate: Number.MAX_SAFE_INTEGER, burst: Number.MAX_SAFE_INTEGER };
  const m = /^(\d+(?:\.\d+)?)\/(s|sec|second|m|min|minute)(?:,burst=(\d+))?$/.exec(text.trim());
  if (!m) return null;
  const rate = Number(m[1]) / (m[2]!.startsWith('m') ? 60 : 1);
  const burst = m[3] ? Number(m[3]) : Math.max(1, Math.ceil(rate * 5));
  return rate > 0 && burst >= 1 ? { rate, burst } : null;
}
