import { RedisUnavailableError } from '../core/errors/redis-unavailable.error';
import { isUnanswered } from '../redis/error-kind';
import { messageOf } from '../redis/reply';
import type { CircuitBreaker } from './circuit-breaker';
import type { CircuitBreakers } from './circuit-breakers';
import { DeadlineQueue } from './deadline-queue';
import { openPromise, unset } from './open-promise';
import { timeoutError } from './with-timeout';

/** One call to Redis: how to send it (a retry resends the same arguments), recover, read and settle it. */
export interface RedisCall<T> {
  send(): Promise<unknown>;
  /** After `send` failed: the reply once the cause is repaired (a library reloaded), or undefined. */
  recover(error: unknown): Promise<unknown> | undefined;
  /** The reply as the caller gets it; a throw rejects the call (Redis answered, if with nonsense). */
  parse(reply: unknown): T;
  resolve(value: T): void;
  reject(error: unknown): void;
}

/** The policy's own state of one call in flight: attempts, deadline, whether it is over. */
class PolicedCall<T> {
  attempts = 0;
  /** The current attempt's number in the deadline queue. */
  seq = 0;
  /** Whether the call is over: a reply that comes after this is a late answer. */
  settled = false;
  /** Whether the attempt's recovery (a reload and the same call again) is what is awaited now. */
  recovering = false;
  readonly onReply = (reply: unknown): void => this.policy.answered(this, reply);
  readonly onError = (error: unknown): void => this.policy.failed(this, error);

  constructor(
    readonly policy: RedisCallPolicy,
    readonly call: RedisCall<T>,
    /** The circuit breaker of the call's node. */
    readonly breaker: CircuitBreaker,
    /** How many decisions the call carries (a batch carries several): a failure counts that many. */
    readonly decisions: number,
  ) {}

  /** Called by the deadline queue when the attempt has had its time. */
  expire(): void {
    this.policy.failed(this, timeoutError(this.policy.deadlines.timeoutMs));
  }
}

/** A call given as a function (anything off the decision path): its promise is the reply. */
class PlainCall<T> implements RedisCall<T> {
  readonly promise: Promise<T>;
  resolvePromise: (value: T) => void = unset;
  rejectPromise: (error: unknown) => void = unset;

  constructor(private readonly run: () => Promise<T>) {
    this.promise = openPromise(this);
  }

  send(): Promise<unknown> {
    return this.run();
  }

  recover(): undefined {
    return undefined;
  }

  parse(reply: unknown): T {
    return reply as T;
  }

  resolve(value: T): void {
    this.resolvePromise(value);
  }

  reject(error: unknown): void {
    this.rejectPromise(error);
  }
}

/**
 * How every call to Redis is made: never to a connection that is down, at most about `timeoutMs` per
 * attempt, `retries` more attempts after a timeout or a dropped connection, none while the breaker is
 * open. A retry resends the same request id, so a write whose outcome was unknown never counts twice.
 */
export class RedisCallPolicy {
  readonly deadlines: DeadlineQueue;
  /** Calls made and not over yet: while there are some, decisions wait to go in a batch. */
  inFlight = 0;

  constructor(
    timeoutMs: number,
    private readonly retries: number,
    private readonly breakers: CircuitBreakers,
    private readonly isConnected: () => boolean,
  ) {
    this.deadlines = new DeadlineQueue(timeoutMs);
  }

  /** Makes `call`; `routeKey` picks the node's breaker, where a failure counts `decisions` times (a batch). */
  call<T>(call: RedisCall<T>, routeKey: string | undefined, decisions = 1): void {
    const policed = new PolicedCall(this, call, this.breakers.for(routeKey), decisions);
    this.inFlight++;
    if (!policed.breaker.tryAcquire()) {
      const open = new RedisUnavailableError(
        'Redis failed repeatedly; calls are paused (circuit breaker open)',
        'circuit-open',
      );
      this.finish(policed, open);
      return;
    }
    this.attempt(policed);
  }

  /** `run` under the policy, for calls off the decision path: its promise settles with the reply. */
  run<T>(run: () => Promise<T>, routeKey?: string): Promise<T> {
    const call = new PlainCall(run);
    this.call(call, routeKey);
    return call.promise;
  }

  /** One attempt, settled by the reply or by the deadline, whichever comes first. */
  private attempt(policed: PolicedCall<unknown>): void {
    policed.settled = false;
    policed.recovering = false;
    if (!this.isConnected()) {
      policed.breaker.onFailure(policed.decisions);
      this.finish(policed, new RedisUnavailableError('Redis is not connected', 'disconnected'));
      return;
    }
    policed.seq = this.deadlines.track(policed);
    let reply: Promise<unknown>;
    try {
      reply = policed.call.send();
    } catch (error) {
      this.failed(policed, error);
      return;
    }
    reply.then(policed.onReply, policed.onError);
  }

  /** The reply: settles the call unless its deadline has already. */
  answered(policed: PolicedCall<unknown>, reply: unknown): void {
    if (policed.settled) {
      // Redis answers again (the command was still in ioredis' queue): probe at once.
      policed.breaker.onLateAnswer();
      return;
    }
    policed.settled = true;
    this.inFlight--;
    this.deadlines.settle(policed.seq);
    policed.breaker.onSuccess();
    const { call } = policed;
    let parsed: unknown;
    try {
      parsed = call.parse(reply);
    } catch (error) {
      call.reject(error);
      return;
    }
    call.resolve(parsed);
  }

  /** An error or the deadline: settles the call unless it is already, after its own recovery if it has one. */
  failed(policed: PolicedCall<unknown>, error: unknown): void {
    if (policed.settled) {
      // An error reply that came after the deadline is an answer too.
      if (!isUnanswered(error)) policed.breaker.onLateAnswer();
      return;
    }
    if (!policed.recovering) {
      const recovery = policed.call.recover(error);
      if (recovery) {
        // Within the same deadline: the caller never waits longer for a recovered call.
        policed.recovering = true;
        recovery.then(policed.onReply, policed.onError);
        return;
      }
    }
    this.deadlines.settle(policed.seq);
    if (!isUnanswered(error)) {
      // Redis answered, if with an error: it is up.
      policed.breaker.onSuccess();
      this.finish(policed, error);
      return;
    }
    if (policed.attempts >= this.retries) {
      policed.breaker.onFailure(policed.decisions);
      const unavailable =
        error instanceof RedisUnavailableError
          ? error
          : new RedisUnavailableError(messageOf(error), 'error', { cause: error });
      this.finish(policed, unavailable);
      return;
    }
    policed.attempts++;
    this.attempt(policed);
  }

  /** Rejects the call with `error`: it is over. */
  private finish(policed: PolicedCall<unknown>, error: unknown): void {
    policed.settled = true;
    this.inFlight--;
    policed.call.reject(error);
  }
}
