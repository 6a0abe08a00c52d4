import { performance } from 'node:perf_hooks';
import { ClockSkewError } from '../core/errors/clock-skew.error';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { checkDecisionArguments, checkKey, checkStackedArguments } from './argument-checks';
import { BlockCache } from './block-cache';
import { CircuitBreakers } from './circuit-breakers';
import { numericNow, type NowMs } from './clock';
import { defaultLimiterLogger } from './default-logger';
import { checkSupported, isSupported } from './version-capabilities';
import { DegradedModeLog, type LimiterLogger } from './degraded-mode-log';
import { peekByCounting, policyOutcome } from './fallback-outcomes';
import { activateVersion, ActiveVersion, canaryInEffect, FunctionRouting } from './function-routing';
import { GroupedDecisions } from './grouped-decisions';
import { Insurance } from './insurance';
import type { LimiterBackend } from '../core/limiter-backend';
import {
  DEFAULT_BATCH_SIZE,
  DEFAULT_BLOCK_CACHE_ENTRIES,
  DEFAULT_INSURANCE_KEYS,
  describeCanaryProblems,
  resolveLimiterOptions,
  ResolvedLimiterOptions,
  switchSize,
} from './limiter-options';
import { MemberIdSource } from './member-ids';
import { RedisCallPolicy } from './redis-call-policy';
import type { CanarySplit, FunctionSelection } from '../core/function-selection';
import type {
  DecisionEvent,
  DecisionListener,
  DecisionOptions,
  RedisErrorPolicy,
  SlidingWindowLimiterOptions,
} from './sliding-window-limiter.interfaces';
import type { KeyedSlidingLimitRule, SlidingLimitRule } from '../core/limit-rule';
import type { LoadFunctionsPolicy } from '../core/lua-runner';
import type { MultiRateLimitDecision, RateLimitDecision, RateLimitState } from '../core/decisions';
import type { RedisConnection } from '../core/redis-connection';
import { InstanceReporter } from './instance-reporter';
import { LimiterMetrics } from './limiter-metrics';
import type { CallOutcome, LimitOutcome } from '../core/function-contract';
import { errorKindOf } from '../redis/error-kind';
import { describeFunctionNameProblems, getFunctionContract } from '../redis/function-versions';
import { RedisBackend } from '../redis/redis-backend';
import { isClockSkew, messageOf } from '../redis/reply';
import { scrubSecrets } from '../core/redact';
import { describeValue } from '../core/value-checks';

/** v2's CLOCKSKEW error reply as the typed error; anything else as it is. */
function translated(error: unknown): unknown {
  return scrubSecrets(isClockSkew(error) ? new ClockSkewError((error as Error).message, { cause: error }) : error);
}

/**
 * A decision's outcome, the function that made it, how it was made when Redis did not, and what the
 * decision listeners are told beside it (the call's latency, a rejection by the block cache).
 */
type Decided = CallOutcome & {
  functionName: string;
  degraded?: RateLimitDecision['degraded'];
  latencyMs?: number;
  blockedLocally?: boolean;
};

const NO_LISTENERS: readonly DecisionListener[] = [];

/** Stacked rules as listeners see them: limits and windows, without the keys (identities). */
function withoutKeys(rules: readonly KeyedSlidingLimitRule[]): SlidingLimitRule[] {
  const copies = new Array<SlidingLimitRule>(rules.length);
  for (let i = 0; i < rules.length; i++) {
    const { limit, windowMs, precisionMs } = rules[i];
    copies[i] = precisionMs === undefined ? { limit, windowMs } : { limit, windowMs, precisionMs };
  }
  return copies;
}

/** Consecutive unavailability failures that open the circuit breaker, and how long it stays open. */
const BREAKER_THRESHOLD = 3;
const BREAKER_COOLDOWN_MS = 1000;
/** Start-up (loading or verifying functions) may take longer than a decision. */
const MIN_STARTUP_TIMEOUT_MS = 2000;

/**
 * Exact sliding-window-log rate limiting on Redis.
 *
 * Each decision runs atomically on the server as the configured Redis Function (or the same Lua
 * as a script on Redis < 7). The limiter knows the arguments and replies of every shipped version,
 * so `functionName` can move between `sliding_allow_v1` and `sliding_allow_v2` without code changes,
 * a canary can send a sticky share of keys to a candidate, and {@link SlidingWindowLimiter.use} switches at runtime.
 * When Redis cannot decide (timeout, connection down) the `onRedisError` policy does, and the
 * application never waits on a dead or frozen server for much longer than `timeoutMs` per attempt
 * (at most 1.25 × `timeoutMs`; the first decisions before start-up has finished: up to 1.25 ×
 * `max(timeoutMs, 2 s)`).
 *
 * Provided by `RateLimitModule`, or constructed directly:
 * ```ts
 * const limiter = new SlidingWindowLimiter({ client: new Redis() });
 * const { allowed, retryAfterMs } = await limiter.consume('login:ip:10.0.0.1', { limit: 5, windowMs: 60_000 });
 * ```
 */
export class SlidingWindowLimiter {
  /** Prefix of every key this limiter writes. */
  readonly keyPrefix: string;
  /** Calls, decisions, fallbacks, errors and latency per function name, in this process. */
  readonly metrics = new LimiterMetrics();

  private readonly options: ResolvedLimiterOptions;
  private readonly backend: LimiterBackend;
  private readonly calls: RedisCallPolicy;
  private readonly startupCalls: RedisCallPolicy;
  private readonly degradedLog: DegradedModeLog;
  private readonly logger: LimiterLogger;
  private readonly members = new MemberIdSource();
  private readonly blockCache?: BlockCache;
  private readonly reporter?: InstanceReporter;
  private readonly insurance?: Insurance;
  private readonly decisions: GroupedDecisions;
  private readonly stopListening: () => void;
  private selection: FunctionSelection;
  private routing?: FunctionRouting;
  private starting?: Promise<FunctionRouting>;
  /** Replaced, never mutated, so that a listener can unsubscribe while the others are called. */
  private listeners = NO_LISTENERS;
  private listenerFailureLogged = false;

  /** @throws RateLimitConfigError listing every invalid option (an unknown `functionName` lists the known ones). */
  constructor(options: SlidingWindowLimiterOptions) {
    this.options = resolveLimiterOptions(options);
    this.keyPrefix = this.options.keyPrefix;
    this.selection = { functionName: this.options.functionName, canary: this.options.canary };
    const { backend, client, mode, loadFunctions, timeoutMs, logger } = this.options;
    this.backend = backend ?? new RedisBackend(client as RedisConnection, mode, loadFunctions);
    const breakers = new CircuitBreakers(
      BREAKER_THRESHOLD,
      BREAKER_COOLDOWN_MS,
      (key) => this.backend.nodeOf?.(key) ?? '',
    );
    // A reconnect ends the pause at once instead of after the cool-down.
    this.stopListening = this.backend.onReady(() => breakers.resetAll());
    const isConnected = () => this.backend.isConnected();
    this.calls = new RedisCallPolicy(timeoutMs, 1, breakers, isConnected);
    // Start-up waits for the connection (no connected check); its breaker is the connection's.
    this.startupCalls = new RedisCallPolicy(Math.max(timeoutMs, MIN_STARTUP_TIMEOUT_MS), 0, breakers, () => true);
    this.logger = logger ?? defaultLimiterLogger();
    this.degradedLog = new DegradedModeLog(this.logger);
    const { blockCache, report, insurance } = this.options;
    this.decisions = new GroupedDecisions(
      {
        commands: this.backend.commands,
        clustered: this.backend.clustered,
        call: (attempt, routeKey, decisions) => this.calls.call(attempt, routeKey, decisions),
        healthy: (routeKey) => breakers.for(routeKey).isClosed,
      },
      this.members,
      this.options.maxClockSkewMs,
      switchSize(this.options.batch, 'maxSize', DEFAULT_BATCH_SIZE) ?? 1,
    );
    const insuranceKeys = switchSize(insurance, 'maxKeys', DEFAULT_INSURANCE_KEYS);
    if (insuranceKeys !== undefined)
      this.insurance = new Insurance(insuranceKeys, this.members, this.options.maxClockSkewMs, this.options.clock);
    const blockCacheEntries = switchSize(blockCache, 'maxEntries', DEFAULT_BLOCK_CACHE_ENTRIES);
    if (blockCacheEntries !== undefined) this.blockCache = new BlockCache(blockCacheEntries);
    if (report && client)
      this.reporter = new InstanceReporter({ limiter: this, client, ...(report === true ? {} : report) });
  }

  /** The stable function, e.g. `sliding_allow_v2`. */
  get functionName(): string {
    return this.selection.functionName;
  }

  /** The canary split in effect, if any. */
  get canary(): CanarySplit | undefined {
    return this.selection.canary;
  }

  /**
   * How the Lua runs once initialised: `function` (FCALL), `script` (EVALSHA) or `memory` (a
   * `MemoryBackend`); undefined before.
   */
  get mode(): 'function' | 'script' | 'memory' | undefined {
    return this.routing?.stable.runner.mode;
  }

  /**
   * Detects the execution mode and loads or verifies the Lua on every master, per `loadFunctions`.
   * Idempotent. Called by the Nest module at bootstrap; without Nest the first call does it lazily,
   * but calling it at start-up makes `loadFunctions: 'verify'` fail fast. Bounded in time: when Redis
   * does not answer within about `max(timeoutMs, 2 s)` (at most 1.25 × that) it rejects with a {@link RedisUnavailableError}
   * (and keeps trying in the background; decisions meanwhile follow `onRedisError`).
   */
  async init(): Promise<void> {
    try {
      await this.startUp();
    } catch (error) {
      throw translated(error);
    }
  }

  /**
   * Switches the functions this limiter calls, without a restart: `use('sliding_allow_v1')` for a
   * rollback, `use({ functionName: 'sliding_allow_v1', canary: { functionName: 'sliding_allow_v2',
   * percent: 10 } })` for a canary. The new functions are verified on every master first (and loaded
   * there when `loadFunctions` is `auto`); if that fails, the current selection stays in effect and
   * the error says why.
   */
  async use(selection: string | FunctionSelection): Promise<void> {
    const wanted = typeof selection === 'string' ? { functionName: selection } : selection;
    const problems = [
      ...describeFunctionNameProblems(wanted?.functionName, 'functionName'),
      ...(wanted?.canary === undefined ? [] : describeCanaryProblems(wanted.canary, 'canary')),
    ];
    if (problems.length > 0) throw new RateLimitConfigError(problems, 'SlidingWindowLimiter.use');
    await this.ready();
    // 'off' trusts the server at start-up, but a switch is only safe once checked.
    const policy: LoadFunctionsPolicy = this.options.loadFunctions === 'auto' ? 'auto' : 'verify';
    this.install(await this.buildRouting(wanted, policy));
    // Operators check the reports before deleting a version: show the switch at once.
    await this.reporter?.reportNow().catch(() => undefined);
  }

  /**
   * Decides one request for `key`: records it and returns `allowed: true` when the window has room,
   * otherwise records nothing and says how long to wait.
   * @param key the limited identity, without the key prefix (e.g. `login:ip:10.0.0.1`)
   */
  async consume(key: string, rule: SlidingLimitRule, options?: DecisionOptions): Promise<RateLimitDecision> {
    checkDecisionArguments(key, rule, options);
    const decided = await this.decide(key, [this.keyPrefix + key], [rule], options);
    this.reporter?.noteDecision();
    const decision = this.toDecision(decided.limits[0], rule, decided.functionName, decided.degraded);
    if (this.listeners.length > 0) this.notify(decided, [rule], [decision], decision.retryAfterMs, options);
    return decision;
  }

  /**
   * Decides one request against several limits at once (stacked limits, e.g. 1 per minute and
   * 10 per day). The request is recorded under every key only when every limit has room; a request
   * rejected by any limit consumes quota in none. With v2 and keys in one cluster slot this is one
   * atomic call; otherwise (v1's one-key contract, keys in several slots) one call per group, and the
   * request is taken back out of the groups that recorded it. The canary split follows the first key.
   */
  async consumeAll(
    rules: readonly KeyedSlidingLimitRule[],
    options?: DecisionOptions,
  ): Promise<MultiRateLimitDecision> {
    // The guard calls this for every request: loops rather than maps, and one await. Async methods
    // rather than `.then` callbacks on this path keep their optimized code between bursts of
    // traffic (see SlidingLimitGuard.decideWith).
    checkStackedArguments(rules, options);
    const keys = new Array<string>(rules.length);
    for (let i = 0; i < rules.length; i++) keys[i] = this.keyPrefix + rules[i].key;
    const decided = await this.decide(rules[0].key, keys, rules, options);
    this.reporter?.noteDecision();
    const limits = new Array<RateLimitDecision>(decided.limits.length);
    let retryAfterMs = 0;
    for (let i = 0; i < limits.length; i++) {
      limits[i] = this.toDecision(decided.limits[i], rules[i], decided.functionName, decided.degraded);
      retryAfterMs = Math.max(retryAfterMs, limits[i].retryAfterMs);
    }
    const decision: MultiRateLimitDecision = {
      allowed: decided.allowed,
      retryAfterMs,
      functionName: decided.functionName,
      limits,
    };
    if (decided.degraded) decision.degraded = decided.degraded;
    if (this.listeners.length > 0) this.notify(decided, withoutKeys(rules), limits, retryAfterMs, options);
    return decision;
  }

  /**
   * Calls `listener` after every decision of `consume` and `consumeAll` (not `peek`, which decides
   * nothing), with what was decided and how — never the keys. For exporters (OpenTelemetry metrics
   * and spans) that need each decision rather than the counters of {@link SlidingWindowLimiter.metrics}.
   * A listener runs synchronously, in the async context of the caller (its active span is the
   * caller's), before the decision is returned: keep it short. One that throws is logged once and
   * does not change the decision. With no listener, decisions pay nothing for this.
   * @returns a function that removes the listener
   */
  onDecision(listener: DecisionListener): () => void {
    if (typeof listener !== 'function') {
      throw new RateLimitConfigError(
        [`listener must be a function, got ${describeValue(listener)}`],
        'SlidingWindowLimiter.onDecision',
      );
    }
    // A wrapper, so that the same function subscribed twice is two subscriptions, removed one by one.
    const entry: DecisionListener = (event) => listener(event);
    this.listeners = [...this.listeners, entry];
    return () => {
      this.listeners = this.listeners.filter((other) => other !== entry);
    };
  }

  /** Reports the state of `key` without recording anything. */
  async peek(key: string, rule: SlidingLimitRule, options?: DecisionOptions): Promise<RateLimitState> {
    checkDecisionArguments(key, rule, options);
    const fullKey = this.keyPrefix + key;
    let version: ActiveVersion | undefined;
    try {
      version = (this.routing ?? (await this.startUp())).pick(key);
      const picked = version;
      const cost = options?.cost ?? 1;
      checkSupported(picked.contract, [rule], cost);
      const outcome = await this.calls.call(() => this.peekOnce(picked, fullKey, rule, cost), fullKey);
      this.degradedLog.recovered();
      return { ...this.toDecision(outcome, rule, picked.contract.allowFunction), count: outcome.count };
    } catch (caught) {
      const error = translated(caught);
      const policy = this.policyFor(options);
      if (error instanceof RateLimitConfigError || policy === 'throw') throw error;
      const outcome = this.byPolicy([rule], policy, error).limits[0];
      const functionName = version?.contract.allowFunction ?? this.functionName;
      return { ...this.toDecision(outcome, rule, functionName, policy), count: 0 };
    }
  }

  /**
   * Releases what the limiter holds: its event listener on the connection, the report timer, and its
   * instance report, which is deleted so that `functions status` stops listing this process at once
   * (best effort: at most 500 ms, never rejects). The connection itself is never closed: it belongs
   * to whoever created it. The Nest module calls this on shutdown, before closing a connection it
   * opened.
   */
  async close(): Promise<void> {
    this.stopListening();
    await this.reporter?.close();
  }

  /**
   * Forgets every entry of `key`: the full limit is available again at once. When Redis cannot do it
   * (timeout, connection down), `onRedisError` applies as to a decision: `throw` rejects with the
   * error; `allow` and `deny` resolve, the failure is logged as degraded mode, and the key keeps its
   * entries until they leave its window (what `peek` then reports is the failure policy's answer).
   */
  async reset(key: string, options?: Pick<DecisionOptions, 'onRedisError'>): Promise<void> {
    checkKey(key, options);
    const fullKey = this.keyPrefix + key;
    this.blockCache?.forget(fullKey);
    await this.insurance?.reset(fullKey);
    try {
      await this.calls.call(() => this.backend.commands.del(fullKey), fullKey);
    } catch (caught) {
      const error = translated(caught);
      const policy = this.policyFor(options);
      if (error instanceof RateLimitConfigError || policy === 'throw') throw error;
      this.degradedLog.fallback(policy, error);
    }
  }

  /**
   * One decision, by Redis or, when Redis cannot make it, by the failure policy. Promise chains
   * rather than async functions on this path: it runs for every request.
   */
  private decide(
    identity: string,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    options: DecisionOptions | undefined,
    // A decision that waited for start-up reports that wait in its latency too.
    started = performance.now(),
  ): Promise<Decided> {
    const routing = this.routing;
    if (!routing) {
      return this.startUp().then(
        () => this.decide(identity, keys, rules, options, started),
        (error: unknown) => this.fallback(undefined, keys, rules, options, error, started),
      );
    }
    const version = routing.pick(identity);
    try {
      const clockReading = version.now();
      // Only v1 with the server clock reads the time asynchronously.
      if (typeof clockReading === 'object') {
        return clockReading.then(
          (nowMs) => this.decideAt(version, nowMs, keys, rules, options, started),
          (error: unknown) => this.fallback(version, keys, rules, options, error, started),
        );
      }
      return this.decideAt(version, clockReading, keys, rules, options, started);
    } catch (error) {
      return this.fallback(version, keys, rules, options, error, started);
    }
  }

  private async decideAt(
    version: ActiveVersion,
    nowMs: NowMs,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    options: DecisionOptions | undefined,
    started: number,
  ): Promise<Decided> {
    const functionName = version.contract.allowFunction;
    const cost = options?.cost ?? 1;
    if (!isSupported(version.contract, rules, cost)) checkSupported(version.contract, rules, cost);
    // Single limits only: the other limits of a stacked rejection change while it is blocked
    // (their old entries leave), so a cached copy of them would go stale. Cost 1 only: a rejection
    // of a costly request says nothing of a cheaper one, and a cost-1 block would tell a costly
    // request to retry too early.
    const cache =
      this.blockCache &&
      keys.length === 1 &&
      cost === 1 &&
      version.contract.exactRetryAfter &&
      typeof nowMs === 'number'
        ? this.blockCache
        : undefined;
    const blocked = cache?.get(keys[0], rules[0], nowMs as number);
    if (blocked) {
      this.metrics.recordBlockedLocally(functionName);
      return { allowed: false, limits: [blocked], functionName, blockedLocally: true };
    }
    let outcome: CallOutcome;
    try {
      outcome = await this.decisions.decide(version, keys, rules, nowMs, cost);
    } catch (error) {
      return this.fallback(version, keys, rules, options, error, started);
    }
    const latencyMs = performance.now() - started;
    this.metrics.recordDecision(functionName, outcome.allowed, latencyMs);
    this.degradedLog.recovered();
    if (cache && !outcome.allowed) cache.set(keys[0], rules[0], nowMs as number, outcome.limits[0]);
    return { allowed: outcome.allowed, limits: outcome.limits, functionName, latencyMs };
  }

  /**
   * The decision when Redis could not make it: by `onRedisError` (or the error, for `throw`); one
   * that would fail open is made by the insurance limiter when there is one.
   */
  private fallback(
    version: ActiveVersion | undefined,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    options: DecisionOptions | undefined,
    caught: unknown,
    started: number,
  ): Promise<Decided> {
    if (caught instanceof RateLimitConfigError) return Promise.reject(caught);
    const error = translated(caught);
    const functionName = version?.contract.allowFunction ?? this.functionName;
    const latencyMs = performance.now() - started;
    this.metrics.recordError(functionName, errorKindOf(error), latencyMs);
    const policy = this.policyFor(options);
    if (policy === 'throw') return Promise.reject(error);
    if (policy === 'allow' && this.insurance)
      return this.insure(this.insurance, version, keys, rules, options?.cost ?? 1, error, functionName, latencyMs);
    this.metrics.recordFallback(functionName, policy);
    return Promise.resolve({ ...this.byPolicy(rules, policy, error), degraded: policy, functionName, latencyMs });
  }

  private policyFor(options: DecisionOptions | undefined): RedisErrorPolicy {
    return options?.onRedisError ?? this.options.onRedisError;
  }

  /** The outcome `policy` gives `rules` when Redis could not decide, logged as a degraded decision. */
  private byPolicy(rules: readonly SlidingLimitRule[], policy: 'allow' | 'deny', error: unknown): CallOutcome {
    this.degradedLog.fallback(policy, error);
    return policyOutcome(rules, policy, BREAKER_COOLDOWN_MS);
  }

  /** A decision that would fail open, made by the in-memory insurance limiter instead. */
  private async insure(
    insurance: Insurance,
    version: ActiveVersion | undefined,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    cost: number,
    cause: unknown,
    functionName: string,
    latencyMs: number,
  ): Promise<Decided> {
    const contract = version?.contract ?? getFunctionContract(this.functionName);
    const outcome = await insurance.decide(contract, keys, rules, cost);
    this.metrics.recordFallback(functionName, 'insurance');
    this.degradedLog.fallback('insurance', cause);
    return { allowed: outcome.allowed, limits: outcome.limits, functionName, degraded: 'insurance', latencyMs };
  }

  /** The routing, starting up first if needed (bounded in time, behind the circuit breaker). */
  private startUp(): Promise<FunctionRouting> {
    return this.startupCalls.call(() => this.ready());
  }

  private ready(): Promise<FunctionRouting> {
    if (this.routing) return Promise.resolve(this.routing);
    this.starting ??= this.buildRouting(this.selection, this.options.loadFunctions).then(
      (routing) => {
        this.install(routing);
        // After install(): the first report names the functions the routing really calls.
        this.reporter?.start();
        return routing;
      },
      (error: unknown) => {
        // Let the next call try again (Redis may come up later).
        this.starting = undefined;
        throw error;
      },
    );
    return this.starting;
  }

  /** Puts a routing in effect; `functionName` and `canary` then report what it really calls. */
  private install(routing: FunctionRouting): FunctionRouting {
    this.routing = routing;
    this.selection = routing.selection;
    return routing;
  }

  private async buildRouting(selection: FunctionSelection, policy: LoadFunctionsPolicy): Promise<FunctionRouting> {
    const stable = await this.activate(selection.functionName, policy);
    const canary = canaryInEffect(selection);
    if (!canary) return new FunctionRouting(stable);
    return new FunctionRouting(stable, await this.activate(canary.functionName, policy), canary.percent);
  }

  private activate(functionName: string, policy: LoadFunctionsPolicy): Promise<ActiveVersion> {
    return activateVersion(this.backend, getFunctionContract(functionName), this.options.clock, policy);
  }

  private async peekOnce(
    version: ActiveVersion,
    fullKey: string,
    rule: SlidingLimitRule,
    cost: number,
  ): Promise<LimitOutcome> {
    const { contract } = version;
    if (contract.peekFunction && contract.peekArguments && contract.parsePeekReply) {
      const args = contract.peekArguments(await version.now(), [rule], cost);
      const reply = await version.runner.run(contract.peekFunction, [fullKey], args, true);
      return contract.parsePeekReply(reply, [rule], cost).limits[0];
    }
    return peekByCounting(this.backend.commands, await numericNow(version.now, this.backend.commands), fullKey, rule);
  }

  /** Tells every listener of one decision; a listener that throws changes nothing but a log line. */
  private notify(
    decided: Decided,
    rules: readonly SlidingLimitRule[],
    limits: readonly RateLimitDecision[],
    retryAfterMs: number,
    options: DecisionOptions | undefined,
  ): void {
    const event: DecisionEvent = {
      functionName: decided.functionName,
      allowed: decided.allowed,
      rules,
      limits,
      cost: options?.cost ?? 1,
      retryAfterMs,
      latencyMs: decided.latencyMs,
      degraded: decided.degraded,
      blockedLocally: decided.blockedLocally === true,
      limitNames: options?.limitNames,
    };
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        if (this.listenerFailureLogged) continue;
        this.listenerFailureLogged = true;
        this.logger.warn(
          `A decision listener threw (${messageOf(error)}); the decision stands. Further failures are not logged`,
        );
      }
    }
  }

  private toDecision(
    outcome: LimitOutcome,
    rule: SlidingLimitRule,
    functionName: string,
    degraded?: RateLimitDecision['degraded'],
  ): RateLimitDecision {
    const decision: RateLimitDecision = {
      allowed: outcome.allowed,
      limit: rule.limit,
      remaining: outcome.remaining,
      retryAfterMs: outcome.retryAfterMs,
      resetMs: outcome.resetMs,
      functionName,
    };
    if (degraded) decision.degraded = degraded;
    return decision;
  }
}
