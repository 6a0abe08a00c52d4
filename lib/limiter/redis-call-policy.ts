import { RedisUnavailableError } from '../core/errors/redis-unavailable.error';
import { isUnanswered } from '../redis/error-kind';
import { messageOf } from '../redis/reply';
import type { CircuitBreaker } from './circuit-breaker';
import type { CircuitBreakers } from './circuit-breakers';
import { DeadlineQueue } from './deadline-queue';
import { timeoutError } from './with-timeout';

/**
 * One call as the decision path hands it to the policy: its state and its steps as one object, so
 * that the policy makes no closure per call.
 */
export interface CallAttempt<T> {
  /** Sends the call; sent again, as it is, for a retry. */
  send(): Promise<unknown>;
  /** After `send` failed: the reply once the cause is repaired, or undefined (a runner's `recover`). */
  recover?(error: unknown): Promise<unknown> | undefined;
  /** The reply as the caller gets it; a throw rejects the call (Redis answered, if with nonsense). */
  parse(reply: unknown): T;
  /** Called once when the call is settled, either way. */
  done?(): void;
}

/** Who is told how a call ended: a promise's settling functions, or a decision in flight. */
export interface CallSettlers<T> {
  resolve(value: T): void;
  reject(error: unknown): void;
}

/** One call as the policy makes it: an attempt object (the decision path) or a function (anything else). */
export type RedisAttempt<T> = (() => Promise<T>) | CallAttempt<T>;

/**
 * How every call to Redis is made: never to a connection that is down (ioredis would queue it until
 * it reconnects), never for much longer than `timeoutMs` per attempt (between 1 and 1.25 × `timeoutMs`:
 * one timer serves every call), at most `retries` more attempts after
 * a timeout or a dropped connection, and not at all while the circuit breaker is open. The attempt
 * is sent again as is, so a retry carries the same arguments — the same request id — and a write
 * whose outcome was unknown can never count twice.
 */
export class RedisCallPolicy {
  readonly deadlines: DeadlineQueue;

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
   */
  call<T>(attempt: RedisAttempt<T>, routeKey?: string, decisions = 1): Promise<T> {
    const settlement = new Promise<T>(captureSettlers);
    this.callInto(attempt, { resolve: capturedResolve, reject: capturedReject }, routeKey, decisions);
    return settlement;
  }

  /**
   * {@link RedisCallPolicy.call}, settling `settlers` instead of a promise of its own: the decision
   * path passes the decision in flight, which goes on from the outcome without another promise.
   */
  callInto<T>(attempt: RedisAttempt<T>, settlers: CallSettlers<T>, routeKey?: string, decisions = 1): void {
    const breaker = this.breakers.for(routeKey);
    if (!breaker.tryAcquire()) {
      if (typeof attempt !== 'function') attempt.done?.();
      settlers.reject(
        new RedisUnavailableError('Redis failed repeatedly; calls are paused (circuit breaker open)', 'circuit-open'),
      );
      return;
    }
    this.attemptFrom(attempt, settlers, breaker, 0, decisions);
  }

  /**
   * One attempt, settled by the reply or by the deadline, whichever comes first. Its state is one
   * object whose methods are the callbacks, rather than closures made per call: fewer allocations,
   * and V8 keeps a method's optimized code (see SlidingLimitGuard.enforce). A retry settles the
   * same `settlers` as the first attempt.
   */
  private attemptFrom(
    attempt: RedisAttempt<unknown>,
    settlers: CallSettlers<unknown>,
    breaker: CircuitBreaker,
    attempts: number,
    decisions: number,
  ): void {
    const pending = new PendingAttempt(this, attempt, settlers, breaker, attempts, decisions);
    if (!this.isConnected()) {
      breaker.onFailure(decisions);
      this.finish(pending, new RedisUnavailableError('Redis is not connected', 'disconnected'));
      return;
    }
    pending.seq = this.deadlines.track(pending);
    let reply: Promise<unknown>;
    try {
      reply = typeof attempt === 'function' ? attempt() : attempt.send();
    } catch (error) {
      this.failed(pending, error);
      return;
    }
    reply.then(pending.onReply, pending.onError);
  }

  /** The reply: settles the attempt unless its deadline has already. */
  answered(pending: PendingAttempt, result: unknown): void {
    if (pending.settled) {
      // Redis answers again (the command was still in ioredis' queue): probe at once.
      pending.breaker.onLateAnswer();
      return;
    }
    pending.settled = true;
    this.deadlines.settle(pending.seq);
    pending.breaker.onSuccess();
    const { attempt, settlers } = pending;
    if (typeof attempt === 'function') {
      settlers.resolve(result);
      return;
    }
    attempt.done?.();
    let parsed: unknown;
    try {
      parsed = attempt.parse(result);
    } catch (error) {
      settlers.reject(error);
      return;
    }
    settlers.resolve(parsed);
  }

  /**
   * An error, or the deadline (an unanswered error): settles the attempt unless it is already, after
   * the attempt's own recovery (a library reloaded) when it has one for this error.
   */
  failed(pending: PendingAttempt, error: unknown): void {
    if (pending.settled) {
      // An error reply that came after the deadline is an answer too.
      if (!isUnanswered(error)) pending.breaker.onLateAnswer();
      return;
    }
    const { attempt } = pending;
    if (typeof attempt !== 'function' && attempt.recover && !pending.recovering) {
      const recovery = attempt.recover(error);
      if (recovery) {
        // Within the same deadline: the caller never waits longer for a recovered call.
        pending.recovering = true;
        recovery.then(pending.onReply, pending.onError);
        return;
      }
    }
    pending.settled = true;
    this.deadlines.settle(pending.seq);
    const { breaker, attempts, decisions } = pending;
    if (!isUnanswered(error)) {
      // Redis answered, if with an error: it is up.
      breaker.onSuccess();
      this.finish(pending, error);
      return;
    }
    if (attempts >= this.retries) {
      breaker.onFailure(decisions);
      this.finish(
        pending,
        error instanceof RedisUnavailableError
          ? error
          : new RedisUnavailableError(messageOf(error), 'error', { cause: error }),
      );
      return;
    }
    this.attemptFrom(attempt, pending.settlers, breaker, attempts + 1, decisions);
  }

  /** Rejects the caller with `error`: the call is over. */
  private finish(pending: PendingAttempt, error: unknown): void {
    const { attempt } = pending;
    if (typeof attempt !== 'function') attempt.done?.();
    pending.settlers.reject(error);
  }
}

/** One attempt in flight: what it retries with, and how its caller is settled. */
class PendingAttempt {
  settled = false;
  /** Whether the attempt's recovery (a reload and the same call again) is what is awaited now. */
  recovering = false;
  /** Its number in the deadline queue. */
  seq = 0;
  /**
   * The reply's callbacks, made once per attempt: this class's methods bound to it rather than
   * closures, so that their optimized code stays with the class (see SlidingLimitGuard.enforce).
   */
  readonly onReply: (result: unknown) => void = this.replied.bind(this);
  readonly onError: (error: unknown) => void = this.erred.bind(this);

  constructor(
    private readonly policy: RedisCallPolicy,
    readonly attempt: RedisAttempt<unknown>,
    readonly settlers: CallSettlers<unknown>,
    readonly breaker: CircuitBreaker,
    readonly attempts: number,
    readonly decisions: number,
  ) {}

  private replied(result: unknown): void {
    this.policy.answered(this, result);
  }

  private erred(error: unknown): void {
    this.policy.failed(this, error);
  }

  /** Called by the deadline queue when the attempt has had its time. */
  expire(): void {
    this.policy.failed(this, timeoutError(this.policy.deadlines.timeoutMs));
  }
}

/*
 * The settling functions of the promise being made, taken by one shared executor: `new Promise` with a
 * closure per call would allocate that closure too. The executor runs synchronously inside the
 * constructor, so the values are read right after it, before anything else can run.
 */
let capturedResolve: (value: unknown) => void = unset;
let capturedReject: (error: unknown) => void = unset;
function captureSettlers(resolve: (value: never) => void, reject: (error: unknown) => void): void {
  capturedResolve = resolve as (value: unknown) => void;
  capturedReject = reject;
}

/** Placeholder until the promise's executor (which runs at once) sets the real functions. */
function unset(): void {}
