import { Controller, Get, Logger, UseGuards, type Provider, type Type } from '@nestjs/common';
import { Query, Resolver } from '@nestjs/graphql';
import { SlidingLimit } from 'nestjs-sliding-limit';
import { GqlSlidingLimitGuard } from 'nestjs-sliding-limit/graphql';
import { APP_GUARD } from '@nestjs/core';
import { codesOf, GRAPHQL_SERVERS, graphQLModule, postGraphQL } from './graphql-app';
import { useTestApps } from '../support/nest-app';

@Resolver()
class GreetingResolver {
  @Query(() => String, { nullable: true })
  @SlidingLimit({ name: 'greeting', limit: 2, windowMs: 60_000, key: 'header:x-client' })
  greeting(): string {
    return 'hello';
  }
}

@Resolver()
@UseGuards(GqlSlidingLimitGuard)
class GuardedGreetingResolver {
  @Query(() => String, { nullable: true })
  @SlidingLimit({ name: 'guarded-greeting', limit: 2, windowMs: 60_000, key: 'header:x-client' })
  guardedGreeting(): string {
    return 'hello';
  }
}

@Controller('hello')
class HelloController {
  @Get()
  @SlidingLimit({ name: 'hello', limit: 2, windowMs: 60_000, key: 'header:x-client' })
  hello(): string {
    return 'hello';
  }
}

/** GqlSlidingLimitGuard as the app's guard. */
const GQL_APP_GUARD = { provide: APP_GUARD, useClass: GqlSlidingLimitGuard };

/** The warnings of the plain guard about a GraphQL handler it did not limit. */
function unlimitedWarnings(warn: jest.SpyInstance): string[] {
  return warn.mock.calls.map(([line]) => String(line)).filter((line) => line.includes('"graphql" context'));
}

describe.each(GRAPHQL_SERVERS)('GqlSlidingLimitGuard beside the global guard on $server', ({ platform }) => {
  let warn: jest.SpyInstance;
  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  const startApp = useTestApps();
  afterEach(() => jest.restoreAllMocks());
  /** The app with GraphQL, these providers and controllers, and the module's `global` option. */
  const start = (global: boolean, providers: Provider[], controllers: Type[] = []) =>
    startApp({ platform, imports: [graphQLModule(platform, undefined)], controllers, providers, options: { global } });

  it('as APP_GUARD with global: true, counts a resolver call and an HTTP request once, and the global guard keeps quiet', async () => {
    const app = await start(true, [GreetingResolver, GQL_APP_GUARD], [HelloController]);
    for (let i = 0; i < 2; i++)
      expect(await postGraphQL(app, '{ greeting }', { client: 'a' })).toMatchObject({ errors: [] });
    expect(codesOf(await postGraphQL(app, '{ greeting }', { client: 'a' }))).toEqual(['TOO_MANY_REQUESTS']);
    // Two guards on one HTTP request: counted once, so the limit of 2 admits two.
    await app.http().get('/hello').set('x-client', 'a').expect(200);
    await app.http().get('/hello').set('x-client', 'a').expect(200);
    await app.http().get('/hello').set('x-client', 'a').expect(429);
    expect(unlimitedWarnings(warn)).toEqual([]);
  });

  it('with @UseGuards on a resolver and global: true, counts once and the global guard keeps quiet', async () => {
    const app = await start(true, [GuardedGreetingResolver]);
    for (let i = 0; i < 2; i++) {
      expect(await postGraphQL(app, '{ guardedGreeting }', { client: 'a' })).toMatchObject({ errors: [] });
    }
    const rejected = await postGraphQL(app, '{ guardedGreeting }', { client: 'a' });
    expect(rejected.errors[0].extensions).toMatchObject({ code: 'TOO_MANY_REQUESTS', limits: ['guarded-greeting'] });
    expect(unlimitedWarnings(warn)).toEqual([]);
  });

  it('as APP_GUARD and again with @UseGuards (two instances on one call), counts once', async () => {
    const app = await start(false, [GuardedGreetingResolver, GQL_APP_GUARD]);
    for (let i = 0; i < 2; i++) {
      expect(await postGraphQL(app, '{ guardedGreeting }', { client: 'a' })).toMatchObject({ errors: [] });
    }
    expect(codesOf(await postGraphQL(app, '{ guardedGreeting }', { client: 'a' }))).toEqual(['TOO_MANY_REQUESTS']);
  });

  it('alone (global: false, APP_GUARD) limits HTTP routes as the base guard does', async () => {
    const app = await start(false, [GreetingResolver, GQL_APP_GUARD], [HelloController]);
    await app.http().get('/hello').set('x-client', 'a').expect(200);
    await app.http().get('/hello').set('x-client', 'a').expect(200);
    const rejected = await app.http().get('/hello').set('x-client', 'a').expect(429);
    expect(rejected.body).toEqual({ statusCode: 429, message: 'Too Many Requests', error: 'Too Many Requests' });
    expect(rejected.headers['retry-after']).toBeDefined();
  });

  it('without a ready guard, the global guard lets resolver calls through and warns once, naming GqlSlidingLimitGuard', async () => {
    const app = await start(true, [GreetingResolver]);
    for (let i = 0; i < 4; i++)
      expect(await postGraphQL(app, '{ greeting }', { client: 'a' })).toMatchObject({ errors: [] });
    const warnings = unlimitedWarnings(warn);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('GreetingResolver.greeting has rate limits but runs in a "graphql" context');
    expect(warnings[0]).toContain('use GqlSlidingLimitGuard (entry point nestjs-sliding-limit/graphql)');
  });
});
