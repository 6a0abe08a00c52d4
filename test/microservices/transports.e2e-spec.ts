import { Logger } from '@nestjs/common';
import { Transport } from '@nestjs/microservices';
import { firstValueFrom } from 'rxjs';
import request from 'supertest';
import type { RateLimitModuleOptions } from 'nestjs-sliding-limit';
import { OrdersController, OrdersHttpController, receivedEvents } from '../fixtures/transports/orders.controllers';
import { startHybridApp, tcpTransport, type HybridApp, type HybridTransport } from '../support/hybrid-app';
import { stillClock, testRateLimitModule } from '../support/nest-app';
import { sharedRedisUrl, uniquePrefix } from '../support/test-redis';
import { waitUntil } from '../support/wait-for';

const TRANSPORTS: Array<[string, () => Promise<HybridTransport>]> = [
  ['TCP', tcpTransport],
  [
    'Redis',
    async () => {
      const url = new URL(sharedRedisUrl());
      return { transport: Transport.REDIS, options: { host: url.hostname, port: Number(url.port) } };
    },
  ],
];

describe.each(TRANSPORTS)('RpcSlidingLimitGuard over the %s transport', (_name, transportOptions) => {
  let hybrid: HybridApp | undefined;

  afterEach(async () => {
    await hybrid?.close();
    hybrid = undefined;
    receivedEvents.length = 0;
    jest.restoreAllMocks();
  });

  /** A hybrid application: HTTP on a free port plus the microservice on the transport. */
  const start = async (options: Partial<RateLimitModuleOptions> = {}) => {
    hybrid = await startHybridApp({
      imports: [
        testRateLimitModule({
          keyPrefix: uniquePrefix('rpc'),
          functionName: 'sliding_allow_v2',
          clock: stillClock,
          ...options,
        }),
      ],
      controllers: [OrdersController, OrdersHttpController],
      transport: await transportOptions(),
    });
    return hybrid;
  };

  const send = (pattern: unknown, data: unknown) => (hybrid as HybridApp).send(pattern, data);

  it('limits a message per key from its data, and the sender gets the error object', async () => {
    await start();
    await expect(send('nsl.order.create', { tenantId: 't1', n: 1 })).resolves.toEqual({
      created: { tenantId: 't1', n: 1 },
    });
    await send('nsl.order.create', { tenantId: 't1', n: 2 });
    const error: unknown = await send('nsl.order.create', { tenantId: 't1', n: 3 }).catch((caught: unknown) => caught);
    expect(error).toEqual({
      status: 429,
      code: 'TOO_MANY_REQUESTS',
      message: 'Too Many Requests',
      retryAfter: 60,
      retryAfterMs: expect.any(Number),
      limits: ['orders'],
      policy: '"orders";q=2;w=60',
    });
    await expect(send('nsl.order.create', { tenantId: 't2' })).resolves.toHaveProperty('created');
  });

  it('refuses a message whose key does not resolve instead of counting every caller together', async () => {
    await start();
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const refusal = {
      status: 403,
      code: 'RATE_LIMIT_UNIDENTIFIED',
      message: 'Rate limit of OrdersController.keyless cannot identify the client',
    };
    await expect(send('nsl.order.keyless', { tenantId: 't1' })).rejects.toEqual(refusal);
    await expect(send('nsl.order.keyless', {})).rejects.toEqual(refusal);
    // body:tenantId with no tenantId has no client address to fall back to either.
    await expect(send('nsl.order.create', { n: 1 })).rejects.toHaveProperty('code', 'RATE_LIMIT_UNIDENTIFIED');
    const lines = warn.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('did not resolve'));
    expect(lines).toHaveLength(2); // once per handler
    expect(lines[0]).toContain('OrdersController.keyless refused a call whose rate-limit key did not resolve');
    expect(lines[0]).toContain("key: 'body:tenantId'");
  });

  it('decides stacked limits together, priced from the message', async () => {
    await start();
    const quote = { cmd: 'nsl.order.quote' };
    await expect(send(quote, { tenantId: 't1', items: 2 })).resolves.toHaveProperty('quoted'); // burst 2/3, day 2/4
    await expect(send(quote, { tenantId: 't1', items: 2 })).rejects.toHaveProperty('limits', ['quote-burst']);
    await expect(send(quote, { tenantId: 't1', items: 1 })).resolves.toHaveProperty('quoted'); // burst 3/3, day 3/4
    await expect(send(quote, { tenantId: 't1', items: 'x' })).rejects.toEqual({
      status: 400,
      code: 'RATE_LIMIT_UNPRICEABLE',
      message: 'Rate limit of OrdersController.quote cannot price this request',
    });
    await expect(send(quote, { tenantId: 't2', items: 1 })).resolves.toHaveProperty('quoted');
  });

  it('lets @SkipRateLimit handlers through', async () => {
    await start();
    for (let i = 0; i < 3; i++) await expect(send('nsl.order.free', {})).resolves.toBe('free');
  });

  it('drops an event over its limit without running the handler, says so once per handler, logs each at refusals.logLevel', async () => {
    await start({ refusals: { logLevel: 'debug' } });
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const debug = jest.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
    const emit = (data: unknown) => firstValueFrom((hybrid as HybridApp).client.emit('nsl.order.created', data));
    await emit({ tenantId: 't1', n: 1 });
    await waitUntil(() => receivedEvents.length === 1);
    await emit({ tenantId: 't1', n: 2 });
    await emit({ tenantId: 't1', n: 3 });
    await emit({ tenantId: 't2', n: 4 });
    const drops = () =>
      debug.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('dropped an event'));
    await waitUntil(() => receivedEvents.length === 2);
    await waitUntil(() => drops().length === 2); // n: 2 and n: 3
    expect(receivedEvents).toEqual([
      { tenantId: 't1', n: 1 },
      { tenantId: 't2', n: 4 },
    ]);
    const warned = warn.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('drops the events'));
    expect(warned).toEqual([
      'OrdersController.created drops the events over its rate limit without running; events have no reply, so ' +
        'the sender is not told (said once per handler; set refusals.logLevel to log each drop)',
    ]);
    expect(drops()).toEqual(
      Array(2).fill(
        expect.stringMatching(/^OrdersController\.created \(rpc\) dropped an event over its rate limit order-events;/),
      ),
    );
  });

  it("leaves the HTTP routes of a hybrid application to the module's global guard", async () => {
    const { app } = await start();
    const server = app.getHttpServer();
    const first = await request(server).get('/orders').expect(200);
    expect(first.headers['x-ratelimit-remaining']).toBe('0');
    const rejected = await request(server).get('/orders').expect(429);
    expect(rejected.headers['retry-after']).toBe('60');
  });
});
