/**
 * The key of the limiter's entry for the package's own guards (`SlidingWindowLimiter[DECIDE_PLANNED]`):
 * a symbol no application imports, on a member left out of the published types.
 */
export const DECIDE_PLANNED: unique symbol = Symbol('SlidingWindowLimiter.decidePlanned');
