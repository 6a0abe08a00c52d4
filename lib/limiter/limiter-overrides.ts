import { RateLimitConfigError } from '../core/errors/rate-limit-config.error';
import type {
  KeyOverride,
  OverrideListOptions,
  OverrideSetOptions,
  OverrideStore,
  StoredOverride,
} from '../core/key-overrides';
import type { LimiterBackend, OverridesStoreSettings } from '../core/limiter-backend';
import type { BlockCache } from './block-cache';

/**
 * `limiter.overrides`: the backend's override store under the limiter's key prefix. A change of a
 * key's override also drops the key's refusal from this process' block cache, which holds refusals
 * only while overrides are not read (`keyOverrides: false`, or sliding_allow_v1): a refusal
 * cached before the change would otherwise outlive it here.
 */
export class LimiterOverrides implements OverrideStore {
  constructor(
    private readonly store: OverrideStore,
    private readonly keyPrefix: string,
    private readonly blockCache: BlockCache | undefined,
  ) {}

  async set(key: string, override: KeyOverride, options?: OverrideSetOptions): Promise<StoredOverride> {
    const stored = await this.store.set(key, override, options);
    this.blockCache?.forget(this.keyPrefix + key);
    return stored;
  }

  get(key: string): Promise<StoredOverride | undefined> {
    return this.store.get(key);
  }

  async delete(key: string): Promise<boolean> {
    const deleted = await this.store.delete(key);
    this.blockCache?.forget(this.keyPrefix + key);
    return deleted;
  }

  list(options?: OverrideListOptions): Promise<StoredOverride[]> {
    return this.store.list(options);
  }
}

/**
 * The overrides of a limiter on `backend`.
 * @throws RateLimitConfigError when the backend keeps no overrides (a `LimiterBackend` of the user's
 * without `overridesStore`)
 */
export function limiterOverrides(
  backend: LimiterBackend,
  settings: OverridesStoreSettings,
  blockCache: BlockCache | undefined,
): LimiterOverrides {
  if (!backend.overridesStore) {
    throw new RateLimitConfigError(
      ['the limiter’s backend keeps no per-key overrides: give it an overridesStore(settings) method'],
      'SlidingWindowLimiter.overrides',
    );
  }
  return new LimiterOverrides(backend.overridesStore(settings), settings.keyPrefix, blockCache);
}
