import { describeValue } from '../core/value-checks';

/**
 * The level at which each refused call (a full limit) is logged: `'off'` (the default) logs none. A
 * refusal is the limiter doing its job, not an error, and under abuse one line per refusal would
 * flood the log: turn it on to watch which handlers refuse and how often, at a level your logger keeps.
 */
export type RateLimitRefusalLogLevel = 'off' | 'error' | 'warn' | 'log' | 'debug' | 'verbose';

/** The levels `refusalLogLevel` accepts. */
export const REFUSAL_LOG_LEVELS: readonly RateLimitRefusalLogLevel[] = [
  'off',
  'error',
  'warn',
  'log',
  'debug',
  'verbose',
];

/** Problems of a `refusalLogLevel` option. */
export function describeRefusalLogLevelProblems(level: unknown): string[] {
  if (REFUSAL_LOG_LEVELS.includes(level as RateLimitRefusalLogLevel)) return [];
  return [`refusalLogLevel must be one of ${REFUSAL_LOG_LEVELS.join(', ')}, got ${describeValue(level)}`];
}
