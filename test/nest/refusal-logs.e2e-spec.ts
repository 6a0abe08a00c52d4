import type { INestApplication } from '@nestjs/common';
import { ClientProxyFactory, Transport, type ClientProxy, type MicroserviceOptions } from '@nestjs/microservices';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import type { Socket } from 'socket.io-client';
import request from 'supertest';
import { RateLimitConfigError, RateLimitModule, type RateLimitModuleOptions } from 'nestjs-sliding-limit';
import { ChatGateway } from '../fixtures/transports/chat.gateways';
import { OrdersController, OrdersHttpController } from '../fixtures/transports/orders.controllers';
import { call, connectSocketIo } from '../fixtures/transports/socket-io-client';
import { freePort } from '../support/free-port';
import { recordLogs } from '../support/recorded-logs';
import { rejectionOf } from '../support/rejection';
import { testRateLimitModule } from '../support/nest-app';
import { uniquePrefix } from '../support/test-redis';

/** A hybrid application: HTTP, socket.io and a TCP microservice, on the module's options. */
async function startApp(options: Partial<RateLimitModuleOptions>) {
  const transport = { transport: Transport.TCP, options: { host: '127.0.0.1', port: await freePort() } } as const;
  const moduleRef = await Test.createTestingModule({
    imports: [testRateLimitModule({ keyPrefix: uniquePrefix('refusal-logs'), ...options })],
    controllers: [OrdersController, OrdersHttpController],
    providers: [ChatGateway],
  }).compile();
  const app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
  app.connectMicroservice<MicroserviceOptions>(transport);
  await app.startAllMicroservices();
  await app.listen(0, '127.0.0.1');
  const client = ClientProxyFactory.create(transport);
  await client.connect();
  return { app, client };
}

describe('refusals over HTTP, WebSockets and microservices', () => {
  let app: INestApplication | undefined;
  let client: ClientProxy | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.disconnect();
    await client?.close();
    await app?.close();
    app = client = undefined;
    jest.restoreAllMocks();
  });

  /** One refusal on each transport: the HTTP route, the socket.io message, the TCP message. */
  const refuseOnEach = async (options: Partial<RateLimitModuleOptions>) => {
    ({ app, client } = await startApp(options));
    const server = app.getHttpServer();
    await request(server).get('/orders').expect(200);
    await request(server).get('/orders').expect(429);

    const socket = await connectSocketIo(app, sockets);
    for (let i = 0; i < 2; i++) await expect(call(socket, 'chat', i)).resolves.toHaveProperty('reply');
    await expect(call(socket, 'chat', 3)).resolves.toHaveProperty('exception.code', 'TOO_MANY_REQUESTS');

    const send = (n: number) => firstValueFrom((client as ClientProxy).send('nsl.order.create', { tenantId: 't', n }));
    await send(1);
    await send(2);
    await expect(send(3)).rejects.toMatchObject({ code: 'TOO_MANY_REQUESTS' });
  };

  it('log nothing by default', async () => {
    const lines = recordLogs();
    await refuseOnEach({});
    expect(lines.filter((line) => line.includes('refused') || line.startsWith('error: '))).toEqual([]);
  });

  it('log one line each at refusals.logLevel, naming the handler, its transport and its full limits', async () => {
    const lines = recordLogs();
    await refuseOnEach({ refusals: { logLevel: 'log' } });
    const refusals = lines.filter((line) => line.includes('refused'));
    expect(refusals).toEqual([
      expect.stringMatching(
        /^log: OrdersHttpController\.list \(http\) refused a call over its rate limit orders-http; retry after (59|60) s$/,
      ),
      expect.stringMatching(
        /^log: ChatGateway\.chat \(ws\) refused a call over its rate limit chat; retry after (59|60) s$/,
      ),
      expect.stringMatching(
        /^log: OrdersController\.create \(rpc\) refused a call over its rate limit orders; retry after (59|60) s$/,
      ),
    ]);
  });

  it('refuse an unknown refusals.logLevel at start-up, naming the levels', async () => {
    const error = await rejectionOf(
      Test.createTestingModule({
        imports: [RateLimitModule.forRoot({ store: 'memory', refusals: { logLevel: 'loud' as never } })],
      }).compile(),
    );
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as Error).message).toContain(
      'refusals.logLevel must be one of off, error, warn, log, debug, verbose, got "loud"',
    );
  });
});
