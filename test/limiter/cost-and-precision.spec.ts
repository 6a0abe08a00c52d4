import { RateLimitConfigError } from '../../lib';
import { rejectionOf } from '../support/rejection';
import { useTestLimiters } from '../support/test-limiter';
import { uniquePrefix, useSharedClient } from '../support/test-redis';

const T0 = 1_735_660_800_000;
const MIN = 60_000;

/** Cost per request and the bounded-memory window, through the limiter, on Redis. */
describe('SlidingWindowLimiter: cost and precisionMs', () => {
  const redis = useSharedClient();
  let keyPrefix: string;
  let now: number;
  beforeEach(() => {
    keyPrefix = uniquePrefix('cost');
    now = T0;
  });

  const limiterWith = useTestLimiters(() => ({
    client: redis,
    keyPrefix,
    functionName: 'sliding_allow_v2',
    clock: () => now,
  }));

  describe.each(['function', 'script'] as const)('in %s mode', (mode) => {
    it.each([
      ['the log', { limit: 10, windowMs: 10 * MIN }],
      ['the bucketed window', { limit: 10, windowMs: 10 * MIN, precisionMs: MIN }],
    ])('%s: admits a request only when its whole cost fits, and reports remaining in cost units', async (_, rule) => {
      const limiter = limiterWith({ mode });
      const export1 = await limiter.consume('api:key1', rule, { cost: 6 });
      expect([export1.allowed, export1.remaining]).toEqual([true, 4]);
      const export2 = await limiter.consume('api:key1', rule, { cost: 6 });
      expect([export2.allowed, export2.remaining]).toEqual([false, 4]);
      expect(export2.retryAfterMs).toBeGreaterThan(0);
      const search = await limiter.consume('api:key1', rule, { cost: 4 });
      expect([search.allowed, search.remaining]).toEqual([true, 0]);
      expect((await limiter.peek('api:key1', rule)).count).toBe(10);
      now += export2.retryAfterMs - 1;
      expect((await limiter.consume('api:key1', rule, { cost: 6 })).allowed).toBe(false);
    });
  });

  it('decides stacked limits of both kinds at one cost atomically', async () => {
    const limiter = limiterWith();
    const rules = [
      { key: 'tenant:{t1}:minute', limit: 5, windowMs: MIN },
      { key: 'tenant:{t1}:day', limit: 100, windowMs: 24 * 60 * MIN, precisionMs: 60 * MIN },
    ];
    expect((await limiter.consumeAll(rules, { cost: 4 })).allowed).toBe(true);
    const rejected = await limiter.consumeAll(rules, { cost: 2 });
    expect(rejected.allowed).toBe(false);
    expect(rejected.limits.map((l) => [l.allowed, l.remaining])).toEqual([
      [false, 1],
      [true, 96],
    ]);
    expect((await limiter.peek('tenant:{t1}:day', rules[1])).count).toBe(4);
  });

  it('keeps the block cache to cost 1, so a costly rejection never blocks a cheaper request', async () => {
    const limiter = limiterWith();
    const rule = { limit: 10, windowMs: MIN };
    await limiter.consume('k', rule, { cost: 8 });
    expect((await limiter.consume('k', rule, { cost: 3 })).allowed).toBe(false);
    expect((await limiter.consume('k', rule, { cost: 2 })).allowed).toBe(true);
    expect(limiter.metrics.snapshot()[0].blockedLocally).toBe(0);
  });

  it('serves cost-1 rejections of a bucketed limit from the block cache, until the exact sub-window time', async () => {
    // The block cache keeps refusals only while no override is read.
    const limiter = limiterWith({ keyOverrides: false });
    const rule = { limit: 2, windowMs: 10 * MIN, precisionMs: MIN };
    await limiter.consume('b', rule);
    await limiter.consume('b', rule);
    const first = await limiter.consume('b', rule);
    expect(first.allowed).toBe(false);
    now += first.retryAfterMs - 1;
    expect((await limiter.consume('b', rule)).allowed).toBe(false);
    expect(limiter.metrics.snapshot()[0].blockedLocally).toBe(1);
    now += 1;
    expect((await limiter.consume('b', rule)).allowed).toBe(true);
  });

  it('reset forgets a bucketed key as it does a log', async () => {
    const limiter = limiterWith();
    const rule = { limit: 5, windowMs: MIN, precisionMs: 1000 };
    await limiter.consume('r', rule, { cost: 5 });
    await limiter.reset('r');
    expect(await redis.exists(keyPrefix + 'r')).toBe(0);
    expect((await limiter.consume('r', rule, { cost: 5 })).allowed).toBe(true);
  });

  it.each([
    ['a cost', { limit: 10, windowMs: MIN }, { cost: 2 }, /a cost \(2\) needs sliding_allow_v2/],
    ['precisionMs', { limit: 10, windowMs: MIN, precisionMs: 1000 }, {}, /precisionMs .* needs sliding_allow_v2/],
    // v1 would enforce it.
    [
      'a shadow limit',
      { limit: 10, windowMs: MIN, mode: 'shadow' as const },
      {},
      /mode: 'shadow' needs sliding_allow_v2/,
    ],
  ])('refuses %s on sliding_allow_v1, naming v2, and records nothing', async (_, rule, options, message) => {
    const limiter = limiterWith({ functionName: 'sliding_allow_v1' });
    const error = await rejectionOf(limiter.consume('k', rule, options));
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as Error).message).toMatch(message);
    expect(await redis.exists(keyPrefix + 'k')).toBe(0);
  });

  it.each([
    [0, /cost must be a whole number from 1/],
    [1.5, /cost must be a whole number from 1/],
    [Number.NaN, /cost must be a whole number from 1/],
    [11, /cost 11 is more than the limit 10/],
  ])('rejects cost %p with a clear error and records nothing', async (cost, message) => {
    const limiter = limiterWith();
    const error = await rejectionOf(limiter.consume('k', { limit: 10, windowMs: MIN }, { cost }));
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as Error).message).toMatch(message);
  });

  it.each([
    ['not an array', 'burst', /limitNames must be an array of 1 string, one per limit, got "burst"/],
    ['one name too many', ['burst', 'daily'], /limitNames must be an array of 1 string, one per limit/],
    ['a name that is not a string', [7], /limitNames must be an array of 1 string, one per limit, got an array/],
  ])('rejects limitNames %s with a clear error and records nothing', async (_, limitNames, message) => {
    const limiter = limiterWith();
    const error = await rejectionOf(
      limiter.consume('k', { limit: 10, windowMs: MIN }, { limitNames: limitNames as string[] }),
    );
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as Error).message).toMatch(message);
    expect(await redis.exists(keyPrefix + 'k')).toBe(0);
  });

  it('allows limits beyond the log maximum only with precisionMs, and says how', async () => {
    const limiter = limiterWith();
    const error = await rejectionOf(limiter.consume('k', { limit: 5_000_000, windowMs: MIN }));
    expect((error as Error).message).toMatch(/set precisionMs for a bounded-memory window/);
    const big = await limiter.consume('k', { limit: 5_000_000, windowMs: MIN, precisionMs: 1000 }, { cost: 1000 });
    expect([big.allowed, big.remaining]).toEqual([true, 4_999_000]);
  });

  it('names every problem of precisionMs', async () => {
    const limiter = limiterWith();
    const error = await rejectionOf(limiter.consume('k', { limit: 10, windowMs: 10 * MIN, precisionMs: 100 }));
    expect((error as Error).message).toMatch(
      /rule.precisionMs must be a whole number of milliseconds from 600 to windowMs/,
    );
  });
});
