import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { DEFAULT_KEY_PREFIX } from '../core/constants';
import { describeReportSettingsProblems } from './instance-reporter';
import { DEFAULT_FUNCTION_NAME, describeFunctionNameProblems } from '../redis/function-versions';
import { describeOneOf, describeValue, isWholeNumberIn } from '../core/value-checks';
import type { LimiterBackend } from '../core/limiter-backend';
import type { ClockSource, RedisErrorPolicy, SlidingWindowLimiterOptions } from './sliding-window-limiter.interfaces';
import type { ExecutionMode, LoadFunctionsPolicy } from '../core/lua-runner';
import type { RedisConnection } from '../core/redis-connection';

/** Defaults of the limiter's settings. */
export const LIMITER_DEFAULTS = {
  functionName: DEFAULT_FUNCTION_NAME,
  keyPrefix: DEFAULT_KEY_PREFIX,
  loadFunctions: 'auto' as LoadFunctionsPolicy,
  mode: 'auto' as ExecutionMode,
  clock: 'local' as ClockSource,
  maxClockSkewMs: 1000,
  timeoutMs: 250,
  onRedisError: 'allow' as RedisErrorPolicy,
  blockCache: true as boolean | { maxEntries: number },
  batch: true as boolean | { maxSize: number },
  report: true as boolean | { intervalMs?: number; instanceId?: string },
  insurance: false as boolean | { maxKeys?: number },
  keyOverrides: true,
};

/** Keys the insurance limiter keeps when `insurance` is `true`. */
export const DEFAULT_INSURANCE_KEYS = 100_000;

/** Entries of the block cache when `blockCache` is `true`. */
export const DEFAULT_BLOCK_CACHE_ENTRIES = 10_000;
const MAX_BLOCK_CACHE_ENTRIES = 10_000_000;
const MAX_INSURANCE_KEYS = 10_000_000;

/** Most decisions in one batch call when `batch` is `true`. */
export const DEFAULT_BATCH_SIZE = 16;
const MAX_BATCH_SIZE = 1000;

/** Longest key prefix accepted; keys must stay short to stay cheap. */
export const MAX_KEY_PREFIX_LENGTH = 128;
const MAX_CLOCK_SKEW_MS = 60 * 60 * 1000;
const MAX_TIMEOUT_MS = 60_000;
const REDIS_ERROR_POLICIES: readonly RedisErrorPolicy[] = ['allow', 'deny', 'throw'];
const LOAD_POLICIES: readonly LoadFunctionsPolicy[] = ['auto', 'verify', 'off'];
const MODES: readonly ExecutionMode[] = ['auto', 'function', 'script'];

/** The limiter's settings (everything but the connection), as given by a user. */
export type LimiterSettings = Omit<SlidingWindowLimiterOptions, 'client' | 'backend'>;

/** Names of the limiter's settings, which the Nest module passes through unchanged. */
export const LIMITER_SETTING_NAMES = [
  'functionName',
  'canary',
  'keyPrefix',
  'loadFunctions',
  'mode',
  'clock',
  'maxClockSkewMs',
  'timeoutMs',
  'onRedisError',
  'logger',
  'blockCache',
  'batch',
  'report',
  'insurance',
  'keyOverrides',
] as const satisfies readonly (keyof LimiterSettings)[];

/** The limiter settings among `options`, without undefined values. */
export function pickLimiterSettings(options: Partial<Record<string, unknown>>): LimiterSettings {
  const settings: Record<string, unknown> = {};
  for (const name of LIMITER_SETTING_NAMES) if (options[name] !== undefined) settings[name] = options[name];
  return settings;
}

/** Settings with defaults applied. */
export interface ResolvedLimiterOptions extends Required<
  Omit<SlidingWindowLimiterOptions, 'canary' | 'client' | 'backend' | 'logger'>
> {
  client?: RedisConnection;
  logger?: SlidingWindowLimiterOptions['logger'];
  backend?: LimiterBackend;
  canary?: SlidingWindowLimiterOptions['canary'];
}

/** Every problem of the limiter settings, each naming its option (after `path`); the Nest module's too. */
export function describeLimiterSettingsProblems(settings: LimiterSettings, path = ''): string[] {
  const problems: string[] = [];
  const {
    functionName,
    canary,
    keyPrefix,
    loadFunctions,
    mode,
    clock,
    maxClockSkewMs,
    timeoutMs,
    onRedisError,
    logger,
    blockCache,
    batch,
    report,
    insurance,
    keyOverrides,
  } = settings;
  if (functionName !== undefined) problems.push(...describeFunctionNameProblems(functionName, `${path}functionName`));
  if (canary !== undefined) problems.push(...describeCanaryProblems(canary, `${path}canary`));
  if (
    keyPrefix !== undefined &&
    !(typeof keyPrefix === 'string' && keyPrefix.length <= MAX_KEY_PREFIX_LENGTH && !/[{}]/.test(keyPrefix))
  ) {
    // Braces in the prefix would become the cluster hash tag of every key (one slot for everything).
    problems.push(
      `${path}keyPrefix must be a string of at most ${MAX_KEY_PREFIX_LENGTH} characters without { or }, got ${describeValue(keyPrefix)}`,
    );
  }
  if (loadFunctions !== undefined)
    problems.push(...describeOneOf(loadFunctions, LOAD_POLICIES, `${path}loadFunctions`));
  if (mode !== undefined) problems.push(...describeOneOf(mode, MODES, `${path}mode`));
  if (clock !== undefined && clock !== 'local' && clock !== 'server' && typeof clock !== 'function') {
    problems.push(
      `${path}clock must be 'local', 'server' or a function returning epoch milliseconds, got ${describeValue(clock)}`,
    );
  }
  if (keyOverrides !== undefined && typeof keyOverrides !== 'boolean') {
    problems.push(`${path}keyOverrides must be true or false, got ${describeValue(keyOverrides)}`);
  }
  if (maxClockSkewMs !== undefined && !isWholeNumberIn(maxClockSkewMs, 0, MAX_CLOCK_SKEW_MS)) {
    problems.push(
      `${path}maxClockSkewMs must be a whole number of milliseconds from 0 to ${MAX_CLOCK_SKEW_MS}, got ${describeValue(maxClockSkewMs)}`,
    );
  }
  if (timeoutMs !== undefined && !isWholeNumberIn(timeoutMs, 1, MAX_TIMEOUT_MS)) {
    problems.push(
      `${path}timeoutMs must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}, got ${describeValue(timeoutMs)}`,
    );
  }
  if (onRedisError !== undefined)
    problems.push(...describeOneOf(onRedisError, REDIS_ERROR_POLICIES, `${path}onRedisError`));
  problems.push(
    ...describeSwitchProblems(blockCache, `${path}blockCache`, 'maxEntries', MAX_BLOCK_CACHE_ENTRIES, true),
    ...describeSwitchProblems(batch, `${path}batch`, 'maxSize', MAX_BATCH_SIZE, true),
    ...describeSwitchProblems(insurance, `${path}insurance`, 'maxKeys', MAX_INSURANCE_KEYS, false),
  );
  if (report !== undefined && typeof report !== 'boolean' && (typeof report !== 'object' || report === null)) {
    problems.push(`${path}report must be true, false or { intervalMs?, instanceId? }, got ${describeValue(report)}`);
  } else if (typeof report === 'object') {
    problems.push(...describeReportSettingsProblems(report, `${path}report.`));
  }
  if (
    logger !== undefined &&
    (typeof logger !== 'object' ||
      logger === null ||
      typeof logger.warn !== 'function' ||
      typeof logger.log !== 'function' ||
      (logger.error !== undefined && typeof logger.error !== 'function'))
  ) {
    problems.push(
      `${path}logger must have log(message) and warn(message) methods (and error(message), if any), got ${describeValue(logger)}`,
    );
  }
  return problems;
}

/** Problems of an option that is `true`, `false` or `{ <field>: 1 … max }` (the field `required` or not). */
function describeSwitchProblems(
  value: unknown,
  label: string,
  field: string,
  max: number,
  required: boolean,
): string[] {
  if (value === undefined || typeof value === 'boolean') return [];
  if (typeof value === 'object' && value !== null) {
    const size = (value as Record<string, unknown>)[field];
    if ((size === undefined && !required) || isWholeNumberIn(size, 1, max)) return [];
  }
  return [`${label} must be true, false or { ${field}: 1 … ${max} }, got ${describeValue(value)}`];
}

/** Whether a value is one of the `onRedisError` policies. */
export function isRedisErrorPolicy(value: unknown): value is RedisErrorPolicy {
  return REDIS_ERROR_POLICIES.includes(value as RedisErrorPolicy);
}

/** Problems of an `onRedisError` value. */
export function describeRedisErrorPolicyProblems(policy: unknown, label: string): string[] {
  return describeOneOf(policy, REDIS_ERROR_POLICIES, label);
}

/** Problems of a canary split. */
export function describeCanaryProblems(canary: unknown, label: string): string[] {
  if (typeof canary !== 'object' || canary === null)
    return [`${label} must be { functionName, percent }, got ${describeValue(canary)}`];
  const { functionName, percent } = canary as Record<string, unknown>;
  const problems = describeFunctionNameProblems(functionName, `${label}.functionName`);
  if (typeof percent !== 'number' || !(percent >= 0 && percent <= 100)) {
    problems.push(`${label}.percent must be a number from 0 to 100, got ${describeValue(percent)}`);
  }
  return problems;
}

/** True when the value looks like an ioredis Redis or Cluster client. */
function isRedisConnection(value: unknown): value is RedisConnection {
  const candidate = value as { fcall?: unknown; evalsha?: unknown } | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.fcall === 'function' &&
    typeof candidate.evalsha === 'function'
  );
}

/** The problem of a `client` option that is no ioredis Redis or Cluster client, if it is not one. */
export function describeClientProblems(client: unknown): string[] {
  return isRedisConnection(client)
    ? []
    : [`client must be an ioredis Redis or Cluster instance (ioredis 5.3 or newer), got ${describeValue(client)}`];
}

/** The size a `true` / `false` / `{ <field>: n }` option asks for: undefined when off, else `whenOn` or n. */
export function switchSize<F extends string>(
  value: boolean | Partial<Record<F, number>>,
  field: F,
  whenOn: number,
): number | undefined {
  if (value === false) return undefined;
  return value === true ? whenOn : (value[field] ?? whenOn);
}

/** Validates limiter options (throwing one error that lists every problem) and applies defaults. */
export function resolveLimiterOptions(options: SlidingWindowLimiterOptions): ResolvedLimiterOptions {
  const problems = describeLimiterSettingsProblems(options ?? {});
  if (!options?.backend) problems.unshift(...describeClientProblems(options?.client));
  if (problems.length > 0) throw new RateLimitConfigError(problems, 'SlidingWindowLimiter');

  return { ...LIMITER_DEFAULTS, ...definedOnly(options) };
}

/** Drops undefined values, so that spreading over defaults keeps the defaults. */
export function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined)) as Partial<T>;
}
