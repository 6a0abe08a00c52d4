import { describeValue, isWholeNumberIn } from './value-checks';

/** Largest limit of the log (the default window): memory per key grows with the limit. */
export const MAX_LIMIT = 1_000_000;
/** Largest limit of a bucketed window (`precisionMs`), whose memory does not grow with the limit. */
export const MAX_BUCKETED_LIMIT = 1_000_000_000_000;
/** Longest window accepted: one year. */
export const MAX_WINDOW_MS = 366 * 24 * 60 * 60 * 1000;
/** Most sub-windows of a bucketed window: `windowMs / precisionMs` may not exceed it. */
export const MAX_SUB_WINDOWS = 1000;

/** What is wrong with a rule, each field named `<label>.limit`, `<label>.windowMs`, `<label>.precisionMs`. */
export function describeRuleProblems(rule: unknown, label: string): string[] {
  if (typeof rule !== 'object' || rule === null) {
    return [`${label} must be an object with limit and windowMs, got ${describeValue(rule)}`];
  }
  const { limit, windowMs, precisionMs, mode, overrides } = rule as Record<string, unknown>;
  const problems: string[] = [];
  const maxLimit = precisionMs === undefined ? MAX_LIMIT : MAX_BUCKETED_LIMIT;
  if (!isWholeNumberIn(limit, 1, maxLimit)) {
    const hint = precisionMs === undefined && isWholeNumberIn(limit, 1, MAX_BUCKETED_LIMIT) ? BIG_LIMIT_HINT : '';
    problems.push(`${label}.limit must be a whole number from 1 to ${maxLimit}, got ${describeValue(limit)}${hint}`);
  }
  if (!isWholeNumberIn(windowMs, 1, MAX_WINDOW_MS)) {
    problems.push(
      `${label}.windowMs must be a whole number of milliseconds from 1 to ${MAX_WINDOW_MS}, got ${describeValue(windowMs)}`,
    );
  } else if (precisionMs !== undefined && !isValidPrecision(precisionMs, windowMs)) {
    const smallest = Math.ceil(windowMs / MAX_SUB_WINDOWS);
    problems.push(
      `${label}.precisionMs must be a whole number of milliseconds from ${smallest} to windowMs (${windowMs}), ` +
        `at most ${MAX_SUB_WINDOWS} sub-windows per window, got ${describeValue(precisionMs)}; ` +
        'leave it out for the exact log',
    );
  }
  if (!isValidMode(mode)) {
    problems.push(`${label}.mode must be 'enforced' or 'shadow', got ${describeValue(mode)}`);
  }
  if (overrides !== undefined && typeof overrides !== 'boolean') {
    problems.push(`${label}.overrides must be true or false, got ${describeValue(overrides)}`);
  }
  return problems;
}

function isValidMode(mode: unknown): mode is LimitMode | undefined {
  return mode === undefined || mode === 'enforced' || mode === 'shadow';
}

const BIG_LIMIT_HINT = ` (the log keeps one entry per request; set precisionMs for a bounded-memory window up to ${MAX_BUCKETED_LIMIT})`;

function isValidPrecision(precisionMs: unknown, windowMs: number): boolean {
  return isWholeNumberIn(precisionMs, 1, windowMs) && windowMs / precisionMs <= MAX_SUB_WINDOWS;
}

/** True for a valid rule; cheap enough for every request. */
export function isValidRule(rule: unknown): rule is SlidingLimitRule {
  if (typeof rule !== 'object' || rule === null) return false;
  const { limit, windowMs, precisionMs, mode, overrides } = rule as Record<string, unknown>;
  if (!isWholeNumberIn(windowMs, 1, MAX_WINDOW_MS)) return false;
  if (!isValidMode(mode) || (overrides !== undefined && typeof overrides !== 'boolean')) return false;
  if (precisionMs === undefined) return isWholeNumberIn(limit, 1, MAX_LIMIT);
  return isWholeNumberIn(limit, 1, MAX_BUCKETED_LIMIT) && isValidPrecision(precisionMs, windowMs);
}

/** Most a request may weigh in a log limit: one entry per unit, all written in one call. */
export const MAX_LOG_COST = 10_000;

/** The highest cost `rule` can ever admit: its limit, and at most {@link MAX_LOG_COST} for the log. */
export function maxCostOf(rule: SlidingLimitRule): number {
  return rule.precisionMs === undefined ? Math.min(rule.limit, MAX_LOG_COST) : rule.limit;
}

/** Why no request of `cost` could ever be decided under `rules`, or undefined when it can. */
export function describeCostCeiling(cost: number, rules: readonly SlidingLimitRule[]): string | undefined {
  for (const rule of rules) {
    if (cost <= maxCostOf(rule)) continue;
    if (cost > rule.limit)
      return `${cost} is more than the limit ${rule.limit}: such a request could never be admitted`;
    return (
      `${cost} is more than ${MAX_LOG_COST}, the most a request may weigh in a log limit (one entry per unit); ` +
      'give the limit precisionMs for costlier requests'
    );
  }
  return undefined;
}

export function isBucketed(rule: SlidingLimitRule): boolean {
  return rule.precisionMs !== undefined;
}

export function isShadow(rule: SlidingLimitRule): boolean {
  return rule.mode === 'shadow';
}

/** How a limit acts: `enforced` (default) refuses what has no room; `shadow` only reports it (`sliding_allow_v2`). */
export type LimitMode = 'enforced' | 'shadow';

/** One limit: at most `limit` requests (or units of cost) in any window of `windowMs` milliseconds. */
export interface SlidingLimitRule {
  /** Requests (units of cost) per window: from 1 to 1,000,000 for the log, to 10^12 with `precisionMs`. */
  limit: number;
  /** Window length in milliseconds: a whole number ≥ 1. */
  windowMs: number;
  /**
   * Leave it out for the exact log (memory grows with the limit). Set it for a bounded-memory window of
   * one count per `precisionMs` (from `windowMs / 1000` to `windowMs`): never more than `limit` in any
   * window, rejecting at most what a log of `windowMs + precisionMs` would. Needs `sliding_allow_v2`.
   */
  precisionMs?: number;
  /** `shadow`: never refuse, report what it would have refused. Default `enforced`. Needs `sliding_allow_v2`. */
  mode?: 'enforced' | 'shadow';
  /** `false`: this limit ignores per-key overrides (one Redis command less per decision). */
  overrides?: boolean;
}

/** A limit applied to one key, as passed to {@link SlidingWindowLimiter.consumeAll}. */
export interface KeyedSlidingLimitRule extends SlidingLimitRule {
  /** The limited identity, without the limiter's key prefix. */
  key: string;
}
