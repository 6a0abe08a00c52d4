import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { checkDecisionArguments, checkKey, checkStackedArguments, hasUsableKeys } from './argument-checks';
import { BlockCache } from './block-cache';
import { CircuitBreakers } from './circuit-breakers';
import { numericNow, type NowMs } from './clock';
import { defaultLimiterLogger } from './default-logger';
import { isSupported, unsupported } from './version-capabilities';
import { Decision, type DecisionReceiver, type DecisionRecorders } from './decision';
import { toDecision } from '../core/caller-decisions';
import { DecisionListeners } from './decision-listeners';
import { FailurePolicy, translated } from './failure-policy';
import { peekByCounting } from './fallback-outcomes';
import type { ActiveVersion } from './function-routing';
import { GroupedDecisions } from './grouped-decisions';
import { Insurance } from './insurance';
import { limiterOverrides, type LimiterOverrides } from './limiter-overrides';
import type { OverrideStore } from '../core/key-overrides';
import type { LimiterBackend } from '../core/limiter-backend';
import { runRecovering } from '../core/lua-runner';
import {
  DEFAULT_BATCH_SIZE,
  DEFAULT_BLOCK_CACHE_ENTRIES,
  DEFAULT_INSURANCE_KEYS,
  describeCanaryProblems,
  resolveLimiterOptions,
  ResolvedLimiterOptions,
  switchSize,
} from './limiter-options';
import { LimiterStartup } from './limiter-startup';
import { MemberIdSource } from './member-ids';
import { RedisCallPolicy } from './redis-call-policy';
import type { CanarySplit, FunctionSelection } from '../core/function-selection';
import type {
  DecisionListener,
  DecisionOptions,
  FunctionNeeds,
  LimiterStatus,
  SlidingWindowLimiterOptions,
} from './sliding-window-limiter.interfaces';
import type { KeyedSlidingLimitRule, SlidingLimitRule } from '../core/limit-rule';
import type { MultiRateLimitDecision, RateLimitDecision, RateLimitState } from '../core/decisions';
import type { RedisConnection } from '../core/redis-connection';
import { InstanceReporter } from './instance-reporter';
import { LimiterMetrics } from './limiter-metrics';
import type { LimitOutcome } from '../core/function-contract';
import { describeFunctionNameProblems } from '../redis/function-versions';
import { RedisBackend } from '../redis/redis-backend';
import { DECIDE_PLANNED } from './planned-entry';

/** Consecutive unavailability failures that open the circuit breaker, and how long it stays open. */
const BREAKER_THRESHOLD = 3;
const BREAKER_COOLDOWN_MS = 1000;

/**
 * Exact sliding-window-log rate limiting on Redis.
 *
 * Each decision runs atomically on the server as the configured Redis Function (or the same Lua
 * as a script on Redis < 7). The limiter knows the arguments and replies of every shipped version,
 * so `functionName` can move between `sliding_allow_v1` and `sliding_allow_v2` without code changes,
 * a canary can send a sticky share of keys to a candidate, and {@link SlidingWindowLimiter.use} switches at runtime.
 * When Redis cannot decide (timeout, connection down) the `onRedisError` policy does, and the
 * application never waits on a dead or frozen server for much longer than `timeoutMs` per attempt
 * (at most 1.25 × `timeoutMs`, the first decision before start-up has finished included; once a
 * start-up attempt has failed, decisions do not wait for it while it is tried again in the background).
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
  private readonly startup: LimiterStartup;
  private readonly failures: FailurePolicy;
  private readonly listeners: DecisionListeners;
  private readonly decisions: GroupedDecisions;
  private readonly blockCache?: BlockCache<RateLimitDecision>;
  private readonly reporter?: InstanceReporter;
  private readonly insurance?: Insurance;
  private readonly stopListening: () => void;
  private readonly members = new MemberIdSource();
  /** What a decision reports to when it is made. */
  private readonly recorders: DecisionRecorders;
  /** `overrides`, made on first use. */
  private overrideStore?: LimiterOverrides;

  /** @throws RateLimitConfigError listing every invalid option (an unknown `functionName` lists the known ones). */
  constructor(options: SlidingWindowLimiterOptions) {
    this.options = resolveLimiterOptions(options);
    this.keyPrefix = this.options.keyPrefix;
    const { backend, client, mode, loadFunctions, timeoutMs, clock, blockCache, report, insurance } = this.options;
    this.backend = backend ?? new RedisBackend(client as RedisConnection, mode, loadFunctions);
    const breakers = new CircuitBreakers(
      BREAKER_THRESHOLD,
      BREAKER_COOLDOWN_MS,
      (key) => this.backend.nodeOf?.(key) ?? '',
    );
    // A reconnect ends the pause at once instead of after the cool-down.
    this.stopListening = this.backend.onReady(() => breakers.resetAll());
    this.calls = new RedisCallPolicy(timeoutMs, 1, breakers, () => this.backend.isConnected());
    const selection = { functionName: this.options.functionName, canary: this.options.canary };
    const logger = this.options.logger ?? defaultLimiterLogger();
    this.startup = new LimiterStartup(
      this.backend,
      clock,
      loadFunctions,
      timeoutMs,
      selection,
      () => this.reporter?.start(),
      logger,
    );
    const insuranceKeys = switchSize(insurance, 'maxKeys', DEFAULT_INSURANCE_KEYS);
    if (insuranceKeys !== undefined)
      this.insurance = new Insurance(insuranceKeys, this.members, this.options.maxClockSkewMs, clock);
    this.failures = new FailurePolicy(
      this.options.onRedisError,
      this.metrics,
      logger,
      BREAKER_COOLDOWN_MS,
      this.insurance,
      () => this.startup.stableContract(),
    );
    this.listeners = new DecisionListeners(logger);
    const { calls } = this;
    this.decisions = new GroupedDecisions(
      {
        commands: this.backend.commands,
        clustered: this.backend.clustered,
        send: (call, routeKey, decisions) => calls.call(call, routeKey, decisions),
        run: (run, routeKey) => calls.run(run, routeKey),
        healthy: (routeKey) => breakers.for(routeKey).isClosed,
        busy: () => calls.inFlight > 0,
      },
      switchSize(this.options.batch, 'maxSize', DEFAULT_BATCH_SIZE) ?? 1,
    );
    const blockCacheEntries = switchSize(blockCache, 'maxEntries', DEFAULT_BLOCK_CACHE_ENTRIES);
    if (blockCacheEntries !== undefined) this.blockCache = new BlockCache<RateLimitDecision>(blockCacheEntries);
    if (report && client)
      this.reporter = new InstanceReporter({ limiter: this, client, ...(report === true ? {} : report) });
    const { metrics, failures, listeners, reporter } = this;
    this.recorders = { metrics, failures, listeners, reporter, blockCache: this.blockCache };
  }

  /** The stable function, e.g. `sliding_allow_v2`. */
  get functionName(): string {
    return this.startup.selection.functionName;
  }

  /**
   * Per-key overrides of this limiter's keys: raise or lower one key's limit, exempt it or block it,
   * for a while (`ttlMs`) or until deleted, with a note of who and why. Keys are given without the
   * key prefix, as to {@link SlidingWindowLimiter.consume}. Stored where the decisions read them
   * (Redis, in the key's cluster slot; or the `MemoryBackend`), so every limiter on the same store
   * — this one, other processes — applies a change on its very next decision with `keyOverrides`
   * on (the default) and `sliding_allow_v2`; no restart.
   *
   * ```ts
   * await limiter.overrides.set('login:{ip:10.0.0.1}', { action: 'block' }, { ttlMs: 3_600_000, note: 'abuse', by: 'ops' });
   * ```
   * @throws RateLimitConfigError on access when the limiter's backend keeps no overrides (a custom `backend`)
   */
  get overrides(): OverrideStore {
    this.overrideStore ??= limiterOverrides(
      this.backend,
      { keyPrefix: this.keyPrefix, clock: typeof this.options.clock === 'function' ? this.options.clock : Date.now },
      this.blockCache,
    );
    return this.overrideStore;
  }

  /** The canary split in effect, if any. */
  get canary(): CanarySplit | undefined {
    return this.startup.selection.canary;
  }

  /**
   * How the Lua runs once initialised: `function` (FCALL), `script` (EVALSHA) or `memory` (a
   * `MemoryBackend`); undefined before.
   */
  get mode(): 'function' | 'script' | 'memory' | undefined {
    return this.startup.routing?.stable.runner.mode;
  }

  /**
   * Detects the execution mode and loads or verifies the Lua on every master, per `loadFunctions`.
   * Idempotent. Called by the Nest module at bootstrap; without Nest the first call does it lazily,
   * but calling it at start-up makes `loadFunctions: 'verify'` fail fast. Bounded in time: when Redis
   * does not answer within `max(timeoutMs, 2 s)` it rejects with a {@link RedisUnavailableError}
   * and keeps trying in the background (every second, and whenever the connection is ready);
   * decisions meanwhile follow `onRedisError` at once, and {@link SlidingWindowLimiter.status} says so.
   */
  async init(): Promise<void> {
    try {
      await this.startup.init();
    } catch (error) {
      throw translated(error);
    }
  }

  /**
   * Switches the functions this limiter calls, without a restart: `use('sliding_allow_v1')` for a
   * rollback, `use({ functionName: 'sliding_allow_v1', canary: { functionName: 'sliding_allow_v2',
   * percent: 10 } })` for a canary. A version that cannot decide what callers declared they need
   * ({@link SlidingWindowLimiter.addFunctionNeeds}: the Nest module's routes with a cost or
   * `precisionMs`) is refused with a {@link RateLimitConfigError}. The new functions are verified on
   * every master first (and loaded there when `loadFunctions` is `auto`); if that fails, the current
   * selection stays in effect and the error says why.
   */
  async use(selection: string | FunctionSelection): Promise<void> {
    const wanted = typeof selection === 'string' ? { functionName: selection } : selection;
    const problems = [
      ...describeFunctionNameProblems(wanted?.functionName, 'functionName'),
      ...(wanted?.canary === undefined ? [] : describeCanaryProblems(wanted.canary, 'canary')),
    ];
    if (problems.length > 0) throw new RateLimitConfigError(problems, 'SlidingWindowLimiter.use');
    await this.startup.switchTo(wanted);
    // Operators check the reports before deleting a version: show the switch at once.
    await this.reporter?.reportNow().catch(() => undefined);
  }

  /**
   * Declares what callers of this limiter need of its functions — who decides with a cost other than
   * 1, who with `precisionMs` — so that {@link SlidingWindowLimiter.use} refuses a switch (or a
   * canary) to a version that cannot decide them, with a {@link RateLimitConfigError} naming them,
   * before anything changes. `needs` is read at each switch. The Nest module registers its routes.
   * @returns a function that removes the registration
   */
  addFunctionNeeds(needs: () => FunctionNeeds): () => void {
    return this.startup.addNeeds(needs);
  }

  /**
   * Decides one request for `key`: records it and returns `allowed: true` when the window has room,
   * otherwise records nothing and says how long to wait.
   * @param key the limited identity, without the key prefix (e.g. `login:ip:10.0.0.1`)
   */
  async consume(key: string, rule: SlidingLimitRule, options?: DecisionOptions): Promise<RateLimitDecision> {
    checkDecisionArguments(key, rule, options);
    const decided = this.decide(key, [this.keyPrefix + key], [rule], options, undefined);
    return ((await decided) as MultiRateLimitDecision).limits[0];
  }

  /**
   * Decides one request against several limits at once (stacked limits, e.g. 1 per minute and
   * 10 per day). The request is recorded under every key only when every limit has room; a request
   * rejected by any limit consumes quota in none. With v2 and keys in one cluster slot this is one
   * atomic call; otherwise (v1's one-key contract, keys in several slots) one call per group, and the
   * request is taken back out of the groups that recorded it. The canary split follows the first key.
   */
  consumeAll(rules: readonly KeyedSlidingLimitRule[], options?: DecisionOptions): Promise<MultiRateLimitDecision> {
    // The guard calls this for every request: not async itself (the decision's one async frame is
    // `decide`), so a bad argument is turned into a rejection here.
    try {
      checkStackedArguments(rules, options);
    } catch (error) {
      return Promise.reject(error);
    }
    const keys = new Array<string>(rules.length);
    for (let i = 0; i < rules.length; i++) keys[i] = this.keyPrefix + rules[i].key;
    return this.decide(rules[0].key, keys, rules, options, undefined) as Promise<MultiRateLimitDecision>;
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
    return this.listeners.add(listener);
  }

  /**
   * Whether the limiter has started (`startup` says why not, once an attempt has failed), and whether
   * decisions are made without Redis: `degraded` is set
   * while the latest degraded decision (by `onRedisError` or the insurance) is at most `withinMs` old
   * (default 10 s), with the stretch's start, counts by kind and latest cause. What the health
   * indicator and the Prometheus gauge `sliding_limit_degraded` report.
   */
  status(withinMs?: number): LimiterStatus {
    const status: LimiterStatus = { started: this.startup.routing !== undefined };
    const startup = this.startup.failing;
    if (startup) status.startup = startup;
    const degraded = this.failures.degradedMode(withinMs);
    if (degraded) status.degraded = degraded;
    return status;
  }

  /** Reports the state of `key` without recording anything. */
  async peek(key: string, rule: SlidingLimitRule, options?: DecisionOptions): Promise<RateLimitState> {
    checkDecisionArguments(key, rule, options);
    const fullKey = this.keyPrefix + key;
    const cost = options?.cost ?? 1;
    const contract = this.startup.routing?.pick(key).contract ?? this.startup.configuredContractFor(key);
    if (!isSupported(contract, [rule], cost)) throw unsupported(contract, [rule], cost);
    let version: ActiveVersion | undefined;
    try {
      version = (this.startup.routing ?? (await this.startup.start())).pick(key);
      const picked = version;
      const outcome = await this.calls.run(() => this.peekOnce(picked, fullKey, rule, cost), fullKey);
      this.failures.recovered();
      return { ...toDecision(outcome, rule, picked.contract.allowFunction), count: outcome.count };
    } catch (caught) {
      const { limits, policy } = this.failures.peek(caught, rule, options);
      const functionName = version?.contract.allowFunction ?? this.functionName;
      return { ...toDecision(limits[0], rule, functionName, policy), count: 0 };
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
    this.startup.close();
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
      await this.calls.run(() => this.backend.commands.del(fullKey), fullKey);
    } catch (caught) {
      this.failures.reset(caught, options);
    }
  }

  /**
   * The guards' entry, not part of the public API: what `consumeAll` does without what a guard did
   * once at bootstrap. The rules are the guard's plan's (checked then, shared by every request), the
   * keys (without the prefix, one per rule) come as a list the limiter takes over and prefixes in
   * place, and the decision goes to `receiver`, whose answer the returned promise settles with.
   * Listeners ({@link SlidingWindowLimiter.onDecision}) see these decisions as they see every other.
   * @internal
   */
  [DECIDE_PLANNED](
    keys: string[],
    rules: readonly SlidingLimitRule[],
    options: DecisionOptions | undefined,
    receiver: DecisionReceiver,
  ): Promise<unknown> {
    const identity = keys[0];
    if (!hasUsableKeys(keys)) {
      // A protected hook of the guard gave an empty key, say: the error consumeAll would give.
      const keyed = keys.map((key, i) => ({ ...rules[i], key }));
      return this.consumeAll(keyed, options).then((decision) => receiver.receive(decision));
    }
    for (let i = 0; i < keys.length; i++) keys[i] = this.keyPrefix + keys[i];
    return this.decide(identity, keys, rules, options, receiver);
  }

  /**
   * One decision, top to bottom: the version for this identity, which must be able to decide it
   * (checked first, whatever Redis' state), start-up when it has not finished, then
   * {@link SlidingWindowLimiter.send}. Not async: the decision is the path's one promise, and a
   * failure anywhere on the way reaches the failure policy through `Decision.reject`, at one point.
   */
  private decide(
    identity: string,
    keys: readonly string[],
    rules: readonly SlidingLimitRule[],
    options: DecisionOptions | undefined,
    /** Takes the decision over (a guard): the promise settles with its answer instead. */
    receiver: DecisionReceiver | undefined,
  ): Promise<unknown> {
    const decision = new Decision(this.recorders, keys, rules, options, receiver);
    const routing = this.startup.routing;
    const version = routing?.pick(identity);
    const contract = version?.contract ?? this.startup.configuredContractFor(identity);
    if (!isSupported(contract, rules, decision.cost)) {
      decision.reject(unsupported(contract, rules, decision.cost));
    } else if (version) {
      this.send(decision, version);
    } else {
      this.startup.start().then(
        (started) => this.send(decision, started.pick(identity)),
        (error: unknown) => decision.reject(error),
      );
    }
    return decision.promise;
  }

  /** Sends a decision on `version`: its time (v1 on the server's clock reads it first), then its call. */
  private send(decision: Decision, version: ActiveVersion): void {
    let nowMs: NowMs | Promise<number>;
    try {
      nowMs = version.now();
    } catch (error) {
      return decision.reject(error);
    }
    if (typeof nowMs !== 'object') return this.sendAt(decision, version, nowMs);
    nowMs.then(
      (resolved) => this.sendAt(decision, version, resolved),
      (error: unknown) => decision.reject(error),
    );
  }

  /** The decision's call set, answered by the block cache when it holds the refusal, else sent to Redis. */
  private sendAt(decision: Decision, version: ActiveVersion, nowMs: NowMs): void {
    const { full } = version.contract;
    const { keyOverrides, maxClockSkewMs } = this.options;
    decision.callWith(version, nowMs, this.members.next(), maxClockSkewMs, keyOverrides && full);
    // Single limits only: the other limits of a stacked refusal change while it is blocked (their old
    // entries leave). Cost 1 only: a refusal of a costly request says nothing of a cheaper one, and a
    // cost-1 block would tell a costly request to retry too early. Not while overrides are read: one
    // set by another process must apply to the next request.
    if (this.blockCache && full && !keyOverrides && decision.keys.length === 1 && decision.cost === 1) {
      if (typeof nowMs === 'number') {
        const blocked = this.blockCache.get(decision.keys[0], decision.rules[0], nowMs);
        if (blocked) return decision.blockedLocally(blocked);
        decision.blockCacheNowMs = nowMs;
      }
    }
    this.decisions.decide(decision);
  }

  private async peekOnce(
    version: ActiveVersion,
    fullKey: string,
    rule: SlidingLimitRule,
    cost: number,
  ): Promise<LimitOutcome> {
    const { contract } = version;
    if (contract.peekFunction && contract.peekArguments && contract.parsePeekReply) {
      const nowMs = await version.now();
      // A version that reads overrides reads the key's override too, as a decision would.
      const readOverrides = contract.full && this.options.keyOverrides;
      const keys = readOverrides && contract.peekKeys ? contract.peekKeys([fullKey], [rule]) : [fullKey];
      const args = contract.peekArguments(nowMs, [rule], cost, readOverrides ? [fullKey] : undefined);
      const reply = await runRecovering(version.runner, contract.peekFunction, keys, args, true);
      return contract.parsePeekReply(reply, [rule], cost).limits[0];
    }
    return peekByCounting(this.backend.commands, await numericNow(version.now, this.backend.commands), fullKey, rule);
  }
}
