import { Test } from '@nestjs/testing';
import {
  MemoryBackend,
  RateLimitConfigError,
  SlidingWindowLimiter,
  type SlidingWindowLimiterOptions,
} from 'nestjs-sliding-limit';
import { rejectionOf } from '../support/rejection';
import { sleep } from '../support/sleep';
import { useTestLimiters } from '../support/test-limiter';
import { uniquePrefix, useSharedClient } from '../support/test-redis';
import { RateLimitTestingModule, TestClock } from 'nestjs-sliding-limit/testing';

const T0 = 1_735_660_800_000;
const MIN = 60_000;

/*
 * limiter.overrides: the overrides of the limiter's own keys, on its own store (Redis, or the
 * MemoryBackend), which this limiter and every other one on the same store apply on their next
 * decision.
 */
describe.each(['redis', 'memory'] as const)('limiter.overrides (%s)', (kind) => {
  const redis = useSharedClient();
  const other = useSharedClient();
  let keyPrefix: string;
  let now: number;
  let memory: MemoryBackend;
  beforeEach(() => {
    keyPrefix = uniquePrefix('lov');
    now = T0;
    memory = new MemoryBackend({ clock: () => now });
  });

  /** A limiter on the store under test; `client` stands for another process's connection. */
  const limiters = useTestLimiters(() => ({ keyPrefix, clock: () => now }));
  const limiterWith = (options: SlidingWindowLimiterOptions = {}, client = redis) =>
    limiters({ ...(kind === 'redis' ? { client } : { backend: memory }), ...options });
  /** Lets `ms` pass for the store's expiry: real time on Redis, the model's clock in memory. */
  const pass = async (ms: number) => {
    if (kind === 'redis') await sleep(ms);
    else now += ms;
  };
  const rule = { limit: 2, windowMs: MIN };

  it('sets a limit that the next consume decides by, and gets it back with its note', async () => {
    const limiter = limiterWith();
    await limiter.consume('api:{a}', rule);
    const stored = await limiter.overrides.set(
      'api:{a}',
      { action: 'limit', limit: 5 },
      { note: 'partner, ticket 42', by: 'ops@example' },
    );
    expect(stored).toEqual({
      key: 'api:{a}',
      override: { action: 'limit', limit: 5 },
      note: 'partner, ticket 42',
      by: 'ops@example',
      createdAt: T0,
    });
    const decision = await limiter.consume('api:{a}', rule);
    expect([decision.allowed, decision.limit, decision.remaining, decision.override]).toEqual([true, 5, 3, 'limit']);
    expect(await limiter.overrides.get('api:{a}')).toEqual(stored);

    await limiter.overrides.set('api:{a}', { action: 'limit', limit: 0 });
    const lowered = await limiter.consume('api:{a}', rule);
    expect([lowered.allowed, lowered.limit, lowered.override]).toEqual([false, 0, 'limit']);
  });

  it('exempts a key: admitted past the limit, its window untouched', async () => {
    const limiter = limiterWith();
    await limiter.overrides.set('api:{vip}', { action: 'exempt' }, { note: 'load test' });
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await limiter.consume('api:{vip}', rule));
    expect(decisions.map((d) => [d.allowed, d.override])).toEqual(Array(5).fill([true, 'exempt']));
    expect((await limiter.peek('api:{vip}', rule)).count).toBe(0);
  });

  it('blocks a key with a Retry-After of the time the block has left', async () => {
    const limiter = limiterWith();
    await limiter.overrides.set('api:{bad}', { action: 'block' }, { ttlMs: 30_000, note: 'abuse' });
    const blocked = await limiter.consume('api:{bad}', rule);
    expect([blocked.allowed, blocked.limit, blocked.override]).toEqual([false, 0, 'block']);
    expect(blocked.retryAfterMs).toBeGreaterThan(25_000);
    expect(blocked.retryAfterMs).toBeLessThanOrEqual(30_000);
    const all = await limiter.consumeAll([{ key: 'api:{bad}', ...rule }]);
    expect([all.allowed, all.retryAfterMs > 25_000]).toEqual([false, true]);
  });

  it('lets an override expire by itself', async () => {
    const limiter = limiterWith();
    // A second: the override outlives the next calls, however late a loaded host makes them.
    await limiter.overrides.set('api:{t}', { action: 'block' }, { ttlMs: 1000 });
    expect((await limiter.consume('api:{t}', rule)).allowed).toBe(false);
    expect((await limiter.overrides.get('api:{t}'))?.expiresInMs).toBeLessThanOrEqual(1000);
    await pass(1100);
    expect(await limiter.overrides.get('api:{t}')).toBeUndefined();
    const after = await limiter.consume('api:{t}', rule);
    expect([after.allowed, after.limit, after.override]).toEqual([true, 2, undefined]);
  });

  it('deletes an override: the rule applies again, with the history kept', async () => {
    const limiter = limiterWith();
    await limiter.overrides.set('api:{d}', { action: 'limit', limit: 3 });
    for (let i = 0; i < 3; i++) expect((await limiter.consume('api:{d}', rule)).allowed).toBe(true);
    expect(await limiter.overrides.delete('api:{d}')).toBe(true);
    expect(await limiter.overrides.delete('api:{d}')).toBe(false);
    const plain = await limiter.consume('api:{d}', rule);
    expect([plain.allowed, plain.limit, plain.override]).toEqual([false, 2, undefined]);
  });

  it('lists its own keys’ overrides, by a glob, sorted, at most count', async () => {
    const limiter = limiterWith();
    const elsewhere = limiterWith({ keyPrefix: uniquePrefix('lov-other') });
    await limiter.overrides.set('login:{ip:2}', { action: 'block' });
    await limiter.overrides.set('login:{ip:1}', { action: 'limit', limit: 1 });
    await limiter.overrides.set('global', { action: 'exempt' });
    await elsewhere.overrides.set('login:{ip:3}', { action: 'block' });
    const keys = async (match?: string, count?: number) =>
      (await limiter.overrides.list({ match, count })).map((o) => o.key);
    expect(await keys()).toEqual(['global', 'login:{ip:1}', 'login:{ip:2}']);
    expect(await keys('login:*')).toEqual(['login:{ip:1}', 'login:{ip:2}']);
    expect(await keys('*', 1)).toHaveLength(1);
    expect((await elsewhere.overrides.list()).map((o) => o.key)).toEqual(['login:{ip:3}']);
  });

  it('is seen by a limiter of another process on its next request, without a restart', async () => {
    const running = limiterWith({}, other);
    const operator = limiterWith();
    expect((await running.consume('api:{p}', { limit: 1, windowMs: MIN })).allowed).toBe(true);
    expect((await running.consume('api:{p}', { limit: 1, windowMs: MIN })).allowed).toBe(false);
    await operator.overrides.set('api:{p}', { action: 'limit', limit: 10 });
    const raised = await running.consume('api:{p}', { limit: 1, windowMs: MIN });
    expect([raised.allowed, raised.limit, raised.override]).toEqual([true, 10, 'limit']);
    await operator.overrides.set('api:{p}', { action: 'block' }, { ttlMs: MIN });
    expect((await running.consume('api:{p}', { limit: 1, windowMs: MIN })).override).toBe('block');
  });

  it('with keyOverrides: false, a change through limiter.overrides drops the key’s cached refusal here', async () => {
    const limiter = limiterWith({ keyOverrides: false });
    const one = { limit: 1, windowMs: MIN };
    await limiter.consume('api:{c}', one);
    expect((await limiter.consume('api:{c}', one)).allowed).toBe(false);
    expect((await limiter.consume('api:{c}', one)).allowed).toBe(false);
    const blockedLocally = () => limiter.metrics.snapshot()[0].blockedLocally;
    expect(blockedLocally()).toBe(1);
    // Not read (keyOverrides: false), but the cached refusal is gone: the next call asks the store.
    await limiter.overrides.set('api:{c}', { action: 'exempt' });
    expect((await limiter.consume('api:{c}', one)).allowed).toBe(false);
    expect(blockedLocally()).toBe(1);
    expect((await limiter.consume('api:{c}', one)).allowed).toBe(false);
    expect(blockedLocally()).toBe(2);
    await limiter.overrides.delete('api:{c}');
    expect((await limiter.consume('api:{c}', one)).allowed).toBe(false);
    expect(blockedLocally()).toBe(2);
  });

  it('refuses an invalid override with every problem named, and a key that cannot carry one', async () => {
    const limiter = limiterWith();
    const error = await rejectionOf(
      limiter.overrides.set('a{}b', { action: 'limit', limit: 1.5 }, { ttlMs: 0, by: 7 as never }),
    );
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as RateLimitConfigError).problems).toEqual([
      expect.stringMatching(
        /^key cannot carry overrides: "nsl-test:.*a\{\}b" has braces but no valid cluster hash tag/,
      ),
      expect.stringMatching(/^override.limit must be a whole number from 0/),
      expect.stringMatching(/^ttlMs must be a whole number of ms from 1/),
      expect.stringMatching(/^by must be a string of at most 500 characters, got/),
    ]);
    expect(await limiter.overrides.get('a{}b')).toBeUndefined();
  });
});

describe('limiter.overrides elsewhere', () => {
  it('works in the testing kit, on its MemoryBackend and TestClock', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [RateLimitTestingModule.forRoot()] }).compile();
    try {
      const limiter = moduleRef.get(SlidingWindowLimiter);
      const clock = moduleRef.get(TestClock);
      const rule = { limit: 1, windowMs: MIN };
      await limiter.overrides.set('login:{ip:10.0.0.1}', { action: 'block' }, { ttlMs: 10_000, by: 'test' });
      expect(moduleRef.get(MemoryBackend).keys()).toEqual(['rl:login:{ip:10.0.0.1}|override']);
      const blocked = await limiter.consume('login:{ip:10.0.0.1}', rule);
      expect([blocked.allowed, blocked.retryAfterMs]).toEqual([false, 10_000]);
      // Gone once its time has passed (at the very millisecond it has PTTL 0, as on Redis).
      clock.advance(10_001);
      expect(await limiter.overrides.list()).toEqual([]);
      expect((await limiter.consume('login:{ip:10.0.0.1}', rule)).allowed).toBe(true);
    } finally {
      await moduleRef.close();
    }
  });
});
