import { Injectable, Logger, type ExecutionContext } from '@nestjs/common';
import { WsException } from '@nestjs/websockets';
import { requestOfCall } from '../nest/call-request';
import { buildWsRateLimitRequest, type WsRateLimitRequest } from './ws-rate-limit-request';
import {
  SlidingLimitGuard,
  type HandlerPlan,
  type RateLimitErrorPayload,
  type RateLimitHttpContext,
} from 'nestjs-sliding-limit';

/**
 * `SlidingLimitGuard` for WebSocket gateways (socket.io or `ws`), keyed by what {@link WsRateLimitRequest}
 * describes. A refused message throws a `WsException` carrying a {@link RateLimitErrorPayload} (with the
 * message's name as `event`), also the answer to an acknowledgement. Nest applies no global guard to
 * gateways: put `@UseGuards(WsSlidingLimitGuard)` on each. HTTP calls get the plain guard's behaviour.
 */
@Injectable()
export class WsSlidingLimitGuard extends SlidingLimitGuard {
  protected override readonly logger = new Logger('WsSlidingLimitGuard');
  private readonly buildRequest = (context: ExecutionContext) => this.getWsRequest(context);

  protected override getRequestResponse(context: ExecutionContext): RateLimitHttpContext | undefined {
    return requestOfCall(context, 'ws', this.buildRequest) ?? super.getRequestResponse(context);
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

/** Refuses a gateway call: the payload answers its acknowledgement (which would wait forever) and is thrown. */
function refuseMessage(context: ExecutionContext, payload: RateLimitErrorPayload): never {
  const pattern = context.switchToWs().getPattern();
  const refusal: RateLimitErrorPayload = typeof pattern === 'string' ? { ...payload, event: pattern } : payload;
  // A socket.io message's arguments: [client, data, ack, pattern].
  const ack = context.getArgByIndex<unknown>(2);
  if (typeof ack === 'function') (ack as (answer: unknown) => void)(refusal);
  throw new WsException(refusal);
}
