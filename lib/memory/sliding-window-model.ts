import { KeyStore } from './key-store';
import { toRedisInteger } from './lua-values';
import { ModelCommands } from './model-commands';
import { ModelReplyError } from './model-reply-error';
import { slidingAllowV1 } from './rate-limit-v1-model';
import { slidingAllowManyV2, slidingAllowV2, slidingPeekV2 } from './v2/entry-points';

/** Options: as `MemoryBackend`'s. */
interface SlidingWindowModelOptions {
  clock?: () => number;
  maxKeys?: number;
}

type ModelFunction = (keys: readonly string[], args: readonly string[]) => number[];

/**
 * The function libraries `rate_limit_v1.lua` and `rate_limit_v2.lua` in plain TypeScript: the same
 * KEYS and ARGV, integer replies, error replies, keys and TTLs, down to what the Lua gets from Redis
 * (`tonumber`, `%.17g` arguments, integer casts). Each function follows its Lua line by line (v1 in
 * `rate-limit-v1-model.ts`, v2 in `v2/<part>.ts` for `rate_limit_v2/<part>.lua`); the property tests
 * in `test/memory/` require identical answers and keys from this model and from Redis.
 */
export class SlidingWindowModel {
  private readonly store: KeyStore;
  /** The plain commands too (KeyCommands): DEL, ZREM, ZCOUNT, TIME. */
  readonly commands: ModelCommands;
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

  /** `FCALL` (or `FCALL_RO` when `readOnly`). @throws ModelReplyError with the reply text Redis would give */
  call(functionName: string, keys: readonly string[], args: readonly string[], readOnly = false): number[] {
    const fn = Object.hasOwn(this.functions, functionName) ? this.functions[functionName] : undefined;
    if (!fn) throw new ModelReplyError('ERR Function not found');
    if (readOnly && !fn.readOnly) {
      throw new ModelReplyError('ERR Can not execute a script with write flag using *_ro command.');
    }
    return fn.run(keys, args).map(toRedisInteger);
  }

  del(key: string): number {
    return this.commands.del(key);
  }

  /** Redis' clock in ms: the model's clock, never going back (what keys expire by). */
  nowMs(): number {
    return this.store.now();
  }

  /** HSET key field value …: an override hash, say. @throws ModelReplyError WRONGTYPE for a sorted set */
  hset(key: string, fieldsAndValues: readonly string[]): void {
    for (let i = 0; i + 1 < fieldsAndValues.length; i += 2)
      this.commands.hset(key, fieldsAndValues[i], fieldsAndValues[i + 1]);
  }

  pexpire(key: string, ms: number): void {
    this.commands.pexpire(key, ms);
  }

  keys(): string[] {
    return this.store.keys().sort();
  }

  type(key: string): 'zset' | 'hash' | 'none' {
    return this.commands.type(key);
  }

  /** ZRANGE key 0 -1 WITHSCORES (score, then member bytes). @throws ModelReplyError WRONGTYPE for a hash */
  entries(key: string): { member: string; score: number }[] {
    const zset = this.store.zset(key) ?? new Map<string, number>();
    return [...zset]
      .map(([member, score]) => ({ member, score }))
      .sort((a, b) => a.score - b.score || Buffer.compare(Buffer.from(a.member), Buffer.from(b.member)));
  }

  /** HGETALL key as `[field, value]` pairs. @throws ModelReplyError WRONGTYPE for a sorted set */
  hash(key: string): [field: string, value: string][] {
    return [...(this.store.hash(key) ?? [])];
  }

  pttl(key: string): number {
    return this.store.pttl(key);
  }
}
