/** Metadata key of the limits set with `@SlidingLimit` (an array, on a class or a handler). */
export const SLIDING_LIMIT_METADATA = 'sliding-limit:limits';

/** Metadata key set by `@SkipRateLimit()` (a boolean, on a class or a handler). */
export const SKIP_RATE_LIMIT_METADATA = 'sliding-limit:skip';

/** Injection token of the validated, defaulted module options ({@link ResolvedRateLimitOptions}). */
export const RATE_LIMIT_OPTIONS = Symbol('sliding-limit:options');

/** Injection token of the module options exactly as the user passed them (ConfigurableModuleBuilder). */
export const RATE_LIMIT_RAW_OPTIONS = Symbol('sliding-limit:raw-options');

/** Injection token of the Redis connection the limiter uses, with whether the module owns it. */
export const RATE_LIMIT_CONNECTION = Symbol('sliding-limit:connection');

/** Default key of a limit that names none: the client IP (`req.ip`, which honours `trust proxy`). */
export const DEFAULT_KEY = 'ip';
