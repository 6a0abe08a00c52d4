import type { ExecutionContext } from '@nestjs/common';
import { GqlExecutionContext } from '@nestjs/graphql';

/**
 * The arguments of the resolver being limited (`{ first: 10 }` for `posts(first: 10)`), for key and
 * cost functions; an empty object outside GraphQL.
 * @example
 * ```ts
 * @SlidingLimit({ limit: 1000, windowMs: 60_000, cost: (_req, ctx) => gqlArgs<{ first: number }>(ctx).first })
 * ```
 */
export function gqlArgs<T extends object = Record<string, unknown>>(context: ExecutionContext): T {
  if (context.getType<string>() !== 'graphql') return {} as T;
  const args = GqlExecutionContext.create(context).getArgs<unknown>();
  return (typeof args === 'object' && args !== null ? args : {}) as T;
}
