import type { FallbackKind, FunctionCallMetrics, LimiterErrorKind } from '../core/call-metrics';
import { LatencyHistogram } from '../core/latency-histogram';

class FunctionCounters {
  calls = 0;
  allowed = 0;
  rejected = 0;
  readonly errors: Partial<Record<LimiterErrorKind, number>> = {};
  readonly fallbacks: Partial<Record<FallbackKind, number>> = {};
  blockedLocally = 0;
  readonly latency = new LatencyHistogram();

  constructor(readonly functionName: string) {}

  snapshot(): FunctionCallMetrics {
    const { functionName, calls, allowed, rejected, blockedLocally } = this;
    return {
      functionName,
      calls,
      allowed,
      rejected,
      blockedLocally,
      errors: { ...this.errors },
      fallbacks: { ...this.fallbacks },
      latencyMs: this.latency.summary(),
    };
  }
}

/** In-process counters of a limiter per function name (what a canary is judged on), read by the exports and reports. */
export class LimiterMetrics {
  private readonly byFunction = new Map<string, FunctionCounters>();

  /** Records one decision. */
  recordDecision(functionName: string, allowed: boolean, latencyMs: number): void {
    const counters = this.countersOf(functionName);
    counters.calls++;
    if (allowed) counters.allowed++;
    else counters.rejected++;
    counters.latency.observe(latencyMs);
  }

  /** Records one failed call. */
  recordError(functionName: string, kind: LimiterErrorKind, latencyMs: number): void {
    const counters = this.countersOf(functionName);
    counters.calls++;
    counters.errors[kind] = (counters.errors[kind] ?? 0) + 1;
    counters.latency.observe(latencyMs);
  }

  /** Records one rejection made by the block cache, without a Redis call. */
  recordBlockedLocally(functionName: string): void {
    const counters = this.countersOf(functionName);
    counters.rejected++;
    counters.blockedLocally++;
  }

  /** Records one decision made without Redis (after {@link recordError} of the failure). */
  recordFallback(functionName: string, kind: FallbackKind): void {
    const counters = this.countersOf(functionName);
    counters.fallbacks[kind] = (counters.fallbacks[kind] ?? 0) + 1;
  }

  /** Current counters of every function name called so far. */
  snapshot(): FunctionCallMetrics[] {
    return [...this.byFunction.values()].map((counters) => counters.snapshot());
  }

  /** The histogram of one function name, for exporters that publish buckets. */
  histogramOf(functionName: string): LatencyHistogram | undefined {
    return this.byFunction.get(functionName)?.latency;
  }

  private countersOf(functionName: string): FunctionCounters {
    let counters = this.byFunction.get(functionName);
    if (!counters) {
      counters = new FunctionCounters(functionName);
      this.byFunction.set(functionName, counters);
    }
    return counters;
  }
}
