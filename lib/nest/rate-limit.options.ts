import type { RateLimitKey } from './rate-limit-key';
import { describeLimitProblems, type SlidingLimitOptions } from './sliding-limit.options';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { describeUnknownOptions } from '../core/unknown-options';
import { describeOneOf, describeValue } from '../core/value-checks';
import { describeRedisUrlProblems } from '../core/redis-url';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { MemoryBackend } from '../memory/memory-backend';
import {
  describeLimiterSettingsProblems,
  definedOnly,
  describeClientProblems,
  LIMITER_SETTING_NAMES,
  pickLimiterSettings,
  type LimiterSettings,
} from '../limiter/limiter-options';
import type { RedisConnection } from '../core/redis-connection';
import type { SlidingWindowLimiterOptions } from '../limiter/sliding-window-limiter.interfaces';
import { DEFAULT_KEY } from './rate-limit.constants';
import { describeKeyProblems } from './key-template';
import { describeRefusalLogLevelProblems, type RateLimitRefusalLogLevel } from './refusal-log-level';

type MemoryStore = NonNullable<RateLimitModuleOptions['store']>;

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

/** Options of `RateLimitModule.forRoot`: where limits are kept, the limiter's settings, and how the guard answers. */
export interface RateLimitModuleOptions extends Omit<SlidingWindowLimiterOptions, 'client' | 'backend'> {
  /** A Redis URL or ioredis options; the module creates the connection and closes it on shutdown. */
  redis?: string | RedisOptions;
  /** An existing ioredis `Redis` or `Cluster`; the module never closes it. */
  client?: Redis | Cluster;
  /**
   * `'memory'` (or `{ type: 'memory', maxKeys }`) keeps the limits in this process instead of Redis,
   * for an application that runs as one instance. At most `maxKeys` keys (default 1,000,000, LRU).
   */
  store?: 'memory' | { type: 'memory'; maxKeys?: number };
  /** @internal Decisions in this backend (the testing kit's). */
  backend?: MemoryBackend;
  /** Register {@link SlidingLimitGuard} as an APP_GUARD for every route. Default `true`. */
  global?: boolean;
  /** Which rate-limit headers responses carry: a style (default `'legacy'`), or the style and more. */
  headers?:
    | RateLimitHeaderStyle
    | {
        /** Which rate-limit headers responses carry. Default `'legacy'`. */
        style?: RateLimitHeaderStyle;
        /** Send `X-RateLimit-Degraded: allow|deny|insurance` when Redis did not decide. Default `false`. */
        degraded?: boolean;
        /** Send `x-ratelimit-shadow` (each shadow limit's limit, remaining, would-refuse). Default `false`. */
        shadow?: boolean;
      };
  /** How refused calls are answered and logged. */
  refusals?: {
    /** The body of a 429. Default `'nest'`. */
    body?: RateLimitErrorBodyStyle;
    /** Log each refused call (a full limit) at this level, on every transport. Default `'off'`. */
    logLevel?: RateLimitRefusalLogLevel;
  };
  /** Key of limits that name none. Default `'ip'`. */
  key?: RateLimitKey;
  /** Limit applied to routes with no `@SlidingLimit` on handler or class (and no `@SkipRateLimit`). Default none. */
  defaultLimit?: SlidingLimitOptions;
  /**
   * The `mode` of every limit that sets none: `shadow` tries the whole configuration without
   * refusing anything (a dry run before enforcing). Default `'enforced'`. Shadow needs `sliding_allow_v2`.
   */
  limitMode?: 'enforced' | 'shadow';
}

/** Module options after validation, with the module's own defaults applied. */
export interface ResolvedRateLimitOptions {
  redis?: string | RedisOptions;
  client?: RedisConnection;
  backend?: MemoryBackend;
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
  limitMode: 'enforced' | 'shadow';
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
  'refusals',
  'key',
  'defaultLimit',
  'limitMode',
];
/** What to write for another module's option or one that moved into a group, by its lowercase name. */
const MODULE_OPTION_ALIASES: Readonly<Record<string, string>> = {
  errorbody: 'refusals: { body }',
  refusalloglevel: 'refusals: { logLevel }',
  degradedheader: 'headers: { degraded: true }',
  shadowheader: 'headers: { shadow: true }',
  ttl: 'defaultLimit: { limit, windowMs }',
  limit: 'defaultLimit: { limit, windowMs }',
  windowms: 'defaultLimit: { limit, windowMs }',
  throttlers: 'defaultLimit: { limit, windowMs }',
  prefix: 'keyPrefix',
  url: 'redis',
};

/** Validates module options and applies defaults, reporting every problem together, each naming its option. */
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
  const headers = groupOf(raw.headers, 'style');
  const refusals = groupOf(raw.refusals, undefined);
  problems.push(...describeUnknownOptions(headers, ['style', 'degraded', 'shadow'], 'headers'));
  problems.push(...describeUnknownOptions(refusals, ['body', 'logLevel'], 'refusals'));
  if (raw.refusals !== undefined && (typeof raw.refusals !== 'object' || raw.refusals === null)) {
    problems.push(`refusals must be an object { body?, logLevel? }, got ${describeValue(raw.refusals)}`);
  }
  if (headers.style !== undefined) {
    const label = typeof raw.headers === 'object' ? 'headers.style' : 'headers';
    problems.push(...describeOneOf(headers.style, HEADER_STYLES, label));
  }
  if (refusals.body !== undefined) problems.push(...describeOneOf(refusals.body, ERROR_BODY_STYLES, 'refusals.body'));
  for (const name of ['degraded', 'shadow'] as const) {
    if (headers[name] !== undefined && typeof headers[name] !== 'boolean')
      problems.push(`headers.${name} must be true or false, got ${describeValue(headers[name])}`);
  }
  if (raw.key !== undefined) problems.push(...describeKeyProblems(raw.key, 'key'));
  if (raw.defaultLimit !== undefined) problems.push(...describeLimitProblems(raw.defaultLimit, 'defaultLimit'));
  if (refusals.logLevel !== undefined) problems.push(...describeRefusalLogLevelProblems(refusals.logLevel));
  if (raw.limitMode !== undefined && raw.limitMode !== 'enforced' && raw.limitMode !== 'shadow') {
    problems.push(`limitMode must be 'enforced' or 'shadow', got ${describeValue(raw.limitMode)}`);
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
      backend: store ? memoryStore(raw.store as MemoryStore, settings.clock) : raw.backend,
      store,
      global: raw.global,
      headers: headers.style as RateLimitHeaderStyle | undefined,
      errorBody: refusals.body as RateLimitErrorBodyStyle | undefined,
      degradedHeader: headers.degraded as boolean | undefined,
      key: raw.key,
      defaultLimit: raw.defaultLimit,
      refusalLogLevel: refusals.logLevel as RateLimitRefusalLogLevel | undefined,
      limitMode: raw.limitMode,
      shadowHeader: headers.shadow as boolean | undefined,
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

/** A grouped option's fields (`headers: 'draft'` is `{ style: 'draft' }`), or an empty object. */
function groupOf(value: unknown, shorthand: string | undefined): Record<string, unknown> {
  if (typeof value === 'object' && value !== null) return value as Record<string, unknown>;
  return value === undefined || shorthand === undefined ? {} : { [shorthand]: value };
}

/** The in-memory store of `store: 'memory'`, on the limiter's clock when it has one of its own. */
function memoryStore(store: MemoryStore, clock: LimiterSettings['clock']): MemoryBackend {
  const maxKeys = (typeof store === 'object' ? store.maxKeys : undefined) ?? DEFAULT_MEMORY_STORE_KEYS;
  return new MemoryBackend({ maxKeys, ...(typeof clock === 'function' ? { clock } : {}) });
}

/** The top-level options without empty strings: an environment variable set but empty means "not set". */
function blanksAsUnset(options: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== ''));
}
