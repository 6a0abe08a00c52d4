// The public API of nestjs-sliding-limit/opentelemetry: the OpenTelemetry export. It loads
// @opentelemetry/api (an optional peer dependency), so it is an entry point of its own.

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
