import type { ExecutionContext } from '@nestjs/common';
import { MAX_BUCKETED_LIMIT } from '../core/limit-rule';
import { describeValue, isWholeNumberIn } from '../core/value-checks';
import type { RateLimitRequest } from './rate-limit-key';

/**
 * Prices a request from its contents (e.g. the rows an export asks for). Return a whole number from
 * 1 to the route's smallest limit; a throw or any other value answers 400 without counting anything.
 * Declared with a method so that a function taking your own request type (Express `Request`,
 * Fastify `FastifyRequest`) is accepted.
 */
export type RateLimitCostFunction = {
  bivarianceHack(request: RateLimitRequest, context: ExecutionContext): number | Promise<number>;
}['bivarianceHack'];

/** What a request weighs in every limit of its route: a number, or a function of the request. */
export type RateLimitCost = number | RateLimitCostFunction;

/** Problems of a `cost` option; a static cost is also checked against the route's smallest limit. */
export function describeCostOptionProblems(cost: unknown, label: string, smallestLimit?: number): string[] {
  if (cost === undefined || typeof cost === 'function') return [];
  if (!isWholeNumberIn(cost, 1, MAX_BUCKETED_LIMIT)) {
    return [`${label} must be a whole number from 1, or a function of the request, got ${describeValue(cost)}`];
  }
  if (smallestLimit !== undefined && cost > smallestLimit) {
    return [`${label} ${cost} is more than the limit ${smallestLimit}: such a request could never be admitted`];
  }
  return [];
}

/**
 * Why a priced request cannot be decided (the price is not a whole number from 1, or more than the
 * smallest limit), or undefined when `cost` is a valid price.
 */
export function describeRuntimeCostProblem(cost: unknown, smallestLimit: number): string | undefined {
  if (!isWholeNumberIn(cost, 1, MAX_BUCKETED_LIMIT)) return `its cost function returned ${describeValue(cost)}`;
  if (cost > smallestLimit) return `it costs ${cost}, more than the limit ${smallestLimit}`;
  return undefined;
}
