import type { KeyStore, KeyType } from './key-store';
import { isIntegerArgument, parseRedisInteger, parseScoreBound } from './lua-values';
import { ModelReplyError } from './model-reply-error';

const NOT_AN_INTEGER = 'ERR value is not an integer or out of range';

/** The Redis commands the Lua calls, answered as Redis 7.0 does; numbers arrive as the Lua numbers given to `redis.call`. */
export class ModelCommands {
  constructor(
    private readonly store: KeyStore,
    private readonly clock: () => number,
  ) {}

  /** ZREMRANGEBYSCORE key -inf maxScore. */
  zremrangebyscore(key: string, maxScore: number): void {
    const zset = this.store.zset(key);
    if (!zset) return;
    for (const [member, score] of zset) if (score <= maxScore) zset.delete(member);
    this.store.deleteIfEmpty(key);
  }

  zcard(key: string): number {
    return this.store.zset(key)?.size ?? 0;
  }

  /** ZADD of one member: 1 when added, 0 when it was there (its score is updated). */
  zadd(key: string, score: number, member: string): number {
    const zset = this.store.zsetOrCreate(key);
    const added = zset.has(member) ? 0 : 1;
    zset.set(member, score);
    return added;
  }

  /** ZADD NX of one member: 1 when added, 0 when it was there (left as it is). */
  zaddNx(key: string, score: number, member: string): number {
    const zset = this.store.zsetOrCreate(key);
    if (zset.has(member)) return 0;
    zset.set(member, score);
    return 1;
  }

  zscore(key: string, member: string): number | undefined {
    return this.store.zset(key)?.get(member);
  }

  /** The Lua's `newest_score`: the highest score (ZRANGE key -1 -1 WITHSCORES), or nil. */
  newestScore(key: string): number | undefined {
    let newest: number | undefined;
    for (const score of this.store.zset(key)?.values() ?? [])
      if (newest === undefined || score > newest) newest = score;
    return newest;
  }

  /** Scores above `afterScore`, oldest first (ZRANGEBYSCORE key (after +inf). */
  inWindow(key: string, afterScore: number): number[] {
    const zset = this.store.zset(key) ?? new Map<string, number>();
    return [...zset.values()].filter((score) => score > afterScore).sort((a, b) => a - b);
  }

  /** Members and scores above `afterScore`, in ZRANGEBYSCORE order (score, then member bytes). */
  entriesAfter(key: string, afterScore: number): [string, number][] {
    const zset = this.store.zset(key) ?? new Map<string, number>();
    return [...zset.entries()]
      .filter(([, score]) => score > afterScore)
      .sort(([memberA, a], [memberB, b]) => a - b || Buffer.compare(Buffer.from(memberA), Buffer.from(memberB)));
  }

  /** ZCOUNT key (after +inf, with a Lua number as the bound. */
  countAfter(key: string, afterScore: number): number {
    let count = 0;
    for (const score of this.store.zset(key)?.values() ?? []) if (score > afterScore) count++;
    return count;
  }

  /** ZCOUNT with Redis' bound syntax (`(` exclusive, `-inf`, `+inf`). */
  zcount(key: string, min: string, max: string): number {
    const low = parseScoreBound(min);
    const high = parseScoreBound(max);
    if (!low || !high) throw new ModelReplyError('ERR min or max is not a float');
    const zset = this.store.zset(key) ?? new Map<string, number>();
    let count = 0;
    for (const score of zset.values()) {
      const aboveLow = low.exclusive ? score > low.value : score >= low.value;
      const belowHigh = high.exclusive ? score < high.value : score <= high.value;
      if (aboveLow && belowHigh) count++;
    }
    return count;
  }

  zrem(key: string, member: string): number {
    const removed = this.store.zset(key)?.delete(member) ?? false;
    this.store.deleteIfEmpty(key);
    return removed ? 1 : 0;
  }

  /** HGETALL: field, value, field, value … in the hash's order (a small hash's: insertion order). */
  hgetall(key: string): string[] {
    const flat: string[] = [];
    for (const [field, value] of this.store.hash(key) ?? []) flat.push(field, value);
    return flat;
  }

  /** HMGET key field …: each field's value, undefined where it is missing. */
  hmget(key: string, fields: readonly string[]): (string | undefined)[] {
    const hash = this.store.hash(key);
    return fields.map((field) => hash?.get(field));
  }

  /** HDEL key field …: how many were there. */
  hdel(key: string, fields: readonly string[]): number {
    const hash = this.store.hash(key);
    if (!hash) return 0;
    let removed = 0;
    for (const field of fields) if (hash.delete(field)) removed++;
    this.store.deleteIfEmpty(key);
    return removed;
  }

  /** HINCRBY key field increment, in Redis' order of checks; the new value. */
  hincrby(key: string, field: string, increment: number): number {
    if (!isIntegerArgument(increment)) throw new ModelReplyError(NOT_AN_INTEGER);
    const hash = this.store.hashOrCreate(key);
    const text = hash.get(field);
    const old = text === undefined ? 0n : parseRedisInteger(text);
    if (old === undefined) throw new ModelReplyError('ERR hash value is not an integer');
    const sum = old + BigInt(increment);
    if (parseRedisInteger(sum.toString()) === undefined) {
      throw new ModelReplyError('ERR increment or decrement would overflow');
    }
    hash.set(field, sum.toString());
    return Number(sum);
  }

  hset(key: string, field: string, value: string): void {
    this.store.hashOrCreate(key).set(field, value);
  }

  /** `redis.call('PEXPIRE', key, n)`: the number travels as `%.17g` text and must read as an integer. */
  pexpire(key: string, ms: number): void {
    if (!isIntegerArgument(ms)) throw new ModelReplyError(NOT_AN_INTEGER);
    this.store.pexpire(key, ms);
  }

  /** EXISTS key …: how many of them exist (a key named twice counts twice). */
  exists(keys: readonly string[]): number {
    let count = 0;
    for (const key of keys) if (this.store.typeOf(key) !== undefined) count++;
    return count;
  }

  pttl(key: string): number {
    return this.store.pttl(key);
  }

  del(key: string): number {
    return this.store.delete(key) ? 1 : 0;
  }

  type(key: string): KeyType | 'none' {
    return this.store.typeOf(key) ?? 'none';
  }

  /** TIME: `[seconds, microseconds]` of the model's clock, as strings. */
  time(): [string, string] {
    this.store.now(); // a command like any other: Redis' clock has reached this time
    const nowMs = this.clock();
    const seconds = Math.floor(nowMs / 1000);
    return [String(seconds), String(Math.floor((nowMs - seconds * 1000) * 1000))];
  }
}
