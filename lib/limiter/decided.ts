import type { CallOutcome } from '../core/function-contract';
import type { LimiterErrorKind } from '../core/call-metrics';
import type { RateLimitDecision } from '../core/decisions';

/**
 * A decision's outcome as the limiter's parts hand it on: the function that made it (or would have),
 * how it was made when Redis did not, and what decision listeners are told beside it (the call's
 * latency, a rejection by the block cache).
 */
export type Decided = CallOutcome & {
  functionName: string;
  degraded?: RateLimitDecision['degraded'];
  /** Why Redis did not decide, when `degraded` is set. */
  degradedCause?: LimiterErrorKind;
  latencyMs?: number;
  blockedLocally?: boolean;
};
