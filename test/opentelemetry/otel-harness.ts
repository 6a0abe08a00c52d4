import { context, type Attributes } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type MetricData,
  type ScopeMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';

/** The OpenTelemetry SDK with in-memory exporters: what a test reads its metrics and spans from. */
export interface OtelHarness {
  meterProvider: MeterProvider;
  tracerProvider: BasicTracerProvider;
  /** Exports once (a collection: the observable counters read the limiter now) and returns the metrics. */
  collect(): Promise<MetricData[]>;
  /** The same, grouped by instrumentation scope (meter). */
  collectScopes(): Promise<ScopeMetrics[]>;
  /** The spans ended so far. */
  spans(): ReadableSpan[];
  shutdown(): Promise<void>;
}

/**
 * A meter provider whose reader exports only when asked, a tracer provider exporting each ended span
 * to memory, and the async-hooks context manager (global: the active span follows async calls).
 */
export function startOtel(): OtelHarness {
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const spanExporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter)] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  return {
    meterProvider,
    tracerProvider,
    async collect() {
      return (await this.collectScopes()).flatMap((scope) => scope.metrics);
    },
    async collectScopes() {
      metricExporter.reset();
      await reader.forceFlush();
      return metricExporter.getMetrics().flatMap((resource) => resource.scopeMetrics);
    },
    spans: () => spanExporter.getFinishedSpans(),
    async shutdown() {
      context.disable();
      await meterProvider.shutdown();
      await tracerProvider.shutdown();
    },
  };
}

/** The value of one data point of a counter (or a histogram's count), by name and attributes. */
export function valueOf(metrics: MetricData[], name: string, attributes: Attributes): number | undefined {
  const metric = metrics.find((m) => m.descriptor.name === name);
  const point = metric?.dataPoints.find((p) => sameAttributes(p.attributes, attributes));
  if (point === undefined) return undefined;
  const value = point.value as number | { count: number };
  return typeof value === 'number' ? value : value.count;
}

/** Every data point of one metric, as `[attributes, value]`. */
export function pointsOf(metrics: MetricData[], name: string): [Attributes, unknown][] {
  const metric = metrics.find((m) => m.descriptor.name === name);
  return (metric?.dataPoints ?? []).map((p) => [p.attributes, p.value]);
}

function sameAttributes(a: Attributes, b: Attributes): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}
