import { Logger, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { WsException } from '@nestjs/websockets';
import { RpcException } from '@nestjs/microservices';
import type { Socket } from 'socket.io-client';
import request from 'supertest';
import {
  RateLimitConfigError,
  SlidingLimitGuard,
  SlidingLimitPlans,
  SlidingWindowLimiter,
  type MultiRateLimitDecision,
  type RateLimitModuleOptions,
} from 'nestjs-sliding-limit';
import { RpcSlidingLimitGuard } from 'nestjs-sliding-limit/microservices';
import { WsSlidingLimitGuard } from 'nestjs-sliding-limit/websockets';
import { ChatGateway } from '../fixtures/transports/chat.gateways';
import { OrdersController, OrdersHttpController } from '../fixtures/transports/orders.controllers';
import { call, connectSocketIo } from '../fixtures/transports/socket-io-client';
import {
  BadGateway,
  BothGuardsGateway,
  PlainGuardedGateway,
  UnguardedGateway,
  UnguardedOrdersController,
} from '../fixtures/transports/unguarded';
import { startHybridApp, type HybridApp } from '../support/hybrid-app';
import { PLATFORMS, startTestApp, stillClock, testRateLimitModule, type TestApp } from '../support/nest-app';
import { uniquePrefix } from '../support/test-redis';
import { answerEveryDecision, countDecisions } from '../support/decisions';

/** The warnings the plain guard gave about handlers it let through unlimited. */
function unlimitedWarnings(warn: jest.SpyInstance): string[] {
  return warn.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('has rate limits but runs in'));
}

const moduleOptions = (options: Partial<RateLimitModuleOptions> = {}) =>
  testRateLimitModule({
    keyPrefix: uniquePrefix('non-http'),
    functionName: 'sliding_allow_v2',
    clock: stillClock,
    ...options,
  });

describe('the guards outside HTTP, called directly', () => {
  const rpcContext = (handler: (...args: never[]) => unknown, data: unknown): ExecutionContext => {
    const host = new ExecutionContextHost([data, {}], OrdersController, handler);
    host.setType('rpc');
    return host;
  };
  const wsContext = (handler: (...args: never[]) => unknown, data: unknown): ExecutionContext => {
    const client = { handshake: { address: '10.0.0.1', headers: {} } };
    const host = new ExecutionContextHost([client, data, 'chat'], ChatGateway, handler);
    host.setType('ws');
    return host;
  };

  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
    jest.restoreAllMocks();
  });

  const compile = async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [moduleOptions()],
      providers: [OrdersController, ChatGateway],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    close = () => moduleRef.close();
    return moduleRef;
  };

  it('the plain guard lets an rpc call through; the ready guard limits it by the key from its data', async () => {
    const moduleRef = await compile();
    const create = OrdersController.prototype.create;
    const base = moduleRef.get(SlidingLimitGuard);
    for (let i = 0; i < 3; i++)
      await expect(base.canActivate(rpcContext(create, { tenantId: 'a' }))).resolves.toBe(true);

    const rpc = new RpcSlidingLimitGuard(moduleRef.get(SlidingWindowLimiter), moduleRef.get(SlidingLimitPlans));
    await expect(rpc.canActivate(rpcContext(create, { tenantId: 'a' }))).resolves.toBe(true);
    await expect(rpc.canActivate(rpcContext(create, { tenantId: 'a' }))).resolves.toBe(true);
    await expect(rpc.canActivate(rpcContext(create, { tenantId: 'a' }))).rejects.toBeInstanceOf(RpcException);
    await expect(rpc.canActivate(rpcContext(create, { tenantId: 'b' }))).resolves.toBe(true);
  });

  it('counts a call once when a global and a handler guard both see it', async () => {
    const moduleRef = await compile();
    const limiter = moduleRef.get(SlidingWindowLimiter);
    const plans = moduleRef.get(SlidingLimitPlans);
    const decisions = countDecisions(limiter);
    const context = rpcContext(OrdersController.prototype.create, { tenantId: 'once' });
    await new RpcSlidingLimitGuard(limiter, plans).canActivate(context);
    await new RpcSlidingLimitGuard(limiter, plans).canActivate(context);
    expect(decisions.count).toBe(1);

    const wsCall = wsContext(ChatGateway.prototype.chat, { text: 'once' });
    await new WsSlidingLimitGuard(limiter, plans).canActivate(wsCall);
    await new WsSlidingLimitGuard(limiter, plans).canActivate(wsCall);
    expect(decisions.count).toBe(2);
  });

  it('answers a degraded denial with RATE_LIMIT_UNAVAILABLE and a retry time, on WS and RPC', async () => {
    const moduleRef = await compile();
    const denied: MultiRateLimitDecision = {
      allowed: false,
      degraded: 'deny',
      retryAfterMs: 1500,
      functionName: 'sliding_allow_v2',
      limits: [],
    };
    const limiter = moduleRef.get(SlidingWindowLimiter);
    answerEveryDecision(limiter, denied);
    const plans = moduleRef.get(SlidingLimitPlans);
    const unavailable = {
      status: 503,
      code: 'RATE_LIMIT_UNAVAILABLE',
      message: 'Rate limiting is unavailable; retry shortly',
      retryAfter: 2,
      retryAfterMs: 1500,
    };

    const ws = new WsSlidingLimitGuard(limiter, plans).canActivate(wsContext(ChatGateway.prototype.chat, {}));
    const wsError = await ws.catch((error: unknown) => error);
    expect(wsError).toBeInstanceOf(WsException);
    expect((wsError as WsException).getError()).toEqual({ ...unavailable, event: 'chat' });

    const rpc = new RpcSlidingLimitGuard(limiter, plans).canActivate(
      rpcContext(OrdersController.prototype.create, { tenantId: 'a' }),
    );
    const rpcError = await rpc.catch((error: unknown) => error);
    expect(rpcError).toBeInstanceOf(RpcException);
    expect((rpcError as RpcException).getError()).toEqual(unavailable);
  });
});

describe('the global guard beside WsSlidingLimitGuard (socket.io)', () => {
  let app: INestApplication | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.disconnect();
    await app?.close();
    app = undefined;
    jest.restoreAllMocks();
  });

  const start = async (providers: Parameters<typeof Test.createTestingModule>[0]['providers']) => {
    const moduleRef = await Test.createTestingModule({ imports: [moduleOptions()], providers }).compile();
    app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    return connectSocketIo(app, sockets);
  };

  it('warns once, on the second call, about a gateway handler only the plain guard sees', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const socket = await start([PlainGuardedGateway]);
    await expect(call(socket, 'say', 1)).resolves.toEqual({ reply: { said: 1 } });
    expect(unlimitedWarnings(warn)).toEqual([]);
    for (let i = 2; i <= 4; i++) await expect(call(socket, 'say', i)).resolves.toHaveProperty('reply');
    expect(unlimitedWarnings(warn)).toEqual([
      'PlainGuardedGateway.say has rate limits but runs in a "ws" context, which SlidingLimitGuard does not limit; ' +
        'use WsSlidingLimitGuard (entry point nestjs-sliding-limit/websockets) ' +
        '(see docs/nest.md, "GraphQL, WebSockets and other transports")',
    ]);
  });

  it.each([
    ['@UseGuards(WsSlidingLimitGuard)', ChatGateway, 'chat'],
    ['@UseGuards(SlidingLimitGuard, WsSlidingLimitGuard)', BothGuardsGateway, 'say'],
  ])('stays quiet about a gateway limited with %s, and counts each message once', async (_label, gateway, event) => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const socket = await start([gateway]);
    await expect(call(socket, event, 1)).resolves.toHaveProperty('reply');
    await expect(call(socket, event, 2)).resolves.toHaveProperty('reply');
    await expect(call(socket, event, 3)).resolves.toHaveProperty('exception', {
      status: 429,
      code: 'TOO_MANY_REQUESTS',
      message: 'Too Many Requests',
      retryAfter: 60,
      retryAfterMs: expect.any(Number),
      limits: [event],
      policy: `"${event}";q=2;w=60`,
      event,
    });
    await expect(call(socket, event, 4)).resolves.toHaveProperty('exception.code', 'TOO_MANY_REQUESTS');
    expect(unlimitedWarnings(warn)).toEqual([]);
  });

  it('is not reached by global guards (Nest applies none to gateways): gateways need @UseGuards', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const socket = await start([UnguardedGateway, { provide: APP_GUARD, useClass: WsSlidingLimitGuard }]);
    for (let i = 1; i <= 4; i++) await expect(call(socket, 'say', i)).resolves.toEqual({ reply: { said: i } });
    expect(unlimitedWarnings(warn)).toEqual([]);
    // Which start-up says, naming the gateway.
    expect(warn.mock.calls.map(([line]) => String(line))).toContain(
      'UnguardedGateway.say has @SlidingLimit, but no SlidingLimitGuard runs for it, so it is not limited: Nest ' +
        'runs no global guard for WebSocket gateways; add @UseGuards(WsSlidingLimitGuard) to the gateway ' +
        '(see docs/websockets-and-microservices.md)',
    );
  });

  it('fails at bootstrap on bad @SlidingLimit arguments of a gateway, naming Gateway.method', async () => {
    const error: unknown = await start([BadGateway]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RateLimitConfigError);
    const message = (error as Error).message;
    expect(message).toContain('BadGateway.zero: ');
    expect(message).toContain('BadGateway.key: ');
  });
});

describe('the global guard beside RpcSlidingLimitGuard (hybrid application, TCP)', () => {
  let hybrid: HybridApp | undefined;
  afterEach(async () => {
    await hybrid?.close();
    hybrid = undefined;
    jest.restoreAllMocks();
  });

  const start = async (options: {
    global?: boolean;
    appGuard?: boolean;
    controllers: Array<typeof OrdersController | typeof UnguardedOrdersController>;
  }) => {
    hybrid = await startHybridApp({
      imports: [moduleOptions({ global: options.global ?? true })],
      controllers: options.controllers,
      providers: options.appGuard ? [{ provide: APP_GUARD, useClass: RpcSlidingLimitGuard }] : [],
      inheritAppConfig: true,
    });
    return hybrid;
  };

  it('warns once, on the second call, about a message handler no guard limits', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { send } = await start({ controllers: [UnguardedOrdersController] });
    await send('nsl.unguarded.create', { tenantId: 't1' });
    expect(unlimitedWarnings(warn)).toEqual([]);
    for (let i = 0; i < 3; i++) await send('nsl.unguarded.create', { tenantId: 't1' });
    expect(unlimitedWarnings(warn)).toEqual([
      'UnguardedOrdersController.create has rate limits but runs in a "rpc" context, which SlidingLimitGuard does ' +
        'not limit; use RpcSlidingLimitGuard (entry point nestjs-sliding-limit/microservices) ' +
        '(see docs/nest.md, "GraphQL, WebSockets and other transports")',
    ]);
  });

  it('stays quiet about handlers limited with @UseGuards(RpcSlidingLimitGuard)', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { send } = await start({ controllers: [OrdersController] });
    await send('nsl.order.create', { tenantId: 't1' });
    await send('nsl.order.create', { tenantId: 't1' });
    await expect(send('nsl.order.create', { tenantId: 't1' })).rejects.toHaveProperty('code', 'TOO_MANY_REQUESTS');
    await expect(send('nsl.order.create', { tenantId: 't1' })).rejects.toHaveProperty('code', 'TOO_MANY_REQUESTS');
    expect(unlimitedWarnings(warn)).toEqual([]);
  });

  it.each([false, true])(
    'as APP_GUARD (module global: %s) limits messages and keeps the HTTP headers and 429',
    async (global) => {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const { app, send } = await start({ global, appGuard: true, controllers: [UnguardedOrdersController] });
      await send('nsl.unguarded.create', { tenantId: 't1' });
      await send('nsl.unguarded.create', { tenantId: 't1' });
      await expect(send('nsl.unguarded.create', { tenantId: 't1' })).rejects.toMatchObject({
        status: 429,
        code: 'TOO_MANY_REQUESTS',
        limits: ['unguarded-orders'],
      });
      const server = app.getHttpServer();
      const first = await request(server).get('/unguarded').expect(200);
      expect(first.headers['x-ratelimit-remaining']).toBe('0');
      const rejected = await request(server).get('/unguarded').expect(429);
      expect(rejected.headers['retry-after']).toBe('60');
      expect(unlimitedWarnings(warn)).toEqual([]);
    },
  );
});

describe.each(PLATFORMS)('the ready guards on HTTP routes (%s)', (platform) => {
  let app: TestApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it.each([
    ['WsSlidingLimitGuard', WsSlidingLimitGuard],
    ['RpcSlidingLimitGuard', RpcSlidingLimitGuard],
  ])(
    '%s as the one APP_GUARD answers like the plain guard: headers, then 429 with Retry-After',
    async (_name, guard) => {
      app = await startTestApp({
        platform,
        controllers: [OrdersHttpController],
        providers: [{ provide: APP_GUARD, useClass: guard }],
        options: { global: false, clock: stillClock },
      });
      const first = await app.http().get('/orders').expect(200);
      expect(first.headers['x-ratelimit-limit']).toBe('1');
      expect(first.headers['x-ratelimit-remaining']).toBe('0');
      const rejected = await app.http().get('/orders').expect(429);
      expect(rejected.headers['retry-after']).toBe('60');
      expect(rejected.body).toEqual({ statusCode: 429, message: 'Too Many Requests', error: 'Too Many Requests' });
    },
  );
});
