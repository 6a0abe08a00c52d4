import type { SlidingLimitRule } from '../../limiter/sliding-window-limiter.interfaces';
import { toIntegerArray } from '../reply';
import type { CallOutcome, FunctionContract } from './function-contract';

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

function parse(reply: unknown, rules: readonly SlidingLimitRule[], command: string): CallOutcome {
  const values = toIntegerArray(reply, 1 + STRIDE * rules.length, command);
  const allowed = values[0] === 1;
  const limits = rules.map((rule, i) => {
    const at = 1 + STRIDE * i;
    const count = values[at];
    return {
      // A limit "allows" when it had room; the call as a whole may still be rejected by another.
      allowed: allowed || count < rule.limit,
      count,
      remaining: values[at + 1],
      retryAfterMs: values[at + 2],
      resetMs: values[at + 3],
    };
  });
  return { allowed, limits };
}

/**
 * rate_limit_v2: same data layout as v1; several keys decided atomically, exact retry and
 * reset times, the server clock on request (`now_ms` = `*`), a clock-skew guard and a
 * read-only peek. See the header of `rate_limit_v2.lua` for the full contract.
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

  peekArguments(nowMs, rules) {
    return [nowMs, ...windowsAndLimits(rules)];
  },

  parsePeekReply(reply, rules) {
    return parse(reply, rules, 'FCALL_RO sliding_peek_v2');
  },
};
