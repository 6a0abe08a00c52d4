import { ClockSkewError } from '../core/errors/clock-skew.error';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import type { CallOutcome } from '../core/function-contract';
import type { SlidingLimitRule } from '../core/limit-rule';
import { scrubSecrets } from '../core/redact';
import { errorKindOf } from '../redis/error-kind';
import { isClockSkew } from '../redis/reply';
import type { Decided } from './decided';
import { DegradedModeLog, type LimiterLogger } from './degraded-mode-log';
import { policyOutcome } from './fallback-outcomes';
import type { ActiveVersion } from './function-routing';
import type { Insurance } from './insurance';
import type { LimiterMetrics } from './limiter-metrics';
import type { DecisionOptions, RedisErrorPolicy } from './sliding-window-limiter.interfaces';

/** v2's CLOCKSKEW error reply as the typed error; anything else as it is, secrets scrubbed. */
export function translated(error: unknown): unknown {
  return scrubSecrets(isClockSkew(error) ? new ClockSkewError((error as Error).message, { cause: error }) : error);
}

/**
 * What happens when Redis cannot decide: the `onRedisError` policy (`allow`, `deny` or `throw`), the
 * in-memory insurance limiter for what would fail open, the degraded-mode log and the error and
 * fallback counters. The decision path hands every failure here, at one point; a configuration error
 * (a request its version cannot decide) is never a Redis failure and is rethrown as it is.
 */
export class FailurePolicy {
  private readonly degradedLog: DegradedModeLog;

  constructor(
    private readonly defaultPolicy: RedisErrorPolicy,
    private readonly metrics: LimiterMetrics,
    logger: LimiterLogger,
    /** How long a fail-closed decision tells the caller to wait: the circuit breaker's cool-down. */
    private readonly denyRetryAfterMs: number,
    private readonly insurance: Insurance | undefined,
    /** The contract and name of a decision that failed before a version was picked (start-up). */
    private readonly stableVersion: () => Pick<ActiveVersion, 'contract'>,
  ) {
    this.degradedLog = new DegradedModeLog(logger);
  }

  /** Redis decided: ends degraded mode (cheap when it was not on). */
  recovered(): void {
    this.degradedLog.recovered();
  }

  /**
   * The decision when Redis could not make it: by the policy (rejected with the error for `throw`);
   * one that would fail open is made by the insurance limiter when there is one.
   */
  async decide(
    caught: unknown,
    version: ActiveVersion | undefined,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    options: DecisionOptions | undefined,
    latencyMs: number,
  ): Promise<Decided> {
    if (caught instanceof RateLimitConfigError) throw caught;
    const error = translated(caught);
    const contract = (version ?? this.stableVersion()).contract;
    const functionName = contract.allowFunction;
    this.metrics.recordError(functionName, errorKindOf(error), latencyMs);
    const policy = this.policyFor(options);
    if (policy === 'throw') throw error;
    if (policy === 'allow' && this.insurance) {
      const outcome = await this.insurance.decide(contract, keys, rules, options?.cost ?? 1);
      this.metrics.recordFallback(functionName, 'insurance');
      this.degradedLog.fallback('insurance', error);
      return { allowed: outcome.allowed, limits: outcome.limits, functionName, degraded: 'insurance', latencyMs };
    }
    this.metrics.recordFallback(functionName, policy);
    return { ...this.byPolicy(rules, policy, error), degraded: policy, functionName, latencyMs };
  }

  /**
   * What a failed peek reports: the policy's outcome (never the insurance's: a peek records nothing),
   * or the error for `throw` and for a configuration error.
   */
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

  /** The outcome `policy` gives `rules` when Redis could not decide, logged as a degraded decision. */
  private byPolicy(rules: readonly SlidingLimitRule[], policy: 'allow' | 'deny', error: unknown): CallOutcome {
    this.degradedLog.fallback(policy, error);
    return policyOutcome(rules, policy, this.denyRetryAfterMs);
  }
}
