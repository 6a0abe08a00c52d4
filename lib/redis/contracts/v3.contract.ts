import type { FunctionContract } from '../../core/function-contract';
import type { SlidingLimitRule } from '../../core/limit-rule';
import { parseDecision, parseDecisions } from './limit-replies';

/** The (window_ms, limit, precision_ms) triples of v3's ARGV; precision 0 selects the log. */
function limitTriples(rules: readonly SlidingLimitRule[]): number[] {
  const triples = new Array<number>(rules.length * 3);
  for (let i = 0; i < rules.length; i++) {
    triples[3 * i] = rules[i].windowMs;
    triples[3 * i + 1] = rules[i].limit;
    triples[3 * i + 2] = rules[i].precisionMs ?? 0;
  }
  return triples;
}

/**
 * rate_limit_v3: v2's contract plus a cost per request and, per limit, the bounded-memory sliding
 * window (`precisionMs`) beside the log. Log keys are v2's (a request of cost c is c entries), so
 * v2 and v3 serve the same keys side by side. See the header of `rate_limit_v3.lua`.
 */
export const V3_CONTRACT: FunctionContract = {
  version: 'v3',
  libraryName: 'rate_limit_v3',
  sourceFile: 'rate_limit_v3.lua',
  allowFunction: 'sliding_allow_v3',
  peekFunction: 'sliding_peek_v3',
  multiKey: true,
  readsServerClock: true,
  exactRetryAfter: true,
  weighted: true,
  bucketed: true,

  allowArguments({ rules, nowMs, member, maxClockSkewMs, cost = 1 }) {
    return [nowMs, member, maxClockSkewMs, cost, ...limitTriples(rules)];
  },

  parseAllowReply(reply, rules, cost) {
    return parseDecision(reply, rules, 'FCALL sliding_allow_v3', cost);
  },

  batch: {
    name: 'sliding_allow_many_v3',

    arguments(calls) {
      const decisions: (string | number)[] = [];
      for (const { rules, nowMs, member, cost = 1 } of calls) {
        decisions.push(nowMs, member, cost, rules.length);
        for (const rule of rules) decisions.push(rule.windowMs, rule.limit, rule.precisionMs ?? 0);
      }
      return [calls[0].maxClockSkewMs, JSON.stringify(decisions)];
    },

    parseReply(reply, calls) {
      return parseDecisions(reply, calls, 'FCALL sliding_allow_many_v3');
    },
  },

  peekArguments(nowMs, rules, cost = 1) {
    return [nowMs, cost, ...limitTriples(rules)];
  },

  parsePeekReply(reply, rules, cost) {
    return parseDecision(reply, rules, 'FCALL_RO sliding_peek_v3', cost);
  },
};
