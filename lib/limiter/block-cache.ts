import type { SlidingLimitRule } from '../core/limit-rule';

/** What the cache needs of a rejected limit's state (the limiter keeps the caller's `RateLimitDecision`). */
export interface BlockedTimes {
  readonly retryAfterMs: number;
  readonly resetMs: number;
  readonly override?: string;
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
 *
 * While per-key overrides are read, a cached refusal would hide an override set by another process, so
 * the cache then answers only while it is told every change ({@link BlockCache.watching}): a change drops
 * the key's refusal, and a lost subscription drops them all.
 */
export class BlockCache<T extends BlockedTimes = BlockedTimes> {
  private readonly entries = new Map<string, Blocked<T>>();
  /** Whether the cache may answer: always without overrides, else while override changes reach it. */
  private trusted: boolean;
  /** Bumped by every change: a refusal decided before one (a {@link ticket} older) is not kept. */
  private generation = 0;

  constructor(
    private readonly maxEntries: number,
    watched = false,
  ) {
    this.trusted = !watched;
  }

  /** What {@link set} needs to tell a refusal decided before the latest override change. */
  ticket(): number {
    return this.generation;
  }

  /** The override of `key` (with the key prefix) was set or deleted somewhere. */
  changed(key: string): void {
    this.generation++;
    this.entries.delete(key);
  }

  /** Override changes reach the cache from now on (`on`), or may not: either way what it holds goes. */
  watching(on: boolean): void {
    this.generation++;
    this.trusted = on;
    this.entries.clear();
  }

  /** The limit's state of a rejection of `key` under `rule` still in force at `nowMs`, its times brought up to date. */
  get(key: string, rule: SlidingLimitRule, nowMs: number): T | undefined {
    if (this.entries.size === 0 || !this.trusted) return undefined;
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

  /** Records a rejection of `key` under `rule`, decided at `nowMs` (sent at `ticket`) with the limit in `state`. */
  set(key: string, rule: SlidingLimitRule, nowMs: number, state: T, ticket: number): void {
    if (!(state.retryAfterMs > 0) || !this.trusted || ticket !== this.generation) return;
    // A limit override may expire before the refusal would, and its expiry sends no message.
    if (state.override === 'limit') return;
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
