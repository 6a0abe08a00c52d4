import { ClockSkewError } from '../core/errors/clock-skew.error';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import type { CallOutcome, FunctionContract } from '../core/function-contract';
import type { SlidingLimitRule } from '../core/limit-rule';
import { scrubSecrets } from '../core/redact';
import { errorKindOf } from '../redis/error-kind';
import { isClockSkew } from '../redis/reply';
import { decisionFromOutcomes } from '../core/caller-decisions';
import type { MultiRateLimitDecision } from '../core/decisions';
import type { FallbackKind } from '../core/call-metrics';
import { DegradedModeLog, type LimiterLogger } from './degraded-mode-log';
import { DegradedStretch, type DegradedMode } from './degraded-stretch';
import { policyOutcome } from './fallback-outcomes';
import type { ActiveVersion } from './function-routing';
import type { DegradedDecision, FailureHandler } from './decision';
import type { Insurance } from './insurance';
import type { LimiterMetrics } from './limiter-metrics';
import type { DecisionOptions, RedisErrorPolicy } from './sliding-window-limiter.interfaces';

/** v2's CLOCKSKEW error reply as the typed error; anything else as it is, secrets scrubbed. */
export function translated(error: unknown): unknown {
  return scrubSecrets(isClockSkew(error) ? new ClockSkewError((error as Error).message, { cause: error }) : error);
}

/** What happens when Redis cannot decide: the policy, the insurance, the log, the counters. */
export class FailurePolicy implements FailureHandler {
  private readonly degradedLog: DegradedModeLog;
  private readonly stretch = new DegradedStretch();

  constructor(
    private readonly defaultPolicy: RedisErrorPolicy,
    private readonly metrics: LimiterMetrics,
    logger: LimiterLogger,
    /** How long a fail-closed decision tells the caller to wait: the circuit breaker's cool-down. */
    private readonly denyRetryAfterMs: number,
    private readonly insurance: Insurance | undefined,
    /** The contract and name of a decision that failed before a version was picked (start-up). */
    private readonly stableContract: () => FunctionContract,
  ) {
    this.degradedLog = new DegradedModeLog(logger);
  }

  /** Redis decided: ends degraded mode (cheap when it was not on). */
  recovered(): void {
    this.degradedLog.recovered();
  }

  /** The decision by the policy (rejected for `throw`); the insurance limiter's where it would fail open. */
  async decide(
    caught: unknown,
    version: ActiveVersion | undefined,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    options: DecisionOptions | undefined,
    latencyMs: number,
  ): Promise<DegradedDecision> {
    if (caught instanceof RateLimitConfigError) throw caught;
    const error = translated(caught);
    const contract = version?.contract ?? this.stableContract();
    const functionName = contract.allowFunction;
    const cause = errorKindOf(error);
    this.metrics.recordError(functionName, cause, latencyMs);
    const policy = this.policyFor(options);
    if (policy === 'throw') throw error;
    if (policy === 'allow' && this.insurance) {
      const decision = await this.insurance.decide(contract, keys, rules, options?.cost ?? 1);
      this.recordDegraded(functionName, 'insurance', error);
      return { decision: asDegraded(decision, 'insurance'), cause };
    }
    this.recordDegraded(functionName, policy, error);
    const { allowed, limits } = policyOutcome(rules, policy, this.denyRetryAfterMs);
    return { decision: decisionFromOutcomes(allowed, limits, rules, functionName, policy), cause };
  }

  /** The current stretch of degraded decisions, when the latest is at most `withinMs` old. */
  degradedMode(withinMs?: number): DegradedMode | undefined {
    return this.stretch.report(withinMs);
  }

  /** What a failed peek reports: the policy's outcome (never the insurance's), or the error for `throw`. */
  peek(
    caught: unknown,
    rule: SlidingLimitRule,
    options: DecisionOptions | undefined,
  ): CallOutcome & { policy: 'allow' | 'deny' } {
    const { policy, error } = this.nonThrowing(caught, options);
    return { ...this.byPolicy([rule], policy, error), policy };
  }

  /** A reset Redis could not make: rethrown for `throw`, otherwise logged as degraded mode. */
  reset(caught: unknown, options: Pick<DecisionOptions, 'onRedisError'> | undefined): void {
    const { policy, error } = this.nonThrowing(caught, options);
    this.degradedLog.fallback(policy, error);
  }

  private nonThrowing(
    caught: unknown,
    options: Pick<DecisionOptions, 'onRedisError'> | undefined,
  ): { policy: 'allow' | 'deny'; error: unknown } {
    const error = translated(caught);
    const policy = this.policyFor(options);
    if (error instanceof RateLimitConfigError || policy === 'throw') throw error;
    return { policy, error };
  }

  private policyFor(options: Pick<DecisionOptions, 'onRedisError'> | undefined): RedisErrorPolicy {
    return options?.onRedisError ?? this.defaultPolicy;
  }

  /** One decision made without Redis: counted, logged (once per interval) and part of the stretch. */
  private recordDegraded(functionName: string, kind: FallbackKind, error: unknown): void {
    this.metrics.recordFallback(functionName, kind);
    this.degradedLog.fallback(kind, error);
    this.stretch.record(kind, error);
  }

  /** The outcome `policy` gives a peek when Redis could not decide, logged as degraded mode. */
  private byPolicy(rules: readonly SlidingLimitRule[], policy: 'allow' | 'deny', error: unknown): CallOutcome {
    this.degradedLog.fallback(policy, error);
    return policyOutcome(rules, policy, this.denyRetryAfterMs);
  }
}

/** The insurance limiter's decision, marked as made without Redis (on every limit, as the caller reads it). */
function asDegraded(decision: MultiRateLimitDecision, kind: 'insurance'): MultiRateLimitDecision {
  for (const limit of decision.limits) limit.degraded = kind;
  decision.degraded = kind;
  return decision;
}
