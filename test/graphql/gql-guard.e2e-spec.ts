import { MiscResolver, PostResolver } from './graphql.resolvers';
import { codesOf, GRAPHQL_SERVERS, postGraphQL, startGraphQLApp } from './graphql-app';
import type { TestApp } from '../support/nest-app';

describe.each(GRAPHQL_SERVERS)('GqlSlidingLimitGuard on $server', ({ platform }) => {
  let app: TestApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  const start = async () =>
    (app = await startGraphQLApp({
      platform,
      resolvers: [PostResolver, MiscResolver],
      options: { functionName: 'sliding_allow_v3' },
    }));

  it('answers a full limit with TOO_MANY_REQUESTS, retryAfter and the headers on the HTTP response, per client', async () => {
    const app = await start();
    for (let i = 0; i < 2; i++) {
      const ok = await postGraphQL(app, '{ quote }', { client: 'a' });
      expect(ok.errors).toEqual([]);
      expect(ok.data).toEqual({ quote: 'carpe diem' });
      expect(ok.headers['x-ratelimit-remaining']).toBe(String(1 - i));
    }
    const rejected = await postGraphQL(app, '{ quote }', { client: 'a' });
    expect(rejected.status).toBe(200);
    expect(rejected.data).toBeNull();
    expect(rejected.errors).toHaveLength(1);
    const [error] = rejected.errors;
    expect(error.message).toBe('Too Many Requests');
    expect(error.path).toEqual(['quote']);
    expect(error.extensions).toMatchObject({ code: 'TOO_MANY_REQUESTS', limits: ['quote'] });
    const retryAfter = error.extensions?.retryAfter as number;
    expect(retryAfter).toBeGreaterThanOrEqual(59);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(error.extensions?.retryAfterMs).toBeGreaterThan(58_000);
    expect(rejected.headers['retry-after']).toBe(String(retryAfter));
    expect(rejected.headers['x-ratelimit-remaining']).toBe('0');
    // Another client has its own window.
    expect((await postGraphQL(app, '{ quote }', { client: 'b' })).errors).toEqual([]);
  });
});
