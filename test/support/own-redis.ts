import Redis from 'ioredis';
import { startRedisServer, type RedisServer } from './redis-server';

/** A redis-server of the calling file's (or describe block's) own, and its clients. */
export interface OwnRedisServer {
  /** The running server; only inside hooks and tests. */
  server(): RedisServer;
  /** A plain client of the server, disconnected by the helper before the server stops. */
  connect(): Redis;
  /** A client built by `make` from the server's URL, disconnected by the helper before the server stops. */
  connect<T extends Redis>(make: (url: string) => T): T;
  /** Empties the server before each test of the calling block: no keys, no functions. */
  emptyBeforeEach(): void;
}

/**
 * Starts a redis-server in `beforeAll` and, in `afterAll`, disconnects every client made through
 * `connect` and then stops the server. Call it before any hook that uses the server: jest runs both
 * `beforeAll` and `afterAll` hooks in declaration order, so a later `afterAll` finds the server
 * stopped. For tests that flush data or functions, which must never touch the shared server.
 *
 * @param extraArgs more redis-server arguments, e.g. `['--maxmemory', '1mb']`.
 */
export function useOwnRedisServer(extraArgs: string[] = []): OwnRedisServer {
  let running: RedisServer | undefined;
  const clients: Redis[] = [];

  beforeAll(async () => {
    running = await startRedisServer(extraArgs);
  });
  afterAll(async () => {
    for (const client of clients.splice(0)) client.disconnect();
    await running?.stop();
    running = undefined;
  });

  function server(): RedisServer {
    if (!running) throw new Error('the own redis-server runs only between its beforeAll and afterAll');
    return running;
  }
  function connect(): Redis;
  function connect<T extends Redis>(make: (url: string) => T): T;
  function connect(make: (url: string) => Redis = (url) => new Redis(url)): Redis {
    const client = make(server().url);
    clients.push(client);
    return client;
  }
  let admin: Redis | undefined;
  function emptyBeforeEach(): void {
    beforeEach(async () => {
      admin ??= connect();
      await admin.flushall();
      await admin.function('FLUSH');
    });
  }
  return { server, connect, emptyBeforeEach };
}
