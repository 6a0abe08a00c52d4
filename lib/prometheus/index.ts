// The public API of nestjs-sliding-limit/prometheus: the Prometheus export, for prom-client, an
// optional peer dependency, so it is an entry point of its own (OpenTelemetry: nestjs-sliding-limit/opentelemetry).

export {
  RateLimitPrometheusModule,
  type RateLimitPrometheusAsyncOptions,
  type RateLimitPrometheusForRootOptions,
} from './rate-limit-prometheus.module';
export {
  registerPrometheusMetrics,
  type PrometheusExport,
  type PrometheusExportOptions,
  type PrometheusRegistry,
} from '../metrics/prometheus';
