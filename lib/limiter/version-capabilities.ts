import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import type { FunctionContract } from '../core/function-contract';
import type { SlidingLimitRule } from '../core/limit-rule';
import { DEFAULT_FUNCTION_NAME } from '../redis/function-versions';
import type { FunctionNeeds } from './sliding-window-limiter.interfaces';

/** What a request asks that only a full version (v2) does: a cost, `precisionMs`, a shadow limit. */
function describeAsked(rules: readonly SlidingLimitRule[], cost: number): string[] {
  const asked: string[] = [];
  if (cost !== 1) asked.push(`a cost (${cost})`);
  if (rules.some((rule) => rule.precisionMs !== undefined)) asked.push('precisionMs (the bounded-memory window)');
  if (rules.some((rule) => rule.mode === 'shadow')) asked.push("mode: 'shadow'");
  return asked;
}

/** Whether `contract` can decide these rules at this cost; allocates nothing (it runs per request). */
export function isSupported(contract: FunctionContract, rules: readonly SlidingLimitRule[], cost: number): boolean {
  if (contract.full) return true;
  if (cost !== 1) return false;
  for (let i = 0; i < rules.length; i++) {
    if (rules[i].precisionMs !== undefined || rules[i].mode === 'shadow') return false;
  }
  return true;
}

/** The configuration error of a request that `contract` cannot decide (see {@link isSupported}). */
export function unsupported(
  contract: FunctionContract,
  rules: readonly SlidingLimitRule[],
  cost: number,
): RateLimitConfigError {
  return new RateLimitConfigError(
    [
      `${describeAsked(rules, cost).join(' and ')} needs ${DEFAULT_FUNCTION_NAME}, but this decision runs on ` +
        `${contract.allowFunction}: set functionName (and any canary) to ${DEFAULT_FUNCTION_NAME}`,
    ],
    'SlidingWindowLimiter',
  );
}

/** Why a switch to `contract` (as `role`) is refused: what `needs` asks that it cannot do, naming who needs it. */
export function describeUnmetNeeds(contract: FunctionContract, role: string, needs: FunctionNeeds): string[] {
  if (contract.full) return [];
  const unmet: [readonly string[] | undefined, string][] = [
    [needs.weighted, 'a cost other than 1'],
    [needs.bucketed, 'precisionMs (the bounded-memory window)'],
    [needs.shadow, 'shadow limits (it would enforce them)'],
  ];
  const problems: string[] = [];
  for (const [who, what] of unmet) {
    if (!who || who.length === 0) continue;
    problems.push(
      `${role} ${contract.allowFunction} cannot decide ${what}, which ${listed(who)} ` +
        `${who.length === 1 ? 'uses: it needs' : 'use: they need'} ${DEFAULT_FUNCTION_NAME}`,
    );
  }
  return problems;
}

/** `a`, `a and b`, `a, b and c`. */
function listed(names: readonly string[]): string {
  return names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}
