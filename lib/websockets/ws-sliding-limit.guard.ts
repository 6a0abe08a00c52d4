import { Injectable, Logger, type ExecutionContext } from '@nestjs/common';
import { WsException } from '@nestjs/websockets';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { HandlerPlan } from '../nest/limit-plan';
import {
  tooManyRequestsPayload,
  unavailablePayload,
  unidentifiedPayload,
  unpriceablePayload,
} from '../nest/rate-limit-error-payload';
import { SlidingLimitGuard, type RateLimitHttpContext } from '../nest/sliding-limit.guard';
import { buildWsRateLimitRequest, type WsRateLimitRequest } from './ws-rate-limit-request';

/**
 * The request of each gateway call, per argument list: the guard registered globally and the one of
 * `@UseGuards` see the same call through the same arguments, so they share one request and the
 * call is counted once.
 */
const requests = new WeakMap<object, WsRateLimitRequest>();

/**
 * `SlidingLimitGuard` for WebSocket gateways (`@nestjs/websockets`, socket.io or `ws`): enforces
 * `@SlidingLimit` on `@SubscribeMessage` handlers, keyed by the client's handshake address and what
 * {@link WsRateLimitRequest} describes. A refused message throws a `WsException` whose error is a
 * {@link RateLimitErrorPayload} (`code: 'TOO_MANY_REQUESTS'`, `retryAfter`, `retryAfterMs`, `limits`);
 * Nest's exception filter emits it to a socket.io client as an `exception` event.
 *
 * Nest applies no global guard to gateways (neither `APP_GUARD` nor `useGlobalGuards`): put
 * `@UseGuards(WsSlidingLimitGuard)` on each gateway class. The module's global guard, which limits the
 * HTTP routes, is not in the way. HTTP calls that reach this guard get the plain guard's behaviour
 * (headers, 429), so a guard list shared by controllers and gateways works too.
 */
@Injectable()
export class WsSlidingLimitGuard extends SlidingLimitGuard {
  protected override readonly logger = new Logger('WsSlidingLimitGuard');

  protected override getRequestResponse(context: ExecutionContext): RateLimitHttpContext | undefined {
    if (context.getType() !== 'ws') return super.getRequestResponse(context);
    const args = context.getArgs();
    let request = requests.get(args);
    if (request === undefined) {
      request = this.getWsRequest(context);
      requests.set(args, request);
    }
    return { request };
  }

  /**
   * The request of one gateway call (see {@link WsRateLimitRequest}). Override to add what your keys
   * need, or to take `ip` from `X-Forwarded-For` behind a proxy you trust.
   */
  protected getWsRequest(context: ExecutionContext): WsRateLimitRequest {
    return buildWsRateLimitRequest(context);
  }

  protected override throwRateLimited(
    context: ExecutionContext,
    decision: MultiRateLimitDecision,
    plan: HandlerPlan,
  ): never {
    if (context.getType() !== 'ws') return super.throwRateLimited(context, decision, plan);
    this.logRefusal(context, decision, plan);
    throw new WsException(tooManyRequestsPayload(decision, plan));
  }

  protected override throwUnavailable(
    response: unknown,
    decision: MultiRateLimitDecision,
    context?: ExecutionContext,
  ): never {
    if (context?.getType() !== 'ws') return super.throwUnavailable(response, decision, context);
    throw new WsException(unavailablePayload(decision));
  }

  protected override throwUnpriceable(context: ExecutionContext, plan: HandlerPlan, reason: string): never {
    if (context.getType() !== 'ws') return super.throwUnpriceable(context, plan, reason);
    throw new WsException(unpriceablePayload(plan));
  }

  protected override throwUnidentified(context: ExecutionContext, plan: HandlerPlan): never {
    if (context.getType() !== 'ws') return super.throwUnidentified(context, plan);
    throw new WsException(unidentifiedPayload(plan));
  }
}
