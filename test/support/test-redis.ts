import { randomBytes } from 'node:crypto';
import Redis, { RedisOptions } from 'ioredis';

/** URL of the Redis shared by the suite (see global-setup). */
export function sharedRedisUrl(): string {
  const url = process.env.TEST_REDIS_URL;
  if (!url) throw new Error('TEST_REDIS_URL is not set: run the tests through jest (globalSetup starts Redis)');
  return url;
}

/** A client of the shared test Redis; close it in afterAll/afterEach. */
export function connectShared(options: RedisOptions = {}): Redis {
  return new Redis(sharedRedisUrl(), { lazyConnect: false, ...options });
}

/**
 * A client of the shared test Redis for the calling file or describe block: made now without a
 * connection, connected (and ready) in `beforeAll`, quit in `afterAll`. Ready before the first test,
 * so a limiter's first call never meets a connection still being made.
 */
export function useSharedClient(options: RedisOptions = {}): Redis {
  const client = new Redis(sharedRedisUrl(), { ...options, lazyConnect: true });
  beforeAll(() => client.connect());
  afterAll(async () => {
    if (client.status === 'wait') client.disconnect();
    else await client.quit();
  });
  return client;
}

/** Entries of each sorted set (a log window) on the shared server, in the order given. */
export async function windowSizes(keys: readonly string[]): Promise<number[]> {
  const redis = connectShared();
  try {
    return await Promise.all(keys.map((key) => redis.zcard(key)));
  } finally {
    await redis.quit();
  }
}

/** The keys on the shared server that match `pattern` (KEYS), sorted. */
export async function sharedKeys(pattern: string): Promise<string[]> {
  const redis = connectShared();
  try {
    return (await redis.keys(pattern)).sort();
  } finally {
    await redis.quit();
  }
}

/** A key prefix no other test uses, so tests can share one server without touching each other's keys. */
export function uniquePrefix(label = 't'): string {
  return `nsl-test:${label}:${randomBytes(4).toString('hex')}:`;
}

/**
 * A client that keeps reconnecting (every 50 ms) to a server a test stops and starts, and that
 * `disconnect()` closes at once: it waits up to `disconnectTimeout` (2 s by default) for the socket
 * to close, and to a stopped server it has closed already, so the timer would hold jest open.
 */
export function reconnectingClient(url: string): Redis {
  const client = new Redis(url, { retryStrategy: () => 50, disconnectTimeout: 100 });
  client.on('error', () => undefined);
  return client;
}
