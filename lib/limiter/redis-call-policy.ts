import { RedisUnavailableError } from '../errors/redis-unavailable.error';
import { errorKindOf } from '../redis/error-kind';
import type { CircuitBreakers } from './circuit-breakers';
import { DeadlineQueue } from './deadline-queue';

/**
 * How every call to Redis is made: never to a connection that is down (ioredis would queue it until
 * it reconnects), never for longer than `timeoutMs` per attempt, at most `retries` more attempts after
 * a timeout or a dropped connection, and not at all while the circuit breaker is open. The attempt
 * function is called again as is, so a retry carries the same arguments — the same request id — and
 * a write whose outcome was unknown can never count twice.
 */
export class RedisCallPolicy {
  private readonly deadlines: DeadlineQueue;

  constructor(
    timeoutMs: number,
    private readonly retries: number,
    private readonly breakers: CircuitBreakers,
    private readonly isConnected: () => boolean,
  ) {
    this.deadlines = new DeadlineQueue(timeoutMs);
  }

  /** Runs `attempt` under the policy; `routeKey` (a key of the call) picks the node's circuit breaker. */
  async call<T>(attempt: () => Promise<T>, routeKey?: string): Promise<T> {
    const breaker = this.breakers.for(routeKey);
    if (!breaker.tryAcquire()) {
      throw new RedisUnavailableError('Redis failed repeatedly; calls are paused (circuit breaker open)', 'circuit-open');
    }
    for (let attempts = 0; ; attempts++) {
      if (!this.isConnected()) {
        breaker.onFailure();
        throw new RedisUnavailableError('Redis is not connected', 'disconnected');
      }
      try {
        const result = await this.deadlines.race(attempt());
        breaker.onSuccess();
        return result;
      } catch (error) {
        const kind = errorKindOf(error);
        if (kind !== 'timeout' && kind !== 'connection') {
          // Redis answered, if with an error: it is up.
          breaker.onSuccess();
          throw error;
        }
        if (attempts >= this.retries) {
          breaker.onFailure();
          throw error instanceof RedisUnavailableError ? error : new RedisUnavailableError((error as Error).message, 'error', { cause: error });
        }
      }
    }
  }
}
