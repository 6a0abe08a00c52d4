import { ModelReplyError, WRONGTYPE } from './model-reply-error';

/** The values by TYPE name. A field set again keeps its place in a Map, as in a small hash's HGETALL order. */
interface Values {
  zset: Map<string, number>;
  hash: Map<string, string>;
}

export type KeyType = keyof Values;

interface StoredKey {
  readonly type: KeyType;
  readonly value: Map<string, unknown>;
  /** `ms` from `setAtMs` on the store's clock, apart rather than summed so that huge TTLs (up to 1e17 ms) stay exact. */
  expiry?: { setAtMs: number; ms: number };
}

/** Expired keys looked at per new key, from the least recently used end: memory is reclaimed as it goes. */
const SWEEP_PER_CREATE = 2;

/**
 * The model's keyspace: Redis' types (WRONGTYPE), expiry (lazy, empty keys deleted) and, with
 * `maxKeys`, eviction of the least recently used key (an evicted client starts a fresh window).
 *
 * Keys expire by "Redis' clock": the model's clock, but never going back, since a test setting its
 * clock back plays a gateway that lags while Redis keeps its own time.
 */
export class KeyStore {
  /** Least recently used first. */
  private readonly store = new Map<string, StoredKey>();
  private clockHighWaterMs = -Infinity;

  constructor(
    private readonly clock: () => number,
    private readonly maxKeys = Infinity,
  ) {}

  /** Redis' clock, in whole ms: the model's clock, never going back. */
  now(): number {
    const now = Math.floor(this.clock());
    if (now > this.clockHighWaterMs) this.clockHighWaterMs = now;
    return this.clockHighWaterMs;
  }

  /** TYPE: the type of a live key, without marking it used; undefined when missing or expired. */
  typeOf(key: string): KeyType | undefined {
    return this.live(key)?.type;
  }

  /** The sorted set of a live key, marking it recently used. @throws ModelReplyError WRONGTYPE for a hash */
  zset(key: string): Values['zset'] | undefined {
    return this.valueOf(key, 'zset', false);
  }

  /** The hash of a live key, marking it recently used. @throws ModelReplyError WRONGTYPE for a sorted set */
  hash(key: string): Values['hash'] | undefined {
    return this.valueOf(key, 'hash', false);
  }

  /** The sorted set of `key`, created (without TTL) when missing. @throws ModelReplyError WRONGTYPE */
  zsetOrCreate(key: string): Values['zset'] {
    return this.valueOf(key, 'zset', true) as Values['zset'];
  }

  /** The hash of `key`, created (without TTL) when missing. @throws ModelReplyError WRONGTYPE */
  hashOrCreate(key: string): Values['hash'] {
    return this.valueOf(key, 'hash', true) as Values['hash'];
  }

  delete(key: string): boolean {
    const existed = this.live(key) !== undefined;
    this.store.delete(key);
    return existed;
  }

  /** Redis deletes a sorted set with its last member, a hash with its last field. */
  deleteIfEmpty(key: string): void {
    const stored = this.store.get(key);
    if (stored !== undefined && stored.value.size === 0) this.store.delete(key);
  }

  /** PEXPIRE on an existing key: expires `ms` from now; `ms ≤ 0` deletes the key at once, as Redis does. */
  pexpire(key: string, ms: number): void {
    const stored = this.live(key);
    if (!stored) return;
    if (ms <= 0) this.store.delete(key);
    else stored.expiry = { setAtMs: this.now(), ms };
  }

  /** PTTL: ms left, -1 without TTL, -2 when the key does not exist. */
  pttl(key: string): number {
    const stored = this.live(key);
    if (!stored) return -2;
    return stored.expiry === undefined ? -1 : stored.expiry.ms - (this.now() - stored.expiry.setAtMs);
  }

  /** The live keys, in no particular order. */
  keys(): string[] {
    return [...this.store.keys()].filter((key) => this.live(key) !== undefined);
  }

  /** The value of a live key of `type`, moved to the most recently used end; a new one when `create`. */
  private valueOf<T extends KeyType>(key: string, type: T, create: boolean): Values[T] | undefined {
    const stored = this.live(key);
    if (stored === undefined) {
      if (!create) return undefined;
      const value = new Map() as Values[T];
      this.sweep();
      this.store.set(key, { type, value });
      while (this.store.size > this.maxKeys) this.store.delete(this.store.keys().next().value as string);
      return value;
    }
    if (stored.type !== type) throw new ModelReplyError(WRONGTYPE);
    this.store.delete(key);
    this.store.set(key, stored);
    return stored.value as Values[T];
  }

  /** A live key, not marked used. Reads the clock even for a missing key: Redis' clock moves on with every command. */
  private live(key: string): StoredKey | undefined {
    const now = this.now();
    const stored = this.store.get(key);
    if (stored?.expiry !== undefined && now - stored.expiry.setAtMs > stored.expiry.ms) {
      this.store.delete(key);
      return undefined;
    }
    return stored;
  }

  /** Drops expired keys at the least recently used end, a few per call. */
  private sweep(): void {
    let looked = 0;
    for (const key of this.store.keys()) {
      if (looked++ >= SWEEP_PER_CREATE) return;
      this.live(key);
    }
  }
}
