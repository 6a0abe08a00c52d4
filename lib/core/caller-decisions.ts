import type { MultiRateLimitDecision, RateLimitDecision } from './decisions';
import type { LimitOutcome } from './function-contract';
import type { SlidingLimitRule } from './limit-rule';

// The decisions a caller of the limiter gets, made here only, so every RateLimitDecision has one V8 shape.

/** One limit's decision as the caller sees it, from the integers a reply gives for it. */
export function limitDecision(
  allowed: boolean,
  limit: number,
  remaining: number,
  retryAfterMs: number,
  resetMs: number,
  functionName: string,
): RateLimitDecision {
  return { allowed, limit, remaining, retryAfterMs, resetMs, functionName };
}

export function toDecision(
  outcome: LimitOutcome,
  rule: SlidingLimitRule,
  functionName: string,
  degraded?: RateLimitDecision['degraded'],
): RateLimitDecision {
  const decision = limitDecision(
    outcome.allowed,
    outcome.effectiveLimit ?? rule.limit,
    outcome.remaining,
    outcome.retryAfterMs,
    outcome.resetMs,
    functionName,
  );
  if (degraded) decision.degraded = degraded;
  if (outcome.override !== undefined) decision.override = outcome.override;
  if (outcome.shadow) {
    decision.shadow = true;
    decision.wouldRefuse = outcome.wouldRefuse === true;
  }
  return decision;
}

/** A request's decision from its limits': `retryAfterMs` is the longest wait among the enforced limits. */
export function requestDecision(
  allowed: boolean,
  limits: RateLimitDecision[],
  functionName: string,
  degraded?: RateLimitDecision['degraded'],
): MultiRateLimitDecision {
  let retryAfterMs = 0;
  for (let i = 0; i < limits.length; i++) {
    const limit = limits[i];
    if (limit.retryAfterMs > retryAfterMs && limit.shadow === undefined) retryAfterMs = limit.retryAfterMs;
  }
  const decision: MultiRateLimitDecision = { allowed, retryAfterMs, functionName, limits };
  if (degraded) decision.degraded = degraded;
  return decision;
}

/** A request's decision from its limits' outcomes (a call that did not go through a reply reader). */
export function decisionFromOutcomes(
  allowed: boolean,
  outcomes: readonly LimitOutcome[],
  rules: readonly SlidingLimitRule[],
  functionName: string,
  degraded?: RateLimitDecision['degraded'],
): MultiRateLimitDecision {
  const limits = new Array<RateLimitDecision>(outcomes.length);
  for (let i = 0; i < outcomes.length; i++) limits[i] = toDecision(outcomes[i], rules[i], functionName, degraded);
  return requestDecision(allowed, limits, functionName, degraded);
}
