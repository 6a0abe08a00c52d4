import { MemoryBackend, RateLimitConfigError, SlidingWindowLimiter, SlidingWindowModel } from '../../lib';

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

  it('evicts in constant time per key: a bound of 1 000 costs no more than no bound', () => {
    const run = (maxKeys: number) => {
      let clockReads = 0;
      const model = new SlidingWindowModel({ clock: () => (clockReads++, T0), maxKeys });
      const started = performance.now();
      for (let i = 0; i < 50_000; i++) model.call('sliding_allow_v2', [`k${i}`], [String(T0), 'm', '0', '60000', '5']);
      return { model, elapsedMs: performance.now() - started, clockReadsPerCall: clockReads / 50_000 };
    };
    run(Infinity); // warm up
    const unbounded = run(Infinity);
    const bounded = run(1000);
    expect(bounded.model.keys()).toHaveLength(1000);
    expect(bounded.model.keys()).toContain('k49999');
    expect(bounded.model.keys()).not.toContain('k48999');
    // No scan of the keyspace per call: a handful of clock reads, and about the same time as unbounded.
    expect(bounded.clockReadsPerCall).toBeLessThan(15);
    expect(bounded.elapsedMs).toBeLessThan(unbounded.elapsedMs * 4 + 50);
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
    expect(() => model.call('sliding_allow_v2', ['k'], [String(T0), 'm', '0', '1000', '1'], true)).toThrow(
      'ERR Can not execute a script with write flag using *_ro command.',
    );
    expect(() => model.zcount('k', 'abc', '+inf')).toThrow('ERR min or max is not a float');
    expect(model.zcount('k', '-inf', '+inf')).toBe(0);
    expect(model.time()).toEqual([String(T0 / 1000), '0']);
  });

  it('rejects bad options, naming them', () => {
    expect(() => new MemoryBackend({ maxKeys: 0 })).toThrow(RateLimitConfigError);
    expect(() => new MemoryBackend({ maxKeys: 1.5 })).toThrow('maxKeys must be a whole number ≥ 1, got 1.5');
    expect(() => new MemoryBackend({ clock: 5 as never })).toThrow(
      'clock must be a function returning epoch milliseconds, got 5',
    );
  });
});
