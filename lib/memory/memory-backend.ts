import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { describeValue } from '../core/value-checks';
import type { KeyCommands, OverridesStoreSettings } from '../core/limiter-backend';
import type { OverrideStore } from '../core/key-overrides';
import type { FunctionContract } from '../core/function-contract';
import type { LoadFunctionsPolicy, LuaRunner } from '../core/lua-runner';
import { MemoryOverridesStore } from './memory-overrides-store';
import { settle } from './settle';
import { SlidingWindowModel } from './sliding-window-model';

/**
 * Decisions in this process's memory instead of Redis: the reference model of the Lua libraries
 * (`SlidingWindowModel`), with the same arguments, replies, errors and keys, so a
 * `SlidingWindowLimiter` on it decides exactly as it would on Redis (the property tests compare the
 * two call by call). It backs `RateLimitTestingModule`.
 *
 * ```ts
 * const backend = new MemoryBackend({ clock: () => now });
 * const limiter = new SlidingWindowLimiter({ backend, clock: () => now });
 * ```
 *
 * Limits are per process: several instances of an application do not share them.
 */
export class MemoryBackend {
  /** @internal The reference model holding the keys. */
  readonly model: SlidingWindowModel;
  /** @internal */
  readonly commands: KeyCommands;
  /** @internal One process, one "slot": every call may touch any keys. */
  readonly clustered = false;

  /** @throws RateLimitConfigError for a clock that is not a function or a `maxKeys` below 1 */
  constructor(
    options: {
      /**
       * The store's clock in epoch ms: what `now_ms = "*"` (the server clock) reads and what keys
       * expire by. Default `Date.now`. Give the limiter the same function as its `clock` to control
       * time in tests.
       */
      clock?: () => number;
      /**
       * Keep at most this many keys; creating one more forgets the least recently used key and its
       * entries (that client then starts a fresh window). Default: unbounded. Set it wherever the keys
       * come from clients, so memory stays bounded.
       */
      maxKeys?: number;
    } = {},
  ) {
    const problems: string[] = [];
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      problems.push(`clock must be a function returning epoch milliseconds, got ${describeValue(options.clock)}`);
    }
    if (options.maxKeys !== undefined && !(Number.isInteger(options.maxKeys) && options.maxKeys >= 1)) {
      problems.push(`maxKeys must be a whole number ≥ 1, got ${describeValue(options.maxKeys)}`);
    }
    if (problems.length > 0) throw new RateLimitConfigError(problems, 'MemoryBackend');

    this.model = new SlidingWindowModel(options);
    const commands = this.model.commands;
    this.commands = {
      del: (key) => settle(() => commands.del(key)),
      zrem: (key, member) => settle(() => commands.zrem(key, member)),
      zcount: (key, min, max) => settle(() => commands.zcount(key, min, max)),
      time: () => settle(() => commands.time()),
    };
  }

  /** @internal Always reachable. */
  isConnected(): boolean {
    return true;
  }

  /** @internal Never disconnects, so never becomes ready again. */
  onReady(_listener: () => void): () => void {
    return () => undefined;
  }

  /** @internal In the model's keyspace, dated and expired by the backend's `clock`, not the limiter's. */
  overridesStore(settings: OverridesStoreSettings): OverrideStore {
    return new MemoryOverridesStore(this.model, { keyPrefix: settings.keyPrefix });
  }

  /** @internal Every version is "loaded": the model implements them all. */
  runnerFor(contract: FunctionContract, _policy: LoadFunctionsPolicy): Promise<LuaRunner> {
    return Promise.resolve(new MemoryRunner(this.model, contract));
  }

  /** The keys that exist now (expired ones excluded), sorted, each with the limiter's prefix. */
  keys(): string[] {
    return this.model.keys();
  }

  /**
   * The entries of a log key (the full key, prefix included), oldest first, as ZRANGE WITHSCORES
   * lists them. A bucketed key (a rule with `precisionMs`) is a hash: read it with {@link MemoryBackend.hash}.
   * @throws ModelReplyError WRONGTYPE for a bucketed key, as ZRANGE would
   */
  entries(key: string): { member: string; score: number }[] {
    return this.model.entries(key);
  }

  /**
   * The fields of a bucketed key (the full key, prefix included) as `[field, value]` pairs in HGETALL
   * order: one per sub-window (`floor(time / precisionMs)` → cost admitted in it) and `ids`.
   * @throws ModelReplyError WRONGTYPE for a log key, as HGETALL would
   */
  hash(key: string): [field: string, value: string][] {
    return this.model.hash(key);
  }

  /** Milliseconds until `key` expires: -1 without TTL, -2 when it does not exist (PTTL). */
  pttl(key: string): number {
    return this.model.pttl(key);
  }
}

/** Runs a library version's functions on the model, as FCALL / FCALL_RO would on Redis. */
export class MemoryRunner implements LuaRunner {
  readonly mode = 'memory';

  constructor(
    private readonly model: SlidingWindowModel,
    readonly contract: FunctionContract,
  ) {}

  async prepare(): Promise<void> {}

  /** Arguments travel as text, numbers written as ioredis writes them (`String(n)`). */
  run: LuaRunner['run'] = (functionName, keyCount, keysAndArguments, readOnly) => {
    const keys = keysAndArguments.slice(0, keyCount) as string[];
    const args = keysAndArguments.slice(keyCount).map(String);
    return settle(() => this.model.call(functionName, keys, args, readOnly));
  };
}
