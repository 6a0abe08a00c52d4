import type { DecisionEvent, OverrideAction, RateLimitDecision, SlidingWindowLimiter } from 'nestjs-sliding-limit';
import type { LimitMode } from '../core/limit-rule';
import type { FallbackKind } from 'nestjs-sliding-limit';

/** The `limit` label of a decision made without limit names (`consume` / `consumeAll` called directly). */
export const UNNAMED_LIMIT_LABEL = '_unnamed';
/** The `limit` label of every name past {@link MAX_LIMIT_NAMES}. */
export const OTHER_LIMITS_LABEL = '_other';
/** Limit names counted one by one per limiter; the rest together (request-derived names must not grow series). */
export const MAX_LIMIT_NAMES = 1000;

/** What one limit (by name and mode) said, counted since the tally started. */
export interface LimitCounts {
  /** The limit's name: the `@SlidingLimit` name, {@link UNNAMED_LIMIT_LABEL} or {@link OTHER_LIMITS_LABEL}. */
  readonly limit: string;
  readonly mode: LimitMode;
  /** Redis decisions in which the limit had room. */
  allowed: number;
  /** Redis decisions in which it was full and the request was refused (by it, or also by another limit). */
  rejected: number;
  /** Shadow limits only: full while the request was admitted — a refusal enforcing it would add (`wouldRefuse`). */
  wouldReject: number;
  /** Decisions made without Redis, by how (the `onRedisError` policy or the insurance). */
  readonly degraded: Partial<Record<FallbackKind, number>>;
  /** Redis decisions in which a per-key override applied, by its action. */
  readonly overrides: Partial<Record<OverrideAction, number>>;
}

/** A label value and its count: one series of a per-limit counter. */
export type LabelledCount = readonly [label: string, count: number];

/** What a limit said, as `[outcome, count]` pairs (`would_reject` for a shadow limit only). */
export function outcomesOf(counts: LimitCounts): LabelledCount[] {
  const outcomes: LabelledCount[] = [
    ['allowed', counts.allowed],
    ['rejected', counts.rejected],
  ];
  if (counts.mode === 'shadow') outcomes.push(['would_reject', counts.wouldReject]);
  return outcomes;
}

/** Counts a limiter's decisions per limit name and mode (never keys) for the exports, as a decision listener. */
export class LimitTally {
  /** One map per mode, so that a decision finds its counts without building a composite key. */
  private readonly byMode: Readonly<Record<LimitMode, Map<string, LimitCounts>>> = {
    enforced: new Map(),
    shadow: new Map(),
  };
  private overflowLogged = false;

  /** @param warn where the one overflow warning goes: by default `process.emitWarning`, which needs no Nest. */
  constructor(private readonly warn = (message: string) => process.emitWarning(message, 'RateLimitMetricsWarning')) {}

  record(event: DecisionEvent): void {
    const { limits, limitNames, degraded } = event;
    for (let i = 0; i < limits.length; i++) {
      const decision = limits[i];
      const counts = this.countsOf(limitNames?.[i] ?? UNNAMED_LIMIT_LABEL, decision);
      if (degraded) {
        counts.degraded[degraded] = (counts.degraded[degraded] ?? 0) + 1;
        continue;
      }
      if (decision.allowed) counts.allowed++;
      else if (decision.wouldRefuse) counts.wouldReject++;
      else counts.rejected++;
      const override = decision.override;
      if (override !== undefined) counts.overrides[override] = (counts.overrides[override] ?? 0) + 1;
    }
  }

  /** The counts of every limit seen, copies the caller may keep. */
  snapshot(): LimitCounts[] {
    const copy = (counts: LimitCounts): LimitCounts => ({
      ...counts,
      degraded: { ...counts.degraded },
      overrides: { ...counts.overrides },
    });
    return [...this.byMode.enforced.values(), ...this.byMode.shadow.values()].map(copy);
  }

  private countsOf(name: string, decision: RateLimitDecision): LimitCounts {
    const mode: LimitMode = decision.shadow ? 'shadow' : 'enforced';
    const byName = this.byMode[mode];
    let counts = byName.get(name);
    if (counts) return counts;
    if (this.nameCount() >= MAX_LIMIT_NAMES && name !== OTHER_LIMITS_LABEL) {
      this.warnOverflow(name);
      return this.countsOf(OTHER_LIMITS_LABEL, decision);
    }
    counts = { limit: name, mode, allowed: 0, rejected: 0, wouldReject: 0, degraded: {}, overrides: {} };
    byName.set(name, counts);
    return counts;
  }

  /** Names counted one by one, both modes together (a name in both modes counts twice). */
  private nameCount(): number {
    return this.byMode.enforced.size + this.byMode.shadow.size;
  }

  private warnOverflow(name: string): void {
    if (this.overflowLogged) return;
    this.overflowLogged = true;
    this.warn(
      `Limit metrics: more than ${MAX_LIMIT_NAMES} limit names (the latest ${JSON.stringify(name.slice(0, 80))}); ` +
        `further names are counted as "${OTHER_LIMITS_LABEL}". Limit names should come from @SlidingLimit ` +
        'decorators, never from requests: pass fixed names to limitNames',
    );
  }
}

interface Subscription {
  readonly tally: LimitTally;
  readonly unsubscribe: () => void;
  users: number;
}

const subscriptions = new WeakMap<SlidingWindowLimiter, Subscription>();

/**
 * The tally of `limiter`'s decisions, shared by its exports: it listens while one holds it, then starts
 * from zero. `release()` (idempotent) lets it go.
 */
export function leaseLimitTally(limiter: SlidingWindowLimiter): { readonly tally: LimitTally; release(): void } {
  let subscription = subscriptions.get(limiter);
  if (!subscription) {
    const tally = new LimitTally();
    subscription = { tally, unsubscribe: limiter.onDecision((event) => tally.record(event)), users: 0 };
    subscriptions.set(limiter, subscription);
  }
  subscription.users++;
  const held = subscription;
  let released = false;
  return {
    tally: held.tally,
    release() {
      if (released) return;
      released = true;
      if (--held.users > 0) return;
      held.unsubscribe();
      if (subscriptions.get(limiter) === held) subscriptions.delete(limiter);
    },
  };
}
