import type { Socket } from 'socket.io-client';
import { CHAT_REFUSAL, ChatGateway, seenRequests } from '../fixtures/transports/chat.gateways';
import { call, connectSocketIo, type ConnectOptions } from '../fixtures/transports/socket-io-client';
import { PLATFORMS, stillClock, useTestApps, type TestApp } from '../support/nest-app';
import { sharedKeys } from '../support/test-redis';

describe.each(PLATFORMS)('WsSlidingLimitGuard with socket.io on %s', (platform) => {
  let app: TestApp;
  const sockets: Socket[] = [];
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.disconnect();
    seenRequests.length = 0;
  });
  const startApp = useTestApps();

  const start = async () => {
    app = await startApp({
      platform,
      providers: [ChatGateway],
      options: { functionName: 'sliding_allow_v2', clock: stillClock },
    });
    return app;
  };

  const connect = (options?: ConnectOptions) => connectSocketIo(app.app, sockets, options);

  it('limits a message per handshake address and tells the client through an exception event', async () => {
    const { keyPrefix } = await start();
    const socket = await connect();
    await expect(call(socket, 'chat', { text: 'a' })).resolves.toEqual({
      reply: { handler: 'chat', data: { text: 'a' } },
    });
    await expect(call(socket, 'chat', { text: 'b' })).resolves.toHaveProperty('reply');
    const rejected = await call(socket, 'chat', { text: 'c' });
    expect(rejected).toEqual({ exception: CHAT_REFUSAL });
    const { retryAfterMs } = (rejected as { exception: { retryAfterMs: number } }).exception;
    // Until the first message leaves the minute's window: nearly all of it, however slow a loaded host is.
    expect(retryAfterMs).toBeGreaterThan(50_000);
    expect(retryAfterMs).toBeLessThanOrEqual(60_000);

    // Another connection from the same address shares the count: the key is the handshake address.
    const other = await connect();
    await expect(call(other, 'chat', { text: 'd' })).resolves.toHaveProperty('exception.code', 'TOO_MANY_REQUESTS');
    expect(await sharedKeys(`${keyPrefix}chat:*`)).toEqual([`${keyPrefix}chat:{ip:127.0.0.1}`]);
  });

  it('gives keys the handshake address, headers and query, the message data and name, and the socket', async () => {
    await start();
    const socket = await connect({ query: { token: 't1' }, headers: { 'x-team': 'blue' } });
    await call(socket, 'inspect', { n: 1 });
    expect(seenRequests).toHaveLength(1);
    const [request] = seenRequests;
    expect(request).toMatchObject({ ip: '127.0.0.1', data: { n: 1 }, body: { n: 1 }, pattern: 'inspect' });
    expect(request.headers).toMatchObject({ 'x-team': 'blue' });
    expect(request.query).toMatchObject({ token: 't1' });
    expect((request.client as { id?: unknown }).id).toBe(socket.id);
  });

  it('keys by the message data and by handshake query and headers', async () => {
    await start();
    const socket = await connect({ query: { token: 't1' }, headers: { 'x-team': 'blue' } });
    await expect(call(socket, 'room', { room: 'r1' })).resolves.toHaveProperty('reply');
    await expect(call(socket, 'room', { room: 'r1' })).resolves.toHaveProperty('exception.code', 'TOO_MANY_REQUESTS');
    await expect(call(socket, 'room', { room: 'r2' })).resolves.toHaveProperty('reply');

    await expect(call(socket, 'token', {})).resolves.toHaveProperty('reply');
    await expect(call(socket, 'token', {})).resolves.toHaveProperty('exception.code', 'TOO_MANY_REQUESTS');
    const otherToken = await connect({ query: { token: 't2' }, headers: { 'x-team': 'blue' } });
    await expect(call(otherToken, 'token', {})).resolves.toHaveProperty('reply');
    const otherTeam = await connect({ query: { token: 't1' }, headers: { 'x-team': 'red' } });
    await expect(call(otherTeam, 'token', {})).resolves.toHaveProperty('reply');
  });

  it('keys by the user an auth middleware put on socket.data, and by address without one', async () => {
    const { keyPrefix } = await start();
    const alice = await connect({ auth: { userId: 'alice' } });
    await expect(call(alice, 'mine', 1)).resolves.toHaveProperty('reply');
    await expect(call(alice, 'mine', 2)).resolves.toHaveProperty('exception.code', 'TOO_MANY_REQUESTS');
    const bob = await connect({ auth: { userId: 'bob' } });
    await expect(call(bob, 'mine', 1)).resolves.toHaveProperty('reply');
    const anonymous = await connect();
    await expect(call(anonymous, 'mine', 1)).resolves.toHaveProperty('reply');
    expect(await sharedKeys(`${keyPrefix}mine:*`)).toEqual([
      `${keyPrefix}mine:{no-user:ip:127.0.0.1}`,
      `${keyPrefix}mine:{user:alice}`,
      `${keyPrefix}mine:{user:bob}`,
    ]);
  });

  it('decides stacked limits together and charges a cost, fixed or priced from the message', async () => {
    await start();
    const socket = await connect();
    await expect(call(socket, 'stacked', 1)).resolves.toHaveProperty('reply');
    await expect(call(socket, 'stacked', 2)).resolves.toHaveProperty('reply');
    await expect(call(socket, 'stacked', 3)).resolves.toHaveProperty('exception.limits', ['burst']);

    await expect(call(socket, 'heavy', 1)).resolves.toHaveProperty('reply'); // 2 of 3
    await expect(call(socket, 'heavy', 2)).resolves.toHaveProperty('exception.limits', ['heavy']);

    await expect(call(socket, 'priced', { items: 4 })).resolves.toHaveProperty('reply'); // 4 of 5
    await expect(call(socket, 'priced', { items: 2 })).resolves.toHaveProperty('exception.code', 'TOO_MANY_REQUESTS');
    await expect(call(socket, 'priced', { items: 1 })).resolves.toHaveProperty('reply');
    await expect(call(socket, 'priced', {})).resolves.toEqual({
      exception: {
        status: 400,
        code: 'RATE_LIMIT_UNPRICEABLE',
        message: 'Rate limit of ChatGateway.priced cannot price this request',
        event: 'priced',
      },
    });
  });

  it('answers a refused message’s ack with the error, naming the event, so emitWithAck does not hang', async () => {
    await start();
    const socket = await connect();
    // A timeout far above a round trip, even on a loaded host: without an answer, emitWithAck would wait forever.
    const emitWithAck = (data: unknown) => socket.timeout(10_000).emitWithAck('chat', data);
    await expect(emitWithAck(1)).resolves.toEqual({ handler: 'chat', data: 1 });
    await expect(emitWithAck(2)).resolves.toEqual({ handler: 'chat', data: 2 });
    const exception = new Promise((resolve) => socket.once('exception', resolve));
    await expect(emitWithAck(3)).resolves.toEqual(CHAT_REFUSAL);
    // The exception event says the same, with the event it answers.
    await expect(exception).resolves.toEqual(CHAT_REFUSAL);
  });

  it('lets @SkipRateLimit handlers through', async () => {
    await start();
    const socket = await connect();
    for (let i = 0; i < 3; i++) await expect(call(socket, 'free', i)).resolves.toHaveProperty('reply');
  });
});
