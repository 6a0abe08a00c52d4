// nestjs-sliding-limit/opentelemetry: the OpenTelemetry export; it loads @opentelemetry/api, an optional peer.

export {
  instrumentLimiter,
  type LimiterInstrumentation,
  type LimiterInstrumentationOptions,
} from './instrument-limiter';
export {
  RateLimitInstrumentation,
  RateLimitOpenTelemetryModule,
  type RateLimitOpenTelemetryAsyncOptions,
  type RateLimitOpenTelemetryForRootOptions,
} from './rate-limit-opentelemetry.module';
export { OTEL_ATTRIBUTES, OTEL_METER_NAME, OTEL_METRIC_NAMES, OTEL_REJECTION_EVENT } from './attributes';
