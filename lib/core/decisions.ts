/** The outcome of one limit for one request. */
export interface RateLimitDecision {
  /**
   * Whether this limit had room for the request. For an enforced limit, whether it admitted it; for
   * a shadow limit (which never refuses), whether it would have.
   */
  allowed: boolean;
  /**
   * The limit that applied to this key: the configured one, or a per-key override's (0 when the key
   * is blocked). What `X-RateLimit-Limit` says.
   */
  limit: number;
  /** Requests the window can still take. */
  remaining: number;
  /** 0 when allowed; otherwise milliseconds until a retry can be admitted (never earlier than a slot frees). */
  retryAfterMs: number;
  /** Milliseconds until the window holds no entry and the full limit is available again. */
  resetMs: number;
  /** The Redis function that decided (for example `sliding_allow_v2`). */
  functionName: string;
  /**
   * Set when Redis did not decide: `allow` / `deny` by the `onRedisError` policy, `insurance` by the
   * per-process in-memory limiter. Absent on a normal decision.
   */
  degraded?: 'allow' | 'deny' | 'insurance';
  /** The per-key override that applied (`sliding_allow_v2`); absent when none did. */
  override?: 'limit' | 'exempt' | 'block';
  /**
   * Set for a shadow limit (`mode: 'shadow'`): it counted the request but refused nothing. Its
   * `retryAfterMs` is not part of the request's.
   */
  shadow?: true;
  /**
   * For a shadow limit: whether it would have refused this request, which the enforced limits
   * admitted (the count a shadow limit's trial is judged by).
   */
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
