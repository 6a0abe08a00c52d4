/** The key of the limiter's entry for the package's own guards: a symbol left out of the published types. */
export const DECIDE_PLANNED: unique symbol = Symbol('SlidingWindowLimiter.decidePlanned');
