import { Logger, ServiceUnavailableException, type ExecutionContext } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { Test, type TestingModule } from '@nestjs/testing';
import { SlidingLimitPlans, SlidingWindowLimiter, type MultiRateLimitDecision } from 'nestjs-sliding-limit';
import { GqlSlidingLimitGuard, SlidingLimitGraphQLError } from 'nestjs-sliding-limit/graphql';
import { GraphQLError } from 'graphql';
import { MiscResolver, PostResolver } from './graphql.resolvers';
import { rejectionOf } from '../support/rejection';
import { testRateLimitModule } from '../support/nest-app';
import { uniquePrefix } from '../support/test-redis';
import { answerEveryDecision } from '../support/decisions';

/** A response that records the headers set on it. */
function recordingResponse(): { headers: Record<string, string>; setHeader(name: string, value: string): void } {
  const headers: Record<string, string> = {};
  return { headers, setHeader: (name, value) => (headers[name.toLowerCase()] = value) };
}

/** A resolver call (PostResolver.quote by default) as @nestjs/graphql makes it: [root, args, context, info]. */
function quoteCall(
  gqlContext: object,
  type = 'graphql',
  handler: 'quote' | 'limitedByClass' = 'quote',
): ExecutionContext {
  const info = { path: { prev: undefined, key: handler, typename: 'Query' } };
  const host = new ExecutionContextHost(
    type === 'graphql' ? [undefined, {}, gqlContext, info] : [(gqlContext as { req: object }).req, recordingResponse()],
    handler === 'quote' ? PostResolver : MiscResolver,
    handler === 'quote' ? PostResolver.prototype.quote : MiscResolver.prototype.limitedByClass,
  );
  host.setType(type);
  return host;
}

describe('GqlSlidingLimitGuard refusals other than a full limit', () => {
  let moduleRef: TestingModule;
  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [
        testRateLimitModule({ keyPrefix: uniquePrefix('gql'), global: false, functionName: 'sliding_allow_v2' }),
      ],
      providers: [PostResolver, MiscResolver],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
  });
  afterAll(() => moduleRef.close());

  afterEach(() => jest.restoreAllMocks());
  const guardDeciding = (decision: MultiRateLimitDecision) => {
    const limiter = moduleRef.get(SlidingWindowLimiter);
    answerEveryDecision(limiter, decision);
    return new GqlSlidingLimitGuard(limiter, moduleRef.get(SlidingLimitPlans));
  };
  const degradedDenial: MultiRateLimitDecision = {
    allowed: false,
    degraded: 'deny',
    functionName: 'sliding_allow_v2',
    retryAfterMs: 1_500,
    limits: [],
  };

  it('answers RATE_LIMIT_UNAVAILABLE with retryAfter and Retry-After when Redis cannot decide under deny', async () => {
    const res = recordingResponse();
    const error = await rejectionOf(
      guardDeciding(degradedDenial).canActivate(quoteCall({ req: { ip: '10.0.0.1' }, res })),
    );
    expect(error).toBeInstanceOf(SlidingLimitGraphQLError);
    expect(error).toBeInstanceOf(GraphQLError);
    expect((error as SlidingLimitGraphQLError).extensions).toEqual({
      code: 'RATE_LIMIT_UNAVAILABLE',
      retryAfter: 2,
      retryAfterMs: 1_500,
    });
    expect(res.headers['retry-after']).toBe('2');
  });

  it('keeps the HTTP answer (503) for an HTTP call', async () => {
    const error = await rejectionOf(
      guardDeciding(degradedDenial).canActivate(quoteCall({ req: { ip: '10.0.0.1' } }, 'http')),
    );
    expect(error).toBeInstanceOf(ServiceUnavailableException);
  });

  it('answers FORBIDDEN when the call has no identity (no key value and no IP)', async () => {
    const guard =
      moduleRef.get(SlidingLimitPlans) &&
      new GqlSlidingLimitGuard(moduleRef.get(SlidingWindowLimiter), moduleRef.get(SlidingLimitPlans));
    const error = await rejectionOf(guard.canActivate(quoteCall({ req: { headers: {} } })));
    expect(error).toBeInstanceOf(SlidingLimitGraphQLError);
    expect((error as SlidingLimitGraphQLError).extensions).toEqual({ code: 'FORBIDDEN' });
    expect((error as Error).message).toBe('Rate limit of PostResolver.quote cannot identify the client');
  });

  it('lets a call through when the GraphQL context holds no request (a subscription over WebSockets)', async () => {
    const guard = guardDeciding({ allowed: false, functionName: 'sliding_allow_v2', retryAfterMs: 1_000, limits: [] });
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      for (let i = 0; i < 3; i++)
        await expect(guard.canActivate(quoteCall({ connectionParams: {} }, 'graphql', 'limitedByClass'))).resolves.toBe(
          true,
        );
      // Once, from the second call, naming what to do rather than the guard already in use.
      expect(warn.mock.calls.map(([line]) => String(line))).toEqual([
        'MiscResolver.limitedByClass has rate limits but its GraphQL context holds no HTTP request (req), so GqlSlidingLimitGuard ' +
          'let the call through (a subscription over WebSockets?); return a req from the context function to limit it ' +
          '(see docs/graphql.md)',
      ]);
    } finally {
      warn.mockRestore();
    }
  });
});
