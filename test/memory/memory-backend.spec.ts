import type Redis from 'ioredis';
import { MemoryBackend, RateLimitConfigError, SlidingWindowLimiter, type SlidingWindowLimiterOptions } from '../../lib';
import { connectShared, uniquePrefix } from '../support/test-redis';
import { SlidingWindowModel } from '../../lib/memory/sliding-window-model';

/*
 * What the property tests do not reach: the bounded keyspace (eviction), option checks, the
 * clock semantics of expiry, and the errors of calls Redis would refuse.
 */
describe('MemoryBackend', () => {
  const T0 = 1_735_660_800_000;
  const rule = { limit: 1, windowMs: 60_000 };

  it('keeps at most maxKeys keys, forgetting the least recently used one (and its entries)', async () => {
    let now = T0;
    const backend = new MemoryBackend({ clock: () => now, maxKeys: 2 });
    const limiter = new SlidingWindowLimiter({ backend, clock: () => now, blockCache: false });
    await limiter.consume('a', rule);
    await limiter.consume('b', rule);
    now += 1;
    expect((await limiter.consume('a', rule)).allowed).toBe(false); // touches "a": "b" is now the oldest
    await limiter.consume('c', rule);
    expect(backend.keys()).toEqual(['rl:a', 'rl:c']);
    // Forgotten: "b" starts a fresh window.
    expect((await limiter.consume('b', rule)).allowed).toBe(true);
    expect(backend.keys()).toEqual(['rl:b', 'rl:c']);
    limiter.close();
  });

  it('evicts in constant work per key: a bound of 1 000 reads the clock no more per call than no bound', () => {
    const run = (maxKeys: number) => {
      let clockReads = 0;
      const model = new SlidingWindowModel({ clock: () => (clockReads++, T0), maxKeys });
      for (let i = 0; i < 50_000; i++)
        model.call('sliding_allow_v2', [`k${i}`], [String(T0), 'm', '0', '1', '60000', '5', '0', '0']);
      return { model, clockReadsPerCall: clockReads / 50_000 };
    };
    const unbounded = run(Infinity);
    const bounded = run(1000);
    expect(bounded.model.keys()).toHaveLength(1000);
    expect(bounded.model.keys()).toContain('k49999');
    expect(bounded.model.keys()).not.toContain('k48999');
    // No scan of the keyspace per call (each key looked at reads the clock): a handful of reads, as unbounded.
    expect(bounded.clockReadsPerCall).toBeLessThan(15);
    expect(bounded.clockReadsPerCall).toBeLessThan(unbounded.clockReadsPerCall + 5);
  });

  it('drops expired keys even when no one asks for them again', () => {
    let now = T0;
    const model = new SlidingWindowModel({ clock: () => now });
    for (let i = 0; i < 100; i++) model.call('sliding_allow_v1', [`old${i}`], [String(now), '10', '1', 'm']);
    now += 11;
    // Each new key looks at the least recently used ones; enough new keys reclaim all of them.
    for (let i = 0; i < 60; i++) model.call('sliding_allow_v1', [`new${i}`], [String(now), '1000', '1', 'm']);
    expect((model as unknown as { store: { store: Map<string, unknown> } }).store.store.size).toBe(60);
  });

  it('keeps an expired key expired when the clock is set back (Redis keeps its own time)', () => {
    let now = T0;
    const model = new SlidingWindowModel({ clock: () => now });
    model.call('sliding_allow_v1', ['k'], [String(now), '100', '1', 'm']);
    expect(model.pttl('k')).toBe(100);
    now += 101;
    expect(model.pttl('k')).toBe(-2);
    now = T0;
    expect(model.pttl('k')).toBe(-2);
    expect(model.entries('k')).toEqual([]);
  });

  it('answers the errors Redis gives for calls it refuses', () => {
    const model = new SlidingWindowModel({ clock: () => T0 });
    expect(() => model.call('sliding_allow_v9', ['k'], [])).toThrow('ERR Function not found');
    expect(() =>
      model.call('sliding_allow_v2', ['k'], [String(T0), 'm', '0', '1', '1000', '1', '0', '0'], true),
    ).toThrow('ERR Can not execute a script with write flag using *_ro command.');
    expect(() => model.commands.zcount('k', 'abc', '+inf')).toThrow('ERR min or max is not a float');
    expect(model.commands.zcount('k', '-inf', '+inf')).toBe(0);
    expect(model.commands.time()).toEqual([String(T0 / 1000), '0']);
  });

  it('rejects bad options, naming them', () => {
    expect(() => new MemoryBackend({ maxKeys: 0 })).toThrow(RateLimitConfigError);
    expect(() => new MemoryBackend({ maxKeys: 1.5 })).toThrow('maxKeys must be a whole number ≥ 1, got 1.5');
    expect(() => new MemoryBackend({ clock: 5 as never })).toThrow(
      'clock must be a function returning epoch milliseconds, got 5',
    );
  });
});

describe('MemoryBackend on sliding_allow_v2 (costs and the bounded window)', () => {
  const T0 = 1_735_660_800_000;
  const MIN = 60_000;
  let redis: Redis;
  beforeAll(() => {
    redis = connectShared();
  });
  afterAll(() => redis.quit());

  it('decides costs and bucketed windows as Redis does, and keeps the same counts', async () => {
    let now = T0;
    const keyPrefix = uniquePrefix('memory-v2');
    const settings: SlidingWindowLimiterOptions = {
      functionName: 'sliding_allow_v2',
      clock: () => now,
      keyPrefix,
      blockCache: false,
      report: false,
      onRedisError: 'throw',
      // A loaded host can hold a call for longer than the default 250 ms; this test is about counts.
      timeoutMs: 5000,
    };
    const backend = new MemoryBackend({ clock: () => now });
    const onRedis = new SlidingWindowLimiter({ ...settings, client: redis });
    const onMemory = new SlidingWindowLimiter({ ...settings, backend });
    const log = { limit: 10, windowMs: MIN };
    const bucketed = { limit: 10, windowMs: MIN, precisionMs: 10_000 };
    const stacked = [
      { key: 'user:{u1}:minute', ...log },
      { key: 'user:{u1}:hour', limit: 30, windowMs: 60 * MIN, precisionMs: MIN },
    ];
    /** The same keys, with the same counts (the request ids are each limiter's own). */
    const expectSameKeys = async () => {
      // Redis' keys expire in real time, the memory's on the test's clock, which moves on by minutes.
      const redisKeys = (await redis.keys(`${keyPrefix}*`)).sort();
      expect(redisKeys.filter((key) => backend.pttl(key) !== -2)).toEqual(backend.keys());
      for (const key of backend.keys()) {
        if ((await redis.type(key)) === 'zset') {
          const scores = (await redis.zrange(key, 0, '-1', 'WITHSCORES')).filter((_, i) => i % 2 === 1).map(Number);
          expect({ key, scores }).toEqual({ key, scores: backend.entries(key).map((entry) => entry.score) });
        } else {
          const counts = (pairs: [string, string][]) =>
            Object.fromEntries(
              pairs.map(([field, value]) => [field, field === 'ids' ? value.split(' ').length : value]),
            );
          expect({ key, fields: counts(Object.entries(await redis.hgetall(key))) }).toEqual({
            key,
            fields: counts(backend.hash(key)),
          });
        }
      }
    };
    // Each step runs on both limiters at T0 + atMs (never going back: the memory's keys expire on
    // this clock, Redis' in real time); several decisions at once go out as one batch.
    const steps: [atMs: number, run: (limiter: SlidingWindowLimiter) => Promise<unknown>][] = [
      [0, (l) => l.consume('log', log, { cost: 6 })],
      [1, (l) => l.consume('log', log, { cost: 6 })], // rejected: 6 + 6 > 10
      [2, (l) => l.consume('log', log, { cost: 4 })],
      [3, (l) => l.consume('bucketed', bucketed, { cost: 7 })],
      [9_999, (l) => l.consume('bucketed', bucketed, { cost: 3 })], // the first sub-window's last ms
      [10_000, (l) => l.consume('bucketed', bucketed, { cost: 1 })], // rejected until T0 + 69 999
      [10_000, (l) => l.peek('bucketed', bucketed, { cost: 2 })],
      [10_000, (l) => l.consumeAll(stacked, { cost: 4 })],
      [15_000, (l) => l.consumeAll(stacked, { cost: 7 })], // rejected by the minute
      [
        15_000,
        (l) =>
          Promise.all([
            l.consume('batched', bucketed, { cost: 2 }),
            l.consume('batched', bucketed, { cost: 5 }),
            l.consume('batched', bucketed, { cost: 4 }), // rejected: 2 + 5 + 4 > 10
            l.consume('batched:log', log, { cost: 3 }),
          ]),
      ],
      [15_000, () => expectSameKeys()],
      [60_001, (l) => l.consume('log', log, { cost: 10 })], // rejected until T0 + 60 002
      [60_002, (l) => l.peek('log', log, { cost: 10 })],
      [69_998, (l) => l.consume('bucketed', bucketed, { cost: 1 })], // rejected, 1 ms early
      [69_999, (l) => l.consume('bucketed', bucketed, { cost: 10 })], // admitted: the first sub-window left
      [70_000, () => expectSameKeys()],
    ];
    for (const [index, [atMs, run]] of steps.entries()) {
      now = T0 + atMs;
      const [fromRedis, fromMemory] = [await run(onRedis), await run(onMemory)];
      expect({ step: index, outcome: fromMemory }).toEqual({ step: index, outcome: fromRedis });
    }
    onRedis.close();
    onMemory.close();
  });
});
