import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import {
  describeCostCeiling,
  describeRuleProblems,
  isValidRule,
  MAX_BUCKETED_LIMIT,
  maxCostOf,
  type SlidingLimitRule,
} from '../core/limit-rule';
import { describeValue, isWholeNumberIn } from '../core/value-checks';
import { describeRedisErrorPolicyProblems, isRedisErrorPolicy } from './limiter-options';
import type { DecisionOptions } from './sliding-window-limiter.interfaces';
import type { KeyedSlidingLimitRule } from '../core/limit-rule';

/*
 * Checks of the limiter's method arguments. They run on every call, so the valid case allocates
 * nothing; the messages (every problem, named) are built only when something is wrong.
 */

function isValidKey(key: unknown): key is string {
  return typeof key === 'string' && key.length > 0;
}

/** Keys `consumeAll` would take: each a non-empty string, no two alike. */
export function hasUsableKeys(keys: readonly unknown[]): boolean {
  for (let i = 0; i < keys.length; i++) {
    if (!isValidKey(keys[i])) return false;
    for (let j = 0; j < i; j++) if (keys[j] === keys[i]) return false;
  }
  return keys.length > 0;
}

/** `ruleCount` undefined: a call without rules (`reset`), whose limit names are not used. */
function isValidOptions(options: DecisionOptions | undefined, ruleCount: number | undefined): boolean {
  const policy = options?.onRedisError;
  return (
    (policy === undefined || isRedisErrorPolicy(policy)) &&
    isValidCost(options?.cost) &&
    isValidLimitNames(options?.limitNames, ruleCount)
  );
}

/** No names, or one string per rule. */
function isValidLimitNames(names: unknown, ruleCount: number | undefined): boolean {
  if (names === undefined) return true;
  if (!Array.isArray(names) || (ruleCount !== undefined && names.length !== ruleCount)) return false;
  for (let i = 0; i < names.length; i++) if (typeof names[i] !== 'string') return false;
  return true;
}

function isValidCost(cost: unknown): boolean {
  return cost === undefined || isWholeNumberIn(cost, 1, MAX_BUCKETED_LIMIT);
}

/** Whether the request's cost fits in the rule's limit at all (an empty window). */
function fitsCost(rule: SlidingLimitRule, options: DecisionOptions | undefined): boolean {
  return options?.cost === undefined || options.cost <= maxCostOf(rule);
}

/** One key and its rule (`consume`, `peek`). */
export function checkDecisionArguments(key: unknown, rule: unknown, options: DecisionOptions | undefined): void {
  if (isValidKey(key) && isValidRule(rule) && isValidOptions(options, 1) && fitsCost(rule, options)) return;
  fail([key], [rule], options);
}

/** Stacked rules, each with its own key (`consumeAll`). */
export function checkStackedArguments(
  rules: readonly KeyedSlidingLimitRule[],
  options: DecisionOptions | undefined,
): void {
  let valid = Array.isArray(rules) && rules.length > 0 && isValidOptions(options, rules.length);
  for (let i = 0; valid && i < rules.length; i++) {
    const rule = rules[i];
    valid =
      typeof rule === 'object' && rule !== null && isValidKey(rule.key) && isValidRule(rule) && fitsCost(rule, options);
    // A handful of stacked limits: comparing with the earlier ones beats building a Set.
    for (let j = 0; valid && j < i; j++) valid = rules[j].key !== rule.key;
  }
  if (valid) return;
  // `rules` is typed, but a JavaScript caller may pass anything: describe what was passed.
  const given: readonly unknown[] = Array.isArray(rules) ? rules : [];
  fail(
    given.map((rule) => (rule as Partial<KeyedSlidingLimitRule> | null | undefined)?.key),
    given,
    options,
  );
}

/** A key alone (`reset`). */
export function checkKey(key: unknown, options?: DecisionOptions): void {
  if (!isValidKey(key) || !isValidOptions(options, undefined)) fail([key], [], options);
}

function fail(keys: readonly unknown[], rules: readonly unknown[], options?: DecisionOptions): never {
  const problems: string[] = [];
  if (keys.length === 0) problems.push('at least one limit is required');
  keys.forEach((key, i) => {
    if (!isValidKey(key)) problems.push(`key ${i} must be a non-empty string, got ${describeValue(key)}`);
  });
  rules.forEach((rule, i) => problems.push(...describeRuleProblems(rule, rules.length > 1 ? `limits[${i}]` : 'rule')));
  if (new Set(keys).size !== keys.length) problems.push('each stacked limit needs its own key');
  if (options?.onRedisError !== undefined)
    problems.push(...describeRedisErrorPolicyProblems(options.onRedisError, 'onRedisError'));
  problems.push(...describeCostProblems(options?.cost, rules));
  const ruleCount = rules.length > 0 ? rules.length : undefined;
  if (!isValidLimitNames(options?.limitNames, ruleCount)) {
    const count = ruleCount === undefined ? 'strings' : `${ruleCount} string${ruleCount > 1 ? 's' : ''}, one per limit`;
    problems.push(`limitNames must be an array of ${count}, got ${describeValue(options?.limitNames)}`);
  }
  throw new RateLimitConfigError(problems, 'SlidingWindowLimiter');
}

/** Problems of a request's cost: a whole number from 1 to the smallest of `rules`' limits. */
export function describeCostProblems(cost: unknown, rules: readonly unknown[], label = 'cost'): string[] {
  if (cost === undefined) return [];
  if (!isValidCost(cost))
    return [`${label} must be a whole number from 1 to ${MAX_BUCKETED_LIMIT}, got ${describeValue(cost)}`];
  const ceiling = describeCostCeiling(cost as number, rules.filter(isValidRule));
  return ceiling === undefined ? [] : [`${label} ${ceiling}`];
}
