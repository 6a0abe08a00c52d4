import { Injectable } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { ClockSkewError } from './errors/clock-skew.error';
import { RateLimitConfigError } from './errors/rate-limit-config.error';
import { clockFor, numericNow } from './limiter/clock';
import { ActiveVersion, FunctionRouting } from './limiter/function-routing';
import { describeRuleProblems, describeValue, isValidRule } from './limiter/limit-rule';
import { describeCanaryProblems, describeFunctionNameProblems, resolveLimiterOptions, ResolvedLimiterOptions } from './limiter/limiter-options';
import { MemberIdSource } from './limiter/member-ids';
import type {
  CanarySplit,
  FunctionSelection,
  KeyedSlidingLimitRule,
  LoadFunctionsPolicy,
  MultiRateLimitDecision,
  RateLimitDecision,
  RateLimitState,
  RedisConnection,
  SlidingLimitRule,
  SlidingWindowLimiterOptions,
} from './limiter/sliding-window-limiter.interfaces';
import type { LimiterBackend } from './limiter/limiter-backend';
import { LimiterMetrics } from './metrics/limiter-metrics';
import type { CallOutcome, LimitOutcome } from './redis/contracts/function-contract';
import { errorKindOf } from './redis/error-kind';
import { getFunctionContract } from './redis/function-versions';
import { RedisBackend } from './redis/redis-backend';
import { isClockSkew, toInteger } from './redis/reply';

/**
 * Exact sliding-window-log rate limiting on Redis.
 *
 * Each decision runs atomically on the server as the configured Redis Function (or the same Lua
 * as a script on Redis < 7). The limiter knows the arguments and replies of every shipped version,
 * so `functionName` can move between `sliding_allow_v1` and `sliding_allow_v2` without code changes,
 * a canary can send a sticky share of keys to a candidate, and {@link use} switches at runtime.
 *
 * Provided by `RateLimitModule`, or constructed directly:
 * ```ts
 * const limiter = new SlidingWindowLimiter({ client: new Redis() });
 * const { allowed, retryAfterMs } = await limiter.consume('login:ip:10.0.0.1', { limit: 5, windowMs: 60_000 });
 * ```
 */
@Injectable()
export class SlidingWindowLimiter {
  /** Prefix of every key this limiter writes. */
  readonly keyPrefix: string;
  /** Calls, decisions, errors and latency per function name, in this process. */
  readonly metrics = new LimiterMetrics();

  private readonly options: ResolvedLimiterOptions;
  private readonly members = new MemberIdSource();
  private selection: FunctionSelection;
  private readonly backend: LimiterBackend;
  private routing?: FunctionRouting;
  private starting?: Promise<FunctionRouting>;

  /** @throws RateLimitConfigError listing every invalid option (an unknown `functionName` lists the known ones). */
  constructor(options: SlidingWindowLimiterOptions) {
    this.options = resolveLimiterOptions(options);
    this.keyPrefix = this.options.keyPrefix;
    this.selection = { functionName: this.options.functionName, canary: this.options.canary };
    const { backend, client, mode, loadFunctions } = this.options;
    this.backend = backend ?? new RedisBackend(client as RedisConnection, mode, loadFunctions);
  }

  /** The stable function, e.g. `sliding_allow_v2`. */
  get functionName(): string {
    return this.selection.functionName;
  }

  /** The canary split in effect, if any. */
  get canary(): CanarySplit | undefined {
    return this.selection.canary;
  }

  /** How the Lua runs once initialised: `function` (FCALL) or `script` (EVALSHA); undefined before. */
  get mode(): 'function' | 'script' | undefined {
    return this.routing?.stable.runner.mode;
  }

  /**
   * Detects the execution mode and loads or verifies the Lua on every master, per `loadFunctions`.
   * Idempotent. Called by the Nest module at bootstrap; without Nest the first call does it lazily,
   * but calling it at start-up makes `loadFunctions: 'verify'` fail fast.
   */
  async init(): Promise<void> {
    await this.ready();
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
    this.routing = await this.buildRouting(wanted, policy);
    this.selection = this.routing.selection;
  }

  /**
   * Decides one request for `key`: records it and returns `allowed: true` when the window has room,
   * otherwise records nothing and says how long to wait.
   * @param key the limited identity, without the key prefix (e.g. `login:ip:10.0.0.1`)
   */
  async consume(key: string, rule: SlidingLimitRule): Promise<RateLimitDecision> {
    this.check(key, rule);
    const version = (this.routing ?? (await this.ready())).pick(key);
    const outcome = await this.measure(version, () => this.allow(version, [this.keyPrefix + key], [rule]));
    return this.toDecision(outcome.limits[0], rule, version);
  }

  /**
   * Decides one request against several limits at once (stacked limits, e.g. 1 per minute and
   * 10 per day). The request is recorded under every key only when every limit has room; a request
   * rejected by any limit consumes quota in none. With v2 this is one atomic call; with v1, whose
   * contract takes one key, the request is taken back out of the limits that had room. The canary
   * split follows the first rule's key.
   */
  async consumeAll(rules: readonly KeyedSlidingLimitRule[]): Promise<MultiRateLimitDecision> {
    this.checkAll(rules);
    const version = (this.routing ?? (await this.ready())).pick(rules[0].key);
    const keys = rules.map((rule) => this.keyPrefix + rule.key);
    const outcome = await this.measure(version, () =>
      version.contract.multiKey || rules.length === 1 ? this.allow(version, keys, rules) : this.allowOneKeyAtATime(version, keys, rules),
    );
    const limits = outcome.limits.map((limitOutcome, i) => this.toDecision(limitOutcome, rules[i], version));
    return {
      allowed: outcome.allowed,
      retryAfterMs: Math.max(0, ...limits.map((d) => d.retryAfterMs)),
      functionName: version.contract.allowFunction,
      limits,
    };
  }

  /** Reports the state of `key` without recording anything. */
  async peek(key: string, rule: SlidingLimitRule): Promise<RateLimitState> {
    this.check(key, rule);
    const version = (this.routing ?? (await this.ready())).pick(key);
    const fullKey = this.keyPrefix + key;
    const { peekFunction, peekArguments, parsePeekReply } = version.contract;
    let outcome: LimitOutcome;
    if (peekFunction && peekArguments && parsePeekReply) {
      const reply = await version.runner.run(peekFunction, [fullKey], peekArguments(await version.now(), [rule]), true);
      outcome = parsePeekReply(reply, [rule]).limits[0];
    } else {
      outcome = await this.peekWithCommands(version, fullKey, rule);
    }
    return { ...this.toDecision(outcome, rule, version), count: outcome.count };
  }

  /** Forgets every entry of `key`: the full limit is available again at once. */
  async reset(key: string): Promise<void> {
    if (typeof key !== 'string' || key.length === 0) this.fail([key], []);
    await this.backend.commands.del(this.keyPrefix + key);
  }

  private ready(): Promise<FunctionRouting> {
    if (this.routing) return Promise.resolve(this.routing);
    this.starting ??= this.buildRouting(this.selection, this.options.loadFunctions).then(
      (routing) => (this.routing = routing),
      (error: unknown) => {
        // Let the next call try again (Redis may come up later).
        this.starting = undefined;
        throw error;
      },
    );
    return this.starting;
  }

  private async buildRouting(selection: FunctionSelection, policy: LoadFunctionsPolicy): Promise<FunctionRouting> {
    const stable = await this.activate(selection.functionName, policy);
    const { canary } = selection;
    if (!canary || canary.percent <= 0 || canary.functionName === selection.functionName) return new FunctionRouting(stable);
    return new FunctionRouting(stable, await this.activate(canary.functionName, policy), canary.percent);
  }

  private async activate(functionName: string, policy: LoadFunctionsPolicy): Promise<ActiveVersion> {
    const contract = getFunctionContract(functionName);
    const runner = await this.backend.runnerFor(contract, policy);
    return { contract, runner, now: clockFor(contract, this.options.clock, this.backend.commands) };
  }

  /** Runs one decision, counting it (or its failure) and its latency under the version's name. */
  private async measure(version: ActiveVersion, decide: () => Promise<CallOutcome>): Promise<CallOutcome> {
    const functionName = version.contract.allowFunction;
    const started = performance.now();
    try {
      const outcome = await decide();
      this.metrics.recordDecision(functionName, outcome.allowed, performance.now() - started);
      return outcome;
    } catch (error) {
      const translated = isClockSkew(error) ? new ClockSkewError((error as Error).message, { cause: error }) : error;
      this.metrics.recordError(functionName, errorKindOf(translated), performance.now() - started);
      throw translated;
    }
  }

  private async allow(version: ActiveVersion, keys: readonly string[], rules: readonly SlidingLimitRule[]): Promise<CallOutcome> {
    const { contract, runner } = version;
    const args = contract.allowArguments({
      keys,
      rules,
      nowMs: await version.now(),
      member: this.members.next(),
      maxClockSkewMs: this.options.maxClockSkewMs,
    });
    return contract.parseAllowReply(await runner.run(contract.allowFunction, keys, args, false), rules);
  }

  /** Stacked limits on a one-key contract (v1): one call per key, then compensation. */
  private async allowOneKeyAtATime(version: ActiveVersion, keys: readonly string[], rules: readonly SlidingLimitRule[]): Promise<CallOutcome> {
    const { contract, runner } = version;
    const nowMs = await version.now();
    const member = this.members.next();
    const maxClockSkewMs = this.options.maxClockSkewMs;
    // Sent together, so ioredis writes them in one round trip.
    const replies = await Promise.all(
      keys.map((key, i) => runner.run(contract.allowFunction, [key], contract.allowArguments({ keys: [key], rules: [rules[i]], nowMs, member, maxClockSkewMs }), false)),
    );
    const limits = replies.map((reply, i) => contract.parseAllowReply(reply, [rules[i]]).limits[0]);
    if (limits.every((limit) => limit.allowed)) return { allowed: true, limits };

    // Rejected by one: take the request back out of the limits that recorded it.
    const recorded = keys.filter((_, i) => limits[i].allowed);
    await Promise.all(recorded.map((key) => this.backend.commands.zrem(key, member)));
    return {
      allowed: false,
      limits: limits.map((limit) => (limit.allowed ? { ...limit, count: limit.count - 1, remaining: limit.remaining + 1 } : limit)),
    };
  }

  /** Peek for versions without a read-only function: a plain ZCOUNT of the window. */
  private async peekWithCommands(version: ActiveVersion, fullKey: string, rule: SlidingLimitRule): Promise<LimitOutcome> {
    const nowMs = await numericNow(version.now, this.backend.commands);
    const reply = await this.backend.commands.zcount(fullKey, `(${nowMs - rule.windowMs}`, '+inf');
    const count = toInteger(reply, 'ZCOUNT', reply);
    const allowed = count < rule.limit;
    return {
      allowed,
      count,
      remaining: Math.max(rule.limit - count, 0),
      // Entries are at most one window old: waiting a full window is never too early.
      retryAfterMs: allowed ? 0 : rule.windowMs,
      resetMs: count > 0 ? rule.windowMs : 0,
    };
  }

  private toDecision(outcome: LimitOutcome, rule: SlidingLimitRule, version: ActiveVersion): RateLimitDecision {
    return {
      allowed: outcome.allowed,
      limit: rule.limit,
      remaining: outcome.remaining,
      retryAfterMs: outcome.retryAfterMs,
      resetMs: outcome.resetMs,
      functionName: version.contract.allowFunction,
    };
  }

  /** Checks one key and rule; allocation-free unless something is wrong, since it runs on every call. */
  private check(key: unknown, rule: unknown): void {
    if (typeof key === 'string' && key.length > 0 && isValidRule(rule)) return;
    this.fail([key], [rule]);
  }

  private checkAll(rules: readonly KeyedSlidingLimitRule[]): void {
    const keys = Array.isArray(rules) ? rules.map((rule) => rule?.key) : [];
    const valid =
      keys.length > 0 &&
      new Set(keys).size === keys.length &&
      rules.every((rule) => typeof rule.key === 'string' && rule.key.length > 0 && isValidRule(rule));
    if (!valid) this.fail(keys, Array.isArray(rules) ? rules : []);
  }

  private fail(keys: readonly unknown[], rules: readonly unknown[]): never {
    const problems: string[] = [];
    if (keys.length === 0) problems.push('at least one limit is required');
    keys.forEach((key, i) => {
      if (typeof key !== 'string' || key.length === 0) problems.push(`key ${i} must be a non-empty string, got ${describeValue(key)}`);
    });
    rules.forEach((rule, i) => problems.push(...describeRuleProblems(rule, rules.length > 1 ? `limits[${i}]` : 'rule')));
    if (new Set(keys).size !== keys.length) problems.push('each stacked limit needs its own key');
    throw new RateLimitConfigError(problems, 'SlidingWindowLimiter');
  }
}
