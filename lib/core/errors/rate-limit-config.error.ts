import { SlidingLimitError } from './sliding-limit.error';

/**
 * Invalid configuration: module options, limiter options or decorator arguments.
 * Thrown at construction or bootstrap, never per request. `problems` lists every problem found.
 */
export class RateLimitConfigError extends SlidingLimitError {
  constructor(
    readonly problems: readonly string[],
    context = 'nestjs-sliding-limit',
  ) {
    super(`${context}: invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}
