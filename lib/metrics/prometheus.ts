import type * as PromClient from 'prom-client';
import { loadOptionalPeer } from '../core/optional-peer';
import { describeValue } from '../core/value-checks';
import { EXPORTED_BOUND_INDEXES, EXPORTED_BOUNDS_SECONDS } from '../core/latency-histogram';
import { DEGRADED_WINDOW_MS } from '../limiter/degraded-stretch';
import { leaseLimitTally, outcomesOf, type LabelledCount, type LimitCounts } from './limit-tally';
import type { SlidingWindowLimiter } from 'nestjs-sliding-limit';
import type { FunctionCallMetrics } from '../core/call-metrics';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';

/** What this export needs of a prom-client `Registry`, structural so the types never require prom-client. */
export interface PrometheusRegistry {
  registerMetric(metric: never): void;
  removeSingleMetric(name: string): void;
  readonly contentType: string;
}

/** Options of {@link registerPrometheusMetrics}. */
export interface PrometheusExportOptions {
  /** Where to register. Default: prom-client's global `register`. */
  registry?: PrometheusRegistry;
  /** Prefix of every metric name. Default `sliding_limit_`. */
  prefix?: string;
}

/** What {@link registerPrometheusMetrics} registered. */
export interface PrometheusExport {
  /** The metric names, as registered. */
  readonly names: readonly string[];
  /** Removes the metrics from the registry. */
  unregister(): void;
}

/** The problem of a metric name prefix, if any. */
export function describePrefixProblems(prefix: unknown): string[] {
  if (typeof prefix === 'string' && /^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(prefix)) return [];
  return [`prefix must be a Prometheus metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*), got ${describeValue(prefix)}`];
}

/**
 * Exports a limiter's metrics to Prometheus through prom-client (an optional peer: `npm i prom-client`):
 * calls, decisions, errors, local blocks, degraded decisions and latency per function, read at scrape
 * time, and decisions per `@SlidingLimit` name and mode (never a key). docs/metrics.md lists them.
 * One limiter per registry and prefix: a second registration under the same names throws.
 * @throws RateLimitConfigError when prom-client is not installed or the options are invalid
 */
export function registerPrometheusMetrics(
  limiter: SlidingWindowLimiter,
  options: PrometheusExportOptions = {},
): PrometheusExport {
  const problems: string[] = [];
  if (typeof limiter?.metrics?.snapshot !== 'function')
    problems.push(`limiter must be a SlidingWindowLimiter, got ${describeValue(limiter)}`);
  const prefix = options.prefix ?? 'sliding_limit_';
  problems.push(...describePrefixProblems(prefix));
  if (problems.length > 0) throw new RateLimitConfigError(problems, 'registerPrometheusMetrics');

  const prom = loadOptionalPeer<typeof PromClient>(
    'prom-client',
    'registerPrometheusMetrics',
    'the Prometheus export needs prom-client, an optional peer dependency that is not installed; run: npm i prom-client',
  );
  const registry = (options.registry ?? prom.register) as PromClient.Registry;
  const metrics = limiter.metrics;
  // An OpenMetrics registry appends `_total` to counter names itself.
  const total = String(registry.contentType) === prom.Registry.OPENMETRICS_CONTENT_TYPE ? '' : '_total';
  const registers = [registry];
  const names: string[] = [];
  // Counted per decision while registered; shared with the OpenTelemetry export of the same limiter.
  const limitTally = leaseLimitTally(limiter);
  const unregister = () => {
    for (const name of names) registry.removeSingleMetric(name);
    limitTally.release();
  };
  const register = (name: string, create: (name: string) => unknown): void => {
    try {
      create(name);
      names.push(name);
    } catch (error) {
      unregister();
      throw error;
    }
  };

  type Inc = (labels: Record<string, string>, value: number) => void;
  /** A counter whose values are all set at scrape time by `count` (reset, then counted again). */
  const scrapedCounter = (suffix: string, help: string, labelNames: string[], count: (inc: Inc) => void) =>
    register(
      `${prefix}${suffix}${total}`,
      (name) =>
        new prom.Counter({
          name,
          help,
          labelNames,
          registers,
          collect() {
            this.reset();
            count((labels, value) => this.inc(labels, value));
          },
        }),
    );
  const snapshotCounter = (
    suffix: string,
    help: string,
    labelNames: string[],
    fill: (m: FunctionCallMetrics, inc: Inc) => void,
  ) =>
    scrapedCounter(suffix, help, labelNames, (inc) => {
      for (const m of metrics.snapshot()) fill(m, inc);
    });

  snapshotCounter(
    'calls',
    'Rate limit decisions asked of Redis, per function name (failed calls included).',
    ['function'],
    (m, inc) => inc({ function: m.functionName }, m.calls),
  );
  snapshotCounter(
    'decisions',
    'Rate limit decisions per function name and outcome.',
    ['function', 'outcome'],
    (m, inc) => {
      inc({ function: m.functionName, outcome: 'allowed' }, m.allowed);
      inc({ function: m.functionName, outcome: 'rejected' }, m.rejected);
    },
  );
  snapshotCounter('errors', 'Failed rate limit calls per function name and kind.', ['function', 'kind'], (m, inc) => {
    for (const [kind, count] of Object.entries(m.errors)) inc({ function: m.functionName, kind }, Number(count));
  });
  snapshotCounter(
    'blocked_locally',
    'Rejections answered by the local block cache without a Redis call (also counted as rejected decisions).',
    ['function'],
    (m, inc) => inc({ function: m.functionName }, m.blockedLocally ?? 0),
  );
  const degradedByKind = (m: FunctionCallMetrics, inc: Inc) => {
    for (const [kind, count] of Object.entries(m.fallbacks ?? {}))
      inc({ function: m.functionName, kind }, Number(count));
  };
  snapshotCounter(
    'degraded_decisions',
    'Decisions made without Redis (after a failed call) per function name and kind: allow, deny or insurance.',
    ['function', 'kind'],
    degradedByKind,
  );
  register(
    `${prefix}degraded`,
    (name) =>
      new prom.Gauge({
        name,
        help: `1 while the limiter decides without Redis (a degraded decision in the last ${DEGRADED_WINDOW_MS / 1000} s), else 0.`,
        registers,
        collect() {
          this.set(limiter.status().degraded ? 1 : 0);
        },
      }),
  );
  /** A counter read from the per-limit tally, labelled by limit, mode and `labelName` (values from `pick`). */
  const limitCounter = (
    suffix: string,
    help: string,
    labelName: string,
    pick: (c: LimitCounts) => readonly LabelledCount[],
  ) =>
    scrapedCounter(suffix, help, ['limit', 'mode', labelName], (inc) => {
      for (const c of limitTally.tally.snapshot()) {
        for (const [value, count] of pick(c)) inc({ limit: c.limit, mode: c.mode, [labelName]: value }, count);
      }
    });
  limitCounter(
    'limit_decisions',
    'Redis decisions per limit name, mode (enforced, shadow) and what the limit said: allowed (it had room), ' +
      'rejected (it was full, the request was refused), would_reject (a shadow limit full, the request admitted).',
    'outcome',
    outcomesOf,
  );
  limitCounter(
    'limit_degraded_decisions',
    'Decisions made without Redis per limit name, mode and kind: allow, deny or insurance.',
    'kind',
    (c) => Object.entries(c.degraded),
  );
  limitCounter(
    'limit_overrides',
    'Redis decisions in which a per-key override applied, per limit name, mode and override: limit, exempt, block.',
    'override',
    (c) => Object.entries(c.overrides),
  );
  const Histogram = precomputedHistogramClass(prom);
  register(`${prefix}call_duration_seconds`, (name) => new Histogram(name, limiter, registers));

  return { names, unregister };
}

// prom-client's Histogram takes observations one by one; this one reports the limiter's bucket counts.
function precomputedHistogramClass(prom: typeof PromClient) {
  type Label = 'function' | 'le';
  type Exposition = PromClient.MetricObjectWithValues<PromClient.MetricValueWithName<Label>>;
  return class PrecomputedLatencyHistogram extends prom.Histogram<Label> {
    private readonly metricName: string;
    // Typed as an enum by prom-client's declarations, a string ('histogram') at runtime: read it, don't restate it.
    private readonly metricType = (this as unknown as { type: PromClient.MetricType }).type;

    constructor(
      name: string,
      private readonly limiter: SlidingWindowLimiter,
      registers: PromClient.Registry[],
    ) {
      super({ name, help: HISTOGRAM_HELP, labelNames: ['function'], buckets: EXPORTED_BOUNDS_SECONDS, registers });
      this.metricName = name;
    }

    override get(): Promise<Exposition> {
      // Nothing to wait for: the values are read from the limiter's counters at scrape time.
      return Promise.resolve({
        name: this.metricName,
        help: HISTOGRAM_HELP,
        type: this.metricType,
        aggregator: 'sum',
        collect: () => undefined,
        values: this.values(),
      });
    }

    getForPromString(): Promise<Exposition> {
      return this.get();
    }

    private values(): PromClient.MetricValueWithName<Label>[] {
      const name = this.metricName;
      const values: PromClient.MetricValueWithName<Label>[] = [];
      for (const { functionName } of this.limiter.metrics.snapshot()) {
        const histogram = this.limiter.metrics.histogramOf(functionName);
        if (!histogram) continue;
        const counts = histogram.bucketCounts();
        let cumulative = 0;
        let next = 0;
        for (let i = 0; i < EXPORTED_BOUND_INDEXES.length; i++) {
          for (; next <= EXPORTED_BOUND_INDEXES[i]; next++) cumulative += counts[next];
          values.push({
            metricName: `${name}_bucket`,
            labels: { le: EXPORTED_BOUNDS_SECONDS[i], function: functionName },
            value: cumulative,
          });
        }
        values.push({
          metricName: `${name}_bucket`,
          labels: { le: '+Inf', function: functionName },
          value: histogram.count,
        });
        values.push({ metricName: `${name}_sum`, labels: { function: functionName }, value: histogram.sum / 1000 });
        values.push({ metricName: `${name}_count`, labels: { function: functionName }, value: histogram.count });
      }
      return values;
    }
  };
}

const HISTOGRAM_HELP = 'Latency of rate limit calls per function name, in seconds.';
