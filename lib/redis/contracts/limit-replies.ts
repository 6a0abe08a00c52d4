import { limitDecision, requestDecision } from '../../core/caller-decisions';
import type { MultiRateLimitDecision, RateLimitDecision } from '../../core/decisions';
import type { AllowCall, CallOutcome, LimitOutcome } from '../../core/function-contract';
import type { SlidingLimitRule } from '../../core/limit-rule';
import { replyOfLength, toInteger, toIntegerArray } from '../reply';

/** Integers per limit in a v2 or v3 reply: count, remaining, retry_after_ms, reset_ms. */
export const LIMIT_STRIDE = 4;

/**
 * The caller's decision of the request whose reply starts at `reply[at]` (a batch reply holds
 * several), read straight from the reply (checked by the caller to be long enough), with no outcome
 * in between: `{allowed, count_1, remaining_1, retry_after_ms_1, reset_ms_1, ..}`.
 */
function decisionAt(
  reply: readonly unknown[],
  at: number,
  rules: readonly SlidingLimitRule[],
  cost: number,
  command: string,
  functionName: string,
): MultiRateLimitDecision {
  const allowed = toInteger(reply[at], command, reply) === 1;
  const limits = new Array<RateLimitDecision>(rules.length);
  for (let i = 0; i < rules.length; i++) {
    const first = at + 1 + LIMIT_STRIDE * i;
    const { limit } = rules[i];
    limits[i] = limitDecision(
      // A limit "allows" when it had room for the cost; the call as a whole may still be rejected by another.
      allowed || toInteger(reply[first], command, reply) + cost <= limit,
      limit,
      toInteger(reply[first + 1], command, reply),
      toInteger(reply[first + 2], command, reply),
      toInteger(reply[first + 3], command, reply),
      functionName,
    );
  }
  return requestDecision(allowed, limits, functionName);
}

/** A single decision's reply as its caller's decision. */
export function readDecision(
  reply: unknown,
  rules: readonly SlidingLimitRule[],
  cost: number,
  command: string,
  functionName: string,
): MultiRateLimitDecision {
  return decisionAt(
    replyOfLength(reply, 1 + LIMIT_STRIDE * rules.length, command),
    0,
    rules,
    cost,
    command,
    functionName,
  );
}

/** A batch reply as each caller's decision, in order. */
export function readDecisions(
  reply: unknown,
  calls: readonly AllowCall[],
  command: string,
  functionName: string,
): MultiRateLimitDecision[] {
  let length = 0;
  for (const call of calls) length += 1 + LIMIT_STRIDE * call.rules.length;
  const values = replyOfLength(reply, length, command);
  const decisions = new Array<MultiRateLimitDecision>(calls.length);
  for (let c = 0, at = 0; c < calls.length; at += 1 + LIMIT_STRIDE * calls[c].rules.length, c++)
    decisions[c] = decisionAt(values, at, calls[c].rules, calls[c].cost ?? 1, command, functionName);
  return decisions;
}

/**
 * A limit's outcome: its caller's decision with the count its reply gave (the one integer a decision
 * does not carry), and `effectiveLimit` for the versions whose reply gives the limit that applied.
 */
export function limitOutcome(decision: RateLimitDecision, count: number, effectiveLimit?: number): LimitOutcome {
  const { allowed, remaining, retryAfterMs, resetMs, override, shadow, wouldRefuse } = decision;
  const outcome: LimitOutcome = { allowed, count, remaining, retryAfterMs, resetMs };
  if (effectiveLimit !== undefined) outcome.effectiveLimit = effectiveLimit;
  if (override !== undefined) outcome.override = override;
  if (shadow) {
    outcome.shadow = true;
    outcome.wouldRefuse = wouldRefuse;
  }
  return outcome;
}

/** The outcome of the decision whose reply starts at `values[at]`: {@link decisionAt}'s, with the counts. */
function outcomeAt(
  values: readonly number[],
  at: number,
  rules: readonly SlidingLimitRule[],
  cost: number,
  command: string,
): CallOutcome {
  // An outcome names no function.
  const { allowed, limits } = decisionAt(values, at, rules, cost, command, '');
  const outcomes = new Array<LimitOutcome>(limits.length);
  for (let i = 0; i < limits.length; i++) outcomes[i] = limitOutcome(limits[i], values[at + 1 + LIMIT_STRIDE * i]);
  return { allowed, limits: outcomes };
}

/** The outcome of a single decision's reply. */
export function parseDecision(
  reply: unknown,
  rules: readonly SlidingLimitRule[],
  command: string,
  cost = 1,
): CallOutcome {
  return outcomeAt(toIntegerArray(reply, 1 + LIMIT_STRIDE * rules.length, command), 0, rules, cost, command);
}

/** The outcomes of a batch reply: the decisions' replies, concatenated. */
export function parseDecisions(
  reply: unknown,
  calls: readonly { rules: readonly SlidingLimitRule[]; cost?: number }[],
  command: string,
): CallOutcome[] {
  let length = 0;
  for (const call of calls) length += 1 + LIMIT_STRIDE * call.rules.length;
  const values = toIntegerArray(reply, length, command);
  const outcomes = new Array<CallOutcome>(calls.length);
  for (let c = 0, at = 0; c < calls.length; at += 1 + LIMIT_STRIDE * calls[c].rules.length, c++)
    outcomes[c] = outcomeAt(values, at, calls[c].rules, calls[c].cost ?? 1, command);
  return outcomes;
}
