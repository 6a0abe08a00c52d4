import { Logger } from '@nestjs/common';
import { Args, Int, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { RateLimitConfigError, SlidingLimit, SlidingWindowLimiter } from 'nestjs-sliding-limit';
import { Post, PostResolver } from './graphql.resolvers';
import { GRAPHQL_SERVERS, startGraphQLApp } from './graphql-app';
import { rejectionOf } from '../support/rejection';

@Resolver(() => Post)
class BadPostResolver {
  @Query(() => [Post])
  @SlidingLimit({ limit: 0, windowMs: 60_000 })
  posts(@Args('first', { type: () => Int }) first: number): Post[] {
    return [{ id: first, title: 'post' }];
  }

  @ResolveField(() => String)
  @SlidingLimit({ name: 'summary', limit: 5, windowMs: 60_000, key: 'cookie:session' })
  summary(@Parent() post: Post): string {
    return post.title;
  }
}

@Resolver()
class GoodResolver {
  @Query(() => Int)
  @SlidingLimit({ name: 'count', limit: 5, windowMs: 60_000 })
  count(): number {
    return 1;
  }
}

describe.each(GRAPHQL_SERVERS)('@SlidingLimit on resolvers at bootstrap on $server', ({ platform }) => {
  it('fails the start with every bad decorator of a resolver, field resolvers included, naming Resolver.method', async () => {
    const error = await rejectionOf(startGraphQLApp({ platform, resolvers: [BadPostResolver, GoodResolver] }));
    expect(error).toBeInstanceOf(RateLimitConfigError);
    const problems = (error as RateLimitConfigError).problems;
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^BadPostResolver\.posts: @SlidingLimit\.limit must be a whole number/);
    expect(problems[1]).toMatch(/^BadPostResolver\.summary: @SlidingLimit\.key "cookie:session": unknown part/);
  });

  it('keys a resolver call by the IP of the HTTP request in its GraphQL context by default', async () => {
    const app = await startGraphQLApp({ platform, resolvers: [GoodResolver] });
    try {
      const limiter = app.app.get(SlidingWindowLimiter);
      await app.http().post('/graphql').send({ query: '{ count }' }).expect(200);
      expect(await limiter.peek('count:{ip:127.0.0.1}', { limit: 5, windowMs: 60_000 })).toMatchObject({ count: 1 });
    } finally {
      await app.close();
    }
  });
});

describe.each(GRAPHQL_SERVERS)('limited field resolvers without field guards on $server', ({ platform }) => {
  afterEach(() => jest.restoreAllMocks());

  const fieldWarnings = (warn: jest.SpyInstance) =>
    warn.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('@ResolveField'));

  it("warns once at start-up, naming them, when fieldResolverEnhancers lacks 'guards'", async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const app = await startGraphQLApp({
      platform,
      resolvers: [PostResolver],
      fieldResolverEnhancers: [],
      options: { functionName: 'sliding_allow_v2' },
    });
    try {
      expect(fieldWarnings(warn)).toEqual([
        "PostResolver.author has rate limits on a @ResolveField, but no guard runs for field resolvers: add fieldResolverEnhancers: ['guards'] to GraphQLModule.forRoot (see docs/graphql.md)",
      ]);
    } finally {
      await app.close();
    }
  });

  it("says nothing when fieldResolverEnhancers includes 'guards'", async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const app = await startGraphQLApp({
      platform,
      resolvers: [PostResolver],
      options: { functionName: 'sliding_allow_v2' },
    });
    try {
      expect(warn).toHaveBeenCalledTimes(0);
    } finally {
      await app.close();
    }
  });
});
