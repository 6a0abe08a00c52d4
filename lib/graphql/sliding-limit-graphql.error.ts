import { GraphQLError } from 'graphql';
import { markAsRefusal } from '../nest/rate-limit-refusal';
import type { RateLimitErrorPayload } from 'nestjs-sliding-limit';

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
  /** Whole seconds after which a retry can be admitted, as in `Retry-After`. */
  retryAfter?: number;
  /** Milliseconds after which a retry can be admitted, as the limiter computed it. */
  retryAfterMs?: number;
  /** Names of the limits that were full (`TOO_MANY_REQUESTS` only). */
  limits?: string[];
  /** The full limits as the caller's own, in `RateLimit-Policy` form (`"free";q=3;w=60`). */
  policy?: string;
}

/** A rate-limit refusal of a GraphQL resolver call: a `GraphQLError` with its own `extensions.code`. */
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

/** The `extensions.code` of each refusal: GraphQL's codes where a client knows them. */
const CODES: Readonly<Record<RateLimitErrorPayload['code'], SlidingLimitGraphQLCode>> = {
  TOO_MANY_REQUESTS: 'TOO_MANY_REQUESTS',
  RATE_LIMIT_UNAVAILABLE: 'RATE_LIMIT_UNAVAILABLE',
  RATE_LIMIT_UNPRICEABLE: 'BAD_REQUEST',
  RATE_LIMIT_UNIDENTIFIED: 'FORBIDDEN',
};

/** A refusal as the resolver call's GraphQL error: the other transports' payload, without `status`. */
export function graphQLRefusal(refusal: RateLimitErrorPayload): SlidingLimitGraphQLError {
  const { status: _status, code, message, event: _event, ...rest } = refusal;
  return new SlidingLimitGraphQLError(message, { code: CODES[code], ...rest });
}
