import {
  BadRequestException,
  ForbiddenException,
  Injectable,
  Logger,
  Optional,
  ServiceUnavailableException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { TooManyRequestsException } from './too-many-requests.exception';
import type { KeyedSlidingLimitRule } from '../core/limit-rule';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { FallbackKind as DegradedKind } from '../core/call-metrics';
import { ruleOf, type CompiledLimit, type HandlerPlan } from './limit-plan';
import { tooManyRequestsBody } from './rate-limit-error-body';
import {
  HEADER,
  rateLimitHeaders,
  retryAfterSeconds,
  writeHeaders,
  writeRateLimitHeaders,
  type HeaderEntry,
  type NamedRule,
} from './rate-limit-headers';
import { isValidRule, type SlidingLimitRule } from '../core/limit-rule';
import { describeValue } from '../core/value-checks';
import { describePolicyResultProblem, policyValuesOf, type RateLimitPolicyResult } from './rate-limit-policy';
import { PolicyFailures } from './policy-failures';
import { ShadowReport } from './shadow-report';
import { SlidingLimitPlans } from './rate-limit-plans';
import type { RateLimitRequest } from './rate-limit-key';
import type { KeySource } from './key-template';
import { decideDirectly, SlidingWindowLimiter } from '../limiter/sliding-window.limiter';
import type { DecisionReceiver } from '../limiter/decision-in-flight';
import { describeRuntimeCostProblem, type RateLimitCostFunction } from './rate-limit-cost';
import { messageOf } from '../redis/reply';
import { missingModuleError } from './missing-module.error';
import { refusalLine } from './refusal-line';
import { refusedNames } from './rate-limit-error-payload';
import { adoptRawUser } from './request-user';

/** The rules of a request's limits, one per key, with the decorator's values (a policy's come later). */
function keyedRules(plan: HandlerPlan, keys: readonly string[]): KeyedSlidingLimitRule[] {
  const rules = new Array<KeyedSlidingLimitRule>(keys.length);
  for (let i = 0; i < keys.length; i++) rules[i] = keyedRule(plan.limits[i], keys[i]);
  return rules;
}

/** The rule of one limit for one request's key, with the decorator's values (a policy's come later). */
function keyedRule(limit: CompiledLimit, key: string): KeyedSlidingLimitRule {
  const rule = ruleOf(limit) as KeyedSlidingLimitRule;
  rule.key = key;
  return rule;
}

/**
 * The limits of one request as a policy made them: the keyed rules, what the headers call each (the
 * caller's tier), and the cost when the policy gave one.
 */
export interface RequestLimits {
  readonly rules: KeyedSlidingLimitRule[];
  /** Per rule, its name in the headers, limit and window. */
  readonly named: readonly NamedRule[];
  readonly cost?: number;
}

/** What a request gets when its limits cannot be known (a policy failed and the limit has no values of its own). */
const UNRESOLVED: MultiRateLimitDecision = {
  allowed: false,
  retryAfterMs: 1000,
  functionName: '',
  limits: [],
  degraded: 'deny',
};

/**
 * The plans a call has been counted for, marked on the call's ExecutionContext, which Nest makes once
 * per call and hands to every guard of the handler in turn: a guard registered globally and again
 * with @UseGuards (a separate instance) counts a request once. A mark on the context rather than a
 * WeakMap entry per request (a table that grows and is copied until the next collection, ~0.3 KB a
 * request by V8's heap sampler) or a mark on the request (Express swaps every request's prototype,
 * so a property added to one builds a new hidden class); the context is Nest's own plain object.
 */
const COUNTED = Symbol('SlidingLimitGuard.counted');
type CountedMark = { [COUNTED]?: HandlerPlan | Set<HandlerPlan> };

/**
 * Plans a guard has limited outside HTTP (a ready transport guard, or any subclass whose
 * getRequestResponse answers there), shared by every guard instance: the plain guard stays quiet
 * about a handler that another guard limits.
 */
const limitedOutsideHttp = new WeakSet<HandlerPlan>();

/** The ready guard of each non-HTTP context type, named in the warning of the plain guard. */
const READY_GUARDS: Readonly<Record<string, string>> = {
  graphql: 'GqlSlidingLimitGuard (entry point nestjs-sliding-limit/graphql)',
  ws: 'WsSlidingLimitGuard (entry point nestjs-sliding-limit/websockets)',
  rpc: 'RpcSlidingLimitGuard (entry point nestjs-sliding-limit/microservices)',
};

type TrackerOf = (request: RateLimitRequest, context: ExecutionContext) => string | undefined;

/**
 * What a request's key is read from, its tracker a method. A template reads it while the key is
 * resolved and never after, so the guard keeps one for every template key and points it at each
 * request in turn (it holds the latest until the next); a key function may read it after an await,
 * so it gets one of its own.
 */
class RequestKeySource implements KeySource {
  constructor(
    private readonly trackerOf: TrackerOf,
    public request: RateLimitRequest,
    public context: ExecutionContext,
    public route: string,
  ) {}

  tracker(): string | undefined {
    return this.trackerOf(this.request, this.context);
  }

  /** The same source, now for another request. */
  pointAt(request: RateLimitRequest, context: ExecutionContext, route: string): this {
    this.request = request;
    this.context = context;
    this.route = route;
    return this;
  }
}

type ApplyDecision = (
  context: ExecutionContext,
  plan: HandlerPlan,
  response: unknown,
  decision: MultiRateLimitDecision,
  named?: readonly NamedRule[],
) => boolean;

/**
 * A request's decision on its way back to the guard, which applies it (headers, or the refusal):
 * the limiter hands it over as soon as it is made, and the request's promise settles with the answer.
 */
class Admission implements DecisionReceiver {
  constructor(
    private readonly applyDecision: ApplyDecision,
    private readonly context: ExecutionContext,
    private readonly plan: HandlerPlan,
    private readonly response: unknown,
  ) {}

  receive(decision: MultiRateLimitDecision): boolean {
    return this.applyDecision(this.context, this.plan, this.response, decision);
  }
}

/** The `degradedHeader` of each kind of degraded decision, made once. */
const DEGRADED_HEADERS: Readonly<Record<DegradedKind, readonly HeaderEntry[]>> = {
  allow: [[HEADER.degraded, 'allow']],
  deny: [[HEADER.degraded, 'deny']],
  insurance: [[HEADER.degraded, 'insurance']],
};

/** What canActivate answers when nothing needs deciding: one settled promise, shared. */
const ALLOWED = Promise.resolve(true);

/** The request (and response, when the transport has one) a guard works with. */
export interface RateLimitHttpContext {
  request: RateLimitRequest;
  /** Express `Response`, Fastify `FastifyReply`, or undefined where there is nothing to set headers on. */
  response?: unknown;
}

/**
 * Enforces `@SlidingLimit` (and the module's `defaultLimit`). Registered for every route when the
 * module option `global` is true; otherwise use `@UseGuards(SlidingLimitGuard)`.
 *
 * All limits of a handler are decided in one atomic Redis call: a request rejected by any is counted
 * by none. Allowed requests get rate-limit headers; rejected ones a {@link TooManyRequestsException}
 * with `Retry-After`.
 *
 * Outside HTTP (GraphQL, WebSockets, microservices) it never touches a response and, unless a
 * subclass overrides {@link SlidingLimitGuard.getRequestResponse}, lets the call through. Subclass it to adapt — see
 * docs/nest.md ("GraphQL, WebSockets and other transports") for GraphQL and WebSocket versions.
 */
@Injectable()
export class SlidingLimitGuard implements CanActivate {
  protected readonly logger = new Logger('SlidingLimitGuard');
  /** `getTracker` (as a subclass overrides it), for the key sources: made once per guard. */
  private readonly trackerOf: TrackerOf = (request, context) => this.getTracker(request, context);
  /** The key source of template keys, reused (see RequestKeySource); made at the first request. */
  private templateSource: RequestKeySource | undefined;
  private readonly warnedUnsupported = new WeakSet<HandlerPlan>();
  private readonly metUnsupported = new WeakSet<HandlerPlan>();
  private readonly warnedUnpriceable = new WeakSet<HandlerPlan>();
  private readonly policyFailures = new PolicyFailures((line) => this.logger.warn(line));
  private readonly shadowReport = new ShadowReport((line) => this.logger.log(line));

  protected readonly limiter: SlidingWindowLimiter;
  protected readonly plans: SlidingLimitPlans;
  /** Whether {@link SlidingLimitGuard.setHeaders} is this class's own (a subclass may override it). */
  private readonly ownHeaderWriting = this.setHeaders === SlidingLimitGuard.prototype.setHeaders;

  /**
   * Both come from `RateLimitModule`. They are optional for Nest so that a guard used where the
   * module is not imported fails with an error that names the module, not with Nest's generic
   * "can't resolve dependencies".
   */
  constructor(@Optional() limiter?: SlidingWindowLimiter, @Optional() plans?: SlidingLimitPlans) {
    if (!limiter || !plans) throw missingModuleError(new.target.name);
    this.limiter = limiter;
    this.plans = plans;
  }

  canActivate(context: ExecutionContext): Promise<boolean> {
    // Not async itself: a request that needs no decision costs no promise of its own. A synchronous
    // error becomes a rejected promise.
    try {
      const plan = this.plans.get(context.getClass(), context.getHandler());
      if (plan.limits.length === 0) return ALLOWED;

      const http = this.getRequestResponse(context);
      if (!http) {
        this.warnUnsupported(context, plan);
        return ALLOWED;
      }
      if (context.getType() !== 'http') limitedOutsideHttp.add(plan);
      return this.enforceOnce(context, plan, http);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Enforces the plan unless this request has already been counted for it (a guard registered
   * globally and again with `@UseGuards`). Override where one request carries several calls that
   * must each count, as a GraphQL operation does; a synchronous throw is turned into a rejection by
   * the caller.
   */
  protected enforceOnce(context: ExecutionContext, plan: HandlerPlan, http: RateLimitHttpContext): Promise<boolean> {
    if (this.alreadyCounted(context as ExecutionContext & CountedMark, plan)) return ALLOWED;
    return this.enforce(context, plan, http);
  }

  /**
   * The request's whole decision, top to bottom: its keys (resolved once), its cost, one call of the
   * limiter for every limit of the plan, then headers or the refusal. True when admitted; a rejection
   * otherwise. Counts every time it is called.
   *
   * Without a key or cost function that answers asynchronously (the common case) it adds no promise
   * of its own: it hands the limiter the plan's rules and the keys, and the limiter hands the decision
   * to `apply` through the receiver (`Admission`) as soon as it is read, settling the one promise of
   * the decision with the answer — no keyed rule, key list or `.then` per request. Methods and
   * objects rather than closures made per request: V8 holds a closure's optimized code only while one
   * of them is alive, so a full collection while other routes are served would drop it (`--trace-opt`
   * on the benchmark app showed the decision path recompiled after each such collection with closures).
   */
  protected enforce(context: ExecutionContext, plan: HandlerPlan, http: RateLimitHttpContext): Promise<boolean> {
    if (plan.policies) return this.enforceWithPolicies(context, plan, http);
    const keys = this.keysFor(plan, http.request, context);
    // The direct entry only while `consumeAll` is the limiter's own: checked per request, so that a
    // subclass, a spy or an instrumentation that wraps it later still sees every decision.
    if (
      !Array.isArray(keys) ||
      plan.costFunction ||
      !plan.rules ||
      this.limiter.consumeAll !== SlidingWindowLimiter.prototype.consumeAll
    )
      return this.enforceAsync(context, plan, http, keys);
    const admission = new Admission(this.applyDecision, context, plan, http.response);
    return decideDirectly(this.limiter, keys, plan.rules, plan.decisionOptions, admission) as Promise<boolean>;
  }

  /**
   * {@link SlidingLimitGuard.enforce} when a key function or the cost function answers asynchronously,
   * or the limiter's `consumeAll` is a subclass's.
   */
  private async enforceAsync(
    context: ExecutionContext,
    plan: HandlerPlan,
    http: RateLimitHttpContext,
    keys: string[] | Promise<string[]>,
  ): Promise<boolean> {
    const rules = keyedRules(plan, await keys);
    const options = plan.costFunction
      ? { ...plan.decisionOptions, cost: await this.priceOf(plan, plan.costFunction, http.request, context, rules) }
      : plan.decisionOptions;
    return this.apply(context, plan, http.response, await this.limiter.consumeAll(rules, options));
  }

  /** {@link SlidingLimitGuard.enforce} for a route whose limits come (in part) from policies. */
  private async enforceWithPolicies(
    context: ExecutionContext,
    plan: HandlerPlan,
    http: RateLimitHttpContext,
  ): Promise<boolean> {
    const limits = await this.resolveLimits(plan, http.request, context);
    if (!limits) return this.apply(context, plan, http.response, UNRESOLVED);
    let options = plan.decisionOptions;
    if (limits.cost !== undefined) {
      const problem = describeRuntimeCostProblem(limits.cost, limits.rules);
      if (problem !== undefined) this.throwUnpriceable(context, plan, `its policy's cost: ${problem}`);
      options = { ...options, cost: limits.cost };
    } else if (plan.costFunction) {
      options = { ...options, cost: await this.priceOf(plan, plan.costFunction, http.request, context, limits.rules) };
    }
    const decision = await this.limiter.consumeAll(limits.rules, options);
    return this.apply(context, plan, http.response, decision, limits.named);
  }

  /**
   * The limits of one request, exactly as the guard decides them: keys resolved (the protected
   * hooks included), each of the route's policies resolved once, their values over the decorator's.
   * Undefined when a policy failed for a limit that has no values of its own (the request is then
   * answered as Redis' `deny`: a 503). Used by the guard and by `RateLimitUsage`.
   */
  async resolveLimits(
    plan: HandlerPlan,
    request: RateLimitRequest,
    context: ExecutionContext,
  ): Promise<RequestLimits | undefined> {
    const answers = plan.policies ? await this.resolvePolicies(plan, request, context) : [];
    const rules = keyedRules(plan, await this.keysFor(plan, request, context));
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
          const policy = (plan.policies as NonNullable<HandlerPlan['policies']>)[limit.policy as number];
          if (!this.fallBack(plan, policy.label, `its answer for limit "${limit.name}" ${rule}`, limit))
            return undefined;
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
    for (let p = 0; p < policies.length; p++)
      if (usable[p]) this.policyFailures.answered(plan.route, policies[p].label);
    return cost === undefined ? { rules, named } : { rules, named, cost };
  }

  /** Each policy of the plan, once; undefined for one that failed (said once, with what happens instead). */
  private async resolvePolicies(
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
          this.policyFailed(plan, index, `it threw: ${messageOf(error)}`);
          return undefined;
        }
        const problem = describePolicyResultProblem(answer);
        if (problem !== undefined) {
          this.policyFailed(plan, index, problem);
          return undefined;
        }
        return answer as RateLimitPolicyResult;
      }),
    );
  }

  /** Says (once) that policy `index` of `plan` failed, and what its limits do instead. */
  private policyFailed(plan: HandlerPlan, index: number, reason: string): void {
    const using = plan.limits.filter((limit) => limit.policy === index);
    const without = using.filter((limit) => limit.limit === undefined || limit.windowMs === undefined);
    const names = without.map((limit) => `"${limit.name}"`).join(', ');
    const outcome =
      without.length === 0
        ? `its limits apply their own values (${using.map((l) => `"${l.name}" ${l.limit} per ${l.windowMs} ms`).join(', ')})`
        : without.length === 1
          ? `its requests are answered 503, as limit ${names} gives no limit and windowMs of its own to fall back to`
          : `its requests are answered 503, as limits ${names} give no limit and windowMs of their own to fall back to`;
    this.policyFailures.failed(
      plan.route,
      (plan.policies as NonNullable<HandlerPlan['policies']>)[index].label,
      reason,
      outcome,
    );
  }

  /** A policy's answer is unusable for `limit`: false when it has no values of its own to fall back to. */
  private fallBack(plan: HandlerPlan, policy: string, reason: string, limit: CompiledLimit): boolean {
    const fallback = limit.limit !== undefined && limit.windowMs !== undefined;
    this.policyFailures.failed(
      plan.route,
      policy,
      reason,
      fallback
        ? `limit "${limit.name}" applies its own values (${limit.limit} per ${limit.windowMs} ms)`
        : 'answered 503',
    );
    return fallback;
  }

  /** `apply`, for `Admission`: made once per guard. */
  private readonly applyDecision: ApplyDecision = (context, plan, response, decision) =>
    this.apply(context, plan, response, decision);

  /** The request's cost by the route's cost function; a throw or a bad price rejects with a 400. */
  private priceOf(
    plan: HandlerPlan,
    costFunction: RateLimitCostFunction,
    request: RateLimitRequest,
    context: ExecutionContext,
    /** The request's limits, which the price must fit. */
    limits: readonly SlidingLimitRule[],
  ): Promise<number> {
    const refuse = (reason: string): never => {
      if (!this.warnedUnpriceable.has(plan)) {
        this.warnedUnpriceable.add(plan);
        this.logger.warn(`${plan.route} cannot price a request (answered 400; said once per route): ${reason}`);
      }
      return this.throwUnpriceable(context, plan, reason);
    };
    let price: number | Promise<number>;
    try {
      price = costFunction(request, context);
    } catch (error) {
      return Promise.resolve().then(() => refuse(`its cost function threw: ${messageOf(error)}`));
    }
    return Promise.resolve(price).then(
      (value) => {
        const problem = describeRuntimeCostProblem(value, limits);
        return problem === undefined ? value : refuse(problem);
      },
      (error: unknown) => refuse(`its cost function failed: ${messageOf(error)}`),
    );
  }

  private apply(
    context: ExecutionContext,
    plan: HandlerPlan,
    response: unknown,
    decision: MultiRateLimitDecision,
    /** The request's limits as the headers name them, when a policy made them; else the plan's. */
    named: readonly NamedRule[] = plan.limits as readonly NamedRule[],
  ): boolean {
    if (decision.degraded) {
      // Redis did not decide: no counts to report, and a denial is the server's fault, not the client's.
      if (response !== undefined && this.plans.options.degradedHeader)
        this.setHeaders(response, DEGRADED_HEADERS[decision.degraded]);
      if (!decision.allowed) this.throwUnavailable(response, decision, context);
      return true;
    }
    const { options } = this.plans;
    if (plan.hasShadow) this.shadowReport.note(plan.route, plan.limits, decision.limits);
    // No response (WebSockets, microservices): no headers to build.
    if (response !== undefined) {
      const withShadow = options.shadowHeader && plan.hasShadow;
      // Written as they are made, unless a subclass writes headers its own way (it gets the list).
      if (this.ownHeaderWriting)
        writeRateLimitHeaders(response, options.headers, named, plan.policyHeader, decision, withShadow);
      else this.setHeaders(response, rateLimitHeaders(options.headers, named, plan.policyHeader, decision, withShadow));
    }
    if (!decision.allowed) this.throwRateLimited(context, decision, plan, named);
    return true;
  }

  /**
   * The request and response of an HTTP call; undefined in other contexts. On Fastify the request
   * takes the `user` a middleware set on the raw request, so key and cost functions see `req.user`
   * as on Express. Override to limit
   * GraphQL (`GqlExecutionContext.create(context).getContext().req`) or WebSockets (the client).
   */
  protected getRequestResponse(context: ExecutionContext): RateLimitHttpContext | undefined {
    if (context.getType() !== 'http') return undefined;
    // What switchToHttp().getRequest() / getResponse() read, without the three closures switchToHttp
    // assigns onto the context on every call.
    const request = context.getArgByIndex<RateLimitRequest | undefined>(0);
    if (typeof request !== 'object' || request === null) return undefined;
    adoptRawUser(request);
    return { request, response: context.getArgByIndex<unknown>(1) };
  }

  /**
   * The client identity behind the `ip` key part and the fallback of missing parts: `req.ip`, which
   * Express and Fastify derive from `X-Forwarded-For` only when the app trusts the proxy.
   */
  protected getTracker(request: RateLimitRequest, _context: ExecutionContext): string | undefined {
    return typeof request.ip === 'string' && request.ip.length > 0 ? request.ip : undefined;
  }

  /**
   * The Redis key of one limit for this request, without the limiter's prefix: `<name>:{<identity>}`.
   * The identity is a cluster hash tag, so stacked limits of one client share a slot and are decided
   * in one atomic call on Redis Cluster too; request values can never open a tag of their own
   * (braces are percent-encoded).
   */
  protected resolveKey(
    limit: CompiledLimit,
    request: RateLimitRequest,
    context: ExecutionContext,
    plan: HandlerPlan,
  ): string | Promise<string> {
    let identity: string | undefined | Promise<string | undefined>;
    if (limit.keyReadAtOnce && this.templateSource) {
      identity = limit.key(this.templateSource.pointAt(request, context, plan.route));
    } else {
      const source = new RequestKeySource(this.trackerOf, request, context, plan.route);
      if (limit.keyReadAtOnce) this.templateSource = source;
      identity = limit.key(source);
    }
    // Template keys resolve synchronously; only key functions may return a promise.
    if (identity instanceof Promise) return identity.then((resolved) => this.keyOf(limit, resolved, context, plan));
    return this.keyOf(limit, identity, context, plan);
  }

  private keyOf(
    limit: CompiledLimit,
    identity: string | undefined,
    context: ExecutionContext,
    plan: HandlerPlan,
  ): string {
    if (identity === undefined) this.throwUnidentified(context, plan);
    return `${limit.name}:{${identity}}`;
  }

  /**
   * The keys of a request's limits (without the limiter's prefix), from limit `from` on; a promise
   * only when a key function returned one. Keys resolve one after the other, the next only once the
   * previous one has.
   */
  private keysFor(
    plan: HandlerPlan,
    request: RateLimitRequest,
    context: ExecutionContext,
    // Of its final length from the start: one allocation, where pushes would grow it.
    keys = new Array<string>(plan.limits.length),
    from = 0,
  ): string[] | Promise<string[]> {
    const { limits } = plan;
    for (let i = from; i < limits.length; i++) {
      const key = this.resolveKey(limits[i], request, context, plan);
      if (typeof key !== 'string') {
        return key.then((resolved) => {
          keys[i] = resolved;
          return this.keysFor(plan, request, context, keys, i + 1);
        });
      }
      keys[i] = key;
    }
    return keys;
  }

  /**
   * No identity at all (no key value and no client IP): refusing is safer than counting everyone
   * in one bucket. Override to choose otherwise.
   */
  protected throwUnidentified(_context: ExecutionContext, plan: HandlerPlan): never {
    throw new ForbiddenException(`Rate limit of ${plan.route} cannot identify the client`);
  }

  /**
   * Throws the 429. Override to throw a `WsException`, a GraphQL error or an `RpcException` instead;
   * `named` says what the caller's limits are called (its tier, when a policy made them), for a
   * refusal that names them where there are no headers.
   */
  protected throwRateLimited(
    context: ExecutionContext,
    decision: MultiRateLimitDecision,
    plan: HandlerPlan,
    _named?: readonly NamedRule[],
  ): never {
    this.logRefusal(context, decision, plan);
    const details = {
      retryAfterSeconds: retryAfterSeconds(decision.retryAfterMs),
      retryAfterMs: decision.retryAfterMs,
      limits: refusedNames(decision, plan),
    };
    throw new TooManyRequestsException(details, tooManyRequestsBody(this.plans.options.errorBody, details));
  }

  /**
   * Logs a refused call at the module's `refusalLogLevel` (by default, not at all). The ready guards
   * call it from their `throwRateLimited`; an override of that hook calls it to keep the option working.
   */
  protected logRefusal(
    context: ExecutionContext,
    decision: MultiRateLimitDecision,
    plan: HandlerPlan,
    what?: string,
  ): void {
    const level = this.plans.options.refusalLogLevel;
    if (level !== 'off') this.logger[level](refusalLine(context, decision, plan, what));
  }

  /**
   * The route's cost function threw or gave no valid price (a whole number from 1 to the smallest
   * limit): 400, nothing counted. The reason (which may quote the function's error) goes to the log,
   * not to the client. Override to answer differently.
   */
  protected throwUnpriceable(_context: ExecutionContext, plan: HandlerPlan, _reason: string): never {
    throw new BadRequestException(`Rate limit of ${plan.route} cannot price this request`);
  }

  /**
   * Redis could not decide and the policy is `deny`: 503 with a short Retry-After. Override to answer
   * differently (a 429, or a transport-specific error); `context` tells which transport asked.
   */
  protected throwUnavailable(response: unknown, decision: MultiRateLimitDecision, _context?: ExecutionContext): never {
    const seconds = retryAfterSeconds(decision.retryAfterMs);
    if (response !== undefined) this.setHeaders(response, [[HEADER.retryAfter, String(seconds)]]);
    throw new ServiceUnavailableException('Rate limiting is unavailable; retry shortly');
  }

  /** Writes headers; called only when the call has a response (`getRequestResponse` gave one). */
  protected setHeaders(response: unknown, headers: readonly HeaderEntry[]): void {
    writeHeaders(response, headers);
  }

  private alreadyCounted(call: CountedMark, plan: HandlerPlan): boolean {
    const seen = call[COUNTED];
    // Almost every call meets one plan: keep it as is, and make a set only for a second one.
    if (seen === undefined) {
      call[COUNTED] = plan;
      return false;
    }
    if (seen === plan || (seen instanceof Set && seen.has(plan))) return true;
    if (seen instanceof Set) seen.add(plan);
    else call[COUNTED] = new Set([seen, plan]);
    return false;
  }

  /**
   * Says once per handler that a call went through unlimited, unless another guard limits it. Global
   * guards run before a handler's own, so the first call cannot tell: the warning waits for the second.
   */
  private warnUnsupported(context: ExecutionContext, plan: HandlerPlan): void {
    if (this.warnedUnsupported.has(plan) || limitedOutsideHttp.has(plan)) return;
    if (!this.metUnsupported.has(plan)) {
      this.metUnsupported.add(plan);
      return;
    }
    this.warnedUnsupported.add(plan);
    this.logger.warn(this.describeUnlimited(context, plan));
  }

  /**
   * The warning logged (once per handler) when calls of a limited handler went through because
   * {@link SlidingLimitGuard.getRequestResponse} found nothing to limit them by. Override to name the
   * remedy that fits a subclass.
   */
  protected describeUnlimited(context: ExecutionContext, plan: HandlerPlan): string {
    const type = context.getType();
    const remedy = READY_GUARDS[type] ? `use ${READY_GUARDS[type]}` : 'subclass it and override getRequestResponse';
    return (
      `${plan.route} has rate limits but runs in a "${type}" context, which SlidingLimitGuard does not limit; ` +
      `${remedy} (see docs/nest.md, "GraphQL, WebSockets and other transports")`
    );
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
