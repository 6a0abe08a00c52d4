import { RedisUnavailableError } from '../errors/redis-unavailable.error';
import { errorKindOf } from '../redis/error-kind';
import type { CircuitBreaker } from './circuit-breaker';
import { withTimeout } from './with-timeout';

/**
 * How every call to Redis is made: never to a connection that is down (ioredis would queue it until
 * it reconnects), never for longer than `timeoutMs` per attempt, at most `retries` more attempts after
 * a timeout or a dropped connection, and not at all while the circuit breaker is open. The attempt
 * function is called again as is, so a retry carries the same arguments — the same request id — and
 * a write whose outcome was unknown can never count twice.
 */
export class RedisCallPolicy {
  constructor(
    private readonly timeoutMs: number,
    private readonly retries: number,
    private readonly breaker: CircuitBreaker,
    private readonly isConnected: () => boolean,
  ) {}

  async call<T>(attempt: () => Promise<T>): Promise<T> {
    if (!this.breaker.tryAcquire()) {
      throw new RedisUnavailableError('Redis failed repeatedly; calls are paused (circuit breaker open)', 'circuit-open');
    }
    for (let attempts = 0; ; attempts++) {
      if (!this.isConnected()) {
        this.breaker.onFailure();
        throw new RedisUnavailableError('Redis is not connected', 'disconnected');
      }
      try {
        const result = await withTimeout(attempt(), this.timeoutMs);
        this.breaker.onSuccess();
        return result;
      } catch (error) {
        const kind = errorKindOf(error);
        if (kind !== 'timeout' && kind !== 'connection') {
          // Redis answered, if with an error: it is up.
          this.breaker.onSuccess();
          throw error;
        }
        if (attempts >= this.retries) {
          this.breaker.onFailure();
          throw error instanceof RedisUnavailableError ? error : new RedisUnavailableError((error as Error).message, 'error', { cause: error });
        }
      }
    }
  }
}
