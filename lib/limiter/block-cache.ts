import type { SlidingLimitRule } from '../core/limit-rule';

/** What the cache needs of a rejected limit's state (the limiter keeps the caller's `RateLimitDecision`). */
export interface BlockedTimes {
  readonly retryAfterMs: number;
  readonly resetMs: number;
}

interface Blocked<T> {
  /** The rule the rejection was for: the same key limited differently is another matter. */
  readonly limit: number;
  readonly windowMs: number;
  readonly decidedAt: number;
  /** Before this, no request can be admitted. */
  readonly until: number;
  /** The limit's state as Redis reported it at `decidedAt`. */
  readonly state: T;
}

/**
 * Remembers rejections of single-limit decisions until a slot can free, so that a hammered key costs no
 * Redis call until then. Exact: v2 reports when the oldest entry leaves, and entries leave only by expiry
 * or a reset (which clears the key here). Times are the limiter's clock; beyond `maxEntries` the least
 * recently blocked entries go.
 */
export class BlockCache<T extends BlockedTimes = BlockedTimes> {
  private readonly entries = new Map<string, Blocked<T>>();

  constructor(private readonly maxEntries: number) {}

  /** The limit's state of a rejection of `key` under `rule` still in force at `nowMs`, its times brought up to date. */
  get(key: string, rule: SlidingLimitRule, nowMs: number): T | undefined {
    if (this.entries.size === 0) return undefined;
    const blocked = this.entries.get(key);
    if (!blocked || blocked.limit !== rule.limit || blocked.windowMs !== rule.windowMs) return undefined;
    if (nowMs >= blocked.until || nowMs < blocked.decidedAt) {
      // Free again — or the clock went back, and then nothing can be said.
      this.entries.delete(key);
      return undefined;
    }
    const { state } = blocked;
    return {
      ...state,
      retryAfterMs: blocked.until - nowMs,
      resetMs: Math.max(0, state.resetMs - (nowMs - blocked.decidedAt)),
    };
  }

  /** Records a rejection of `key` under `rule`, decided at `nowMs` with the limit in `state`. */
  set(key: string, rule: SlidingLimitRule, nowMs: number, state: T): void {
    if (!(state.retryAfterMs > 0)) return;
    this.entries.delete(key);
    this.entries.set(key, {
      limit: rule.limit,
      windowMs: rule.windowMs,
      decidedAt: nowMs,
      until: nowMs + state.retryAfterMs,
      // A copy: the state may be what a caller was given, and callers may change their decisions.
      state: { ...state },
    });
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
  }

  /** Forgets the rejection of `key` (after a reset of that key). */
  forget(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
