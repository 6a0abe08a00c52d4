import { MiscResolver, PostResolver, UserResolver } from './graphql.resolvers';
import { FakeAuthModule } from '../fixtures/limits/fake-auth.middleware';
import { codesOf, GRAPHQL_SERVERS, postGraphQL, startGraphQLApp } from './graphql-app';
import { useTestApps } from '../support/nest-app';

describe.each(GRAPHQL_SERVERS)('GqlSlidingLimitGuard on $server', ({ platform }) => {
  const startApp = useTestApps(startGraphQLApp);
  const start = () =>
    startApp({ platform, resolvers: [PostResolver, MiscResolver], options: { functionName: 'sliding_allow_v2' } });

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
    // Until the first call leaves the minute's window: nearly all of it, however slow a loaded host is.
    expect(retryAfter).toBeGreaterThanOrEqual(50);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(error.extensions?.retryAfterMs).toBeGreaterThan(50_000);
    expect(rejected.headers['retry-after']).toBe(String(retryAfter));
    expect(rejected.headers['x-ratelimit-remaining']).toBe('0');
    // Another client has its own window.
    expect((await postGraphQL(app, '{ quote }', { client: 'b' })).errors).toEqual([]);
  });

  it('counts each alias and each limited field of one operation', async () => {
    const app = await start();
    // Two aliases of one limited field are two calls: the second fills the limit of 2.
    const both = await postGraphQL(app, '{ a: quote b: quote }', { client: 'a' });
    expect(both.errors).toEqual([]);
    expect(both.data).toEqual({ a: 'carpe diem', b: 'carpe diem' });
    const third = await postGraphQL(app, '{ c: quote limitedByClass }', { client: 'a' });
    expect(codesOf(third)).toEqual(['TOO_MANY_REQUESTS']);
    expect(third.errors[0].path).toEqual(['c']);
    // The other field was admitted (quote is non-null, so data is null) and counted: a second call is refused.
    const fourth = await postGraphQL(app, '{ limitedByClass }', { client: 'a' });
    expect(fourth.errors[0].extensions).toMatchObject({ code: 'TOO_MANY_REQUESTS', limits: ['misc'] });
  });

  it('leaves a @SkipRateLimit query out of its class-wide limit', async () => {
    const app = await start();
    for (let i = 0; i < 4; i++) expect((await postGraphQL(app, '{ free }', { client: 'a' })).data).toEqual({ free: 2 });
    expect((await postGraphQL(app, '{ limitedByClass }', { client: 'a' })).errors).toEqual([]);
    expect(codesOf(await postGraphQL(app, '{ limitedByClass }', { client: 'a' }))).toEqual(['TOO_MANY_REQUESTS']);
  });

  it('decides stacked limits of a mutation in one call: a call one limit refuses counts in none', async () => {
    const app = await start();
    const send = (phone: string) =>
      postGraphQL(app, 'mutation($phone: String!) { sendCode(phone: $phone) }', { client: 'a', variables: { phone } });
    expect((await send('111')).data).toEqual({ sendCode: true });
    expect((await send('111')).data).toEqual({ sendCode: true });
    const perPhone = await send('111');
    expect(perPhone.errors[0].extensions).toMatchObject({ code: 'TOO_MANY_REQUESTS', limits: ['sms-phone'] });
    // The refused call was not counted per client: 2 of 3 used, one more passes.
    expect((await send('222')).data).toEqual({ sendCode: true });
    const perClient = await send('333');
    expect(perClient.errors[0].extensions).toMatchObject({ code: 'TOO_MANY_REQUESTS', limits: ['sms-client'] });
    expect(perClient.headers['retry-after']).toBeDefined();
  });

  it('prices a query by its arguments, and answers BAD_REQUEST without counting when it cannot', async () => {
    const app = await start();
    const page = (first: number) =>
      postGraphQL(app, 'query($first: Int!) { posts(first: $first) { id } }', { client: 'a', variables: { first } });
    const six = await page(6);
    expect(six.errors).toEqual([]);
    expect(six.data?.posts).toHaveLength(6);
    expect(six.headers['x-ratelimit-remaining']).toBe('4');
    expect(codesOf(await page(5))).toEqual(['TOO_MANY_REQUESTS']); // 6 + 5 > 10
    const unpriceable = await page(0);
    expect(codesOf(unpriceable)).toEqual(['BAD_REQUEST']);
    expect(unpriceable.errors[0].message).toBe('Rate limit of PostResolver.posts cannot price this request');
    expect(codesOf(await page(11))).toEqual(['BAD_REQUEST']); // more than the limit
    const four = await page(4);
    expect(four.errors).toEqual([]);
    expect(four.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('gives key and cost functions the user a middleware set, as req.user', async () => {
    const started = await startApp({ platform, resolvers: [UserResolver], imports: [FakeAuthModule] });
    const me = () => started.http().post('/graphql').set('x-user-id', '10086').send({ query: '{ me }' }).expect(200);
    const first = await me();
    expect(first.body).toEqual({ data: { me: 'me' } });
    expect(first.headers['x-ratelimit-remaining']).toBe('5'); // 10 less a cost of 5
    await me();
    const refused = (await me()).body as { errors: { extensions: { code: string } }[] };
    expect(refused.errors.map((error) => error.extensions.code)).toEqual(['TOO_MANY_REQUESTS']);
  });

  it('limits a field resolver once per operation: the items of a list share one decision', async () => {
    const app = await start();
    const resolver = app.app.get(PostResolver);
    const query = '{ posts(first: 3) { title author { name } } }';
    for (let i = 0; i < 2; i++) {
      const ok = await postGraphQL(app, query, { client: 'a' });
      expect(ok.errors).toEqual([]);
      expect(ok.data?.posts).toEqual(
        [0, 1, 2].map((n) => ({ title: `post ${n}`, author: { name: `author of post ${n}` } })),
      );
    }
    expect(resolver.authorCalls).toBe(6);
    const rejected = await postGraphQL(app, query, { client: 'a' });
    // Every post's author is refused, the posts themselves are served.
    // (Mercurius writes a path's list indices as strings.)
    expect(rejected.errors.map((error) => [error.path?.map(String), error.extensions?.code])).toEqual(
      [0, 1, 2].map((n) => [['posts', String(n), 'author'], 'TOO_MANY_REQUESTS']),
    );
    expect(rejected.data?.posts).toEqual([0, 1, 2].map((n) => ({ title: `post ${n}`, author: null })));
    expect(resolver.authorCalls).toBe(6);
    expect(rejected.headers['retry-after']).toBeDefined();
  });

  it('counts each operation of a batched request', async () => {
    const app = await startApp({
      platform,
      resolvers: [PostResolver, MiscResolver],
      batched: true,
      options: { functionName: 'sliding_allow_v2' },
    });
    const response = await app
      .http()
      .post('/graphql')
      .set('content-type', 'application/json')
      .set('x-client', 'a')
      .send([{ query: '{ quote }' }, { query: '{ quote }' }, { query: '{ quote }' }]);
    expect(response.status).toBe(200);
    const replies = response.body as { data: unknown; errors?: { extensions?: { code?: string } }[] }[];
    expect(replies.map((reply) => reply.errors?.map((error) => error.extensions?.code) ?? [])).toEqual(
      expect.arrayContaining([[], [], ['TOO_MANY_REQUESTS']]),
    );
    expect(replies.filter((reply) => reply.errors !== undefined)).toHaveLength(1);
  });
});
