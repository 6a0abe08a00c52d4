import type { ExecutionContext } from '@nestjs/common';
import { describeCostCeiling, MAX_BUCKETED_LIMIT, type SlidingLimitRule } from '../core/limit-rule';
import { describeValue, isWholeNumberIn } from '../core/value-checks';
import type { RateLimitRequest } from './rate-limit-key';

/**
 * Prices a request from its contents: a whole number from 1 to the route's smallest limit (at most
 * 10,000 for a log); a throw or any other value answers 400. A method, so your own request type fits.
 */
export type RateLimitCostFunction = {
  bivarianceHack(request: RateLimitRequest, context: ExecutionContext): number | Promise<number>;
}['bivarianceHack'];

/** What a request weighs in every limit of its route: a number, or a function of the request. */
export type RateLimitCost = number | RateLimitCostFunction;

/** Problems of a `cost` option; a static cost is also checked against the route's `limits`. */
export function describeCostOptionProblems(
  cost: unknown,
  label: string,
  limits: readonly SlidingLimitRule[] = [],
): string[] {
  if (cost === undefined || typeof cost === 'function') return [];
  if (!isWholeNumberIn(cost, 1, MAX_BUCKETED_LIMIT)) {
    return [`${label} must be a whole number from 1, or a function of the request, got ${describeValue(cost)}`];
  }
  const ceiling = describeCostCeiling(cost, limits);
  return ceiling === undefined ? [] : [`${label} ${ceiling}`];
}

/** Why a price cannot be decided (not a whole number from 1, or over the route's limits), or undefined. */
export function describeRuntimeCostProblem(cost: unknown, limits: readonly SlidingLimitRule[]): string | undefined {
  if (!isWholeNumberIn(cost, 1, MAX_BUCKETED_LIMIT)) return `its cost function returned ${describeValue(cost)}`;
  const ceiling = describeCostCeiling(cost, limits);
  return ceiling === undefined ? undefined : `it costs ${ceiling}`;
}
