import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import type { FunctionContract } from '../core/function-contract';
import { isBucketed, isShadow, type SlidingLimitRule } from '../core/limit-rule';
import type { FunctionNeeds } from './sliding-window-limiter.interfaces';

/** The first shipped version with costs and the bounded-memory window, named in the messages. */
const WEIGHTED_FUNCTION = 'sliding_allow_v3';
/** The first shipped version with shadow limits. */
const SHADOW_FUNCTION = 'sliding_allow_v4';

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
  if (!contract.shadowLimits && rules.some(isShadow)) {
    // Only v4 knows shadow limits: an older version would enforce one, never a quiet change to allow.
    return [
      `mode: 'shadow' needs ${SHADOW_FUNCTION} or later, but this decision runs on ${contract.allowFunction}: ` +
        `set functionName (and any canary) to ${SHADOW_FUNCTION}`,
    ];
  }
  if (problems.length === 0) return problems;
  return [
    `${problems.join(' and ')} needs ${WEIGHTED_FUNCTION} or later, but this decision runs on ` +
      `${contract.allowFunction}: set functionName (and any canary) to ${WEIGHTED_FUNCTION}`,
  ];
}

/** Whether `contract` can decide these rules at this cost; allocates nothing (it runs per request). */
export function isSupported(contract: FunctionContract, rules: readonly SlidingLimitRule[], cost: number): boolean {
  if (cost !== 1 && !contract.weighted) return false;
  if (contract.bucketed && contract.shadowLimits) return true;
  for (let i = 0; i < rules.length; i++) {
    if (!contract.bucketed && rules[i].precisionMs !== undefined) return false;
    if (!contract.shadowLimits && rules[i].mode === 'shadow') return false;
  }
  return true;
}

/** Throws a configuration error when `contract` cannot decide these rules at this cost. */
export function checkSupported(contract: FunctionContract, rules: readonly SlidingLimitRule[], cost: number): void {
  const problems = describeUnsupported(contract, rules, cost);
  if (problems.length > 0) throw new RateLimitConfigError(problems, 'SlidingWindowLimiter');
}

/**
 * What `needs` asks of `contract` that it cannot do, one line per need naming who needs it: the
 * reasons a switch to it is refused. `role` names the option it would become (`functionName`,
 * `canary.functionName`).
 */
export function describeUnmetNeeds(contract: FunctionContract, role: string, needs: FunctionNeeds): string[] {
  const unmet: [readonly string[] | undefined, string][] = [
    [contract.weighted ? undefined : needs.weighted, 'a cost other than 1'],
    [contract.bucketed ? undefined : needs.bucketed, 'precisionMs (the bounded-memory window)'],
  ];
  const problems: string[] = [];
  if (!contract.shadowLimits && needs.shadow && needs.shadow.length > 0) {
    const who = needs.shadow;
    problems.push(
      `${role} ${contract.allowFunction} cannot decide shadow limits, which ${listed(who)} ` +
        `${who.length === 1 ? 'uses: it needs' : 'use: they need'} ${SHADOW_FUNCTION} or later (it would enforce them)`,
    );
  }
  for (const [who, what] of unmet) {
    if (!who || who.length === 0) continue;
    problems.push(
      `${role} ${contract.allowFunction} cannot decide ${what}, which ${listed(who)} ` +
        `${who.length === 1 ? 'uses: it needs' : 'use: they need'} ${WEIGHTED_FUNCTION} or later`,
    );
  }
  return problems;
}

/** `a`, `a and b`, `a, b and c`. */
function listed(names: readonly string[]): string {
  return names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}
