import { describeOneOf } from '../core/value-checks';

/** The level at which each refused call is logged: `'off'` (the default; a refusal is not an error) logs none. */
export type RateLimitRefusalLogLevel = 'off' | 'error' | 'warn' | 'log' | 'debug' | 'verbose';

const REFUSAL_LOG_LEVELS: readonly RateLimitRefusalLogLevel[] = ['off', 'error', 'warn', 'log', 'debug', 'verbose'];

/** Problems of a `refusals.logLevel` option. */
export function describeRefusalLogLevelProblems(level: unknown): string[] {
  return describeOneOf(level, REFUSAL_LOG_LEVELS, 'refusals.logLevel');
}
