import { DEFAULT_KEY_PREFIX } from '../core/constants';
import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import { UnexpectedReplyError } from '../core/errors/unexpected-reply.error';
import {
  byKey,
  DEFAULT_OVERRIDE_LIST_COUNT,
  describeListProblems,
  describeOverrideProblems,
  overrideFields,
  parseOverride,
  storedOverride,
  type KeyOverride,
  type OverrideListOptions,
  type OverrideSetOptions,
  type OverrideStore,
  type StoredOverride,
} from '../core/key-overrides';
import { describeKeyPrefixProblems, limitedKeyOf, overrideKeyOf, overrideKeyPatterns } from '../core/override-keys';
import { globMatches } from './glob';
import { settle } from './settle';
import type { SlidingWindowModel } from './sliding-window-model';

/** Options of {@link MemoryOverridesStore}. */
export interface MemoryOverridesStoreOptions {
  /** Prefix of the limited keys, the limiter's `keyPrefix` (default `rl:`). */
  keyPrefix?: string;
}

/**
 * The in-memory twin of `RedisOverridesStore`: the same overrides, in the model's keyspace (the
 * `MemoryBackend`'s `model`), where `sliding_allow_v2`'s model reads them; they expire by the
 * model's clock, which also dates them.
 */
export class MemoryOverridesStore implements OverrideStore {
  private readonly keyPrefix: string;

  /** @throws RateLimitConfigError for a key prefix with braces */
  constructor(
    private readonly model: SlidingWindowModel,
    options: MemoryOverridesStoreOptions = {},
  ) {
    this.keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    const problems = describeKeyPrefixProblems(this.keyPrefix);
    if (problems.length > 0) throw new RateLimitConfigError(problems, 'MemoryOverridesStore');
  }

  /** {@inheritDoc OverrideStore.set} */
  set(key: string, override: KeyOverride, options?: OverrideSetOptions): Promise<StoredOverride> {
    return settle(() => {
      const createdAt = this.model.nowMs();
      const problems = describeOverrideProblems(key, this.keyPrefix + key, override, options, createdAt);
      if (problems.length > 0) throw new RateLimitConfigError(problems, 'overrides.set');
      const overrideKey = overrideKeyOf(this.keyPrefix + key) as string;
      this.model.del(overrideKey);
      this.model.hset(overrideKey, overrideFields(override, options, createdAt));
      if (options?.ttlMs !== undefined) this.model.pexpire(overrideKey, options.ttlMs);
      if (options?.expiresAt !== undefined) this.model.pexpire(overrideKey, options.expiresAt - createdAt);
      return storedOverride(key, override, options, createdAt, this.model.pttl(overrideKey));
    });
  }

  /** {@inheritDoc OverrideStore.get} */
  get(key: string): Promise<StoredOverride | undefined> {
    return settle(() => {
      const overrideKey = overrideKeyOf(this.keyPrefix + key);
      return overrideKey === undefined ? undefined : this.read(key, overrideKey);
    });
  }

  /** {@inheritDoc OverrideStore.delete} */
  delete(key: string): Promise<boolean> {
    return settle(() => {
      const overrideKey = overrideKeyOf(this.keyPrefix + key);
      return overrideKey !== undefined && this.model.del(overrideKey) === 1;
    });
  }

  /** {@inheritDoc OverrideStore.list} */
  list(options?: OverrideListOptions): Promise<StoredOverride[]> {
    return settle(() => {
      const problems = describeListProblems(options);
      if (problems.length > 0) throw new RateLimitConfigError(problems, 'overrides.list');
      const patterns = overrideKeyPatterns(this.keyPrefix, options?.match);
      const overrides: StoredOverride[] = [];
      for (const overrideKey of this.model.keys()) {
        const limited = limitedKeyOf(overrideKey);
        if (!patterns.some((pattern) => globMatches(pattern, overrideKey))) continue;
        if (limited === undefined || !limited.startsWith(this.keyPrefix)) continue;
        const stored = this.read(limited.slice(this.keyPrefix.length), overrideKey);
        if (stored) overrides.push(stored);
        if (overrides.length === (options?.count ?? DEFAULT_OVERRIDE_LIST_COUNT)) break;
      }
      return overrides.sort(byKey);
    });
  }

  private read(key: string, overrideKey: string): StoredOverride | undefined {
    let fields: [string, string][];
    try {
      fields = this.model.hash(overrideKey);
    } catch (error) {
      throw new UnexpectedReplyError(`HGETALL ${overrideKey} (not an override: delete it)`, (error as Error).message);
    }
    if (fields.length === 0) return undefined;
    return parseOverride(key, overrideKey, Object.fromEntries(fields), this.model.pttl(overrideKey));
  }
}
