import { Injectable, Logger, type ExecutionContext } from '@nestjs/common';
import { RpcException } from '@nestjs/microservices';
import { firstTime, requestOfCall } from '../nest/call-request';
import { isEventCall } from '../nest/refusal-line';
import { buildRpcRateLimitRequest, type RpcRateLimitRequest } from './rpc-rate-limit-request';
import {
  SlidingLimitGuard,
  type HandlerPlan,
  type RateLimitErrorPayload,
  type RateLimitHttpContext,
} from 'nestjs-sliding-limit';

/**
 * `SlidingLimitGuard` for microservices (any transport), keyed by the message (see
 * {@link RpcRateLimitRequest}: no client address, so every limit needs a key such as `'body:tenantId'`).
 * A refused message throws an `RpcException` carrying a {@link RateLimitErrorPayload}; a refused event is
 * dropped. HTTP calls get the plain guard's behaviour, so it can be the one global guard.
 */
@Injectable()
export class RpcSlidingLimitGuard extends SlidingLimitGuard {
  protected override readonly logger = new Logger('RpcSlidingLimitGuard');
  private readonly droppedEvents = new WeakSet<HandlerPlan>();
  private readonly warnedUnidentified = new WeakSet<HandlerPlan>();
  private readonly buildRequest = (context: ExecutionContext) => this.getRpcRequest(context);

  protected override getRequestResponse(context: ExecutionContext): RateLimitHttpContext | undefined {
    return requestOfCall(context, 'rpc', this.buildRequest) ?? super.getRequestResponse(context);
  }

  /** The request of one call (see {@link RpcRateLimitRequest}). Override to add what your keys need. */
  protected getRpcRequest(context: ExecutionContext): RpcRateLimitRequest {
    return buildRpcRateLimitRequest(context);
  }

  /** In a microservice, an `RpcException`; drops and missing identities said once per handler. */
  protected override refuse(context: ExecutionContext, plan: HandlerPlan, refusal: RateLimitErrorPayload): never {
    if (context.getType() !== 'rpc') return super.refuse(context, plan, refusal);
    if (refusal.code === 'TOO_MANY_REQUESTS' && isEventCall(context) && firstTime(this.droppedEvents, plan)) {
      this.logger.warn(
        `${plan.route} drops the events over its rate limit without running; events have no reply, so the sender ` +
          'is not told (said once per handler; set refusals.logLevel to log each drop)',
      );
    }
    if (refusal.code === 'RATE_LIMIT_UNIDENTIFIED' && firstTime(this.warnedUnidentified, plan)) {
      this.logger.warn(
        `${plan.route} refused a call whose rate-limit key did not resolve (said once per handler): a microservice ` +
          "call has no client address, so give each limit a key from the message, e.g. key: 'body:tenantId' or " +
          "key: (req) => req.data.tenantId, or key: 'global' for one bucket shared by all callers",
      );
    }
    throw new RpcException(refusal);
  }
}
