import { performance } from 'node:perf_hooks';
import type { MultiRateLimitDecision, RateLimitDecision } from '../core/decisions';
import type { CallOutcome, LimitOutcome } from '../core/function-contract';
import type { SlidingLimitRule } from '../core/limit-rule';
import type { BlockCache } from './block-cache';
import type { Decided } from './decided';
import type { DecisionListeners } from './decision-listeners';
import type { FailurePolicy } from './failure-policy';
import type { ActiveVersion } from './function-routing';
import type { InstanceReporter } from './instance-reporter';
import type { LimiterMetrics } from './limiter-metrics';
import type { CallSettlers } from './redis-call-policy';
import type { DecisionOptions } from './sliding-window-limiter.interfaces';

/** The parts of a limiter a decision reports to when it is made. */
export interface DecisionRecorders {
  readonly metrics: LimiterMetrics;
  readonly failures: FailurePolicy;
  readonly listeners: DecisionListeners;
  readonly reporter: InstanceReporter | undefined;
  readonly blockCache: BlockCache | undefined;
}

/*
 * The settling functions of the promise being made, taken by one shared executor (a closure per
 * decision would be one more allocation); it runs synchronously inside the constructor.
 */
let capturedResolve: (decision: MultiRateLimitDecision) => void = unset;
let capturedReject: (error: unknown) => void = unset;
function captureSettlers(resolve: (decision: MultiRateLimitDecision) => void, reject: (error: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}
function unset(): void {}

/**
 * One decision on its way, from the limiter to its caller's answer: made by the limiter, handed down
 * as the one receiver of its Redis call's outcome (through the batcher and the call policy, which
 * make no promise of their own for it), and completing the caller's promise with the decision — or,
 * when Redis could not decide, with the failure policy's. Its methods are the steps, so a decision
 * costs this object and its promise rather than an async frame per layer.
 */
export class DecisionInFlight implements CallSettlers<CallOutcome> {
  /** What the caller awaits. */
  readonly promise: Promise<MultiRateLimitDecision>;
  /** The version deciding, once picked (none when start-up failed). */
  version: ActiveVersion | undefined;
  /** "now" of a decision whose rejection the block cache keeps; undefined when it keeps none. */
  blockCacheNowMs: number | undefined;
  private readonly resolveCaller: (decision: MultiRateLimitDecision) => void;
  private readonly rejectCaller: (error: unknown) => void;

  constructor(
    private readonly recorders: DecisionRecorders,
    readonly keys: readonly string[],
    readonly rules: readonly SlidingLimitRule[],
    readonly options: DecisionOptions | undefined,
    /** `performance.now()` when the limiter was asked: a wait for start-up counts in the latency too. */
    private readonly started: number,
  ) {
    this.promise = new Promise(captureSettlers);
    this.resolveCaller = capturedResolve;
    this.rejectCaller = capturedReject;
  }

  /** Redis decided. */
  resolve(outcome: CallOutcome): void {
    const { recorders } = this;
    const functionName = (this.version as ActiveVersion).contract.allowFunction;
    const latencyMs = performance.now() - this.started;
    recorders.metrics.recordDecision(functionName, outcome.allowed, latencyMs);
    recorders.failures.recovered();
    if (this.blockCacheNowMs !== undefined && !outcome.allowed) {
      recorders.blockCache?.set(this.keys[0], this.rules[0], this.blockCacheNowMs, outcome.limits[0]);
    }
    this.respond(outcome.allowed, outcome.limits, functionName, latencyMs, undefined, undefined, false);
  }

  /** The block cache rejected the request without a call. */
  blockedLocally(blocked: LimitOutcome): void {
    const functionName = (this.version as ActiveVersion).contract.allowFunction;
    this.recorders.metrics.recordBlockedLocally(functionName);
    this.respond(false, [blocked], functionName, undefined, undefined, undefined, true);
  }

  /**
   * Redis did not decide (or the request cannot be decided): the failure policy decides, or the
   * caller gets the error (`throw`, a configuration error).
   */
  reject(error: unknown): void {
    const latencyMs = performance.now() - this.started;
    this.recorders.failures
      .decide(error, this.version, this.keys, this.rules, this.options, latencyMs)
      .then((decided) => this.answer(decided, latencyMs), this.rejectCaller);
  }

  /** The failure policy's decision, answered. */
  private answer(decided: Decided, latencyMs: number): void {
    const { allowed, limits, functionName, degraded, degradedCause } = decided;
    this.respond(allowed, limits, functionName, latencyMs, degraded, degradedCause, false);
  }

  /** The caller's decision, the instance report's count and the listeners. */
  private respond(
    allowed: boolean,
    outcomes: readonly LimitOutcome[],
    functionName: string,
    latencyMs: number | undefined,
    degraded: RateLimitDecision['degraded'],
    degradedCause: Decided['degradedCause'],
    blockedLocally: boolean,
  ): void {
    this.recorders.reporter?.noteDecision();
    const { rules } = this;
    const limits = new Array<RateLimitDecision>(outcomes.length);
    let retryAfterMs = 0;
    for (let i = 0; i < limits.length; i++) {
      const limit = (limits[i] = toDecision(outcomes[i], rules[i], functionName, degraded));
      // A shadow limit refuses nothing, so it never makes a client wait.
      if (limit.retryAfterMs > retryAfterMs && limit.shadow === undefined) retryAfterMs = limit.retryAfterMs;
    }
    const decision: MultiRateLimitDecision = { allowed, retryAfterMs, functionName, limits };
    if (degraded) decision.degraded = degraded;
    const { listeners } = this.recorders;
    if (listeners.active) {
      listeners.notify(
        {
          allowed,
          limits: outcomes as LimitOutcome[],
          functionName,
          latencyMs,
          degraded,
          degradedCause,
          blockedLocally,
        },
        withoutKeys(rules),
        limits,
        retryAfterMs,
        this.options,
      );
    }
    this.resolveCaller(decision);
  }
}

/** One limit's outcome as the caller sees it. */
export function toDecision(
  outcome: LimitOutcome,
  rule: SlidingLimitRule,
  functionName: string,
  degraded?: RateLimitDecision['degraded'],
): RateLimitDecision {
  const decision: RateLimitDecision = {
    allowed: outcome.allowed,
    limit: outcome.effectiveLimit ?? rule.limit,
    remaining: outcome.remaining,
    retryAfterMs: outcome.retryAfterMs,
    resetMs: outcome.resetMs,
    functionName,
  };
  if (degraded) decision.degraded = degraded;
  if (outcome.override !== undefined) decision.override = outcome.override;
  if (outcome.shadow) {
    decision.shadow = true;
    decision.wouldRefuse = outcome.wouldRefuse === true;
  }
  return decision;
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
