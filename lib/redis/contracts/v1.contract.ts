import { toIntegerArray } from '../reply';
import type { FunctionContract } from '../../core/function-contract';

/**
 * rate_limit_v1, the articles' contract: `FCALL sliding_allow_v1 1 <key> <now_ms> <window_ms> <limit>
 * <member>` → `[allowed, remaining]`. A rejection waits the window's length: no slot frees later.
 */
export const V1_CONTRACT: FunctionContract = {
  version: 'v1',
  libraryName: 'rate_limit_v1',
  sourceFile: 'rate_limit_v1.lua',
  allowFunction: 'sliding_allow_v1',
  full: false,

  allowArguments({ rules, nowMs, member }) {
    return [nowMs, rules[0].windowMs, rules[0].limit, member];
  },

  parseAllowReply(reply, rules) {
    const [allowed, remaining] = toIntegerArray(reply, 2, 'FCALL sliding_allow_v1');
    const { limit, windowMs } = rules[0];
    const outcome =
      allowed === 1
        ? { allowed: true, count: limit - remaining, remaining, retryAfterMs: 0, resetMs: windowMs }
        : { allowed: false, count: limit, remaining: 0, retryAfterMs: windowMs, resetMs: windowMs };
    return { allowed: outcome.allowed, limits: [outcome] };
  },
};
