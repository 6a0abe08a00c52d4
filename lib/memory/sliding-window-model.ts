import { KeyStore, type SortedSet } from './key-store';
import {
  formatLuaInteger,
  isFiniteNumber,
  isPexpireArgument,
  luaMax,
  luaToNumber,
  parseScoreBound,
  toRedisInteger,
} from './lua-values';

/** One sorted-set entry, as `ZRANGE key 0 -1 WITHSCORES` lists it. */
export interface ModelEntry {
  member: string;
  score: number;
}

/** An error reply of the model; `message` is the reply text, as in ioredis' `ReplyError`. */
export class ModelReplyError extends Error {
  override readonly name = 'ReplyError';
}

/** Options of {@link SlidingWindowModel}. */
export interface SlidingWindowModelOptions {
  /** The model's clock (epoch ms): what `*` and TIME read and what keys expire by. Default `Date.now`. */
  clock?: () => number;
  /** At most this many keys; the least recently used is forgotten first. Default: unbounded. */
  maxKeys?: number;
}

const INVALID_ARGUMENTS = 'ERR invalid arguments';
/** The Lua's MAX_WINDOW_MS: longer windows are refused before any write. */
const MAX_WINDOW_MS = 1e15;
/** The Lua's MAX_TIME_MS: times and tolerances outside 0 … 1e15 ms are refused before any write. */
const MAX_TIME_MS = 1e15;

function isTime(value: number | undefined): value is number {
  return isFiniteNumber(value) && value >= 0 && value <= MAX_TIME_MS;
}
/** Functions registered with the `no-writes` flag, the only ones FCALL_RO may call. */
const READ_ONLY_FUNCTIONS = new Set(['sliding_peek_v2']);

/**
 * The sliding window log of `rate_limit_v1.lua` and `rate_limit_v2.lua`, in plain TypeScript: the same
 * functions, taking the same KEYS and ARGV (strings) and giving the same integer replies and the same
 * error replies. Each function follows its Lua line by line; read them side by side.
 *
 * What the Lua gets from Redis is mirrored too: `tonumber` parsing, numbers passed to commands as
 * `%.17g` text, replies cast to integers, a ZADD of an existing member moving its entry, empty sets
 * deleted, PEXPIRE on the model's clock. The property tests in `test/property/` run random calls
 * through this model and through Redis and require identical answers and identical keys.
 *
 * Plain rather than fast: a call costs O(entries of its keys), as the sorted sets are plain Maps
 * scanned per call (a few microseconds at the limits the tests use; a rejection sorts the window).
 */
export class SlidingWindowModel {
  private readonly store: KeyStore;

  constructor(private readonly options: SlidingWindowModelOptions = {}) {
    this.store = new KeyStore(options.clock ?? Date.now, options.maxKeys);
  }

  /**
   * `FCALL` (or `FCALL_RO` when `readOnly`) of a function of either library.
   * @throws ModelReplyError with the reply text Redis would give
   */
  call(functionName: string, keys: readonly string[], args: readonly string[], readOnly = false): number[] {
    const fn = this.functions[functionName];
    if (!fn) throw new ModelReplyError('ERR Function not found');
    if (readOnly && !READ_ONLY_FUNCTIONS.has(functionName)) {
      throw new ModelReplyError('ERR Can not execute a script with write flag using *_ro command.');
    }
    return fn(keys, args).map(toRedisInteger);
  }

  private readonly functions: Record<string, (keys: readonly string[], args: readonly string[]) => number[]> = {
    sliding_allow_v1: (keys, args) => this.slidingAllowV1(keys, args),
    sliding_allow_v2: (keys, args) => this.slidingAllowV2(keys, args),
    sliding_allow_many_v2: (keys, args) => this.slidingAllowManyV2(keys, args),
    sliding_peek_v2: (keys, args) => this.slidingPeekV2(keys, args),
  };

  // ---------------------------------------------------------------- rate_limit_v1

  private slidingAllowV1(keys: readonly string[], args: readonly string[]): number[] {
    const key = keys[0];
    const nowMs = luaToNumber(args[0]);
    const windowMs = luaToNumber(args[1]);
    const limit = luaToNumber(args[2]);
    const member = args[3];
    if (
      key === undefined ||
      !isTime(nowMs) ||
      !isFiniteNumber(windowMs) ||
      !isFiniteNumber(limit) ||
      windowMs <= 0 ||
      windowMs > MAX_WINDOW_MS ||
      limit <= 0 ||
      !isWhole(limit) ||
      member === undefined ||
      member === ''
    ) {
      throw new ModelReplyError(INVALID_ARGUMENTS);
    }

    this.zremrangebyscore(key, nowMs - windowMs);
    const count = this.zcard(key);
    if (count >= limit) return [0, 0];

    this.zadd(key, nowMs, member);
    this.pexpire(key, Math.ceil(windowMs));
    return [1, limit - count - 1];
  }

  // ---------------------------------------------------------------- rate_limit_v2

  private slidingAllowV2(keys: readonly string[], args: readonly string[]): number[] {
    const n = keys.length;
    if (n < 1 || args.length !== 3 + 2 * n || hasRepeatedKey(keys)) throw new ModelReplyError(INVALID_ARGUMENTS);
    const nowMs = this.resolveNow(args[0]);
    const member = args[1];
    const maxSkewMs = luaToNumber(args[2]);
    const limits = parseLimits(args, 3, n);
    if (nowMs === undefined || member === '' || !isTime(maxSkewMs) || !limits) {
      throw new ModelReplyError(INVALID_ARGUMENTS);
    }

    // A member already under KEYS[1] is a retry of an admitted call (recorded under every key).
    const alreadyRecorded = () => this.zscore(keys[0], member) !== undefined;

    const newest: (number | undefined)[] = [];
    for (let i = 0; i < n; i++) {
      newest[i] = this.newestScore(keys[i]);
      const lead = newest[i] === undefined ? undefined : (newest[i] as number) - nowMs;
      // A retry carries its original now_ms, which newer entries may have overtaken since.
      if (lead !== undefined && lead > maxSkewMs && !alreadyRecorded()) {
        throw new ModelReplyError(
          `CLOCKSKEW now_ms ${formatLuaInteger(nowMs)} is ${formatLuaInteger(lead)} ms behind the newest entry of ${keys[i]} ` +
            `(tolerance ${formatLuaInteger(maxSkewMs)} ms)`,
        );
      }
    }

    const counts: number[] = [];
    let allowed = 1;
    for (let i = 0; i < n; i++) {
      this.zremrangebyscore(keys[i], nowMs - limits[i].windowMs);
      counts[i] = this.zcard(keys[i]);
      if (counts[i] >= limits[i].limit) allowed = 0;
    }
    // Only a full window needs the retry check: with room, ZADD tells a retry by adding nothing.
    if (allowed === 0 && alreadyRecorded()) allowed = 1;

    const reply = [allowed];
    for (let i = 0; i < n; i++) {
      if (allowed === 1) {
        counts[i] = counts[i] + this.zadd(keys[i], nowMs, member);
        newest[i] = luaMax(newest[i] ?? nowMs, nowMs);
        this.pexpire(keys[i], Math.ceil((newest[i] as number) + limits[i].windowMs - nowMs));
      }
      reply.push(...this.report(allowed, keys[i], nowMs, limits[i], counts[i], newest[i]));
    }
    return reply;
  }

  /** Checks every decision first (nothing is written unless all are valid), then runs them in order. */
  private slidingAllowManyV2(keys: readonly string[], args: readonly string[]): number[] {
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
    return decisions.flatMap((decision) => this.slidingAllowV2(decision.keys, decision.args));
  }

  private slidingPeekV2(keys: readonly string[], args: readonly string[]): number[] {
    const n = keys.length;
    if (n < 1 || args.length !== 1 + 2 * n || hasRepeatedKey(keys)) throw new ModelReplyError(INVALID_ARGUMENTS);
    const nowMs = this.resolveNow(args[0]);
    const limits = parseLimits(args, 1, n);
    if (nowMs === undefined || !limits) throw new ModelReplyError(INVALID_ARGUMENTS);

    const counts: number[] = [];
    let allowed = 1;
    for (let i = 0; i < n; i++) {
      counts[i] = this.inWindow(keys[i], nowMs - limits[i].windowMs).length;
      if (counts[i] >= limits[i].limit) allowed = 0;
    }

    const reply = [allowed];
    for (let i = 0; i < n; i++)
      reply.push(...this.report(allowed, keys[i], nowMs, limits[i], counts[i], this.newestScore(keys[i])));
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
      const entry = this.inWindow(key, nowMs - windowMs)[count - limit];
      retryAfterMs = Math.ceil(entry + windowMs - nowMs);
    }
    const resetMs = count > 0 ? Math.ceil((newest as number) + windowMs - nowMs) : 0;
    return [count, luaMax(limit - count, 0), retryAfterMs, resetMs];
  }

  /** `now_ms` of v2: a number, or `*` for the server's clock (TIME, read as the Lua reads it). */
  private resolveNow(arg: string): number | undefined {
    if (arg === '*') {
      const [seconds, micros] = this.time();
      return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    }
    const nowMs = luaToNumber(arg);
    return isTime(nowMs) ? nowMs : undefined;
  }

  // ---------------------------------------------------------------- the Redis commands the Lua calls

  private zremrangebyscore(key: string, maxScore: number): void {
    const zset = this.store.get(key);
    if (!zset) return;
    for (const [member, score] of zset) if (score <= maxScore) zset.delete(member);
    this.store.deleteIfEmpty(key);
  }

  private zcard(key: string): number {
    return this.store.get(key)?.size ?? 0;
  }

  /** ZADD of one member: 1 when added, 0 when it was there (its score is updated). */
  private zadd(key: string, score: number, member: string): number {
    const zset = this.store.getOrCreate(key);
    const added = zset.has(member) ? 0 : 1;
    zset.set(member, score);
    return added;
  }

  private zscore(key: string, member: string): number | undefined {
    return this.store.get(key)?.get(member);
  }

  /** The Lua's `newest_score`: the highest score (ZRANGE key -1 -1 WITHSCORES), or nil. */
  private newestScore(key: string): number | undefined {
    let newest: number | undefined;
    for (const score of this.store.get(key)?.values() ?? []) if (newest === undefined || score > newest) newest = score;
    return newest;
  }

  /** Scores above `afterScore`, oldest first (ZRANGEBYSCORE key (after +inf). */
  private inWindow(key: string, afterScore: number): number[] {
    const zset = this.store.get(key) ?? new Map<string, number>();
    return [...zset.values()].filter((score) => score > afterScore).sort((a, b) => a - b);
  }

  /** `redis.call('PEXPIRE', key, n)`: the number travels as `%.17g` text and must read as an integer. */
  private pexpire(key: string, ms: number): void {
    if (!isPexpireArgument(ms)) throw new ModelReplyError('ERR value is not an integer or out of range');
    this.store.pexpire(key, ms);
  }

  // ---------------------------------------------------------------- plain commands (KeyCommands)

  /** DEL: 1 when the key existed. */
  del(key: string): number {
    return this.store.delete(key) ? 1 : 0;
  }

  /** ZREM of one member: 1 when it was there. */
  zrem(key: string, member: string): number {
    const removed = this.store.get(key)?.delete(member) ?? false;
    this.store.deleteIfEmpty(key);
    return removed ? 1 : 0;
  }

  /** ZCOUNT with Redis' bound syntax (`(` exclusive, `-inf`, `+inf`). */
  zcount(key: string, min: string, max: string): number {
    const low = parseScoreBound(min);
    const high = parseScoreBound(max);
    if (!low || !high) throw new ModelReplyError('ERR min or max is not a float');
    const zset = this.store.get(key) ?? new Map<string, number>();
    let count = 0;
    for (const score of zset.values()) {
      const aboveLow = low.exclusive ? score > low.value : score >= low.value;
      const belowHigh = high.exclusive ? score < high.value : score <= high.value;
      if (aboveLow && belowHigh) count++;
    }
    return count;
  }

  /** TIME: `[seconds, microseconds]` of the model's clock, as strings. */
  time(): [string, string] {
    this.store.now(); // a command like any other: Redis' clock has reached this time
    const nowMs = (this.options.clock ?? Date.now)();
    const seconds = Math.floor(nowMs / 1000);
    return [String(seconds), String(Math.floor((nowMs - seconds * 1000) * 1000))];
  }

  // ---------------------------------------------------------------- inspection

  /** The live keys, sorted. */
  keys(): string[] {
    return this.store.keys().sort();
  }

  /** The entries of `key` in ZRANGE order (score, then member bytes); empty when the key does not exist. */
  entries(key: string): ModelEntry[] {
    const zset: SortedSet = this.store.get(key) ?? new Map<string, number>();
    return [...zset]
      .map(([member, score]) => ({ member, score }))
      .sort((a, b) => a.score - b.score || Buffer.compare(Buffer.from(a.member), Buffer.from(b.member)));
  }

  /** PTTL of `key` on the model's clock: ms left, -1 without TTL, -2 when it does not exist. */
  pttl(key: string): number {
    return this.store.pttl(key);
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

/** The Lua's `limit % 1 == 0` (Lua's `%` floors: a - floor(a / b) * b). */
function isWhole(n: number): boolean {
  return n - Math.floor(n) === 0;
}

/**
 * The decisions argument of sliding_allow_many_v2 (the Lua's `decode_decisions`): a JSON array, or
 * undefined. JSON.parse is stricter than the Lua's cjson about number spellings (cjson also reads
 * `0x10` or `NaN`); the two agree on everything JSON.stringify writes, which is all this package sends.
 */
function decodeDecisions(text: string | undefined): unknown[] | undefined {
  try {
    const list: unknown = JSON.parse(text ?? '');
    return Array.isArray(list) ? list : undefined;
  } catch {
    return undefined;
  }
}

/** A decoded JSON number as sliding_allow_v2 would get it in ARGV (`-0` kept, as `%.17g` keeps it). */
function numberText(value: unknown): string {
  return Object.is(value, -0) ? '-0' : String(value);
}

function isNumber(value: unknown): value is number {
  return typeof value === 'number';
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

function hasRepeatedKey(keys: readonly string[]): boolean {
  return new Set(keys).size !== keys.length;
}
