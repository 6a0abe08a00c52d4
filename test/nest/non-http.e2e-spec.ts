import type { ExecutionContext } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { Test } from '@nestjs/testing';
import {
  RateLimitModule,
  SlidingLimitGuard,
  SlidingLimitPlans,
  SlidingWindowLimiter,
  TooManyRequestsException,
  type RateLimitHttpContext,
} from 'nestjs-sliding-limit';
import { PingHandler } from '../fixtures/guards/guarded.controllers';
import { sharedRedisUrl, uniquePrefix } from '../support/test-redis';

/** A microservice-style guard: the client id travels in the message payload. */
class RpcSlidingLimitGuard extends SlidingLimitGuard {
  protected override getRequestResponse(context: ExecutionContext): RateLimitHttpContext | undefined {
    const data = context.switchToRpc().getData<{ clientId: string }>();
    return { request: { ip: data.clientId } };
  }
}

describe('guard outside HTTP', () => {
  const rpcContext = (payload: unknown): ExecutionContext => {
    const host = new ExecutionContextHost([payload, {}], PingHandler, PingHandler.prototype.ping);
    host.setType('rpc');
    return host;
  };

  it('never crashes without a response, and a subclass limits by its own identity', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: sharedRedisUrl(), keyPrefix: uniquePrefix('rpc') })],
      providers: [PingHandler],
    }).compile();
    moduleRef.useLogger(false);
    const app = moduleRef;
    await app.init();
    try {
      const base = app.get(SlidingLimitGuard);
      for (let i = 0; i < 3; i++) await expect(base.canActivate(rpcContext({ clientId: 'a' }))).resolves.toBe(true);

      const rpc = new RpcSlidingLimitGuard(app.get(SlidingWindowLimiter), app.get(SlidingLimitPlans));
      await expect(rpc.canActivate(rpcContext({ clientId: 'a' }))).resolves.toBe(true);
      await expect(rpc.canActivate(rpcContext({ clientId: 'a' }))).rejects.toBeInstanceOf(TooManyRequestsException);
      await expect(rpc.canActivate(rpcContext({ clientId: 'b' }))).resolves.toBe(true);
    } finally {
      await app.close();
    }
  });
});
