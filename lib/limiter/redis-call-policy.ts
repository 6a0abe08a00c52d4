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

  /**
   * One attempt, settled by the reply or by the deadline, whichever comes first. Its state is an
   * object and its callbacks are this class's methods, bound to it, rather than closures made per
   * call: V8 keeps a method's optimized code (see SlidingLimitGuard.decideWith).
   */
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
    const pending: PendingAttempt = {
      attempt,
      breaker,
      attempts,
      decisions,
      settled: false,
      seq: 0,
      resolve: unset,
      reject: unset,
    };
    const settlement = new Promise<T>((resolve, reject) => {
      pending.resolve = resolve as (value: unknown) => void;
      pending.reject = reject;
    });
    pending.seq = this.deadlines.track(this.expired.bind(this, pending));
    let reply: Promise<T>;
    try {
      reply = attempt();
    } catch (error) {
      this.failed(pending, error);
      return settlement;
    }
    reply.then(this.answered.bind(this, pending), this.failed.bind(this, pending));
    return settlement;
  }

  /** The reply: settles the attempt unless its deadline has already. */
  private answered(pending: PendingAttempt, result: unknown): void {
    if (pending.settled) {
      // Redis answers again (the command was still in ioredis' queue): probe at once.
      pending.breaker.onLateAnswer();
      return;
    }
    pending.settled = true;
    this.deadlines.settle(pending.seq);
    pending.breaker.onSuccess();
    pending.resolve(result);
  }

  /** An error, or the deadline (an unanswered error): settles the attempt unless it is already. */
  private failed(pending: PendingAttempt, error: unknown): void {
    if (pending.settled) {
      // An error reply that came after the deadline is an answer too.
      if (!isUnanswered(error)) pending.breaker.onLateAnswer();
      return;
    }
    pending.settled = true;
    this.deadlines.settle(pending.seq);
    const { attempt, breaker, attempts, decisions } = pending;
    this.afterFailure(error, attempt, breaker, attempts, decisions).then(pending.resolve, pending.reject);
  }

  private expired(pending: PendingAttempt): void {
    this.failed(pending, timeoutError(this.deadlines.timeoutMs));
  }
}

/** One attempt in flight: what it retries with, and how its caller is settled. */
interface PendingAttempt {
  readonly attempt: () => Promise<unknown>;
  readonly breaker: CircuitBreaker;
  readonly attempts: number;
  readonly decisions: number;
  settled: boolean;
  /** Its number in the deadline queue. */
  seq: number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** Placeholder until the promise's executor (which runs at once) sets the real functions. */
function unset(): void {}
