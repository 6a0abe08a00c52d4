import { Injectable, Logger, type ExecutionContext } from '@nestjs/common';
import { RpcException } from '@nestjs/microservices';
import type { HandlerPlan } from '../nest/limit-plan';
import type { RateLimitErrorPayload } from '../nest/rate-limit-error-payload';
import { isEventCall } from '../nest/refusal-line';
import { SlidingLimitGuard, type RateLimitHttpContext } from '../nest/sliding-limit.guard';
import { buildRpcRateLimitRequest, type RpcRateLimitRequest } from './rpc-rate-limit-request';

/**
 * The request of each call, per argument list: the global guard and the one of `@UseGuards` see the
 * same call through the same arguments, so they share one request, built once.
 */
const requests = new WeakMap<object, RpcRateLimitRequest>();

/**
 * `SlidingLimitGuard` for microservices (`@nestjs/microservices`, any transport): enforces
 * `@SlidingLimit` on `@MessagePattern` and `@EventPattern` handlers, keyed by the message's data (see
 * {@link RpcRateLimitRequest}: there is no client address, so every limit needs a key such as
 * `'body:tenantId'`). A refused call throws an `RpcException` whose error is a
 * {@link RateLimitErrorPayload} (`code: 'TOO_MANY_REQUESTS'`, `retryAfter`, `retryAfterMs`, `limits`).
 *
 * A message's sender receives that object as the error of `client.send()`. An event has no reply:
 * a refused event is dropped (its handler does not run) and the sender is not told; the guard says
 * so once per handler, as a warning, and logs each drop at the module's `refusalLogLevel`.
 *
 * HTTP calls get the plain guard's behaviour (headers, 429), so it can be the one global guard:
 * `{ provide: APP_GUARD, useClass: RpcSlidingLimitGuard }` with the module's `global: false`. Or keep
 * `global: true` and add `@UseGuards(RpcSlidingLimitGuard)` to the microservice controllers; the global
 * guard then leaves their handlers to it. A hybrid application's microservice gets global guards only
 * when connected with `connectMicroservice(options, { inheritAppConfig: true })`.
 */
@Injectable()
export class RpcSlidingLimitGuard extends SlidingLimitGuard {
  protected override readonly logger = new Logger('RpcSlidingLimitGuard');
  private readonly droppedEvents = new WeakSet<HandlerPlan>();
  private readonly warnedUnidentified = new WeakSet<HandlerPlan>();

  protected override getRequestResponse(context: ExecutionContext): RateLimitHttpContext | undefined {
    if (context.getType() !== 'rpc') return super.getRequestResponse(context);
    const args = context.getArgs();
    let request = requests.get(args);
    if (request === undefined) {
      request = this.getRpcRequest(context);
      requests.set(args, request);
    }
    return { request };
  }

  /** The request of one call (see {@link RpcRateLimitRequest}). Override to add what your keys need. */
  protected getRpcRequest(context: ExecutionContext): RpcRateLimitRequest {
    return buildRpcRateLimitRequest(context);
  }

  /**
   * In a microservice, an `RpcException` carrying the refusal; an event refused is dropped (said once
   * per handler), a call without an identity is said once per handler with the keys that would give
   * one. The base guard's elsewhere.
   */
  protected override refuse(context: ExecutionContext, plan: HandlerPlan, refusal: RateLimitErrorPayload): never {
    if (context.getType() !== 'rpc') return super.refuse(context, plan, refusal);
    if (refusal.code === 'TOO_MANY_REQUESTS' && isEventCall(context)) this.warnDroppedEvents(plan);
    if (refusal.code === 'RATE_LIMIT_UNIDENTIFIED') this.warnUnidentified(plan);
    throw new RpcException(refusal);
  }

  /** Says once per handler that a call had no identity, and the keys that would give one. */
  private warnUnidentified(plan: HandlerPlan): void {
    if (this.warnedUnidentified.has(plan)) return;
    this.warnedUnidentified.add(plan);
    this.logger.warn(
      `${plan.route} refused a call whose rate-limit key did not resolve (said once per handler): a microservice ` +
        "call has no client address, so give each limit a key from the message, e.g. key: 'body:tenantId' or " +
        "key: (req) => req.data.tenantId, or key: 'global' for one bucket shared by all callers",
    );
  }

  /**
   * Says once per handler that its refused events are dropped unseen by their senders: a fact of the
   * setup worth knowing. Each drop itself is a refusal, logged only at `refusalLogLevel`.
   */
  private warnDroppedEvents(plan: HandlerPlan): void {
    if (this.droppedEvents.has(plan)) return;
    this.droppedEvents.add(plan);
    this.logger.warn(
      `${plan.route} drops the events over its rate limit without running; events have no reply, so the sender ` +
        'is not told (said once per handler; set refusalLogLevel to log each drop)',
    );
  }
}
