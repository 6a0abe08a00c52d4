import type { ExecutionContext } from '@nestjs/common';
import type { MultiRateLimitDecision } from '../core/decisions';
import { describeValue } from '../core/value-checks';
import type { HandlerPlan } from './limit-plan';
import { retryAfterSeconds } from './rate-limit-headers';

/**
 * The level at which each refused call (a full limit) is logged: `'off'` (the default) logs none. A
 * refusal is the limiter doing its job, not an error, and under abuse one line per refusal would
 * flood the log: turn it on to watch who is refused, at the level your logger keeps.
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

/**
 * The line of one refusal: the handler, its transport, the full limits and when to retry. Never the
 * key: it holds the client's address or identity.
 */
export function refusalLine(
  context: ExecutionContext,
  decision: MultiRateLimitDecision,
  plan: HandlerPlan,
  what = 'refused a call',
): string {
  const full = plan.limits.filter((_, i) => !decision.limits[i]?.allowed).map((limit) => limit.name);
  return (
    `${plan.route} (${context.getType()}) ${what} over its rate limit ${full.join(', ')}; ` +
    `retry after ${retryAfterSeconds(decision.retryAfterMs)} s`
  );
}
