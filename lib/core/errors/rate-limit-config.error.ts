import { SlidingLimitError } from './sliding-limit.error';

/** The one prefix of every configuration error's message, whatever part of the package finds it. */
const PREFIX = 'nestjs-sliding-limit: invalid configuration';

/**
 * Invalid configuration (options or decorator arguments), thrown at construction or bootstrap, never
 * per request. `problems` lists every problem; the message starts `nestjs-sliding-limit: invalid configuration`.
 */
export class RateLimitConfigError extends SlidingLimitError {
  /**
   * @param problems every problem found, each naming its option
   * @param context what was being configured (`RateLimitModule`, `SlidingWindowLimiter`)
   */
  constructor(
    readonly problems: readonly string[],
    context?: string,
  ) {
    super(`${PREFIX}${context ? ` of ${context}` : ''}:\n  - ${problems.join('\n  - ')}`);
  }
}
