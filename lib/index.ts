// The public API of nestjs-sliding-limit. Nothing outside this file is part of it.

// Limiter
export { SlidingWindowLimiter } from './sliding-window.limiter';
export type {
  CanarySplit,
  ClockSource,
  DecisionOptions,
  ExecutionMode,
  FunctionSelection,
  KeyedSlidingLimitRule,
  LoadFunctionsPolicy,
  MultiRateLimitDecision,
  RateLimitDecision,
  RateLimitState,
  RedisConnection,
  RedisErrorPolicy,
  SlidingLimitRule,
  SlidingWindowLimiterOptions,
} from './limiter/sliding-window-limiter.interfaces';
export type { LimiterLogger } from './limiter/degraded-mode-log';
export type { FunctionCallMetrics, LimiterErrorKind } from './metrics/limiter-metrics';
export type { LimiterBackend, KeyCommands } from './limiter/limiter-backend';

// Operations: metrics and instance reports
export { registerPrometheusMetrics, DEFAULT_PROMETHEUS_PREFIX, type PrometheusExport, type PrometheusExportOptions } from './metrics/prometheus';
export { InstanceReporter, DEFAULT_REPORT_INTERVAL_MS, type InstanceReporterOptions } from './metrics/instance-reporter';
export { parseInstanceReport, instanceReportKey, type InstanceReport } from './metrics/instance-report';
export { LIMITER_DEFAULTS } from './limiter/limiter-options';
export { MAX_LIMIT, MAX_WINDOW_MS } from './limiter/limit-rule';

// Redis side
export { DEFAULT_FUNCTION_NAME, FUNCTION_VERSIONS, KNOWN_FUNCTION_NAMES } from './redis/function-versions';
export type { AllowCall, BatchFunction, CallOutcome, FunctionContract, LimitOutcome } from './redis/contracts/function-contract';
export { LUA_DIR } from './redis/lua-library';

// Errors
export { SlidingLimitError } from './errors/sliding-limit.error';
export { RateLimitConfigError } from './errors/rate-limit-config.error';
export { FunctionNotLoadedError } from './errors/function-not-loaded.error';
export { FunctionCodeMismatchError } from './errors/function-code-mismatch.error';
export { FunctionNameTakenError } from './errors/function-name-taken.error';
export { ClockSkewError } from './errors/clock-skew.error';
export { UnexpectedReplyError } from './errors/unexpected-reply.error';
export { RedisUnavailableError } from './errors/redis-unavailable.error';

// Nest integration
export { RateLimitModule } from './rate-limit.module';
export type {
  RateLimitModuleAsyncOptions,
  RateLimitModuleExtras,
  RateLimitModuleForRootOptions,
  RateLimitOptionsFactory,
} from './rate-limit.module-definition';
export type {
  RateLimitErrorBodyStyle,
  RateLimitHeaderStyle,
  RateLimitKey,
  RateLimitKeyFunction,
  RateLimitKeyValue,
  RateLimitModuleOptions,
  RateLimitRequest,
  ResolvedRateLimitOptions,
  SlidingLimitOptions,
} from './rate-limit.options';
export {
  DEFAULT_KEY,
  DEFAULT_KEY_PREFIX,
  RATE_LIMIT_CONNECTION,
  RATE_LIMIT_OPTIONS,
  SKIP_RATE_LIMIT_METADATA,
  SLIDING_LIMIT_METADATA,
} from './rate-limit.constants';
export { SkipRateLimit, SlidingLimit } from './sliding-limit.decorator';
export { SlidingLimitGuard, type RateLimitHttpContext } from './sliding-limit.guard';
export { InjectSlidingLimiter } from './nest/inject-sliding-limiter';
export { SlidingLimitPlans } from './nest/rate-limit-plans';
export type { CompiledLimit, HandlerPlan } from './nest/limit-plan';
export type { CompiledKey, KeySource } from './nest/key-template';
export type { RateLimitConnection } from './nest/rate-limit-connection';
export { PROBLEM_JSON } from './nest/rate-limit-error-body';
export {
  TOO_MANY_REQUESTS_MESSAGE,
  TooManyRequestsException,
  type TooManyRequestsDetails,
} from './errors/too-many-requests.exception';

// Testing kit
export { RateLimitTestingModule, type RateLimitTestingOptions } from './testing/rate-limit-testing.module';
export { DEFAULT_TEST_START_TIME, TestClock } from './testing/test-clock';
export { MemoryBackend, MemoryRunner, type MemoryBackendOptions } from './memory/memory-backend';
export { ModelReplyError, SlidingWindowModel, type ModelEntry, type SlidingWindowModelOptions } from './memory/sliding-window-model';

// Health (for @nestjs/terminus, an optional peer dependency: loaded only when the indicator is constructed)
export {
  DEFAULT_HEALTH_TIMEOUT_MS,
  SlidingLimitHealthIndicator,
  type SlidingLimitHealthDetails,
  type SlidingLimitHealthOptions,
  type SlidingLimitHealthResult,
} from './health/sliding-limit.health';
