import type { Cluster, Redis } from 'ioredis';
import type { CanarySplit } from '../core/function-selection';
import type { LimiterLogger } from './degraded-mode-log';
import type { DegradedMode } from './degraded-stretch';
import type { MemoryBackend } from '../memory/memory-backend';
import type { SlidingLimitRule } from '../core/limit-rule';
import type { RateLimitDecision } from '../core/decisions';
import type { LimiterErrorKind } from '../core/call-metrics';

/** Where the limiter takes "now" from: see {@link SlidingWindowLimiterOptions.clock}. */
export type ClockSource = NonNullable<SlidingWindowLimiterOptions['clock']>;

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
  /** What this request weighs, from 1 (default) to the smallest limit. Another than 1 needs `sliding_allow_v2`. */
  cost?: number;
  /** Names of the limits, one per rule, for decision listeners ({@link SlidingWindowLimiter.onDecision}). */
  limitNames?: readonly string[];
}

/**
 * One decision, as {@link SlidingWindowLimiter.onDecision} listeners receive it. It holds no key (keys
 * are identities metrics should not carry); a listener must not keep it: the arrays may be the caller's.
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
  /** How long the call to Redis took, ms; undefined when none was made (the local block cache refused). */
  readonly latencyMs: number | undefined;
  /** Set when Redis did not decide: see {@link RateLimitDecision.degraded}. */
  readonly degraded: RateLimitDecision['degraded'];
  /** Why Redis did not decide, when `degraded` is set, as the error counters count it. */
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
  /** Whether the functions are loaded or verified on every master; until then `onRedisError` decides. */
  started: boolean;
  /** Set while start-up has failed and is retried in the background. */
  startup?: StartupFailure;
  /** Set while decisions are made without Redis: the stretch of them, its latest recent enough. */
  degraded?: DegradedMode;
}

/** What callers need of the function versions, by who needs it (e.g. routes); see `addFunctionNeeds`. */
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
  /** The ioredis `Redis` or `Cluster`, which the limiter never closes. Required unless `backend` is given. */
  client?: Redis | Cluster;
  /** Decisions in this process's memory instead of Redis (tests, a single instance). */
  backend?: MemoryBackend;
  /** The active function name. Default `sliding_allow_v2` (`DEFAULT_FUNCTION_NAME`). */
  functionName?: string;
  /** Sends a sticky share of keys to a candidate function. Default: none. */
  canary?: CanarySplit;
  /** Prefix of every key the limiter writes. Default `rl:`. */
  keyPrefix?: string;
  /**
   * `auto` (default) loads the bundled library where it is missing, and again after a "Function not
   * found"; `verify` fails start-up naming what is missing and how to load it; `off` trusts the servers.
   */
  loadFunctions?: 'auto' | 'verify' | 'off';
  /** How the Lua runs: `function` (FCALL), `script` (EVALSHA: Redis 5, 6), `auto` (default: functions on Redis 7+). */
  mode?: 'auto' | 'function' | 'script';
  /**
   * Where "now" comes from: `local` (default) `Date.now()`; `server`, Redis' `TIME` (one clock for
   * every gateway); or a function returning epoch milliseconds (tests).
   */
  clock?: 'local' | 'server' | (() => number);
  /** How far (ms) a caller's clock may lag behind a key's newest entry before v2 refuses the call. Default 1000. */
  maxClockSkewMs?: number;
  /**
   * How long one call to Redis may take before it counts as failed, ms (up to 1.25 × it). Default 250.
   * A timed-out call is retried once with the same request id.
   */
  timeoutMs?: number;
  /**
   * After a rejection, requests for the same key and limit are rejected in-process until a slot can
   * free (v2, single limits). A reset by another instance is not seen until then. `false` turns it
   * off; `{ maxEntries }` bounds it (default 10,000).
   */
  blockCache?: boolean | { maxEntries: number };
  /**
   * While calls are in flight, decisions that arrive meanwhile go together as one call of the batch
   * function per cluster slot, up to `maxSize` (default 16), each decided exactly as on its own.
   * `false` sends one call per decision. Default on.
   */
  batch?: boolean | { maxSize: number };
  /** What a decision does when Redis cannot make it. Default `allow` (fail open). */
  onRedisError?: RedisErrorPolicy;
  /**
   * An in-memory limiter that makes the decisions which would otherwise fail open, while Redis cannot.
   * Per process: N instances admit up to N × the limit. `{ maxKeys }` bounds it (default 100,000). Default off.
   */
  insurance?: boolean | { maxKeys?: number };
  /**
   * Read per-key overrides (`SlidingWindowLimiter.overrides`) in each decision: one more key per limit
   * on `sliding_allow_v2`, and no local block cache. Default `true`; `false` ignores overrides.
   */
  keyOverrides?: boolean;
  /** Where degraded mode is reported (once per interval, never per request). Default Nest's `Logger`. */
  logger?: LimiterLogger;
  /**
   * Records in Redis every `intervalMs` (default 15 s) which functions this instance calls, with its
   * counters: what `functions status` shows and `functions delete` checks. Default on with a `client`.
   */
  report?: boolean | { intervalMs?: number; instanceId?: string };
}
