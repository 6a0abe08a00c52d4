import type { FallbackKind, LimiterErrorKind } from '../core/call-metrics';
import { errorKindOf } from '../redis/error-kind';
import { messageOf } from '../redis/reply';

/** How long without a degraded decision ends a stretch, and how recent one keeps the limiter degraded by default. */
export const DEGRADED_WINDOW_MS = 10_000;

/** A stretch of decisions made without Redis, as {@link SlidingWindowLimiter.status} reports it. */
export interface DegradedMode {
  /** When the first degraded decision of the stretch was made, epoch ms. */
  sinceMs: number;
  /** When the latest was made, epoch ms. */
  lastMs: number;
  /** Degraded decisions of the stretch, by how they were made: the `onRedisError` policy or the insurance. */
  decisions: Record<FallbackKind, number>;
  /** Why Redis did not make the latest: the failure's kind (as the error counters count it) and message. */
  lastCause: { kind: LimiterErrorKind; message: string };
}

/**
 * The current stretch of degraded decisions. It ends after {@link DEGRADED_WINDOW_MS} without one, not
 * at Redis' next decision: with one master down, Redis decides the other masters' keys all along.
 */
export class DegradedStretch {
  private sinceMs = 0;
  private lastMs = -Infinity;
  private decisions: Record<FallbackKind, number> = { allow: 0, deny: 0, insurance: 0 };
  private lastCause: unknown;

  constructor(private readonly now: () => number = Date.now) {}

  /** One decision made without Redis, by `kind`, because of `cause`. */
  record(kind: FallbackKind, cause: unknown): void {
    const now = this.now();
    if (now - this.lastMs > DEGRADED_WINDOW_MS) {
      this.sinceMs = now;
      this.decisions = { allow: 0, deny: 0, insurance: 0 };
    }
    this.lastMs = now;
    this.decisions[kind]++;
    this.lastCause = cause;
  }

  /** The stretch, when its latest degraded decision is at most `withinMs` old; undefined otherwise. */
  report(withinMs = DEGRADED_WINDOW_MS): DegradedMode | undefined {
    if (this.now() - this.lastMs > withinMs) return undefined;
    return {
      sinceMs: this.sinceMs,
      lastMs: this.lastMs,
      decisions: { ...this.decisions },
      lastCause: { kind: errorKindOf(this.lastCause), message: messageOf(this.lastCause) },
    };
  }
}
