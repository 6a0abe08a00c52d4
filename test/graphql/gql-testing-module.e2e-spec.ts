import { APP_GUARD } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { MemoryBackend } from 'nestjs-sliding-limit';
import { GqlSlidingLimitGuard } from 'nestjs-sliding-limit/graphql';
import request from 'supertest';
import { graphQLModule } from './graphql-app';
import { PostResolver } from './graphql.resolvers';
import { RateLimitTestingModule, TestClock } from 'nestjs-sliding-limit/testing';

// A user's GraphQL e2e test: the ready guard on RateLimitTestingModule's in-memory store and clock,
// with no Redis at all.
describe('GqlSlidingLimitGuard on RateLimitTestingModule', () => {
  let app: INestApplication;

  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RateLimitTestingModule.forRoot({ global: false, functionName: 'sliding_allow_v2' }),
        graphQLModule('express', ['guards']),
      ],
      providers: [PostResolver, { provide: APP_GUARD, useClass: GqlSlidingLimitGuard }],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });

  afterEach(() => app.close());

  const quote = () =>
    request(app.getHttpServer())
      .post('/graphql')
      .set('x-client', 'tester')
      .send({ query: '{ quote }' })
      .then((response) => response.body as { data: unknown; errors?: { extensions?: Record<string, unknown> }[] });

  it('limits a query, answers TOO_MANY_REQUESTS, and admits again when the test clock moves past the window', async () => {
    expect((await quote()).data).toEqual({ quote: 'carpe diem' });
    expect((await quote()).data).toEqual({ quote: 'carpe diem' });
    const refused = await quote();
    expect(refused.errors?.map((error) => error.extensions?.code)).toEqual(['TOO_MANY_REQUESTS']);
    expect(refused.errors?.[0].extensions?.retryAfter).toBe(60);

    app.get(TestClock).advance(60_000);
    expect((await quote()).data).toEqual({ quote: 'carpe diem' });
    expect(app.get(MemoryBackend).keys()).toEqual(['rl:quote:{header.x-client:tester}']);
  });
});
