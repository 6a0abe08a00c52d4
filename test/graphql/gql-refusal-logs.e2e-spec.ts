import type { RateLimitModuleOptions } from 'nestjs-sliding-limit';
import { MiscResolver, PostResolver } from './graphql.resolvers';
import { codesOf, GRAPHQL_SERVERS, postGraphQL, startGraphQLApp } from './graphql-app';
import { useTestApps } from '../support/nest-app';
import { recordLogs } from '../support/recorded-logs';

describe.each(GRAPHQL_SERVERS)('GraphQL refusals on $server', ({ platform }) => {
  const startApp = useTestApps(startGraphQLApp);
  afterEach(() => jest.restoreAllMocks());

  const refuseTwice = async (options: Partial<RateLimitModuleOptions> = {}) => {
    const app = await startApp({ platform, resolvers: [PostResolver, MiscResolver], options });
    for (let i = 0; i < 2; i++) expect((await postGraphQL(app, '{ quote }', { client: 'a' })).errors).toEqual([]);
    for (let i = 0; i < 2; i++) {
      expect(codesOf(await postGraphQL(app, '{ quote }', { client: 'a' }))).toEqual(['TOO_MANY_REQUESTS']);
    }
  };

  it('log nothing by default: a refusal is not an error', async () => {
    const lines = recordLogs();
    await refuseTwice();
    expect(lines.filter((line) => !line.startsWith('log: '))).toEqual([]);
  });

  it('log one line each at refusals.logLevel, naming the resolver and its full limits', async () => {
    const lines = recordLogs();
    await refuseTwice({ refusals: { logLevel: 'warn' } });
    const refusals = lines.filter((line) => line.includes('refused'));
    expect(refusals).toHaveLength(2);
    for (const line of refusals) {
      expect(line).toMatch(
        /^warn: PostResolver\.quote \(graphql\) refused a call over its rate limit quote; retry after (59|60) s$/,
      );
    }
    expect(lines.filter((line) => line.startsWith('error: '))).toEqual([]);
  });
});
