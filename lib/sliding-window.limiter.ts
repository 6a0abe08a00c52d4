import { Injectable } from '@nestjs/common';
import { ClockSkewError } from './errors/clock-skew.error';
import { RateLimitConfigError } from './errors/rate-limit-config.error';
import { describeRuleProblems, describeValue, isValidRule } from './limiter/limit-rule';
import { resolveLimiterOptions, ResolvedLimiterOptions } from './limiter/limiter-options';
import { MemberIdSource } from './limiter/member-ids';
import type {
  KeyedSlidingLimitRule,
  MultiRateLimitDecision,
  RateLimitDecision,
  RateLimitState,
  SlidingLimitRule,
  SlidingWindowLimiterOptions,
} from './limiter/sliding-window-limiter.interfaces';
import type { CallOutcome, FunctionContract, LimitOutcome } from './redis/contracts/function-contract';
import { SERVER_TIME } from './redis/contracts/function-contract';
import { FunctionRunner } from './redis/function-runner';
import type { LuaRunner } from './redis/lua-runner';
import { masterNodes } from './redis/redis-nodes';
import { isClockSkew, parseRedisMajorVersion, parseServerTimeMs, toInteger } from './redis/reply';
import { ScriptRunner } from './redis/script-runner';

type NowMs = number | typeof SERVER_TIME;

/**
 * Exact sliding-window-log rate limiting on Redis.
 *
 * Each decision runs atomically on the server as the configured Redis Function (or the same Lua
 * as a script on Redis < 7). The limiter knows the arguments and replies of every shipped version,
 * so `functionName` can move between `sliding_allow_v1` and `sliding_allow_v2` without code changes.
 *
 * Provided by `RateLimitModule`, or constructed directly:
 * ```ts
 * const limiter = new SlidingWindowLimiter({ client: new Redis() });
 * const { allowed, retryAfterMs } = await limiter.consume('login:ip:10.0.0.1', { limit: 5, windowMs: 60_000 });
 * ```
 */
@Injectable()
export class SlidingWindowLimiter {
  /** The active allow function, e.g. `sliding_allow_v2`. */
  readonly functionName: string;
  /** Prefix of every key this limiter writes. */
  readonly keyPrefix: string;

  private readonly options: ResolvedLimiterOptions;
  private readonly contract: FunctionContract;
  private readonly members = new MemberIdSource();
  private readonly now: () => NowMs | Promise<number>;
  private runner?: LuaRunner;
  private starting?: Promise<LuaRunner>;

  /** @throws RateLimitConfigError listing every invalid option (an unknown `functionName` lists the known ones). */
  constructor(options: SlidingWindowLimiterOptions) {
    this.options = resolveLimiterOptions(options);
    this.contract = this.options.contract;
    this.functionName = this.contract.allowFunction;
    this.keyPrefix = this.options.keyPrefix;
    this.now = this.createClock();
  }

  /**
   * Detects the execution mode and loads or verifies the Lua on every master, per `loadFunctions`.
   * Idempotent. Called by the Nest module at bootstrap; without Nest the first call does it lazily,
   * but calling it at start-up makes `loadFunctions: 'verify'` fail fast.
   */
  async init(): Promise<void> {
    await this.ready();
  }

  /** How the Lua runs once initialised: `function` (FCALL) or `script` (EVALSHA); undefined before. */
  get mode(): 'function' | 'script' | undefined {
    return this.runner?.mode;
  }

  /**
   * Decides one request for `key`: records it and returns `allowed: true` when the window has room,
   * otherwise records nothing and says how long to wait.
   * @param key the limited identity, without the key prefix (e.g. `login:ip:10.0.0.1`)
   */
  async consume(key: string, rule: SlidingLimitRule): Promise<RateLimitDecision> {
    this.check(key, rule);
    const outcome = await this.allow([this.keyPrefix + key], [rule]);
    return this.toDecision(outcome.limits[0], rule);
  }

  /**
   * Decides one request against several limits at once (stacked limits, e.g. 1 per minute and
   * 10 per day). The request is recorded under every key only when every limit has room; a request
   * rejected by any limit consumes quota in none. With v2 this is one atomic call; with v1, whose
   * contract takes one key, the request is taken back out of the limits that had room.
   */
  async consumeAll(rules: readonly KeyedSlidingLimitRule[]): Promise<MultiRateLimitDecision> {
    this.checkAll(rules);
    const keys = rules.map((rule) => this.keyPrefix + rule.key);
    const outcome = this.contract.multiKey || rules.length === 1 ? await this.allow(keys, rules) : await this.allowOneKeyAtATime(keys, rules);
    const limits = outcome.limits.map((limitOutcome, i) => this.toDecision(limitOutcome, rules[i]));
    return {
      allowed: outcome.allowed,
      retryAfterMs: Math.max(0, ...limits.map((d) => d.retryAfterMs)),
      functionName: this.functionName,
      limits,
    };
  }

  /** Reports the state of `key` without recording anything. */
  async peek(key: string, rule: SlidingLimitRule): Promise<RateLimitState> {
    this.check(key, rule);
    const runner = this.runner ?? (await this.ready());
    const fullKey = this.keyPrefix + key;
    const { peekFunction, peekArguments, parsePeekReply } = this.contract;
    let outcome: LimitOutcome;
    if (peekFunction && peekArguments && parsePeekReply) {
      const reply = await runner.run(peekFunction, [fullKey], peekArguments(await this.now(), [rule]), true);
      outcome = parsePeekReply(reply, [rule]).limits[0];
    } else {
      outcome = await this.peekWithCommands(fullKey, rule);
    }
    return { ...this.toDecision(outcome, rule), count: outcome.count };
  }

  /** Forgets every entry of `key`: the full limit is available again at once. */
  async reset(key: string): Promise<void> {
    if (typeof key !== 'string' || key.length === 0) this.fail([key], []);
    await this.options.client.del(this.keyPrefix + key);
  }

  private ready(): Promise<LuaRunner> {
    if (this.runner) return Promise.resolve(this.runner);
    this.starting ??= this.start().then(
      (runner) => (this.runner = runner),
      (error: unknown) => {
        // Let the next call try again (Redis may come up later).
        this.starting = undefined;
        throw error;
      },
    );
    return this.starting;
  }

  private async start(): Promise<LuaRunner> {
    const { client, contract, loadFunctions } = this.options;
    const runner = (await this.useFunctions())
      ? new FunctionRunner(client, contract, loadFunctions)
      : new ScriptRunner(client, contract, loadFunctions);
    await runner.prepare();
    return runner;
  }

  private async useFunctions(): Promise<boolean> {
    if (this.options.mode !== 'auto') return this.options.mode === 'function';
    const [node] = await masterNodes(this.options.client);
    return parseRedisMajorVersion(await node.info('server')) >= 7;
  }

  private async allow(keys: readonly string[], rules: readonly SlidingLimitRule[]): Promise<CallOutcome> {
    const runner = this.runner ?? (await this.ready());
    const args = this.contract.allowArguments({
      keys,
      rules,
      nowMs: await this.now(),
      member: this.members.next(),
      maxClockSkewMs: this.options.maxClockSkewMs,
    });
    let reply: unknown;
    try {
      reply = await runner.run(this.functionName, keys, args, false);
    } catch (error) {
      if (isClockSkew(error)) throw new ClockSkewError((error as Error).message, { cause: error });
      throw error;
    }
    return this.contract.parseAllowReply(reply, rules);
  }

  /** Stacked limits on a one-key contract (v1): one call per key, then compensation. */
  private async allowOneKeyAtATime(keys: readonly string[], rules: readonly SlidingLimitRule[]): Promise<CallOutcome> {
    const runner = this.runner ?? (await this.ready());
    const nowMs = await this.now();
    const member = this.members.next();
    const maxClockSkewMs = this.options.maxClockSkewMs;
    // Sent together, so ioredis writes them in one round trip.
    const replies = await Promise.all(
      keys.map((key, i) =>
        runner.run(this.functionName, [key], this.contract.allowArguments({ keys: [key], rules: [rules[i]], nowMs, member, maxClockSkewMs }), false),
      ),
    );
    const limits = replies.map((reply, i) => this.contract.parseAllowReply(reply, [rules[i]]).limits[0]);
    if (limits.every((limit) => limit.allowed)) return { allowed: true, limits };

    // Rejected by one: take the request back out of the limits that recorded it.
    const recorded = keys.filter((_, i) => limits[i].allowed);
    await Promise.all(recorded.map((key) => this.options.client.zrem(key, member)));
    return {
      allowed: false,
      limits: limits.map((limit) => (limit.allowed ? { ...limit, count: limit.count - 1, remaining: limit.remaining + 1 } : limit)),
    };
  }

  /** Peek for versions without a read-only function: a plain ZCOUNT of the window. */
  private async peekWithCommands(fullKey: string, rule: SlidingLimitRule): Promise<LimitOutcome> {
    const nowMs = await this.numericNow();
    const reply = await this.options.client.zcount(fullKey, `(${nowMs - rule.windowMs}`, '+inf');
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

  private toDecision(outcome: LimitOutcome, rule: SlidingLimitRule): RateLimitDecision {
    return {
      allowed: outcome.allowed,
      limit: rule.limit,
      remaining: outcome.remaining,
      retryAfterMs: outcome.retryAfterMs,
      resetMs: outcome.resetMs,
      functionName: this.functionName,
    };
  }

  private createClock(): () => NowMs | Promise<number> {
    const { clock } = this.options;
    if (typeof clock === 'function') return clock;
    if (clock === 'local') return Date.now;
    // 'server': inside the function when the version can read TIME, otherwise one TIME round trip.
    return this.contract.readsServerClock ? () => SERVER_TIME : () => this.serverTimeMs();
  }

  private async numericNow(): Promise<number> {
    const now = await this.now();
    return now === SERVER_TIME ? this.serverTimeMs() : now;
  }

  private async serverTimeMs(): Promise<number> {
    return parseServerTimeMs(await this.options.client.time());
  }

  /** Checks one key and rule; allocation-free unless something is wrong, since it runs on every call. */
  private check(key: unknown, rule: unknown): void {
    if (typeof key === 'string' && key.length > 0 && isValidRule(rule)) return;
    this.fail([key], [rule]);
  }

  private checkAll(rules: readonly KeyedSlidingLimitRule[]): void {
    const keys = Array.isArray(rules) ? rules.map((rule) => rule?.key) : [];
    const valid = keys.length > 0 && new Set(keys).size === keys.length && rules.every((rule) => typeof rule.key === 'string' && rule.key.length > 0 && isValidRule(rule));
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
