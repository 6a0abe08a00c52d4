import type { LimiterErrorKind } from '../core/call-metrics';
import type { RateLimitDecision } from '../core/decisions';

/** How a decision was made, as decision listeners are told beside it. */
export interface Decided {
  allowed: boolean;
  functionName: string;
  degraded?: RateLimitDecision['degraded'];
  /** Why Redis did not decide, when `degraded` is set. */
  degradedCause?: LimiterErrorKind;
  latencyMs?: number;
  blockedLocally?: boolean;
}
