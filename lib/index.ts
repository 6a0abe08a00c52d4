// The public API of nestjs-sliding-limit. Nothing outside this file is part of it.

// Limiter
export { SlidingWindowLimiter } from './sliding-window.limiter';
export type {
  ClockSource,
  ExecutionMode,
  KeyedSlidingLimitRule,
  LoadFunctionsPolicy,
  MultiRateLimitDecision,
  RateLimitDecision,
  RateLimitState,
  RedisConnection,
  SlidingLimitRule,
  SlidingWindowLimiterOptions,
} from './limiter/sliding-window-limiter.interfaces';
export { LIMITER_DEFAULTS } from './limiter/limiter-options';
export { MAX_LIMIT, MAX_WINDOW_MS } from './limiter/limit-rule';

// Redis side
export { DEFAULT_FUNCTION_NAME, FUNCTION_VERSIONS, KNOWN_FUNCTION_NAMES } from './redis/function-versions';
export type { FunctionContract } from './redis/contracts/function-contract';
export { LUA_DIR } from './redis/lua-library';

// Errors
export { SlidingLimitError } from './errors/sliding-limit.error';
export { RateLimitConfigError } from './errors/rate-limit-config.error';
export { FunctionNotLoadedError } from './errors/function-not-loaded.error';
export { FunctionCodeMismatchError } from './errors/function-code-mismatch.error';
export { ClockSkewError } from './errors/clock-skew.error';
export { UnexpectedReplyError } from './errors/unexpected-reply.error';

// Nest integration
