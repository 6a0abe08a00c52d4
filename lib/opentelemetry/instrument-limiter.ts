import {
  metrics as otelMetrics,
  trace,
  type Attributes,
  type BatchObservableResult,
  type Histogram,
  type Meter,
  type MeterProvider,
  type ObservableCounter,
} from '@opentelemetry/api';
import { EXPORTED_BOUNDS_SECONDS } from '../core/latency-histogram';
import { packageVersion } from '../core/package-version';
import { describeValue, hasMethods } from '../core/value-checks';
import type { SlidingWindowLimiter } from 'nestjs-sliding-limit';
import { leaseLimitTally, outcomesOf, type LabelledCount, type LimitCounts } from '../metrics/limit-tally';
import {
  OTEL_ATTRIBUTES as A,
  OTEL_METER_NAME,
  OTEL_METRIC_NAMES as N,
  OTEL_REJECTION_EVENT,
  versionOf,
} from './attributes';
import type { DecisionEvent } from 'nestjs-sliding-limit';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';

/** Options of {@link instrumentLimiter}. */
export interface LimiterInstrumentationOptions {
  /** Where the instruments are created. Default: the global `MeterProvider`. */
  meterProvider?: MeterProvider;
  /** Export the counters and the latency histogram. Default `true`. */
  metrics?: boolean;
  /**
   * Record each decision on the active span as `rate_limit.*` attributes, with a `rate_limit.rejected`
   * event on a rejection unless `{ rejectionEvent: false }`. No span is created. Default `true`.
   */
  spans?: boolean | { rejectionEvent?: boolean };
}

/** What {@link instrumentLimiter} set up. */
export interface LimiterInstrumentation {
  /** Stops recording: the listener leaves the limiter and the counters stop reporting. Idempotent. */
  close(): void;
}

/**
 * Exports a limiter's decisions to OpenTelemetry (`@opentelemetry/api`, an optional peer): counters per
 * function and per limit name (read when the SDK collects), the histogram `rate_limit.call.duration`,
 * and each decision on the active span; never a key. docs/metrics.md lists them. One limiter per meter
 * provider: two would report the same series.
 * @throws RateLimitConfigError when the arguments are invalid
 */
export function instrumentLimiter(
  limiter: SlidingWindowLimiter,
  options: LimiterInstrumentationOptions = {},
): LimiterInstrumentation {
  const problems = describeInstrumentationOptionProblems(options);
  if (!hasMethods(limiter, 'onDecision') || !hasMethods((limiter as { metrics?: unknown }).metrics, 'snapshot'))
    problems.unshift(`limiter must be a SlidingWindowLimiter, got ${describeValue(limiter)}`);
  if (problems.length > 0) throw new RateLimitConfigError(problems, 'instrumentLimiter');
  const withMetrics = options.metrics !== false;
  const spans = options.spans ?? true;
  const withSpans = spans !== false;
  const rejectionEvent = withSpans && (spans === true || spans.rejectionEvent !== false);
  const closers: (() => void)[] = [];

  let histogram: Histogram | undefined;
  if (withMetrics) {
    const meter = (options.meterProvider ?? otelMetrics.getMeterProvider()).getMeter(OTEL_METER_NAME, scopeVersion());
    const counter = (name: string, description: string, unit: string) =>
      meter.createObservableCounter(name, { description, unit });
    const calls = counter(N.calls, 'Rate limit decisions asked of Redis (failed calls included).', '{call}');
    const decisions = counter(N.decisions, 'Rate limit decisions by outcome.', '{decision}');
    const errors = counter(N.errors, 'Failed rate limit calls by kind.', '{error}');
    const blocked = counter(
      N.blockedLocally,
      'Rejections answered by the local block cache without a Redis call (also counted as rejected decisions).',
      '{decision}',
    );
    const degraded = counter(
      N.degradedDecisions,
      'Decisions made without Redis after a failed call: allow, deny (the onRedisError policy) or insurance.',
      '{decision}',
    );
    const observables: ObservableCounter[] = [calls, decisions, errors, blocked, degraded];
    // One callback for all five: one snapshot of the limiter per collection.
    const observe = (result: BatchObservableResult) => {
      for (const m of limiter.metrics.snapshot()) {
        const base = functionAttributes(m.functionName);
        result.observe(calls, m.calls, base);
        result.observe(decisions, m.allowed, { ...base, [A.outcome]: 'allowed' });
        result.observe(decisions, m.rejected, { ...base, [A.outcome]: 'rejected' });
        result.observe(blocked, m.blockedLocally ?? 0, base);
        for (const [kind, count] of Object.entries(m.errors))
          result.observe(errors, count, { ...base, [A.errorType]: kind });
        for (const [kind, count] of Object.entries(m.fallbacks ?? {}))
          result.observe(degraded, count, { ...base, [A.degraded]: kind });
      }
    };
    meter.addBatchObservableCallback(observe, observables);
    closers.push(() => meter.removeBatchObservableCallback(observe, observables));
    closers.push(observeLimits(meter, counter, limiter));
    histogram = meter.createHistogram(N.callDuration, {
      description: 'Latency of the rate limit calls to Redis that made a decision (degraded ones: the failed call).',
      unit: 's',
      advice: { explicitBucketBoundaries: EXPORTED_BOUNDS_SECONDS },
    });
  }

  const duration = histogram;
  if (duration || withSpans) {
    closers.push(
      limiter.onDecision((event) => {
        if (duration && event.latencyMs !== undefined)
          duration.record(event.latencyMs / 1000, functionAttributes(event.functionName));
        if (withSpans) recordOnActiveSpan(event, rejectionEvent);
      }),
    );
  }

  let closed = false;
  return {
    close() {
      if (closed) return;
      closed = true;
      for (const close of closers) close();
    },
  };
}

type CreateCounter = (name: string, description: string, unit: string) => ObservableCounter;

/** The per-limit counters, read from the limiter's shared tally; returns what stops them. */
function observeLimits(meter: Meter, counter: CreateCounter, limiter: SlidingWindowLimiter): () => void {
  const lease = leaseLimitTally(limiter);
  const decisions = counter(
    N.limitDecisions,
    'Redis decisions per limit and what it said: allowed (it had room), rejected (it was full, the request was ' +
      'refused), would_reject (a shadow limit full, the request admitted).',
    '{decision}',
  );
  const degraded = counter(N.limitDegradedDecisions, 'Decisions made without Redis per limit, by kind.', '{decision}');
  const overrides = counter(
    N.limitOverrides,
    'Redis decisions per limit in which a per-key override applied.',
    '{decision}',
  );
  // Each counter with the attribute its values go under and where a limit's counts give them.
  const series: [ObservableCounter, string, (c: LimitCounts) => readonly LabelledCount[]][] = [
    [decisions, A.outcome, outcomesOf],
    [degraded, A.degraded, (c) => Object.entries(c.degraded)],
    [overrides, A.override, (c) => Object.entries(c.overrides)],
  ];
  const observables = series.map(([instrument]) => instrument);
  const observe = (result: BatchObservableResult) => {
    for (const c of lease.tally.snapshot()) {
      const base: Attributes = { [A.limitName]: c.limit, [A.limitMode]: c.mode };
      for (const [instrument, attribute, pick] of series)
        for (const [value, count] of pick(c)) result.observe(instrument, count, { ...base, [attribute]: value });
    }
  };
  meter.addBatchObservableCallback(observe, observables);
  return () => {
    meter.removeBatchObservableCallback(observe, observables);
    lease.release();
  };
}

/** The decision as attributes of the active span, when there is one that records. */
function recordOnActiveSpan(event: DecisionEvent, rejectionEvent: boolean): void {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return;
  let remaining = Number.POSITIVE_INFINITY;
  for (const limit of event.limits) remaining = Math.min(remaining, limit.remaining);
  const attributes: Attributes = {
    ...functionAttributes(event.functionName),
    [A.allowed]: event.allowed,
    [A.cost]: event.cost,
    [A.remaining]: Number.isFinite(remaining) ? remaining : 0,
    [A.retryAfterMs]: event.retryAfterMs,
  };
  // The limiter has checked them: one string per limit, or none.
  const names = event.limitNames;
  if (names) attributes[A.limitNames] = names.slice();
  if (event.degraded) {
    attributes[A.degraded] = event.degraded;
    // Why Redis did not decide: the kind the errors counter counts it under.
    if (event.degradedCause) attributes[A.errorType] = event.degradedCause;
  }
  if (event.blockedLocally) attributes[A.blockedLocally] = true;
  span.setAttributes(attributes);
  if (event.allowed || !rejectionEvent) return;
  const details: Attributes = { [A.retryAfterMs]: event.retryAfterMs };
  if (names) details[A.rejectedLimitNames] = names.filter((_, i) => event.limits[i]?.allowed === false);
  span.addEvent(OTEL_REJECTION_EVENT, details);
}

/** Attributes of one function name, made once: the histogram is recorded for every decision. */
const attributesByFunction = new Map<string, Attributes>();
function functionAttributes(functionName: string): Attributes {
  let attributes = attributesByFunction.get(functionName);
  if (!attributes) {
    attributes = Object.freeze({ [A.functionName]: functionName, [A.functionVersion]: versionOf(functionName) });
    attributesByFunction.set(functionName, attributes);
  }
  return attributes;
}

/** Problems of {@link LimiterInstrumentationOptions}, each naming its option. */
export function describeInstrumentationOptionProblems(options: unknown): string[] {
  if (typeof options !== 'object' || options === null)
    return [`options must be an object, got ${describeValue(options)}`];
  const { meterProvider, metrics, spans, ...unknown } = options as Record<string, unknown>;
  const problems = Object.keys(unknown).map(
    (name) => `unknown option ${name}; known options: meterProvider, metrics, spans`,
  );
  if (meterProvider !== undefined && !hasMethods(meterProvider, 'getMeter'))
    problems.push(`meterProvider must be an OpenTelemetry MeterProvider, got ${describeValue(meterProvider)}`);
  if (metrics !== undefined && typeof metrics !== 'boolean')
    problems.push(`metrics must be true or false, got ${describeValue(metrics)}`);
  const spanProblem = `spans must be true, false or { rejectionEvent: boolean }, got ${describeValue(spans)}`;
  if (spans !== undefined && typeof spans !== 'boolean') {
    if (typeof spans !== 'object' || spans === null) problems.push(spanProblem);
    else {
      const { rejectionEvent, ...rest } = spans as Record<string, unknown>;
      if (Object.keys(rest).length > 0 || (rejectionEvent !== undefined && typeof rejectionEvent !== 'boolean'))
        problems.push(spanProblem);
    }
  }
  return problems;
}

/** This package's version, the meter's scope version; none when its package.json cannot be read. */
function scopeVersion(): string | undefined {
  try {
    return packageVersion();
  } catch {
    return undefined;
  }
}
