import type { ExecutionContext } from '@nestjs/common';
import { GqlExecutionContext, type GqlContextType } from '@nestjs/graphql';
import type { GraphQLResolveInfo } from 'graphql';
import type { RateLimitHttpContext } from '../nest/sliding-limit.guard';
import { adoptRawUser } from '../nest/request-user';

/**
 * What the GraphQL drivers put in the context: `req` (both drivers, by @nestjs/graphql's default
 * context), `res` where an application's context function adds it, `reply` (Mercurius adds the
 * Fastify reply to every context).
 */
interface GraphQLHttpFields {
  req?: unknown;
  res?: unknown;
  reply?: { request?: unknown };
}

/** Whether a call is a GraphQL resolver's (query, mutation or field). */
export function isGraphQLCall(context: ExecutionContext): boolean {
  return context.getType<GqlContextType>() === 'graphql';
}

/** The GraphQL context of a resolver call: one object per operation, whichever driver built it. */
export function graphQLContextOf(context: ExecutionContext): object | undefined {
  const value = GqlExecutionContext.create(context).getContext<unknown>();
  return typeof value === 'object' && value !== null ? value : undefined;
}

/**
 * The HTTP request behind a resolver call, and the response its headers go on: Express's `res`
 * (from the context, or `req.res`) under Apollo, Fastify's `reply` under Mercurius. Undefined when
 * the context holds no request (a subscription over WebSockets, a context function that drops `req`).
 */
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

/**
 * An object that stands for one execution of one operation: graphql-js coerces the variables into a
 * new object per execution and hands that same object to every resolver of it. The context alone
 * would do for Apollo and Mercurius (a batch's operations get a context each), not for a context
 * function that returns one object for several operations.
 */
export function executionOf(context: ExecutionContext): object | undefined {
  const info = GqlExecutionContext.create(context).getInfo<GraphQLResolveInfo | undefined>();
  const variables: unknown = info?.variableValues;
  return typeof variables === 'object' && variables !== null ? variables : undefined;
}

/**
 * Where a resolver call sits in the operation's result, list indices left out: `posts.author` for
 * the author of every post. An alias is its own place (`a: quote` and `b: quote` are two).
 */
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
