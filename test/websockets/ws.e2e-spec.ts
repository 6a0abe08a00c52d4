import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { WsAdapter } from '@nestjs/platform-ws';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { BareWsGateway, CHAT_REFUSAL, PlainWsGateway, seenRequests } from '../fixtures/transports/chat.gateways';
import { PLATFORMS, stillClock, testRateLimitModule } from '../support/nest-app';

/** A message the server sent: the handler's `{ event: 'reply' }` or the filter's `{ event: 'exception' }`. */
interface ServerMessage {
  event: string;
  data: Record<string, unknown>;
}

describe.each(PLATFORMS)('WsSlidingLimitGuard with ws (@nestjs/platform-ws) on %s', (platform) => {
  let app: INestApplication | undefined;
  const clients: WebSocket[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) client.terminate();
    await app?.close();
    app = undefined;
    seenRequests.length = 0;
  });

  const start = async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [testRateLimitModule({ clock: stillClock })],
      providers: [PlainWsGateway, BareWsGateway],
    }).compile();
    const created = moduleRef.createNestApplication(
      platform === 'fastify' ? new FastifyAdapter() : new ExpressAdapter(),
      {
        logger: false,
      },
    );
    app = created;
    created.useWebSocketAdapter(new WsAdapter(created));
    await created.listen(0, '127.0.0.1');
    return created;
  };

  /** Opens a client whose messages queue up for {@link send}. */
  const connect = async (path = '/', headers: Record<string, string> = {}) => {
    const { port } = (app as INestApplication).getHttpServer().address() as AddressInfo;
    const client = new WebSocket(`ws://127.0.0.1:${port}${path}`, { headers });
    clients.push(client);
    const inbox: ServerMessage[] = [];
    const waiting: Array<(message: ServerMessage) => void> = [];
    client.on('message', (raw: Buffer) => {
      const message = JSON.parse(raw.toString()) as ServerMessage;
      const next = waiting.shift();
      if (next) next(message);
      else inbox.push(message);
    });
    await new Promise<void>((resolve, reject) => {
      client.once('open', resolve);
      client.once('error', reject);
    });
    /** Sends a message and resolves with the next message the server sends back. */
    const send = (event: string, data: unknown): Promise<ServerMessage> => {
      client.send(JSON.stringify({ event, data }));
      const queued = inbox.shift();
      return queued ? Promise.resolve(queued) : new Promise((resolve) => waiting.push(resolve));
    };
    return { client, send };
  };

  it('limits per remote address and sends the rejection to the client with WsClientExceptionFilter', async () => {
    await start();
    const { send } = await connect();
    await expect(send('chat', { text: 'a' })).resolves.toEqual({
      event: 'reply',
      data: { handler: 'chat', data: { text: 'a' } },
    });
    await expect(send('chat', { text: 'b' })).resolves.toHaveProperty('event', 'reply');
    await expect(send('chat', { text: 'c' })).resolves.toEqual({ event: 'exception', data: CHAT_REFUSAL });
    // A second connection from the same address shares the count.
    const other = await connect();
    await expect(other.send('chat', {})).resolves.toHaveProperty('data.code', 'TOO_MANY_REQUESTS');
  });

  it('gives keys the remote address, and the upgrade headers and query kept by rememberUpgradeRequest', async () => {
    await start();
    const { send } = await connect('/?token=t1', { 'x-team': 'blue' });
    await send('inspect', { n: 1 });
    expect(seenRequests).toHaveLength(1);
    const [request] = seenRequests;
    expect(request).toMatchObject({ ip: '127.0.0.1', data: { n: 1 }, body: { n: 1 }, pattern: 'inspect' });
    expect(request.headers).toMatchObject({ 'x-team': 'blue' });
    expect(request.query).toMatchObject({ token: 't1' });

    await expect(send('token', {})).resolves.toHaveProperty('event', 'reply');
    await expect(send('token', {})).resolves.toHaveProperty('data.code', 'TOO_MANY_REQUESTS');
    const otherToken = await connect('/?token=t2', { 'x-team': 'blue' });
    await expect(otherToken.send('token', {})).resolves.toHaveProperty('event', 'reply');
  });

  it('takes the address from the ws socket when the upgrade request was not kept', async () => {
    await start();
    const { send } = await connect('/bare?token=t1', { 'x-team': 'blue' });
    await expect(send('inspect', 1)).resolves.toHaveProperty('event', 'reply');
    expect(seenRequests).toHaveLength(1);
    expect(seenRequests[0]).toMatchObject({ ip: '127.0.0.1', data: 1, pattern: 'inspect' });
    expect(seenRequests[0].headers).toBeUndefined();
    expect(seenRequests[0].query).toBeUndefined();
  });
});
