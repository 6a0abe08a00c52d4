/** The mark of a refusal, as a registered symbol: two copies of the package agree on it. */
const REFUSAL = Symbol.for('nestjs-sliding-limit.refusal');

/**
 * Marks an error a guard of the package throws to refuse a call. A refusal is an answer, not a
 * failure: `TooManyRequestsFilter` (registered by `RateLimitModule`) catches what carries the mark
 * and hands it back to its transport, before Nest's fallback handler would log it as an error with
 * its stack. Used for GraphQL, whose errors cannot be Nest's own exceptions (those Nest never logs).
 */
export function markAsRefusal<E extends object>(error: E): E {
  Object.defineProperty(error, REFUSAL, { value: true });
  return error;
}

/**
 * What `@Catch` takes to catch marked refusals: `error instanceof RateLimitRefusal` holds for an
 * error {@link markAsRefusal} marked, whatever its class.
 */
export class RateLimitRefusal {
  static [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[REFUSAL] === true;
  }
}
