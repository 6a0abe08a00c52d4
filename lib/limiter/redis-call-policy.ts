import { RedisUnavailableError } from '../core/errors/redis-unavailable.error';
import { isUnanswered } from '../redis/error-kind';
import { messageOf } from '../redis/reply';
import type { CircuitBreaker } from './circuit-breaker';
import type { CircuitBreakers } from './circuit-breakers';
import { DeadlineQueue } from './deadline-queue';
import { timeoutError } from './with-timeout';

/** Who is told how a call ended: a promise's settling functions, or a decision in flight. */
export interface CallSettlers<T> {
  resolve(value: T): void;
  reject(error: unknown): void;
}

/**
 * One call as the policy makes it: its steps (send, recover, parse, done) as methods of a subclass,
 * and the state the policy keeps while the call is in flight on the same object — the decision path
 * makes one object per call, with no promise, state object or closure of the policy's own beside it
 * (only the reply's two callbacks, bound once per call when it is sent; methods rather than closures,
 * so that V8 keeps their optimized code with the class — see SlidingLimitGuard.enforce).
 */
export abstract class PolicedCall<T> {
  /** The policy making the call, and who it settles: set when the call starts. */
  policy: RedisCallPolicy | undefined = undefined;
  settlers: CallSettlers<T> | undefined = undefined;
  /** The circuit breaker of the call's node. */
  breaker: CircuitBreaker | undefined = undefined;
  /** How many decisions the call carries (a batch carries several): a failure counts that many. */
  decisions = 1;
  /** Attempts made before the current one. */
  attempts = 0;
  /** The current attempt's number in the deadline queue. */
  seq = 0;
  /** Whether the call is over: a reply that comes after this is a late answer. */
  settled = false;
  /** Whether the attempt's recovery (a reload and the same call again) is what is awaited now. */
  recovering = false;
  /** The reply's callbacks, bound once per call when it is first sent (a decision in a batch never is). */
  private onReply: ((reply: unknown) => void) | undefined = undefined;
  private onError: ((error: unknown) => void) | undefined = undefined;

  /** Sends the call; sent again, as it is, for a retry. */
  abstract send(): Promise<unknown>;

  /** The reply as the caller gets it; a throw rejects the call (Redis answered, if with nonsense). */
  abstract parse(reply: unknown): T;

  /** After `send` failed: the reply once the cause is repaired (a runner's `recover`), or undefined. */
  recover(_error: unknown): Promise<unknown> | undefined {
    return undefined;
  }

  /** Called once when the call is settled, either way. */
  done(): void {}

  /** Called by the deadline queue when the attempt has had its time. */
  expire(): void {
    const policy = this.policy as RedisCallPolicy;
    policy.failed(this, timeoutError(policy.deadlines.timeoutMs));
  }

  /** Waits for `reply` (an attempt's, or its recovery's) and tells the policy how it ended. */
  listen(reply: Promise<unknown>): void {
    this.onReply ??= this.replied.bind(this);
    this.onError ??= this.erred.bind(this);
    reply.then(this.onReply, this.onError);
  }

  private replied(reply: unknown): void {
    (this.policy as RedisCallPolicy).answered(this, reply);
  }

  private erred(error: unknown): void {
    (this.policy as RedisCallPolicy).failed(this, error);
  }
}

/** A call given as a function (anything off the decision path): its promise is the reply. */
class PlainCall<T> extends PolicedCall<T> {
  constructor(private readonly run: () => Promise<T>) {
    super();
  }

  send(): Promise<unknown> {
    return this.run();
  }

  parse(reply: unknown): T {
    return reply as T;
  }
}

/** One call as the policy takes it: a policed call (the decision path) or a function (anything else). */
export type RedisAttempt<T> = (() => Promise<T>) | PolicedCall<T>;

/**
 * How every call to Redis is made: never to a connection that is down (ioredis would queue it until
 * it reconnects), never for much longer than `timeoutMs` per attempt (between 1 and 1.25 × `timeoutMs`:
 * one timer serves every call), at most `retries` more attempts after
 * a timeout or a dropped connection, and not at all while the circuit breaker is open. The attempt
 * is sent again as is, so a retry carries the same arguments — the same request id — and a write
 * whose outcome was unknown can never count twice; for the same reason, a reply to the timed-out
 * attempt that comes while its retry is in flight answers the call.
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
    const call = typeof attempt === 'function' ? new PlainCall(attempt) : attempt;
    call.policy = this;
    call.settlers = settlers;
    call.decisions = decisions;
    const breaker = (call.breaker = this.breakers.for(routeKey));
    if (!breaker.tryAcquire()) {
      this.finish(
        call,
        new RedisUnavailableError('Redis failed repeatedly; calls are paused (circuit breaker open)', 'circuit-open'),
      );
      return;
    }
    this.attempt(call);
  }

  /** One attempt, settled by the reply or by the deadline, whichever comes first. */
  private attempt(call: PolicedCall<unknown>): void {
    call.settled = false;
    call.recovering = false;
    if (!this.isConnected()) {
      (call.breaker as CircuitBreaker).onFailure(call.decisions);
      this.finish(call, new RedisUnavailableError('Redis is not connected', 'disconnected'));
      return;
    }
    call.seq = this.deadlines.track(call);
    let reply: Promise<unknown>;
    try {
      reply = call.send();
    } catch (error) {
      this.failed(call, error);
      return;
    }
    call.listen(reply);
  }

  /** The reply: settles the call unless its deadline has already. */
  answered(call: PolicedCall<unknown>, reply: unknown): void {
    const breaker = call.breaker as CircuitBreaker;
    if (call.settled) {
      // Redis answers again (the command was still in ioredis' queue): probe at once.
      breaker.onLateAnswer();
      return;
    }
    call.settled = true;
    this.deadlines.settle(call.seq);
    breaker.onSuccess();
    call.done();
    const settlers = call.settlers as CallSettlers<unknown>;
    let parsed: unknown;
    try {
      parsed = call.parse(reply);
    } catch (error) {
      settlers.reject(error);
      return;
    }
    settlers.resolve(parsed);
  }

  /**
   * An error, or the deadline (an unanswered error): settles the call unless it is already, after
   * the call's own recovery (a library reloaded) when it has one for this error.
   */
  failed(call: PolicedCall<unknown>, error: unknown): void {
    const breaker = call.breaker as CircuitBreaker;
    if (call.settled) {
      // An error reply that came after the deadline is an answer too.
      if (!isUnanswered(error)) breaker.onLateAnswer();
      return;
    }
    if (!call.recovering) {
      const recovery = call.recover(error);
      if (recovery) {
        // Within the same deadline: the caller never waits longer for a recovered call.
        call.recovering = true;
        call.listen(recovery);
        return;
      }
    }
    call.settled = true;
    this.deadlines.settle(call.seq);
    if (!isUnanswered(error)) {
      // Redis answered, if with an error: it is up.
      breaker.onSuccess();
      this.finish(call, error);
      return;
    }
    if (call.attempts >= this.retries) {
      breaker.onFailure(call.decisions);
      this.finish(
        call,
        error instanceof RedisUnavailableError
          ? error
          : new RedisUnavailableError(messageOf(error), 'error', { cause: error }),
      );
      return;
    }
    call.attempts++;
    this.attempt(call);
  }

  /** Rejects the caller with `error`: the call is over. */
  private finish(call: PolicedCall<unknown>, error: unknown): void {
    call.settled = true;
    call.done();
    (call.settlers as CallSettlers<unknown>).reject(error);
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
