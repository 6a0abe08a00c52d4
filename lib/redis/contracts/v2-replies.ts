import { limitDecision, requestDecision } from '../../core/caller-decisions';
import type { MultiRateLimitDecision, RateLimitDecision } from '../../core/decisions';
import { UnexpectedReplyError } from '../../core/errors/unexpected-reply.error';
import type { CallOutcome, LimitOutcome } from '../../core/function-contract';
import type { OverrideAction } from '../../core/key-overrides';
import { isShadow, type SlidingLimitRule } from '../../core/limit-rule';
import { replyOfLength, toInteger, toIntegerArray } from '../reply';

/** Integers per limit in a v2 reply: room, count, remaining, retry_after_ms, reset_ms, limit, override. */
const LIMIT_STRIDE = 7;

/** The reply's override codes, by position: 0 none, 1 limit, 2 exempt, 3 block. */
const OVERRIDES: readonly (OverrideAction | undefined)[] = [undefined, 'limit', 'exempt', 'block'];

/** Integers of one decision of `rules`. */
function decisionLength(rules: readonly SlidingLimitRule[]): number {
  return 1 + LIMIT_STRIDE * rules.length;
}

/** The caller's decision whose reply starts at `reply[at]`, read straight from it. @throws UnexpectedReplyError */
function decisionAt(
  reply: readonly unknown[],
  at: number,
  rules: readonly SlidingLimitRule[],
  command: string,
  functionName: string,
): MultiRateLimitDecision {
  const allowedFlag = toInteger(reply[at], command, reply);
  if (allowedFlag !== 0 && allowedFlag !== 1) throw new UnexpectedReplyError(command, reply);
  const allowed = allowedFlag === 1;
  const limits = new Array<RateLimitDecision>(rules.length);
  for (let i = 0; i < rules.length; i++) {
    const first = at + 1 + LIMIT_STRIDE * i;
    const room = toInteger(reply[first], command, reply);
    const overrideCode = toInteger(reply[first + 6], command, reply);
    if ((room !== 0 && room !== 1) || !(overrideCode >= 0 && overrideCode < OVERRIDES.length)) {
      throw new UnexpectedReplyError(command, reply);
    }
    const shadow = isShadow(rules[i]);
    const limit = limitDecision(
      // An enforced limit of an admitted request allowed it (a retry is admitted with a full window).
      room === 1 || (allowed && !shadow),
      toInteger(reply[first + 5], command, reply),
      toInteger(reply[first + 2], command, reply),
      toInteger(reply[first + 3], command, reply),
      toInteger(reply[first + 4], command, reply),
      functionName,
    );
    // The count (reply[first + 1]) is checked too, although a caller's decision does not carry it.
    toInteger(reply[first + 1], command, reply);
    const override = OVERRIDES[overrideCode];
    if (override !== undefined) limit.override = override;
    if (shadow) {
      limit.shadow = true;
      limit.wouldRefuse = allowed && room === 0;
    }
    limits[i] = limit;
  }
  return requestDecision(allowed, limits, functionName);
}

/** A single decision's reply as its caller's decision. */
export function readV2Decision(
  reply: unknown,
  rules: readonly SlidingLimitRule[],
  command: string,
  functionName: string,
): MultiRateLimitDecision {
  return decisionAt(replyOfLength(reply, decisionLength(rules), command), 0, rules, command, functionName);
}

/** A batch reply as each caller's decision, in order. */
export function readV2Decisions(
  reply: unknown,
  calls: readonly { rules: readonly SlidingLimitRule[] }[],
  command: string,
  functionName: string,
): MultiRateLimitDecision[] {
  const values = replyOfLength(reply, batchLength(calls), command);
  return eachCall(calls, (at, rules) => decisionAt(values, at, rules, command, functionName));
}

/** The outcome whose reply starts at `values[at]`: {@link decisionAt}'s, with the counts and effective limits. */
function outcomeAt(
  values: readonly number[],
  at: number,
  rules: readonly SlidingLimitRule[],
  command: string,
): CallOutcome {
  // An outcome names no function.
  const { allowed, limits } = decisionAt(values, at, rules, command, '');
  const outcomes = new Array<LimitOutcome>(limits.length);
  for (let i = 0; i < limits.length; i++) {
    outcomes[i] = limitOutcome(limits[i], values[at + 2 + LIMIT_STRIDE * i], limits[i].limit);
  }
  return { allowed, limits: outcomes };
}

/** The outcome of a single decision's reply. */
export function parseV2Decision(reply: unknown, rules: readonly SlidingLimitRule[], command: string): CallOutcome {
  return outcomeAt(toIntegerArray(reply, decisionLength(rules), command), 0, rules, command);
}

/** The outcomes of a batch reply: the decisions' replies, concatenated. */
export function parseV2Decisions(
  reply: unknown,
  calls: readonly { rules: readonly SlidingLimitRule[] }[],
  command: string,
): CallOutcome[] {
  const values = toIntegerArray(reply, batchLength(calls), command);
  return eachCall(calls, (at, rules) => outcomeAt(values, at, rules, command));
}

/** Integers of a batch reply: the decisions' replies, concatenated. */
function batchLength(calls: readonly { rules: readonly SlidingLimitRule[] }[]): number {
  let length = 0;
  for (const call of calls) length += decisionLength(call.rules);
  return length;
}

/** `read` of each call's decision in a batch reply, given where it starts. */
function eachCall<T>(
  calls: readonly { rules: readonly SlidingLimitRule[] }[],
  read: (at: number, rules: readonly SlidingLimitRule[]) => T,
): T[] {
  const results = new Array<T>(calls.length);
  for (let c = 0, at = 0; c < calls.length; at += decisionLength(calls[c].rules), c++)
    results[c] = read(at, calls[c].rules);
  return results;
}

/** A limit's outcome: its caller's decision with the count and the limit that applied, read from the reply. */
function limitOutcome(decision: RateLimitDecision, count: number, effectiveLimit: number): LimitOutcome {
  const { allowed, remaining, retryAfterMs, resetMs, override, shadow, wouldRefuse } = decision;
  const outcome: LimitOutcome = { allowed, count, remaining, retryAfterMs, resetMs, effectiveLimit };
  if (override !== undefined) outcome.override = override;
  if (shadow) {
    outcome.shadow = true;
    outcome.wouldRefuse = wouldRefuse;
  }
  return outcome;
}
