import type { SlidingLimitRule } from '../../core/limit-rule';
import { parseDecision, parseDecisions } from './limit-replies';
import type { FunctionContract } from '../../core/function-contract';

function windowsAndLimits(rules: readonly SlidingLimitRule[]): number[] {
  const pairs = new Array<number>(rules.length * 2);
  for (let i = 0; i < rules.length; i++) {
    pairs[2 * i] = rules[i].windowMs;
    pairs[2 * i + 1] = rules[i].limit;
  }
  return pairs;
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
  weighted: false,
  bucketed: false,

  allowArguments({ rules, nowMs, member, maxClockSkewMs }) {
    if (rules.length === 1) return [nowMs, member, maxClockSkewMs, rules[0].windowMs, rules[0].limit];
    return [nowMs, member, maxClockSkewMs, ...windowsAndLimits(rules)];
  },

  parseAllowReply(reply, rules) {
    return parseDecision(reply, rules, 'FCALL sliding_allow_v2');
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
      return parseDecisions(reply, calls, 'FCALL sliding_allow_many_v2');
    },
  },

  peekArguments(nowMs, rules) {
    return [nowMs, ...windowsAndLimits(rules)];
  },

  parsePeekReply(reply, rules) {
    return parseDecision(reply, rules, 'FCALL_RO sliding_peek_v2');
  },
};
