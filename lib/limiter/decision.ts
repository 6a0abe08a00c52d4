import { performance } from 'node:perf_hooks';
import { requestDecision } from '../core/caller-decisions';
import type { LimiterErrorKind } from '../core/call-metrics';
import { joined } from '../core/call-arguments';
import type { MultiRateLimitDecision, RateLimitDecision } from '../core/decisions';
import type { AllowCall } from '../core/function-contract';
import type { SlidingLimitRule } from '../core/limit-rule';
import type { BlockCache } from './block-cache';
import type { NowMs } from './clock';
import type { DecisionListeners } from './decision-listeners';
import type { ActiveVersion } from './function-routing';
import type { InstanceReporter } from './instance-reporter';
import type { LimiterMetrics } from './limiter-metrics';
import { openPromise, unset } from './open-promise';
import type { RedisCall } from './redis-call-policy';
import type { DecisionOptions } from './sliding-window-limiter.interfaces';

/** A decision made without Redis, and why Redis did not make it. */
export interface DegradedDecision {
  readonly decision: MultiRateLimitDecision;
  readonly cause: LimiterErrorKind;
}

/** Where decisions go when Redis did not make them: the limiter's failure policy. */
export interface FailureHandler {
  /** Redis decided: degraded mode, if on, is over. */
  recovered(): void;
  /** The decision Redis could not make, by the policy; rejected with the error for `throw`. */
  decide(
    error: unknown,
    version: ActiveVersion | undefined,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    options: DecisionOptions | undefined,
    latencyMs: number,
  ): Promise<DegradedDecision>;
}

/** The parts of a limiter a decision reports to when it is made. */
export interface DecisionRecorders {
  readonly metrics: LimiterMetrics;
  readonly failures: FailureHandler;
  readonly listeners: DecisionListeners;
  readonly reporter: InstanceReporter | undefined;
  readonly blockCache: BlockCache<RateLimitDecision> | undefined;
}

/** Takes a decision over (the guards): the caller's promise settles with its answer, or what it threw. */
export interface DecisionReceiver {
  receive(decision: MultiRateLimitDecision): unknown;
}

/**
 * One request's decision on its way: what it asks, its call (set by {@link Decision.callWith}; a retry
 * resends the same arguments, so the same request id) and its caller's promise. Without recorders (a
 * part of a split request, an insurance call) it settles as it is, for its holder to record.
 */
export class Decision implements AllowCall, RedisCall<MultiRateLimitDecision> {
  readonly cost: number;
  /** `performance.now()` when the limiter was asked: a wait for start-up counts in the latency too. */
  readonly started = performance.now();
  readonly promise: Promise<unknown>;
  resolvePromise: (answer: unknown) => void = unset;
  rejectPromise: (error: unknown) => void = unset;

  version: ActiveVersion | undefined = undefined;
  nowMs: NowMs = 0;
  member = '';
  maxClockSkewMs = 0;
  overrides = false;
  /** "now" of a decision whose refusal the block cache keeps; undefined when it keeps none. */
  blockCacheNowMs: number | undefined = undefined;
  /** The block cache's {@link BlockCache.ticket} when the decision was sent. */
  blockCacheTicket = 0;
  /** What the call sends, made when it is first sent: how many KEYS, and KEYS then ARGV. */
  private keyCount = 0;
  private keysAndArguments: readonly (string | number)[] | undefined = undefined;

  constructor(
    private readonly recorders: DecisionRecorders | undefined,
    readonly keys: readonly string[],
    readonly rules: readonly SlidingLimitRule[],
    readonly options: DecisionOptions | undefined,
    /** Takes the decision over when set: the caller's promise settles with its answer. */
    private readonly receiver: DecisionReceiver | undefined = undefined,
  ) {
    this.cost = options?.cost ?? 1;
    this.promise = openPromise(this);
  }

  /** Sets the call: the version deciding, the time, the request id, the clock tolerance, whether overrides are read. */
  callWith(version: ActiveVersion, nowMs: NowMs, member: string, maxClockSkewMs: number, overrides: boolean): void {
    this.version = version;
    this.nowMs = nowMs;
    this.member = member;
    this.maxClockSkewMs = maxClockSkewMs;
    this.overrides = overrides;
  }

  send(): Promise<unknown> {
    const { contract, runner } = this.version as ActiveVersion;
    if (this.keysAndArguments === undefined) {
      if (contract.allowKeyCount && contract.allowKeysAndArguments) {
        this.keyCount = contract.allowKeyCount(this);
        this.keysAndArguments = contract.allowKeysAndArguments(this, this.keyCount);
      } else {
        this.keyCount = this.keys.length;
        this.keysAndArguments = joined(this.keys, contract.allowArguments(this));
      }
    }
    return runner.run(contract.allowFunction, this.keyCount, this.keysAndArguments, false);
  }

  recover(error: unknown): Promise<unknown> | undefined {
    // Nothing was sent (building the arguments threw): nothing to recover.
    if (this.keysAndArguments === undefined) return undefined;
    const { contract, runner } = this.version as ActiveVersion;
    return runner.recover?.(error, contract.allowFunction, this.keyCount, this.keysAndArguments, false);
  }

  parse(reply: unknown): MultiRateLimitDecision {
    return (this.version as ActiveVersion).reader.allow(reply, this);
  }

  /** Redis decided. */
  resolve(decision: MultiRateLimitDecision): void {
    const { recorders } = this;
    if (recorders === undefined) return this.resolvePromise(decision);
    const latencyMs = performance.now() - this.started;
    recorders.metrics.recordDecision(decision.functionName, decision.allowed, latencyMs);
    recorders.failures.recovered();
    if (this.blockCacheNowMs !== undefined && !decision.allowed) {
      const { keys, rules, blockCacheNowMs, blockCacheTicket } = this;
      recorders.blockCache?.set(keys[0], rules[0], blockCacheNowMs, decision.limits[0], blockCacheTicket);
    }
    this.respond(decision, latencyMs, undefined, false);
  }

  /** The block cache refused the request without a call (`blocked`: its copy of the limit). */
  blockedLocally(blocked: RateLimitDecision): void {
    // The version deciding the key now, which a switch may have changed since the refusal.
    const functionName = (blocked.functionName = (this.version as ActiveVersion).contract.allowFunction);
    (this.recorders as DecisionRecorders).metrics.recordBlockedLocally(functionName);
    this.respond(requestDecision(false, [blocked], functionName), undefined, undefined, true);
  }

  /** Redis did not decide (or the request cannot be): the failure policy decides, or the caller gets the error. */
  reject(error: unknown): void {
    const { recorders } = this;
    if (recorders === undefined) return this.rejectPromise(error);
    const latencyMs = performance.now() - this.started;
    recorders.failures
      .decide(error, this.version, this.keys, this.rules, this.options, latencyMs)
      .then(
        ({ decision, cause }: DegradedDecision) => this.respond(decision, latencyMs, cause, false),
        this.rejectPromise,
      );
  }

  /** The instance report's count, the listeners, and the caller's answer. */
  private respond(
    decision: MultiRateLimitDecision,
    latencyMs: number | undefined,
    degradedCause: LimiterErrorKind | undefined,
    blockedLocally: boolean,
  ): void {
    const { reporter, listeners } = this.recorders as DecisionRecorders;
    reporter?.noteDecision();
    if (listeners.active) {
      const { allowed, functionName, degraded, limits, retryAfterMs } = decision;
      listeners.notify(
        { allowed, functionName, latencyMs, degraded, degradedCause, blockedLocally },
        withoutKeys(this.rules),
        limits,
        retryAfterMs,
        this.options,
      );
    }
    if (this.receiver === undefined) return this.resolvePromise(decision);
    let answer: unknown;
    try {
      answer = this.receiver.receive(decision);
    } catch (error) {
      return this.rejectPromise(error);
    }
    this.resolvePromise(answer);
  }
}

/** Rules as listeners see them: limits and windows, without the keys (identities) of stacked rules. */
function withoutKeys(rules: readonly SlidingLimitRule[]): SlidingLimitRule[] {
  const copies = new Array<SlidingLimitRule>(rules.length);
  for (let i = 0; i < rules.length; i++) {
    const { limit, windowMs, precisionMs } = rules[i];
    copies[i] = precisionMs === undefined ? { limit, windowMs } : { limit, windowMs, precisionMs };
  }
  return copies;
}
