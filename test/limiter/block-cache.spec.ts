import { BlockCache } from '../../lib/limiter/block-cache';
import { useTestLimiters } from '../support/test-limiter';
import { uniquePrefix, useSharedClient } from '../support/test-redis';

/** Deterministic pseudo-random steps, so a failure replays. */
function steps(seed: number, count: number): number[] {
  let state = seed;
  return Array.from({ length: count }, () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % 400;
  });
}

describe('local block cache', () => {
  const redis = useSharedClient();
  const limiterWith = useTestLimiters(() => ({
    client: redis,
    keyPrefix: uniquePrefix('block'),
    functionName: 'sliding_allow_v2',
    // The block cache keeps refusals only while no override is read.
    keyOverrides: false,
  }));

  it.each([1, 2, 3])(
    'decides exactly like Redis alone (seed %i): never admits more, never refuses once a slot frees',
    async (seed) => {
      let now = 1_735_660_800_000;
      const cached = limiterWith({ clock: () => now });
      const direct = limiterWith({ clock: () => now, blockCache: false });
      const rule = { limit: 3, windowMs: 1000 };
      for (const step of steps(seed, 300)) {
        now += step % 3 === 0 ? 0 : step; // bursts in one millisecond, then jumps, some landing on boundaries
        const [a, b] = await Promise.all([cached.consume('hot', rule), direct.consume('hot', rule)]);
        expect({ now, ...a }).toEqual({ now, ...b });
      }
      const snapshot = cached.metrics.snapshot()[0];
      expect(snapshot.blockedLocally).toBeGreaterThan(0);
      expect(snapshot.calls + (snapshot.blockedLocally ?? 0)).toBe(300);
    },
  );

  it('answers a hammered key without Redis until a slot can free', async () => {
    let now = 1_735_660_800_000;
    const limiter = limiterWith({ clock: () => now });
    const rule = { limit: 10, windowMs: 10_000 };
    const first = await Promise.all(Array.from({ length: 10 }, () => limiter.consume('hammer', rule)));
    expect(first.every((d) => d.allowed)).toBe(true);
    const rejected = await limiter.consume('hammer', rule);
    const attack = await Promise.all(Array.from({ length: 2000 }, () => limiter.consume('hammer', rule)));
    expect(attack.every((d) => !d.allowed && d.retryAfterMs === rejected.retryAfterMs)).toBe(true);
    expect(limiter.metrics.snapshot()[0]).toMatchObject({ calls: 11, blockedLocally: 2000, rejected: 2001 });

    now += rejected.retryAfterMs - 1;
    expect(await limiter.consume('hammer', rule)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    now += 1;
    // All ten entries were recorded in one millisecond: they leave together.
    expect(await limiter.consume('hammer', rule)).toMatchObject({ allowed: true, remaining: 9 });
    expect(limiter.metrics.snapshot()[0].calls).toBe(12);
  });

  it("is cleared for a key by this limiter's reset", async () => {
    const limiter = limiterWith();
    const rule = { limit: 1, windowMs: 60_000 };
    await limiter.consume('r', rule);
    expect((await limiter.consume('r', rule)).allowed).toBe(false);
    await limiter.reset('r');
    expect((await limiter.consume('r', rule)).allowed).toBe(true);
  });

  it("does not see another instance's reset until the cached time passes (the documented multi-instance case)", async () => {
    const keyPrefix = uniquePrefix('block-multi');
    const one = limiterWith({ keyPrefix });
    const other = limiterWith({ keyPrefix });
    const rule = { limit: 1, windowMs: 60_000 };
    await one.consume('m', rule);
    expect((await one.consume('m', rule)).allowed).toBe(false);
    await other.reset('m');
    // Redis has room again, but `one` answers from its cache, without asking.
    expect((await one.consume('m', rule)).allowed).toBe(false);
    expect(one.metrics.snapshot()[0].blockedLocally).toBe(1);
    expect((await other.consume('m', rule)).allowed).toBe(true);
  });

  it('is never used with v1 (whose retry-after is an upper bound), the server clock, or stacked limits', async () => {
    const rule = { limit: 1, windowMs: 60_000 };
    for (const limiter of [limiterWith({ functionName: 'sliding_allow_v1' }), limiterWith({ clock: 'server' })]) {
      for (let i = 0; i < 5; i++) await limiter.consume('k', rule);
      expect(limiter.metrics.snapshot()[0]).toMatchObject({ calls: 5, blockedLocally: 0 });
    }
    const stacked = limiterWith();
    const rules = [
      { key: 's:minute', ...rule },
      { key: 's:day', limit: 10, windowMs: 86_400_000 },
    ];
    for (let i = 0; i < 5; i++) await stacked.consumeAll(rules);
    expect(stacked.metrics.snapshot()[0]).toMatchObject({ calls: 5, blockedLocally: 0, rejected: 4 });
  });

  it('stays within maxEntries, and answers only for the limit it was told', () => {
    const cache = new BlockCache(2);
    const rule = { limit: 1, windowMs: 1000 };
    const rejected = { allowed: false, count: 1, remaining: 0, retryAfterMs: 1000, resetMs: 1000 };
    for (const key of ['a', 'b', 'c']) cache.set(key, rule, 0, rejected, cache.ticket());
    expect(cache.size).toBe(2);
    expect(cache.get('a', rule, 1)).toBeUndefined();
    expect(cache.get('c', rule, 1)).toMatchObject({ allowed: false, retryAfterMs: 999, resetMs: 999 });
    expect(cache.get('c', { limit: 2, windowMs: 1000 }, 1)).toBeUndefined();
    expect(cache.get('c', rule, 1000)).toBeUndefined();
  });

  it('with overrides watched: answers only while watching, drops a changed key, keeps nothing decided before a change', () => {
    const cache = new BlockCache(10, true);
    const rule = { limit: 1, windowMs: 1000 };
    const rejected = { allowed: false, count: 1, remaining: 0, retryAfterMs: 1000, resetMs: 1000 };
    cache.set('a', rule, 0, rejected, cache.ticket());
    expect(cache.size).toBe(0);
    cache.watching(true);
    cache.set('a', rule, 0, rejected, cache.ticket());
    cache.set('b', rule, 0, rejected, cache.ticket());
    cache.set('c', rule, 0, { ...rejected, override: 'limit' }, cache.ticket());
    expect([cache.get('a', rule, 1), cache.get('b', rule, 1), cache.get('c', rule, 1)]).toEqual([
      expect.objectContaining({ retryAfterMs: 999 }),
      expect.objectContaining({ retryAfterMs: 999 }),
      undefined,
    ]);
    const ticket = cache.ticket();
    cache.changed('a');
    expect(cache.get('a', rule, 1)).toBeUndefined();
    expect(cache.get('b', rule, 1)).toBeDefined();
    cache.set('d', rule, 0, rejected, ticket);
    expect(cache.get('d', rule, 1)).toBeUndefined();
    cache.watching(false);
    expect(cache.get('b', rule, 1)).toBeUndefined();
  });
});
