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

/** A key prefix no other test uses, so tests can share one server without touching each other's keys. */
export function uniquePrefix(label = 't'): string {
  return `nsl-test:${label}:${randomBytes(4).toString('hex')}:`;
}
