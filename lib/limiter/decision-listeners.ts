import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import type { RateLimitDecision } from '../core/decisions';
import type { SlidingLimitRule } from '../core/limit-rule';
import { describeValue } from '../core/value-checks';
import { messageOf } from '../redis/reply';
import type { LimiterLogger } from './degraded-mode-log';
import type { Decided } from './decided';
import type { DecisionEvent, DecisionListener, DecisionOptions } from './sliding-window-limiter.interfaces';

const NONE: readonly DecisionListener[] = [];

/**
 * The limiter's decision listeners (exporters: OpenTelemetry metrics and spans). The decision path
 * asks {@link DecisionListeners.active} once and builds an event only when someone listens.
 */
export class DecisionListeners {
  /** Replaced, never mutated, so that a listener can unsubscribe while the others are called. */
  private listeners = NONE;
  private failureLogged = false;

  constructor(private readonly logger: LimiterLogger) {}

  /** Whether any listener is subscribed. */
  get active(): boolean {
    return this.listeners.length > 0;
  }

  /** Subscribes `listener`; returns the function that unsubscribes it. */
  add(listener: DecisionListener): () => void {
    if (typeof listener !== 'function') {
      throw new RateLimitConfigError(
        [`listener must be a function, got ${describeValue(listener)}`],
        'SlidingWindowLimiter.onDecision',
      );
    }
    // A wrapper, so that the same function subscribed twice is two subscriptions, removed one by one.
    const entry: DecisionListener = (event) => listener(event);
    this.listeners = [...this.listeners, entry];
    return () => {
      this.listeners = this.listeners.filter((other) => other !== entry);
    };
  }

  /** Tells every listener of one decision; a listener that throws changes nothing but a log line. */
  notify(
    decided: Decided,
    rules: readonly SlidingLimitRule[],
    limits: readonly RateLimitDecision[],
    retryAfterMs: number,
    options: DecisionOptions | undefined,
  ): void {
    const event: DecisionEvent = {
      functionName: decided.functionName,
      allowed: decided.allowed,
      rules,
      limits,
      cost: options?.cost ?? 1,
      retryAfterMs,
      latencyMs: decided.latencyMs,
      degraded: decided.degraded,
      degradedCause: decided.degradedCause,
      blockedLocally: decided.blockedLocally === true,
      limitNames: options?.limitNames,
    };
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        if (this.failureLogged) continue;
        this.failureLogged = true;
        this.logger.warn(
          `A decision listener threw (${messageOf(error)}); the decision stands. Further failures are not logged`,
        );
      }
    }
  }
}
