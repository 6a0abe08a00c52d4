import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { checkDecisionArguments, checkKey, checkStackedArguments, hasUsableKeys } from './argument-checks';
import type { BlockCache } from './block-cache';
import type { NowMs } from './clock';
import { isSupported, unsupported } from './version-capabilities';
import { Decision, type DecisionReceiver, type DecisionRecorders } from './decision';
import { toDecision } from '../core/caller-decisions';
import { translated, type FailurePolicy } from './failure-policy';
import { peekOutcome } from './peek-outcome';
import type { ActiveVersion } from './function-routing';
import type { GroupedDecisions } from './grouped-decisions';
import type { Insurance } from './insurance';
import { LimiterOverrides } from './limiter-overrides';
import type { OverrideStore } from '../core/key-overrides';
import type { LimiterBackend } from '../core/limiter-backend';
import { describeCanaryProblems, resolveLimiterOptions, ResolvedLimiterOptions } from './limiter-options';
import { assembleLimiter } from './limiter-assembly';
import type { LimiterStartup } from './limiter-startup';
import { MemberIdSource } from './member-ids';
import type { RedisCallPolicy } from './redis-call-policy';
import type { CanarySplit } from '../core/function-selection';
import type {
  DecisionEvent,
  DecisionOptions,
  FunctionNeeds,
  LimiterStatus,
  SlidingWindowLimiterOptions,
} from './sliding-window-limiter.interfaces';
import type { SlidingLimitRule } from '../core/limit-rule';
import type { MultiRateLimitDecision, RateLimitDecision, RateLimitState } from '../core/decisions';
import { LimiterMetrics } from './limiter-metrics';
import { describeFunctionNameProblems } from '../redis/function-versions';
import { DECIDE_PLANNED } from './planned-entry';

/**
 * Exact sliding-window-log rate limiting on Redis: each decision runs atomically on the server as the
 * configured Redis Function (or the same Lua as a script on Redis < 7). A canary sends a sticky share
 * of keys to a candidate version, {@link SlidingWindowLimiter.use} switches at runtime, and when Redis
 * cannot decide within `timeoutMs`, `onRedisError` does.
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
  /** Counters and latency per function name, which the exports and the instance reports read. @internal */
  readonly metrics = new LimiterMetrics();

  private readonly options: ResolvedLimiterOptions;
  private readonly backend: LimiterBackend;
  private readonly calls: RedisCallPolicy;
  private readonly startup: LimiterStartup;
  private readonly failures: FailurePolicy;
  private readonly decisions: GroupedDecisions;
  private readonly blockCache?: BlockCache<RateLimitDecision>;
  private readonly insurance?: Insurance;
  private readonly stopListening: () => void;
  private readonly members = new MemberIdSource();
  private readonly recorders: DecisionRecorders;
  private overrideStore?: LimiterOverrides;

  /** @throws RateLimitConfigError listing every invalid option (an unknown `functionName` lists the known ones). */
  constructor(options: SlidingWindowLimiterOptions) {
    this.options = resolveLimiterOptions(options);
    this.keyPrefix = this.options.keyPrefix;
    const parts = assembleLimiter(this.options, this, this.members);
    this.backend = parts.backend;
    this.calls = parts.calls;
    this.startup = parts.startup;
    this.failures = parts.failures;
    this.decisions = parts.decisions;
    this.blockCache = parts.blockCache;
    this.insurance = parts.insurance;
    this.stopListening = parts.stopListening;
    this.recorders = parts.recorders;
  }

  /** The stable function, e.g. `sliding_allow_v2`. */
  get functionName(): string {
    return this.startup.selection.functionName;
  }

  /**
   * Per-key overrides: raise or lower one key's limit, exempt it or block it, for a while or until
   * deleted. Keys are given without the prefix; every limiter on the store applies a change on its
   * next decision (`sliding_allow_v2` with `keyOverrides` on).
   *
   * ```ts
   * await limiter.overrides.set('login:{ip:10.0.0.1}', { action: 'block' }, { ttlMs: 3_600_000, note: 'abuse' });
   * ```
   */
  get overrides(): OverrideStore {
    if (!this.overrideStore) {
      const clock = typeof this.options.clock === 'function' ? this.options.clock : Date.now;
      const store = this.backend.overridesStore({ keyPrefix: this.keyPrefix, clock });
      this.overrideStore = new LimiterOverrides(store, this.keyPrefix, this.blockCache);
    }
    return this.overrideStore;
  }

  /** The canary split in effect, if any. */
  get canary(): CanarySplit | undefined {
    return this.startup.selection.canary;
  }

  /** How the Lua runs once initialised: `function` (FCALL), `script` (EVALSHA) or `memory`; undefined before. */
  get mode(): 'function' | 'script' | 'memory' | undefined {
    return this.startup.routing?.stable.runner.mode;
  }

  /**
   * Detects the execution mode and loads or verifies the Lua on every master, per `loadFunctions`.
   * Idempotent; else the first decision does it. When Redis does not answer within `max(timeoutMs, 2 s)`
   * it rejects with a {@link RedisUnavailableError} and keeps trying in the background.
   */
  async init(): Promise<void> {
    try {
      await this.startup.init();
    } catch (error) {
      throw translated(error);
    }
  }

  /**
   * Switches the functions this limiter calls, without a restart: `use('sliding_allow_v1')`, or
   * `use({ functionName, canary: { functionName, percent } })`. A version that cannot decide the
   * routes' costs or `precisionMs` is refused; on any failure the current selection stays.
   */
  async use(selection: string | { functionName: string; canary?: CanarySplit }): Promise<void> {
    const wanted = typeof selection === 'string' ? { functionName: selection } : selection;
    const problems = [
      ...describeFunctionNameProblems(wanted?.functionName, 'functionName'),
      ...(wanted?.canary === undefined ? [] : describeCanaryProblems(wanted.canary, 'canary')),
    ];
    if (problems.length > 0) throw new RateLimitConfigError(problems, 'SlidingWindowLimiter.use');
    await this.startup.switchTo(wanted);
    // Operators read the reports before deleting a version.
    await this.recorders.reporter?.reportNow().catch(() => undefined);
  }

  /**
   * Declares what callers need of the functions (costs, `precisionMs`), so that `use` refuses a
   * version that cannot decide them. Returns a function that removes it. @internal
   */
  addFunctionNeeds(needs: () => FunctionNeeds): () => void {
    return this.startup.addNeeds(needs);
  }

  /**
   * Decides one request: records it when the window has room, otherwise says how long to wait.
   * @param key the limited identity, without the key prefix (e.g. `login:ip:10.0.0.1`)
   */
  async consume(key: string, rule: SlidingLimitRule, options?: DecisionOptions): Promise<RateLimitDecision> {
    checkDecisionArguments(key, rule, options);
    const decided = this.decide(key, [this.keyPrefix + key], [rule], options, undefined);
    return ((await decided) as MultiRateLimitDecision).limits[0];
  }

  /**
   * Decides one request against several limits (e.g. 1 per minute and 10 per day): it is recorded
   * under every key only when every limit has room. With v2 and keys in one cluster slot this is one
   * atomic call. The canary split follows the first key.
   */
  consumeAll(
    rules: readonly (SlidingLimitRule & { key: string })[],
    options?: DecisionOptions,
  ): Promise<MultiRateLimitDecision> {
    // Not async (the decision's one promise is `decide`'s): a bad argument becomes a rejection here.
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
   * Calls `listener` after every decision (not `peek`), synchronously in the caller's async context,
   * so keep it short; one that throws is logged once.
   * @returns a function that removes the listener
   */
  onDecision(listener: (event: DecisionEvent) => void): () => void {
    return this.recorders.listeners.add(listener);
  }

  /** Whether the limiter has started, and whether it is degraded (the latest at most `withinMs` ago). */
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
      const outcome = await this.calls.run(
        () => peekOutcome(picked, this.backend.commands, fullKey, rule, cost, this.options.keyOverrides),
        fullKey,
      );
      this.failures.recovered();
      return { ...toDecision(outcome, rule, picked.contract.allowFunction), count: outcome.count };
    } catch (caught) {
      const { limits, policy } = this.failures.peek(caught, rule, options);
      const functionName = version?.contract.allowFunction ?? this.functionName;
      return { ...toDecision(limits[0], rule, functionName, policy), count: 0 };
    }
  }

  /** Stops its timers and deletes its instance report (best effort; never rejects). The connection stays open. */
  async close(): Promise<void> {
    this.stopListening();
    this.startup.close();
    await this.recorders.reporter?.close();
  }

  /**
   * Forgets every entry of `key`: the full limit is available again. When Redis cannot do it,
   * `onRedisError` applies: `throw` rejects; `allow` and `deny` resolve and log degraded mode.
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
   * The guards' entry: `consumeAll` without the checks their plan passed at bootstrap. `keys` are
   * prefixed in place; the promise settles with `receiver`'s answer. @internal
   */
  [DECIDE_PLANNED](
    keys: string[],
    rules: readonly SlidingLimitRule[],
    options: DecisionOptions | undefined,
    receiver: DecisionReceiver,
  ): Promise<unknown> {
    const identity = keys[0];
    if (!hasUsableKeys(keys)) {
      // A guard's hook gave an unusable key: consumeAll's error.
      const keyed = keys.map((key, i) => ({ ...rules[i], key }));
      return this.consumeAll(keyed, options).then((decision) => receiver.receive(decision));
    }
    for (let i = 0; i < keys.length; i++) keys[i] = this.keyPrefix + keys[i];
    return this.decide(identity, keys, rules, options, receiver);
  }

  /** One decision: the version for this identity, start-up if needed, then `send`; failures to the policy. */
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
    // Single limits at cost 1 only: a stacked or costly refusal says nothing of the next request.
    if (this.blockCache && full && decision.keys.length === 1 && decision.cost === 1 && typeof nowMs === 'number') {
      const blocked = this.blockCache.get(decision.keys[0], decision.rules[0], nowMs);
      if (blocked) return decision.blockedLocally(blocked);
      decision.blockCacheNowMs = nowMs;
      decision.blockCacheTicket = this.blockCache.ticket();
    }
    this.decisions.decide(decision);
  }
}
