import { Logger } from '@nestjs/common';
import Redis from 'ioredis';
import type { RedisConnection } from '../core/redis-connection';
import { closeConnection } from '../redis/close-connection';
import type { ResolvedRateLimitOptions } from './rate-limit.options';

/** The limiter's connection, and whether the module opened it (and so must close it). */
export interface RateLimitConnection {
  /** Undefined when decisions run in a `backend` (RateLimitTestingModule) rather than on Redis. */
  readonly client?: RedisConnection;
  readonly owned: boolean;
}

/** The user's client as is, or one opened from `redis` lazily (on `init()`), so an early error leaves no socket. */
export function createRateLimitConnection(options: ResolvedRateLimitOptions): RateLimitConnection {
  if (options.client) return { client: options.client, owned: false };
  if (options.backend) return { owned: false };
  const redis = options.redis ?? {};
  // No auto-pipelining: the limiter batches its own decisions, and a pipeline on top only costs CPU.
  // Options given by the user win.
  const defaults = { enableAutoPipelining: false, retryStrategy: reconnectDelayMs };
  const client =
    typeof redis === 'string'
      ? new Redis(redis, { ...defaults, lazyConnect: true })
      : new Redis({ ...defaults, ...redis, lazyConnect: true });
  const logger = new Logger('RateLimitModule');
  let reported = false;
  // Without a listener ioredis prints every reconnect failure; report once per outage instead.
  client.on('error', (error: Error) => {
    if (!reported) logger.error(`Redis connection error: ${error.message}`);
    reported = true;
  });
  client.on('ready', () => (reported = false));
  return { client, owned: true };
}

/** The longest wait between two reconnect attempts of the module's connection, jitter included. */
export const MAX_RECONNECT_DELAY_MS = 500;
const RECONNECT_JITTER_MS = 100;

/** The module's ioredis `retryStrategy`: 50 ms more per attempt up to 400 ms, plus jitter, for a quick return. */
export function reconnectDelayMs(attempt: number): number {
  const backOff = Math.min(attempt * 50, MAX_RECONNECT_DELAY_MS - RECONNECT_JITTER_MS);
  return backOff + Math.floor(Math.random() * RECONNECT_JITTER_MS);
}

/** Closes the connection if the module opened it; a user's client is left alone. */
export async function closeRateLimitConnection(connection: RateLimitConnection): Promise<void> {
  if (!connection.owned) return;
  await closeConnection(connection.client as Redis);
}
