import type { CanarySplit } from '../core/function-selection';
import type { ExecutionMode, LoadFunctionsPolicy } from '../core/lua-runner';
import type { RedisConnection } from '../core/redis-connection';
import type { LimiterLogger } from './degraded-mode-log';
import type { DegradedMode } from './degraded-stretch';
import type { LimiterBackend } from '../core/limiter-backend';
import type { SlidingLimitRule } from '../core/limit-rule';
import type { RateLimitDecision } from '../core/decisions';
import type { LimiterErrorKind } from '../core/call-metrics';

/** Where the limiter takes "now" from. */
export type ClockSource =
  /** `Date.now()` of this process (default). */
  | 'local'
  /** The Redis server's `TIME`, read inside the function: one clock for every gateway. */
  | 'server'
  /** A function returning epoch milliseconds; use it to control time in tests. */
  | (() => number);

/** What a decision does when Redis cannot make it (timeout, connection down, circuit open, error reply). */
export type RedisErrorPolicy =
  /** Fail open: admit the request (default). */
  | 'allow'
  /** Fail closed: reject the request. */
  | 'deny'
  /** Throw the error (`RedisUnavailableError`, `FunctionNotLoadedError`, `ClockSkewError`, …) to the caller. */
  | 'throw';

/** Per-call options of `consume`, `consumeAll` and `peek`. */
export interface DecisionOptions {
  /** Overrides the limiter's `onRedisError` for this call (e.g. `deny` on a money-moving endpoint). */
  onRedisError?: RedisErrorPolicy;
  /**
   * What this request weighs: a whole number from 1 (the default) to the smallest limit it is
   * checked against. It is admitted only if every limit has `cost` left; `count` and `remaining`
   * are in the same units. A cost other than 1 needs `sliding_allow_v2`.
   */
  cost?: number;
  /**
   * Names of the limits, one per rule and in the same order, handed to decision listeners
   * ({@link SlidingWindowLimiter.onDecision}) so that metrics and traces can say which limit decided.
   * The Nest guard sets them (the `@SlidingLimit` names); the limiter itself does not use them.
   */
  limitNames?: readonly string[];
}

/**
 * One decision, as {@link SlidingWindowLimiter.onDecision} listeners receive it after `consume` or
 * `consumeAll` has decided (by Redis, the block cache, the failure policy or the insurance limiter).
 * It holds no key: keys are identities (IP addresses, user ids) that metrics and traces should not
 * carry. A listener must not keep it: the arrays may be the caller's.
 */
export interface DecisionEvent {
  /** The function that decided, or that would have when Redis could not (e.g. `sliding_allow_v2`). */
  readonly functionName: string;
  /** Whether the request was admitted. */
  readonly allowed: boolean;
  /** The rules checked, in the order given. */
  readonly rules: readonly SlidingLimitRule[];
  /** One outcome per rule, in the same order. */
  readonly limits: readonly RateLimitDecision[];
  /** What the request weighed. */
  readonly cost: number;
  /** 0 when allowed; otherwise the longest wait among the full limits, ms. */
  readonly retryAfterMs: number;
  /**
   * How long the call to Redis took, ms (a failed call's time when the decision is degraded);
   * undefined when no call was made (a rejection by the local block cache).
   */
  readonly latencyMs: number | undefined;
  /** Set when Redis did not decide: see {@link RateLimitDecision.degraded}. */
  readonly degraded: RateLimitDecision['degraded'];
  /**
   * Why Redis did not decide, when `degraded` is set: the failure's kind as the error counters count it
   * (`timeout`, `connection`, `function_not_loaded`, `clock_skew`, `redis` for an error reply such as
   * OOM, `other`).
   */
  readonly degradedCause: LimiterErrorKind | undefined;
  /** Whether the local block cache rejected the request without a Redis call. */
  readonly blockedLocally: boolean;
  /** The limit names of {@link DecisionOptions.limitNames}, when the caller gave them. */
  readonly limitNames: readonly string[] | undefined;
}

/** A start-up that has not succeeded yet, as {@link LimiterStatus} reports it. */
export interface StartupFailure {
  /** When the first attempt failed (or was waited for in vain), epoch ms. */
  sinceMs: number;
  /** Attempts made so far, the one in flight included. */
  attempts: number;
  /** Why the latest failed: its kind (as the error counters count it) and message. */
  lastError: { kind: LimiterErrorKind; message: string };
}

/** What {@link SlidingWindowLimiter.status} reports: whether the limiter has started, and whether Redis decides. */
export interface LimiterStatus {
  /**
   * Whether start-up (the functions loaded or verified on every master) has finished. Until it has,
   * decisions are made by `onRedisError`.
   */
  started: boolean;
  /**
   * Set while start-up has failed and is tried again in the background (every second, and whenever
   * the connection is ready): since when, how many attempts, and why the latest failed.
   */
  startup?: StartupFailure;
  /** Set while decisions are made without Redis: the stretch of them, its latest recent enough. */
  degraded?: DegradedMode;
}

/**
 * What callers of a limiter need of the function versions it calls, by who needs it (names for the
 * message, e.g. routes `Controller.handler`); see {@link SlidingWindowLimiter.addFunctionNeeds}.
 */
export interface FunctionNeeds {
  /** Who decides requests with a cost other than 1 (`sliding_allow_v2`). */
  weighted?: readonly string[];
  /** Who decides rules with `precisionMs`, the bounded-memory window (`sliding_allow_v2`). */
  bucketed?: readonly string[];
  /** Who decides shadow limits (`sliding_allow_v2`: v1 would enforce them). */
  shadow?: readonly string[];
}

/** Receives every decision of a limiter; see {@link SlidingWindowLimiter.onDecision}. */
export type DecisionListener = (event: DecisionEvent) => void;

/** Options of {@link SlidingWindowLimiter}. */
export interface SlidingWindowLimiterOptions {
  /** The ioredis connection to use. The limiter never closes it. Required unless `backend` is given. */
  client?: RedisConnection;
  /**
   * Advanced: where decisions run instead of `client`, e.g. the in-memory backend of
   * `RateLimitTestingModule`. Default: Redis through `client`.
   */
  backend?: LimiterBackend;
  /**
   * The active function name, e.g. `sliding_allow_v2`. Default: `DEFAULT_FUNCTION_NAME`
   * (`sliding_allow_v2`). Switching between shipped versions needs no code change.
   */
  functionName?: string;
  /** Sends a sticky share of keys to a candidate function. Default: none. */
  canary?: CanarySplit;
  /** Prefix of every key the limiter writes. Default `rl:`. */
  keyPrefix?: string;
  /** Default `auto`. */
  loadFunctions?: LoadFunctionsPolicy;
  /** Default `auto`. */
  mode?: ExecutionMode;
  /** Default `local`. */
  clock?: ClockSource;
  /**
   * How far (ms) a caller's clock may lag behind the newest entry of a key before v2 refuses the
   * call with a {@link ClockSkewError}. Default 1000. Ignored by v1, whose contract has no such check.
   */
  maxClockSkewMs?: number;
  /**
   * How long one call to Redis may take before it counts as failed, ms. Default 250 (a call times out
   * between 1 and 1.25 × `timeoutMs`: one timer serves every call). A timed-out call is retried once
   * with the same request id; a call to a disconnected client fails at once.
   */
  timeoutMs?: number;
  /**
   * Local block cache: after a rejection, further requests for the same key and limit are rejected
   * in-process, without a Redis call, until the moment a slot can free (v2 reports it exactly; v1,
   * the server clock and stacked limits never use the cache). `false` turns it off; `{ maxEntries }` bounds it (default
   * 10,000). Exact as long as entries leave only by expiry or by this limiter's `reset`: a reset by
   * another instance, or a manual DEL, is not seen until the cached time passes.
   */
  blockCache?: boolean | { maxEntries: number };
  /**
   * Batching: while calls to Redis are in flight, the decisions that arrive meanwhile go together, as
   * one call of the version's batch function (v2's `sliding_allow_many_v2`) per cluster slot, up to
   * `maxSize` decisions per call (default 16). Each is decided exactly as on its own, in arrival order;
   * a quiet process sends every decision at once. Under load it saves about half the client
   * CPU and a fifth of the Redis time per decision. `false` sends one call per decision. Default on.
   */
  batch?: boolean | { maxSize: number };
  /** What a decision does when Redis cannot make it. Default `allow` (fail open). */
  onRedisError?: RedisErrorPolicy;
  /**
   * An in-memory limiter with the same sliding-window semantics (the package's reference model) that
   * makes the decisions which would otherwise fail open, while Redis cannot. Per process: N instances
   * admit up to N × the limit between them. `{ maxKeys }` bounds its memory (default 100,000 keys,
   * least recently used forgotten first). Default off.
   */
  insurance?: boolean | { maxKeys?: number };
  /**
   * Read per-key overrides (raise, lower, exempt or block one key at runtime; see
   * `SlidingWindowLimiter.overrides`) in each decision, in the same call: versions with overrides
   * (`sliding_allow_v2`) then read one more key per limit, in the limited key's slot.
   * While it is on, the local block cache keeps no rejection (an override set by another process
   * must apply to the very next request). Default `true`; `false` ignores overrides.
   */
  keyOverrides?: boolean;
  /** Where degraded mode is reported (once per interval, never per request). Default Nest's `Logger`. */
  logger?: LimiterLogger;
  /**
   * Records in Redis, every `intervalMs` (default 15 s) and at once after {@link SlidingWindowLimiter.use},
   * which functions this instance calls and its counters, under `<keyPrefix>__nsl:instance:<instanceId>`
   * with a TTL of three intervals: what `npx nestjs-sliding-limit functions status` shows and what
   * `functions delete` checks. Default on (when a `client` is given); `false` turns it off.
   */
  report?: boolean | { intervalMs?: number; instanceId?: string };
}
