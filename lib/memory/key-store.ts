/** A sorted set: member → score, as ZADD leaves it (one entry per member). */
export type SortedSet = Map<string, number>;

interface StoredKey {
  readonly zset: SortedSet;
  /**
   * The TTL: `ms` from `setAtMs` on the store's clock; undefined: none. Kept apart rather than as a
   * sum so that huge TTLs (Redis takes up to 1e17 ms) stay exact.
   */
  expiry?: { setAtMs: number; ms: number };
}

/** Expired keys looked at per new key, from the least recently used end: memory is reclaimed as it goes. */
const SWEEP_PER_CREATE = 2;

/**
 * The keyspace of the in-memory model: sorted sets with Redis' expiry semantics (PEXPIRE, PTTL, lazy
 * expiry, empty sets deleted), and an optional bound on the number of keys.
 *
 * Time: a key expires when "Redis' clock" passes its expiry. That clock is the model's clock, except
 * that it never goes back: a test setting its clock back plays a gateway whose clock lags, while
 * Redis keeps its own time, so a key that has expired stays expired. It also makes every way of
 * noticing expiry (on access, by a sweep) give the same result.
 *
 * Bound: with `maxKeys`, creating a key beyond the bound evicts the least recently used one, in O(1)
 * (a Map keeps insertion order; an access moves a key to the end). Eviction forgets the key's entries:
 * that client gets a fresh window, as if its key had expired.
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

  /** The sorted set of a live key, marking it recently used; undefined when missing or expired. */
  get(key: string): SortedSet | undefined {
    const stored = this.live(key);
    if (!stored) return undefined;
    this.store.delete(key);
    this.store.set(key, stored);
    return stored.zset;
  }

  /** The sorted set of `key`, created (without TTL) when missing. */
  getOrCreate(key: string): SortedSet {
    const existing = this.get(key);
    if (existing) return existing;
    this.sweep();
    const zset: SortedSet = new Map();
    this.store.set(key, { zset });
    while (this.store.size > this.maxKeys) this.store.delete(this.store.keys().next().value as string);
    return zset;
  }

  /** DEL: whether a live key was deleted. */
  delete(key: string): boolean {
    const existed = this.live(key) !== undefined;
    this.store.delete(key);
    return existed;
  }

  /** Redis deletes a sorted set together with its last member. */
  deleteIfEmpty(key: string): void {
    if (this.store.get(key)?.zset.size === 0) this.store.delete(key);
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

  /**
   * A live key without marking it used; an expired one is deleted on the way (Redis' lazy expiry).
   * Reads the clock whether or not the key exists: Redis' clock moves on with every command.
   */
  private live(key: string): StoredKey | undefined {
    const now = this.now();
    const stored = this.store.get(key);
    // Redis: expired once now > expiry time.
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
