import type Redis from 'ioredis';
import { startRedisServer, startRedisServerOnPort, type RedisServer } from './redis-server';
import { reconnectingClient } from './test-redis';
import { waitUntil } from './wait-for';

/** A redis-server of each test's own that the test stops and restarts, and a client that keeps reconnecting to it. */
export interface RestartableRedis {
  /** The server; only inside hooks and tests. */
  server(): RedisServer;
  /** The reconnecting client (see `reconnectingClient`); only inside hooks and tests. */
  client(): Redis;
  /**
   * Stops the server and waits until the client has seen its connection drop: a call made after this
   * fails at once as disconnected, instead of waiting out its timeout on a socket nobody answers.
   */
  stop(): Promise<void>;
  /** Starts an empty server on the same port and waits until the client is ready on it again. */
  restart(): Promise<void>;
}

/**
 * Starts a redis-server and a reconnecting client of it before each test; after each, disconnects
 * the client and stops the server (the restarted one, if the test restarted it).
 */
export function useRestartableRedis(): RestartableRedis {
  let server: RedisServer | undefined;
  let client: Redis | undefined;
  beforeEach(async () => {
    server = await startRedisServer();
    client = reconnectingClient(server.url);
  });
  afterEach(async () => {
    client?.disconnect();
    await server?.stop();
    server = client = undefined;
  });

  const running = () => {
    if (!server || !client)
      throw new Error('the restartable redis-server runs only between its beforeEach and afterEach');
    return { server, client };
  };
  return {
    server: () => running().server,
    client: () => running().client,
    async stop() {
      const { server: stopping, client: connected } = running();
      await stopping.stop();
      await waitUntil(() => connected.status !== 'ready');
    },
    async restart() {
      const { server: stopped, client: reconnecting } = running();
      server = await startRedisServerOnPort(stopped.port);
      await waitUntil(() => reconnecting.status === 'ready');
    },
  };
}
