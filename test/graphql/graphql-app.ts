import type { DynamicModule, ModuleMetadata, Provider, Type } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { GraphQLModule } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import type { RateLimitModuleOptions } from 'nestjs-sliding-limit';
import { GqlSlidingLimitGuard } from 'nestjs-sliding-limit/graphql';
import type { Response } from 'supertest';
import { startTestApp, type Platform, type TestApp } from '../support/nest-app';

// Mercurius loads @fastify/static for its GraphiQL page, which loads an ES-module-only
// content-disposition that jest's CommonJS runtime cannot require on Node 20 (plain Node 20.19+
// can). The specs never serve GraphiQL: a plugin that registers nothing stands in for it.
jest.mock('@fastify/static', () => Object.assign(async () => undefined, { default: async () => undefined }));

/** The two servers the GraphQL specs run on: Apollo on Express, Mercurius on Fastify. */
export const GRAPHQL_SERVERS = [
  { server: 'Apollo on Express', platform: 'express' },
  { server: 'Mercurius on Fastify', platform: 'fastify' },
] as const satisfies readonly { server: string; platform: Platform }[];

export interface GraphQLAppOptions {
  platform: Platform;
  resolvers: Type[];
  /** Register GqlSlidingLimitGuard as APP_GUARD (default true). */
  appGuard?: boolean;
  options?: Partial<RateLimitModuleOptions>;
  /** GraphQLModule's fieldResolverEnhancers (default ['guards']). */
  fieldResolverEnhancers?: ('guards' | 'interceptors' | 'filters')[];
  /** Accept a JSON array of operations in one POST (off by default in both servers). */
  batched?: boolean;
  /** More modules of the application (a middleware's, say). */
  imports?: ModuleMetadata['imports'];
  /** Fields the GraphQL context gets from the HTTP request, beside `req` (a caller's identity, say). */
  context?: (request: { headers: Record<string, string | string[] | undefined> }) => Record<string, unknown>;
}

export function graphQLModule(
  platform: Platform,
  enhancers: GraphQLAppOptions['fieldResolverEnhancers'],
  batched = false,
  context?: GraphQLAppOptions['context'],
): DynamicModule {
  const fieldResolverEnhancers = enhancers ?? ['guards'];
  if (platform === 'fastify') {
    return GraphQLModule.forRoot<MercuriusDriverConfig>({
      driver: MercuriusDriver,
      autoSchemaFile: true,
      // Mercurius's query cache is a dynamic import(), which jest's runtime refuses without
      // --experimental-vm-modules; the cache changes nothing the specs look at.
      cache: false,
      fieldResolverEnhancers,
      allowBatchedQueries: batched,
      ...(context && { context: (request: Parameters<typeof context>[0]) => ({ req: request, ...context(request) }) }),
    });
  }
  return GraphQLModule.forRoot<ApolloDriverConfig>({
    driver: ApolloDriver,
    autoSchemaFile: true,
    fieldResolverEnhancers,
    allowBatchedHttpRequests: batched,
    ...(context && {
      context: ({ req, res }: { req: Parameters<typeof context>[0]; res: unknown }) => ({ req, res, ...context(req) }),
    }),
  });
}

/** A Nest app serving the resolvers at /graphql, listening on a free port. */
export function startGraphQLApp(options: GraphQLAppOptions): Promise<TestApp> {
  const providers: Provider[] = [...options.resolvers];
  if (options.appGuard !== false) providers.push({ provide: APP_GUARD, useClass: GqlSlidingLimitGuard });
  return startTestApp({
    platform: options.platform,
    imports: [
      graphQLModule(options.platform, options.fieldResolverEnhancers, options.batched, options.context),
      ...(options.imports ?? []),
    ],
    providers,
    options: { global: false, ...options.options },
  });
}

/** A GraphQL error as the client receives it. */
export interface ClientError {
  message: string;
  path?: (string | number)[];
  extensions?: Record<string, unknown>;
}

export interface GraphQLReply {
  status: number;
  headers: Record<string, string>;
  data: Record<string, unknown> | null;
  errors: ClientError[];
}

/** POSTs an operation to /graphql as `client` (the x-client header) and parses the reply. */
export async function postGraphQL(
  app: TestApp,
  query: string,
  options: { client?: string; variables?: Record<string, unknown>; headers?: Record<string, string> } = {},
): Promise<GraphQLReply> {
  let call = app.http().post('/graphql').set('content-type', 'application/json');
  if (options.client !== undefined) call = call.set('x-client', options.client);
  if (options.headers !== undefined) call = call.set(options.headers);
  const response: Response = await call.send({ query, variables: options.variables ?? {} });
  const body = response.body as { data?: Record<string, unknown> | null; errors?: ClientError[] };
  return {
    status: response.status,
    headers: response.headers as Record<string, string>,
    data: body.data ?? null,
    errors: body.errors ?? [],
  };
}

/** The `extensions.code` of each error, in order. */
export function codesOf(reply: GraphQLReply): unknown[] {
  return reply.errors.map((error) => error.extensions?.code);
}
