import type { ExecutionContext, Type } from '@nestjs/common';
import type { DecisionOptions, RedisErrorPolicy } from '../limiter/sliding-window-limiter.interfaces';
import { SKIP_RATE_LIMIT_METADATA, SLIDING_LIMIT_METADATA } from './rate-limit.constants';
import type { ResolvedRateLimitOptions } from './rate-limit.options';
import { describeLimitProblems, type SlidingLimitCandidate, type SlidingLimitOptions } from './sliding-limit.options';
import { type RateLimitKey } from './rate-limit-key';
import type { SlidingLimitRule } from '../core/limit-rule';
import { compileKey, isNamedByCaller, type CompiledKey } from './key-template';
import { policyHeaderValue } from './rate-limit-headers';
import { describeCostOptionProblems, type RateLimitCostFunction } from './rate-limit-cost';
import type { RateLimitRequest } from './rate-limit-key';
import {
  isPolicyClass,
  type PolicyLimitValues,
  type RateLimitPolicyRef,
  type RateLimitPolicyResult,
} from './rate-limit-policy';
import { definedOnly } from '../limiter/limiter-options';

/** A limit's policy, ready to be called: an injectable's `resolve` bound to it, or the function given. */
export interface CompiledPolicy {
  /** The class or function name, for log lines. */
  readonly label: string;
  readonly resolve: (
    request: RateLimitRequest,
    context: ExecutionContext,
  ) => RateLimitPolicyResult | Promise<RateLimitPolicyResult>;
}

/** One limit of a handler, ready to be applied to a request. */
export interface CompiledLimit {
  /** The keys' namespace and policy name: `name`, or `Controller.handler:<windowMs>` (counted per route). */
  readonly name: string;
  /** The decorator's limit; with a policy, the fallback (undefined when it gives none). */
  readonly limit: number | undefined;
  /** The decorator's window; with a policy, the fallback and the default (undefined when it gives none). */
  readonly windowMs: number | undefined;
  /** Set for the bounded-memory window; absent for the log. */
  readonly precisionMs?: number;
  /** Set for a shadow limit (the decorator's `mode`, or the module's `limitMode`). */
  readonly mode?: 'shadow';
  /** Set when the limit opts out of per-key overrides. */
  readonly overrides?: false;
  /** @internal */
  readonly key: CompiledKey;
  /** Index of the limit's policy in {@link HandlerPlan.policies}. @internal */
  readonly policy?: number;
  /** The name the policy's `limits` know this limit by (a candidate's is its limit's). @internal */
  readonly policyLimitName?: string;
  /** Values that win over the policy's: a candidate's own. @internal */
  readonly fixed?: PolicyLimitValues;
  /** Set when the decorator gave the limit a name (unnamed limits are named after their route). @internal */
  readonly named?: true;
  /** Set when its key is a template, which reads the request only while the key is resolved. @internal */
  readonly keyReadAtOnce?: true;
  /** Set when any caller can name the limit's keys (see `isNamedByCaller`): not the caller's own usage. @internal */
  readonly namedByCaller?: true;
  /** Its `RateLimit-Policy` name under a policy: the tier's, or `<tier>.<limit>` when several share it. @internal */
  readonly tierNamed?: 'alone' | 'shared';
}

/** Everything about one handler the guard needs, computed once so a request only reads it. */
export interface HandlerPlan {
  /** `Controller.handler`. */
  readonly route: string;
  /** The limits to enforce; empty when the handler is not limited or is skipped. */
  readonly limits: readonly CompiledLimit[];
  /** `RateLimit-Policy` value (IETF draft), the same for every request of the handler. @internal */
  readonly policyHeader: string;
  /** The strictest `onRedisError` among the limits, or undefined for the module's. @internal */
  readonly onRedisError?: RedisErrorPolicy;
  /** What the guard passes to `consumeAll` for every request, built once. @internal */
  readonly decisionOptions?: DecisionOptions;
  /** Prices each request when the route's cost is a function (a static cost is in `decisionOptions`). @internal */
  readonly costFunction?: RateLimitCostFunction;
  /** The policies its limits use, each resolved once per request; absent when none does. @internal */
  readonly policies?: readonly CompiledPolicy[];
  /** Whether one of its limits is a shadow limit (or a candidate). @internal */
  readonly hasShadow?: boolean;
  /** Its limits' rules, made once; absent when a policy gives values per request. @internal */
  readonly rules?: readonly SlidingLimitRule[];
}

/** Finds the policy instance of a class from Nest's container, or says why it cannot. */
export type PolicyLookup = (ref: RateLimitPolicyRef) => CompiledPolicy | string;

/** Strictness order of failure policies: a stacked limit asking for more caution wins. */
const STRICTNESS: Record<RedisErrorPolicy, number> = { allow: 0, deny: 1, throw: 2 };

/** A plan, or the problems that prevent it. */
export type PlanResult = { plan: HandlerPlan; problems: [] } | { plan?: undefined; problems: string[] };

/** A route handler, as Nest's `ExecutionContext.getHandler()` gives it (the controller's method). */
export type RouteHandler = ReturnType<ExecutionContext['getHandler']>;

/** Reads metadata as plain Reflect calls so plans can be built without a Reflector instance. */
function ownLimits(target: object): unknown[] {
  return (Reflect.getOwnMetadata(SLIDING_LIMIT_METADATA, target) as unknown[] | undefined) ?? [];
}

function isSkipped(controller: Type, handler: RouteHandler): boolean {
  return (
    Reflect.getMetadata(SKIP_RATE_LIMIT_METADATA, handler) === true ||
    Reflect.getMetadata(SKIP_RATE_LIMIT_METADATA, controller) === true
  );
}

/** Whether a class or one of its methods carries rate-limit metadata (for scanning providers). */
export function hasRateLimitMetadata(target: object): boolean {
  return Reflect.getOwnMetadataKeys(target).some(
    (key) => key === SLIDING_LIMIT_METADATA || key === SKIP_RATE_LIMIT_METADATA,
  );
}

/** Merges class and handler limits, falls back to `defaultLimit`, validates and compiles them. */
export function buildHandlerPlan(
  controller: Type,
  handler: RouteHandler,
  options: ResolvedRateLimitOptions,
  /** Compiled keys shared by all plans: a key used by many handlers is compiled once. */
  compileCache: Map<RateLimitKey, CompiledKey>,
  /** Turns a `policy` option into something to call (a class is taken from Nest's container). */
  policyOf: PolicyLookup = compileFunctionPolicy,
): PlanResult {
  const route = `${controller.name}.${handler.name}`;
  if (isSkipped(controller, handler)) return { plan: { route, limits: [], policyHeader: '' }, problems: [] };

  const problems: string[] = [];
  const check = (entries: unknown[], where: string): SlidingLimitOptions[] => {
    const valid: SlidingLimitOptions[] = [];
    entries.forEach((entry, index) => {
      const label = `${where}: @SlidingLimit${entries.length > 1 ? ` #${index + 1}` : ''}`;
      const found = describeLimitProblems(entry, label);
      if (found.length > 0) problems.push(...found);
      else valid.push(entry as SlidingLimitOptions);
    });
    return valid;
  };
  const classLimits = check(ownLimits(controller), controller.name);
  const handlerLimits = check(ownLimits(handler), route);
  const handlerNames = new Set(handlerLimits.map((l) => l.name).filter((n) => n !== undefined));
  let merged = [...classLimits.filter((l) => l.name === undefined || !handlerNames.has(l.name)), ...handlerLimits];
  if (merged.length === 0 && problems.length === 0 && options.defaultLimit) merged = [options.defaultLimit];

  const policies: CompiledPolicy[] = [];
  const policyRefs: RateLimitPolicyRef[] = [];
  const policyIndex = (ref: RateLimitPolicyRef): number | undefined => {
    const known = policyRefs.indexOf(ref);
    if (known !== -1) return known;
    const policy = policyOf(ref);
    if (typeof policy === 'string') {
      problems.push(`${route}: @SlidingLimit policy ${policy}`);
      return undefined;
    }
    policyRefs.push(ref);
    return policies.push(policy) - 1;
  };
  const limits: CompiledLimit[] = [];
  for (const entry of merged) {
    const source = entry.key ?? options.key;
    let key = compileCache.get(source);
    if (!key) compileCache.set(source, (key = compileKey(source)));
    const name = entry.name ?? `${route}:${entry.windowMs ?? 'policy'}`;
    const policy = entry.policy === undefined ? undefined : policyIndex(entry.policy);
    const compiled: CompiledLimit = definedOnly({
      name,
      limit: entry.limit,
      windowMs: entry.windowMs,
      precisionMs: entry.precisionMs,
      mode: (entry.mode ?? options.limitMode) === 'shadow' ? ('shadow' as const) : undefined,
      overrides: entry.overrides === false ? (false as const) : undefined,
      key,
      policy,
      policyLimitName: policy === undefined ? undefined : name,
      named: entry.name === undefined ? undefined : (true as const),
      namedByCaller: isNamedByCaller(source) ? (true as const) : undefined,
      keyReadAtOnce: typeof source === 'string' ? (true as const) : undefined,
    }) as CompiledLimit;
    limits.push(compiled);
    if (entry.candidate) limits.push(candidateOf(compiled, entry.candidate));
  }
  // A tier names the limit in RateLimit-Policy when it is the only enforced limit of its policy.
  for (let i = 0; i < limits.length; i++) {
    const { policy, mode } = limits[i];
    if (policy === undefined || mode === 'shadow') continue;
    const sharing = limits.filter((other) => other.policy === policy && other.mode !== 'shadow').length;
    limits[i] = { ...limits[i], tierNamed: sharing > 1 ? 'shared' : 'alone' };
  }

  // Names are Redis namespaces and policy names: two limits sharing one would write the same key
  // (corrupting each other's window) or make the RateLimit headers ambiguous.
  const seen = new Set<string>();
  for (const limit of limits) {
    if (seen.has(limit.name)) {
      problems.push(
        limit.name.startsWith(`${route}:`)
          ? `${route}: two unnamed @SlidingLimit have the same window (${limit.windowMs} ms); give them distinct names`
          : `${route}: two @SlidingLimit are named ${JSON.stringify(limit.name)}; names must be distinct`,
      );
    }
    seen.add(limit.name);
  }
  // One cost per request: it is what the request weighs in each of its limits.
  const costs = [...new Set(merged.map((entry) => entry.cost).filter((cost) => cost !== undefined))];
  const staticLimits = limits.filter(hasValues);
  if (costs.length > 1) {
    problems.push(
      `${route}: its @SlidingLimit set different costs; a request has one cost for all its limits: set it once`,
    );
  } else {
    problems.push(...describeCostOptionProblems(costs[0], `${route}: cost`, staticLimits));
  }
  if (problems.length > 0) return { problems };
  const cost = costs[0];
  const onRedisError = merged
    .map((entry) => entry.onRedisError)
    .reduce<RedisErrorPolicy | undefined>(
      (strictest, policy) =>
        policy && (!strictest || STRICTNESS[policy] > STRICTNESS[strictest]) ? policy : strictest,
      undefined,
    );
  // The limit names go with every decision, for the decision listeners (OpenTelemetry spans).
  const decisionOptions: DecisionOptions = definedOnly({
    onRedisError,
    cost: typeof cost === 'number' ? cost : undefined,
    limitNames: limits.map((limit) => limit.name),
  });
  const plan: HandlerPlan = definedOnly({
    route,
    limits,
    policyHeader: policies.length > 0 ? '' : policyHeaderValue(limits.filter(isEnforced).filter(hasValues)),
    onRedisError,
    decisionOptions,
    costFunction: typeof cost === 'function' ? cost : undefined,
    policies: policies.length > 0 ? policies : undefined,
    hasShadow: limits.some((limit) => limit.mode === 'shadow') ? true : undefined,
    rules: policies.length === 0 && limits.every(hasValues) ? limits.map(ruleOf) : undefined,
  }) as HandlerPlan;
  return { plan, problems: [] };
}

/** The rule of a limit as the limiter reads it (without `limit`, `windowMs` when a policy gives them). */
export function ruleOf(limit: CompiledLimit): SlidingLimitRule {
  const rule: SlidingLimitRule = { limit: limit.limit as number, windowMs: limit.windowMs as number };
  if (limit.precisionMs !== undefined) rule.precisionMs = limit.precisionMs;
  if (limit.mode !== undefined) rule.mode = limit.mode;
  if (limit.overrides !== undefined) rule.overrides = limit.overrides;
  return rule;
}

/** A limit that its decorator gave values to (every limit without a policy). */
export function hasValues(limit: CompiledLimit): limit is CompiledLimit & { limit: number; windowMs: number } {
  return limit.limit !== undefined && limit.windowMs !== undefined;
}

function isEnforced(limit: CompiledLimit): boolean {
  return limit.mode !== 'shadow';
}

/** The shadow twin of `limit` that its `candidate` option describes. */
function candidateOf(limit: CompiledLimit, candidate: SlidingLimitCandidate): CompiledLimit {
  const { name, ...values } = candidate;
  const fixed = definedOnly(values);
  return definedOnly({
    ...limit,
    name: name ?? `${limit.name}.candidate`,
    limit: fixed.limit ?? limit.limit,
    windowMs: fixed.windowMs ?? limit.windowMs,
    precisionMs: 'precisionMs' in fixed ? fixed.precisionMs : limit.precisionMs,
    mode: 'shadow' as const,
    fixed: limit.policy === undefined ? undefined : fixed,
  }) as CompiledLimit;
}

/** A policy given as a function; a class needs Nest's container (see `SlidingLimitPlans`). */
export function compileFunctionPolicy(ref: RateLimitPolicyRef): CompiledPolicy | string {
  if (isPolicyClass(ref)) return `${ref.name} is a class: it is taken from Nest's container, which builds plans`;
  const resolve = ref;
  return { label: resolve.name || 'a policy function', resolve };
}
