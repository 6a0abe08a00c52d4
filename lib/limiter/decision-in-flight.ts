import { performance } from 'node:perf_hooks';
import { requestDecision } from '../core/caller-decisions';
import type { MultiRateLimitDecision, RateLimitDecision } from '../core/decisions';
import type { LimiterErrorKind } from '../core/call-metrics';
import type { SlidingLimitRule } from '../core/limit-rule';
import type { BlockCache } from './block-cache';
import type { DecisionListeners } from './decision-listeners';
import type { DegradedDecision, FailurePolicy } from './failure-policy';
import type { ActiveVersion } from './function-routing';
import type { InstanceReporter } from './instance-reporter';
import type { LimiterMetrics } from './limiter-metrics';
import { DecisionCall } from './decision-call';
import type { DecisionOptions } from './sliding-window-limiter.interfaces';

/** The parts of a limiter a decision reports to when it is made. */
export interface DecisionRecorders {
  readonly metrics: LimiterMetrics;
  readonly failures: FailurePolicy;
  readonly listeners: DecisionListeners;
  readonly reporter: InstanceReporter | undefined;
  readonly blockCache: BlockCache<RateLimitDecision> | undefined;
}

/**
 * Who takes a decision over where the caller would have: the package's own guard, which turns it
 * into its answer (headers, or the refusal) before the caller's promise settles — its answer, or
 * what it threw, is what that promise settles with. One object, where a `.then` on the decision
 * would make a promise, a reaction and a callback more per request.
 */
export interface DecisionReceiver {
  receive(decision: MultiRateLimitDecision): unknown;
}

/*
 * The settling functions of the promise being made, taken by one shared executor (a closure per
 * decision would be one more allocation); it runs synchronously inside the constructor.
 */
let capturedResolve: (answer: unknown) => void = unset;
let capturedReject: (error: unknown) => void = unset;
function captureSettlers(resolve: (answer: unknown) => void, reject: (error: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}
function unset(): void {}

/**
 * One decision on its way, from the limiter to its caller's answer: made by the limiter, sent as its
 * own Redis call (it is the {@link DecisionCall}: through the batcher and the call policy, which make
 * no object or promise of their own for it, and the version's reply reader, which reads the reply
 * straight into the caller's decision) or as one of a batch, and completing the caller's promise with
 * the decision — or, when Redis could not decide, with the failure policy's. Its methods are the
 * steps, so a decision costs this object and its promise rather than an object and an async frame
 * per layer.
 */
export class DecisionInFlight extends DecisionCall {
  /** What the caller awaits: the decision, or the receiver's answer to it. */
  readonly promise: Promise<unknown>;
  /** "now" of a decision whose rejection the block cache keeps; undefined when it keeps none. */
  blockCacheNowMs: number | undefined = undefined;
  private readonly resolveCaller: (answer: unknown) => void;
  private readonly rejectCaller: (error: unknown) => void;

  constructor(
    private readonly recorders: DecisionRecorders,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    readonly options: DecisionOptions | undefined,
    /** `performance.now()` when the limiter was asked: a wait for start-up counts in the latency too. */
    private readonly started: number,
    /** Takes the decision over when set: the caller's promise settles with its answer. */
    private readonly receiver: DecisionReceiver | undefined,
  ) {
    super(keys, rules);
    this.promise = new Promise(captureSettlers);
    this.resolveCaller = capturedResolve;
    this.rejectCaller = capturedReject;
  }

  /** Redis decided. */
  resolve(decision: MultiRateLimitDecision): void {
    const { recorders } = this;
    const latencyMs = performance.now() - this.started;
    recorders.metrics.recordDecision(decision.functionName, decision.allowed, latencyMs);
    recorders.failures.recovered();
    if (this.blockCacheNowMs !== undefined && !decision.allowed) {
      recorders.blockCache?.set(this.keys[0], this.rules[0], this.blockCacheNowMs, decision.limits[0]);
    }
    this.respond(decision, latencyMs, undefined, false);
  }

  /** The block cache rejected the request without a call (`blocked`: the cache's copy of the limit). */
  blockedLocally(blocked: RateLimitDecision): void {
    const functionName = (this.version as ActiveVersion).contract.allowFunction;
    // The version deciding the key now, which a switch may have changed since the rejection.
    blocked.functionName = functionName;
    this.recorders.metrics.recordBlockedLocally(functionName);
    this.respond(requestDecision(false, [blocked], functionName), undefined, undefined, true);
  }

  /**
   * Redis did not decide (or the request cannot be decided): the failure policy decides, or the
   * caller gets the error (`throw`, a configuration error).
   */
  reject(error: unknown): void {
    const latencyMs = performance.now() - this.started;
    this.recorders.failures
      .decide(error, this.version, this.keys, this.rules, this.options, latencyMs)
      .then((degraded) => this.answer(degraded, latencyMs), this.rejectCaller);
  }

  /** The failure policy's decision, answered. */
  private answer({ decision, cause }: DegradedDecision, latencyMs: number): void {
    this.respond(decision, latencyMs, cause, false);
  }

  /** The instance report's count, the listeners, and the caller's decision. */
  private respond(
    decision: MultiRateLimitDecision,
    latencyMs: number | undefined,
    degradedCause: LimiterErrorKind | undefined,
    blockedLocally: boolean,
  ): void {
    this.recorders.reporter?.noteDecision();
    const { listeners } = this.recorders;
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
    if (this.receiver === undefined) {
      this.resolveCaller(decision);
      return;
    }
    let answer: unknown;
    try {
      answer = this.receiver.receive(decision);
    } catch (error) {
      this.rejectCaller(error);
      return;
    }
    this.resolveCaller(answer);
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
