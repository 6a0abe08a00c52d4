/** The outcome of one limit for one request. */
export interface RateLimitDecision {
  /** Whether this limit had room (for a shadow limit, which never refuses: whether it would have). */
  allowed: boolean;
  /** The limit that applied: the configured one or a per-key override's (0 when blocked). `X-RateLimit-Limit`. */
  limit: number;
  /** Requests the window can still take. */
  remaining: number;
  /** 0 when allowed; otherwise milliseconds until a retry can be admitted (never earlier than a slot frees). */
  retryAfterMs: number;
  /** Milliseconds until the window holds no entry and the full limit is available again. */
  resetMs: number;
  /** The Redis function that decided (for example `sliding_allow_v2`). */
  functionName: string;
  /** Set when Redis did not decide: `allow` / `deny` by `onRedisError`, `insurance` by the in-memory limiter. */
  degraded?: 'allow' | 'deny' | 'insurance';
  /** The per-key override that applied (`sliding_allow_v2`); absent when none did. */
  override?: 'limit' | 'exempt' | 'block';
  /** Set for a shadow limit: it counted the request but refused nothing (its wait is not the request's). */
  shadow?: true;
  /** For a shadow limit: whether it would have refused this request, which the enforced limits admitted. */
  wouldRefuse?: boolean;
}

/** What {@link SlidingWindowLimiter.peek} reports: the state of a key without recording anything. */
export interface RateLimitState extends RateLimitDecision {
  /** Entries currently in the window. `allowed` says whether a `consume` now would be admitted. */
  count: number;
}

/** The outcome of several limits checked together in one atomic decision. */
export interface MultiRateLimitDecision {
  /** True only when every limit had room; then the request is recorded under every key, otherwise under none. */
  allowed: boolean;
  /** 0 when allowed; otherwise the longest wait among the enforced limits that are full. */
  retryAfterMs: number;
  /** The Redis function that decided. */
  functionName: string;
  /**
   * One decision per rule, in the order given. `allowed` is false for the limits that were full
   * (a shadow limit among them refused nothing: see {@link RateLimitDecision.shadow}).
   */
  limits: RateLimitDecision[];
  /** Set when Redis did not decide; see {@link RateLimitDecision.degraded}. */
  degraded?: 'allow' | 'deny' | 'insurance';
}
