// OpenTelemetry names under `rate_limit.` (its naming rules), and `error.type`. None carries a key (an identity).

/** Name of the meter the instruments are created on (the instrumentation scope). */
export const OTEL_METER_NAME = 'nestjs-sliding-limit';

/** Names of the instruments {@link instrumentLimiter} creates. */
export const OTEL_METRIC_NAMES = {
  /** Counter: decisions asked of Redis, failed calls included. */
  calls: 'rate_limit.calls',
  /** Counter: decisions by `rate_limit.outcome` (`allowed` / `rejected`). */
  decisions: 'rate_limit.decisions',
  /** Counter: failed calls by `error.type` (`timeout`, `connection`, …). */
  errors: 'rate_limit.errors',
  /** Counter: rejections answered by the local block cache (also counted as rejected decisions). */
  blockedLocally: 'rate_limit.blocked_locally',
  /** Counter: decisions made without Redis by `rate_limit.degraded` (`allow`, `deny`, `insurance`). */
  degradedDecisions: 'rate_limit.degraded_decisions',
  /** Histogram, seconds: latency of the calls to Redis that decided (degraded ones: the failed call). */
  callDuration: 'rate_limit.call.duration',
  /** Counter: Redis decisions per limit name and mode by what it said (`allowed`, `rejected`, `would_reject`). */
  limitDecisions: 'rate_limit.limit.decisions',
  /** Counter: decisions made without Redis per limit, by `rate_limit.degraded`. */
  limitDegradedDecisions: 'rate_limit.limit.degraded_decisions',
  /** Counter: Redis decisions per limit in which a per-key override applied, by `rate_limit.override`. */
  limitOverrides: 'rate_limit.limit.overrides',
} as const;

/** Names of the attributes on the instruments and on spans. */
export const OTEL_ATTRIBUTES = {
  /** The Redis function, e.g. `sliding_allow_v2`. */
  functionName: 'rate_limit.function.name',
  /** Its library version, e.g. `v2`. */
  functionVersion: 'rate_limit.function.version',
  /** `allowed` or `rejected` (the decisions counter); per limit also `would_reject` (a shadow limit). */
  outcome: 'rate_limit.outcome',
  /** The limit's name (the `@SlidingLimit` name; `_unnamed` without names, `_other` past 1000 names). */
  limitName: 'rate_limit.limit.name',
  /** The limit's mode: `enforced` or `shadow`. */
  limitMode: 'rate_limit.limit.mode',
  /** The per-key override that applied: `limit`, `exempt` or `block`. */
  override: 'rate_limit.override',
  /** The kind of a failed call (the errors counter; on a span, why a degraded decision was not Redis'). */
  errorType: 'error.type',
  /** How a decision was made without Redis: `allow`, `deny` (the failure policy) or `insurance`. */
  degraded: 'rate_limit.degraded',
  /** Span: whether the request was admitted. */
  allowed: 'rate_limit.allowed',
  /** Span: the names of the limits checked (the `@SlidingLimit` names), when the caller gave them. */
  limitNames: 'rate_limit.limit_names',
  /** Span, rejection event: the names of the limits that were full. */
  rejectedLimitNames: 'rate_limit.rejected_limit_names',
  /** Span: what the request weighed. */
  cost: 'rate_limit.cost',
  /** Span: the least room left among the limits, in cost units. */
  remaining: 'rate_limit.remaining',
  /** Span: 0 when allowed; otherwise ms until a retry can be admitted. */
  retryAfterMs: 'rate_limit.retry_after_ms',
  /** Span: set (true) when the local block cache rejected the request without a Redis call. */
  blockedLocally: 'rate_limit.blocked_locally',
} as const;

/** Name of the span event added on a rejection. */
export const OTEL_REJECTION_EVENT = 'rate_limit.rejected';

/** `v2` for `sliding_allow_v2`; the name itself for a name that does not end in a version. */
export function versionOf(functionName: string): string {
  const match = /_(v\d+)$/.exec(functionName);
  return match ? match[1] : functionName;
}
