import { ModelReplyError, WRONGTYPE } from './model-reply-error';

/** A sorted set: member → score, as ZADD leaves it (one entry per member). */
export type SortedSet = Map<string, number>;

/**
 * A hash: field → value, as HSET / HINCRBY leave it. A Map keeps insertion order, and a field set
 * again keeps its place: the order in which Redis lists a small hash (listpack encoding) to HGETALL.
 */
export type Hash = Map<string, string>;

/** The types of value the model holds, named as Redis' TYPE names them. */
export type KeyType = 'zset' | 'hash';

type StoredValue = { readonly type: 'zset'; readonly zset: SortedSet } | { readonly type: 'hash'; readonly hash: Hash };

type StoredKey = StoredValue & {
  /**
   * The TTL: `ms` from `setAtMs` on the store's clock; undefined: none. Kept apart rather than as a
   * sum so that huge TTLs (Redis takes up to 1e17 ms) stay exact.
   */
  expiry?: { setAtMs: number; ms: number };
};

/** Expired keys looked at per new key, from the least recently used end: memory is reclaimed as it goes. */
const SWEEP_PER_CREATE = 2;

/**
 * The keyspace of the in-memory model: sorted sets and hashes with Redis' expiry semantics (PEXPIRE,
 * PTTL, lazy expiry, empty keys deleted) and types (a sorted-set command on a hash, or the reverse,
 * is the WRONGTYPE error reply), and an optional bound on the number of keys.
 *
 * Time: a key expires when "Redis' clock" passes its expiry. That clock is the model's clock, except
 * that it never goes back: a test setting its clock back plays a gateway whose clock lags, while
 * Redis keeps its own time, so a key that has expired stays expired. It also makes every way of
 * noticing expiry (on access, by a sweep) give the same result.
 *
 * Bound: with `maxKeys`, creating a key beyond the bound evicts the least recently used one, in O(1)
 * (a Map keeps insertion order; an access moves a key to the end). Eviction forgets the key's data:
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

  /** TYPE: the type of a live key, without marking it used; undefined when missing or expired. */
  typeOf(key: string): KeyType | undefined {
    return this.live(key)?.type;
  }

  /**
   * The sorted set of a live key, marking it recently used; undefined when missing or expired.
   * @throws ModelReplyError WRONGTYPE when the key holds a hash
   */
  zset(key: string): SortedSet | undefined {
    const stored = this.use(key);
    if (stored === undefined) return undefined;
    if (stored.type !== 'zset') throw new ModelReplyError(WRONGTYPE);
    return stored.zset;
  }

  /**
   * The hash of a live key, marking it recently used; undefined when missing or expired.
   * @throws ModelReplyError WRONGTYPE when the key holds a sorted set
   */
  hash(key: string): Hash | undefined {
    const stored = this.use(key);
    if (stored === undefined) return undefined;
    if (stored.type !== 'hash') throw new ModelReplyError(WRONGTYPE);
    return stored.hash;
  }

  /** The sorted set of `key`, created (without TTL) when missing. @throws ModelReplyError WRONGTYPE */
  zsetOrCreate(key: string): SortedSet {
    const existing = this.zset(key);
    if (existing) return existing;
    const zset: SortedSet = new Map();
    this.create(key, { type: 'zset', zset });
    return zset;
  }

  /** The hash of `key`, created (without TTL) when missing. @throws ModelReplyError WRONGTYPE */
  hashOrCreate(key: string): Hash {
    const existing = this.hash(key);
    if (existing) return existing;
    const hash: Hash = new Map();
    this.create(key, { type: 'hash', hash });
    return hash;
  }

  /** DEL: whether a live key was deleted. */
  delete(key: string): boolean {
    const existed = this.live(key) !== undefined;
    this.store.delete(key);
    return existed;
  }

  /** Redis deletes a sorted set with its last member, a hash with its last field. */
  deleteIfEmpty(key: string): void {
    const stored = this.store.get(key);
    if (stored !== undefined && (stored.type === 'zset' ? stored.zset : stored.hash).size === 0) this.store.delete(key);
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

  /** A live key, moved to the most recently used end. */
  private use(key: string): StoredKey | undefined {
    const stored = this.live(key);
    if (!stored) return undefined;
    this.store.delete(key);
    this.store.set(key, stored);
    return stored;
  }

  /** Adds a new key (without TTL), then evicts the least recently used ones beyond the bound. */
  private create(key: string, value: StoredValue): void {
    this.sweep();
    this.store.set(key, { ...value });
    while (this.store.size > this.maxKeys) this.store.delete(this.store.keys().next().value as string);
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
