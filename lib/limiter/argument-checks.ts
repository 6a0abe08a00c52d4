import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { describeRuleProblems, isValidRule } from '../core/limit-rule';
import { describeValue } from '../core/value-checks';
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

function isValidOptions(options: DecisionOptions | undefined): boolean {
  const policy = options?.onRedisError;
  return policy === undefined || isRedisErrorPolicy(policy);
}

/** One key and its rule (`consume`, `peek`). */
export function checkDecisionArguments(key: unknown, rule: unknown, options: DecisionOptions | undefined): void {
  if (isValidKey(key) && isValidRule(rule) && isValidOptions(options)) return;
  fail([key], [rule], options);
}

/** Stacked rules, each with its own key (`consumeAll`). */
export function checkStackedArguments(
  rules: readonly KeyedSlidingLimitRule[],
  options: DecisionOptions | undefined,
): void {
  let valid = Array.isArray(rules) && rules.length > 0 && isValidOptions(options);
  for (let i = 0; valid && i < rules.length; i++) {
    const rule = rules[i];
    valid = typeof rule === 'object' && rule !== null && isValidKey(rule.key) && isValidRule(rule);
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
export function checkKey(key: unknown): void {
  if (!isValidKey(key)) fail([key], []);
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
  throw new RateLimitConfigError(problems, 'SlidingWindowLimiter');
}
