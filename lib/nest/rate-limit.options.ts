import type { RateLimitKey } from './rate-limit-key';
import { describeCostOptionProblems, type RateLimitCost } from './rate-limit-cost';
import type { RedisOptions } from 'ioredis';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { describeRuleProblems } from '../core/limit-rule';
import { describeUnknownOptions } from '../core/unknown-options';
import { describeValue } from '../core/value-checks';
import { describeRedisUrlProblems } from '../core/redis-url';
import type { LimiterBackend } from '../core/limiter-backend';
import { MemoryBackend } from '../memory/memory-backend';
import {
  describeLimiterSettingsProblems,
  describeRedisErrorPolicyProblems,
  definedOnly,
  describeClientProblems,
  LIMITER_SETTING_NAMES,
  pickLimiterSettings,
  type LimiterSettings,
} from '../limiter/limiter-options';
import type { RedisConnection } from '../core/redis-connection';
import type { RedisErrorPolicy } from '../limiter/sliding-window-limiter.interfaces';
import type { LimitMode } from '../core/limit-rule';
import { describePolicyRefProblems, type RateLimitPolicyRef } from './rate-limit-policy';
import { DEFAULT_KEY } from './rate-limit.constants';
import { describeKeyProblems } from './key-template';
import { describeNameProblems } from './limit-name';
import { describeRefusalLogLevelProblems, type RateLimitRefusalLogLevel } from './refusal-log-level';

/**
 * A shadow twin of a limit: the same key source under a name of its own, counted in keys of its
 * own, never refusing — "what would 500 per minute refuse?" beside the enforced 1,000. Each value it
 * leaves out is the limit's (as a policy resolved it).
 */
export interface SlidingLimitCandidate {
  limit?: number;
  windowMs?: number;
  precisionMs?: number;
  /** Its name (a Redis key namespace and the name in metrics). Default `<the limit's name>.candidate`. */
  name?: string;
}

/** What every form of `@SlidingLimit` takes. */
interface SlidingLimitCommonOptions {
  /**
   * Leave it out for the exact sliding window log; set it for the bounded-memory window (see
   * {@link SlidingLimitRule.precisionMs}). Needs `sliding_allow_v2`.
   */
  precisionMs?: number;
  /**
   * `shadow`: decide and count as usual, but never refuse — the limit is reported (metrics, a sampled
   * log line, the opt-in `x-ratelimit-shadow` header) with what it would have refused. Default: the
   * module's `limitMode` (itself `enforced`). Promoting a shadow limit is changing this. Needs
   * `sliding_allow_v2`.
   */
  mode?: LimitMode;
  /** `false`: per-key overrides do not apply to this limit (and are not read for it). Default `true`. */
  overrides?: boolean;
  /** A shadow twin with other values, decided in the same call: see {@link SlidingLimitCandidate}. */
  candidate?: SlidingLimitCandidate;
  /** Who is counted. Default: the module's `key` (itself `'ip'` by default). */
  key?: RateLimitKey;
  /**
   * Names the limit: it becomes the Redis key's namespace (`rl:<name>:…`, shared by every route using
   * the name), the IETF policy name, and lets a handler limit replace the class limit of the same name.
   * Letters, digits, `_`, `-`, `.`; at most 64 characters. Unnamed limits count per route.
   */
  name?: string;
  /**
   * What this limit does when Redis cannot decide, overriding the module's `onRedisError` (e.g. `deny`
   * on a money-moving endpoint). With stacked limits the strictest applies: `throw`, then `deny`.
   */
  onRedisError?: RedisErrorPolicy;
  /**
   * What a request to the route weighs in every one of its limits (an export 10, a search 1): a
   * whole number from 1 to the route's smallest limit (at most 10,000 where a limit is a log: one entry
   * per unit), or a function of the request. A route has one
   * cost: set it on one of its limits (limits that set none take it too). Default 1. A cost other
   * than 1 needs `sliding_allow_v2`; `X-RateLimit-Remaining` is then in cost units.
   */
  cost?: RateLimitCost;
}

/** A limit with its values written in the decorator (and, optionally, a policy that may change them). */
export interface SlidingLimitFixedOptions extends SlidingLimitCommonOptions {
  /** Requests (units of cost) per window: a whole number ≥ 1. */
  limit: number;
  /** Window length in milliseconds. */
  windowMs: number;
  /**
   * Where this caller's values come from: see {@link SlidingLimitPolicyOptions.policy}. With one,
   * `limit` and `windowMs` here are what the limit falls back to when the policy fails.
   */
  policy?: RateLimitPolicyRef;
}

/** A limit whose values come from the caller, through a policy. */
export interface SlidingLimitPolicyOptions extends SlidingLimitCommonOptions {
  /**
   * Resolves the caller's limit once per request, for every limit of the route that names it: an
   * injectable class implementing {@link RateLimitPolicy} (taken from Nest's container) or a function
   * of the request. Its answer's values replace the ones written here; `RateLimit-Policy` names its
   * tier. Any function version decides it.
   */
  policy: RateLimitPolicyRef;
  /** The fallback when the policy fails; without it, a failing policy answers 503. */
  limit?: number;
  /** The fallback when the policy fails, and the window when the policy gives none. */
  windowMs?: number;
}

/**
 * Arguments of `@SlidingLimit`: at most `limit` requests per `windowMs` for each `key` — written
 * here, or resolved per caller by a `policy`.
 */
export type SlidingLimitOptions = SlidingLimitFixedOptions | SlidingLimitPolicyOptions;

/** Where limits are kept when not in Redis: see {@link RateLimitModuleOptions.store}. */
export type RateLimitStore = 'memory' | { type: 'memory'; maxKeys?: number };

/** Keys the in-memory store keeps when `store` does not say. */
export const DEFAULT_MEMORY_STORE_KEYS = 1_000_000;

/** Which rate-limit headers responses carry. `Retry-After` is always sent on a 429. */
export type RateLimitHeaderStyle =
  /** `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (default). */
  | 'legacy'
  /** The IETF draft's structured fields `RateLimit-Policy` and `RateLimit`. */
  | 'draft'
  /** Both of the above. */
  | 'both'
  /** No rate-limit headers. */
  | 'none';

/** The body of a 429. */
export type RateLimitErrorBodyStyle =
  /** `{ statusCode, message, error }`, like Nest's built-in HttpExceptions (default). */
  | 'nest'
  /** An RFC 9457 `application/problem+json` body. */
  | 'problem';

/**
 * Options of `RateLimitModule.forRoot` / `forRootAsync`: the connection, every limiter setting of
 * {@link SlidingWindowLimiterOptions} (passed through), and how the guard answers.
 */
export interface RateLimitModuleOptions extends LimiterSettings {
  /** A Redis URL or ioredis options; the module creates the connection and closes it on shutdown. */
  redis?: string | RedisOptions;
  /** An existing ioredis `Redis` or `Cluster`; the module never closes it. Exclusive with `redis` and `backend`. */
  client?: RedisConnection;
  /** Advanced: decisions in this backend instead of Redis (used by `RateLimitTestingModule`). */
  backend?: LimiterBackend;
  /**
   * `'memory'` (or `{ type: 'memory', maxKeys }`) keeps the limits in this process instead of Redis:
   * the same decorators, headers, stacked limits, costs and windows, exact within the process, for an
   * application that runs as one instance (a laptop, a CI job, a single container). Each instance
   * counts on its own and starts empty after a restart. At most `maxKeys` keys (default 1,000,000),
   * the least recently used forgotten first. Runs the default function (`DEFAULT_FUNCTION_NAME`) unless
   * `functionName` says otherwise, as on Redis. Exclusive with `redis`, `client` and `backend`.
   */
  store?: RateLimitStore;
  /** Register {@link SlidingLimitGuard} as an APP_GUARD for every route. Default `true`. */
  global?: boolean;
  /** Rate-limit headers. Default `'legacy'`. */
  headers?: RateLimitHeaderStyle;
  /** 429 body. Default `'nest'`. */
  errorBody?: RateLimitErrorBodyStyle;
  /**
   * When Redis did not decide a request (the `onRedisError` policy or the insurance limiter did),
   * say so on its response: `X-RateLimit-Degraded: allow` (or `deny` on the 503, `insurance`). For
   * clients and proxies that should know the limit was not enforced by Redis. Default `false`.
   */
  degradedHeader?: boolean;
  /** Key of limits that name none. Default `'ip'`. */
  key?: RateLimitKey;
  /** Limit applied to routes with no `@SlidingLimit` on handler or class (and no `@SkipRateLimit`). Default none. */
  defaultLimit?: SlidingLimitOptions;
  /** Log each refused call (a full limit) at this level, on every transport. Default `'off'`. */
  refusalLogLevel?: RateLimitRefusalLogLevel;
  /**
   * The `mode` of every limit that sets none: `shadow` tries the whole configuration without
   * refusing anything (a dry run before enforcing). Default `'enforced'`. Shadow needs `sliding_allow_v2`.
   */
  limitMode?: LimitMode;
  /**
   * Send `x-ratelimit-shadow` on responses of routes with shadow limits: per shadow limit its
   * limit, remaining and whether it would have refused (`"api.candidate";q=500;r=0;would-refuse=?1`).
   * For observing a trial from the client side. Default `false`.
   */
  shadowHeader?: boolean;
}

/** Module options after validation, with the module's own defaults applied. */
export interface ResolvedRateLimitOptions {
  redis?: string | RedisOptions;
  client?: RedisConnection;
  backend?: LimiterBackend;
  /** Set when limits are kept in this process (`store: 'memory'`). */
  store?: 'memory';
  /** The limiter settings as given, without the client; the limiter applies their defaults (`LIMITER_DEFAULTS`). */
  limiter: LimiterSettings;
  global: boolean;
  headers: RateLimitHeaderStyle;
  errorBody: RateLimitErrorBodyStyle;
  degradedHeader: boolean;
  key: RateLimitKey;
  defaultLimit?: SlidingLimitOptions;
  refusalLogLevel: RateLimitRefusalLogLevel;
  limitMode: LimitMode;
  shadowHeader: boolean;
}

const NEST_DEFAULTS = {
  global: true,
  headers: 'legacy',
  errorBody: 'nest',
  degradedHeader: false,
  key: DEFAULT_KEY,
  refusalLogLevel: 'off',
  limitMode: 'enforced',
  shadowHeader: false,
} as const;

const HEADER_STYLES: readonly RateLimitHeaderStyle[] = ['legacy', 'draft', 'both', 'none'];
const ERROR_BODY_STYLES: readonly RateLimitErrorBodyStyle[] = ['nest', 'problem'];
const KNOWN_OPTIONS: readonly string[] = [
  'redis',
  'client',
  'backend',
  'store',
  ...LIMITER_SETTING_NAMES,
  'global',
  'headers',
  'errorBody',
  'degradedHeader',
  'key',
  'defaultLimit',
  'refusalLogLevel',
  'limitMode',
  'shadowHeader',
];
/** What other rate-limit modules call some module options (`ThrottlerModule.forRoot({ ttl, limit })`). */
const MODULE_OPTION_ALIASES: Readonly<Record<string, string>> = {
  ttl: 'defaultLimit: { limit, windowMs }',
  limit: 'defaultLimit: { limit, windowMs }',
  windowms: 'defaultLimit: { limit, windowMs }',
  throttlers: 'defaultLimit: { limit, windowMs }',
  prefix: 'keyPrefix',
  url: 'redis',
};

/** The options of `@SlidingLimit` (and `defaultLimit`): the record makes the compiler check that each is listed. */
const LIMIT_OPTIONS = Object.keys({
  limit: true,
  windowMs: true,
  precisionMs: true,
  key: true,
  name: true,
  onRedisError: true,
  cost: true,
  mode: true,
  overrides: true,
  candidate: true,
  policy: true,
} satisfies Record<keyof SlidingLimitFixedOptions, true>);
/** Other libraries' names for `@SlidingLimit` options (@nestjs/throttler, express-rate-limit, rate-limiter-flexible). */
const LIMIT_OPTION_ALIASES: Readonly<Record<string, string>> = {
  ttl: 'windowMs',
  window: 'windowMs',
  duration: 'windowMs',
  interval: 'windowMs',
  max: 'limit',
  points: 'limit',
  keygenerator: 'key',
  precision: 'precisionMs',
  weight: 'cost',
};

/**
 * Validates module options and applies defaults: the one place this happens. Every problem is
 * reported together, each naming its option; the limiter's settings (`functionName`, `mode`, …) are
 * checked with the limiter's own rules, so both report the same messages.
 */
export function resolveRateLimitOptions(options: unknown): ResolvedRateLimitOptions {
  if (typeof options !== 'object' || options === null) {
    throw new RateLimitConfigError([`RateLimitModule options must be an object, got ${describeValue(options)}`]);
  }
  const raw = blanksAsUnset(options as Record<string, unknown>) as RateLimitModuleOptions;
  const problems: string[] = [];

  problems.push(...describeUnknownOptions(raw, KNOWN_OPTIONS, undefined, MODULE_OPTION_ALIASES));
  const hasRedis = raw.redis !== undefined;
  const hasClient = raw.client !== undefined;
  const connections = [hasRedis, hasClient, raw.backend !== undefined, raw.store !== undefined].filter(Boolean).length;
  if (connections !== 1) {
    problems.push(
      connections > 1
        ? 'set only one of redis, client, backend and store'
        : 'set redis (a URL such as "redis://127.0.0.1:6379", or ioredis options), client (an ioredis Redis or ' +
            "Cluster), or store: 'memory' for limits kept in this process",
    );
  }
  problems.push(...describeStoreProblems(raw.store));
  if (hasRedis && typeof raw.redis !== 'string' && (typeof raw.redis !== 'object' || raw.redis === null)) {
    problems.push(`redis must be a URL string or ioredis options, got ${describeValue(raw.redis)}`);
  }
  if (typeof raw.redis === 'string') problems.push(...describeRedisUrlProblems(raw.redis, 'redis'));
  if (hasClient) problems.push(...describeClientProblems(raw.client));
  if (raw.global !== undefined && typeof raw.global !== 'boolean') {
    problems.push(`global must be true or false, got ${describeValue(raw.global)}`);
  }
  if (raw.headers !== undefined && !HEADER_STYLES.includes(raw.headers)) {
    problems.push(`headers must be one of ${HEADER_STYLES.join(', ')}, got ${describeValue(raw.headers)}`);
  }
  if (raw.errorBody !== undefined && !ERROR_BODY_STYLES.includes(raw.errorBody)) {
    problems.push(`errorBody must be one of ${ERROR_BODY_STYLES.join(', ')}, got ${describeValue(raw.errorBody)}`);
  }
  if (raw.degradedHeader !== undefined && typeof raw.degradedHeader !== 'boolean') {
    problems.push(`degradedHeader must be true or false, got ${describeValue(raw.degradedHeader)}`);
  }
  if (raw.key !== undefined) problems.push(...describeKeyProblems(raw.key, 'key'));
  if (raw.defaultLimit !== undefined) problems.push(...describeLimitProblems(raw.defaultLimit, 'defaultLimit'));
  if (raw.refusalLogLevel !== undefined) problems.push(...describeRefusalLogLevelProblems(raw.refusalLogLevel));
  if (raw.limitMode !== undefined && raw.limitMode !== 'enforced' && raw.limitMode !== 'shadow') {
    problems.push(`limitMode must be 'enforced' or 'shadow', got ${describeValue(raw.limitMode)}`);
  }
  if (raw.shadowHeader !== undefined && typeof raw.shadowHeader !== 'boolean') {
    problems.push(`shadowHeader must be true or false, got ${describeValue(raw.shadowHeader)}`);
  }
  const settings = pickLimiterSettings(raw as Record<string, unknown>);
  problems.push(...describeLimiterSettingsProblems(settings));
  if (problems.length > 0) throw new RateLimitConfigError(problems, 'RateLimitModule');

  const store = raw.store === undefined ? undefined : ('memory' as const);
  return {
    ...NEST_DEFAULTS,
    ...definedOnly({
      redis: raw.redis,
      client: raw.client,
      backend: store ? memoryStore(raw.store as RateLimitStore, settings.clock) : raw.backend,
      store,
      global: raw.global,
      headers: raw.headers,
      errorBody: raw.errorBody,
      degradedHeader: raw.degradedHeader,
      key: raw.key,
      defaultLimit: raw.defaultLimit,
      refusalLogLevel: raw.refusalLogLevel,
      limitMode: raw.limitMode,
      shadowHeader: raw.shadowHeader,
    }),
    // The limiter applies its own defaults (functionName and keyPrefix `rl:` among them), in memory too.
    limiter: settings,
  };
}

function describeStoreProblems(store: unknown): string[] {
  if (store === undefined || store === 'memory') return [];
  if (typeof store === 'object' && store !== null && (store as { type?: unknown }).type === 'memory') {
    const { maxKeys } = store as { maxKeys?: unknown };
    if (maxKeys === undefined || (Number.isInteger(maxKeys) && (maxKeys as number) >= 1)) return [];
    return [`store.maxKeys must be a whole number ≥ 1, got ${describeValue(maxKeys)}`];
  }
  return [`store must be 'memory' or { type: 'memory', maxKeys }, got ${describeValue(store)}`];
}

/** The in-memory store of `store: 'memory'`, on the limiter's clock when it has one of its own. */
function memoryStore(store: RateLimitStore, clock: LimiterSettings['clock']): MemoryBackend {
  const maxKeys = (typeof store === 'object' ? store.maxKeys : undefined) ?? DEFAULT_MEMORY_STORE_KEYS;
  return new MemoryBackend({ maxKeys, ...(typeof clock === 'function' ? { clock } : {}) });
}

/**
 * The options without their empty-string values: configuration read from the environment gives ''
 * for a variable that is set but empty (`RATE_LIMIT_FUNCTION=`), which means "not set", not "a
 * function named ''". Top-level options only; nested objects are taken as written.
 */
function blanksAsUnset(options: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== ''));
}

/** Problems of one `@SlidingLimit`-shaped value (options, rule, key and name), each prefixed with `label`. */
export function describeLimitProblems(value: unknown, label: string): string[] {
  const unknown =
    typeof value === 'object' && value !== null
      ? describeUnknownOptions(value, LIMIT_OPTIONS, label, LIMIT_OPTION_ALIASES)
      : [];
  const problems = [...unknown, ...describeRuleProblems(withPolicyPlaceholders(value), label)];
  if (typeof value !== 'object' || value === null) return problems;
  const { key, name, onRedisError, cost, policy, candidate } = value as SlidingLimitFixedOptions;
  if (policy !== undefined) problems.push(...describePolicyRefProblems(policy, `${label}.policy`));
  if (candidate !== undefined) problems.push(...describeCandidateProblems(candidate, value, `${label}.candidate`));
  problems.push(...describeCostOptionProblems(cost, `${label}.cost`));
  if (key !== undefined) problems.push(...describeKeyProblems(key, `${label}.key`));
  if (name !== undefined) problems.push(...describeNameProblems(name, `${label}.name`));
  if (onRedisError !== undefined)
    problems.push(...describeRedisErrorPolicyProblems(onRedisError, `${label}.onRedisError`));
  return problems;
}

/**
 * A limit with a policy may leave `limit` and `windowMs` to it: the rule checks then see stand-ins
 * (a limit of 1; no window, and so no precision to check against it) for what is left out.
 */
function withPolicyPlaceholders(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const options = value as Partial<SlidingLimitFixedOptions>;
  if (options.policy === undefined) return value;
  const probe: Record<string, unknown> = { ...options };
  if (probe.limit === undefined) probe.limit = 1;
  if (probe.windowMs === undefined) {
    probe.windowMs = 1000;
    delete probe.precisionMs;
  }
  return probe;
}

const CANDIDATE_OPTIONS = ['limit', 'windowMs', 'precisionMs', 'name'];

/** Problems of a `candidate`, checked as the shadow limit it makes with its limit's values. */
function describeCandidateProblems(candidate: unknown, limit: object, label: string): string[] {
  if (typeof candidate !== 'object' || candidate === null) {
    return [`${label} must be an object with limit, windowMs or precisionMs, got ${describeValue(candidate)}`];
  }
  const problems = describeUnknownOptions(candidate, CANDIDATE_OPTIONS, label);
  const { name, ...values } = candidate as SlidingLimitCandidate;
  if (name !== undefined) problems.push(...describeNameProblems(name, `${label}.name`));
  const parent = withPolicyPlaceholders(limit) as SlidingLimitFixedOptions;
  const rule = {
    limit: parent.limit,
    windowMs: parent.windowMs,
    precisionMs: parent.precisionMs,
    ...definedOnly(values),
  };
  problems.push(...describeRuleProblems(rule, label).filter((line) => line.startsWith(`${label}.`)));
  return problems;
}
