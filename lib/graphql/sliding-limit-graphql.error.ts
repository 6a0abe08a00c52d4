import { GraphQLError } from 'graphql';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { HandlerPlan } from '../nest/limit-plan';
import { retryAfterSeconds, type NamedRule } from '../nest/rate-limit-headers';
import { tooManyRequestsPayload } from '../nest/rate-limit-error-payload';
import { markAsRefusal } from '../nest/rate-limit-refusal';

/**
 * `extensions.code` of the errors {@link GqlSlidingLimitGuard} throws:
 * - `TOO_MANY_REQUESTS`: a limit is full; retry after `extensions.retryAfter` seconds.
 * - `RATE_LIMIT_UNAVAILABLE`: Redis could not decide and the limit's policy is `deny`.
 * - `BAD_REQUEST`: the resolver's cost function could not price the call (nothing was counted).
 * - `FORBIDDEN`: the call has no identity to count it by (no key value and no client IP).
 */
export type SlidingLimitGraphQLCode = 'TOO_MANY_REQUESTS' | 'RATE_LIMIT_UNAVAILABLE' | 'BAD_REQUEST' | 'FORBIDDEN';

/** The `extensions` of a {@link SlidingLimitGraphQLError}, as the client receives them. */
export interface SlidingLimitGraphQLExtensions {
  /** Whatever a `formatError` adds. */
  [name: string]: unknown;
  /** What happened: see {@link SlidingLimitGraphQLCode}. */
  code: SlidingLimitGraphQLCode;
  /** Whole seconds after which a retry can be admitted, as in `Retry-After` (rejections and `RATE_LIMIT_UNAVAILABLE`). */
  retryAfter?: number;
  /** Milliseconds after which a retry can be admitted, as the limiter computed it. */
  retryAfterMs?: number;
  /** Names of the limits that were full (`TOO_MANY_REQUESTS` only); shadow limits refuse nothing and are never among them. */
  limits?: string[];
  /**
   * The limits that were full as the caller's own, in `RateLimit-Policy` form (`TOO_MANY_REQUESTS`
   * only): its tier's name when a policy made them, the limit that applied to it and the window in
   * seconds — `"free";q=3;w=60`.
   */
  policy?: string;
}

/** Message of a `RATE_LIMIT_UNAVAILABLE` error. */
export const RATE_LIMIT_UNAVAILABLE_MESSAGE = 'Rate limiting is unavailable; retry shortly';

/**
 * A rate-limit refusal of a GraphQL resolver call. A `GraphQLError` carrying its own
 * `extensions.code`, so Apollo's and Mercurius's error formatting pass it to the client as it is
 * (never as `INTERNAL_SERVER_ERROR`), in the response's `errors` with the field's `path`.
 */
export class SlidingLimitGraphQLError extends GraphQLError {
  /** `code`, and for refusals that can be retried `retryAfter` and `retryAfterMs`. */
  declare readonly extensions: SlidingLimitGraphQLExtensions;

  constructor(message: string, extensions: SlidingLimitGraphQLExtensions) {
    super(message, { extensions });
    this.name = 'SlidingLimitGraphQLError';
    // An answer to the client, not a failure: RateLimitModule's filter keeps Nest from logging it.
    markAsRefusal(this);
  }
}

/** The refusal of a call a full limit rejected; `named` is what the caller's limits are called (its tier). */
export function tooManyRequestsError(
  decision: MultiRateLimitDecision,
  plan: HandlerPlan,
  named?: readonly NamedRule[],
): SlidingLimitGraphQLError {
  // The 429 payload of the other transports without its `status`: GraphQL has no status line to carry.
  const { message, retryAfter, retryAfterMs, limits, policy } = tooManyRequestsPayload(decision, plan, named);
  return new SlidingLimitGraphQLError(message, { code: 'TOO_MANY_REQUESTS', retryAfter, retryAfterMs, limits, policy });
}

/** The refusal of a call Redis could not decide, under the `deny` policy. */
export function unavailableError(decision: MultiRateLimitDecision): SlidingLimitGraphQLError {
  return new SlidingLimitGraphQLError(RATE_LIMIT_UNAVAILABLE_MESSAGE, {
    code: 'RATE_LIMIT_UNAVAILABLE',
    retryAfter: retryAfterSeconds(decision.retryAfterMs),
    retryAfterMs: decision.retryAfterMs,
  });
}

/** The refusal of a call its cost function could not price. */
export function unpriceableError(plan: HandlerPlan): SlidingLimitGraphQLError {
  return new SlidingLimitGraphQLError(`Rate limit of ${plan.route} cannot price this request`, { code: 'BAD_REQUEST' });
}

/** The refusal of a call with no identity to count it by. */
export function unidentifiedError(plan: HandlerPlan): SlidingLimitGraphQLError {
  return new SlidingLimitGraphQLError(`Rate limit of ${plan.route} cannot identify the client`, { code: 'FORBIDDEN' });
}
