import { Logger } from '@nestjs/common';
import type { LimiterLogger } from './degraded-mode-log';

/**
 * The logger a limiter reports degraded mode to when its options name none: Nest's `Logger`, so that a
 * Nest application's log format, levels and buffering apply to it as to its own logs. The limiter's
 * only tie to Nest (`@nestjs/common` is a peer dependency), kept in this one file on purpose.
 */
export function defaultLimiterLogger(): LimiterLogger {
  return new Logger('SlidingWindowLimiter');
}
