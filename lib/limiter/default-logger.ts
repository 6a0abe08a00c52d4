import { Logger } from '@nestjs/common';
import type { LimiterLogger } from './degraded-mode-log';

/** The limiter's logger when its options name none: Nest's `Logger`. Its only tie to Nest, kept in this file. */
export function defaultLimiterLogger(): LimiterLogger {
  return new Logger('SlidingWindowLimiter');
}
