// The public API of nestjs-sliding-limit: what an application uses. Nothing outside this file is part
// of it, but for the subpath entry points of what needs an optional peer or is for tests: graphql,
// websockets, microservices, health, prometheus, opentelemetry, testing.

// Nest integration
export { RateLimitModule } from './nest/rate-limit.module';
export type {
  RateLimitModuleAsyncOptions,
  RateLimitModuleExtras,
  RateLimitModuleForRootOptions,
  RateLimitOptionsFactory,
} from './nest/rate-limit.module-definition';
export type { RateLimitErrorBodyStyle, RateLimitHeaderStyle, RateLimitModuleOptions } from './nest/rate-limit.options';
export type {
  SlidingLimitCandidate,
  SlidingLimitCommonOptions,
  SlidingLimitFixedOptions,
  SlidingLimitOptions,
  SlidingLimitPolicyOptions,
} from './nest/sliding-limit.options';
export type { RateLimitRefusalLogLevel } from './nest/refusal-log-level';
export { SkipRateLimit, SlidingLimit } from './nest/sliding-limit.decorator';
export { SlidingLimitGuard, type RateLimitHttpContext } from './nest/sliding-limit.guard';
export type { CompiledLimit, HandlerPlan } from './nest/limit-plan';
export { SlidingLimitPlans } from './nest/rate-limit-plans';
export type { RateLimitErrorCode, RateLimitErrorPayload } from './nest/rate-limit-error-payload';
export type { RateLimitKey, RateLimitKeyFunction, RateLimitKeyValue, RateLimitRequest } from './nest/rate-limit-key';
export type { RateLimitCost, RateLimitCostFunction } from './nest/rate-limit-cost';
export type {
  PolicyLimitValues,
  RateLimitPolicy,
  RateLimitPolicyFunction,
  RateLimitPolicyRef,
  RateLimitPolicyResult,
} from './nest/rate-limit-policy';
export {
  RateLimitUsage,
  type RateLimitUsageEntry,
  type RateLimitUsageOptions,
  type RateLimitUsageReport,
} from './nest/rate-limit-usage';
export { InjectSlidingLimiter } from './nest/inject-sliding-limiter';
export {
  TOO_MANY_REQUESTS_MESSAGE,
  TooManyRequestsException,
  type TooManyRequestsDetails,
} from './nest/too-many-requests.exception';

// Limiter
export { SlidingWindowLimiter } from './limiter/sliding-window.limiter';
export type {
  DecisionEvent,
  DecisionOptions,
  LimiterStatus,
  RedisErrorPolicy,
  SlidingWindowLimiterOptions,
  StartupFailure,
} from './limiter/sliding-window-limiter.interfaces';
export type { DegradedMode } from './limiter/degraded-stretch';
export type { LimiterLogger } from './limiter/degraded-mode-log';
export type { FallbackKind, LimiterErrorKind } from './core/call-metrics';
export type { CanarySplit } from './core/function-selection';
export type { SlidingLimitRule } from './core/limit-rule';
export type { MultiRateLimitDecision, RateLimitDecision, RateLimitState } from './core/decisions';
export type { ServerIdentity } from './core/server-identity';
export { DEFAULT_FUNCTION_NAME } from './redis/function-versions';
export { MemoryBackend } from './memory/memory-backend';

// Per-key overrides (limiter.overrides)
export type {
  KeyOverride,
  OverrideAction,
  OverrideListOptions,
  OverrideSetOptions,
  OverrideStore,
  StoredOverride,
} from './core/key-overrides';

// Errors
export { SlidingLimitError } from './core/errors/sliding-limit.error';
export { RateLimitConfigError } from './core/errors/rate-limit-config.error';
export { FunctionNotLoadedError } from './core/errors/function-not-loaded.error';
export { FunctionCodeMismatchError } from './core/errors/function-code-mismatch.error';
export { FunctionNameTakenError } from './core/errors/function-name-taken.error';
export { FunctionsUnavailableError, type MissingFunctionSupport } from './core/errors/functions-unavailable.error';
export { ClockSkewError } from './core/errors/clock-skew.error';
export { UnexpectedReplyError } from './core/errors/unexpected-reply.error';
export { RedisUnavailableError } from './core/errors/redis-unavailable.error';
