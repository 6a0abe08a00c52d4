// The public API of nestjs-sliding-limit. Nothing outside this file is part of it.

// Limiter
export { SlidingWindowLimiter } from './limiter/sliding-window.limiter';
export type { CanarySplit, FunctionSelection } from './core/function-selection';
export type {
  ClockSource,
  DecisionEvent,
  DecisionListener,
  DecisionOptions,
  FunctionNeeds,
  LimiterStatus,
  RedisErrorPolicy,
  StartupFailure,
  SlidingWindowLimiterOptions,
} from './limiter/sliding-window-limiter.interfaces';
export { DEGRADED_WINDOW_MS, type DegradedMode } from './limiter/degraded-stretch';
export type { ExecutionMode, LoadFunctionsPolicy } from './core/lua-runner';
export type { KeyedSlidingLimitRule, SlidingLimitRule } from './core/limit-rule';
export type { MultiRateLimitDecision, RateLimitDecision, RateLimitState } from './core/decisions';
export type { RedisConnection } from './core/redis-connection';
export type { LimiterLogger } from './limiter/degraded-mode-log';
export type { FallbackKind, FunctionCallMetrics, LimiterErrorKind } from './core/call-metrics';
export type { LimiterBackend, KeyCommands, LibraryReload, OverridesStoreSettings } from './core/limiter-backend';

// Per-key overrides (limiter.overrides; the stores for use without a limiter)
export type {
  KeyOverride,
  OverrideAction,
  OverrideListOptions,
  OverrideSetOptions,
  OverrideStore,
  StoredOverride,
} from './core/key-overrides';
export { RedisOverridesStore, type OverridesStoreOptions } from './redis/overrides-store';
export { MemoryOverridesStore, type MemoryOverridesStoreOptions } from './memory/memory-overrides-store';

// Operations: metrics and instance reports
export {
  registerPrometheusMetrics,
  DEFAULT_PROMETHEUS_PREFIX,
  type PrometheusExport,
  type PrometheusExportOptions,
} from './metrics/prometheus';
export {
  RateLimitPrometheusExport,
  RateLimitPrometheusModule,
  type RateLimitPrometheusAsyncOptions,
  type RateLimitPrometheusForRootOptions,
} from './prometheus/rate-limit-prometheus.module';
export { InstanceReporter, type InstanceReporterOptions, type ReportedLimiter } from './limiter/instance-reporter';
export { DEFAULT_REPORT_INTERVAL_MS } from './core/instance-report';
export { parseInstanceReport, instanceReportKey, type InstanceReport } from './core/instance-report';
export { LIMITER_DEFAULTS } from './limiter/limiter-options';
export { MAX_BUCKETED_LIMIT, MAX_LIMIT, MAX_LOG_COST, MAX_SUB_WINDOWS, MAX_WINDOW_MS } from './core/limit-rule';

// Redis side
export { DEFAULT_FUNCTION_NAME, FUNCTION_VERSIONS, KNOWN_FUNCTION_NAMES } from './redis/function-versions';
export type { AllowCall, BatchFunction, CallOutcome, FunctionContract, LimitOutcome } from './core/function-contract';
export { LUA_DIR } from './redis/lua-library';
export type { ServerIdentity } from './core/server-identity';

// Errors
export { SlidingLimitError } from './core/errors/sliding-limit.error';
export { RateLimitConfigError } from './core/errors/rate-limit-config.error';
export { FunctionNotLoadedError } from './core/errors/function-not-loaded.error';
export { FunctionCodeMismatchError } from './core/errors/function-code-mismatch.error';
export { FunctionNameTakenError } from './core/errors/function-name-taken.error';
export { ClockSkewError } from './core/errors/clock-skew.error';
export { UnexpectedReplyError } from './core/errors/unexpected-reply.error';
export { RedisUnavailableError } from './core/errors/redis-unavailable.error';
export { FunctionsUnavailableError, type MissingFunctionSupport } from './core/errors/functions-unavailable.error';

// Nest integration
export { RateLimitModule } from './nest/rate-limit.module';
export type {
  RateLimitModuleAsyncOptions,
  RateLimitModuleExtras,
  RateLimitModuleForRootOptions,
  RateLimitOptionsFactory,
} from './nest/rate-limit.module-definition';
export type {
  RateLimitErrorBodyStyle,
  RateLimitHeaderStyle,
  RateLimitModuleOptions,
  RateLimitStore,
  ResolvedRateLimitOptions,
  SlidingLimitCandidate,
  SlidingLimitFixedOptions,
  SlidingLimitOptions,
  SlidingLimitPolicyOptions,
} from './nest/rate-limit.options';
export type {
  PolicyLimitValues,
  RateLimitPolicy,
  RateLimitPolicyFunction,
  RateLimitPolicyRef,
  RateLimitPolicyResult,
} from './nest/rate-limit-policy';
export { DEFAULT_MEMORY_STORE_KEYS } from './nest/rate-limit.options';
export { REFUSAL_LOG_LEVELS, type RateLimitRefusalLogLevel } from './nest/refusal-log-level';
export type { RateLimitKey, RateLimitKeyFunction, RateLimitKeyValue, RateLimitRequest } from './nest/rate-limit-key';
export {
  DEFAULT_KEY,
  RATE_LIMIT_CONNECTION,
  RATE_LIMIT_OPTIONS,
  SKIP_RATE_LIMIT_METADATA,
  SLIDING_LIMIT_METADATA,
} from './nest/rate-limit.constants';
export { DEFAULT_KEY_PREFIX } from './core/constants';
export type { RateLimitCost, RateLimitCostFunction } from './nest/rate-limit-cost';
export { SkipRateLimit, SlidingLimit } from './nest/sliding-limit.decorator';
export { SlidingLimitGuard, type RateLimitHttpContext } from './nest/sliding-limit.guard';
export type { RequestLimits } from './nest/request-policies';
export type { RateLimitErrorCode, RateLimitErrorPayload } from './nest/rate-limit-error-payload';
export type { NamedRule } from './nest/rate-limit-headers';
export { InjectSlidingLimiter } from './nest/inject-sliding-limiter';
export { SlidingLimitPlans } from './nest/rate-limit-plans';
export {
  RateLimitUsage,
  type RateLimitUsageEntry,
  type RateLimitUsageOptions,
  type RateLimitUsageReport,
} from './nest/rate-limit-usage';
export { DEFAULT_USAGE_PATH } from './nest/rate-limit-usage.controller';
export type { CompiledLimit, CompiledPolicy, HandlerPlan } from './nest/limit-plan';
export type { CompiledKey, KeySource } from './nest/key-template';
export type { RateLimitConnection } from './nest/rate-limit-connection';
export { PROBLEM_JSON } from './nest/rate-limit-error-body';
export {
  TOO_MANY_REQUESTS_MESSAGE,
  TooManyRequestsException,
  type TooManyRequestsDetails,
} from './nest/too-many-requests.exception';

// Testing kit
export {
  RateLimitTestingModule,
  type CompilableTestingModule,
  type OverridableTestingModule,
  type RateLimitTestingOptions,
  type RateLimitTestingOverride,
} from './testing/rate-limit-testing.module';
export { DEFAULT_TEST_START_TIME, TestClock } from './testing/test-clock';
export { MemoryBackend, MemoryRunner, type MemoryBackendOptions } from './memory/memory-backend';
export {
  ModelReplyError,
  SlidingWindowModel,
  type ModelEntry,
  type SlidingWindowModelOptions,
} from './memory/sliding-window-model';

// Health (for @nestjs/terminus, an optional peer dependency: loaded only when the indicator is constructed)
export {
  DEFAULT_HEALTH_TIMEOUT_MS,
  SlidingLimitHealthIndicator,
  type SlidingLimitHealthDetails,
  type SlidingLimitHealthOptions,
  type SlidingLimitHealthResult,
} from './health/sliding-limit.health';
