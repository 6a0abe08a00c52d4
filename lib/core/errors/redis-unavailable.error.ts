import { SlidingLimitError } from './sliding-limit.error';

/**
 * Redis did not decide: a timeout, the connection down, or the circuit breaker open. Callers see it
 * from `init()`, `reset()` and decisions whose `onRedisError` is `throw`.
 */
export class RedisUnavailableError extends SlidingLimitError {
  constructor(
    message: string,
    readonly reason: 'timeout' | 'disconnected' | 'circuit-open' | 'error',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
