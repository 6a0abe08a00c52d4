import { Injectable, Optional, type ExecutionContext, type OnApplicationBootstrap } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { HandlerPlan } from '../nest/limit-plan';
import type { RateLimitErrorPayload } from '../nest/rate-limit-error-payload';
import { SlidingLimitPlans } from '../nest/rate-limit-plans';
import { SlidingWindowLimiter } from '../limiter/sliding-window.limiter';
import { SlidingLimitGuard, type RateLimitHttpContext } from '../nest/sliding-limit.guard';
import { executionOf, fieldPathOf, graphQLContextOf, graphQLHttpContext, isGraphQLCall } from './graphql-call';
import { decideOncePerField } from './operation-decisions';
import { unguardedLimitedFields } from './field-resolver-guards';
import { graphQLRefusal } from './sliding-limit-graphql.error';

/**
 * `SlidingLimitGuard` for GraphQL resolvers as well as HTTP routes: register it once (as
 * `APP_GUARD`, or with `@UseGuards` on a resolver) and `@SlidingLimit` limits queries, mutations and
 * `@ResolveField` methods (the latter when GraphQLModule's `fieldResolverEnhancers` includes `'guards'`).
 *
 * A resolver call is keyed by the HTTP request in its GraphQL context (`req`, as @nestjs/graphql's
 * Apollo and Mercurius drivers put it there), and its rate-limit headers go on the HTTP response
 * (Express's `res`, Fastify's `reply`). Each field of an operation counts once: the fields of a list
 * share one decision per operation (see docs/graphql.md). Refusals are {@link SlidingLimitGraphQLError}s
 * with `extensions.code` `TOO_MANY_REQUESTS` (and `retryAfter`), `RATE_LIMIT_UNAVAILABLE`,
 * `BAD_REQUEST` or `FORBIDDEN`. Any other context is the base guard's.
 */
@Injectable()
export class GqlSlidingLimitGuard extends SlidingLimitGuard implements OnApplicationBootstrap {
  constructor(
    @Optional() limiter?: SlidingWindowLimiter,
    @Optional() plans?: SlidingLimitPlans,
    @Optional() private readonly moduleRef?: ModuleRef,
  ) {
    super(limiter, plans);
  }

  /**
   * Warns, once, about limited `@ResolveField` methods that no guard runs for (GraphQLModule's
   * `fieldResolverEnhancers` lacks `'guards'`): their limits would count nothing.
   */
  onApplicationBootstrap(): void {
    if (!this.moduleRef) return;
    const fields = unguardedLimitedFields(this.moduleRef, this.plans);
    if (fields.length === 0) return;
    this.logger.warn(
      `${fields.join(', ')} ${fields.length > 1 ? 'have' : 'has'} rate limits on a @ResolveField, but no guard runs ` +
        `for field resolvers: add fieldResolverEnhancers: ['guards'] to GraphQLModule.forRoot (see docs/graphql.md)`,
    );
  }

  /** The HTTP request and response behind a resolver call; the base guard's outside GraphQL. */
  protected override getRequestResponse(context: ExecutionContext): RateLimitHttpContext | undefined {
    if (!isGraphQLCall(context)) return super.getRequestResponse(context);
    return graphQLHttpContext(context);
  }

  /**
   * One decision per field path and operation (each operation of a batch its own): aliases and
   * distinct fields each count, the calls of one field for the items of a list share the first one's
   * outcome, and a second guard instance on the same call (global and `@UseGuards`) counts nothing more.
   */
  protected override enforceOnce(
    context: ExecutionContext,
    plan: HandlerPlan,
    http: RateLimitHttpContext,
  ): Promise<boolean> {
    if (!isGraphQLCall(context)) return super.enforceOnce(context, plan, http);
    const operation = executionOf(context) ?? graphQLContextOf(context) ?? http.request;
    return decideOncePerField(operation, plan, fieldPathOf(context), () => this.enforce(context, plan, http));
  }

  /** In GraphQL, the call had no HTTP request in its context (a subscription over WebSockets, say). */
  protected override describeUnlimited(context: ExecutionContext, plan: HandlerPlan): string {
    if (!isGraphQLCall(context)) return super.describeUnlimited(context, plan);
    return (
      `${plan.route} has rate limits but its GraphQL context holds no HTTP request (req), so GqlSlidingLimitGuard ` +
      `let the call through (a subscription over WebSockets?); return a req from the context function to limit it ` +
      `(see docs/graphql.md)`
    );
  }

  /**
   * In GraphQL, a {@link SlidingLimitGraphQLError}: `TOO_MANY_REQUESTS` with `retryAfter`,
   * `retryAfterMs`, the full limits' names and, as `policy`, those limits as the caller's own;
   * `RATE_LIMIT_UNAVAILABLE`, `BAD_REQUEST` or `FORBIDDEN`. The base guard's outside GraphQL.
   */
  protected override refuse(context: ExecutionContext, plan: HandlerPlan, refusal: RateLimitErrorPayload): never {
    if (!isGraphQLCall(context)) return super.refuse(context, plan, refusal);
    throw graphQLRefusal(refusal);
  }
}
