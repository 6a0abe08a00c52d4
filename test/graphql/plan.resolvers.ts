import { Injectable, UseGuards, type ExecutionContext } from '@nestjs/common';
import { GqlExecutionContext, Query, Resolver } from '@nestjs/graphql';
import {
  SlidingLimit,
  type RateLimitPolicy,
  type RateLimitPolicyResult,
  type RateLimitRequest,
} from 'nestjs-sliding-limit';
import { GqlSlidingLimitGuard } from 'nestjs-sliding-limit/graphql';
import { CallerPlans, statedTier, tierOf } from '../fixtures/transports/caller-plans';

/** What the app's GraphQL context function adds to `req`: the caller (its API key). */
export const callerContext = (request: { headers: Record<string, string | string[] | undefined> }) => ({
  caller: request.headers['x-api-key'],
});

/** The plan of the caller the GraphQL context names, from the plan service. */
@Injectable()
export class ContextPlanPolicy implements RateLimitPolicy {
  constructor(private readonly plans: CallerPlans) {}

  async resolve(_request: RateLimitRequest, context: ExecutionContext): Promise<RateLimitPolicyResult> {
    const { caller } = GqlExecutionContext.create(context).getContext<{ caller?: string }>();
    return tierOf(await this.plans.planOf(caller));
  }
}

/** Queries limited by policies, keyed by the caller's API key. */
@Resolver()
export class PlanResolver {
  /** The caller's plan, with a candidate (a shadow twin) of 1 per minute beside it; no values of its own. */
  @Query(() => String)
  @SlidingLimit({
    name: 'plan-report',
    policy: ContextPlanPolicy,
    windowMs: 60_000,
    key: 'header:x-api-key',
    candidate: { limit: 1 },
  })
  report(): string {
    return 'report';
  }

  /** The same policy with values of its own to fall back to when the policy fails. */
  @Query(() => String)
  @SlidingLimit({
    name: 'plan-fallback',
    policy: ContextPlanPolicy,
    limit: 1,
    windowMs: 60_000,
    key: 'header:x-api-key',
  })
  fallback(): string {
    return 'fallback';
  }

  /** A function policy: the tier the request states (`x-tier: gold`). */
  @Query(() => String)
  @SlidingLimit({
    name: 'stated',
    policy: (request: RateLimitRequest) => statedTier((request.headers as Record<string, unknown>)['x-tier']),
    key: 'header:x-api-key',
  })
  stated(): string {
    return 'stated';
  }

  /** A shadow limit alone: counts, never refuses. */
  @Query(() => String)
  @SlidingLimit({ name: 'trial', limit: 1, windowMs: 60_000, mode: 'shadow', key: 'header:x-api-key' })
  trial(): string {
    return 'trial';
  }
}

/** A resolver guarded by its own @UseGuards besides the app's global guard: each call counts once. */
@Resolver()
@UseGuards(GqlSlidingLimitGuard)
export class TwiceGuardedPlanResolver {
  @Query(() => String)
  @SlidingLimit({ name: 'plan-twice', policy: ContextPlanPolicy, windowMs: 60_000, key: 'header:x-api-key' })
  twice(): string {
    return 'twice';
  }
}
