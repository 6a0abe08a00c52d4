import { RedisUnavailableError } from '../core/errors/redis-unavailable.error';
import { isUnanswered } from '../redis/error-kind';
import { messageOf } from '../redis/reply';
import type { CircuitBreaker } from './circuit-breaker';
import type { CircuitBreakers } from './circuit-breakers';
import { DeadlineQueue } from './deadline-queue';
import { timeoutError } from './with-timeout';

/**
 * How every call to Redis is made: never to a connection that is down (ioredis would queue it until
 * it reconnects), never for much longer than `timeoutMs` per attempt (between 1 and 1.25 × `timeoutMs`:
 * one timer serves every call), at most `retries` more attempts after
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

  /**
   * Runs `attempt` under the policy; `routeKey` (a key of the call) picks the node's circuit breaker,
   * and a failure counts there as `decisions` failures (a batch carries several).
   * Plain promise chains rather than async functions: this runs for every decision.
   */
  call<T>(attempt: () => Promise<T>, routeKey?: string, decisions = 1): Promise<T> {
    const breaker = this.breakers.for(routeKey);
    if (!breaker.tryAcquire()) {
      return Promise.reject(
        new RedisUnavailableError('Redis failed repeatedly; calls are paused (circuit breaker open)', 'circuit-open'),
      );
    }
    return this.attemptFrom(attempt, breaker, 0, decisions);
  }

  /** A failed attempt: rethrow what Redis answered, retry what it did not (within `retries`). */
  private afterFailure<T>(
    error: unknown,
    attempt: () => Promise<T>,
    breaker: CircuitBreaker,
    attempts: number,
    decisions: number,
  ): Promise<T> {
    if (!isUnanswered(error)) {
      // Redis answered, if with an error: it is up.
      breaker.onSuccess();
      return Promise.reject(error);
    }
    if (attempts >= this.retries) {
      breaker.onFailure(decisions);
      return Promise.reject(
        error instanceof RedisUnavailableError
          ? error
          : new RedisUnavailableError(messageOf(error), 'error', { cause: error }),
      );
    }
    return this.attemptFrom(attempt, breaker, attempts + 1, decisions);
  }

  /** One attempt, settled by the reply or by the deadline, whichever comes first. */
  private attemptFrom<T>(
    attempt: () => Promise<T>,
    breaker: CircuitBreaker,
    attempts: number,
    decisions: number,
  ): Promise<T> {
    if (!this.isConnected()) {
      breaker.onFailure(decisions);
      return Promise.reject(new RedisUnavailableError('Redis is not connected', 'disconnected'));
    }
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const fail = (error: unknown): void => {
        if (settled) {
          // An error reply that came after the deadline is an answer too.
          if (!isUnanswered(error)) breaker.onLateAnswer();
          return;
        }
        settled = true;
        this.deadlines.settle(seq);
        this.afterFailure(error, attempt, breaker, attempts, decisions).then(resolve, reject);
      };
      const seq = this.deadlines.track(() => fail(timeoutError(this.deadlines.timeoutMs)));
      attempt().then((result) => {
        if (settled) {
          // Redis answers again (the command was still in ioredis' queue): probe at once.
          breaker.onLateAnswer();
          return;
        }
        settled = true;
        this.deadlines.settle(seq);
        breaker.onSuccess();
        resolve(result);
      }, fail);
    });
  }
}
