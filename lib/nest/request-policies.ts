import type { ExecutionContext } from '@nestjs/common';
import { isValidRule, type KeyedSlidingLimitRule } from '../core/limit-rule';
import { describeValue } from '../core/value-checks';
import { messageOf } from '../redis/reply';
import { ruleOf, type CompiledLimit, type HandlerPlan } from './limit-plan';
import { PolicyFailures } from './policy-failures';
import type { NamedRule } from './rate-limit-headers';
import type { RateLimitRequest } from './rate-limit-key';
import { describePolicyResultProblem, policyValuesOf, type RateLimitPolicyResult } from './rate-limit-policy';

/** The limits of one request as a policy made them: keyed rules, their names, the policy's cost. */
export interface RequestLimits {
  readonly rules: KeyedSlidingLimitRule[];
  /** Per rule, its name in the headers, limit and window. */
  readonly named: readonly NamedRule[];
  readonly cost?: number;
}

/** The rules of a request's limits, one per key, with the decorator's values (a policy's come later). */
export function keyedRules(plan: HandlerPlan, keys: readonly string[]): KeyedSlidingLimitRule[] {
  const rules = new Array<KeyedSlidingLimitRule>(keys.length);
  for (let i = 0; i < keys.length; i++) {
    const rule = ruleOf(plan.limits[i]) as KeyedSlidingLimitRule;
    rule.key = keys[i];
    rules[i] = rule;
  }
  return rules;
}

/** Resolves the routes' policies once per request, and says when one fails (once, until it answers again). */
export class RequestPolicies {
  private readonly failures: PolicyFailures;

  constructor(warn: (line: string) => void) {
    this.failures = new PolicyFailures(warn);
  }

  /** A request's limits with its policies' values; undefined when a policy failed for a limit without values. */
  async limitsOf(
    plan: HandlerPlan,
    request: RateLimitRequest,
    context: ExecutionContext,
    keys: readonly string[] | Promise<readonly string[]>,
  ): Promise<RequestLimits | undefined> {
    const answers = plan.policies ? await this.answersOf(plan, request, context) : [];
    const rules = keyedRules(plan, await keys);
    const named = new Array<NamedRule>(rules.length);
    const policies = plan.policies ?? [];
    // A policy whose answer made every limit it gives values to has answered (said when it had failed).
    const usable = answers.map((answer) => answer !== undefined);
    let cost: number | undefined;
    for (let i = 0; i < rules.length; i++) {
      const limit = plan.limits[i];
      let answer = limit.policy === undefined ? undefined : answers[limit.policy];
      if (answer !== undefined) {
        const rule = withPolicyValues(rules[i], limit, answer);
        if (typeof rule === 'string') {
          const { label } = policies[limit.policy as number];
          if (!this.fallBack(plan, label, `its answer for limit "${limit.name}" ${rule}`, limit)) return undefined;
          usable[limit.policy as number] = false;
          answer = undefined;
        } else {
          rules[i] = rule;
          cost ??= answer.cost;
        }
      } else if (limit.limit === undefined || limit.windowMs === undefined) {
        return undefined;
      }
      named[i] = { name: headerName(limit, answer), limit: rules[i].limit, windowMs: rules[i].windowMs };
    }
    for (let p = 0; p < policies.length; p++) if (usable[p]) this.failures.answered(plan.route, policies[p].label);
    return cost === undefined ? { rules, named } : { rules, named, cost };
  }

  /** Each policy of the plan, once; undefined for one that failed (said once, with what happens instead). */
  private answersOf(
    plan: HandlerPlan,
    request: RateLimitRequest,
    context: ExecutionContext,
  ): Promise<(RateLimitPolicyResult | undefined)[]> {
    const policies = plan.policies as NonNullable<HandlerPlan['policies']>;
    return Promise.all(
      policies.map(async (policy, index) => {
        let answer: unknown;
        try {
          answer = await policy.resolve(request, context);
        } catch (error) {
          this.failed(plan, index, `it threw: ${messageOf(error)}`);
          return undefined;
        }
        const problem = describePolicyResultProblem(answer);
        if (problem !== undefined) {
          this.failed(plan, index, problem);
          return undefined;
        }
        return answer as RateLimitPolicyResult;
      }),
    );
  }

  /** Says (once) that policy `index` of `plan` failed, and what its limits do instead. */
  private failed(plan: HandlerPlan, index: number, reason: string): void {
    const using = plan.limits.filter((limit) => limit.policy === index);
    const without = using.filter((limit) => limit.limit === undefined || limit.windowMs === undefined);
    const names = without.map((limit) => `"${limit.name}"`).join(', ');
    const outcome =
      without.length === 0
        ? `its limits apply their own values (${using.map((l) => `"${l.name}" ${l.limit} per ${l.windowMs} ms`).join(', ')})`
        : without.length === 1
          ? `its requests are answered 503, as limit ${names} gives no limit and windowMs of its own to fall back to`
          : `its requests are answered 503, as limits ${names} give no limit and windowMs of their own to fall back to`;
    const { label } = (plan.policies as NonNullable<HandlerPlan['policies']>)[index];
    this.failures.failed(plan.route, label, reason, outcome);
  }

  /** A policy's answer is unusable for `limit`: false when it has no values of its own to fall back to. */
  private fallBack(plan: HandlerPlan, policy: string, reason: string, limit: CompiledLimit): boolean {
    const fallback = limit.limit !== undefined && limit.windowMs !== undefined;
    const outcome = fallback
      ? `limit "${limit.name}" applies its own values (${limit.limit} per ${limit.windowMs} ms)`
      : 'answered 503';
    this.failures.failed(plan.route, policy, reason, outcome);
    return fallback;
  }
}

/**
 * `rule` with the values a policy answered for its limit (the answer's, then its `limits` entry for
 * the limit, then a candidate's own, then the answer's `limits` entry for the candidate), or why they
 * make no valid rule.
 */
function withPolicyValues(
  rule: KeyedSlidingLimitRule,
  limit: CompiledLimit,
  answer: RateLimitPolicyResult,
): KeyedSlidingLimitRule | string {
  const own = answer.limits?.[limit.policyLimitName as string];
  // A candidate may have values per tier too, under its own name: over its decorator's.
  const candidateOwn = limit.fixed === undefined ? undefined : answer.limits?.[limit.name];
  if (!isLimitValues(own) || !isLimitValues(candidateOwn)) return `is not an object of limit values`;
  const merged: KeyedSlidingLimitRule = {
    ...rule,
    ...policyValuesOf(answer),
    ...policyValuesOf(own),
    ...limit.fixed,
    ...policyValuesOf(candidateOwn),
  };
  // A candidate is a shadow limit whatever the policy says.
  if (limit.fixed !== undefined || limit.mode === 'shadow') merged.mode = 'shadow';
  if (merged.mode === 'enforced') delete merged.mode;
  if (merged.precisionMs === undefined) delete merged.precisionMs;
  if (isValidRule(merged)) return merged;
  const { limit: value, windowMs, precisionMs } = merged as Record<string, unknown>;
  return (
    `makes no valid limit (limit ${describeValue(value)}, windowMs ${describeValue(windowMs)}` +
    `${precisionMs === undefined ? '' : `, precisionMs ${describeValue(precisionMs)}`})`
  );
}

/** An entry of a policy answer's `limits` that is absent or an object (what `policyValuesOf` reads). */
function isLimitValues(values: unknown): boolean {
  return values === undefined || (typeof values === 'object' && values !== null);
}

/** What the headers call a limit: its caller's tier when a policy decided it, else its own name. */
function headerName(limit: CompiledLimit, answer: RateLimitPolicyResult | undefined): string {
  if (answer === undefined || limit.tierNamed === undefined) return limit.name;
  return limit.tierNamed === 'alone' ? answer.name : `${answer.name}.${limit.name}`;
}
