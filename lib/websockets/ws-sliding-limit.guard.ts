import { Injectable, Logger, type ExecutionContext } from '@nestjs/common';
import { WsException } from '@nestjs/websockets';
import type { HandlerPlan } from '../nest/limit-plan';
import type { RateLimitErrorPayload } from '../nest/rate-limit-error-payload';
import { SlidingLimitGuard, type RateLimitHttpContext } from '../nest/sliding-limit.guard';
import { buildWsRateLimitRequest, type WsRateLimitRequest } from './ws-rate-limit-request';

/**
 * The request of each gateway call, per argument list: the guard registered globally and the one of
 * `@UseGuards` see the same call through the same arguments, so they share one request, built once.
 */
const requests = new WeakMap<object, WsRateLimitRequest>();

/**
 * `SlidingLimitGuard` for WebSocket gateways (`@nestjs/websockets`, socket.io or `ws`): enforces
 * `@SlidingLimit` on `@SubscribeMessage` handlers, keyed by the client's handshake address and what
 * {@link WsRateLimitRequest} describes. A refused message throws a `WsException` whose error is a
 * {@link RateLimitErrorPayload} (`code: 'TOO_MANY_REQUESTS'`, `retryAfter`, `retryAfterMs`, `limits`,
 * and the message's name as `event`); Nest's exception filter emits it to a socket.io client as an
 * `exception` event, and a message sent with an acknowledgement (`emitWithAck`) gets it as the answer.
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

  /** Over WebSockets, the refusal answers the message (see below); the base guard's elsewhere. */
  protected override refuse(context: ExecutionContext, plan: HandlerPlan, refusal: RateLimitErrorPayload): never {
    if (context.getType() !== 'ws') return super.refuse(context, plan, refusal);
    return refuseMessage(context, refusal);
  }
}

/**
 * Refuses a gateway call: the payload, with the message's name as `event`, answers the message's
 * acknowledgement when the client asked for one (socket.io's `emitWithAck` would otherwise wait
 * forever: the handler that would have answered does not run), and is thrown as a `WsException`,
 * which Nest's filter emits as the `exception` event.
 */
function refuseMessage(context: ExecutionContext, payload: RateLimitErrorPayload): never {
  const pattern = context.switchToWs().getPattern();
  const refusal: RateLimitErrorPayload = typeof pattern === 'string' ? { ...payload, event: pattern } : payload;
  acknowledgementOf(context)?.(refusal);
  throw new WsException(refusal);
}

/**
 * The acknowledgement callback of a socket.io message: the IoAdapter passes it after the data
 * (arguments `[client, data, ack, pattern]`). Absent for `ws` clients and messages sent without one.
 */
function acknowledgementOf(context: ExecutionContext): ((answer: unknown) => void) | undefined {
  const ack = context.getArgByIndex<unknown>(2);
  return typeof ack === 'function' ? (ack as (answer: unknown) => void) : undefined;
}
