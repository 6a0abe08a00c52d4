import { SlidingLimitError } from './sliding-limit.error';

/**
 * Redis did not decide: the call timed out, the connection is down, or the circuit breaker is open
 * after repeated failures. The limiter answers such decisions by its `onRedisError` policy (or the
 * insurance limiter); this error reaches callers from `init()`, `reset()`, and decisions whose
 * policy is `throw`.
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
