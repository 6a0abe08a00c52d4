import type { ExecutionContext, Type } from '@nestjs/common';
import { describeValue, isWholeNumberIn } from '../core/value-checks';
import { MAX_BUCKETED_LIMIT } from '../core/limit-rule';
import type { RateLimitRequest } from './rate-limit-key';
import { describeNameProblems } from './limit-name';

/** The values of one limit a policy may set; each one it leaves out is the `@SlidingLimit`'s. */
export interface PolicyLimitValues {
  /** Requests (units of cost) per window. */
  limit?: number;
  /** Window length, ms. */
  windowMs?: number;
  /** The bounded-memory window's sub-window, ms (see `@SlidingLimit`'s `precisionMs`). */
  precisionMs?: number;
  /** `shadow`: count and report, never refuse. */
  mode?: 'enforced' | 'shadow';
}

/**
 * What a {@link RateLimitPolicy} says about one caller: the name of its tier and the values of the
 * limits that use the policy.
 *
 * ```ts
 * { name: 'free', limit: 1_000, windowMs: 3_600_000 }
 * { name: 'pro', limits: { 'api-hour': { limit: 100_000 }, 'api-day': { limit: 1_000_000 } } }
 * ```
 */
export interface RateLimitPolicyResult extends PolicyLimitValues {
  /**
   * The tier, e.g. `free`: what `RateLimit-Policy` calls the caller's limit. 1 to 64 letters, digits,
   * `_`, `-` or `.`; not part of the Redis key, so a caller moved to another tier keeps its history.
   */
  name: string;
  /** Values of single limits by their `@SlidingLimit` name (a candidate's: `'<name>.candidate'`), over those above. */
  limits?: Readonly<Record<string, PolicyLimitValues>>;
  /** What the request weighs, when the policy says (over the route's `cost`). */
  cost?: number;
}

/**
 * Decides the limits of a request from the caller (its plan, its tenant), once per request. Make it an
 * injectable provider and name its class in `@SlidingLimit({ policy })`:
 *
 * ```ts
 * @Injectable()
 * export class PlanPolicy implements RateLimitPolicy {
 *   constructor(private readonly plans: PlanService) {}
 *   async resolve(request: Request): Promise<RateLimitPolicyResult> {
 *     const plan = await this.plans.ofApiKey(request.headers['x-api-key']);
 *     return plan === 'pro' ? { name: 'pro', limit: 100_000 } : { name: 'free', limit: 1_000 };
 *   }
 * }
 * ```
 *
 * A policy that throws or answers no valid limit falls back to the `@SlidingLimit`'s own values, or
 * answers 503 without them; logged once per route until it answers again.
 */
export interface RateLimitPolicy {
  resolve(request: RateLimitRequest, context: ExecutionContext): RateLimitPolicyResult | Promise<RateLimitPolicyResult>;
}

/** A policy as a plain function of the request; a method, so your own request type fits. */
export type RateLimitPolicyFunction = {
  bivarianceHack(
    request: RateLimitRequest,
    context: ExecutionContext,
  ): RateLimitPolicyResult | Promise<RateLimitPolicyResult>;
}['bivarianceHack'];

/** Where a limit's policy comes from: an injectable class (resolved from Nest's container) or a function. */
export type RateLimitPolicyRef = Type<RateLimitPolicy> | RateLimitPolicyFunction;

/** Whether `ref` is a class implementing {@link RateLimitPolicy} (to be taken from DI), not a plain function. */
export function isPolicyClass(ref: unknown): ref is Type<RateLimitPolicy> {
  return (
    typeof ref === 'function' && typeof (ref as { prototype?: { resolve?: unknown } }).prototype?.resolve === 'function'
  );
}

/** Problems of a `policy` option, naming it as `label`. */
export function describePolicyRefProblems(ref: unknown, label: string): string[] {
  if (typeof ref === 'function') return [];
  return [
    `${label} must be an injectable class with a resolve(request, context) method, or a function ` +
      `(request, context) => ({ name, limit, windowMs, … }), got ${describeValue(ref)}`,
  ];
}

const VALUE_NAMES = ['limit', 'windowMs', 'precisionMs', 'mode'];

/** Why a policy's answer cannot be used (its shape only), or undefined when it can. */
export function describePolicyResultProblem(result: unknown): string | undefined {
  if (typeof result !== 'object' || result === null) return `it answered ${describeValue(result)}, not an object`;
  const { name, limits, cost } = result as RateLimitPolicyResult;
  const nameProblem = describeNameProblems(name, 'its name');
  if (nameProblem.length > 0) return nameProblem[0];
  if (cost !== undefined && !isWholeNumberIn(cost, 1, MAX_BUCKETED_LIMIT))
    return `its cost must be a whole number from 1, got ${describeValue(cost)}`;
  if (limits !== undefined && (typeof limits !== 'object' || limits === null))
    return `its limits must be an object keyed by limit name, got ${describeValue(limits)}`;
  return undefined;
}

/** Picks the limit values from `source` (a policy answer or one of its `limits`), skipping undefined. */
export function policyValuesOf(source: PolicyLimitValues | undefined): PolicyLimitValues | undefined {
  if (source === undefined) return undefined;
  let values: Record<string, unknown> | undefined;
  for (const name of VALUE_NAMES) {
    const value = (source as Record<string, unknown>)[name];
    if (value !== undefined) (values ??= {})[name] = value;
  }
  return values;
}
