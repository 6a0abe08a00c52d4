/*
 * limiter.use() at runtime against what the application's routes need: a switch to a function
 * version that cannot decide a route's cost or precisionMs is refused, naming the routes and what
 * they need, and the functions in effect stay (the routes keep working). The module tells the
 * limiter what its routes need; the limiter stays free of Nest.
 */
import { RateLimitConfigError, SlidingWindowLimiter } from 'nestjs-sliding-limit';
import { PricedController, QuotaController } from '../fixtures/cost/cost.controllers';
import { startTestApp, type TestApp } from '../support/nest-app';
import { rejectionOf } from '../support/rejection';

describe('limiter.use() on an application whose routes use cost and precisionMs (sliding_allow_v2)', () => {
  let app: TestApp;
  let limiter: SlidingWindowLimiter;

  beforeAll(async () => {
    app = await startTestApp({
      platform: 'express',
      controllers: [QuotaController, PricedController],
      options: { functionName: 'sliding_allow_v2', report: false },
    });
    limiter = app.app.get(SlidingWindowLimiter);
  });
  afterAll(() => app?.close());

  it('refuses a switch to sliding_allow_v1, naming each route and what it needs; v2 stays, and the routes answer', async () => {
    const error = await rejectionOf(limiter.use('sliding_allow_v1'));

    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as RateLimitConfigError).problems).toEqual([
      'functionName sliding_allow_v1 cannot decide a cost other than 1, which QuotaController.export, ' +
        'PricedController.rows and PricedController.throws use: they need sliding_allow_v2',
      'functionName sliding_allow_v1 cannot decide precisionMs (the bounded-memory window), which ' +
        'QuotaController.search and QuotaController.export use: they need sliding_allow_v2',
    ]);
    expect((error as Error).message).toMatch(
      /^nestjs-sliding-limit: invalid configuration of SlidingWindowLimiter\.use:/,
    );
    expect(limiter.functionName).toBe('sliding_allow_v2');
    const search = await app.http().get('/api/search').set('x-api-key', 'k1');
    expect(search.status).toBe(200);
    expect(search.headers['x-ratelimit-remaining']).toBe('24');
    const exported = await app.http().get('/api/export').set('x-api-key', 'k1');
    expect(exported.status).toBe(200);
  });

  it('refuses a canary to sliding_allow_v1 the same way, and accepts what the routes can run on', async () => {
    const error = await rejectionOf(
      limiter.use({ functionName: 'sliding_allow_v2', canary: { functionName: 'sliding_allow_v1', percent: 5 } }),
    );
    expect((error as RateLimitConfigError).problems).toEqual([
      expect.stringMatching(/^canary\.functionName sliding_allow_v1 cannot decide a cost other than 1, which /),
      expect.stringMatching(/^canary\.functionName sliding_allow_v1 cannot decide precisionMs /),
    ]);
    expect(limiter.canary).toBeUndefined();

    // A canary at 0 % takes no traffic: nothing to refuse (raising it is another use(), checked then).
    await limiter.use({ functionName: 'sliding_allow_v2', canary: { functionName: 'sliding_allow_v1', percent: 0 } });
    await limiter.use('sliding_allow_v2');
    expect(limiter.functionName).toBe('sliding_allow_v2');
  });
});
