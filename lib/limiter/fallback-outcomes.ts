import type { CallOutcome, LimitOutcome } from '../core/function-contract';
import { toInteger } from '../redis/reply';
import type { KeyCommands } from '../core/limiter-backend';
import { isShadow, type SlidingLimitRule } from '../core/limit-rule';

/**
 * The outcome the `onRedisError` policy gives when Redis cannot decide. The counts are unknown: a
 * fail-open outcome claims the full limit, a fail-closed one none and a short wait. A shadow limit
 * refuses nothing either way (a request with shadow limits only is admitted), and would have
 * refused nothing that anyone can tell.
 */
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

/**
 * Peek for versions without a read-only function (v1): a plain ZCOUNT of the window. Its retry and
 * reset times are the window length: entries are at most one window old, so that is never too early.
 */
export async function peekByCounting(
  commands: KeyCommands,
  nowMs: number,
  key: string,
  rule: SlidingLimitRule,
): Promise<LimitOutcome> {
  const reply = await commands.zcount(key, `(${nowMs - rule.windowMs}`, '+inf');
  const count = toInteger(reply, 'ZCOUNT', reply);
  const allowed = count < rule.limit;
  return {
    allowed,
    count,
    remaining: Math.max(rule.limit - count, 0),
    retryAfterMs: allowed ? 0 : rule.windowMs,
    resetMs: count > 0 ? rule.windowMs : 0,
  };
}
