import type { ExecutionContext } from '@nestjs/common';
import { GqlExecutionContext, type GqlContextType } from '@nestjs/graphql';
import type { GraphQLResolveInfo } from 'graphql';
import { adoptRawUser } from '../nest/request-user';
import type { RateLimitHttpContext } from 'nestjs-sliding-limit';

/** What the GraphQL drivers put in the context: `req`, `res` (an application's), `reply` (Mercurius). */
interface GraphQLHttpFields {
  req?: unknown;
  res?: unknown;
  reply?: { request?: unknown };
}

export function isGraphQLCall(context: ExecutionContext): boolean {
  return context.getType<GqlContextType>() === 'graphql';
}

/** The GraphQL context of a resolver call: one object per operation, whichever driver built it. */
export function graphQLContextOf(context: ExecutionContext): object | undefined {
  const value = GqlExecutionContext.create(context).getContext<unknown>();
  return typeof value === 'object' && value !== null ? value : undefined;
}

/** The HTTP request behind a resolver call and the response its headers go on; undefined without a request. */
export function graphQLHttpContext(context: ExecutionContext): RateLimitHttpContext | undefined {
  const fields = graphQLContextOf(context) as GraphQLHttpFields | undefined;
  if (!fields) return undefined;
  const request = fields.req ?? fields.reply?.request;
  if (typeof request !== 'object' || request === null) return undefined;
  // Mercurius's req is the Fastify request: the user a middleware set is on its raw request.
  adoptRawUser(request);
  const response = fields.reply ?? fields.res ?? (request as { res?: unknown }).res;
  return { request, response };
}

/** An object that stands for one execution of an operation: graphql-js's coerced variables, made per execution. */
export function executionOf(context: ExecutionContext): object | undefined {
  const info = GqlExecutionContext.create(context).getInfo<GraphQLResolveInfo | undefined>();
  const variables: unknown = info?.variableValues;
  return typeof variables === 'object' && variables !== null ? variables : undefined;
}

/** Where a resolver call sits in the result, list indices left out (`posts.author`); an alias is its own. */
export function fieldPathOf(context: ExecutionContext): string {
  const info = GqlExecutionContext.create(context).getInfo<GraphQLResolveInfo | undefined>();
  let path = info?.path;
  let joined = '';
  while (path) {
    if (typeof path.key === 'string') joined = joined === '' ? path.key : `${path.key}.${joined}`;
    path = path.prev;
  }
  return joined;
}
