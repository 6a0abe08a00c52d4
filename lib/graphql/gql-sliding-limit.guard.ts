import { Injectable, Optional, type ExecutionContext, type OnApplicationBootstrap } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { executionOf, fieldPathOf, graphQLContextOf, graphQLHttpContext, isGraphQLCall } from './graphql-call';
import { decideOncePerField } from './operation-decisions';
import { unguardedLimitedFields } from './field-resolver-guards';
import { graphQLRefusal } from './sliding-limit-graphql.error';
import {
  SlidingLimitGuard,
  SlidingLimitPlans,
  SlidingWindowLimiter,
  type HandlerPlan,
  type RateLimitErrorPayload,
  type RateLimitHttpContext,
} from 'nestjs-sliding-limit';

/**
 * `SlidingLimitGuard` for GraphQL resolvers as well as HTTP routes (`APP_GUARD`, or `@UseGuards` on a
 * resolver). A resolver call is keyed by the HTTP request in its context, its headers go on the HTTP
 * response, and each field counts once per operation (docs/graphql.md). Refusals are
 * {@link SlidingLimitGraphQLError}s.
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

  /** One decision per field path and operation: a list's items share it, and a second guard counts nothing more. */
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

  /** In GraphQL, a {@link SlidingLimitGraphQLError}; the base guard's outside GraphQL. */
  protected override refuse(context: ExecutionContext, plan: HandlerPlan, refusal: RateLimitErrorPayload): never {
    if (!isGraphQLCall(context)) return super.refuse(context, plan, refusal);
    throw graphQLRefusal(refusal);
  }
}
