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
import type { RedisConnection } from '../core/redis-connection';
import { OVERRIDE_CHANGES_CHANNEL } from './override-changes';
import { masterNodes } from './redis-nodes';
import { toInteger, toRecord, toText } from './reply';

/** Options of {@link RedisOverridesStore}. */
export interface OverridesStoreOptions {
  /** Prefix of the limited keys, the limiter's `keyPrefix` (default `rl:`). */
  keyPrefix?: string;
  /** The clock of `createdAt`, epoch ms (default `Date.now`). */
  clock?: () => number;
}

/** Keys SCAN looks at per step (its COUNT hint). */
const SCAN_COUNT = 1000;

/**
 * Per-key overrides in Redis, read by `sliding_allow_v2` in the same call: a hash in each key's slot.
 * Each change is published on {@link OVERRIDE_CHANGES_CHANNEL}, so limiters drop their cached refusals.
 *
 * ```ts
 * const overrides = new RedisOverridesStore(redis, { keyPrefix: 'rl:' });
 * await overrides.set('login:{ip:10.0.0.1}', { action: 'block' }, { ttlMs: 3_600_000, note: 'abuse', by: 'ops' });
 * ```
 */
export class RedisOverridesStore implements OverrideStore {
  private readonly keyPrefix: string;
  private readonly clock: () => number;

  /** @throws RateLimitConfigError for a key prefix with braces or a clock that is not a function */
  constructor(
    private readonly connection: RedisConnection,
    options: OverridesStoreOptions = {},
  ) {
    this.keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    this.clock = options.clock ?? Date.now;
    const problems = describeKeyPrefixProblems(this.keyPrefix);
    if (typeof this.clock !== 'function') problems.push('clock must be a function returning epoch milliseconds');
    if (problems.length > 0) throw new RateLimitConfigError(problems, 'RedisOverridesStore');
  }

  /** {@inheritDoc OverrideStore.set} */
  async set(key: string, override: KeyOverride, options?: OverrideSetOptions): Promise<StoredOverride> {
    const createdAt = this.clock();
    const problems = describeOverrideProblems(key, this.keyPrefix + key, override, options, createdAt);
    if (problems.length > 0) throw new RateLimitConfigError(problems, 'overrides.set');
    const overrideKey = overrideKeyOf(this.keyPrefix + key) as string;
    const transaction = this.connection
      .multi()
      .del(overrideKey)
      .hset(overrideKey, ...overrideFields(override, options, createdAt));
    if (options?.ttlMs !== undefined) transaction.pexpire(overrideKey, options.ttlMs);
    if (options?.expiresAt !== undefined) transaction.pexpireat(overrideKey, options.expiresAt);
    transaction.publish(OVERRIDE_CHANGES_CHANNEL, this.keyPrefix + key).pttl(overrideKey);
    const results = (await transaction.exec()) ?? [];
    const failed = results.find(([error]) => error);
    if (failed) throw failed[0] as Error;
    await this.announce(key);
    const pttl = toInteger(results[results.length - 1][1], 'PTTL', results);
    return storedOverride(key, override, options, createdAt, pttl);
  }

  /** {@inheritDoc OverrideStore.get} */
  async get(key: string): Promise<StoredOverride | undefined> {
    const overrideKey = overrideKeyOf(this.keyPrefix + key);
    return overrideKey === undefined ? undefined : this.read(key, overrideKey);
  }

  /** {@inheritDoc OverrideStore.delete} */
  async delete(key: string): Promise<boolean> {
    const overrideKey = overrideKeyOf(this.keyPrefix + key);
    if (overrideKey === undefined) return false;
    const results = await this.connection
      .multi()
      .del(overrideKey)
      .publish(OVERRIDE_CHANGES_CHANNEL, this.keyPrefix + key)
      .exec();
    const [[error, deleted]] = results ?? [[null, 0]];
    if (error) throw error;
    await this.announce(key);
    return deleted === 1;
  }

  /**
   * Publishes the change again once written: the transaction's message survives a crash of this process,
   * and this one reaches a subscriber on the same server before this call's reply reaches the caller
   * (Redis queues a message before the publisher's reply), so a limiter here hears of it first.
   */
  private async announce(key: string): Promise<void> {
    await this.connection.publish(OVERRIDE_CHANGES_CHANNEL, this.keyPrefix + key);
  }

  /** {@inheritDoc OverrideStore.list} */
  async list(options?: OverrideListOptions): Promise<StoredOverride[]> {
    const problems = describeListProblems(options);
    if (problems.length > 0) throw new RateLimitConfigError(problems, 'overrides.list');
    const count = options?.count ?? DEFAULT_OVERRIDE_LIST_COUNT;
    const found = new Set<string>();
    // Every master holds its own slots: each is scanned, for both forms of override key.
    for (const node of await masterNodes(this.connection)) {
      for (const pattern of overrideKeyPatterns(this.keyPrefix, options?.match)) {
        let cursor = '0';
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
          for (const overrideKey of keys) found.add(toText(overrideKey));
          cursor = toText(next);
        } while (cursor !== '0' && found.size < count);
      }
    }
    const overrides: StoredOverride[] = [];
    for (const overrideKey of [...found].sort()) {
      const limited = limitedKeyOf(overrideKey);
      if (limited === undefined || !limited.startsWith(this.keyPrefix)) continue;
      const stored = await this.read(limited.slice(this.keyPrefix.length), overrideKey);
      if (stored) overrides.push(stored);
      if (overrides.length === count) break;
    }
    return overrides.sort(byKey);
  }

  /** The override at `overrideKey` (HGETALL and PTTL in one transaction), or undefined. */
  private async read(key: string, overrideKey: string): Promise<StoredOverride | undefined> {
    const results = (await this.connection.multi().hgetall(overrideKey).pttl(overrideKey).exec()) ?? [];
    const [[hashError, hash], [, pttl]] = results;
    if (hashError)
      throw new UnexpectedReplyError(`HGETALL ${overrideKey} (not an override: delete it)`, hashError.message);
    const fields = toRecord(hash, `HGETALL ${overrideKey}`);
    if (Object.keys(fields).length === 0) return undefined;
    const texts: Record<string, string> = {};
    for (const [field, value] of Object.entries(fields)) texts[field] = toText(value);
    return parseOverride(key, overrideKey, texts, toInteger(pttl, 'PTTL', results));
  }
}
