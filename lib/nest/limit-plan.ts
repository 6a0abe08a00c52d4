import type { ExecutionContext, Type } from '@nestjs/common';
import type { DecisionOptions, RedisErrorPolicy } from '../limiter/sliding-window-limiter.interfaces';
import { SKIP_RATE_LIMIT_METADATA, SLIDING_LIMIT_METADATA } from './rate-limit.constants';
import { describeLimitProblems, type ResolvedRateLimitOptions, type SlidingLimitOptions } from './rate-limit.options';
import { type RateLimitKey } from './rate-limit-key';
import { compileKey, type CompiledKey } from './key-template';
import { policyHeaderValue } from './rate-limit-headers';
import { describeCostOptionProblems, type RateLimitCostFunction } from './rate-limit-cost';
import { definedOnly } from '../limiter/limiter-options';

/** One limit of a handler, ready to be applied to a request. */
export interface CompiledLimit {
  /**
   * Namespace of the limit's Redis keys and its IETF policy name: the limit's `name`, or
   * `Controller.handler:<windowMs>` for an unnamed limit (which therefore counts per route).
   */
  readonly name: string;
  readonly limit: number;
  readonly windowMs: number;
  /** Set for the bounded-memory window; absent for the log. */
  readonly precisionMs?: number;
  readonly key: CompiledKey;
}

/** Everything about one handler the guard needs, computed once so a request only reads it. */
export interface HandlerPlan {
  /** `Controller.handler`. */
  readonly route: string;
  /** The limits to enforce; empty when the handler is not limited or is skipped. */
  readonly limits: readonly CompiledLimit[];
  /** `RateLimit-Policy` value (IETF draft), the same for every request of the handler. */
  readonly policyHeader: string;
  /** The strictest `onRedisError` among the limits, or undefined for the module's. */
  readonly onRedisError?: RedisErrorPolicy;
  /**
   * What the guard passes to `consumeAll` for every request, built once: `{ onRedisError, cost,
   * limitNames }` (absent when the handler has no limits).
   */
  readonly decisionOptions?: DecisionOptions;
  /** Prices each request when the route's cost is a function (a static cost is in `decisionOptions`). */
  readonly costFunction?: RateLimitCostFunction;
}

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

/**
 * Merges class and handler limits (a handler limit replaces the class limit of the same name),
 * falls back to the module's `defaultLimit`, validates and compiles. Problems name
 * `Controller.handler`, so a bad decorator is found at bootstrap, not at the first request.
 */
export function buildHandlerPlan(
  controller: Type,
  handler: RouteHandler,
  options: ResolvedRateLimitOptions,
  /** Compiled keys shared by all plans: a key used by many handlers is compiled once. */
  compileCache: Map<RateLimitKey, CompiledKey>,
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

  const limits = merged.map((entry): CompiledLimit => {
    const source = entry.key ?? options.key;
    let key = compileCache.get(source);
    if (!key) compileCache.set(source, (key = compileKey(source)));
    const compiled: CompiledLimit = {
      name: entry.name ?? `${route}:${entry.windowMs}`,
      limit: entry.limit,
      windowMs: entry.windowMs,
      key,
    };
    return entry.precisionMs === undefined ? compiled : { ...compiled, precisionMs: entry.precisionMs };
  });

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
  if (costs.length > 1) {
    problems.push(
      `${route}: its @SlidingLimit set different costs; a request has one cost for all its limits: set it once`,
    );
  } else {
    problems.push(...describeCostOptionProblems(costs[0], `${route}: cost`, limits));
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
  const plan: HandlerPlan = {
    route,
    limits,
    policyHeader: policyHeaderValue(limits),
    onRedisError,
    decisionOptions,
    ...(typeof cost === 'function' ? { costFunction: cost } : {}),
  };
  return { plan, problems: [] };
}
