import type { CallOutcome } from '../redis/contracts/function-contract';

interface Blocked {
  /** Caller-clock ms at which the decision was made. */
  readonly decidedAt: number;
  /** Caller-clock ms before which no request with this signature can be admitted. */
  readonly until: number;
  readonly outcome: CallOutcome;
  /** The full keys of the decision, to drop the entry when one of them is reset. */
  readonly keys: readonly string[];
}

/**
 * Remembers rejections of single-limit decisions until the moment a slot can free, so that a
 * hammered key costs no Redis call until then. Exact: v2 reports when the oldest entries leave the window, no slot can free earlier
 * (entries only leave by expiry — or by a reset, which clears the affected entries here), and every
 * request before that time would be rejected by Redis too. Times are in the limiter's clock, the one
 * whose `now` the function received.
 *
 * Bounded: the least recently blocked entries are evicted beyond `maxEntries`.
 */
export class BlockCache {
  private readonly entries = new Map<string, Blocked>();

  constructor(private readonly maxEntries: number) {}

  /** The signature of a decision: its keys with their limits and windows (a key may be limited differently elsewhere). */
  static signature(keys: readonly string[], rules: readonly { limit: number; windowMs: number }[]): string {
    if (keys.length === 1) return `${keys[0]}\u0000${rules[0].limit}\u0000${rules[0].windowMs}`;
    return keys.map((key, i) => `${key}\u0000${rules[i].limit}\u0000${rules[i].windowMs}`).join('\u0001');
  }

  /** The rejection still in force for `signature` at `nowMs`, with its times brought up to date. */
  get(signature: string, nowMs: number): CallOutcome | undefined {
    const blocked = this.entries.get(signature);
    if (!blocked) return undefined;
    if (nowMs >= blocked.until || nowMs < blocked.decidedAt) {
      // Free again — or the clock went back, and then nothing can be said.
      this.entries.delete(signature);
      return undefined;
    }
    const elapsed = nowMs - blocked.decidedAt;
    return {
      allowed: false,
      limits: blocked.outcome.limits.map((limit) => ({
        ...limit,
        retryAfterMs: limit.retryAfterMs > 0 ? limit.retryAfterMs - elapsed : 0,
        resetMs: Math.max(0, limit.resetMs - elapsed),
      })),
    };
  }

  /** Records a rejection decided at `nowMs`. */
  set(signature: string, keys: readonly string[], nowMs: number, outcome: CallOutcome): void {
    const waitMs = Math.max(...outcome.limits.map((limit) => limit.retryAfterMs));
    if (!(waitMs > 0)) return;
    this.entries.delete(signature);
    this.entries.set(signature, { decidedAt: nowMs, until: nowMs + waitMs, outcome, keys });
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
  }

  /** Forgets every rejection that involved `key` (after a reset of that key). */
  forgetKey(key: string): void {
    for (const [signature, blocked] of this.entries) {
      if (blocked.keys.includes(key)) this.entries.delete(signature);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
