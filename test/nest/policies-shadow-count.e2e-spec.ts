import fc from 'fast-check';
import { RateLimitModule } from 'nestjs-sliding-limit';
import { ShadowTwinsController } from '../fixtures/policies/shadow-twins.controllers';
import { manualClock, startTestApp, type TestApp } from '../support/nest-app';
import { TEST_LIMITER_SETTINGS } from '../support/test-limiter';
import { sharedRedisUrl, uniquePrefix } from '../support/test-redis';
import { checkParameters } from '../memory/redis-comparison';

/*
 * "A shadow limit's would-refuse count equals what the same limit enforced would have refused",
 * through the guard: the same traffic (random gaps on the limiter's clock) goes to a route with the
 * limit enforced, one with it as a shadow limit and one with it as the candidate of a limit that never
 * refuses; at every request the shadow and the candidate say they would refuse (x-ratelimit-shadow)
 * exactly when the enforced route answers 429, and never refuse themselves.
 */
describe.each(['redis', 'memory'] as const)('shadow limits counted against the same limit enforced (%s)', (store) => {
  let app: TestApp | undefined;
  afterAll(async () => {
    await app?.close();
  });

  it('would refuse exactly the requests the enforced limit refuses', async () => {
    const clock = manualClock();
    const keyPrefix = uniquePrefix('twins');
    const where =
      store === 'redis' ? { ...TEST_LIMITER_SETTINGS, redis: sharedRedisUrl() } : { store: 'memory' as const };
    app = await startTestApp({
      platform: 'express',
      controllers: [ShadowTwinsController],
      rateLimitModule: RateLimitModule.forRoot({ ...where, keyPrefix, clock: clock.now, headers: { shadow: true } }),
    });
    const started = app;
    let run = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.constant(0), fc.nat(4_000)), { minLength: 1, maxLength: 25 }),
        async (gaps) => {
          const caller = { 'x-api-key': `caller-${run++}` };
          let enforcedRefusals = 0;
          let shadowRefusals = 0;
          let candidateRefusals = 0;
          for (const gap of gaps) {
            clock.advance(gap);
            const enforced = await started.http().get('/twins/enforced').set(caller);
            const shadow = await started.http().get('/twins/shadow').set(caller).expect(200);
            const candidate = await started.http().get('/twins/candidate').set(caller).expect(200);
            const wouldRefuse = (header: unknown) => String(header).endsWith('would-refuse=?1');
            expect({
              shadow: wouldRefuse(shadow.headers['x-ratelimit-shadow']),
              candidate: wouldRefuse(candidate.headers['x-ratelimit-shadow']),
            }).toEqual({ shadow: enforced.status === 429, candidate: enforced.status === 429 });
            if (enforced.status === 429) enforcedRefusals++;
            if (wouldRefuse(shadow.headers['x-ratelimit-shadow'])) shadowRefusals++;
            if (wouldRefuse(candidate.headers['x-ratelimit-shadow'])) candidateRefusals++;
          }
          expect([shadowRefusals, candidateRefusals]).toEqual([enforcedRefusals, enforcedRefusals]);
          refused += enforcedRefusals;
        },
      ),
      checkParameters(20),
    );
    expect(refused).toBeGreaterThan(0);
  }, 120_000);
});
