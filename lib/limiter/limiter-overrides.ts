import type {
  KeyOverride,
  OverrideListOptions,
  OverrideSetOptions,
  OverrideStore,
  StoredOverride,
} from '../core/key-overrides';
import type { BlockCache } from './block-cache';

/** `limiter.overrides` under the key prefix; a change also drops the key's refusal from this limiter's block cache at once. */
export class LimiterOverrides implements OverrideStore {
  constructor(
    private readonly store: OverrideStore,
    private readonly keyPrefix: string,
    private readonly blockCache: BlockCache | undefined,
  ) {}

  async set(key: string, override: KeyOverride, options?: OverrideSetOptions): Promise<StoredOverride> {
    const stored = await this.store.set(key, override, options);
    this.blockCache?.changed(this.keyPrefix + key);
    return stored;
  }

  get(key: string): Promise<StoredOverride | undefined> {
    return this.store.get(key);
  }

  async delete(key: string): Promise<boolean> {
    const deleted = await this.store.delete(key);
    this.blockCache?.changed(this.keyPrefix + key);
    return deleted;
  }

  list(options?: OverrideListOptions): Promise<StoredOverride[]> {
    return this.store.list(options);
  }
}
