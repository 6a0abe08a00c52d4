import type { RateLimitDecision } from '../core/decisions';
import type { LimiterBackend } from '../core/limiter-backend';
import type { RedisConnection } from '../core/redis-connection';
import { RedisBackend } from '../redis/redis-backend';
import { BlockCache } from './block-cache';
import { CircuitBreakers } from './circuit-breakers';
import type { DecisionRecorders } from './decision';
import { DecisionListeners } from './decision-listeners';
import { defaultLimiterLogger } from './default-logger';
import { FailurePolicy } from './failure-policy';
import { GroupedDecisions } from './grouped-decisions';
import { InstanceReporter, type ReportedLimiter } from './instance-reporter';
import { Insurance } from './insurance';
import {
  DEFAULT_BATCH_SIZE,
  DEFAULT_BLOCK_CACHE_ENTRIES,
  DEFAULT_INSURANCE_KEYS,
  switchSize,
  type ResolvedLimiterOptions,
} from './limiter-options';
import type { LimiterMetrics } from './limiter-metrics';
import { LimiterStartup } from './limiter-startup';
import type { MemberIdSource } from './member-ids';
import { RedisCallPolicy } from './redis-call-policy';

/** Consecutive unavailability failures that open the circuit breaker, and how long it stays open. */
const BREAKER_THRESHOLD = 3;
const BREAKER_COOLDOWN_MS = 1000;

/** The parts a limiter decides with, wired to each other. */
export interface LimiterParts {
  readonly backend: LimiterBackend;
  readonly calls: RedisCallPolicy;
  readonly startup: LimiterStartup;
  readonly failures: FailurePolicy;
  readonly decisions: GroupedDecisions;
  readonly blockCache?: BlockCache<RateLimitDecision>;
  readonly insurance?: Insurance;
  readonly recorders: DecisionRecorders;
  /** Stops listening to the connection's `ready` and to override changes. */
  readonly stopListening: () => void;
}

/** Builds a limiter's parts from its resolved options: the one place they are wired together. */
export function assembleLimiter(
  options: ResolvedLimiterOptions,
  limiter: ReportedLimiter & { readonly metrics: LimiterMetrics },
  members: MemberIdSource,
): LimiterParts {
  const { client, mode, loadFunctions, timeoutMs, clock, report } = options;
  const backend = options.backend ?? new RedisBackend(client as RedisConnection, mode, loadFunctions);
  const breakers = new CircuitBreakers(BREAKER_THRESHOLD, BREAKER_COOLDOWN_MS, (key) => backend.nodeOf?.(key) ?? '');
  // A reconnect ends the pause at once instead of after the cool-down.
  const stopReady = backend.onReady(() => breakers.resetAll());
  const calls = new RedisCallPolicy(timeoutMs, 1, breakers, () => backend.isConnected());
  const logger = options.logger ?? defaultLimiterLogger();
  const reporter =
    report && client ? new InstanceReporter({ limiter, client, ...(report === true ? {} : report) }) : undefined;
  const blockCacheEntries = switchSize(options.blockCache, 'maxEntries', DEFAULT_BLOCK_CACHE_ENTRIES);
  const blockCache =
    blockCacheEntries === undefined
      ? undefined
      : new BlockCache<RateLimitDecision>(blockCacheEntries, options.keyOverrides);
  let stopWatching: (() => void) | undefined;
  const selection = { functionName: options.functionName, canary: options.canary };
  const startup = new LimiterStartup(
    backend,
    clock,
    loadFunctions,
    timeoutMs,
    selection,
    () => {
      reporter?.start();
      // Refusals are kept while override changes reach the cache, from the first decision on.
      if (blockCache && options.keyOverrides) stopWatching ??= backend.watchOverrides?.(blockCache);
    },
    logger,
  );
  const insuranceKeys = switchSize(options.insurance, 'maxKeys', DEFAULT_INSURANCE_KEYS);
  const insurance =
    insuranceKeys === undefined ? undefined : new Insurance(insuranceKeys, members, options.maxClockSkewMs, clock);
  const failures = new FailurePolicy(
    options.onRedisError,
    limiter.metrics,
    logger,
    BREAKER_COOLDOWN_MS,
    insurance,
    () => startup.stableContract(),
  );
  const decisions = new GroupedDecisions(
    {
      commands: backend.commands,
      clustered: backend.clustered,
      send: (call, routeKey, grouped) => calls.call(call, routeKey, grouped),
      run: (run, routeKey) => calls.run(run, routeKey),
      healthy: (routeKey) => breakers.for(routeKey).isClosed,
      busy: () => calls.inFlight > 0,
    },
    switchSize(options.batch, 'maxSize', DEFAULT_BATCH_SIZE) ?? 1,
  );
  const listeners = new DecisionListeners(logger);
  const recorders = { metrics: limiter.metrics, failures, listeners, reporter, blockCache };
  const stopListening = (): void => {
    stopReady();
    stopWatching?.();
  };
  return { backend, calls, startup, failures, decisions, blockCache, insurance, recorders, stopListening };
}
