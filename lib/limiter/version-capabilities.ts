import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import type { FunctionContract } from '../core/function-contract';
import { isBucketed, type SlidingLimitRule } from '../core/limit-rule';

/** The first shipped version with costs and the bounded-memory window, named in the messages. */
const WEIGHTED_FUNCTION = 'sliding_allow_v3';

/**
 * What a request asks of its function version that the version cannot do (a cost other than 1, a
 * rule with `precisionMs`), or an empty list. Checked per request, so cheap in the common case.
 */
export function describeUnsupported(
  contract: FunctionContract,
  rules: readonly SlidingLimitRule[],
  cost: number,
): string[] {
  const problems: string[] = [];
  if (cost !== 1 && !contract.weighted) problems.push(`a cost (${cost})`);
  if (!contract.bucketed && rules.some(isBucketed)) problems.push('precisionMs (the bounded-memory window)');
  if (problems.length === 0) return problems;
  return [
    `${problems.join(' and ')} needs ${WEIGHTED_FUNCTION} or later, but this decision runs on ` +
      `${contract.allowFunction}: set functionName (and any canary) to ${WEIGHTED_FUNCTION}`,
  ];
}

/** Whether `contract` can decide these rules at this cost; allocates nothing (it runs per request). */
export function isSupported(contract: FunctionContract, rules: readonly SlidingLimitRule[], cost: number): boolean {
  if (cost !== 1 && !contract.weighted) return false;
  if (contract.bucketed) return true;
  for (let i = 0; i < rules.length; i++) if (rules[i].precisionMs !== undefined) return false;
  return true;
}

/** Throws a configuration error when `contract` cannot decide these rules at this cost. */
export function checkSupported(contract: FunctionContract, rules: readonly SlidingLimitRule[], cost: number): void {
  const problems = describeUnsupported(contract, rules, cost);
  if (problems.length > 0) throw new RateLimitConfigError(problems, 'SlidingWindowLimiter');
}
