import type { SlidingLimitRule } from '../../core/limit-rule';
import { toIntegerArray } from '../reply';
import type { CallOutcome, FunctionContract, LimitOutcome } from '../../core/function-contract';

/** Integers per limit in a v2 reply: count, remaining, retry_after_ms, reset_ms. */
const STRIDE = 4;

function windowsAndLimits(rules: readonly SlidingLimitRule[]): number[] {
  const pairs = new Array<number>(rules.length * 2);
  for (let i = 0; i < rules.length; i++) {
    pairs[2 * i] = rules[i].windowMs;
    pairs[2 * i + 1] = rules[i].limit;
  }
  return pairs;
}

/** The outcome of one call whose reply starts at `values[at]` (a batch reply holds several). */
function outcomeAt(values: readonly number[], at: number, rules: readonly SlidingLimitRule[]): CallOutcome {
  const allowed = values[at] === 1;
  const limits = new Array<LimitOutcome>(rules.length);
  for (let i = 0; i < rules.length; i++) {
    const first = at + 1 + STRIDE * i;
    const count = values[first];
    limits[i] = {
      // A limit "allows" when it had room; the call as a whole may still be rejected by another.
      allowed: allowed || count < rules[i].limit,
      count,
      remaining: values[first + 1],
      retryAfterMs: values[first + 2],
      resetMs: values[first + 3],
    };
  }
  return { allowed, limits };
}

function parse(reply: unknown, rules: readonly SlidingLimitRule[], command: string): CallOutcome {
  return outcomeAt(toIntegerArray(reply, 1 + STRIDE * rules.length, command), 0, rules);
}

/**
 * rate_limit_v2: same data layout as v1; several keys decided atomically, exact retry and
 * reset times, the server clock on request (`now_ms` = `*`), a clock-skew guard, a batch of
 * independent decisions in one call and a read-only peek. See the header of `rate_limit_v2.lua` for the full contract.
 */
export const V2_CONTRACT: FunctionContract = {
  version: 'v2',
  libraryName: 'rate_limit_v2',
  sourceFile: 'rate_limit_v2.lua',
  allowFunction: 'sliding_allow_v2',
  peekFunction: 'sliding_peek_v2',
  multiKey: true,
  readsServerClock: true,
  exactRetryAfter: true,

  allowArguments({ rules, nowMs, member, maxClockSkewMs }) {
    if (rules.length === 1) return [nowMs, member, maxClockSkewMs, rules[0].windowMs, rules[0].limit];
    return [nowMs, member, maxClockSkewMs, ...windowsAndLimits(rules)];
  },

  parseAllowReply(reply, rules) {
    return parse(reply, rules, 'FCALL sliding_allow_v2');
  },

  batch: {
    name: 'sliding_allow_many_v2',

    arguments(calls) {
      // The decisions go as one JSON argument (see the Lua header): fewer arguments cost the client
      // and Redis less than the JSON costs to write and decode.
      const decisions: (string | number)[] = [];
      for (const { rules, nowMs, member } of calls) {
        decisions.push(nowMs, member, rules.length);
        for (const rule of rules) decisions.push(rule.windowMs, rule.limit);
      }
      return [calls[0].maxClockSkewMs, JSON.stringify(decisions)];
    },

    parseReply(reply, calls) {
      let length = 0;
      for (const call of calls) length += 1 + STRIDE * call.rules.length;
      const values = toIntegerArray(reply, length, 'FCALL sliding_allow_many_v2');
      const outcomes = new Array<CallOutcome>(calls.length);
      for (let c = 0, at = 0; c < calls.length; at += 1 + STRIDE * calls[c].rules.length, c++)
        outcomes[c] = outcomeAt(values, at, calls[c].rules);
      return outcomes;
    },
  },

  peekArguments(nowMs, rules) {
    return [nowMs, ...windowsAndLimits(rules)];
  },

  parsePeekReply(reply, rules) {
    return parse(reply, rules, 'FCALL_RO sliding_peek_v2');
  },
};
