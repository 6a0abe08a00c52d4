import { Injectable, Logger, Optional, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { DecisionReceiver } from '../limiter/decision';
import { DECIDE_PLANNED } from '../limiter/planned-entry';
import { SlidingWindowLimiter } from '../limiter/sliding-window.limiter';
import { httpRefusal } from './http-refusal';
import type { CompiledLimit, HandlerPlan } from './limit-plan';
import { missingModuleError } from './missing-module.error';
import {
  tooManyRequestsPayload,
  unavailablePayload,
  unidentifiedPayload,
  unpriceablePayload,
  type RateLimitErrorPayload,
} from './rate-limit-error-payload';
import {
  HEADER,
  retryAfterSeconds,
  setResponseHeader,
  writeRateLimitHeaders,
  type NamedRule,
} from './rate-limit-headers';
import type { RateLimitRequest } from './rate-limit-key';
import { SlidingLimitPlans } from './rate-limit-plans';
import { RequestCosts } from './request-cost';
import { limitKey, RequestKeys } from './request-keys';
import { keyedRules, RequestPolicies, type RequestLimits } from './request-policies';
import { refusalLine } from './refusal-line';
import { adoptRawUser } from './request-user';
import { ShadowReport } from './shadow-report';

/** What a request gets when its limits cannot be known (a policy failed and the limit has no values of its own). */
const UNRESOLVED: MultiRateLimitDecision = {
  allowed: false,
  retryAfterMs: 1000,
  functionName: '',
  limits: [],
  degraded: 'deny',
};

/**
 * The plans a call has been counted for, marked on its ExecutionContext (one per call, shared by its
 * guards): a guard registered globally and again with @UseGuards counts a request once.
 */
const COUNTED = Symbol('SlidingLimitGuard.counted');
type CountedMark = { [COUNTED]?: HandlerPlan | Set<HandlerPlan> };

/** Plans some guard limited outside HTTP: the plain guard stays quiet about them. */
const limitedOutsideHttp = new WeakSet<HandlerPlan>();

/** The ready guard of each non-HTTP context type, named in the warning of the plain guard. */
const READY_GUARDS: Readonly<Record<string, string>> = {
  graphql: 'GqlSlidingLimitGuard (entry point nestjs-sliding-limit/graphql)',
  ws: 'WsSlidingLimitGuard (entry point nestjs-sliding-limit/websockets)',
  rpc: 'RpcSlidingLimitGuard (entry point nestjs-sliding-limit/microservices)',
};

/** What canActivate answers when nothing needs deciding: one settled promise, shared. */
const ALLOWED = Promise.resolve(true);

/** The request (and response, when the transport has one) a guard works with. */
export interface RateLimitHttpContext {
  request: RateLimitRequest;
  /** Express `Response`, Fastify `FastifyReply`, or undefined where there is nothing to set headers on. */
  response?: unknown;
}

/** Hands a request's decision back to the guard as soon as it is made, to apply it. */
class Admission implements DecisionReceiver {
  constructor(
    private readonly guard: SlidingLimitGuard,
    private readonly context: ExecutionContext,
    private readonly plan: HandlerPlan,
    private readonly response: unknown,
  ) {}

  receive(decision: MultiRateLimitDecision): boolean {
    return this.guard.apply(this.context, this.plan, this.response, decision);
  }
}

/**
 * Enforces `@SlidingLimit` (and the module's `defaultLimit`). Registered for every route when the
 * module option `global` is true; otherwise use `@UseGuards(SlidingLimitGuard)`.
 *
 * All limits of a handler are decided in one atomic call. Admitted requests get rate-limit headers;
 * refused ones a {@link TooManyRequestsException}. Observe decisions with `limiter.onDecision` (the
 * guard bypasses `consumeAll`). Outside HTTP it lets calls through unless a subclass overrides
 * {@link SlidingLimitGuard.getRequestResponse}, as the ready guards of the entry points do.
 */
@Injectable()
export class SlidingLimitGuard implements CanActivate {
  protected readonly logger = new Logger('SlidingLimitGuard');
  protected readonly limiter: SlidingWindowLimiter;
  protected readonly plans: SlidingLimitPlans;
  private readonly keys = new RequestKeys({
    tracker: (request, context) => this.getTracker(request, context),
    resolveKey: (limit, request, context, plan) => this.resolveKey(limit, request, context, plan),
  });
  private readonly policies = new RequestPolicies((line) => this.logger.warn(line));
  private readonly costs = new RequestCosts((line) => this.logger.warn(line));
  private readonly shadowReport = new ShadowReport((line) => this.logger.log(line));
  /** {@link SlidingLimitGuard.setHeader}, as a subclass overrides it, for the header writer: made once. */
  private readonly writeHeader = (response: unknown, name: string, value: string): void =>
    this.setHeader(response, name, value);
  private readonly warnedUnsupported = new WeakSet<HandlerPlan>();
  private readonly metUnsupported = new WeakSet<HandlerPlan>();

  /** Both come from `RateLimitModule`; optional, so that without it the error names the module. */
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

  /** Enforces the plan unless this request was counted for it; override where calls must each count (GraphQL). */
  protected enforceOnce(context: ExecutionContext, plan: HandlerPlan, http: RateLimitHttpContext): Promise<boolean> {
    if (this.alreadyCounted(context as ExecutionContext & CountedMark, plan)) return ALLOWED;
    return this.enforce(context, plan, http);
  }

  /** The request's whole decision: keys, cost, one limiter call, headers or the refusal. True when admitted. */
  protected enforce(context: ExecutionContext, plan: HandlerPlan, http: RateLimitHttpContext): Promise<boolean> {
    if (plan.policies || plan.costFunction || !plan.rules) return this.enforceResolved(context, plan, http);
    const keys = this.keys.of(plan, http.request, context);
    if (!Array.isArray(keys)) return this.enforceResolved(context, plan, http, keys);
    const admission = new Admission(this, context, plan, http.response);
    return this.limiter[DECIDE_PLANNED](keys, plan.rules, plan.decisionOptions, admission) as Promise<boolean>;
  }

  /** {@link SlidingLimitGuard.enforce} when a policy, a cost function or a key function answers per request. */
  private async enforceResolved(
    context: ExecutionContext,
    plan: HandlerPlan,
    http: RateLimitHttpContext,
    keys = this.keys.of(plan, http.request, context),
  ): Promise<boolean> {
    const limits: RequestLimits | undefined = plan.policies
      ? await this.policies.limitsOf(plan, http.request, context, keys)
      : { rules: keyedRules(plan, await keys), named: plan.limits as readonly NamedRule[] };
    if (!limits) return this.apply(context, plan, http.response, UNRESOLVED);
    let options = plan.decisionOptions;
    if (plan.costFunction || limits.cost !== undefined) {
      const price = await this.costs.priceOf(plan, http.request, context, limits.rules, limits.cost);
      if (typeof price !== 'number') return this.refuse(context, plan, unpriceablePayload(plan));
      options = { ...options, cost: price };
    }
    const decision = await this.limiter.consumeAll(limits.rules, options);
    return this.apply(context, plan, http.response, decision, limits.named);
  }

  /** The limits of one request exactly as the guard decides them (for `RateLimitUsage`). @internal */
  resolveLimits(
    plan: HandlerPlan,
    request: RateLimitRequest,
    context: ExecutionContext,
  ): Promise<RequestLimits | undefined> {
    return this.policies.limitsOf(plan, request, context, this.keys.of(plan, request, context));
  }

  /** Applies a decision: headers, the shadow report, and the refusal. True when admitted. @internal */
  apply(
    context: ExecutionContext,
    plan: HandlerPlan,
    response: unknown,
    decision: MultiRateLimitDecision,
    named: readonly NamedRule[] = plan.limits as readonly NamedRule[],
  ): boolean {
    const { options } = this.plans;
    if (decision.degraded) {
      // Redis did not decide: no counts to report, and a denial is the server's fault, not the client's.
      if (response !== undefined && options.degradedHeader)
        this.setHeader(response, HEADER.degraded, decision.degraded);
      if (decision.allowed) return true;
      if (response !== undefined) {
        this.setHeader(response, HEADER.retryAfter, String(retryAfterSeconds(decision.retryAfterMs)));
      }
      return this.refuse(context, plan, unavailablePayload(decision));
    }
    if (plan.hasShadow) this.shadowReport.note(plan.route, plan.limits, decision.limits);
    if (response !== undefined) {
      const withShadow = options.shadowHeader && plan.hasShadow === true;
      writeRateLimitHeaders(
        this.writeHeader,
        response,
        options.headers,
        named,
        plan.policyHeader,
        decision,
        withShadow,
      );
    }
    if (decision.allowed) return true;
    const level = options.refusalLogLevel;
    if (level !== 'off') this.logger[level](refusalLine(context, decision, plan));
    return this.refuse(context, plan, tooManyRequestsPayload(decision, plan, named));
  }

  /** The request and response of an HTTP call (Fastify: with the raw request's `user`), else undefined. */
  protected getRequestResponse(context: ExecutionContext): RateLimitHttpContext | undefined {
    if (context.getType() !== 'http') return undefined;
    // switchToHttp() would assign three closures onto the context per call.
    const request = context.getArgByIndex<RateLimitRequest | undefined>(0);
    if (typeof request !== 'object' || request === null) return undefined;
    adoptRawUser(request);
    return { request, response: context.getArgByIndex<unknown>(1) };
  }

  /** The client identity behind the `ip` key part: `req.ip` (from `X-Forwarded-For` only behind a trusted proxy). */
  protected getTracker(request: RateLimitRequest, _context: ExecutionContext): string | undefined {
    return typeof request.ip === 'string' && request.ip.length > 0 ? request.ip : undefined;
  }

  /**
   * The Redis key of one limit for this request, without the prefix: `<name>:{<identity>}` (a hash tag,
   * so one client's limits share a slot). A request with no identity at all is refused.
   */
  protected resolveKey(
    limit: CompiledLimit,
    request: RateLimitRequest,
    context: ExecutionContext,
    plan: HandlerPlan,
  ): string | Promise<string> {
    const identity = this.keys.identityOf(limit, request, context, plan);
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
    return identity === undefined ? this.refuse(context, plan, unidentifiedPayload(plan)) : limitKey(limit, identity);
  }

  /** Refuses the call: over HTTP a 429 (or 503, 400, 403 by `refusal.code`); override for other transports. */
  protected refuse(_context: ExecutionContext, _plan: HandlerPlan, refusal: RateLimitErrorPayload): never {
    throw httpRefusal(refusal, this.plans.options.errorBody);
  }

  /** Writes one header; called only when the call has a response (`getRequestResponse` gave one). */
  protected setHeader(response: unknown, name: string, value: string): void {
    setResponseHeader(response, name, value);
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

  /** Says once per handler that a call went through unlimited (at the second call, once other guards have run). */
  private warnUnsupported(context: ExecutionContext, plan: HandlerPlan): void {
    if (this.warnedUnsupported.has(plan) || limitedOutsideHttp.has(plan)) return;
    if (!this.metUnsupported.has(plan)) {
      this.metUnsupported.add(plan);
      return;
    }
    this.warnedUnsupported.add(plan);
    this.logger.warn(this.describeUnlimited(context, plan));
  }

  /** The warning when a limited handler's calls went through unlimited; override to name a subclass's remedy. */
  protected describeUnlimited(context: ExecutionContext, plan: HandlerPlan): string {
    const type = context.getType();
    const remedy = READY_GUARDS[type] ? `use ${READY_GUARDS[type]}` : 'subclass it and override getRequestResponse';
    return (
      `${plan.route} has rate limits but runs in a "${type}" context, which SlidingLimitGuard does not limit; ` +
      `${remedy} (see docs/nest.md, "GraphQL, WebSockets and other transports")`
    );
  }
}
