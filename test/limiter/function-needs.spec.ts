/*
 * SlidingWindowLimiter.addFunctionNeeds without Nest: what callers declare they need is read at each
 * use(), a switch that would drop it is refused before anything changes, and a removed declaration
 * no longer counts.
 */
import { RateLimitConfigError } from '../../lib';
import { rejectionOf } from '../support/rejection';
import { useTestLimiters } from '../support/test-limiter';
import { uniquePrefix, useSharedClient } from '../support/test-redis';

describe('SlidingWindowLimiter.addFunctionNeeds', () => {
  const redis = useSharedClient();
  const limiterWith = useTestLimiters(() => ({ client: redis, keyPrefix: uniquePrefix('needs') }));

  it('use() refuses a version that cannot decide a declared need, reads the needs at each switch, and forgets removed ones', async () => {
    const limiter = limiterWith({ functionName: 'sliding_allow_v2' });
    await limiter.init();
    const weighted: string[] = [];
    const remove = limiter.addFunctionNeeds(() => ({ weighted }));

    await limiter.use('sliding_allow_v1'); // nothing needs a cost yet
    await limiter.use('sliding_allow_v2');
    weighted.push('exports');
    const error = await rejectionOf(limiter.use('sliding_allow_v1'));
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as RateLimitConfigError).problems).toEqual([
      'functionName sliding_allow_v1 cannot decide a cost other than 1, which exports uses: it needs sliding_allow_v2',
    ]);
    expect(limiter.functionName).toBe('sliding_allow_v2');
    expect(await limiter.consume('k', { limit: 10, windowMs: 1000 }, { cost: 3 })).toMatchObject({
      allowed: true,
      remaining: 7,
    });

    remove();
    await limiter.use('sliding_allow_v1');
    expect(limiter.functionName).toBe('sliding_allow_v1');
  });
});
