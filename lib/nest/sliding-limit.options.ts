import { describeCostOptionProblems, type RateLimitCost } from './rate-limit-cost';
import type { RateLimitKey } from './rate-limit-key';
import { describePolicyRefProblems, type RateLimitPolicyRef } from './rate-limit-policy';
import { describeKeyProblems } from './key-template';
import { describeNameProblems } from './limit-name';
import { describeRuleProblems } from '../core/limit-rule';
import { describeUnknownOptions } from '../core/unknown-options';
import { describeValue } from '../core/value-checks';
import { definedOnly, describeRedisErrorPolicyProblems } from '../limiter/limiter-options';
import type { RedisErrorPolicy } from '../limiter/sliding-window-limiter.interfaces';
/** A shadow twin of a limit, under a name and keys of its own, never refusing; values it leaves out are the limit's. */
export interface SlidingLimitCandidate {
  limit?: number;
  windowMs?: number;
  precisionMs?: number;
  /** Its name (a Redis key namespace and the name in metrics). Default `<the limit's name>.candidate`. */
  name?: string;
}

/** What every form of `@SlidingLimit` takes. */
export interface SlidingLimitCommonOptions {
  /**
   * Leave it out for the exact sliding window log; set it for the bounded-memory window (see
   * {@link SlidingLimitRule.precisionMs}). Needs `sliding_allow_v2`.
   */
  precisionMs?: number;
  /**
   * `shadow`: count as usual but never refuse, reporting what it would have refused. Default: the
   * module's `limitMode` (`enforced`). Needs `sliding_allow_v2`.
   */
  mode?: 'enforced' | 'shadow';
  /** `false`: per-key overrides do not apply to this limit (and are not read for it). Default `true`. */
  overrides?: boolean;
  /** A shadow twin with other values, decided in the same call: see {@link SlidingLimitCandidate}. */
  candidate?: SlidingLimitCandidate;
  /** Who is counted. Default: the module's `key` (itself `'ip'` by default). */
  key?: RateLimitKey;
  /**
   * The key's namespace (`rl:<name>:…`, shared by every route using it) and the policy name; a handler
   * limit replaces the class limit of the same name. Up to 64 of `[A-Za-z0-9_.-]`. Unnamed: per route.
   */
  name?: string;
  /**
   * What this limit does when Redis cannot decide, overriding the module's `onRedisError` (e.g. `deny`
   * on a money-moving endpoint). With stacked limits the strictest applies: `throw`, then `deny`.
   */
  onRedisError?: RedisErrorPolicy;
  /**
   * What a request to the route weighs in each of its limits (one cost per route): a whole number from 1
   * to the smallest limit (at most 10,000 for a log), or a function of the request. Default 1; another
   * needs `sliding_allow_v2`.
   */
  cost?: RateLimitCost;
}

/** A limit with its values written in the decorator (and, optionally, a policy that may change them). */
export interface SlidingLimitFixedOptions extends SlidingLimitCommonOptions {
  /** Requests (units of cost) per window: a whole number ≥ 1. */
  limit: number;
  /** Window length in milliseconds. */
  windowMs: number;
  /**
   * Where this caller's values come from: see {@link SlidingLimitPolicyOptions.policy}. With one,
   * `limit` and `windowMs` here are what the limit falls back to when the policy fails.
   */
  policy?: RateLimitPolicyRef;
}

/** A limit whose values come from the caller, through a policy. */
export interface SlidingLimitPolicyOptions extends SlidingLimitCommonOptions {
  /**
   * Resolves the caller's limit once per request: an injectable {@link RateLimitPolicy} class or a
   * function of the request. Its answer's values replace the ones written here.
   */
  policy: RateLimitPolicyRef;
  /** The fallback when the policy fails; without it, a failing policy answers 503. */
  limit?: number;
  /** The fallback when the policy fails, and the window when the policy gives none. */
  windowMs?: number;
}

/**
 * Arguments of `@SlidingLimit`: at most `limit` requests per `windowMs` for each `key` — written
 * here, or resolved per caller by a `policy`.
 */
export type SlidingLimitOptions = SlidingLimitFixedOptions | SlidingLimitPolicyOptions;

/** The options of `@SlidingLimit` (and `defaultLimit`): the record makes the compiler check that each is listed. */
const LIMIT_OPTIONS = Object.keys({
  limit: true,
  windowMs: true,
  precisionMs: true,
  key: true,
  name: true,
  onRedisError: true,
  cost: true,
  mode: true,
  overrides: true,
  candidate: true,
  policy: true,
} satisfies Record<keyof SlidingLimitFixedOptions, true>);
/** Other libraries' names for `@SlidingLimit` options (@nestjs/throttler, express-rate-limit, …). */
const LIMIT_OPTION_ALIASES: Readonly<Record<string, string>> = {
  ttl: 'windowMs',
  window: 'windowMs',
  duration: 'windowMs',
  interval: 'windowMs',
  max: 'limit',
  points: 'limit',
  keygenerator: 'key',
  precision: 'precisionMs',
  weight: 'cost',
};

/** Problems of one `@SlidingLimit`-shaped value (options, rule, key and name), each prefixed with `label`. */
export function describeLimitProblems(value: unknown, label: string): string[] {
  const unknown =
    typeof value === 'object' && value !== null
      ? describeUnknownOptions(value, LIMIT_OPTIONS, label, LIMIT_OPTION_ALIASES)
      : [];
  const problems = [...unknown, ...describeRuleProblems(withPolicyPlaceholders(value), label)];
  if (typeof value !== 'object' || value === null) return problems;
  const { key, name, onRedisError, cost, policy, candidate } = value as SlidingLimitFixedOptions;
  if (policy !== undefined) problems.push(...describePolicyRefProblems(policy, `${label}.policy`));
  if (candidate !== undefined) problems.push(...describeCandidateProblems(candidate, value, `${label}.candidate`));
  problems.push(...describeCostOptionProblems(cost, `${label}.cost`));
  if (key !== undefined) problems.push(...describeKeyProblems(key, `${label}.key`));
  if (name !== undefined) problems.push(...describeNameProblems(name, `${label}.name`));
  if (onRedisError !== undefined)
    problems.push(...describeRedisErrorPolicyProblems(onRedisError, `${label}.onRedisError`));
  return problems;
}

/** A limit may leave `limit` and `windowMs` to its policy: the checks then see stand-ins for them. */
function withPolicyPlaceholders(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const options = value as Partial<SlidingLimitFixedOptions>;
  if (options.policy === undefined) return value;
  const probe: Record<string, unknown> = { ...options };
  if (probe.limit === undefined) probe.limit = 1;
  if (probe.windowMs === undefined) {
    probe.windowMs = 1000;
    delete probe.precisionMs;
  }
  return probe;
}

const CANDIDATE_OPTIONS = ['limit', 'windowMs', 'precisionMs', 'name'];

/** Problems of a `candidate`, checked as the shadow limit it makes with its limit's values. */
function describeCandidateProblems(candidate: unknown, limit: object, label: string): string[] {
  if (typeof candidate !== 'object' || candidate === null) {
    return [`${label} must be an object with limit, windowMs or precisionMs, got ${describeValue(candidate)}`];
  }
  const problems = describeUnknownOptions(candidate, CANDIDATE_OPTIONS, label);
  const { name, ...values } = candidate as SlidingLimitCandidate;
  if (name !== undefined) problems.push(...describeNameProblems(name, `${label}.name`));
  const parent = withPolicyPlaceholders(limit) as SlidingLimitFixedOptions;
  const rule = {
    limit: parent.limit,
    windowMs: parent.windowMs,
    precisionMs: parent.precisionMs,
    ...definedOnly(values),
  };
  problems.push(...describeRuleProblems(rule, label).filter((line) => line.startsWith(`${label}.`)));
  return problems;
}
