import type { ExecutionContext } from '@nestjs/common';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { HandlerPlan } from './limit-plan';
import { retryAfterSeconds } from './rate-limit-headers';
import { refusedNames } from './rate-limit-error-payload';

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
  // A shadow limit (a candidate) that would have refused refused nothing: not named here.
  const full = refusedNames(decision, plan);
  return (
    `${plan.route} (${context.getType()}) ${what} over its rate limit ${full.join(', ')}; ` +
    `retry after ${retryAfterSeconds(decision.retryAfterMs)} s`
  );
}
