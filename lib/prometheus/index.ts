// nestjs-sliding-limit/prometheus: the Prometheus export, for prom-client, an optional peer.

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
