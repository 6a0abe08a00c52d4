import { KeyStore } from './key-store';
import { toRedisInteger } from './lua-values';
import { ModelCommands } from './model-commands';
import { ModelReplyError } from './model-reply-error';
import { slidingAllowV1 } from './rate-limit-v1-model';
import { slidingAllowManyV2, slidingAllowV2, slidingPeekV2 } from './v2/entry-points';

export { ModelReplyError } from './model-reply-error';

/** One sorted-set entry, as `ZRANGE key 0 -1 WITHSCORES` lists it. */
export interface ModelEntry {
  member: string;
  score: number;
}

/** Options of {@link SlidingWindowModel}. */
export interface SlidingWindowModelOptions {
  /** The model's clock (epoch ms): what `*` and TIME read and what keys expire by. Default `Date.now`. */
  clock?: () => number;
  /** At most this many keys; the least recently used is forgotten first. Default: unbounded. */
  maxKeys?: number;
}

type ModelFunction = (keys: readonly string[], args: readonly string[]) => number[];

/**
 * The function libraries `rate_limit_v1.lua` and `rate_limit_v2.lua` in plain
 * TypeScript: the same functions, taking the same KEYS and ARGV (strings) and giving the same integer
 * replies and the same error replies, leaving the same keys (sorted sets for the log, hashes for v2's
 * bucketed window) with the same TTLs. Each function follows its Lua line by line: v1 in
 * `rate-limit-v1-model.ts`, v2 one module per part of the library (`v2/<part>.ts` for
 * `lib/redis/lua/rate_limit_v2/<part>.lua`); read them side by side.
 *
 * What the Lua gets from Redis is mirrored too: `tonumber` parsing, numbers passed to commands as
 * `%.17g` text, replies cast to integers, a ZADD of an existing member moving its entry, empty keys
 * deleted, WRONGTYPE for a key of the other type, PEXPIRE on the model's clock. The property tests in
 * `test/memory/` run random calls through this model and through Redis and require identical answers
 * and identical keys.
 *
 * Plain rather than fast: a call costs O(entries of its keys), as the sorted sets and hashes are plain
 * Maps scanned per call (a few microseconds at the limits the tests use; a rejection sorts the window).
 */
export class SlidingWindowModel {
  private readonly store: KeyStore;
  private readonly commands: ModelCommands;
  /** Every function, by name, and whether it has the `no-writes` flag (the only ones FCALL_RO may call). */
  private readonly functions: Record<string, { run: ModelFunction; readOnly: boolean }>;

  constructor(options: SlidingWindowModelOptions = {}) {
    const clock = options.clock ?? Date.now;
    this.store = new KeyStore(clock, options.maxKeys);
    const commands = (this.commands = new ModelCommands(this.store, clock));
    const writes = (run: ModelFunction) => ({ run, readOnly: false });
    this.functions = {
      sliding_allow_v1: writes((keys, args) => slidingAllowV1(commands, keys, args)),
      sliding_allow_v2: writes((keys, args) => slidingAllowV2(commands, keys, args)),
      sliding_allow_many_v2: writes((keys, args) => slidingAllowManyV2(commands, keys, args)),
      sliding_peek_v2: { run: (keys, args) => slidingPeekV2(commands, keys, args), readOnly: true },
    };
  }

  /**
   * `FCALL` (or `FCALL_RO` when `readOnly`) of a function of any of the libraries.
   * @throws ModelReplyError with the reply text Redis would give
   */
  call(functionName: string, keys: readonly string[], args: readonly string[], readOnly = false): number[] {
    const fn = Object.hasOwn(this.functions, functionName) ? this.functions[functionName] : undefined;
    if (!fn) throw new ModelReplyError('ERR Function not found');
    if (readOnly && !fn.readOnly) {
      throw new ModelReplyError('ERR Can not execute a script with write flag using *_ro command.');
    }
    return fn.run(keys, args).map(toRedisInteger);
  }

  // ---------------------------------------------------------------- plain commands (KeyCommands)

  /** DEL: 1 when the key existed. */
  del(key: string): number {
    return this.commands.del(key);
  }

  /** ZREM of one member: 1 when it was there. @throws ModelReplyError WRONGTYPE for a hash */
  zrem(key: string, member: string): number {
    return this.commands.zrem(key, member);
  }

  /** ZCOUNT with Redis' bound syntax (`(` exclusive, `-inf`, `+inf`). @throws ModelReplyError WRONGTYPE for a hash */
  zcount(key: string, min: string, max: string): number {
    return this.commands.zcount(key, min, max);
  }

  /** TIME: `[seconds, microseconds]` of the model's clock, as strings. */
  time(): [string, string] {
    return this.commands.time();
  }

  /** Redis' clock in ms: the model's clock, never going back (what keys expire by). */
  nowMs(): number {
    return this.store.now();
  }

  /**
   * HSET key field value …: sets fields of a hash, created when missing (an override hash, say).
   * @throws ModelReplyError WRONGTYPE when the key holds a sorted set
   */
  hset(key: string, fieldsAndValues: readonly string[]): void {
    for (let i = 0; i + 1 < fieldsAndValues.length; i += 2)
      this.commands.hset(key, fieldsAndValues[i], fieldsAndValues[i + 1]);
  }

  /** PEXPIRE key ms on the model's clock (ms ≤ 0 deletes the key, as Redis does). */
  pexpire(key: string, ms: number): void {
    this.commands.pexpire(key, ms);
  }

  // ---------------------------------------------------------------- inspection

  /** The live keys, sorted. */
  keys(): string[] {
    return this.store.keys().sort();
  }

  /** TYPE of `key`: `zset` (a log), `hash` (a bucketed window) or `none`. */
  type(key: string): 'zset' | 'hash' | 'none' {
    return this.commands.type(key);
  }

  /**
   * The entries of a log key in ZRANGE order (score, then member bytes); empty when the key does not exist.
   * @throws ModelReplyError WRONGTYPE when the key holds a hash (a bucketed window), as ZRANGE would
   */
  entries(key: string): ModelEntry[] {
    const zset = this.store.zset(key) ?? new Map<string, number>();
    return [...zset]
      .map(([member, score]) => ({ member, score }))
      .sort((a, b) => a.score - b.score || Buffer.compare(Buffer.from(a.member), Buffer.from(b.member)));
  }

  /**
   * The fields of a bucketed key as `[field, value]` pairs, in HGETALL order (a small hash's order in
   * Redis: the order fields were added in); empty when the key does not exist.
   * @throws ModelReplyError WRONGTYPE when the key holds a sorted set (a log), as HGETALL would
   */
  hash(key: string): [field: string, value: string][] {
    return [...(this.store.hash(key) ?? [])];
  }

  /** PTTL of `key` on the model's clock: ms left, -1 without TTL, -2 when it does not exist. */
  pttl(key: string): number {
    return this.store.pttl(key);
  }
}
