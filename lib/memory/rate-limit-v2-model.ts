import { isFiniteNumber, luaMax, luaToNumber } from './lua-values';
import {
  INVALID_ARGUMENTS,
  MAX_WINDOW_MS,
  clockSkewError,
  decodeDecisions,
  hasRepeatedKey,
  isNumber,
  isTime,
  isWhole,
  resolveNow,
} from './model-arguments';
import type { ModelCommands } from './model-commands';
import { ModelReplyError } from './model-reply-error';

/**
 * `rate_limit_v2.lua` in plain TypeScript: sliding_allow_v2, sliding_allow_many_v2 and
 * sliding_peek_v2, with the same arguments, replies and errors.
 */
export class RateLimitV2Model {
  constructor(private readonly commands: ModelCommands) {}

  slidingAllow(keys: readonly string[], args: readonly string[]): number[] {
    const n = keys.length;
    if (n < 1 || args.length !== 3 + 2 * n || hasRepeatedKey(keys)) throw new ModelReplyError(INVALID_ARGUMENTS);
    const nowMs = resolveNow(this.commands, args[0]);
    const member = args[1];
    const maxSkewMs = luaToNumber(args[2]);
    const limits = parseLimits(args, 3, n);
    if (nowMs === undefined || member === '' || !isTime(maxSkewMs) || !limits) {
      throw new ModelReplyError(INVALID_ARGUMENTS);
    }

    // A member already under KEYS[1] is a retry of an admitted call (recorded under every key).
    const alreadyRecorded = () => this.commands.zscore(keys[0], member) !== undefined;

    const newest: (number | undefined)[] = [];
    for (let i = 0; i < n; i++) {
      newest[i] = this.commands.newestScore(keys[i]);
      const lead = newest[i] === undefined ? undefined : (newest[i] as number) - nowMs;
      // A retry carries its original now_ms, which newer entries may have overtaken since.
      if (lead !== undefined && lead > maxSkewMs && !alreadyRecorded()) {
        throw clockSkewError(nowMs, newest[i] as number, keys[i], maxSkewMs);
      }
    }

    const counts: number[] = [];
    let allowed = 1;
    for (let i = 0; i < n; i++) {
      this.commands.zremrangebyscore(keys[i], nowMs - limits[i].windowMs);
      counts[i] = this.commands.zcard(keys[i]);
      if (counts[i] >= limits[i].limit) allowed = 0;
    }
    // Only a full window needs the retry check: with room, ZADD tells a retry by adding nothing.
    if (allowed === 0 && alreadyRecorded()) allowed = 1;

    const reply = [allowed];
    for (let i = 0; i < n; i++) {
      if (allowed === 1) {
        counts[i] = counts[i] + this.commands.zadd(keys[i], nowMs, member);
        newest[i] = luaMax(newest[i] ?? nowMs, nowMs);
        this.commands.pexpire(keys[i], Math.ceil((newest[i] as number) + limits[i].windowMs - nowMs));
      }
      reply.push(...this.report(allowed, keys[i], nowMs, limits[i], counts[i], newest[i]));
    }
    return reply;
  }

  /** Checks every decision first (nothing is written unless all are valid), then runs them in order. */
  slidingAllowMany(keys: readonly string[], args: readonly string[]): number[] {
    const maxSkewMs = luaToNumber(args[0]);
    const list = args.length === 2 ? decodeDecisions(args[1]) : undefined;
    if (keys.length < 1 || !isTime(maxSkewMs) || !list) throw new ModelReplyError(INVALID_ARGUMENTS);
    const decisions: { keys: readonly string[]; args: string[] }[] = [];
    let at = 0;
    let taken = 0;
    while (at < list.length) {
      const decision = manyDecisionAt(keys, list, at, taken, args[0]);
      if (!decision) throw new ModelReplyError(INVALID_ARGUMENTS);
      decisions.push(decision);
      at += 3 + 2 * decision.keys.length;
      taken += decision.keys.length;
    }
    if (taken !== keys.length) throw new ModelReplyError(INVALID_ARGUMENTS);
    // A CLOCKSKEW of one decision is the reply of the call; the ones before it stay recorded.
    return decisions.flatMap((decision) => this.slidingAllow(decision.keys, decision.args));
  }

  slidingPeek(keys: readonly string[], args: readonly string[]): number[] {
    const n = keys.length;
    if (n < 1 || args.length !== 1 + 2 * n || hasRepeatedKey(keys)) throw new ModelReplyError(INVALID_ARGUMENTS);
    const nowMs = resolveNow(this.commands, args[0]);
    const limits = parseLimits(args, 1, n);
    if (nowMs === undefined || !limits) throw new ModelReplyError(INVALID_ARGUMENTS);

    const counts: number[] = [];
    let allowed = 1;
    for (let i = 0; i < n; i++) {
      counts[i] = this.commands.inWindow(keys[i], nowMs - limits[i].windowMs).length;
      if (counts[i] >= limits[i].limit) allowed = 0;
    }

    const reply = [allowed];
    for (let i = 0; i < n; i++)
      reply.push(...this.report(allowed, keys[i], nowMs, limits[i], counts[i], this.commands.newestScore(keys[i])));
    return reply;
  }

  /** count, remaining, retry_after_ms and reset_ms of one limit (the Lua's `report`). */
  private report(
    allowed: number,
    key: string,
    nowMs: number,
    { windowMs, limit }: Limit,
    count: number,
    newest: number | undefined,
  ): number[] {
    let retryAfterMs = 0;
    if (allowed === 0 && count >= limit) {
      // count - limit + 1 entries must leave before one more fits.
      const entry = this.commands.inWindow(key, nowMs - windowMs)[count - limit];
      retryAfterMs = Math.ceil(entry + windowMs - nowMs);
    }
    const resetMs = count > 0 ? Math.ceil((newest as number) + windowMs - nowMs) : 0;
    return [count, luaMax(limit - count, 0), retryAfterMs, resetMs];
  }
}

/** One (window_ms, limit) pair of v2's ARGV. */
interface Limit {
  windowMs: number;
  limit: number;
}

/** The Lua's `parse_limits`: n pairs from args[first]; undefined when one is invalid. */
function parseLimits(args: readonly string[], first: number, n: number): Limit[] | undefined {
  const limits: Limit[] = [];
  for (let i = 0; i < n; i++) {
    const windowMs = luaToNumber(args[first + 2 * i]);
    const limit = luaToNumber(args[first + 2 * i + 1]);
    if (
      !isFiniteNumber(windowMs) ||
      !isFiniteNumber(limit) ||
      windowMs <= 0 ||
      windowMs > MAX_WINDOW_MS ||
      limit <= 0 ||
      !isWhole(limit)
    )
      return undefined;
    limits.push({ windowMs, limit });
  }
  return limits;
}

/** A decoded JSON number as sliding_allow_v2 would get it in ARGV (`-0` kept, as `%.17g` keeps it). */
function numberText(value: unknown): string {
  return Object.is(value, -0) ? '-0' : String(value);
}

/**
 * The Lua's `decision_key_count`: the decision at list[at] as sliding_allow_v2 takes it (its keys, and
 * now_ms, member, max_skew_ms, then the window and limit pairs as text), or undefined when it is invalid.
 */
function manyDecisionAt(
  keys: readonly string[],
  list: readonly unknown[],
  at: number,
  taken: number,
  maxSkewArg: string,
): { keys: string[]; args: string[] } | undefined {
  const [nowMs, member, n] = [list[at], list[at + 1], list[at + 2]];
  if (!(isNumber(n) && n >= 1 && isWhole(n) && taken + n <= keys.length && at + 2 + 2 * n < list.length))
    return undefined;
  if (!(nowMs === '*' || (isNumber(nowMs) && isTime(nowMs))) || typeof member !== 'string' || member === '')
    return undefined;
  const pairs = list.slice(at + 3, at + 3 + 2 * n);
  if (!pairs.every(isNumber)) return undefined;
  const pairTexts = pairs.map(numberText);
  const ownKeys = keys.slice(taken, taken + n);
  if (!parseLimits(pairTexts, 0, n) || (n > 1 && hasRepeatedKey(ownKeys))) return undefined;
  return { keys: ownKeys, args: [numberText(nowMs), member, maxSkewArg, ...pairTexts] };
}
