import type { CallOutcome, LimitOutcome } from '../../core/function-contract';
import type { SlidingLimitRule } from '../../core/limit-rule';
import { toIntegerArray } from '../reply';

/** Integers per limit in a v2 or v3 reply: count, remaining, retry_after_ms, reset_ms. */
export const LIMIT_STRIDE = 4;

/**
 * The outcome of one decision whose reply starts at `values[at]` (a batch reply holds several):
 * `{allowed, count_1, remaining_1, retry_after_ms_1, reset_ms_1, ..}`.
 */
export function outcomeAt(
  values: readonly number[],
  at: number,
  rules: readonly SlidingLimitRule[],
  cost = 1,
): CallOutcome {
  const allowed = values[at] === 1;
  const limits = new Array<LimitOutcome>(rules.length);
  for (let i = 0; i < rules.length; i++) {
    const first = at + 1 + LIMIT_STRIDE * i;
    const count = values[first];
    limits[i] = {
      // A limit "allows" when it had room for the cost; the call as a whole may still be rejected by another.
      allowed: allowed || count + cost <= rules[i].limit,
      count,
      remaining: values[first + 1],
      retryAfterMs: values[first + 2],
      resetMs: values[first + 3],
    };
  }
  return { allowed, limits };
}

/** The outcome of a single decision's reply. */
export function parseDecision(
  reply: unknown,
  rules: readonly SlidingLimitRule[],
  command: string,
  cost = 1,
): CallOutcome {
  return outcomeAt(toIntegerArray(reply, 1 + LIMIT_STRIDE * rules.length, command), 0, rules, cost);
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
    outcomes[c] = outcomeAt(values, at, calls[c].rules, calls[c].cost);
  return outcomes;
}
