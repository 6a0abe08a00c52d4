import type { CallOutcome, LimitOutcome } from '../core/function-contract';
import { isShadow, type SlidingLimitRule } from '../core/limit-rule';

/** The `onRedisError` outcome: fail-open claims the full limit, fail-closed none; shadow limits never refuse. */
export function policyOutcome(
  rules: readonly SlidingLimitRule[],
  policy: 'allow' | 'deny',
  retryAfterMs: number,
): CallOutcome {
  const allowed = policy === 'allow' || rules.every(isShadow);
  return {
    allowed,
    limits: rules.map((rule): LimitOutcome => {
      if (isShadow(rule))
        return {
          allowed: true,
          count: 0,
          remaining: rule.limit,
          retryAfterMs: 0,
          resetMs: 0,
          shadow: true,
          wouldRefuse: false,
        };
      return {
        allowed,
        count: 0,
        remaining: allowed ? rule.limit : 0,
        retryAfterMs: allowed ? 0 : retryAfterMs,
        resetMs: 0,
      };
    }),
  };
}
