/** The mark of a refusal, as a registered symbol: two copies of the package agree on it. */
const REFUSAL = Symbol.for('nestjs-sliding-limit.refusal');

/** Marks a refusal a guard throws (GraphQL's), so `TooManyRequestsFilter` answers it instead of Nest logging it. */
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
