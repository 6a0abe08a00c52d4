import type { ExecutionContext } from '@nestjs/common';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { HandlerPlan } from './limit-plan';
import { retryAfterSeconds } from './rate-limit-headers';
import { refusedNames } from './rate-limit-error-payload';

/** @nestjs/microservices' handler-type metadata and its event mark, not exported (test/microservices pins both). */
const HANDLER_TYPE_METADATA = 'microservices:handler_type';
const EVENT_HANDLER = 2;

/** Whether the call is an `@EventPattern` one, whose sender gets no reply: its refusal drops the event. */
export function isEventCall(context: ExecutionContext): boolean {
  return (
    context.getType() === 'rpc' && Reflect.getMetadata(HANDLER_TYPE_METADATA, context.getHandler()) === EVENT_HANDLER
  );
}

/** The line of one refusal: the handler, its transport, the full limits and when to retry; never the key. */
export function refusalLine(context: ExecutionContext, decision: MultiRateLimitDecision, plan: HandlerPlan): string {
  // A shadow limit (a candidate) that would have refused refused nothing: not named here.
  const full = refusedNames(decision, plan);
  const what = isEventCall(context) ? 'dropped an event' : 'refused a call';
  return (
    `${plan.route} (${context.getType()}) ${what} over its rate limit ${full.join(', ')}; ` +
    `retry after ${retryAfterSeconds(decision.retryAfterMs)} s`
  );
}
