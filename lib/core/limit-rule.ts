import { describeValue, isWholeNumberIn } from './value-checks';

/** Largest limit accepted: memory per key grows with the limit (about 26 bytes per entry). */
export const MAX_LIMIT = 1_000_000;
/** Longest window accepted: one year. */
export const MAX_WINDOW_MS = 366 * 24 * 60 * 60 * 1000;

/**
 * Lists what is wrong with a rule, naming each field as `<label>.limit` / `<label>.windowMs`.
 * Returns an empty array for a valid rule.
 */
export function describeRuleProblems(rule: unknown, label: string): string[] {
  if (typeof rule !== 'object' || rule === null) {
    return [`${label} must be an object with limit and windowMs, got ${describeValue(rule)}`];
  }
  const { limit, windowMs } = rule as Record<string, unknown>;
  const problems: string[] = [];
  if (!isWholeNumberIn(limit, 1, MAX_LIMIT)) {
    problems.push(`${label}.limit must be a whole number from 1 to ${MAX_LIMIT}, got ${describeValue(limit)}`);
  }
  if (!isWholeNumberIn(windowMs, 1, MAX_WINDOW_MS)) {
    problems.push(
      `${label}.windowMs must be a whole number of milliseconds from 1 to ${MAX_WINDOW_MS}, got ${describeValue(windowMs)}`,
    );
  }
  return problems;
}

/** True for a valid rule; cheap enough for every request. */
export function isValidRule(rule: unknown): rule is SlidingLimitRule {
  if (typeof rule !== 'object' || rule === null) return false;
  const { limit, windowMs } = rule as Record<string, unknown>;
  return isWholeNumberIn(limit, 1, MAX_LIMIT) && isWholeNumberIn(windowMs, 1, MAX_WINDOW_MS);
}

/** One limit: at most `limit` requests in any window of `windowMs` milliseconds. */
export interface SlidingLimitRule {
  /** Requests allowed per window: a whole number ≥ 1. */
  limit: number;
  /** Window length in milliseconds: a whole number ≥ 1. */
  windowMs: number;
}

/** A limit applied to one key, as passed to {@link SlidingWindowLimiter.consumeAll}. */
export interface KeyedSlidingLimitRule extends SlidingLimitRule {
  /** The limited identity, without the limiter's key prefix. */
  key: string;
}
